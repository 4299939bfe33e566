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
 *          | 'O' varint (varint BYTES varint value)*  object, each value after
 *                                                 its length in bytes
 *   varint = 7 bits a byte, least significant first, high bit: more follows
 *
 * Objects at the root and two levels down (a file, its definitions, and
 * each definition's own keys) are 'O', so kft_bundle_members steps from
 * member to member without reading them: a process decodes only the
 * definitions it meets, and can tell a definition's keys without decoding
 * it.
 *
 * Object members keep the files' order, so iteration order is the text's.
 */
#ifndef KFT_API_BUNDLE_H
#define KFT_API_BUNDLE_H

#include <jansson.h>
#include <stddef.h>

#include "kftrainer/error.h"
#include "kftrainer/schema.h"
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

/* One member of an encoded object: its key (key[0..klen), not
 * NUL-terminated) and its value's encoding (value[0..vlen), which
 * kft_bundle_decode takes). Non-zero stops the walk with that result. */
typedef int (*kft_bundle_member_fn)(const char *key, size_t klen, const unsigned char *value,
                                    size_t vlen, void *ctx);

/* Calls fn for each member of the object encoded in data[0..len), in order,
 * building nothing: a process that needs a few members of a large tree
 * decodes only those. Returns 0, fn's first non-zero result, or KFT_EPARSE
 * when data is not one well-formed encoded object (fn may have been called
 * for the members before the fault). Of an 'O' object only the framing is
 * checked here: a member's own encoding is checked when it is decoded. */
int kft_bundle_members(const unsigned char *data, size_t len, kft_bundle_member_fn fn, void *ctx);

/* A schema over files[0..n) (kept: they must outlive it): each file's
 * definitions indexed, each built on its first use (any thread may be first),
 * its kinds read now; what kft_schema_builtin() returns over the files
 * compiled in (src/api/schema.c). On success *out is the caller's
 * (kft_schema_free). KFT_EINVAL for a file that is not an encoded object, a
 * definition defined twice or a kind whose definition is missing;
 * KFT_ENOMEM. */
int kft_schema_load_bundle(const struct kft_bundle_file *files, size_t n, kft_schema **out,
                           kft_error *err);

#endif
