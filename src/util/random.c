/*
 * random.c - getrandom(2) behind one function. See random.h.
 */
#include "util/random.h"

#include "util/digest.h"
#include "util/secret.h"

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

int kft_random_hex(char *out, size_t bytes)
{
	unsigned char raw[64];
	if (bytes > sizeof(raw))
		bytes = sizeof(raw);
	out[0] = '\0';
	if (kft_random_bytes(NULL, raw, bytes) != 0)
		return -1;
	kft_hex(raw, bytes, out);
	kft_secret_wipe(raw, sizeof(raw));
	return 0;
}
