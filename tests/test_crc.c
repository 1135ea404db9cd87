/*
 * test_crc.c - CRC-32C: the check value, and the hardware and table
 * implementations agree on every length and alignment, chained or not.
 */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "frame.h"

int
main(void)
{
	unsigned char buf[4096 + 16];

	RTPROF_CHECK_EQ(rtprof_crc32c(0, "123456789", 9), 0xE3069283u);
	RTPROF_CHECK_EQ(rtprof_crc32c_portable(0, "123456789", 9), 0xE3069283u);
	srand(1);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)rand();
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len < 600; len++)
			RTPROF_CHECK_EQ(rtprof_crc32c(0, buf + off, len),
			    rtprof_crc32c_portable(0, buf + off, len));
	/* Chained in pieces == at once (the writer CRCs header + records). */
	for (size_t cut = 0; cut <= 4096; cut += 37) {
		uint32_t a = rtprof_crc32c(rtprof_crc32c(0, buf, cut), buf + cut, 4096 - cut);
		RTPROF_CHECK_EQ(a, rtprof_crc32c_portable(0, buf, 4096));
	}
	puts("test_crc: ok");
	return 0;
}
