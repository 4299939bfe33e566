/*
 * envnum.c - see envnum.h.
 */
#include "util/envnum.h"

#include <errno.h>
#include <stdlib.h>

bool kft_env_whole(const char *name, unsigned long long max, unsigned long long *out, bool *bad)
{
	const char *v = getenv(name);
	*bad = false;
	if (!v || !*v)
		return false;
	char *end = NULL;
	errno = 0;
	unsigned long long n = *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
	if (!end || *end || errno == ERANGE || n > max) {
		*bad = true;
		return false;
	}
	*out = n;
	return true;
}
