/* Uses an installed rtprof: records one marker into a memfd. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rtprof.h>

int
main(void)
{
	struct rtprof_settings s;
	int fd = memfd_create("consumer", 0);

	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	s.fd = fd;
	if (rtprof_thread_register("consumer", 0) != 0 || rtprof_session_start(&s) != 0)
		return 1;
	rtprof_mark("hello", RTPROF_CAT_OTHER);
	if (rtprof_session_stop() != 0 || lseek(fd, 0, SEEK_END) <= 0)
		return 1;
	puts("consumer: ok");
	return 0;
}
