/*
 * trainjobstatus.c - the TrainJobStatus plugin: lets training code report
 * progress to the trainer's status server (upstream v2.3.0,
 * pkg/runtime/framework/plugins/trainjobstatus, KEP 2779).
 *
 * Every container of the trainer pod set learns where the server is and how
 * to prove who it is:
 *   KUBEFLOW_TRAINER_SERVER_URL      https://<service>.<namespace>.svc:<port>
 *                                    /apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status
 *   KUBEFLOW_TRAINER_SERVER_CA_CERT  /var/run/secrets/kubeflow/trainer/ca.crt
 *   KUBEFLOW_TRAINER_SERVER_TOKEN    /var/run/secrets/kubeflow/trainer/token
 * The two files come from one projected volume mounted read-only there: a
 * service-account token whose audience names this TrainJob's status
 * endpoint (valid one hour, renewed by the kubelet), and the server's CA
 * certificate from a ConfigMap "<name>-tls-config" that this plugin builds
 * by copying ca.crt out of the webhook's certificate Secret.
 *
 * Upstream registers this plugin only when the TrainJobStatus feature gate
 * is on, and the gate is off by default (alpha) in v2.3.0.
 *
 * Where the server is differs between a cluster and this machine, so it is
 * a backend question (status_endpoint in backend.h). The Kubernetes answer
 * is upstream's defaults (service kubeflow-trainer-controller-manager in
 * namespace kubeflow-system, status server port 10443, Secret
 * kubeflow-trainer-webhook-cert). A backend that provides the CA and token
 * files itself (the local engine: its supervisor serves the endpoint on
 * loopback) gets the three variables only: no volume, no ConfigMap.
 *
 * kftrainer, beyond upstream: a torchtune fine-tune (`tune run`), which has
 * no way to call the endpoint by itself, gets a status logger that does
 * (torchtune_status.c), so its loss and progress reach trainerStatus without
 * the user editing the runtime.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "plugins/builtin.h"
#include "plugins/torchtune.h"
#include "util/base64.h"

#define ENV_STATUS_URL KFT_ENV_STATUS_SERVER_URL
#define ENV_CA_CERT    KFT_ENV_STATUS_CA_CERT
#define ENV_TOKEN      KFT_ENV_STATUS_TOKEN

#define MOUNT_PATH           KFT_STATUS_MOUNT_PATH
#define CA_CERT_FILE         "ca.crt"
#define TOKEN_FILE           "token"
#define TOKEN_VOLUME         "kubeflow-trainer-token"
#define TOKEN_EXPIRY_SECONDS 3600
#define CA_CERT_KEY          "ca.crt"
#define TLS_CONFIG_SUFFIX    "-tls-config"

/* Upstream's operator namespace and webhook certificate Secret. */
#define DEFAULT_NAMESPACE      "kubeflow-system"
#define DEFAULT_WEBHOOK_SECRET "kubeflow-trainer-webhook-cert"

/* A Secret holds at most 1 MiB; anything larger is not a CA bundle. */
#define MAX_CA_CERT_BYTES (1u << 20)

/* ---- what the trainer pods get ------------------------------------------------ */

/* The backend's answer; a table without the question (one a caller built by
 * hand) gets the Kubernetes one, as the pipeline would give it. */
static int endpoint_of(const kft_plugin_ctx *ctx, const kft_trainjob *job, kft_status_endpoint *ep)
{
	const kft_backend *b =
	        ctx && ctx->backend && ctx->backend->status_endpoint ? ctx->backend : NULL;
	if (!b)
		return kft_backend_default()->status_endpoint(NULL, job->ns, job->name, ep);
	return b->status_endpoint(b->self, job->ns, job->name, ep);
}

/* The three variables, in upstream's order. */
static json_t *env_vars(const kft_trainjob *job, const kft_status_endpoint *ep)
{
	char *url = NULL;
	if (asprintf(&url, "%s" KFT_STATUS_PATH_FORMAT, ep->base_url, job->ns, job->name) < 0)
		return NULL;
	json_t *env = json_pack("[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]", "name", ENV_STATUS_URL,
	                        "value", url, "name", ENV_CA_CERT, "value", ep->ca_cert, "name",
	                        ENV_TOKEN, "value", ep->token);
	free(url);
	return env;
}

static json_t *volume_mount(void)
{
	return json_pack("{s:s, s:b, s:s}", "name", TOKEN_VOLUME, "readOnly", 1, "mountPath",
	                 MOUNT_PATH);
}

/* The projected token + CA certificate volume. */
static json_t *token_volume(const kft_trainjob *job)
{
	char *audience = NULL, *config_map = NULL;
	json_t *vol = NULL;
	if (asprintf(&audience, KFT_API_VERSION "/namespaces/%s/trainjobs/%s/status", job->ns,
	             job->name) >= 0 &&
	    asprintf(&config_map, "%s" TLS_CONFIG_SUFFIX, job->name) >= 0)
		vol = json_pack("{s:s, s:{s:[{s:{s:s, s:i, s:s}}, {s:{s:s, s:[{s:s, s:s}]}}]}}",
		                "name", TOKEN_VOLUME, "projected", "sources", "serviceAccountToken",
		                "audience", audience, "expirationSeconds", TOKEN_EXPIRY_SECONDS,
		                "path", TOKEN_FILE, "configMap", "name", config_map, "items", "key",
		                CA_CERT_KEY, "path", CA_CERT_FILE);
	free(audience);
	free(config_map);
	return vol;
}

