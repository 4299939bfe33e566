/*
 * s3list.c - an S3 ListObjectsV2 reply, read (see s3list.h).
 *
 * S3's reply is flat and regular: the few elements wanted never nest in one
 * another, so each is found by its tags in order, its text taken between
 * them and XML's five entities and character references decoded. Anything
 * that does not look like S3's reply is refused rather than guessed at.
 */
#include "local/s3list.h"
#include "util/utf8.h"

#include <stdlib.h>
#include <string.h>

/* The first occurrence of needle in [s, end), or NULL. */
static const char *find(const char *s, const char *end, const char *needle)
{
	size_t n = strlen(needle);
	for (const char *p = s; p && (size_t)(end - p) >= n;
	     p = memchr(p + 1, needle[0], (size_t)(end - p - 1))) {
		if (memcmp(p, needle, n) == 0)
			return p;
	}
	return NULL;
}

/* One entity at s (after '&', up to ';' before end) into out; bytes
 * written, 0 when it is not one XML knows. *used gets its length. */
static size_t entity(const char *s, const char *end, char *out, size_t *used)
{
	static const struct {
		const char *name;
		char c;
	} named[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
	const char *semi = memchr(s, ';', (size_t)(end - s));
	if (!semi || semi - s > 10)
		return 0;
	*used = (size_t)(semi - s) + 1;
	for (size_t i = 0; i < sizeof(named) / sizeof(*named); i++)
		if (strlen(named[i].name) == *used && memcmp(s, named[i].name, *used) == 0) {
			out[0] = named[i].c;
			return 1;
		}
	if (s[0] != '#' || *used < 3)
		return 0;
	int hex = s[1] == 'x';
	unsigned long cp = 0;
	for (const char *p = s + 1 + hex; p < semi; p++) {
		int d = *p >= '0' && *p <= '9'          ? *p - '0'
		        : hex && *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
		        : hex && *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
		                                        : -1;
		if (d < 0 || cp > 0x10ffff)
			return 0;
		cp = cp * (hex ? 16 : 10) + (unsigned long)d;
	}
	return semi > s + 1 + hex ? kft_utf8_encode(cp, out) : 0;
}

/* The text of the element <tag> found in [s, end), decoded, into *out
 * (malloc'd); *next gets where the search may go on. 0, 1 when there is no
 * such element, or a negative kft_status. */
static int element(const char *s, const char *end, const char *open, const char *close, char **out,
                   const char **next, kft_error *err)
{
	const char *a = find(s, end, open);
	if (!a)
		return 1;
	a += strlen(open);
	const char *b = find(a, end, close);
	if (!b)
		return kft_error_set(err, KFT_EPARSE, "S3 list: %s is not closed", open);
	if ((size_t)(b - a) > 6 * KFT_S3_KEY_MAX)
		return kft_error_set(err, KFT_ELIMIT, "S3 list: %s longer than %d bytes", open,
		                     KFT_S3_KEY_MAX);
	char *text = malloc((size_t)(b - a) + 1);
	size_t n = 0;
	if (!text)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (const char *p = a; p < b;) {
		size_t used = 0, w;
		if (*p == '\0' || *p == '<') {
			free(text);
			return kft_error_set(err, KFT_EPARSE, "S3 list: unexpected %s in %s",
			                     *p ? "markup" : "NUL", open);
		}
		if (*p != '&') {
			text[n++] = *p++;
			continue;
		}
		if (!(w = entity(p + 1, b, text + n, &used)) || w > used + 1) {
			free(text);
			return kft_error_set(err, KFT_EPARSE, "S3 list: a bad entity in %s", open);
		}
		n += w;
		p += used + 1;
	}
	text[n] = '\0';
	if (n > KFT_S3_KEY_MAX) {
		free(text);
		return kft_error_set(err, KFT_ELIMIT, "S3 list: %s longer than %d bytes", open,
		                     KFT_S3_KEY_MAX);
	}
	*out = text;
	*next = b + strlen(close);
	return 0;
}

static int add_key(kft_s3_list *l, char *key, kft_error *err)
{
	if (!*key) {
		free(key);
		return kft_error_set(err, KFT_EPARSE, "S3 list: an empty <Key>");
	}
	if (l->n == KFT_S3_KEYS_MAX) {
		free(key);
		return kft_error_set(err, KFT_ELIMIT, "S3 list: more than %d keys",
		                     KFT_S3_KEYS_MAX);
	}
	char **grown = realloc(l->keys, (l->n + 1) * sizeof(*grown));
	if (!grown) {
		free(key);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	l->keys = grown;
	l->keys[l->n++] = key;
	return 0;
}

int kft_s3_list_parse(const char *xml, size_t len, kft_s3_list *out, kft_error *err)
{
	const char *end = xml + len, *p;
	char *text = NULL;
	memset(out, 0, sizeof(*out));
	if (!find(xml, end, "<ListBucketResult"))
		return kft_error_set(err, KFT_EPARSE, "S3 list: not a ListBucketResult");
	int rc = element(xml, end, "<IsTruncated>", "</IsTruncated>", &text, &p, err);
	if (rc < 0)
		return rc;
	out->truncated = rc == 0 && strcmp(text, "true") == 0;
	free(text);
	rc = element(xml, end, "<NextContinuationToken>", "</NextContinuationToken>",
	             &out->next_token, &p, err);
	if (rc < 0)
		return rc;
	for (p = xml;;) {
		const char *block = find(p, end, "<Contents>");
		if (!block)
			return 0;
		const char *block_end = find(block, end, "</Contents>");
		if (!block_end)
			return kft_error_set(err, KFT_EPARSE, "S3 list: <Contents> is not closed");
		rc = element(block, block_end, "<Key>", "</Key>", &text, &p, err);
		if (rc == 1)
			return kft_error_set(err, KFT_EPARSE,
			                     "S3 list: a <Contents> without <Key>");
		if (rc < 0 || (rc = add_key(out, text, err)) < 0)
			return rc;
		p = block_end + strlen("</Contents>");
	}
}

void kft_s3_list_free(kft_s3_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->keys[i]);
	free(l->keys);
	free(l->next_token);
	memset(l, 0, sizeof(*l));
}
