/*
 * secret.c - see secret.h. explicit_bzero (glibc 2.25) is the call: it is
 * defined to leave the bytes zeroed whatever the optimiser knows about the
 * buffer's later use.
 */
#include <stdlib.h>
#include <string.h>

#include "util/secret.h"

void kft_secret_wipe(void *p, size_t n)
{
	if (p && n)
		explicit_bzero(p, n);
}

void kft_secret_free(char *s)
{
	if (!s)
		return;
	kft_secret_wipe(s, strlen(s));
	free(s);
}
