/*
 * builtin.h - the built-in plugins (internal). Each is defined in
 * src/plugins/<name>.c; src/framework/registry.c registers them in the
 * order documented in kftrainer/framework.h.
 */
#ifndef KFT_PLUGINS_BUILTIN_H
#define KFT_PLUGINS_BUILTIN_H

#include "kftrainer/framework.h"

extern const kft_plugin kft_plugin_plainml;
extern const kft_plugin kft_plugin_torch;
extern const kft_plugin kft_plugin_mpi;
extern const kft_plugin kft_plugin_jax;
extern const kft_plugin kft_plugin_xgboost;
extern const kft_plugin kft_plugin_flux;
extern const kft_plugin kft_plugin_coscheduling;
extern const kft_plugin kft_plugin_volcano;
extern const kft_plugin kft_plugin_jobset;
extern const kft_plugin kft_plugin_trainjobstatus;

#endif
