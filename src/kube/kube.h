/*
 * kube.h - a Kubernetes API client: configuration, REST verbs, watches, events.
 *
 * The client speaks HTTPS to a kube-apiserver through libcurl. Objects go in
 * and come out as jansson trees, exactly as the server sends them.
 *
 * Configuration comes from a kubeconfig file (client certificates, bearer
 * tokens, token files, basic auth; exec and auth-provider plugins are refused
 * with an error naming the user entry) or from the in-cluster service account.
 * A token read from a file is re-read when it is older than a minute, because
 * kubelet rotates projected service-account tokens.
 *
 * A kft_kube client is thread-safe: any number of threads may call any verb at
 * once. Connections are kept alive and reused by later calls (one call at a
 * time per connection, HTTP/1.1); DNS answers and TLS sessions are shared. An
 * optional token bucket (qps/burst) limits the request rate of the whole
 * client, as client-go's does, or of each API resource on its own, as
 * controller-runtime's does (rate_per_resource).
 *
 * Failures map the server's answer to a kft_status and carry the server's own
 * message (it names the fields and is what users see):
 *   404                      KFT_ENOTFOUND
 *   409, reason AlreadyExists KFT_EEXIST
 *   409, any other reason     KFT_ECONFLICT (a stale resourceVersion: re-read, retry)
 *   410                      KFT_EGONE     (a watch or list resourceVersion expired: relist)
 *   401, 403                 KFT_EDENIED
 *   400, 422, other 4xx      KFT_EINVAL
 *   429, 5xx, connection errors: retried inside with exponential backoff that
 *                            honours Retry-After, up to kft_kube_config.max_retries times,
 *                            then KFT_EUNAVAILABLE
 *   a body that is not JSON or too large: KFT_EPARSE / KFT_ELIMIT
 * Requests that create (POST) are retried only when the server cannot have acted
 * on them: the connection failed to open, or the answer was 429 or carried
 * Retry-After. Everything else is idempotent or guarded by a resourceVersion.
 * A server certificate that does not verify is KFT_EUNAVAILABLE at once (not
 * retried; the message says why). A 401 on a client whose token comes from a
 * file re-reads the file and tries once more.
 */
#ifndef KFT_KUBE_KUBE_H
#define KFT_KUBE_KUBE_H

#include <stdatomic.h>
#include <stddef.h>

#include <jansson.h>

#include "kftrainer/error.h"

/* Largest response body kept whole for one request. List pages are not
 * kept whole: they are read item by item as they arrive, of any size. */
#define KFT_KUBE_MAX_RESPONSE_BYTES ((size_t)64 * 1024 * 1024)
/* Largest single object in a list page or watch event (the API server's own
 * request limit is 3 MiB); a larger one is skipped with a warning. */
#define KFT_KUBE_MAX_OBJECT_BYTES ((size_t)16 * 1024 * 1024)
/* Largest single watch event (one line of the stream). */
#define KFT_KUBE_MAX_WATCH_EVENT_BYTES KFT_KUBE_MAX_OBJECT_BYTES
/* Largest kubeconfig, token, certificate or key file read. */
#define KFT_KUBE_MAX_FILE_BYTES ((size_t)4 * 1024 * 1024)
/* Most pages one kft_kube_list / kft_kube_list_each follows. */
#define KFT_KUBE_MAX_LIST_PAGES 100000

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

/*
 * Where and how to connect. Every string is NUL-terminated, malloc'd and owned
 * by the config (kft_kube_config_free frees them); any may be NULL when unset.
 * Callers may change fields after loading (e.g. qps) - replace a string with
 * free() + strdup().
 */
typedef struct kft_kube_config {
	char *server;          /* "https://host:port[/prefix]", required */
	char *tls_server_name; /* SNI and name checked against the serving cert */
	char *ca_file;         /* PEM CA bundle file */
	char *ca_data;         /* PEM CA bundle text (already base64-decoded) */
	char *cert_file;       /* client certificate PEM file */
	char *cert_data;       /* client certificate PEM text */
	char *key_file;        /* client private key PEM file */
	char *key_data;        /* client private key PEM text */
	char *token;           /* bearer token */
	char *token_file; /* bearer token file, re-read when older than 60 s; wins over token */
	char *username;   /* basic auth, when no token */
	char *password;
	char *proxy_url;         /* HTTP(S) proxy; NULL: libcurl's environment rules */
	char *default_namespace; /* never NULL after loading ("default") */
	char *user_agent;        /* NULL: "kftrainer" */
	int insecure; /* skip server certificate verification (insecure-skip-tls-verify) */
	double qps;   /* steady request rate; <= 0 disables the limiter */
	int burst;    /* bucket size; < 1 reads as 1 when qps > 0 */
	/* 0: one qps/burst bucket for the whole client (client-go's clientset);
	 * 1: one per API resource, subresources included (controller-runtime's
	 * client, which makes a REST client and limiter per kind) */
	int rate_per_resource;
	int max_retries; /* retries for 429 / 5xx / connection errors; < 0 = none */
	long timeout_ms; /* whole-request bound for non-watch calls; 0 = none */
} kft_kube_config;

