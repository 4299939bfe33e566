/*
 * bundle.h - the schema files under api/, compiled into the library by
 * tools/embed.c (internal; see src/api/schema.c for their use).
 */
#ifndef KFT_API_BUNDLE_H
#define KFT_API_BUNDLE_H

#include <stddef.h>

struct kft_bundle_file {
	const char *name; /* path relative to the source root, e.g. "api/external/core.json" */
	const char *data; /* the file's bytes (NUL-terminated for convenience) */
	size_t len;       /* length without the terminating NUL */
};

extern const struct kft_bundle_file kft_api_bundle[];
extern const size_t kft_api_bundle_count;

#endif
