/*
 * sha1.c - SHA-1 as FIPS 180-4 section 6.1 describes it. See sha1.h.
 *
 * The message is consumed in 64-byte blocks straight from the caller's
 * buffer; only the tail is copied, into one or two blocks that carry the
 * padding: a 0x80 byte, zeros, and the message length in bits as a 64-bit
 * big-endian number in the last 8 bytes. Each block updates the five 32-bit
 * state words through 80 rounds over the expanded message schedule.
 */
#include "util/sha1.h"

#include <stdint.h>
#include <string.h>

#define BLOCK 64

static uint32_t rotl(uint32_t x, unsigned n)
{
	return (x << n) | (x >> (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
	       (uint32_t)p[3];
}

/* The round function f_t and constant K_t of FIPS 180-4 4.1.1 and 4.2.1. */
static uint32_t round_mix(int t, uint32_t b, uint32_t c, uint32_t d)
{
	if (t < 20)
		return ((b & c) | (~b & d)) + 0x5a827999u;
	if (t < 40)
		return (b ^ c ^ d) + 0x6ed9eba1u;
	if (t < 60)
		return ((b & c) | (b & d) | (c & d)) + 0x8f1bbcdcu;
	return (b ^ c ^ d) + 0xca62c1d6u;
}

static void compress(uint32_t h[5], const unsigned char block[BLOCK])
{
	uint32_t w[80];
	for (int t = 0; t < 16; t++)
		w[t] = load_be32(block + 4 * t);
	for (int t = 16; t < 80; t++)
		w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (int t = 0; t < 80; t++) {
		uint32_t tmp = rotl(a, 5) + round_mix(t, b, c, d) + e + w[t];
		e = d;
		d = c;
		c = rotl(b, 30);
		b = a;
		a = tmp;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void kft_sha1(const void *data, size_t len, unsigned char out[KFT_SHA1_LEN])
{
	uint32_t h[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u};
	const unsigned char *p = data;
	size_t full = len - len % BLOCK;
	for (size_t off = 0; off < full; off += BLOCK)
		compress(h, p + off);

	/* The tail, 0x80, and the bit length: one block when the tail leaves
	 * room for 9 more bytes, two otherwise. */
	unsigned char tail[2 * BLOCK] = {0};
	size_t rest = len - full;
	if (rest)
		memcpy(tail, p + full, rest);
	tail[rest] = 0x80;
	size_t tail_len = rest + 9 <= BLOCK ? BLOCK : 2 * BLOCK;
	uint64_t bits = (uint64_t)len * 8;
	for (int i = 0; i < 8; i++)
		tail[tail_len - 1 - i] = (unsigned char)(bits >> (8 * i));
	for (size_t off = 0; off < tail_len; off += BLOCK)
		compress(h, tail + off);

	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 4; j++)
			out[4 * i + j] = (unsigned char)(h[i] >> (24 - 8 * j));
}

void kft_sha1_hex(const void *data, size_t len, char hex[2 * KFT_SHA1_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[KFT_SHA1_LEN];
	kft_sha1(data, len, md);
	for (int i = 0; i < KFT_SHA1_LEN; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0x0f];
	}
	hex[2 * KFT_SHA1_LEN] = '\0';
}
