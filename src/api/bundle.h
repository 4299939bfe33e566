/*
 * bundle.h - the schema files under api/, compiled into the library by
 * tools/embed.c (internal; see src/api/schema.c for their use).
 *
 * The files are decoded at build time, by the library's own decoder, and
 * embedded as their trees in a compact pre-order encoding, so starting a
 * process costs building the trees, not parsing YAML and JSON text:
 *
 *   value  = 'n' | 't' | 'f'                      null, true, false
 *          | 'i' varint                           integer, zigzag-encoded
 *          | 'r' varint BYTES                     real as "%.17g" text
 *          | 's' varint BYTES                     string (length, bytes)
 *          | 'a' varint value*                    array (count, items)
 *          | 'o' varint (varint BYTES value)*     object (count, key, value)
 *   varint = 7 bits a byte, least significant first, high bit: more follows
 *
 * Object members keep the files' order, so iteration order is the text's.
 */
#ifndef KFT_API_BUNDLE_H
#define KFT_API_BUNDLE_H

#include <jansson.h>
#include <stddef.h>

#include "kftrainer/error.h"
#include "util/strbuf.h"

struct kft_bundle_file {
	const char *name; /* path relative to the source root, e.g. "api/external/k8s.json" */
	const unsigned char *data; /* the file's tree, encoded as above */
	size_t len;                /* length of data in bytes */
};

extern const struct kft_bundle_file kft_api_bundle[];
extern const size_t kft_api_bundle_count;

/* Appends the encoding of value to out (the caller owns out). Returns 0,
 * KFT_ENOMEM, or KFT_ELIMIT when value nests deeper than the decoder
 * accepts (or is NULL). */
int kft_bundle_encode(const json_t *value, kft_strbuf *out);

/* Builds the tree encoded in data[0..len) into *out (a new reference the
 * caller releases). Returns 0, or KFT_EPARSE when the encoding is
 * truncated, malformed, nested too deeply, has trailing bytes, or memory
 * runs out (nothing is allocated then). */
int kft_bundle_decode(const unsigned char *data, size_t len, json_t **out);

#endif
