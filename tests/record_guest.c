#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <time.h>
/*
 * record_guest - a program that does to its descriptors what daemons and
 * shells do, for test_record_guest.py: `record_guest DIR` closes every
 * descriptor from 3 up (close_range(3, ~0U, 0)), `record_guest DIR dup2`
 * dup2s /dev/null over every number from 3 to 1023; then it opens DIR/f0..f3
 * and writes 200 numbered lines into each over about 0.4 s (the recorder's
 * writer flushes meanwhile).
 */
static void spin(double s){struct timespec a,b;clock_gettime(CLOCK_MONOTONIC,&a);do{clock_gettime(CLOCK_MONOTONIC,&b);}while((b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9<s);}
int main(int argc, char **argv){
	int dupall = argc > 2 && strcmp(argv[2], "dup2") == 0;
	int fds[4];
	char name[256];
	if (dupall) {
		int f = open("/dev/null", O_WRONLY);
		for (int i = 3; i < 1024; i++) if (i != f) dup2(f, i);
	} else {
		syscall(SYS_close_range, 3, ~0U, 0);
	}
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof name, "%s/f%d", argv[1], i);
		fds[i] = open(name, O_WRONLY|O_CREAT|O_TRUNC, 0644);
	}
	for (int k = 0; k < 200; k++) {
		for (int i = 0; i < 4; i++) { char l[64]; int n = snprintf(l, sizeof l, "file %d line %d\n", i, k); write(fds[i], l, n); }
		spin(0.002);
	}
	return 0;
}
