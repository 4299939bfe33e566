/*
 * check_common.h - the result lines the cluster-tier check programs print.
 * Each check ends in one "PASS: WHAT: name" or "FAIL: WHAT: name: why"
 * line, the format t/common.sh uses, so the shell scripts can pass the
 * program's output straight through; failed checks are counted so main()
 * can exit 1 when any failed.
 *
 * Include it once per program, after defining CHECK_WHAT (a string literal
 * naming what the program checks, e.g. "cache").
 */
#ifndef KFT_CHECK_COMMON_H
#define KFT_CHECK_COMMON_H

#include <stdarg.h>
#include <stdio.h>

#ifndef CHECK_WHAT
#error "define CHECK_WHAT before including check_common.h"
#endif

/* How many checks have failed so far. */
static int failures;

static inline void report(int ok, const char *name, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Prints the PASS or FAIL line for check name; fmt and its arguments say
 * why it failed and are ignored when ok. Flushes, so the lines interleave
 * correctly with the scripts' own output. */
static inline void report(int ok, const char *name, const char *fmt, ...)
{
	if (ok) {
		printf("PASS: " CHECK_WHAT ": %s\n", name);
	} else {
		va_list ap;
		printf("FAIL: " CHECK_WHAT ": %s: ", name);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
		failures++;
	}
	fflush(stdout);
}

#endif
