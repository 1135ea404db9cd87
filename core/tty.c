/*
 * tty.c - open a serial line as a session's sink (embedded boards whose
 * only way out is a UART).
 *
 * Raw bytes, no flow control of any kind: a board's console UART often has
 * no RTS/CTS wired, and XON/XOFF would eat 0x11/0x13 bytes of the dump. The
 * writer paces itself with settings.link_bytes_per_sec instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include "core.h"

static const struct {
	uint32_t baud;
	speed_t speed;
} rates[] = {
	{ 1200, B1200 }, { 2400, B2400 }, { 4800, B4800 }, { 9600, B9600 },
	{ 19200, B19200 }, { 38400, B38400 }, { 57600, B57600 },
	{ 115200, B115200 }, { 230400, B230400 }, { 460800, B460800 },
	{ 500000, B500000 }, { 576000, B576000 }, { 921600, B921600 },
	{ 1000000, B1000000 }, { 1152000, B1152000 }, { 1500000, B1500000 },
	{ 2000000, B2000000 }, { 3000000, B3000000 }, { 4000000, B4000000 },
};

/* Context: any non-RT thread (touches no shared state). */
RTPROF_API int
rtprof_tty_open(const char *path, uint32_t baud)
{
	struct termios t;
	speed_t sp = 0;
	size_t i;
	int fd, err;

	for (i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].baud == baud)
			sp = rates[i].speed;
	if (sp == 0 || path == NULL)
		return -EINVAL;
	/* O_NONBLOCK for the open only: a line without carrier must not
	 * hang it (CLOCAL below then makes the state irrelevant). */
	fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (tcgetattr(fd, &t) != 0)
		goto fail;
	cfmakeraw(&t);
	t.c_cflag &= ~(tcflag_t)(CSTOPB | PARENB | CRTSCTS | CSIZE);
	t.c_cflag |= CS8 | CLOCAL | CREAD;
	t.c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (cfsetispeed(&t, sp) != 0 || cfsetospeed(&t, sp) != 0 ||
	    tcsetattr(fd, TCSANOW, &t) != 0)
		goto fail;
	/* Back to blocking: the writer polls before writing anyway. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	return -err;
}
