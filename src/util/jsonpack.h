/*
 * jsonpack.h - compact JSON text of Kubernetes objects made smaller by
 * writing fragments that nearly every cached object carries (member names
 * such as "creationTimestamp", a TrainJob's controller ownerReference up to
 * its name, condition members) as single bytes (internal).
 *
 * The controller's informer caches keep each object as compact JSON text
 * (src/kube/informer.c); these fragments were about half of it. Compact
 * JSON has no raw control bytes (strings escape them), so bytes 0x01 to
 * 0x1e stand for the fragments and 0x1f escapes any control byte or NUL
 * that does occur: every byte string packs and unpacks to itself, and a
 * packed string never holds a NUL. Packing is deterministic, so equal texts
 * pack equal.
 *
 * No call allocates or fails.
 */
#ifndef KFT_UTIL_JSONPACK_H
#define KFT_UTIL_JSONPACK_H

#include <stddef.h>

/* Packs text[0..len) into out, when out is not NULL, and returns the packed
 * length: at most 2 * len (at most len for text without control bytes).
 * Writes no NUL. */
size_t kft_jsonpack(const char *text, size_t len, char *out);

/* Unpacks packed[0..len) into out, when out is not NULL, and returns the
 * unpacked length. Writes no NUL. A string that kft_jsonpack did not make
 * unpacks to some byte string, never past the returned length. */
size_t kft_jsonpack_unpack(const char *packed, size_t len, char *out);

/* The fragment code stands for, or NULL (for tests). */
const char *kft_jsonpack_fragment(unsigned int code);

#endif
