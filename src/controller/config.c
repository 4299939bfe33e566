/*
 * config.c - the controller manager's Configuration file, as upstream v2.3.0
 * reads it (pkg/config, pkg/apis/config/v1alpha1).
 *
 * Decoding is strict: the document is walked against a table of the fields
 * each section may hold, and anything else is an error naming its path, the
 * way the strict universal decoder refuses unknown fields. Defaults are the
 * ones upstream's SetDefaults_Configuration fills, and validation repeats
 * upstream's validate() checks with field.Error wording. webhook and
 * certManagement drive the admission webhooks (webhook.c, certs.c),
 * statusServer the status server (statusserver.c); what of tls the servers
 * do not apply is parsed and checked, and a warning records that it has no
 * effect here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/httpd.h"
#include "controller/controller.h"
#include "kftrainer/decode.h"
#include "kftrainer/framework.h"
#include "util/duration.h"

#define TRAINJOB_GK        "TrainJob.trainer.kubeflow.org"
#define RUNTIME_GK         "TrainingRuntime.trainer.kubeflow.org"
#define CLUSTER_RUNTIME_GK "ClusterTrainingRuntime.trainer.kubeflow.org"

static int set_str(char **dst, const char *v)
{
	char *c = v ? strdup(v) : NULL;
	if (v && !c)
		return KFT_ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

int kft_cm_config_defaults(kft_cm_config *cfg, kft_error *err)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->metrics_secure_serving = 1;
	cfg->webhook_port = 9443;
	cfg->le_lease_ms = 15000;
	cfg->le_renew_ms = 10000;
	cfg->le_retry_ms = 2000;
	cfg->trainjob_workers = cfg->runtime_workers = cfg->cluster_runtime_workers = 1;
	cfg->cert_management_enable = 1;
	cfg->qps = 50;
	cfg->burst = 100;
	cfg->status_port = 10443;
	cfg->status_qps = 5;
	cfg->status_burst = 10;
	cfg->warnings = json_array();
	if (!cfg->warnings || set_str(&cfg->metrics_bind_address, ":8443") ||
	    set_str(&cfg->health_bind_address, ":8081") ||
	    set_str(&cfg->readiness_endpoint, "readyz") ||
	    set_str(&cfg->liveness_endpoint, "healthz") ||
	    set_str(&cfg->le_resource_lock, "leases") ||
	    set_str(&cfg->le_resource_name, "trainer.kubeflow.org") ||
	    set_str(&cfg->cert_webhook_service, "kubeflow-trainer-controller-manager") ||
	    set_str(&cfg->cert_webhook_secret, "kubeflow-trainer-webhook-cert"))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

void kft_cm_config_free(kft_cm_config *cfg)
{
	if (!cfg)
		return;
	char **strs[] = {
	        &cfg->metrics_bind_address, &cfg->health_bind_address,   &cfg->readiness_endpoint,
	        &cfg->liveness_endpoint,    &cfg->webhook_host,          &cfg->le_resource_lock,
	        &cfg->le_resource_name,     &cfg->le_resource_namespace, &cfg->cert_webhook_service,
	        &cfg->cert_webhook_secret,  &cfg->tls_min_version};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		free(*strs[i]);
		*strs[i] = NULL;
	}
	json_decref(cfg->warnings);
	cfg->warnings = NULL;
	json_decref(cfg->tls_cipher_suites);
	cfg->tls_cipher_suites = NULL;
	json_decref(cfg->plugins);
	cfg->plugins = NULL;
}

/* ---- strict decoding ------------------------------------------------------ */

static int decode_error(kft_error *err, const char *path, const char *what)
{
	return kft_error_set(err, KFT_EINVAL,
	                     "failed to decode config file: strict decoding error: %s \"%s\"", what,
	                     path);
}

