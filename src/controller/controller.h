/*
 * controller.h - running kftrainer-controller-manager: its Configuration file
 * and command-line flags (as upstream's), the zap-style JSON logger every
 * part writes to, and kft_cm_run, the manager itself.
 *
 * What the manager is made of stays inside src/controller/, each behind an
 * internal header: reconcile.h (the reconcile decisions as functions over
 * JSON, and the Kubernetes backend), admission.h (the webhooks' verdicts),
 * certs.h (the certificate rotator's decision), httpd.h (the health and
 * metrics servers and the TLS settings every server takes from the
 * Configuration), metrics.h; every server is the HTTP core's
 * (src/http/server.h).
 *
 * Upstream v2.3.0 (cmd/trainer-controller-manager, pkg/config,
 * pkg/controller) is the reference for names, defaults and wording; the
 * comments below say where we differ on purpose.
 */
#ifndef KFT_CONTROLLER_CONTROLLER_H
#define KFT_CONTROLLER_CONTROLLER_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "kftrainer/backend.h"
#include "kftrainer/error.h"
#include "kftrainer/framework.h"
#include "kftrainer/schema.h"
#include "kftrainer/validation.h"

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
	int metrics_secure_serving;  /* default 1: /metrics over HTTPS (TLS 1.2, mbedTLS); 0: plain
	                                HTTP */
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
	/* NULL or "1.0".."1.3", as upstream validates it; a server refuses
	 * "1.3" when it starts (ours speak TLS 1.2 at most, mbedTLS 2.28) */
	char *tls_min_version;
	json_t *tls_cipher_suites; /* tls.cipherSuites (Go names), NULL when unset */
	unsigned features;         /* KFT_FEATURE_* bits from featureGates */
	json_t *warnings;          /* array of strings: what is accepted but ignored */
	json_t *plugins;           /* kftrainer's extension, top-level `plugins`: an array of
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

/* ---- the manager ----------------------------------------------------------- */

/*
 * Runs the controller manager until SIGTERM/SIGINT (0), or a fatal error
 * (negative, err filled; e.g. the leader lease lost). flags and cfg are
 * borrowed; lg is the logger everything writes to.
 */
int kft_cm_run(const kft_cm_flags *flags, const kft_cm_config *cfg, kft_logger *lg, kft_error *err);

#endif
