/*
 * kube_internal.h - what the files of src/kube/ share (not installed).
 *
 * The client keeps a pool of idle curl easy handles. A handle owns its own
 * connection cache, so taking one from the pool and giving it back keeps
 * connections alive between calls without sharing one connection between
 * threads (which libcurl does not support). DNS answers and TLS sessions are
 * shared through a CURLSH with locks.
 */
#ifndef KFT_KUBE_INTERNAL_H
#define KFT_KUBE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "kube/kube.h"
#include "util/strbuf.h"

#define KFT_KUBE_POOL_MAX 16

/* A blob read from a file or copied from config data; len excludes the NUL. */
typedef struct kft_kube_blob {
	char *data;
	size_t len;
} kft_kube_blob;

struct kft_event_cache; /* events.c */

/* How many per-resource token buckets a client keeps (rate_per_resource);
 * resources beyond that share the last one. */
#define KFT_KUBE_BUCKETS_MAX 32

/* One token bucket: `key` is "group/version/resource" when the client limits
 * each resource on its own, "" for the whole client. */
typedef struct kft_kube_bucket {
	char key[96];
	double tokens;
	struct timespec last; /* CLOCK_MONOTONIC of the last refill */
} kft_kube_bucket;

struct kft_kube {
	char *server;                  /* no trailing '/' */
	struct curl_slist *connect_to; /* CURLOPT_CONNECT_TO for tls_server_name, or NULL */
	char *namespace_;
	char *user_agent;
	char *proxy_url;
	char *username, *password;
	kft_kube_blob ca, cert, key; /* PEM; empty when unset */
	int insecure;
	int max_retries;
	long timeout_ms;

	pthread_mutex_t token_mu;
	char *token;
	char *token_file;
	struct timespec token_read_at; /* CLOCK_MONOTONIC */

	kft_kube_observer observe; /* kft_kube_set_observer */
	void *observe_ctx;

	pthread_mutex_t rate_mu;
	double qps, burst;
	int rate_per_resource;
	kft_kube_bucket buckets[KFT_KUBE_BUCKETS_MAX];
	int n_buckets;

	CURLSH *share;
	pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];

	pthread_mutex_t pool_mu;
	CURL *pool[KFT_KUBE_POOL_MAX];
	int pool_len;

	pthread_mutex_t events_mu;
	struct kft_event_cache *events;                 /* events.c's, made on first use */
	void (*events_free)(struct kft_event_cache *c); /* and how to free it */

	atomic_int cancel; /* kft_kube_cancel */

	kft_kube_warning_fn warn; /* kft_kube_set_warning_handler */
	void *warn_ctx;
};

/* Whether jansson refused valid JSON it cannot represent: a NUL in an
 * object key, or nesting deeper than its 2048 levels. Such an object is
 * skipped with a warning; anything else that does not decode is a broken
 * answer. */
int kft_kube_unholdable(const json_error_t *e);

/* Tells the warning handler, if any, one printf-formatted line: an object
 * skipped, never a failure the caller also sees. */
