/*
 * admission.h - the checks upstream's validating webhooks make that need no
 * runtime lookup, and kftrainer's OptimizationJob checks (internal; called
 * by kft_object_check).
 */
#ifndef KFT_API_ADMISSION_H
#define KFT_API_ADMISSION_H

#include <jansson.h>

#include "kftrainer/schema.h"
#include "kftrainer/validation.h"

void kft_admission_check(const kft_kind_info *kind, const json_t *obj, const json_t *old_obj,
                         kft_field_errors *errs);

#endif