/*
 * A config with no server and client-go's defaults: namespace "default",
 * qps 5, burst 10, max_retries 10, timeout_ms 0. Returns 0 and fills *out
 * (free with kft_kube_config_free), or KFT_ENOMEM.
 */
int kft_kube_config_new(kft_kube_config **out, kft_error *err);

/*
 * Loads a kubeconfig as kubectl does.
 *
 * kubeconfig: a path; NULL means $KUBECONFIG (a ':'-separated list whose files
 * are merged, the first file naming a cluster, user, context or
 * current-context wins; missing files are skipped), else ~/.kube/config.
 * context: the context to use; NULL or "" means current-context.
 *
 * Relative file paths inside a kubeconfig are resolved against the directory
 * of the file that names them. *-data fields are base64-decoded. The context's
 * namespace becomes config->default_namespace ("default" when unset).
 *
 * Returns 0 and fills *out (free with kft_kube_config_free), or:
 *   KFT_ENOTFOUND  no kubeconfig file; the context, its cluster or its user
 *                  entry does not exist (the message names which, e.g.
 *                  `context "x" not found in kubeconfig FILE`)
 *   KFT_EINVAL     no current-context and none given; cluster without server;
 *                  bad base64; a user with exec or auth-provider (not supported;
 *                  the message names the user entry)
 *   KFT_EIO / KFT_EPARSE / KFT_ELIMIT  a file cannot be read / parsed / is too big
 *   KFT_ENOMEM
 * Referenced files (certificates, keys, token files) are checked for
 * readability when the client is created, not here.
 */
int kft_kube_config_load(const char *kubeconfig, const char *context, kft_kube_config **out,
                         kft_error *err);

/*
 * The in-cluster service-account config: server from KUBERNETES_SERVICE_HOST
 * and KUBERNETES_SERVICE_PORT (IPv6 hosts bracketed), CA
 * /var/run/secrets/kubernetes.io/serviceaccount/ca.crt, token_file .../token
 * (re-read as it rotates), namespace from .../namespace (else "default").
 * Setting KFT_KUBE_SERVICEACCOUNT_DIR replaces that directory (for tests).
 * Returns 0 and fills *out (free with kft_kube_config_free), or
 * KFT_ENOTFOUND when not running in a cluster (variables unset) and
 * KFT_EIO when the token file cannot be read, KFT_ENOMEM.
 */
int kft_kube_config_in_cluster(kft_kube_config **out, kft_error *err);

/*
 * controller-runtime's order for finding a config: `kubeconfig` (a --kubeconfig
 * flag, may be NULL), then $KUBECONFIG, then in-cluster, then ~/.kube/config.
 * Same results as the two loaders above; KFT_ENOTFOUND when none applies.
 */
int kft_kube_config_default(const char *kubeconfig, const char *context, kft_kube_config **out,
                            kft_error *err);

/* Frees cfg and every string in it. cfg may be NULL. */
void kft_kube_config_free(kft_kube_config *cfg);

/* ------------------------------------------------------------------------ */
/* Client                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct kft_kube kft_kube;

/*
 * Creates a client from cfg. The client copies what it needs: cfg may be freed
 * right after. Certificate, key and CA files are read now (so a missing file is
 * reported here); the token file now and then again when older than 60 s.
 * Returns 0 and fills *out (free with kft_kube_free), or KFT_EINVAL (no server,
 * a server that is not http(s)://, a cert without a key), KFT_EIO (a file
 * cannot be read), KFT_ENOMEM.
 */
int kft_kube_new(const kft_kube_config *cfg, kft_kube **out, kft_error *err);

/* Frees the client. No call on it may still be running. kube may be NULL. */
void kft_kube_free(kft_kube *kube);

