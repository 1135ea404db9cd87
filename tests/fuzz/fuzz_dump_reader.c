/*
 * fuzz_dump_reader.c - libFuzzer target: the whole dump decoder (frames,
 * CRCs, resynchronisation, msgpack payloads, records) on arbitrary bytes.
 * Every callback touches what it is given so ASan sees bad pointers, and
 * record views are checked against records.h (tests/fuzz/dump_touch.h).
 * Most mutations break a frame's CRC here: fuzz_records.c fuzzes the
 * payloads behind the CRC.
 */
#include <stddef.h>
#include <stdint.h>

#include "dump_touch.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rtprof_dump_cb cb;
	struct rtprof_dump_stats st;

	touch_callbacks(&cb);
	rtprof_dump_read_mem(data, size, &cb, &st);
	return 0;
}
