/*
 * strbuf.c - growable strings. See strbuf.h.
 */
#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kft_strbuf_init(kft_strbuf *b)
{
	b->buf = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
}

void kft_strbuf_free(kft_strbuf *b)
{
	free(b->buf);
	kft_strbuf_init(b);
}

void kft_strbuf_reset(kft_strbuf *b)
{
	b->len = 0;
	if (b->buf)
		b->buf[0] = '\0';
}

void kft_strbuf_truncate(kft_strbuf *b, size_t len)
{
	if (len < b->len) {
		b->len = len;
		b->buf[len] = '\0';
	}
}

static int reserve(kft_strbuf *b, size_t extra)
{
	if (b->failed)
		return -1;
	if (b->len + extra + 1 <= b->cap)
		return 0;
	size_t ncap = b->cap ? b->cap : 64;
	while (ncap < b->len + extra + 1)
		ncap *= 2;
	char *n = realloc(b->buf, ncap);
	if (!n) {
		b->failed = 1;
		return -1;
	}
	b->buf = n;
	b->cap = ncap;
	return 0;
}

char *kft_strbuf_room_slow(kft_strbuf *b, size_t n)
{
	return reserve(b, n) == 0 ? b->buf + b->len : NULL;
}

void kft_strbuf_putn(kft_strbuf *b, const char *s, size_t n)
{
	if (reserve(b, n) != 0)
		return;
	memcpy(b->buf + b->len, s, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

void kft_strbuf_putc(kft_strbuf *b, char c)
{
	kft_strbuf_putn(b, &c, 1);
}

void kft_strbuf_puts(kft_strbuf *b, const char *s)
{
	kft_strbuf_putn(b, s, strlen(s));
}

void kft_strbuf_printf(kft_strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(b, (size_t)n) != 0) {
		b->failed = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

const char *kft_strbuf_str(const kft_strbuf *b)
{
	return b->buf ? b->buf : "";
}

char *kft_strbuf_detach(kft_strbuf *b)
{
	if (b->failed) {
		kft_strbuf_free(b);
		return NULL;
	}
	char *s = b->buf ? b->buf : strdup("");
	kft_strbuf_init(b);
	return s;
}

size_t kft_strbuf_capped_write(char *data, size_t size, size_t n, void *capped)
{
	kft_strbuf_capped *c = capped;
	size_t len = size * n;
	if (len > c->max - c->text.len) {
		c->over = 1;
		return 0;
	}
	kft_strbuf_putn(&c->text, data, len);
	return c->text.failed ? 0 : len;
}