static int type_error(kft_error *err, const char *path, const char *want, const json_t *v)
{
	static const char *const names[] = {"object", "array", "string", "number",
	                                    "number", "bool",  "bool",   "null"};
	return kft_error_set(err, KFT_EINVAL,
	                     "failed to decode config file: json: cannot unmarshal %s into Go "
	                     "struct field %s of type %s",
	                     names[json_typeof(v)], path, want);
}

/* Refuses members of `obj` not in the NULL-terminated list `known`. */
static int check_known(const json_t *obj, const char *path, const char *const *known,
                       kft_error *err)
{
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)obj, k, v)
	{
		size_t i = 0;
		while (known[i] && strcmp(known[i], k) != 0)
			i++;
		if (!known[i]) {
			char full[512];
			snprintf(full, sizeof(full), "%s%s%s", path, *path ? "." : "", k);
			return decode_error(err, full, "unknown field");
		}
	}
	return 0;
}

static int get_object(const json_t *parent, const char *key, const char *path, const json_t **out,
                      kft_error *err)
{
	const json_t *v = json_object_get(parent, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return type_error(err, path, "object", v);
	*out = v;
	return 0;
}

static int get_string(const json_t *obj, const char *key, const char *path, char **dst,
                      kft_error *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return type_error(err, path, "string", v);
	if (strlen(json_string_value(v)) > 4096)
		return kft_error_set(err, KFT_ELIMIT, "%s: longer than 4096 bytes", path);
	return set_str(dst, json_string_value(v)) ? kft_error_set(err, KFT_ENOMEM, "out of memory")
	                                          : 0;
}

static int get_bool(const json_t *obj, const char *key, const char *path, int *dst, kft_error *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return type_error(err, path, "bool", v);
	*dst = json_is_true(v);
	return 0;
}

/* An int32 field; a real with a fraction or out of range is a type error. */
static int get_int(const json_t *obj, const char *key, const char *path, int *dst, kft_error *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	double d;
	if (json_is_integer(v))
		d = (double)json_integer_value(v);
	else if (json_is_real(v))
		d = json_real_value(v);
	else
		return type_error(err, path, "int32", v);
	/* Range before any integer cast: casting 1e300 or NaN is undefined. */
	if (!(d >= -2147483648.0 && d <= 2147483647.0) || (double)(int)d != d)
		return type_error(err, path, "int32", v);
	*dst = (int)d;
	return 0;
}

static int get_float(const json_t *obj, const char *key, const char *path, double *dst,
                     kft_error *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return type_error(err, path, "float32", v);
	*dst = json_number_value(v);
	return 0;
}

static int get_duration(const json_t *obj, const char *key, const char *path, int64_t *dst,
                        kft_error *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return type_error(err, path, "v1.Duration", v);
	if (kft_duration_parse_ms(json_string_value(v), dst) != 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "failed to decode config file: time: invalid duration \"%s\" "
		                     "(field %s)",
		                     json_string_value(v), path);
	return 0;
}

static int warn(kft_cm_config *cfg, const char *text)
{
	return json_array_append_new(cfg->warnings, json_string(text)) ? KFT_ENOMEM : 0;
}

/* ---- sections ------------------------------------------------------------- */

static int read_webhook(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	static const char *const known[] = {"port", "host", NULL};
	const json_t *w;
	int rc = get_object(doc, "webhook", "webhook", &w, err);
	if (rc || !w)
		return rc;
	if ((rc = check_known(w, "webhook", known, err)) ||
	    (rc = get_int(w, "port", "webhook.port", &cfg->webhook_port, err)) ||
	    (rc = get_string(w, "host", "webhook.host", &cfg->webhook_host, err)))
		return rc;
	return 0;
}

static int read_metrics(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	static const char *const known[] = {"bindAddress", "secureServing", NULL};
	const json_t *m;
	int rc = get_object(doc, "metrics", "metrics", &m, err);
	if (rc || !m)
		return rc;
	if ((rc = check_known(m, "metrics", known, err)) ||
	    (rc = get_string(m, "bindAddress", "metrics.bindAddress", &cfg->metrics_bind_address,
	                     err)) ||
	    (rc = get_bool(m, "secureServing", "metrics.secureServing",
	                   &cfg->metrics_secure_serving, err)))
		return rc;
	/* An empty string means "unset" for upstream's defaulting too. */
	if (!cfg->metrics_bind_address || !*cfg->metrics_bind_address)
		return set_str(&cfg->metrics_bind_address, ":8443") ? KFT_ENOMEM : 0;
	return 0;
}

static int read_health(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	static const char *const known[] = {"healthProbeBindAddress", "readinessEndpointName",
	                                    "livenessEndpointName", NULL};
	const json_t *h;
	int rc = get_object(doc, "health", "health", &h, err);
	if (rc || !h)
		return rc;
	if ((rc = check_known(h, "health", known, err)) ||
	    (rc = get_string(h, "healthProbeBindAddress", "health.healthProbeBindAddress",
	                     &cfg->health_bind_address, err)) ||
	    (rc = get_string(h, "readinessEndpointName", "health.readinessEndpointName",
	                     &cfg->readiness_endpoint, err)) ||
	    (rc = get_string(h, "livenessEndpointName", "health.livenessEndpointName",
	                     &cfg->liveness_endpoint, err)))
		return rc;
	if ((!*cfg->health_bind_address && set_str(&cfg->health_bind_address, ":8081")) ||
	    (!*cfg->readiness_endpoint && set_str(&cfg->readiness_endpoint, "readyz")) ||
	    (!*cfg->liveness_endpoint && set_str(&cfg->liveness_endpoint, "healthz")))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

static int read_leader(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	static const char *const known[] = {
	        "leaderElect",  "leaseDuration", "renewDeadline",     "retryPeriod",
	        "resourceLock", "resourceName",  "resourceNamespace", NULL};
	const json_t *l;
	int rc = get_object(doc, "leaderElection", "leaderElection", &l, err);
	if (rc || !l)
		return rc;
	if ((rc = check_known(l, "leaderElection", known, err)) ||
	    (rc = get_bool(l, "leaderElect", "leaderElection.leaderElect", &cfg->leader_elect,
	                   err)) ||
	    (rc = get_duration(l, "leaseDuration", "leaderElection.leaseDuration",
	                       &cfg->le_lease_ms, err)) ||
	    (rc = get_duration(l, "renewDeadline", "leaderElection.renewDeadline",
	                       &cfg->le_renew_ms, err)) ||
	    (rc = get_duration(l, "retryPeriod", "leaderElection.retryPeriod", &cfg->le_retry_ms,
	                       err)) ||
	    (rc = get_string(l, "resourceLock", "leaderElection.resourceLock",
	                     &cfg->le_resource_lock, err)) ||
	    (rc = get_string(l, "resourceName", "leaderElection.resourceName",
	                     &cfg->le_resource_name, err)) ||
	    (rc = get_string(l, "resourceNamespace", "leaderElection.resourceNamespace",
	                     &cfg->le_resource_namespace, err)))
		return rc;
	if (cfg->le_resource_namespace && !*cfg->le_resource_namespace) {
		free(cfg->le_resource_namespace);
		cfg->le_resource_namespace = NULL;
	}
	if ((!*cfg->le_resource_lock && set_str(&cfg->le_resource_lock, "leases")) ||
	    (!*cfg->le_resource_name && set_str(&cfg->le_resource_name, "trainer.kubeflow.org")))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

static int read_controller(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	static const char *const known[] = {"groupKindConcurrency", NULL};
	const json_t *c, *g;
	int rc = get_object(doc, "controller", "controller", &c, err);
	if (rc || !c)
		return rc;
	if ((rc = check_known(c, "controller", known, err)) ||
	    (rc = get_object(c, "groupKindConcurrency", "controller.groupKindConcurrency", &g,
	                     err)) ||
	    !g)
		return rc;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)g, k, v)
	{
		char path[300];
		int n = 0;
		snprintf(path, sizeof(path), "controller.groupKindConcurrency[%s]", k);
		if ((rc = get_int(g, k, path, &n, err)))
			return rc;
		if (n < 1)
			return kft_error_set(
			        err, KFT_EINVAL,
			        "invalid configuration: %s: Invalid value: %d: must be "
			        "greater than 0",
			        path, n);
		if (strcmp(k, TRAINJOB_GK) == 0)
			cfg->trainjob_workers = n;
		else if (strcmp(k, RUNTIME_GK) == 0)
			cfg->runtime_workers = n;
		else if (strcmp(k, CLUSTER_RUNTIME_GK) == 0)
			cfg->cluster_runtime_workers = n;
	}
	return 0;
}

static int read_cert(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	static const char *const known[] = {"enable", "webhookServiceName", "webhookSecretName",
	                                    NULL};
	const json_t *c;
	int rc = get_object(doc, "certManagement", "certManagement", &c, err);
	if (rc || !c)
		return rc;
	if ((rc = check_known(c, "certManagement", known, err)) ||
	    (rc = get_bool(c, "enable", "certManagement.enable", &cfg->cert_management_enable,
	                   err)) ||
	    (rc = get_string(c, "webhookServiceName", "certManagement.webhookServiceName",
	                     &cfg->cert_webhook_service, err)) ||
	    (rc = get_string(c, "webhookSecretName", "certManagement.webhookSecretName",
	                     &cfg->cert_webhook_secret, err)))
		return rc;
	return 0;
}

static int read_client(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	static const char *const known[] = {"qps", "burst", NULL};
	const json_t *c;
	int rc = get_object(doc, "clientConnection", "clientConnection", &c, err);
	if (rc || !c)
		return rc;
	if ((rc = check_known(c, "clientConnection", known, err)) ||
	    (rc = get_float(c, "qps", "clientConnection.qps", &cfg->qps, err)) ||
	    (rc = get_int(c, "burst", "clientConnection.burst", &cfg->burst, err)))
		return rc;
	return 0;
}

static int read_status_server(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	static const char *const known[] = {"port", "qps", "burst", NULL};
	const json_t *s;
	int rc = get_object(doc, "statusServer", "statusServer", &s, err);
	if (rc || !s)
		return rc;
	if ((rc = check_known(s, "statusServer", known, err)) ||
	    (rc = get_int(s, "port", "statusServer.port", &cfg->status_port, err)) ||
	    (rc = get_float(s, "qps", "statusServer.qps", &cfg->status_qps, err)) ||
	    (rc = get_int(s, "burst", "statusServer.burst", &cfg->status_burst, err)))
		return rc;
	return 0;
}

static int read_string_list(const json_t *obj, const char *key, const char *path, size_t max,
                            size_t max_len, kft_error *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return type_error(err, path, "[]string", v);
	if (json_array_size(v) > max)
		return kft_error_set(err, KFT_EINVAL,
		                     "invalid configuration: %s: Too many: %zu: must have at most "
		                     "%zu items",
		                     path, json_array_size(v), max);
	size_t i;
	const json_t *item;
	json_array_foreach(v, i, item)
	{
		if (!json_is_string(item))
			return type_error(err, path, "string", item);
		if (strlen(json_string_value(item)) > max_len)
			return kft_error_set(err, KFT_EINVAL,
			                     "invalid configuration: %s[%zu]: Too long: may not be "
			                     "more than %zu bytes",
			                     path, i, max_len);
	}
	return 0;
}

static int read_tls(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	static const char *const known[] = {"minVersion", "cipherSuites", "nextProtos", NULL};
	static const char *const versions[] = {"1.0", "1.1", "1.2", "1.3"};
	const json_t *t;
	int rc = get_object(doc, "tls", "tls", &t, err);
	if (rc || !t)
		return rc;
	if ((rc = check_known(t, "tls", known, err)) ||
	    (rc = get_string(t, "minVersion", "tls.minVersion", &cfg->tls_min_version, err)) ||
	    (rc = read_string_list(t, "cipherSuites", "tls.cipherSuites", 100, 100, err)) ||
	    (rc = read_string_list(t, "nextProtos", "tls.nextProtos", 10, 32, err)))
		return rc;
	const json_t *cs = json_object_get(t, "cipherSuites");
	if (json_array_size(cs) > 0) {
		int ids[KFT_HTTP_SUITES_MAX];
		if ((rc = kft_cm_tls_cipher_suites(cs, ids, KFT_HTTP_SUITES_MAX, err)) != 0) {
			char msg[KFT_ERROR_MESSAGE_MAX];
			snprintf(msg, sizeof(msg), "%s", err ? err->message : "");
			return kft_error_set(err, rc, "invalid configuration: %s", msg);
		}
		json_decref(cfg->tls_cipher_suites);
		if (!(cfg->tls_cipher_suites = json_deep_copy(cs)))
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	if (cfg->tls_min_version && *cfg->tls_min_version) {
		size_t i = 0;
		while (i < 4 && strcmp(versions[i], cfg->tls_min_version) != 0)
			i++;
		if (i == 4)
			return kft_error_set(err, KFT_EINVAL,
			                     "invalid configuration: tls.minVersion: Unsupported "
			                     "value: \"%s\": supported values: \"1.0\", \"1.1\", "
			                     "\"1.2\", \"1.3\"",
			                     cfg->tls_min_version);
	}
	return 0;
}

/* kftrainer's extension: `plugins: [path, ...]`, the shared objects the
 * manager loads into its framework (docs/plugins.md). Paths should be
 * absolute: the manager's working directory is whatever its pod gives. */
static int read_plugins(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	const json_t *v = json_object_get(doc, "plugins");
	int rc = read_string_list(doc, "plugins", "plugins", KFT_CM_MAX_PLUGINS, 4096, err);
	if (rc || !v || json_is_null(v))
		return rc;
	size_t i;
	const json_t *item;
	json_array_foreach(v, i, item)
	{
		if (!*json_string_value(item))
			return kft_error_set(
			        err, KFT_EINVAL,
			        "invalid configuration: plugins[%zu]: Required value: a "
			        "plugin file path",
			        i);
	}
	json_decref(cfg->plugins);
	cfg->plugins = json_deep_copy(v);
	return cfg->plugins ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

static int set_gate(unsigned *features, const char *name, const char *value, kft_error *err);

static int read_features(kft_cm_config *cfg, const json_t *doc, kft_error *err)
{
	const json_t *f;
	int rc = get_object(doc, "featureGates", "featureGates", &f, err);
	if (rc || !f)
		return rc;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)f, k, v)
	{
		if (!json_is_boolean(v))
			return type_error(err, "featureGates", "bool", v);
		/* One gate per key, as upstream's SetFromMap: a key is never split
		 * on ',' or trimmed the way the --feature-gates flag is. */
		if ((rc = set_gate(&cfg->features, k, json_is_true(v) ? "true" : "false", err)))
			return rc;
	}
	return 0;
}

/* ---- validation (upstream's validate()) ------------------------------------- */

static int invalid_int(kft_error *err, const char *path, long v, const char *why)
{
	return kft_error_set(err, KFT_EINVAL, "invalid configuration: %s: Invalid value: %ld: %s",
	                     path, v, why);
}

static int invalid_float(kft_error *err, const char *path, double v, const char *why)
{
	return kft_error_set(err, KFT_EINVAL, "invalid configuration: %s: Invalid value: %g: %s",
	                     path, v, why);
}

static int validate(const kft_cm_config *cfg, kft_error *err)
{
	const char *port = "must be between 1 and 65535";
	const char *nonneg = "must be greater than or equal to 0";
	if (cfg->webhook_port < 1 || cfg->webhook_port > 65535)
		return invalid_int(err, "webhook.port", cfg->webhook_port, port);
	if (cfg->qps < 0)
		return invalid_float(err, "clientConnection.qps", cfg->qps, nonneg);
	if (cfg->burst < 0)
		return invalid_int(err, "clientConnection.burst", cfg->burst, nonneg);
	if (cfg->status_port < 1 || cfg->status_port > 65535)
		return invalid_int(err, "statusServer.port", cfg->status_port, port);
	if (cfg->status_qps < 0)
		return invalid_float(err, "statusServer.qps", cfg->status_qps, nonneg);
	if (cfg->status_burst < 0)
		return invalid_int(err, "statusServer.burst", cfg->status_burst, nonneg);
	/* Ours: controller-runtime would fail later on these, less clearly. */
	if (cfg->le_lease_ms <= 0 || cfg->le_renew_ms <= 0 || cfg->le_retry_ms <= 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "invalid configuration: leaderElection: leaseDuration, "
		                     "renewDeadline and retryPeriod must be greater than 0");
	if (cfg->le_lease_ms <= cfg->le_renew_ms)
		return kft_error_set(err, KFT_EINVAL,
		                     "invalid configuration: leaderElection.leaseDuration: must be "
		                     "greater than renewDeadline");
	if (strcmp(cfg->le_resource_lock, "leases") != 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "invalid configuration: leaderElection.resourceLock: "
		                     "Unsupported value: \"%s\": supported values: \"leases\"",
		                     cfg->le_resource_lock);
	return 0;
}

static int note_ignored(kft_cm_config *cfg, const json_t *doc)
{
	int rc = 0;
	const json_t *tls = json_object_get(doc, "tls");
	if (json_object_get(tls, "nextProtos"))
		rc |= warn(cfg, "tls.nextProtos is ignored (the metrics server speaks HTTP/1.1); "
		                "minVersion and cipherSuites are used");
	return rc ? KFT_ENOMEM : 0;
}

static int check_type(const json_t *doc, const char *source, kft_error *err)
{
	const json_t *av = json_object_get(doc, "apiVersion");
	const json_t *kind = json_object_get(doc, "kind");
	if (!json_is_string(kind) || !*json_string_value(kind))
		return kft_error_set(err, KFT_EINVAL,
		                     "failed to decode config file: Object 'Kind' is missing in "
		                     "'%s'",
		                     source);
	if (!json_is_string(av) || strcmp(json_string_value(av), KFT_CM_CONFIG_API_VERSION) != 0 ||
	    strcmp(json_string_value(kind), KFT_CM_CONFIG_KIND) != 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "failed to decode config file: no kind \"%s\" is registered "
		                     "for version \"%s\" in scheme (want apiVersion %s, kind %s)",
		                     json_string_value(kind),
		                     json_is_string(av) ? json_string_value(av) : "",
		                     KFT_CM_CONFIG_API_VERSION, KFT_CM_CONFIG_KIND);
	return 0;
}

int kft_cm_config_from_json(kft_cm_config *cfg, const json_t *doc, const char *source,
                            kft_error *err)
{
	static const char *const known[] = {"apiVersion",
	                                    "kind",
	                                    "webhook",
	                                    "leaderElection",
	                                    "metrics",
	                                    "health",
	                                    "controller",
	                                    "certManagement",
	                                    "clientConnection",
	                                    "statusServer",
	                                    "featureGates",
	                                    "tls",
	                                    "plugins", /* kftrainer's extension */
	                                    NULL};
	int rc;
	if (!json_is_object(doc))
		return kft_error_set(err, KFT_EINVAL,
		                     "failed to decode config file: %s: not a "
		                     "mapping",
		                     source ? source : "-");
	if ((rc = check_type(doc, source ? source : "-", err)) ||
	    (rc = check_known(doc, "", known, err)) || (rc = read_webhook(cfg, doc, err)) ||
	    (rc = read_leader(cfg, doc, err)) || (rc = read_metrics(cfg, doc, err)) ||
	    (rc = read_health(cfg, doc, err)) || (rc = read_controller(cfg, doc, err)) ||
	    (rc = read_cert(cfg, doc, err)) || (rc = read_client(cfg, doc, err)) ||
	    (rc = read_status_server(cfg, doc, err)) || (rc = read_features(cfg, doc, err)) ||
	    (rc = read_tls(cfg, doc, err)) || (rc = read_plugins(cfg, doc, err)))
		return rc;
	if (!cfg->metrics_bind_address || !cfg->health_bind_address)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if ((rc = validate(cfg, err)))
		return rc;
	if (note_ignored(cfg, doc))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

int kft_cm_config_load(kft_cm_config *cfg, const char *path, kft_error *err)
{
	kft_doc_list docs = {0};
	int rc = kft_decode_file(path, &docs, err);
	if (rc) {
		char msg[KFT_ERROR_MESSAGE_MAX];
		snprintf(msg, sizeof(msg), "%s", err ? err->message : "");
		return kft_error_set(err, rc, "failed to read config file: %s", msg);
	}
	if (docs.count != 1)
		rc = kft_error_set(err, KFT_EINVAL,
		                   "failed to decode config file: %s: want one document, found %zu",
		                   path, docs.count);
	else
		rc = kft_cm_config_from_json(cfg, docs.items[0].root, path, err);
	kft_doc_list_free(&docs);
	return rc;
}

/* ---- feature gates ---------------------------------------------------------- */

static int set_gate(unsigned *features, const char *name, const char *value, kft_error *err)
{
	int on;
	if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0 || strcmp(value, "t") == 0 ||
	    strcmp(value, "T") == 0 || strcmp(value, "TRUE") == 0 || strcmp(value, "True") == 0)
		on = 1;
	else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0 ||
	         strcmp(value, "f") == 0 || strcmp(value, "F") == 0 ||
	         strcmp(value, "FALSE") == 0 || strcmp(value, "False") == 0)
		on = 0;
	else
		return kft_error_set(err, KFT_EINVAL,
		                     "invalid value of %s=%s, err: strconv.ParseBool: parsing "
		                     "\"%s\": invalid syntax",
		                     name, value, value);
	static const struct {
		const char *name, *stage;
		unsigned bit;
	} gates[] = {
#define GATE_ROW(name, bit, stage, def, what) {name, stage, bit},
	        KFT_CM_FEATURE_GATES(GATE_ROW)
#undef GATE_ROW
	};
	int all_alpha = strcmp(name, "AllAlpha") == 0, known = all_alpha;
	for (size_t i = 0; i < sizeof(gates) / sizeof(gates[0]); i++) {
		if (strcmp(name, gates[i].name) != 0 &&
		    !(all_alpha && strcmp(gates[i].stage, "ALPHA") == 0))
			continue;
		known = 1;
		if (on)
			*features |= gates[i].bit;
		else
			*features &= ~gates[i].bit;
	}
	if (known)
		return 0;
	if (strcmp(name, "AllBeta") == 0)
		return 0; /* no beta gates exist */
	return kft_error_set(err, KFT_EINVAL, "unrecognized feature gate: %s", name);
}

int kft_cm_feature_gates_set(unsigned *features, const char *spec, kft_error *err)
{
	char buf[1024];
	if (strlen(spec) >= sizeof(buf))
		return kft_error_set(err, KFT_ELIMIT, "feature gates: longer than %zu bytes",
		                     sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", spec);
	char *save = NULL;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		while (*item == ' ')
			item++;
		if (!*item)
			continue;
		char *eq = strchr(item, '=');
		if (!eq)
			return kft_error_set(err, KFT_EINVAL, "missing bool value for %s", item);
		*eq = '\0';
		char *name = item, *value = eq + 1;
		size_t n = strlen(name);
		while (n && name[n - 1] == ' ')
			name[--n] = '\0';
		while (*value == ' ')
			value++;
		int rc = set_gate(features, name, value, err);
		if (rc)
			return rc;
	}
	return 0;
}
