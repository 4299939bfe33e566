/*
 * random.h - the kernel's CSPRNG, as the random source of everything that
 * needs unpredictable bytes (internal): key generation through mbedTLS,
 * event names and leader-election identities.
 */
#ifndef KFT_UTIL_RANDOM_H
#define KFT_UTIL_RANDOM_H

#include <stddef.h>

/* Fills out with len bytes from getrandom(2), looping over short reads and
 * signals. Shaped as an mbedTLS f_rng (ctx unused, may be NULL). Returns 0,
 * or -1 when the kernel refuses. */
int kft_random_bytes(void *ctx, unsigned char *out, size_t len);

#endif
