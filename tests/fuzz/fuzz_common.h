/*
 * fuzz_common.h - what the file-loading fuzz targets share: a crash on a
 * broken promise, and a memfd that holds exactly the current input so a
 * loader that only takes a path can read it without leaving a file behind.
 *
 * Include it once per fuzz target, after defining FUZZ_NAME (the target's
 * name, a string literal that prefixes every failure). The memfd is made on
 * the first call and reused for the life of the fuzzing process, which
 * closes it on exit.
 */
#ifndef KFT_FUZZ_COMMON_H
#define KFT_FUZZ_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef FUZZ_NAME
#error "define FUZZ_NAME before including fuzz_common.h"
#endif

/* Reports a violated promise (what, and detail when not NULL) and aborts:
 * the fuzzer needs a crash. Never returns. */
static inline void fail(const char *what, const char *detail)
{
	fprintf(stderr, FUZZ_NAME ": %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

/* The path of a memfd (named label) holding exactly data[0..size). The
 * string is static and stays valid until the next call; nothing to free.
 * Aborts through fail() if the memfd cannot be made or written. */
/* The input as a C string, cut at its first NUL (malloc'd; aborts when
 * memory runs out). */
static inline char *as_cstring(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

static inline const char *as_file(const char *label, const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create(label, MFD_CLOEXEC);
		if (fd < 0)
			fail("memfd_create failed", NULL);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		fail("writing the memfd failed", NULL);
	return path;
}

#endif
