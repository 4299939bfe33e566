/*
 * corev1.h - the API server's checks of core/v1 data that travels with a
 * TrainJob: Secrets and ConfigMaps given beside it, and the environment
 * variable names that end up in its pods.
 *
 * Why: a TrainJob is a custom resource, so the API server checks its env
 * names only when JobSet creates the Jobs (and then the job waits forever,
 * the reason buried in an event); a Secret that `kftrainer train -f` stores
 * beside a job would otherwise fail only when a pod reads it. `validate` and
 * `train` call these to refuse such input at submission, in the API server's
 * own words (Kubernetes v1.36, pkg/apis/core/validation: ValidateEnv,
 * ValidateEnvFrom, ValidateSecret, ValidateConfigMap; base64 as Go's
 * encoding/json decodes []byte). The controller's webhooks do not: upstream's
 * accept those TrainJobs, and ours answer as upstream's do.
 *
 * All inputs are borrowed and untrusted; errors are appended to `errs`
 * (the caller owns the list; on allocation failure errs->oom is set).
 */
#ifndef KFTRAINER_COREV1_H
#define KFTRAINER_COREV1_H

#include <jansson.h>

#include "kftrainer/export.h"

#include "kftrainer/validation.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * When `obj` is a v1 Secret or ConfigMap, checks it as the API server does on
 * create and returns 1; otherwise returns 0 and checks nothing. A value that
 * the server could not even decode (a data/binaryData value that is not a
 * string or not base64) is the only error reported, as the server stops
 * there; it reads, at "data[KEY]" (or "binaryData[KEY]"),
 *
 *     Invalid value: "<secret contents redacted>": Secret in version "v1"
 *     cannot be handled as a Secret: illegal base64 data at input byte 3
 *
 * Otherwise: metadata (kft_validate_object_meta), every key (stringData's
 * merged into data, as the server converts them) a config key at
 * "data[KEY]", the 1 MiB size limit, and the keys a typed Secret
 * (kubernetes.io/tls, basic-auth, ssh-auth, dockercfg, dockerconfigjson,
 * service-account-token) requires.
 */
KFT_EXPORT int kft_corev1_check(const json_t *obj, kft_field_errors *errs);

/*
 * Checks every environment variable list in `tree` (any "env" array of
 * EnvVars and "envFrom" array of EnvFromSources, at any depth) as pods
 * are checked: each env[i].name required and a relaxed env var name
 * (kft_is_relaxed_env_var_name), each non-empty envFrom[i].prefix too.
 * Errors name the path from `path` (e.g. "spec" gives
 * "spec.trainer.env[0].name"). Meant for a TrainJob's spec, whose schema
 * has no other "env"; nesting deeper than 64 levels is not walked.
 */
KFT_EXPORT void kft_corev1_check_env(const json_t *tree, const char *path, kft_field_errors *errs);

#ifdef __cplusplus
}
#endif

#endif
