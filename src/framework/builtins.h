/*
 * builtins.h - the built-in plugin table (internal). The build generates it
 * (cmake/builtin_plugins.cmake writes <build>/generated/builtin_plugins.c)
 * from one list, so the registry knows no plugin by name: kft_framework_new
 * registers the entries in table order, each whose feature gate is on.
 */
#ifndef KFT_FRAMEWORK_BUILTINS_H
#define KFT_FRAMEWORK_BUILTINS_H

#include <stddef.h>

#include "kftrainer/plugin.h"

typedef struct kft_builtins_entry {
	const kft_plugin *plugin;
	unsigned feature; /* a KFT_FEATURE_* gate that must be on, or 0 */
} kft_builtins_entry;

extern const kft_builtins_entry kft_builtins[];
extern const size_t kft_builtins_count;

#endif
