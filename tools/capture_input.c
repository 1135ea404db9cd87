/*
 * capture_input.c - the inputs of `rtprof capture` (tools/capture.c): a
 * serial line set up raw at a standard rate, a TCP or a Unix stream
 * socket, opened for reading. Messages name the program "rtprof capture".
 *
 * Context: main thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "capture_input.h"

#define PROG "rtprof capture"

static const struct {
	unsigned long rate;
	speed_t speed;
} bauds[] = {
	{ 50, B50 }, { 75, B75 }, { 110, B110 }, { 134, B134 },
	{ 150, B150 }, { 200, B200 }, { 300, B300 }, { 600, B600 },
	{ 1200, B1200 }, { 1800, B1800 }, { 2400, B2400 }, { 4800, B4800 },
	{ 9600, B9600 }, { 19200, B19200 }, { 38400, B38400 },
	{ 57600, B57600 }, { 115200, B115200 }, { 230400, B230400 },
#ifdef B460800
	{ 460800, B460800 },
#endif
#ifdef B500000
	{ 500000, B500000 }, { 576000, B576000 }, { 921600, B921600 },
	{ 1000000, B1000000 }, { 1152000, B1152000 },
	{ 1500000, B1500000 }, { 2000000, B2000000 },
	{ 2500000, B2500000 }, { 3000000, B3000000 },
	{ 3500000, B3500000 }, { 4000000, B4000000 },
#endif
};

/* Return: true with *@sp set when @s is a standard rate. */
bool
cap_baud_lookup(const char *s, speed_t *sp)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
		return false;
	for (size_t i = 0; i < sizeof(bauds) / sizeof(bauds[0]); i++) {
		if (bauds[i].rate == v) {
			*sp = bauds[i].speed;
			return true;
		}
	}
	return false;
}

/*
 * Open the serial device @dev and set it up: raw (cfmakeraw: no echo, no
 * line editing, no translation, 8 bits, no parity), @speed both ways,
 * CLOCAL (no modem control: do not wait for carrier, no hang-up on its
 * loss) and CREAD, no hardware (CRTSCTS) or software (IXON/IXOFF) flow
 * control, reads return as soon as a byte is there. The previous settings
 * go to *@saved. Return: the descriptor, or -1 (message printed).
 */
int
cap_open_serial(const char *dev, speed_t speed, struct termios *saved)
{
	struct termios t, chk;
	int fd, fl;

	/* O_NONBLOCK: do not wait for the carrier while opening. */
	fd = open(dev, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: cannot open: %s\n", dev,
		    strerror(errno));
		return -1;
	}
	if (tcgetattr(fd, &t) != 0) {
		fprintf(stderr, PROG ": %s: not a serial line (%s)\n", dev,
		    strerror(errno));
		close(fd);
		return -1;
	}
	*saved = t;
	cfmakeraw(&t);
	t.c_cflag |= CLOCAL | CREAD;
	t.c_cflag &= ~(tcflag_t)(CRTSCTS | CSTOPB);
	t.c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (cfsetispeed(&t, speed) != 0 || cfsetospeed(&t, speed) != 0 ||
	    tcsetattr(fd, TCSANOW, &t) != 0) {
		fprintf(stderr, PROG ": %s: cannot set the line up: %s\n", dev,
		    strerror(errno));
		close(fd);
		return -1;
	}
	/* tcsetattr() succeeds when any of the changes took: check. */
	if (tcgetattr(fd, &chk) == 0 && cfgetispeed(&chk) != speed)
		fprintf(stderr, PROG ": %s: warning: the driver did not take "
		    "the baud rate\n", dev);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		fprintf(stderr, PROG ": %s: fcntl: %s\n", dev,
		    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Connect to HOST:PORT ([HOST]:PORT for IPv6). Return: fd or -1. */
int
cap_open_tcp(const char *arg)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
	    .ai_socktype = SOCK_STREAM }, *res, *ai;
	char host[256];
	const char *port, *h = arg;
	size_t hlen;
	int fd = -1, rc, err = 0;

	if (arg[0] == '[') {
		const char *e = strchr(arg, ']');

		if (e == NULL || e[1] != ':') {
			fprintf(stderr, PROG ": --tcp %s: want "
			    "[ADDRESS]:PORT\n", arg);
			return -1;
		}
		h = arg + 1;
		hlen = (size_t)(e - h);
		port = e + 2;
	} else {
		const char *c = strrchr(arg, ':');

		if (c == NULL) {
			fprintf(stderr, PROG ": --tcp %s: want HOST:PORT\n",
			    arg);
			return -1;
		}
		hlen = (size_t)(c - arg);
		port = c + 1;
	}
	if (hlen == 0 || hlen >= sizeof(host) || port[0] == '\0') {
		fprintf(stderr, PROG ": --tcp %s: want HOST:PORT\n", arg);
		return -1;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		fprintf(stderr, PROG ": --tcp %s: %s\n", arg, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		fprintf(stderr, PROG ": --tcp %s: cannot connect: %s\n", arg,
		    strerror(err));
	return fd;
}

/* Connect to the Unix stream socket @path. Return: fd or -1. */
int
cap_open_unix(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, PROG ": --unix %s: path too long\n", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		fprintf(stderr, PROG ": --unix %s: cannot connect: %s\n", path,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}
