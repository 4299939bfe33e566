/*
 * object.h - checking whole objects: what the API server and upstream's
 * validating webhooks would say about a trainer.kubeflow.org object, offline.
 *
 * kft_object_check() runs, in the API server's order: kind lookup, defaulting
 * (in place), strict structural validation against the schema with its CEL
 * rules, object-metadata validation, and the runtime-independent checks of
 * upstream's admission webhooks. Checks that need the referenced runtime
 * (the ML-policy plugins) belong to the framework, not here.
 */
#ifndef KFTRAINER_OBJECT_H
#define KFTRAINER_OBJECT_H

#include <jansson.h>

#include "kftrainer/export.h"
#include "kftrainer/schema.h"
#include "kftrainer/validation.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kft_object_class {
	KFT_OBJECT_OURS,     /* a trainer.kubeflow.org kind: validated */
	KFT_OBJECT_EXTERNAL, /* a Kubernetes kind we know of but do not validate */
	KFT_OBJECT_UNKNOWN,  /* no such kind, or no apiVersion/kind: an error in errs */
} kft_object_class;

/* Classifies and, for our kinds, defaults (in place) and validates obj.
 * old_obj is the stored version for an update, or NULL. Problems go to errs;
 * warnings (deprecated runtimes ...) to errs->warnings. Returns the class;
 * *kind_out (may be NULL) receives our kind's info (borrowed) or NULL.
 * Of the external kinds, v1 Secrets and ConfigMaps (which may travel with a
 * TrainJob) are checked too (kft_corev1_check). */
KFT_EXPORT kft_object_class kft_object_check(const kft_schema *schema, json_t *obj,
                                             const json_t *old_obj, kft_field_errors *errs,
                                             const kft_kind_info **kind_out);

/* When doc is a list (`kind: List`, or any *List with an items array),
 * returns its items (borrowed); otherwise NULL. */
KFT_EXPORT json_t *kft_object_list_items(const json_t *doc);

/* "KIND/NAMESPACE/NAME" ("KIND/NAME" for cluster-scoped kinds, "default" for
 * an unset namespace, "<unnamed>" when there is no name). Caller frees. */
KFT_EXPORT char *kft_object_ref(const json_t *obj, int namespaced);

#ifdef __cplusplus
}
#endif

#endif