/*
 * on = 1 cancels every call on kube: transfers in progress are abandoned
 * within about a second (at once when data flows), rate-limiter waits and
 * retry backoffs end, and new calls fail at once, all with
 * KFT_EUNAVAILABLE ("... canceled"); watches end as if stopped. on = 0
 * lets calls through again. For a prompt shutdown: cancel before joining
 * the threads that make calls, un-cancel for last words (a lease release).
 * Any thread; nothing to free.
 */
void kft_kube_cancel(kft_kube *kube, int on);

/*
 * A function told of every HTTP exchange the client has with the server,
 * retries and watches included: the method ("GET", "PATCH", ...) and the
 * status code, or 0 when no answer came (connection or TLS failure). It runs
 * on the calling thread and must be quick and thread-safe. Set it before the
 * client is shared between threads; fn NULL removes it.
 */
/* The server URL the client talks to ("https://host:port"); owned by kube. */
const char *kft_kube_server(const kft_kube *kube);

typedef void (*kft_kube_observer)(void *ctx, const char *method, long code);
void kft_kube_set_observer(kft_kube *kube, kft_kube_observer fn, void *ctx);

/*
 * Where the client says what its caller does not see as a failure: an
 * object it skipped because it cannot hold it instead of failing a whole
 * list or watch (larger than KFT_KUBE_MAX_OBJECT_BYTES, a NUL character in
 * an object key, which jansson cannot represent - NULs in string values are
 * kept - or nesting deeper than jansson's 2048 levels), and a request about
 * to be retried (once per request, with the reason: a refused connection,
 * a 5xx's message). The message names the request. Called from whichever
 * thread made the request; set it before the first request.
 */
typedef void (*kft_kube_warning_fn)(void *ctx, const char *message);
void kft_kube_set_warning_handler(kft_kube *kube, kft_kube_warning_fn fn, void *ctx);

/* The config's default namespace; owned by the client, valid until kft_kube_free. */
const char *kft_kube_namespace(const kft_kube *kube);

/* ------------------------------------------------------------------------ */
/* Resource addressing                                                       */
/* ------------------------------------------------------------------------ */

/* One kind of object and the REST path that serves it. group "" is core/v1. */
typedef struct kft_gvr {
	const char *group;    /* "" for the core group */
	const char *version;  /* "v1" */
	const char *resource; /* plural, lower case: "trainjobs" */
	const char *kind;     /* "TrainJob" */
	int namespaced;       /* 1 when objects live in a namespace */
} kft_gvr;

/*
 * The static entry for api_version ("v1", "group/version") and kind, or NULL
 * when kftrainer does not know the pair. Known: trainer.kubeflow.org/v1alpha1
 * TrainJob, TrainingRuntime, ClusterTrainingRuntime; jobset.x-k8s.io/v1alpha2
 * JobSet; v1 Secret, ConfigMap, Pod, Namespace, Event, LimitRange, Service,
 * ServiceAccount; coordination.k8s.io/v1 Lease; events.k8s.io/v1 Event;
 * scheduling.x-k8s.io/v1alpha1 PodGroup; scheduling.volcano.sh/v1beta1 PodGroup;
 * node.k8s.io/v1 RuntimeClass; batch/v1 Job. The result is static: never freed.
 */
const kft_gvr *kft_gvr_lookup(const char *api_version, const char *kind);

/* kft_gvr_lookup on an object's apiVersion and kind; NULL when absent or unknown. */
const kft_gvr *kft_gvr_of(const json_t *obj);

/* Writes "group/version" (or "v1") of gvr into buf (size n). Returns buf. */
const char *kft_gvr_api_version(const kft_gvr *gvr, char *buf, size_t n);

/* ------------------------------------------------------------------------ */
/* Verbs                                                                     */
/*                                                                           */
/* Common rules: `ns` is ignored for cluster-scoped kinds; for namespaced     */
/* kinds NULL or "" means the client's default namespace, except in list and  */
/* watch where it means all namespaces. Verbs taking an object read name and  */
/* namespace from its metadata (namespace falling back to the default). On    */
/* success *out (when out is non-NULL) is a new reference the caller          */
/* json_decref()s; on failure *out is NULL. Errors: see the top of the file.  */
/* ------------------------------------------------------------------------ */

/* GET one object. */
int kft_kube_get(kft_kube *kube, const kft_gvr *gvr, const char *ns, const char *name, json_t **out,
                 kft_error *err);