void kft_kube_warn(kft_kube *kube, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads at most `max` bytes of `path` into a NUL-terminated heap blob.
 * `what` names the file in messages. KFT_EIO, KFT_ELIMIT, KFT_ENOMEM. */
int kft_kube_read_file(const char *path, size_t max, const char *what, kft_kube_blob *out,
                       kft_error *err);

/*
 * kft_kube_config_load as if `text` (len bytes, not necessarily NUL-ended)
 * were the whole content of the one kubeconfig file `path`; relative paths in
 * it are resolved against path's directory, and nothing is read from disk.
 * For fuzzing and tests. *out is a new config the caller frees with
 * kft_kube_config_free, NULL on error. Errors as kft_kube_config_load.
 */
int kft_kube_config_load_text(const char *text, size_t len, const char *path, const char *context,
                              kft_kube_config **out, kft_error *err);

/*
 * Runs a watch response body through the stream parser kft_kube_watch uses,
 * as if the connection delivered chunks[0..n) (lens[i] bytes each) and then
 * the transfer completed. Calls on_event as kft_kube_watch does. Returns 0
 * when the stream ended cleanly between events, else the status
 * kft_kube_watch would return (an ERROR event, a bad or oversized event, a
 * stream cut mid-event, on_event's own non-zero value). Nothing is kept: the
 * caller owns the chunks. For fuzzing and tests.
 */
int kft_kube_watch_parse(const kft_gvr *gvr, const char *const *chunks, const size_t *lens,
                         size_t n, kft_watch_fn on_event, void *ctx, kft_error *err);

/*
 * Reads one List page of text (what the API server answers a list with)
 * without building its tree: each element of "items" is decoded alone,
 * given to on_item (borrowed) and released, so a page costs its text plus
 * one object's tree. *metadata gets the List's metadata object (a new
 * reference; NULL when absent). Returns 0, on_item's non-zero value, or
 * KFT_EPARSE naming `what` when the text is not a JSON object whose items
 * are objects. For fuzzing and tests too.
 */
int kft_kube_list_scan(const char *text, size_t len, const char *what,
                       int (*on_item)(void *ctx, json_t *item), void *ctx, json_t **metadata,
                       kft_error *err);

/*
 * The incremental reader of List pages behind kft_kube_list_scan and
 * kft_kube_list_each: bytes are fed as they arrive, each element of "items"
 * is gathered alone (at most KFT_KUBE_MAX_OBJECT_BYTES), decoded with NULs
 * in strings allowed, given to on_item (borrowed) and released. An item
 * that cannot be held (too large, a NUL in a key) is skipped with a
 * warning through kube (may be NULL). init, feed any number of times (0 or
 * the first failure, which sticks), then end (always; it frees): 0 when a
 * whole List was read, *metadata (may be NULL) getting its metadata (a new
 * reference, NULL when absent).
 */
#define KFT_LS_KEY_MAX 64 /* "metadata" with every letter as \uXXXX is 48 */

enum ls_state {
	LS_START,     /* before the page's '{' */
	LS_FIRST_KEY, /* a key or '}' */
	LS_NEXT_KEY,  /* a key */
	LS_KEY,       /* inside a key's quotes */
	LS_COLON,
	LS_VALUE,       /* before a top-level value */
	LS_STRING,      /* inside a top-level string value being skipped */
	LS_LITERAL,     /* a number or literal */
	LS_CAPTURE,     /* inside an object or array being gathered */
	LS_AFTER_VALUE, /* ',' or '}' */
	LS_FIRST_ITEM,  /* '{' or ']' */
	LS_NEXT_ITEM,   /* '{' */
	LS_AFTER_ITEM,  /* ',' or ']' */
	LS_END,         /* only white space may follow */
	LS_FAILED,
};

enum ls_role { LS_OTHER, LS_ITEMS, LS_METADATA };

typedef struct kft_kube_list_stream {
	int (*on_item)(void *, json_t *);
	void *ctx;
	kft_kube *kube; /* for warnings; NULL: none */
	const char *what;
	kft_error *err;
	json_t *metadata;
	enum ls_state state;
	enum ls_role role; /* of the value being read */
	int in_item;       /* the capture is an element of items */
	int esc, in_str;   /* string state inside keys, strings and captures */
	int depth;         /* of the capture */
	int over;          /* the capture outgrew the bound: skipped */
	size_t item_no;    /* items seen, for messages */
	char key[KFT_LS_KEY_MAX + 1];
	size_t key_len;
	int key_long, key_escaped;
	char lit[8];
	size_t lit_len;
	kft_strbuf buf; /* the capture */
	int rc;
} kft_kube_list_stream;

void kft_kube_list_stream_init(kft_kube_list_stream *ls, kft_kube *kube, const char *what,
                               int (*on_item)(void *ctx, json_t *item), void *ctx, kft_error *err);
int kft_kube_list_stream_feed(kft_kube_list_stream *ls, const char *data, size_t len);
int kft_kube_list_stream_end(kft_kube_list_stream *ls, json_t **metadata);

/* A response body growing up to a bound. */
typedef struct kft_kube_body {
	kft_strbuf text;
	size_t max;
	int too_big;
} kft_kube_body;

/* One prepared request; see kft_kube_do. */
typedef struct kft_kube_req {
	const char *method;       /* GET POST PUT PATCH DELETE */
	const char *path;         /* "/api/v1/..." with query */
	const char *content_type; /* NULL when no body */
	const char *body;
	size_t body_len;
	const atomic_int *stop; /* NULL, or ends the request as kft_kube_cancel */
	/* NULL, or where a 2xx body goes as it arrives instead of being kept
	 * (out is then left NULL): list pages are read item by item. A
	 * non-zero return ends the transfer and is kft_kube_do's result (err
	 * set by the sink). A request whose body reached the sink is never
	 * retried: the caller has seen part of it. */
	int (*sink)(void *ctx, const char *data, size_t len);
	void *sink_ctx;
	const char *accept; /* NULL: JSON (KFT_KUBE_ACCEPT_JSON) */
} kft_kube_req;

/* Accept headers: plain JSON, and metadata only for lists and watches
 * (with JSON as the fallback of a server that cannot). */
#define KFT_KUBE_ACCEPT_JSON "application/json, */*"
#define KFT_KUBE_ACCEPT_META_LIST                                                                  \
	"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"
#define KFT_KUBE_ACCEPT_META                                                                       \
	"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"

/*
 * Performs req with rate limiting, auth, retries and error mapping; on 2xx
 * parses the body into *out (NULL for an empty body), or hands it over in
 * req->raw. Returns 0 or a status.
 */
int kft_kube_do(kft_kube *kube, const kft_kube_req *req, json_t **out, kft_error *err);

/* Takes a configured easy handle for `url` (auth, TLS, headers not set).
 * Give it back with kft_kube_handle_put. NULL on allocation failure. */
CURL *kft_kube_handle_get(kft_kube *kube);
void kft_kube_handle_put(kft_kube *kube, CURL *h);

/* Sets TLS, auth, user agent and proxy options on h; *headers gets the list
 * to free with curl_slist_free_all after the transfer. */
int kft_kube_handle_setup(kft_kube *kube, CURL *h, const char *url, const char *content_type,
                          const char *accept, struct curl_slist **headers, kft_error *err);

/* Makes the next request read the token file again (after a 401). */
void kft_kube_token_expire(kft_kube *kube);

/* Waits for the rate limiter of the resource `path` ("/api/v1/...", query
 * allowed) belongs to: the client's one bucket, or that resource's with
 * rate_per_resource. Returns 1 (the token given back) when the client is
 * canceled or stop (may be NULL) is set meanwhile, else 0. */
int kft_kube_rate_wait(kft_kube *kube, const char *path, const atomic_int *stop);

/* The bucket key of an API path: "group/version/resource" ("/v1/pods" for
 * the core group); the status and other subresources count as their
 * resource. Writes "" when the path is not an API resource path. */
void kft_kube_rate_key(const char *path, char *key, size_t size);

/* Tells the observer, if any, of one exchange (code 0: no answer). */
void kft_kube_observe(kft_kube *kube, const char *method, long code);

/* 1 when the client is canceled or stop (may be NULL) is set. */
int kft_kube_canceled(kft_kube *kube, const atomic_int *stop);

/* Sleeps ms, waking within 50 ms of kft_kube_canceled; returns it. */
int kft_kube_sleep(kft_kube *kube, long ms, const atomic_int *stop);

/* Maps an HTTP error answer (status code, body) to a kft_status with the
 * server's message. `what` ("GET URL") prefixes messages that are not the
 * server's own. */
int kft_kube_map_status(long code, const char *body, size_t len, const char *what, kft_error *err);

/* Builds "/api/v1/namespaces/NS/RESOURCE[/NAME][/SUB]" (group "" is core)
 * into a heap string; ns ignored for cluster-scoped kinds, NULL ns = all.
 * NULL with err filled for a bad name (empty, ".", "..", containing '/'). */
char *kft_kube_path(const kft_gvr *gvr, const char *ns, const char *name, const char *sub,
                    kft_error *err);

/* Appends "key=percent-encoded(value)" to a path being built, after '?' or
 * '&'. Allocation failure is sticky in the strbuf. */
struct kft_strbuf;
void kft_kube_query(struct kft_strbuf *b, const char *key, const char *value);

/* Sets apiVersion and kind from gvr on obj when they are missing, or when
 * they are a metadata-only answer's (meta.k8s.io/v1 PartialObjectMetadata). */
void kft_kube_set_type(json_t *obj, const kft_gvr *gvr);

/* The current time as RFC 3339 "2006-01-02T15:04:05Z" into buf (>= 21 bytes);
 * returns Unix nanoseconds. */
long long kft_kube_now(char *buf, size_t n);

#endif
