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
/* Room for n more bytes at the end, for a writer that fills it itself:
 * where to write them (then kft_strbuf_grew with the count written, at most
 * n), or NULL once an allocation has failed. Inline when the room is there
 * already, so a writer of many small pieces pays no call for each. */
char *kft_strbuf_room_slow(kft_strbuf *b, size_t n);
static inline char *kft_strbuf_room(kft_strbuf *b, size_t n)
{
	return !b->failed && b->len + n < b->cap ? b->buf + b->len : kft_strbuf_room_slow(b, n);
}
static inline void kft_strbuf_grew(kft_strbuf *b, size_t n)
{
	b->len += n;
	b->buf[b->len] = '\0';
}
/* The string ("" when empty); valid until the next append. */
const char *kft_strbuf_str(const kft_strbuf *b);
/* Hands the heap string to the caller (who frees it) and empties b; NULL if
 * any append failed. */
char *kft_strbuf_detach(kft_strbuf *b);

/* A reply collected up to a bound. kft_strbuf_capped_write has libcurl's
 * CURLOPT_WRITEFUNCTION shape (with a kft_strbuf_capped as its data): it
 * appends and returns size * n, or returns 0, which ends the transfer, once
 * text would pass max (over is then set) or an append failed. The caller
 * sets max, inits and frees text. */
typedef struct kft_strbuf_capped {
	kft_strbuf text;
	size_t max;
	int over;
} kft_strbuf_capped;
size_t kft_strbuf_capped_write(char *data, size_t size, size_t n, void *capped);

#endif