typedef struct kft_list_opts {
	const char *label_selector;   /* NULL: none */
	const char *field_selector;   /* NULL: none */
	const char *resource_version; /* NULL: most recent; "0": any (server cache) */
	long page_size;               /* limit per request; 0: 500; < 0: no paging */
	/* Optional (borrowed): when it becomes non-zero the listing ends
	 * within about a second with KFT_EUNAVAILABLE, even mid-request or in
	 * a retry's backoff, as kft_kube_cancel does for the whole client. */
	const atomic_int *stop;
	/* Ask for metadata only (PartialObjectMetadataList; JSON of the whole
	 * objects from a server that cannot): items come with the kind's
	 * apiVersion and kind and no spec, status or data. */
	int metadata_only;
} kft_list_opts;

/*
 * LISTs every object, following `continue` tokens. *out (out is required) is a
 * List object:
 * {"apiVersion", "kind": "<Kind>List", "metadata": {"resourceVersion": RV of the
 * last page}, "items": [...]}, items having their apiVersion and kind set (the
 * server leaves them out). opts may be NULL. A continue token that expires
 * (410) is KFT_EGONE: list again.
 */
int kft_kube_list(kft_kube *kube, const kft_gvr *gvr, const char *ns, const kft_list_opts *opts,
                  json_t **out, kft_error *err);

/*
 * Like kft_kube_list but hands each item to on_item (borrowed: incref to keep
 * it) as pages arrive, so a large list never sits in memory whole. Items have
 * apiVersion and kind set. When on_item returns non-zero the listing stops and
 * that value is returned. *resource_version (when non-NULL) receives the
 * list's resourceVersion, malloc'd, caller frees; NULL on failure.
 */
int kft_kube_list_each(kft_kube *kube, const kft_gvr *gvr, const char *ns,
                       const kft_list_opts *opts, int (*on_item)(void *ctx, const json_t *item),
                       void *ctx, char **resource_version, kft_error *err);

/* POST obj (not modified). generateName works. */
int kft_kube_create(kft_kube *kube, const kft_gvr *gvr, const json_t *obj, json_t **out,
                    kft_error *err);

/* PUT obj; its metadata.resourceVersion guards it (stale: KFT_ECONFLICT). */
int kft_kube_update(kft_kube *kube, const kft_gvr *gvr, const json_t *obj, json_t **out,
                    kft_error *err);

/* PUT obj to the status subresource (only .status is taken by the server). */
int kft_kube_update_status(kft_kube *kube, const kft_gvr *gvr, const json_t *obj, json_t **out,
                           kft_error *err);

typedef enum kft_patch_type {
	KFT_PATCH_MERGE,     /* application/merge-patch+json (RFC 7386) */
	KFT_PATCH_JSON,      /* application/json-patch+json (RFC 6902): patch is an array */
	KFT_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (built-in kinds only) */
} kft_patch_type;

typedef struct kft_patch_opts {
	const char *subresource;   /* NULL, or "status", "scale" ... */
	const char *field_manager; /* NULL: none sent */
} kft_patch_opts;

/* PATCH the named object with `patch` (a JSON tree). opts may be NULL. */
int kft_kube_patch(kft_kube *kube, const kft_gvr *gvr, const char *ns, const char *name,
                   kft_patch_type type, const json_t *patch, const kft_patch_opts *opts,
                   json_t **out, kft_error *err);

/*
 * Server-side apply: PATCH application/apply-patch+yaml with obj as the body,
 * ?fieldManager=field_manager (required, non-empty) and &force=true when force
 * is non-zero. obj must carry apiVersion, kind and metadata.name. Another
 * manager owning a field obj sets is KFT_ECONFLICT without force (the message
 * lists the conflicting fields and managers); with force obj takes them.
 */
int kft_kube_apply(kft_kube *kube, const kft_gvr *gvr, const json_t *obj, const char *field_manager,
                   int force, json_t **out, kft_error *err);

/* kft_kube_apply on the status subresource. */
int kft_kube_apply_status(kft_kube *kube, const kft_gvr *gvr, const json_t *obj,
                          const char *field_manager, int force, json_t **out, kft_error *err);

typedef enum kft_propagation {
	KFT_PROPAGATION_DEFAULT = 0, /* the kind's default (none sent) */
	KFT_PROPAGATION_BACKGROUND,
	KFT_PROPAGATION_FOREGROUND,
	KFT_PROPAGATION_ORPHAN,
} kft_propagation;

typedef struct kft_delete_opts {
	kft_propagation propagation;
	const char *precondition_uid;              /* delete only this incarnation; else 409 */
	const char *precondition_resource_version; /* delete only at this RV; else 409 */
	/* > 0: this many seconds; 0: the kind's default (so a zeroed struct is safe);
	 * use grace_now for an immediate deletion. */
	long grace_period_seconds;
	int grace_now; /* sends gracePeriodSeconds=0 */
} kft_delete_opts;

