/*
 * utf8.h - UTF-8 as Go reads and writes it (internal): one sequence's
 * length (no overlong forms, no surrogates, nothing beyond U+10FFFF),
 * validity, code point counts (Kubernetes' MaxLength counts runes), cutting
 * at a character boundary, encoding a code point. Pure; every function
 * reads only the bytes it is given.
 */
#ifndef KFT_UTIL_UTF8_H
#define KFT_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence starting at s (at most `left` bytes,
 * left > 0), or 0 when it is not valid UTF-8 (overlong, surrogate, beyond
 * U+10FFFF, cut short). */
size_t kft_utf8_sequence(const unsigned char *s, size_t left);

/* Whether s[0..len) is valid UTF-8 throughout. */
bool kft_utf8_valid(const char *s, size_t len);

/* The number of code points in the NUL-terminated s (each byte that does
 * not continue a sequence counts one, as Go's utf8.RuneCountInString counts
 * an invalid byte). */
size_t kft_utf8_length(const char *s);

/* At most max bytes of s, cut back to a character boundary: the length. */
size_t kft_utf8_cut(const char *s, size_t max);

/* Code point cp encoded into out (4 bytes at most): its length, or 0 for
 * NUL, a surrogate or beyond U+10FFFF. */
size_t kft_utf8_encode(unsigned long cp, char out[4]);

#endif
