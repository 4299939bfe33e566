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

/* bytes (at most 64) random bytes as 2 * bytes lowercase hex digits and a
 * NUL, into out: tokens. 0, or -1 when the kernel refuses (out is then ""). */
int kft_random_hex(char *out, size_t bytes);

#endif