/*
 * DELETE the named object. opts may be NULL (all defaults). *out, when out is
 * non-NULL, is what the server returned: the object (when deletion waits on
 * finalizers) or a Status.
 */
int kft_kube_delete(kft_kube *kube, const kft_gvr *gvr, const char *ns, const char *name,
                    const kft_delete_opts *opts, json_t **out, kft_error *err);

/*
 * A raw request for what the verbs above do not cover (discovery, /version).
 * path starts with '/' and may carry a query; content_type and body may be NULL
 * (body_len bytes of body otherwise). Same retries, limits and error mapping.
 * *out is the parsed JSON answer (NULL when the body is empty).
 */
int kft_kube_request(kft_kube *kube, const char *method, const char *path, const char *content_type,
                     const char *body, size_t body_len, json_t **out, kft_error *err);

/*
 * A GET of `path` (as kft_kube_request) whose answer is not JSON and may not
 * end for a long while: a pod's log, followed. Each piece of a 2xx body is
 * handed to sink as it arrives (never gathered whole); a non-zero return
 * from sink ends the transfer and is the result. stop (may be NULL) ends it
 * within about a second, as kft_list_opts.stop does (result 0 then). Not
 * retried once the sink has seen a byte. An error answer maps as at the top,
 * with the server's message.
 */
int kft_kube_stream(kft_kube *kube, const char *path,
                    int (*sink)(void *ctx, const char *data, size_t len), void *ctx,
                    const atomic_int *stop, kft_error *err);

/* ------------------------------------------------------------------------ */
/* Watch                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct kft_watch_opts {
	const char *resource_version; /* start after this RV (from a list); NULL: now */
	const char *label_selector;
	const char *field_selector;
	int allow_bookmarks;  /* ask for BOOKMARK events */
	long timeout_seconds; /* server ends the stream after this; 0: server's default */
	/* No byte for this long means the connection is dead; 0: timeout_seconds + 60,
	 * or 360 without a timeout. BOOKMARKs keep a quiet watch alive. */
	long idle_timeout_sec;
	/* Events carry metadata only (PartialObjectMetadata), as for lists. */
	int metadata_only;
} kft_watch_opts;

/*
 * Called once per event. type is "ADDED", "MODIFIED", "DELETED" or
 * "BOOKMARK"; object is borrowed (incref to keep it) and has apiVersion and
 * kind set. A BOOKMARK's object carries only metadata.resourceVersion (and
 * annotations). Returning non-zero stops the watch.
 */
typedef int (*kft_watch_fn)(void *ctx, const char *type, const json_t *object);

/*
 * A blocking watch: opens one streaming GET ?watch=1 and calls on_event for
 * each event as it arrives, parsing the stream incrementally. Does not
 * reconnect - that, and relisting, is the caller's job (see kft_backoff).
 *
 * stop (may be NULL) is polled from inside the transfer whenever data arrives
 * and at least once a second on a silent stream: storing non-zero in it from
 * any thread ends the watch within about a second.
 *
 * Returns:
 *   0                   the server ended the stream (timeout) or stop was set
 *   the callback's value when it returned non-zero
 *   KFT_EGONE           the resourceVersion is too old (HTTP 410, or an ERROR
 *                       event with code 410): list again
 *   KFT_EUNAVAILABLE    cannot connect, the connection was cut or went idle,
 *                       429/5xx on opening (no retry here)
 *   KFT_EPARSE          an event that is not a JSON watch event
 *   other statuses      an ERROR event or HTTP status mapped as at the top
 * ERROR events are not passed to on_event; they end the watch as above with
 * the server's message in err. An event larger than
 * KFT_KUBE_MAX_WATCH_EVENT_BYTES, or whose object has a NUL in a key, is
 * skipped with a warning (kft_kube_set_warning_handler); NULs in strings are
 * kept.
 */
