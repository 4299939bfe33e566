/*
 * strbuf.h - a growable, always NUL-terminated string (internal).
 *
 * Allocation failure is sticky: the buffer records it, later appends become
 * no-ops, and kft_strbuf_detach() returns NULL, so callers check once at the
 * end instead of after every append.
 */
#ifndef KFT_UTIL_STRBUF_H
#define KFT_UTIL_STRBUF_H

#include <stddef.h>

typedef struct kft_strbuf {
	char *buf;
	size_t len, cap;
	int failed;
} kft_strbuf;

void kft_strbuf_init(kft_strbuf *b);
void kft_strbuf_free(kft_strbuf *b);
void kft_strbuf_reset(kft_strbuf *b); /* empties, keeps memory */
/* Cuts the string back to its first len bytes (a longer len: no change). */
void kft_strbuf_truncate(kft_strbuf *b, size_t len);
void kft_strbuf_putc(kft_strbuf *b, char c);
void kft_strbuf_puts(kft_strbuf *b, const char *s);
void kft_strbuf_putn(kft_strbuf *b, const char *s, size_t n);
void kft_strbuf_printf(kft_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The string ("" when empty); valid until the next append. */
const char *kft_strbuf_str(const kft_strbuf *b);
/* Hands the heap string to the caller (who frees it) and empties b; NULL if
 * any append failed. */
char *kft_strbuf_detach(kft_strbuf *b);

#endif
