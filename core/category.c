/*
 * category.c - categories declared by the program, with their colours.
 *
 * The built-in categories (enum rtprof_category) are named in every
 * HEADER; a declared one gets the next id and a CATEGORY frame, written
 * by the writer before the DATA frames that can use it (the declaration
 * happens before any record of the category, under the core mutex).
 */
#include <errno.h>
#include <string.h>

#include "core.h"
#include "../codec/wire.h"

/* The built-in categories' names, by id. */
static const char *const builtin[] = {
#define X(id, name, color) name,
	RTPROF_WIRE_CATEGORIES
#undef X
};

/* The Firefox Profiler's category colours (its CategoryColor). */
static const char *const colors[] = {
	"transparent", "purple", "green", "orange", "yellow", "lightblue",
	"blue", "brown", "magenta", "red", "lightred", "darkgrey", "grey",
};

static const char *
color_find(const char *color)
{
	for (size_t i = 0; i < sizeof(colors) / sizeof(*colors); i++)
		if (strcmp(color, colors[i]) == 0)
			return colors[i];
	return NULL;
}

/* Context: any thread, core lock held. Return: the index, or -1. */
static int
category_find(const struct rtprof__core *c, const char *name)
{
	for (uint32_t i = 0; i < c->ncategories; i++)
		if (strcmp(c->categories[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Context: any thread; may block. */
RTPROF_API int
rtprof_category_declare(const char *name, const char *color)
{
	const char *col = color != NULL ? color_find(color) : NULL;
	const rtprof_lock *lk;
	struct rtprof__core *c;
	struct rtprof__category *k;
	int i;

	if (name == NULL || name[0] == '\0' || strlen(name) > 63 || col == NULL)
		return -EINVAL;
	for (i = 0; i < RTPROF_CAT_COUNT; i++)
		if (strcmp(builtin[i], name) == 0)
			return i;      /* built in: its own colour */
	lk = rtprof__lock();
	c = rtprof__core_get(lk);
	i = category_find(c, name);
	if (i < 0 && c->ncategories == RTPROF__MAX_USER_CATEGORIES) {
		rtprof__unlock(lk);
		return -ENOSPC;
	}
	if (i < 0) {
		i = (int)c->ncategories++;
		k = &c->categories[i];
		strcpy(k->name, name);
		k->color = col;
		rtprof__writer_kick(lk);
	}
	rtprof__unlock(lk);
	return RTPROF_CAT_COUNT + i;
}