int kft_kube_watch(kft_kube *kube, const kft_gvr *gvr, const char *ns, const kft_watch_opts *opts,
                   kft_watch_fn on_event, void *ctx, const atomic_int *stop, kft_error *err);

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Records a core/v1 Event about `involved` (an object with apiVersion, kind,
 * metadata.name, and namespace/uid/resourceVersion when it has them), as
 * client-go's recorder does: name "<object name>.<hex nanoseconds>", in the
 * object's namespace ("default" for cluster-scoped objects), involvedObject
 * reference, type ("Normal" or "Warning"), reason, message,
 * source.component = component, reportingComponent = component,
 * firstTimestamp = lastTimestamp = now, count 1.
 *
 * Exact repeats are counted per client as client-go's correlator does: the
 * same object (uid included), type, reason, message and component seen again
 * PATCHes the existing Event's count and lastTimestamp instead of creating a
 * new one (an Event deleted meanwhile is created again). The cache is bounded
 * (4096 entries, least recently used dropped). client-go's aggregation of
 * events differing only in message, and its per-object spam filter, are not
 * done.
 *
 * Returns 0, or KFT_EINVAL (missing kind/name, bad type, empty reason or
 * component) or a request error as above.
 */
int kft_kube_event(kft_kube *kube, const json_t *involved, const char *type, const char *reason,
                   const char *message, const char *component, kft_error *err);

/* An events.k8s.io/v1 Event to record (every pointer borrowed). */
typedef struct kft_event_v1 {
	const json_t *regarding; /* required: an object with kind and metadata.name */
	const json_t *related;   /* optional second object, or NULL */
	const char *type;        /* "Normal" or "Warning" */
	const char *reason;      /* required, at most 128 bytes */
	const char *action;      /* required, at most 128 bytes (e.g. "Reconciling") */
	const char *note;        /* the message; cut to 1024 bytes (the server's limit) */
	const char *controller;  /* reportingController, required */
	const char *instance;    /* reportingInstance; NULL: "<controller>-<hostname>" */
} kft_event_v1;

/*
 * Records an events.k8s.io/v1 Event as client-go's tools/events recorder
 * (what controller-runtime's GetEventRecorder hands out) writes it: name
 * "<regarding name>.<hex nanoseconds>" in the regarding object's namespace
 * ("default" for cluster-scoped objects), eventTime now (a MicroTime),
 * regarding/related references (apiVersion, kind, namespace, name, uid,
 * resourceVersion), type, reason, action, note, reportingController and
 * reportingInstance. The call is synchronous (client-go's is not).
 *
 * Repeats are the recorder's "series": the same type, action, reason,
 * reporting controller and instance about the same regarding and related
 * references (resourceVersion included; the note is not compared) seen again
 * within 6 minutes PATCHes the first Event with series {count: 2,
 * lastObservedTime} (strategic merge patch; an Event deleted meanwhile is
 * created again); later repeats only count in memory, and
 * kft_kube_events_flush writes the count. Six quiet minutes end a series:
 * the next occurrence creates a new Event. Bounded cache as kft_kube_event.
 *
 * Returns 0, KFT_EINVAL (missing kind/name, bad type, empty or over-long
 * reason/action, no controller), KFT_ENOMEM, or a request error.
 */
int kft_kube_event_v1(kft_kube *kube, const kft_event_v1 *ev, kft_error *err);

/*
 * Writes the counts of events.k8s.io/v1 series that are due, as client-go's
 * broadcaster does in the background: a series quiet for 6 minutes gets its
 * final count (and is forgotten), a running one is rewritten every 30
 * minutes; with `all` non-zero every series with an unwritten count is
 * written now. Call it periodically (every few seconds is plenty). Returns
 * 0 or the first request error (the others are still attempted).
 */
int kft_kube_events_flush(kft_kube *kube, int all, kft_error *err);

/* ------------------------------------------------------------------------ */
/* Backoff                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * Exponential backoff with jitter: each kft_backoff_next doubles the delay from
 * base_ms up to cap_ms and returns it with up to +jitter of random extra (0.1 =
 * up to 10 % more). A plain value: no heap, not thread-safe (one per loop).
 */
typedef struct kft_backoff {
	long base_ms;
	long cap_ms;
	double jitter;
	long current_ms; /* 0 before the first step */
	unsigned int seed;
} kft_backoff;

/* Sets up b (base_ms >= 1, cap_ms >= base_ms; out-of-range values are clamped). */
void kft_backoff_init(kft_backoff *b, long base_ms, long cap_ms, double jitter);

/* The next delay in milliseconds (base_ms first). */
long kft_backoff_next(kft_backoff *b);

/* Starts again from base_ms (after a success). */
void kft_backoff_reset(kft_backoff *b);

/*
 * Sleeps ms milliseconds, waking early when stop (may be NULL) becomes
 * non-zero (checked every 50 ms). Returns 1 when stopped, else 0.
 */
int kft_sleep_ms(long ms, const atomic_int *stop);

#endif
