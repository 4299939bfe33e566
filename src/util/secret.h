/*
 * secret.h - wiping secrets (internal): keys, tokens and passwords are
 * overwritten before their memory is released, with a call the compiler
 * may not remove as a dead store (a plain memset before free may be).
 */
#ifndef KFT_UTIL_SECRET_H
#define KFT_UTIL_SECRET_H

#include <stddef.h>

/* Overwrites p[0..n) with zeros. NULL or 0 is a no-op. */
void kft_secret_wipe(void *p, size_t n);

/* Wipes the NUL-terminated string s, then frees it. NULL is a no-op. */
void kft_secret_free(char *s);

#endif
