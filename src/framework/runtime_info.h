/*
 * runtime_info.h - building RuntimeInfo (internal; see kftrainer/framework.h
 * for the type and the pipeline that uses it).
 */
#ifndef KFT_FRAMEWORK_RUNTIME_INFO_H
#define KFT_FRAMEWORK_RUNTIME_INFO_H

#include "kftrainer/framework.h"

/* RuntimeInfo for job against runtime, before any plugin has run. */
int kft_runtime_info_build(const json_t *runtime, const kft_trainjob *job, kft_runtime_info **out,
                           kft_error *err);

#endif
