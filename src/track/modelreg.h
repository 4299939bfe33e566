/*
 * modelreg.h - a new version of a model in the Kubeflow Model Registry
 * (internal), through its REST API (api/model_registry/v1alpha3, the
 * server kubeflow/model-registry's `proxy` serves) over mlflow.h's JSON
 * client: the registered model found by name or made, a model version
 * named after the TrainJob, and a model artifact whose uri is where the
 * export put the files. A retried export finds its version again and adds
 * nothing twice.
 *
 * Errors: those of kft_mlflow_call_at (KFT_EUNAVAILABLE, KFT_EDENIED,
 * KFT_EINVAL with the server's message), KFT_EPARSE for a reply without an
 * id, KFT_ENOMEM.
 */
#ifndef KFT_TRACK_MODELREG_H
#define KFT_TRACK_MODELREG_H

#include "kftrainer/error.h"
#include "track/mlflow.h"

/* The environment variable naming the registry's server, http(s)://HOST[:PORT]. */
#define KFT_MODELREG_URL_ENV "KFTRAINER_MODEL_REGISTRY_URL"

/* Registers version `version` of model `name` with its artifact at uri
 * (borrowed strings); `author` (may be NULL) is the version's author.
 * *id is the version's id on the server (malloc'd). */
int kft_modelreg_register(kft_mlflow *c, const char *name, const char *version, const char *uri,
                          const char *author, char **id, kft_error *err);

#endif
