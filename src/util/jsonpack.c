/*
 * jsonpack.c - see jsonpack.h. The fragments are those of the objects the
 * controller caches, as its caches keep them (without managedFields;
 * JobSets, ConfigMaps and Secrets trimmed, src/controller/trim.c): member
 * names and the punctuation around them, in the order the API server
 * writes members, and the values every TrainJob's children share. At each
 * byte the longest fragment that matches is taken.
 */
#include "util/jsonpack.h"

#include <string.h>

#define ESCAPE 0x1f

typedef struct fragment {
	const char *s;
	size_t len;
} fragment;

/* clang-format off */
#define F(lit) {lit, sizeof(lit) - 1}
/* clang-format on */

/* Code i stands for fragments[i]. */
static const fragment fragments[] = {
        {NULL, 0}, /* 0 is not a code */
        F("\"ownerReferences\":[{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\","
          "\"blockOwnerDeletion\":true,\"controller\":true,\"kind\":\"TrainJob\",\"name\":\""),
        /* the same in a built-in kind's order (a ConfigMap's, a Secret's) */
        F("\"ownerReferences\":[{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\","
          "\"kind\":\"TrainJob\",\"name\":\""),
        F("\",\"controller\":true,\"blockOwnerDeletion\":true}]"),
        F("\"runtimeRef\":{\"apiGroup\":\"trainer.kubeflow.org\",\"kind\":\""),
        F("\"conditions\":[{\"lastTransitionTime\":\""),
        F("\"replicatedJobsStatus\":[{\"active\":"),
        F("{\"metadata\":{\""),
        F("creationTimestamp\":\""),
        F("\",\"resourceVersion\":\""),
        F("{\"lastTransitionTime\":\""),
        F("\",\"status\":\"False\",\"type\":\""),
        F("\",\"status\":\"True\",\"type\":\""),
        F("\"resourcesPerNode\":{\""),
        F("trainer.kubeflow.org/"),
        F("\",\"generation\":"),
        F("\",\"namespace\":\""),
        F("\"annotations\":{\""),
        F("jobset.sigs.k8s.io/"),
        F("\",\"message\":\""),
        F("},\"status\":{\""),
        F("\",\"reason\":\""),
        F(",\"succeeded\":"),
        F(",\"suspended\":"),
        F("},\"spec\":{\""),
        F("\"labels\":{\""),
        F("\"command\":[\""),
        F("\"suspend\":true"),
        F("\",\"uid\":\""),
        F(",\"failed\":"),
        F(",\"name\":\""),
};

#define NFRAGMENTS (sizeof(fragments) / sizeof(fragments[0]))

_Static_assert(NFRAGMENTS - 1 < ESCAPE, "codes run from 1 to ESCAPE - 1");

/* The bytes a fragment starts with (the unit test packs every fragment). */
static const unsigned char starts[256] = {
        ['"'] = 1, ['{'] = 1, ['}'] = 1, [','] = 1, ['c'] = 1, ['t'] = 1, ['j'] = 1};

/* The code of the longest fragment at text[i..len), or 0. */
static unsigned char match(const char *text, size_t i, size_t len)
{
	unsigned char best = 0;
	for (size_t f = 1; f < NFRAGMENTS; f++)
		if (fragments[f].s[0] == text[i] && fragments[f].len <= len - i &&
		    fragments[f].len > fragments[best].len &&
		    memcmp(text + i, fragments[f].s, fragments[f].len) == 0)
			best = (unsigned char)f;
	return best;
}

const char *kft_jsonpack_fragment(unsigned int code)
{
	return code >= 1 && code < NFRAGMENTS ? fragments[code].s : NULL;
}

size_t kft_jsonpack(const char *text, size_t len, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)text[i];
		unsigned char f = starts[c] ? match(text, i, len) : 0;
		if (f) {
			if (out)
				out[o] = (char)f;
			o++;
			i += fragments[f].len;
		} else if (c <= ESCAPE) {
			if (out) {
				out[o] = ESCAPE;
				out[o + 1] = (char)(c | 0x40);
			}
			o += 2;
			i++;
		} else {
			if (out)
				out[o] = (char)c;
			o++;
			i++;
		}
	}
	return o;
}

size_t kft_jsonpack_unpack(const char *packed, size_t len, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)packed[i];
		if (c == ESCAPE) {
			if (i + 1 < len)
				i++;
			if (out)
				out[o] = (char)(packed[i] & 0x1f);
			o++;
		} else if (c >= 1 && c < NFRAGMENTS) {
			if (out)
				memcpy(out + o, fragments[c].s, fragments[c].len);
			o += fragments[c].len;
		} else {
			if (out)
				out[o] = (char)c;
			o++;
		}
	}
	return o;
}
