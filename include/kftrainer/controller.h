/*
 * controller.h - the pieces of kftrainer-controller-manager that do not need
 * a cluster: its configuration file and flags, a zap-style JSON logger, a
 * Prometheus metrics registry, the health/metrics HTTP server, and the
 * TrainJob / runtime reconcile decisions as functions over JSON objects.
 *
 * The manager (kft_cm_run) ties them to the Kubernetes client and informers.
 *
 * Upstream v2.3.0 (cmd/trainer-controller-manager, pkg/config,
 * pkg/controller) is the reference for names, defaults and wording; the
 * comments below say where we differ on purpose.
 */
#ifndef KFTRAINER_CONTROLLER_H
#define KFTRAINER_CONTROLLER_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "kftrainer/backend.h"
#include "kftrainer/error.h"
#include "kftrainer/export.h"
#include "kftrainer/framework.h"
#include "kftrainer/schema.h"
#include "kftrainer/validation.h"

#ifdef __cplusplus
extern "C" {
#endif

KFT_EXPORT_BEGIN

/* ---- configuration (config.trainer.kubeflow.org/v1alpha1 Configuration) ---- */

#define KFT_CM_CONFIG_API_VERSION "config.trainer.kubeflow.org/v1alpha1"
#define KFT_CM_CONFIG_KIND        "Configuration"

/* The controllers' names as upstream registers them (metrics labels, logs). */
#define KFT_CM_TRAINJOB_CONTROLLER        "trainjob_controller"
#define KFT_CM_RUNTIME_CONTROLLER         "trainingruntime_controller"
#define KFT_CM_CLUSTER_RUNTIME_CONTROLLER "clustertrainingruntime_controller"

/* Field manager of every server-side apply (upstream: client.FieldOwner). */
#define KFT_CM_FIELD_MANAGER "trainer"
/* The finalizer v2.0-v2.2 put on runtimes; v2.3.0 only removes it. */
#define KFT_CM_RESOURCE_IN_USE_FINALIZER "trainer.kubeflow.org/resource-in-use"
/* The runtime snapshot ConfigMap: "<trainjob>-runtime-snapshot", key "runtime". */
#define KFT_CM_SNAPSHOT_SUFFIX   "-runtime-snapshot"
#define KFT_CM_SNAPSHOT_DATA_KEY "runtime"

/*
 * kftrainer's own feature gate (no upstream gate has this name):
 * RuntimeInUseFinalizer brings back Trainer v2.2's resource-in-use
 * finalizer on runtimes while TrainJobs use them. Off by default, and left
 * alone by AllAlpha/AllBeta so that turning on upstream's gates never turns
 * on an extension. The bit is well above the framework's KFT_FEATURE_*.
 */
#define KFT_FEATURE_RUNTIME_IN_USE_FINALIZER 0x100u

/*
 * Every feature gate the controller knows, one X(NAME, BIT, STAGE, DEFAULT,
 * WHAT) per gate: the one list that --feature-gates and featureGates parsing
 * and --help are made from, so a new gate cannot be accepted yet unlisted.
 * STAGE "ALPHA" gates are upstream's and follow AllAlpha; "kftrainer" gates
 * are ours and follow neither AllAlpha nor AllBeta.
 */
#define KFT_CM_FEATURE_GATES(X)                                                                    \
	X("TrainJobStatus", KFT_FEATURE_TRAINJOB_STATUS, "ALPHA", "false",                         \
	  "upstream's: trainer pods get the progress endpoint (KUBEFLOW_TRAINER_SERVER_URL ...)")  \
	X("RuntimeInUseFinalizer", KFT_FEATURE_RUNTIME_IN_USE_FINALIZER, "kftrainer", "false",     \
	  "hold a runtime's deletion while TrainJobs use it (Trainer v2.2)")
/* The reporting controller of the TrainJob controller's events and the
 * action they carry (upstream: GetEventRecorder("trainer-trainjob-controller"),
 * Eventf(..., "Reconciling", ...)). */
#define KFT_CM_TRAINJOB_RECORDER "trainer-trainjob-controller"
#define KFT_CM_EVENT_ACTION      "Reconciling"

/*
 * The whole configuration, defaulted. Every string is owned (free with
 * kft_cm_config_free). Durations are milliseconds.
 */
typedef struct kft_cm_config {
	char *metrics_bind_address;  /* ":8443"; "0" disables */
	int metrics_secure_serving;  /* default 1; we serve plain HTTP (warned) */
	char *health_bind_address;   /* ":8081"; "0" or "" disables */
	char *readiness_endpoint;    /* "readyz" */
	char *liveness_endpoint;     /* "healthz" */
	int webhook_port;            /* 9443: the admission webhooks (webhook.c) */
	char *webhook_host;          /* NULL when unset */
	int leader_elect;            /* 0 unless leaderElection.leaderElect */
	char *le_resource_lock;      /* "leases" */
	char *le_resource_name;      /* "trainer.kubeflow.org" when unset */
	char *le_resource_namespace; /* NULL: the pod's namespace, else "default" */
	int64_t le_lease_ms, le_renew_ms, le_retry_ms; /* 15000, 10000, 2000 */
	int trainjob_workers;        /* groupKindConcurrency TrainJob.trainer.kubeflow.org, 1 */
	int runtime_workers;         /* ... TrainingRuntime.trainer.kubeflow.org, 1 */
	int cluster_runtime_workers; /* ... ClusterTrainingRuntime.trainer.kubeflow.org, 1 */
	int cert_management_enable;  /* default 1: certs.c manages the webhooks' certs */
	char *cert_webhook_service;  /* "kubeflow-trainer-controller-manager" */
	char *cert_webhook_secret;   /* "kubeflow-trainer-webhook-cert" */
	double qps;                  /* clientConnection.qps, 50 */
	int burst;                   /* clientConnection.burst, 100 */
	int status_port;             /* statusServer.port, 10443 */
	double status_qps;           /* 5 */
	int status_burst;            /* 10 */
	char *tls_min_version;       /* NULL or "1.0".."1.3" */
	json_t *tls_cipher_suites;   /* tls.cipherSuites (Go names), NULL when unset */
	unsigned features;           /* KFT_FEATURE_* bits from featureGates */
	json_t *warnings;            /* array of strings: what is accepted but ignored */
	json_t *plugins;             /* kftrainer's extension, top-level `plugins`: an array of
	                              * plugin file paths loaded into the framework at start-up;
	                              * NULL when unset */
} kft_cm_config;

/* Upstream's defaults, as when no --config is given. Returns 0 or
 * KFT_ENOMEM. Free with kft_cm_config_free even on failure. */
int kft_cm_config_defaults(kft_cm_config *cfg, kft_error *err);

/*
 * Reads a Configuration from a parsed document (borrowed) named `source` in
 * messages: strict (an unknown field is an error, as upstream's strict
 * decoder), apiVersion and kind checked, defaults applied, then upstream's
 * validation. cfg must come from kft_cm_config_defaults. Errors name the
 * field: KFT_EINVAL ("invalid configuration: webhook.port: Invalid value:
 * 0: must be between 1 and 65535"), KFT_ENOMEM.
 */
int kft_cm_config_from_json(kft_cm_config *cfg, const json_t *doc, const char *source,
                            kft_error *err);

/* kft_cm_config_from_json on the single YAML/JSON document in `path`.
 * Adds KFT_EIO/KFT_EPARSE/KFT_ELIMIT from reading and decoding. */
int kft_cm_config_load(kft_cm_config *cfg, const char *path, kft_error *err);

/* Frees every owned member; the struct can then be defaulted again. */
void kft_cm_config_free(kft_cm_config *cfg);

/*
 * Applies a feature-gate list "Name=true,Other=false" (the --feature-gates
 * flag) to *features. Known gates: those of KFT_CM_FEATURE_GATES, plus
 * AllAlpha and AllBeta (which only reach upstream's gates). Errors as k8s.io/component-base words
 * them: "unrecognized feature gate: X", "missing bool value for X", "invalid value of X=Y".
 */
int kft_cm_feature_gates_set(unsigned *features, const char *spec, kft_error *err);

/* ---- logging (controller-runtime's zap options) ---------------------------- */

enum {
	KFT_LOG_TIME_EPOCH,
	KFT_LOG_TIME_MILLIS,
	KFT_LOG_TIME_NANOS,
	KFT_LOG_TIME_ISO8601,
	KFT_LOG_TIME_RFC3339,
	KFT_LOG_TIME_RFC3339NANO
};

/* Levels are zap's: -N is logr's V(N) (debug is -1), info 0, warn 1, error 2,
 * panic 4. An entry is written when its level >= level. */
#define KFT_LOG_DEBUG (-1)
#define KFT_LOG_INFO  0
#define KFT_LOG_WARN  1
#define KFT_LOG_ERROR 2
#define KFT_LOG_PANIC 4

typedef struct kft_log_options {
	int devel; /* --zap-devel: console, debug, stacktraces from warn */
	int level_set, level;
	int console_set, console; /* --zap-encoder console (1) or json (0) */
	int stack_set, stack_level;
	int time_encoding; /* KFT_LOG_TIME_*; upstream's default is rfc3339nano */
} kft_log_options;

typedef struct kft_logger kft_logger;

/* A logger writing lines to `out` (borrowed; stderr in the binary). Thread
 * safe: one line is one write under a lock. Free with kft_logger_free. NULL
 * on allocation failure. */
kft_logger *kft_logger_new(const kft_log_options *opts, FILE *out);
void kft_logger_free(kft_logger *lg);

/* Whether an entry at this level would be written. */
int kft_log_enabled(const kft_logger *lg, int level);

/*
 * Writes one entry: {"level","ts","logger","caller","msg", fields...,
 * "error"?}. name (the logger name) and err_text may be NULL; fields is a
 * JSON object whose members follow in order (the reference is stolen; NULL
 * for none). Never fails visibly: a line that cannot be built is dropped.
 */
void kft_log_write(kft_logger *lg, int level, const char *name, const char *caller, const char *msg,
                   const char *err_text, json_t *fields);

#define KFT_LOG_STR_(x) #x
#define KFT_LOG_STR(x)  KFT_LOG_STR_(x)
#define KFT_LOG(lg, level, name, msg, fields)                                                      \
	kft_log_write((lg), (level), (name), __FILE__ ":" KFT_LOG_STR(__LINE__), (msg), NULL,      \
	              (fields))
#define KFT_LOG_ERR(lg, name, msg, err_text, fields)                                               \
	kft_log_write((lg), KFT_LOG_ERROR, (name), __FILE__ ":" KFT_LOG_STR(__LINE__), (msg),      \
	              (err_text), (fields))

/* ---- flags ----------------------------------------------------------------- */

/* The command line, Go `flag` syntax (-x, --x, --x=v, --x v; booleans only
 * take =v). Strings are borrowed from argv. */
/* At most this many plugin files (the framework's own limit is higher). */
#define KFT_CM_MAX_PLUGINS 32

typedef struct kft_cm_flags {
	const char *config_file;
	const char *feature_gates;
	const char *kubeconfig;   /* NULL: $KUBECONFIG, then in-cluster, then ~/.kube/config */
	const char *metrics_addr; /* overrides metrics.bindAddress */
	const char *health_addr;  /* overrides health.healthProbeBindAddress */
	int leader_elect;         /* -1 unset, else overrides leaderElection.leaderElect */
	const char *plugins[KFT_CM_MAX_PLUGINS]; /* --plugin PATH, repeatable: when given,
	                                          * they replace the file's `plugins` */
	int nplugins;
	kft_log_options log;
	int help, version;
} kft_cm_flags;

/* Parses argv[1..]. KFT_EINVAL with Go's wording ("flag provided but not
 * defined: -x", "invalid value \"x\" for flag -zap-log-level: ..."). */
int kft_cm_flags_parse(int argc, char **argv, kft_cm_flags *out, kft_error *err);

/* The usage text (static). */
const char *kft_cm_usage(void);

/* Flags override the file: copies the set flags into cfg. */
int kft_cm_flags_apply(const kft_cm_flags *flags, kft_cm_config *cfg, kft_error *err);

/* ---- metrics ------------------------------------------------------------- */

typedef struct kft_metrics kft_metrics;

/* The registry, with controller-runtime's families. Thread safe. */
kft_metrics *kft_metrics_new(void);
void kft_metrics_free(kft_metrics *m);

/* Registers a controller: its series start at 0 (as controller-runtime's
 * initMetrics) and max_concurrent_reconciles is set. KFT_ENOMEM,
 * KFT_ELIMIT past 16 controllers. */
int kft_metrics_add_controller(kft_metrics *m, const char *controller, int workers);

typedef enum kft_reconcile_result {
	KFT_RESULT_SUCCESS,
	KFT_RESULT_ERROR,
	KFT_RESULT_REQUEUE,
	KFT_RESULT_REQUEUE_AFTER,
} kft_reconcile_result;

/* One reconcile done: counts it under its result (and errors), observes its
 * duration in the histogram. Unknown controllers are ignored. */
void kft_metrics_reconcile(kft_metrics *m, const char *controller, kft_reconcile_result result,
                           double seconds);
/* active_workers gauge +1/-1. */
void kft_metrics_active(kft_metrics *m, const char *controller, int delta);

/* A work queue's figures, sampled when /metrics is scraped. */
typedef struct kft_queue_sample {
	double depth, adds, retries, unfinished_seconds, longest_running_seconds;
	/* cumulative counts per bucket of workqueue_{queue,work}_duration_seconds
	 * (buckets 1e-8 x 10^i, i = 0..11) plus +Inf, and the sums */
	uint64_t queue_buckets[13], work_buckets[13];
	double queue_sum, work_sum;
} kft_queue_sample;
typedef int (*kft_queue_sampler)(void *ctx, const char *controller, kft_queue_sample *out);

/* Called for every registered controller on each scrape (may be NULL). */
void kft_metrics_set_queue_sampler(kft_metrics *m, kft_queue_sampler fn, void *ctx);

/* The API server's host[:port], the host label of rest_client_requests_total
 * (NULL: "none", as client-go says when it has no base URL). */
void kft_metrics_set_client_host(kft_metrics *m, const char *host);

/* Counts one exchange with the API server in rest_client_requests_total, as
 * client-go counts each attempt: code is the HTTP status, or 0 for none
 * (labelled "<error>"). A kft_kube_observer in the manager calls it. */
void kft_metrics_request(kft_metrics *m, const char *method, long code);

/* The exposition text (Prometheus text format 0.0.4) of every family,
 * followed by process_* metrics read from /proc/self. Caller frees; NULL
 * on allocation failure. */
char *kft_metrics_render(kft_metrics *m);

/* ---- health and metrics HTTP server ---------------------------------------- */

typedef struct kft_cm_http kft_cm_http;

/*
 * Starts HTTP/1.1 servers (our own, one thread each; see src/controller/
 * httpd.c) on a health address serving /<liveness> (always "ok") and
 * /<readiness> ("ok" once *ready is non-zero, else 500), and a metrics
 * address serving /metrics. GET and HEAD; other methods on those paths get
 * 405, other paths 404; each connection is closed after one answer.
 * Addresses are Go listen strings (":8081", "127.0.0.1:0", "[::1]:8080");
 * "0" or "" skips that server. A port 0 picks a free port (see
 * kft_cm_http_port). KFT_EINVAL for a malformed address, KFT_EIO when the
 * port cannot be bound. m and ready are borrowed and must outlive the server.
 * *out is set only on success; free it with kft_cm_http_stop.
 */
int kft_cm_http_start(const char *health_addr, const char *liveness, const char *readiness,
                      const char *metrics_addr, kft_metrics *m, const volatile int *ready,
                      kft_cm_http **out, kft_error *err);
/* TLS for the metrics server. The strings are borrowed and only read while
 * kft_cm_http_start_tls runs (the server keeps its own parsed copies). */
typedef struct kft_cm_http_tls {
	const char *cert_pem;    /* the server certificate (chain), PEM */
	const char *key_pem;     /* its private key, PEM (RSA or ECDSA, unencrypted) */
	const char *min_version; /* tls.minVersion, "1.0".."1.2"; NULL or "" is 1.2 */
	/* tls.cipherSuites: an array of Go cipher suite names; NULL or empty:
	 * ECDHE with AEAD only (see kft_cm_tls_cipher_suites) */
	const json_t *cipher_suites;
} kft_cm_http_tls;

/*
 * kft_cm_http_start, with /metrics served over HTTPS (mbedTLS, TLS 1.2 at
 * most) when metrics_tls is non-NULL. KFT_EINVAL when min_version is not
 * one kft_cm_tls_min_version accepts (the message names tls.minVersion);
 * KFT_EIO also when the certificate or key cannot be loaded or do not match.
 */
int kft_cm_http_start_tls(const char *health_addr, const char *liveness, const char *readiness,
                          const char *metrics_addr, const kft_cm_http_tls *metrics_tls,
                          kft_metrics *m, const volatile int *ready, kft_cm_http **out,
                          kft_error *err);

/*
 * What a failing readiness probe says after "[-]readyz failed: ": fn writes
 * at most n bytes (NUL included) into buf, e.g. which caches have not
 * synced and why. Called from the server's threads while the ready flag is
 * zero; set or clear it at any time (NULL fn: "reason withheld", as
 * controller-runtime says).
 */
typedef void (*kft_cm_http_reason_fn)(void *ctx, char *buf, size_t n);
void kft_cm_http_set_readiness_reason(kft_cm_http *h, kft_cm_http_reason_fn fn, void *ctx);

/*
 * A self-signed server certificate for localhost and 127.0.0.1 (RSA 2048,
 * SHA-256, a year), as controller-runtime's metrics server falls back to,
 * made with mbedTLS. *cert_pem and *key_pem are new strings the caller
 * frees (both NULL on error). KFT_ENOMEM, or KFT_EIO for an mbedTLS failure.
 */
int kft_cm_self_signed_cert(char **cert_pem, char **key_pem, kft_error *err);

/*
 * The metrics server's certificate: tls.crt and tls.key from dir (NULL:
 * $TMPDIR/k8s-metrics-server/serving-certs, controller-runtime's default)
 * when both exist, else a self-signed one (*generated = 1). Strings are new;
 * the caller frees them. Errors: KFT_EINVAL (files that are not a matching
 * PEM certificate and key mbedTLS can load), KFT_EIO, KFT_ELIMIT (over
 * 1 MiB), KFT_ENOMEM.
 */
int kft_cm_metrics_cert(const char *dir, char **cert_pem, char **key_pem, int *generated,
                        kft_error *err);

/*
 * tls.crt and tls.key of dir as kft_cm_metrics_cert reads them, without
 * the fallback: KFT_ENOTFOUND when they are not both there.
 */
int kft_cm_cert_pair_load(const char *dir, char **cert_pem, char **key_pem, kft_error *err);

/*
 * tls.minVersion as the minor number x of TLS 1.x the metrics server
 * accepts at least: 0, 1 or 2 (NULL or "" is 2, Go's server default).
 * "1.3" is refused with KFT_EINVAL naming tls.minVersion: the server's TLS
 * (mbedTLS 2.28) stops at TLS 1.2, so such a configuration could serve no
 * client. Any other string is KFT_EINVAL too.
 */
int kft_cm_tls_min_version(const char *min_version, kft_error *err);

/* The most cipher suites kft_cm_tls_cipher_suites writes, with the 0 that
 * ends them. */
#define KFT_CM_TLS_SUITES_MAX 40

/*
 * tls.cipherSuites as mbedTLS suite numbers: names (an array of strings,
 * Go's crypto/tls names as controller-runtime takes them; NULL or empty for
 * the default) into ids[0..cap), ended by 0. The default is forward-secret
 * AEAD suites only (ECDHE with AES-GCM or ChaCha20-Poly1305), Go's secure
 * TLS 1.2 list. TLS 1.3 names are accepted and skipped, as Go does.
 * KFT_EINVAL naming tls.cipherSuites[i] for a name Go does not know or
 * mbedTLS does not offer (RC4), or when no TLS 1.2 suite remains.
 */
int kft_cm_tls_cipher_suites(const json_t *names, int *ids, size_t cap, kft_error *err);

/* ---- a handler server over HTTPS (the admission webhooks) --------------- */

/* One request as a handler sees it. body is NUL-terminated after len bytes
 * (it may hold NULs itself). Everything is borrowed for the call. */
typedef struct kft_cm_http_request {
	const char *method;
	const char *path; /* percent-decoded, without the query */
	const char *head; /* the whole head, request line to blank line, NUL-terminated */
	size_t head_len;
	const char *body; /* "" when refused */
	size_t len;
	int refused; /* 0, or the server's own answer for a body it would not read:
	              * 411, 413 or 400 (a reply body of NULL keeps it) */
} kft_cm_http_request;

/* A handler's answer: body is malloc'd (the server frees it); NULL makes a
 * 500. content_type NULL is application/json. */
typedef struct kft_cm_http_reply {
	int code;
	const char *content_type;
	char *body;
} kft_cm_http_reply;

/* Called from the server's worker threads, several at once. */
typedef void (*kft_cm_http_handler)(void *ctx, const kft_cm_http_request *req,
                                    kft_cm_http_reply *out);

/*
 * Starts an HTTPS server on addr (a Go listen string) calling fn for every
 * request with a well-formed head: with its Content-Length body of at most
 * body_max bytes (GET and HEAD without one too), or with `refused` set and no
 * body for a body it will not read (411 without a length or with
 * Transfer-Encoding, 413 past body_max, 400 for a bad length), which the
 * server answers itself unless fn replies; 400/431/505 for a malformed head
 * never reach fn. Connections as the health server's (a poll loop over up to
 * 64, one request each) with `workers` threads (1..16). tls is required; a
 * NULL tls->cert_pem starts the server without a certificate, closing
 * connections unanswered until kft_cm_http_set_tls gives it one. Errors as
 * kft_cm_http_start_tls. Stop with kft_cm_http_stop.
 */
int kft_cm_https_start(const char *addr, const kft_cm_http_tls *tls, size_t body_max, int workers,
                       kft_cm_http_handler fn, void *ctx, kft_cm_http **out, kft_error *err);

/* Replaces a handler server's certificate and key (rotation): connections
 * already open finish with the old ones. Errors as kft_cm_https_start's TLS
 * errors; the old certificate stays on failure. */
int kft_cm_http_set_tls(kft_cm_http *h, const kft_cm_http_tls *tls, kft_error *err);

/* A request head's body length: 0 with *len set, 411 when it has no
 * Content-Length or has Transfer-Encoding, 413 past max, 400 when the
 * length is not a decimal number. */
int kft_cm_http_body_length(const char *head, size_t max, size_t *len);

/* The bound port of the health (which=0), metrics (which=1) or handler
 * (which=2) server, 0 when none. */
int kft_cm_http_port(const kft_cm_http *h, int which);
/* Stops both servers (at once, even mid-request: no wait for a client),
 * joins their threads, closes every socket and frees h. NULL is a no-op. */
void kft_cm_http_stop(kft_cm_http *h);

/* Parses a request head (NUL-terminated, as the servers read it: at most
 * 8 KiB, ending with the blank line) into its method (upper-case token of
 * at most 15 letters) and its path, percent-decoded and without the query,
 * written into `path` (at least strlen(head) + 1 bytes). Returns 0, 400 for
 * a malformed request line or header line, or 505 for an HTTP version other
 * than 1.0/1.1. */
int kft_cm_http_parse(const char *head, char method[16], char *path);

/* Parses a Go listen address into host (NULL/"" = every interface) and
 * port. Returns 0 or KFT_EINVAL. host is written into hostbuf. */
int kft_cm_parse_listen(const char *addr, char *hostbuf, size_t hostsize, int *port,
                        kft_error *err);

/* ---- reconcile decisions --------------------------------------------------- */

/*
 * The child objects of one TrainJob as a backend: answers get_object from
 * `lookup` (e.g. informer caches), trainjob_uid from metadata.uid; the
 * rest is the default Kubernetes answer. self is passed to lookup.
 */
typedef json_t *(*kft_cm_lookup_fn)(void *self, const char *api_version, const char *kind,
                                    const char *ns, const char *name);
void kft_cm_backend_init(kft_backend *b, kft_cm_lookup_fn lookup, void *self);

/*
 * Whether applying `desired` to the live object `live` would change
 * nothing: every field desired sets has the same value in live (objects
 * compared member by member, lists element by element with equal length,
 * scalars by value, numbers across integer/real). live may hold more
 * (server defaults, status). 1 when unchanged, else 0.
 */
int kft_cm_apply_is_noop(const json_t *desired, const json_t *live);

/*
 * A JSON merge patch (RFC 7386) turning `from` into `to`: changed members
 * replaced, removed ones null, lists replaced whole. New reference; an
 * empty object when equal; NULL on allocation failure.
 */
json_t *kft_cm_merge_patch(const json_t *from, const json_t *to);

/*
 * The runtime snapshot ConfigMap upstream v2.3.0 writes for a TrainJob
 * (pkg/runtime/core/snapshot.go): name "<trainjob>-runtime-snapshot",
 * controlled by the TrainJob (controller and blockOwnerDeletion true),
 * data.runtime = the runtime (borrowed) as YAML with its keys sorted, as
 * sigs.k8s.io/yaml prints it, managedFields left out. New reference, or
 * NULL with err filled (KFT_ENOMEM, KFT_EINVAL for a TrainJob without a
 * name or uid).
 */
json_t *kft_cm_snapshot_configmap(const json_t *trainjob, const json_t *runtime, kft_error *err);

/*
 * Reads a runtime back from a snapshot ConfigMap (borrowed). Fails as
 * upstream does, with its messages: not controlled by this TrainJob
 * ("invalid runtime snapshot: a snapshot configmap exists but is owned by
 * another object"), missing key, undecodable YAML, or a runtime other than
 * the one spec.runtimeRef names. *runtime is a new reference.
 */
int kft_cm_snapshot_runtime(const json_t *trainjob, const json_t *configmap, json_t **runtime,
                            kft_error *err);

/* What the TrainJob reconciler should do, computed by kft_cm_trainjob_plan. */
typedef struct kft_cm_plan {
	int skip;                 /* managed by another controller: do nothing */
	int build;                /* build and apply the children */
	json_t *status_patch;     /* merge patch {"status": ...} to send, or NULL */
	int delete_jobset;        /* deadline exceeded: delete the JobSet */
	int64_t requeue_after_ms; /* > 0: look again then */
	char *error;              /* an error to return (unsupported runtime ...), or NULL */
} kft_cm_plan;

void kft_cm_plan_free(kft_cm_plan *p);

/*
 * Step 1 of a TrainJob reconcile (before any children are built): whether
 * it is ours, and whether its runtime kind is supported. `job` is the
 * working copy (borrowed, modified: the Failed condition cleared or set).
 * Sets plan->skip, plan->build, plan->error.
 */
int kft_cm_trainjob_begin(json_t *job, const char *now, kft_cm_plan *plan, kft_error *err);

/*
 * The rest, after the children were built and applied (or not), in
 * upstream's order: the Suspended condition; the status the framework
 * computes from the children (kft_framework_status with fw and backend;
 * skipped when fw is NULL, e.g. an unsupported runtime); the active
 * deadline (plan->delete_jobset, plan->requeue_after_ms); and
 * plan->status_patch, the merge patch {"status": ...} from `stored` (the
 * TrainJob as read, borrowed) to `job`, or NULL when the status did not
 * change. `job` (borrowed) is modified. Errors: the framework's, KFT_EPARSE
 * for a bad timestamp, KFT_ENOMEM.
 */
int kft_cm_trainjob_finish(json_t *job, const json_t *stored, const kft_framework *fw,
                           const kft_backend *backend, const char *now, kft_cm_plan *plan,
                           kft_error *err);

/* Whether a runtime carries the resource-in-use finalizer; *patch is the
 * merge patch removing it (metadata.finalizers without it), or NULL. */
int kft_cm_runtime_finalizer_patch(const json_t *runtime, json_t **patch, kft_error *err);

/*
 * With the RuntimeInUseFinalizer gate, Trainer v2.2's rule for a runtime
 * (borrowed) that `in_use` TrainJobs reference: add the finalizer when
 * TrainJobs use it and it lacks it (not while it is being deleted: the API
 * server forbids new finalizers then); remove it once the runtime is being
 * deleted and no TrainJob uses it; otherwise leave it. *patch is the merge
 * patch of metadata.finalizers to send, or NULL for nothing. KFT_ENOMEM.
 */
int kft_cm_runtime_in_use_patch(const json_t *runtime, size_t in_use, json_t **patch,
                                kft_error *err);

/*
 * The runtime a TrainJob (borrowed) references, as the TrainJob informer's
 * "runtime" index value: "TrainingRuntime/<namespace>/<name>" or
 * "ClusterTrainingRuntime/<name>", for spec.runtimeRef with apiGroup
 * trainer.kubeflow.org (upstream's RuntimeRefIsTrainingRuntime and
 * RuntimeRefIsClusterTrainingRuntime). KFT_ENOTFOUND for any other
 * reference, KFT_ELIMIT when buf is too small.
 */
int kft_cm_trainjob_runtime_key(const json_t *job, char *buf, size_t size);

/*
 * The runtimeClassName of every replicated job's pod template of a
 * TrainingRuntime or ClusterTrainingRuntime (borrowed), as upstream's
 * runtimeClass indexes list them: a new array of strings (duplicates
 * kept once), empty when none; NULL on allocation failure.
 */
json_t *kft_cm_runtime_class_names(const json_t *runtime);

/* Whether a TrainJob (borrowed) has spec.suspend true: the TrainJobs the
 * PodGroup plugins' LimitRange and RuntimeClass watches requeue. */
int kft_cm_trainjob_suspended(const json_t *job);

/* ---- admission webhooks (src/controller/admission.c) ---------------------- */

/* The webhooks upstream v2.3.0 registers, by the path each is served on. */
typedef enum kft_cm_webhook {
	KFT_CM_WEBHOOK_NONE,
	KFT_CM_WEBHOOK_DEFAULT_TRAINJOB,  /* /mutate-trainer-kubeflow-org-v1alpha1-trainjob */
	KFT_CM_WEBHOOK_VALIDATE_TRAINJOB, /* /validate-trainer-kubeflow-org-v1alpha1-trainjob */
	KFT_CM_WEBHOOK_VALIDATE_RUNTIME,  /* /validate-...-trainingruntime */
	KFT_CM_WEBHOOK_VALIDATE_CLUSTER_RUNTIME, /* /validate-...-clustertrainingruntime */
} kft_cm_webhook;

/* The webhook a request path names, or KFT_CM_WEBHOOK_NONE. */
kft_cm_webhook kft_cm_webhook_for_path(const char *path);

/* A decoded AdmissionReview request. Every pointer is borrowed from
 * `review`, which the struct owns (free with kft_cm_admission_free). */
typedef struct kft_cm_admission {
	json_t *review;
	const char *uid, *operation, *ns;
	const char *group, *kind; /* request.kind */
	const json_t *object;     /* request.object, or NULL */
	const json_t *old_object; /* request.oldObject, or NULL */
} kft_cm_admission;

/*
 * Decodes an AdmissionReview request body (untrusted: any bytes). Only
 * admission.k8s.io/v1 is served, as upstream registers. Errors, with the
 * words the 400 answer carries: KFT_EINVAL (empty body, not an
 * AdmissionReview v1, no request, no uid/operation/kind, an object that is
 * not a JSON object), KFT_EPARSE (not JSON). out is empty on error.
 */
int kft_cm_admission_decode(const char *body, size_t len, kft_cm_admission *out, kft_error *err);
void kft_cm_admission_free(kft_cm_admission *a);

/* Fetches a runtime from the caller's caches: kind is "TrainingRuntime" (ns
 * set) or "ClusterTrainingRuntime" (ns NULL). A new reference, or NULL when
 * there is none. Called from several threads at once. */
typedef json_t *(*kft_cm_runtime_get_fn)(void *ctx, const char *kind, const char *ns,
                                         const char *name);

/* What the validators judge with (all borrowed). now is RFC 3339 in
 * seconds, the defaulter's time stamp. */
typedef struct kft_cm_admission_env {
	const kft_schema *schema;
	const kft_framework *fw;
	const kft_backend *backend;
	kft_cm_runtime_get_fn get_runtime;
	void *ctx;
	const char *now;
} kft_cm_admission_env;

/*
 * The AdmissionReview answering req on webhook `which`: allowed (with any
 * warnings; for the defaulter a JSONPatch), or denied with 403 Forbidden and
 * the message `kftrainer validate` prints for the same object, or errored
 * (400) for a request of another kind. New reference; NULL only when out of
 * memory.
 */
json_t *kft_cm_admission_review(kft_cm_webhook which, const kft_cm_admission *req,
                                const kft_cm_admission_env *env);

/* An errored AdmissionReview (allowed false, status code and message), as
 * controller-runtime answers a request it cannot decode. New reference. */
json_t *kft_cm_admission_errored(const char *uid, int code, const char *message);

/* The field errors as one message: apimachinery's aggregate Error() ("a";
 * "[a, b]"; a repeated message once). Caller frees; NULL when out of memory. */
char *kft_cm_admission_message(const kft_field_errors *errs);

/* The defaulter's JSON patch (an array of operations, maybe empty) for a
 * TrainJob and, on update, its stored version (else NULL): upstream's
 * runtimePatches[].time rules (see admission.c). New reference. */
json_t *kft_cm_admission_default_patch(const json_t *job, const json_t *old_job, const char *now);

/* ---- webhook certificates (src/controller/certs.c) ------------------------- */

typedef enum kft_cm_cert_action {
	KFT_CM_CERT_KEEP,        /* the Secret's certificates serve on */
	KFT_CM_CERT_NEW_SERVING, /* a new serving certificate from the same CA */
	KFT_CM_CERT_NEW_CA,      /* a new CA and a serving certificate from it */
} kft_cm_cert_action;

/*
 * The rotator's decision over a Secret's four PEM values (any may be NULL):
 * a new CA unless ca.crt/ca.key are a matching CA pair for
 * kubeflow-trainer-ca valid from now until now + lookahead_s; else a new
 * serving certificate unless tls.crt/tls.key are a matching pair the CA
 * signed for dns_name, valid as long; else keep.
 */
kft_cm_cert_action kft_cm_cert_plan(const char *ca_crt, const char *ca_key, const char *tls_crt,
                                    const char *tls_key, const char *dns_name, time_t now,
                                    long long lookahead_s);

/* ---- the manager ----------------------------------------------------------- */

/*
 * Runs the controller manager until SIGTERM/SIGINT (0), or a fatal error
 * (negative, err filled; e.g. the leader lease lost). flags and cfg are
 * borrowed; lg is the logger everything writes to.
 */
int kft_cm_run(const kft_cm_flags *flags, const kft_cm_config *cfg, kft_logger *lg, kft_error *err);

KFT_EXPORT_END

#ifdef __cplusplus
}
#endif

#endif
