/*
 * random.c - getrandom(2) behind one function. See random.h.
 */
#include "util/random.h"

#include <errno.h>
#include <sys/random.h>
#include <sys/types.h>

int kft_random_bytes(void *ctx, unsigned char *out, size_t len)
{
	(void)ctx;
	while (len > 0) {
		ssize_t n = getrandom(out, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		out += n;
		len -= (size_t)n;
	}
	return 0;
}