static int inject(kft_pod_set *ps, const json_t *env, const json_t *mount, const json_t *vol)
{
	for (size_t i = 0; i < ps->n_containers; i++) {
		kft_container *c = &ps->containers[i];
		size_t k;
		const json_t *e;
		json_array_foreach(env, k, e)
		{
			if (kft_upsert_env_object(c->env, e) != 0)
				return KFT_ENOMEM;
		}
		if (mount && kft_upsert_by_key(c->volume_mounts, "mountPath", mount) != 0)
			return KFT_ENOMEM;
	}
	return vol ? kft_upsert_by_key(ps->volumes, "name", vol) : 0;
}

static int enforce_ml_policy(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                             const kft_trainjob *job, kft_error *err)
{
	if (!info || !job)
		return 0;
	kft_pod_set *ps = kft_runtime_info_find_ancestor(info, KFT_ANCESTOR_TRAINER);
	if (!ps)
		return 0;
	kft_status_endpoint ep = {0};
	if (endpoint_of(ctx, job, &ep) != 0)
		return kft_error_set(err, KFT_EINVAL, "cannot find the TrainJob status server");
	bool volume = !ep.files_provided;
	json_t *env = env_vars(job, &ep);
	json_t *mount = volume ? volume_mount() : NULL, *vol = volume ? token_volume(job) : NULL;
	int rc = (env && (!volume || (mount && vol))) ? inject(ps, env, mount, vol) : KFT_ENOMEM;
	if (rc == 0)
		rc = kft_torchtune_instrument(ps, job);
	json_decref(env);
	json_decref(mount);
	json_decref(vol);
	return rc == 0 ? 0 : kft_error_set(err, rc, "out of memory");
}

/* ---- the CA certificate ConfigMap ----------------------------------------------- */

/* The PEM in the webhook Secret's ca.crt, as a new JSON string. */
static int ca_cert_of(const json_t *secret, json_t **pem, kft_error *err)
{
	const char *b64 =
	        json_string_value(json_object_get(json_object_get(secret, "data"), CA_CERT_KEY));
	size_t len = 0;
	if (!b64 || !*b64)
		return kft_error_set(err, KFT_ENOTFOUND,
		                     "failed to find status server ca.crt in tls secret");
	if (strlen(b64) > MAX_CA_CERT_BYTES / 3 * 4 + 4)
		return kft_error_set(err, KFT_ELIMIT,
		                     "failed to look up status server tls secret: ca.crt is larger "
		                     "than %u bytes",
		                     MAX_CA_CERT_BYTES);
	char *raw = kft_base64_decode(b64, &len);
	if (!raw)
		return kft_error_set(err, KFT_EPARSE,
		                     "failed to look up status server tls secret: ca.crt is not "
		                     "base64");
	if (len == 0) {
		free(raw);
		return kft_error_set(err, KFT_ENOTFOUND,
		                     "failed to find status server ca.crt in tls secret");
	}
	*pem = json_stringn(raw, len);
	free(raw);
	if (!*pem)
		return kft_error_set(err, KFT_EINVAL,
		                     "status server ca.crt in tls secret is not UTF-8 text");
	return 0;
}

/* The ConfigMap; pem is consumed. */
static json_t *tls_config_map(const kft_plugin_ctx *ctx, const kft_trainjob *job, json_t *pem)
{
	char *name = NULL;
	json_t *owner = kft_owner_reference(ctx, job);
	json_t *cm = NULL;
	if (owner && asprintf(&name, "%s" TLS_CONFIG_SUFFIX, job->name) >= 0) {
		cm = json_pack("{s:s, s:s, s:{s:s, s:s, s:[o]}, s:{s:o}}", "apiVersion", "v1",
		               "kind", "ConfigMap", "metadata", "name", name, "namespace", job->ns,
		               "ownerReferences", owner, "data", CA_CERT_KEY, pem);
		owner = pem = NULL;
	}
	json_decref(owner);
	json_decref(pem);
	free(name);
	return cm;
}

static int component_builder(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                             const kft_trainjob *job, json_t *objects, kft_error *err)
{
	json_t *pem = NULL;
	kft_status_endpoint ep = {0};
	if (!info || !job)
		return 0;
	if (kft_torchtune_is_entrypoint(job->command)) {
		json_t *cm = kft_torchtune_status_config_map(ctx, job);
		if (!cm || json_array_append_new(objects, cm) != 0)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	if (endpoint_of(ctx, job, &ep) == 0 && ep.files_provided)
		return 0; /* no projected volume reads a ConfigMap */
	json_t *secret = ctx->backend->get_object(ctx->backend->self, "v1", "Secret",
	                                          DEFAULT_NAMESPACE, DEFAULT_WEBHOOK_SECRET);
	if (!secret)
		return kft_error_set(err, KFT_ENOTFOUND,
		                     "failed to look up status server tls secret: secrets \"%s\" "
		                     "not found",
		                     DEFAULT_WEBHOOK_SECRET);
	int rc = ca_cert_of(secret, &pem, err);
	json_decref(secret);
	if (rc != 0)
		return rc;
	json_t *cm = tls_config_map(ctx, job, pem);
	if (!cm || json_array_append_new(objects, cm) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

const kft_plugin kft_plugin_trainjobstatus = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "TrainJobStatus",
        .enforce_ml_policy = enforce_ml_policy,
        .component_builder = component_builder,
};
