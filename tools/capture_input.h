/*
 * capture_input.h - the inputs of `rtprof capture` (tools/capture_input.c).
 * Context: main thread.
 */
#ifndef RTPROF_TOOLS_CAPTURE_INPUT_H
#define RTPROF_TOOLS_CAPTURE_INPUT_H

#include <stdbool.h>
#include <termios.h>

/* Return: true with *@sp set when @s is a standard rate ("115200"). */
bool cap_baud_lookup(const char *s, speed_t *sp);

/* The serial device @dev, raw at @speed; its settings before in *@saved.
 * Return: the descriptor, or -1 (message printed). */
int cap_open_serial(const char *dev, speed_t speed, struct termios *saved);

/* Connect to HOST:PORT ([HOST]:PORT for IPv6).
 * Return: the descriptor, or -1 (message printed). */
int cap_open_tcp(const char *arg);

/* Connect to the Unix stream socket @path.
 * Return: the descriptor, or -1 (message printed). */
int cap_open_unix(const char *path);

#endif /* RTPROF_TOOLS_CAPTURE_INPUT_H */
