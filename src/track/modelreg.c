/*
 * modelreg.c - a model version in the Kubeflow Model Registry (see
 * modelreg.h). Each step looks before it makes, so a retry after a failure
 * half-way goes on where it stopped: GET registered_model?name= (404: POST
 * registered_models), then the version and its artifact found by the
 * externalId kftrainer gives them (kftrainer:MODEL_ID:VERSION and
 * kftrainer:VERSION_ID; 404: POST model_versions, POST
 * model_versions/ID/artifacts). Lookups by name under a parent, and the
 * listings of a model's versions and a version's artifacts, fail with an
 * SQL error on v0.3.0 over PostgreSQL; the externalId lookups do not.
 */
#include "track/modelreg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/pctenc.h"

#define API     "api/model_registry/v1alpha3/"
#define ENC_MAX 800

/* The "id" of a reply, malloc'd into *id. */
static int id_of(const json_t *doc, const char *what, char **id, kft_error *err)
{
	const char *v = json_string_value(json_object_get(doc, "id"));
	if (!v)
		return kft_error_set(err, KFT_EPARSE, "model registry %s: a reply without an id",
		                     what);
	return (*id = strdup(v)) ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* GET API find?key=value (404: POST API create with body, which this
 * takes), the object's id into *id. */
static int find_or_make(kft_mlflow *c, const char *find, const char *key, const char *value,
                        const char *create, json_t *body, char **id, kft_error *err)
{
	char enc[ENC_MAX], path[ENC_MAX + 128];
	json_t *doc = NULL;
	int rc = 0;
	if (!body)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	else if (kft_pct_encode(value, false, enc, sizeof(enc)))
		rc = kft_error_set(err, KFT_ELIMIT, "model registry: %s too long", key);
	if (rc == 0) {
		snprintf(path, sizeof(path), API "%s?%s=%s", find, key, enc);
		rc = kft_mlflow_call_at(c, "GET", path, NULL, &doc, err);
	}
	if (rc == KFT_ENOTFOUND) {
		snprintf(path, sizeof(path), API "%s", create);
		rc = kft_mlflow_call_at(c, "POST", path, body, &doc, err);
	}
	if (rc == 0)
		rc = id_of(doc, create, id, err);
	json_decref(doc);
	json_decref(body);
	return rc;
}

int kft_modelreg_register(kft_mlflow *c, const char *name, const char *version, const char *uri,
                          const char *author, char **id, kft_error *err)
{
	char *model = NULL, *artifact = NULL, *ext = NULL, enc_id[ENC_MAX], create[ENC_MAX + 64];
	*id = NULL;
	int rc = find_or_make(c, "registered_model", "name", name, "registered_models",
	                      json_pack("{s:s}", "name", name), &model, err);
	if (rc == 0 && asprintf(&ext, "kftrainer:%s:%s", model, version) < 0)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0) {
		json_t *body = json_pack("{s:s, s:s, s:s}", "name", version, "registeredModelId",
		                         model, "externalId", ext);
		if (body && author)
			json_object_set_new(body, "author", json_string(author));
		rc = find_or_make(c, "model_version", "externalId", ext, "model_versions", body, id,
		                  err);
	}
	free(ext);
	ext = NULL;
	if (rc == 0 && asprintf(&ext, "kftrainer:%s", *id) < 0)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	else if (rc == 0 && kft_pct_encode(*id, false, enc_id, sizeof(enc_id)))
		rc = kft_error_set(err, KFT_ELIMIT, "model registry: version id too long");
	if (rc == 0) {
		snprintf(create, sizeof(create), "model_versions/%s/artifacts", enc_id);
		rc = find_or_make(c, "model_artifact", "externalId", ext, create,
		                  json_pack("{s:s, s:s, s:s, s:s}", "artifactType",
		                            "model-artifact", "name", name, "uri", uri,
		                            "externalId", ext),
		                  &artifact, err);
	}
	if (rc) {
		free(*id);
		*id = NULL;
	}
	free(ext);
	free(artifact);
	free(model);
	return rc;
}
