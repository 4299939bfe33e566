/*
 * decode.h - reading Kubernetes objects from YAML or JSON text, and printing
 * JSON trees back as YAML.
 *
 * Every object kftrainer handles is a jansson tree (json_t). This header turns
 * the text a user hands us (a file, stdin, an HTTP body) into such trees, the
 * way kubectl does: YAML is read with the YAML 1.1 rules of go-yaml v2 (the
 * library behind sigs.k8s.io/yaml), so `replicas: 3` is an integer, `on: yes`
 * is a pair of booleans and `version: "1.0"` stays a string. JSON is read with
 * jansson. The YAML printer is the inverse: what it prints decodes back to an
 * equal tree.
 *
 * Input is untrusted. The bounds below are hard limits; exceeding one is a
 * KFT_ELIMIT error, never a crash or an unbounded allocation.
 */
#ifndef KFTRAINER_DECODE_H
#define KFTRAINER_DECODE_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "kftrainer/error.h"
#include "kftrainer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest input accepted, in bytes (64 MiB), for one kft_decode call. */
#define KFT_DECODE_MAX_INPUT_BYTES ((size_t)64 * 1024 * 1024)
/* Deepest nesting of mappings/sequences (objects/arrays) in one document:
 * `{}` is depth 1, `{"a": []}` depth 2. Far above any Kubernetes object. */
#define KFT_DECODE_MAX_DEPTH 100
/* Most values (scalars and collections, counting every copy an alias
 * expands to) one stream may produce. Stops "billion laughs" alias bombs and
 * bounds memory for plain inputs too. */
#define KFT_DECODE_MAX_NODES 1000000
/* Most non-empty documents in one stream. */
#define KFT_DECODE_MAX_DOCUMENTS 10000
/* Deepest tree kft_yaml_emit accepts; a guard for trees built in code, set
 * well above KFT_DECODE_MAX_DEPTH so anything decoded can be printed. */
#define KFT_YAML_EMIT_MAX_DEPTH 1000

typedef struct kft_doc {
	json_t *root; /* owned by the list */
	int line;     /* 1-based line of the document's first node in the source */
} kft_doc;

typedef struct kft_doc_list {
	kft_doc *items;
	size_t count;
} kft_doc_list;

/*
 * Decodes `len` bytes of `data` into one tree per document.
 *
 * The input is JSON when its first byte after an optional UTF-8 byte order
 * mark and whitespace is `{` or `[`: one value or several concatenated ones.
 * Otherwise it is a YAML stream of documents separated by `---`. Documents
 * that are empty or null (only `---`, only comments, `~`) are skipped.
 *
 * YAML scalars resolve as in go-yaml v2: null, ~ and empty are null; true,
 * false, yes, no, on, off, y, n (in lower, Title and UPPER case) are
 * booleans; decimal, 0x, 0o, 0b and leading-0 octal integers (underscores
 * ignored) are integers; numbers beyond int64 and decimal fractions or
 * exponents are reals; .inf and .nan are rejected because JSON cannot carry
 * them; everything else, and every quoted scalar, is a string. The tags
 * !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are honoured, any
 * other tag is an error. Anchors, aliases and `<<` merge keys work; keys
 * written in the mapping itself win over merged ones, and earlier merge
 * sources win over later ones. Non-string keys become strings (`1: a` has key
 * "1", `yes: a` has key "true"); a key written twice in one mapping is an
 * error in YAML and JSON alike. JSON numbers keep their JSON type (1 is an
 * integer, 1.0 a real); an integer beyond int64 or a real beyond double is
 * an error there (KFT_EPARSE), as jansson reports it.
 *
 * `source` names the input in messages ("-" for stdin, or a path); NULL
 * reads as "-". On success fills *out (free with kft_doc_list_free) and
 * returns 0. On failure returns a negative kft_status, leaves *out empty
 * (nothing to free) and fills err with "SOURCE:LINE:COLUMN: message" (1-based
 * line and column, columns counted in characters):
 *   KFT_EPARSE  syntax error, invalid UTF-8, a NUL byte
 *   KFT_EINVAL  a bad tag, duplicate or non-scalar key, bad merge, .inf/.nan;
 *               no document at all ("SOURCE: empty input: no objects found")
 *   KFT_ELIMIT  one of the KFT_DECODE_MAX_* bounds ("SOURCE: ..." for size)
 *   KFT_ENOMEM  out of memory
 */
KFT_EXPORT int kft_decode(const char *data, size_t len, const char *source, kft_doc_list *out,
                          kft_error *err);

/* Releases every tree in the list and the list's array, leaving it empty.
 * Safe on an empty or already freed list; list may be NULL. */
KFT_EXPORT void kft_doc_list_free(kft_doc_list *list);

/*
 * Reads the whole file at `path` ("-" = standard input) and decodes it with
 * kft_decode, naming it `path` in messages. Same results and ownership as
 * kft_decode, plus KFT_EIO when the file cannot be opened or read and
 * KFT_ELIMIT when it is larger than KFT_DECODE_MAX_INPUT_BYTES (detected
 * without reading more than one byte past the bound).
 */
KFT_EXPORT int kft_decode_file(const char *path, kft_doc_list *out, kft_error *err);

/*
 * Prints `root` as one YAML document the way kubectl prints objects: block
 * style, 2-space indentation, keys in the tree's order, sequence items under
 * a key not indented (`key:\n- item`), {} and [] for empty collections.
 * Strings are quoted only when plain text would read back as something else
 * ("true", "123", "", "a: b", " x" ...), in double quotes when they would
 * change type and single quotes when YAML syntax needs it; multi-line strings
 * are |- or | blocks when that reads back exactly, double-quoted otherwise.
 * Integers print as integers, reals always with a '.' or an exponent so they
 * read back as the same double. Long lines are not folded.
 *
 * Round trip: kft_decode(kft_yaml_emit(x)) yields a tree equal to x
 * (json_equal) for every tree kft_decode can produce.
 *
 * Returns a malloc'd NUL-terminated string the caller frees with free(), or
 * NULL with err filled: KFT_EINVAL for a NULL root, a string that is not
 * valid UTF-8 or an object key containing a NUL byte, KFT_ELIMIT for a tree
 * deeper than KFT_YAML_EMIT_MAX_DEPTH, KFT_ENOMEM.
 */
KFT_EXPORT char *kft_yaml_emit(const json_t *root, kft_error *err);

/*
 * Like kft_yaml_emit, but writes the document to `out`, preceded by a line
 * "---" when `document_marker` is non-zero (to separate documents in a
 * stream). Returns 0, or a negative kft_status with err filled (KFT_EIO when
 * writing fails; nothing is written when the tree cannot be printed).
 */
KFT_EXPORT int kft_yaml_emit_file(FILE *out, const json_t *root, int document_marker,
                                  kft_error *err);

#ifdef __cplusplus
}
#endif

#endif
