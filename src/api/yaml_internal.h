/*
 * yaml_internal.h - pieces shared by the decoder (decode.c, yaml_load.c) and
 * the YAML printer (yaml_emit.c). Not part of the public API.
 *
 * The decoder and the printer must agree on what an unquoted scalar means,
 * or printed YAML would not read back as the tree it came from; that is why
 * scalar resolution lives in one place (yaml_scalar.c) used by both.
 */
#ifndef KFTRAINER_SRC_API_YAML_INTERNAL_H
#define KFTRAINER_SRC_API_YAML_INTERNAL_H

#include <stddef.h>

#include <jansson.h>

#include "kftrainer/decode.h"
#include "kftrainer/error.h"

/* What an unquoted scalar means under go-yaml v2's rules. */
enum kft_yaml_kind {
	KFT_YAML_NULL,
	KFT_YAML_BOOL,
	KFT_YAML_INT, /* an integer; beyond int64 (up to uint64) it becomes a real */
	KFT_YAML_FLOAT,
	KFT_YAML_NONFINITE, /* .inf, -.inf, .nan: valid YAML, no JSON form */
	KFT_YAML_STR,
};

/* Resolves the plain scalar s[0..len) into *kind and, when `value` is not
 * NULL, a new json_t in *value (owned by the caller; NULL for
 * KFT_YAML_NONFINITE). Returns 0, or KFT_ENOMEM. */
int kft_yaml_resolve_plain(const char *s, size_t len, enum kft_yaml_kind *kind, json_t **value);

/* Longest text kft_yaml_format_real or kft_yaml_format_key_real write. */
#define KFT_YAML_NUMBER_MAX 48

/* Writes the shortest text that reads back as exactly `d` and as a real
 * (always has a '.' or an exponent): 1.0 prints "1.0", 0.1 "0.1". */
void kft_yaml_format_real(double d, char buf[KFT_YAML_NUMBER_MAX]);

/* Writes a real mapping key the way sigs.k8s.io/yaml turns one into a JSON
 * key: rounded to float32, shortest form, exponent from 1e+06 up. */
void kft_yaml_format_key_real(double d, char buf[KFT_YAML_NUMBER_MAX]);

/* ---- text.c: what the readers share ------------------------------------------- */

/* A position in a text that can be moved forward cheaply, so the start
 * lines of many concatenated JSON values cost one pass in total. */
typedef struct kft_text_cursor {
	size_t offset;
	int line;
	int column;
	int after_cr; /* the previous byte was '\r': a following '\n' is the same break */
} kft_text_cursor;

/* Moves c forward to byte target of text (target >= c->offset). */
void kft_text_cursor_advance(kft_text_cursor *c, const char *text, size_t target);

/* 1-based line and column (in characters) of byte `offset` of `text`.
 * "\r\n", "\r" and "\n" each end a line, as in libyaml. */
void kft_text_position(const char *text, size_t offset, int *line, int *column);

/* Appends a document found at line:column to the list, taking ownership of
 * root (freed on failure too). Returns 0, KFT_ELIMIT past
 * KFT_DECODE_MAX_DOCUMENTS, or KFT_ENOMEM, with err filled. */
int kft_doc_list_push(kft_doc_list *list, json_t *root, int line, int column, const char *source,
                      kft_error *err);

/* Writes key[0..len) into buf for an error message: in double quotes, with
 * control characters, quotes and backslashes escaped, cut short (with "...")
 * when long. buf has at least KFT_KEY_TEXT_MAX bytes. */
#define KFT_KEY_TEXT_MAX 96
void kft_describe_key(const char *key, size_t len, char buf[KFT_KEY_TEXT_MAX]);

/* ---- yaml_load.c -------------------------------------------------------------------- */

/* Decodes a YAML stream (already checked for size, UTF-8 and NUL bytes) into
 * list. On failure returns a negative kft_status with err filled; the
 * documents already pushed stay in list for the caller to free. */
int kft_yaml_load(const char *data, size_t len, const char *source, kft_doc_list *list,
                  kft_error *err);

#endif
