/*
 * ui_internal.h - what the dashboard's files share (internal to src/ui).
 *
 * The files, each using only those below it:
 *   server.c        start and stop: the server core with the dashboard's
 *                   limits, who may ask (request.c), a request to api.c
 *   api.c           the routes: documents from the job source, watched as
 *                   events; YAML; logs; runtimes and the render preview
 *   local_source.c  the job source over the local engine
 *   cluster.c       the job source over a cluster's API server
 *   documents.c     what both sources' documents share (rows, commands,
 *                   Secrets redacted)
 *   reply.c         answering one request (the server core's streams)
 *   request.c       who may ask; the API path's segments (pure, fuzzed)
 */
#ifndef KFT_UI_INTERNAL_H
#define KFT_UI_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "http/server.h"
#include "ui/ui.h"

/* The largest request body taken (a TrainJob to preview). */
#define KFT_UI_BODY_MAX (1024 * 1024)

/* Reports kept per job in the history (as the local store keeps). */
#define KFT_UI_HISTORY_MAX 1000

typedef struct kft_ui_source kft_ui_source;
typedef struct kft_ui_cluster kft_ui_cluster;

/* What a request may use of its server: set at start, read-only after. */
typedef struct kft_ui_env {
	const kft_ui_source *source;
	kft_ui_cluster *cluster; /* the cluster source's state; NULL for the local engine */
	const kft_ui_hooks *hooks;
	pthread_mutex_t *hooks_mu; /* serialises the runtimes and render hooks */
	const char *state_dir;
	const char *csrf; /* the per-server token every action carries */
} kft_ui_env;

/* One request being answered, on one of the server core's workers. */
typedef struct kft_ui_conn {
	const kft_ui_env *env;
	kft_http_conn *http;
	const char *method;
	const char *path;   /* percent-decoded, without the query */
	const char *query;  /* the raw query after '?', "" when none */
	const char *fields; /* the head's field lines */
	const char *body;   /* a POST's body, NUL-terminated (NULL: none) */
	size_t body_len;
	kft_local *local; /* the local source's, opened on first use, closed with the request */
} kft_ui_conn;

static inline const kft_ui_hooks *kft_ui_hooks_of(const kft_ui_conn *c)
{
	return c->env->hooks;
}

static inline void kft_ui_hooks_lock(kft_ui_conn *c)
{
	pthread_mutex_lock(c->env->hooks_mu);
}

static inline void kft_ui_hooks_unlock(kft_ui_conn *c)
{
	pthread_mutex_unlock(c->env->hooks_mu);
}

static inline const char *kft_ui_csrf(const kft_ui_conn *c)
{
	return c->env->csrf;
}

/* The cluster source's state, or NULL (the local engine). */
static inline kft_ui_cluster *kft_ui_cluster_of(const kft_ui_conn *c)
{
	return c->env->cluster;
}

/* ---- answering (reply.c) --------------------------------------------------------- */

/* Sends all of buf. 0, or -1 when the client is gone or too slow. */
int kft_ui_send(kft_ui_conn *c, const void *buf, size_t len);

/* A whole answer with Content-Length; extra is more header lines (each
 * ending "\r\n") or NULL. 0 or -1 as kft_ui_send. */
int kft_ui_respond(kft_ui_conn *c, int code, const char *type, const char *body, size_t len,
                   const char *extra);

/* A JSON answer; body is stolen (NULL: 500). */
int kft_ui_respond_json(kft_ui_conn *c, int code, json_t *body);

/* {"error": message} with code. */
int kft_ui_respond_error(kft_ui_conn *c, int code, const char *message);

/* {"error": err's message} with the status err's code means: 404 not
 * found, 409 invalid or changed meanwhile, 403 not allowed, 503
 * unreachable, else 500 (a cluster's refusals keep their meaning). */
int kft_ui_respond_failure(kft_ui_conn *c, const kft_error *err);

/* The head of an answer whose body runs until the connection closes (a
 * stream of events or a file being followed). */
int kft_ui_start_stream(kft_ui_conn *c, const char *type, const char *extra);

/* Waits up to ms. 0 when the time passed, -1 when the client closed its
 * side or the server is stopping: a stream's cue to end. */
int kft_ui_wait(kft_ui_conn *c, int ms);

/* The value of query parameter name of c (kft_http_query_value). */
bool kft_ui_query(const kft_ui_conn *c, const char *name, char *buf, size_t size);

/* A log being sent: its stream (text/plain, with `extra` header lines)
 * starts on the first write, so a source can still refuse before. */
typedef struct kft_ui_log {
	kft_ui_conn *c;
	const char *extra; /* Content-Disposition of a download, or NULL */
	bool started;
} kft_ui_log;

/* Appends data to the log's answer. 0, or -1 when the client is gone. */
int kft_ui_log_write(kft_ui_log *out, const void *data, size_t len);

/* ---- documents both sources build (documents.c) ------------------------------------ */

/* A row of the jobs list: the TrainJob's own columns (namespace, name,
 * created, runtime, progress, remaining, reported) added to cells, which
 * the source filled with status, nodes and restarts. Returns cells (stolen;
 * NULL stays NULL). */
json_t *kft_ui_row(const json_t *job, json_t *cells);

/* What each step's containers run, from the JobSet among objects:
 * [{step, container, image, command, args, workingDir}], a new array. */
json_t *kft_ui_step_commands(const json_t *objects);

/* Secrets' values in objects replaced by "<redacted>" (and kubectl's copy
 * of the whole Secret in its last-applied annotation). */
void kft_ui_redact(json_t *objects);

/* ---- OptimizationJobs (optimizations.c) -------------------------------------------- */

/* The documents of /api/optimizations and /api/optimizations/NS/NAME (a
 * document function, as watch() takes one; the list ignores ns and name).
 * NULL on failure (err set; KFT_ENOTFOUND for a search that is gone). */
json_t *kft_ui_optimizations_doc(kft_ui_conn *c, const char *ns, const char *name, kft_error *err);
json_t *kft_ui_optimization_doc(kft_ui_conn *c, const char *ns, const char *name, kft_error *err);

/* Answers /api/optimizations[/NS/NAME[/observations|/delete]]: s[0..n) are
 * the segments after "optimizations". */
void kft_ui_optimizations_route(kft_ui_conn *c, char **s, int n, bool get);

/* ---- the job source ------------------------------------------------------------------
 * Where the jobs come from: the local engine (local_source.c) or a cluster
 * (cluster.c, `kftrainer ui --kubeconfig`), asked one question per
 * function, as kft_backend answers the framework. Both build the same
 * documents, so the page does not know which it shows but for the header.
 * Every function runs on the request's worker; those returning a document
 * return a new reference, or NULL with err set (KFT_ENOTFOUND for a job
 * that is gone). */

/* What a log request asks for. */
typedef struct kft_ui_log_req {
	const char *ns, *name, *step;
	long index;
	bool follow;          /* and what is written after, until the pod ends */
	bool tail;            /* only the end: the local engine's last tail_bytes, a
	                       * cluster's last lines (its API tails by lines) */
	long long tail_bytes; /* with tail */
} kft_ui_log_req;

struct kft_ui_source {
	const char *mode; /* "local" or "cluster" */
	/* The one namespace shown, or NULL (all). Borrowed. */
	const char *(*scope)(kft_ui_conn *c);
	/* {"items": [row]} */
	json_t *(*jobs)(kft_ui_conn *c, kft_error *err);
	/* {"row", "trainjob", "pods", "steps", "events", "lastReport"} */
	json_t *(*job)(kft_ui_conn *c, const char *ns, const char *name, kft_error *err);
	/* The TrainJob first, then the objects it made, as copies (Secrets not
	 * yet redacted). 0 or an error. */
	int (*objects)(kft_ui_conn *c, const char *ns, const char *name, json_t **out,
	               kft_error *err);
	/* {"items": [{"id", "recorded", "trainerStatus"}]} of reports after id */
	json_t *(*metrics)(kft_ui_conn *c, const char *ns, const char *name, long long after,
	                   kft_error *err);
	/* "suspend", "resume" or "delete" (else KFT_ENOTFOUND). 0 or an error. */
	int (*action)(kft_ui_conn *c, const char *ns, const char *name, const char *verb,
	              kft_error *err);
	/* The runtimes TrainJobs resolve against, a new array; *problems
	 * (malloc'd, may be NULL) says what was left out or why none could be
	 * read. 0, or non-zero when none could be read. */
	int (*runtimes)(kft_ui_conn *c, json_t **out, char **problems);
	/* What trainjob (borrowed, as the user wrote it; the source may fill
	 * its namespace) becomes: *objects, or the field errors in *problems
	 * (malloc'd) and a non-zero return. */
	int (*render)(kft_ui_conn *c, json_t *trainjob, json_t **objects, char **problems);
	/* Writes a pod's log to out as req asks. 0 when done (the client may
	 * have left), or an error before anything was written (err set:
	 * KFT_ENOTFOUND for a pod or log that is not there). */
	int (*log)(kft_ui_conn *c, const kft_ui_log_req *req, kft_ui_log *out, kft_error *err);
};

extern const kft_ui_source kft_ui_local_source;
extern const kft_ui_source kft_ui_cluster_source;

/* The local engine for this request (local_source.c). NULL on failure (err
 * set). */
kft_local *kft_ui_local(kft_ui_conn *c, kft_error *err);

/* ---- the cluster source's life (cluster.c) ---------------------------------------- */

struct kft_kube;

/* Starts watching ns (NULL or "": all namespaces) through kube (borrowed,
 * must outlive it) and waits for the TrainJobs' first list. Errors:
 * KFT_EUNAVAILABLE (cannot list TrainJobs; the message says why),
 * KFT_ENOMEM. */
int kft_ui_cluster_start(struct kft_kube *kube, const char *ns, kft_ui_cluster **out,
                         kft_error *err);
void kft_ui_cluster_stop(kft_ui_cluster *cl);

/* ---- the routes (api.c) ---------------------------------------------------------------- */

/* Answers c's request (method, path, query, body), authorised. */
void kft_ui_api(kft_ui_conn *c);

/* A document of (ns, name), as the source's job and jobs are. */
typedef json_t *(*kft_ui_doc_fn)(kft_ui_conn *c, const char *ns, const char *name, kft_error *err);

/* Sends doc(c, ns, name) as a server-sent event whenever its text changes,
 * until the client leaves or the server stops; a document that is gone
 * ends the stream with an event saying so. */
void kft_ui_watch(kft_ui_conn *c, kft_ui_doc_fn doc, const char *ns, const char *name);

/* ---- who may ask (request.c: pure, fuzzed by fuzz_ui_request) ---------------- */

/* The longest token taken. */
#define KFT_UI_TOKEN_MAX 64

typedef struct kft_ui_gate {
	const char *token;  /* every request needs it */
	const char *csrf;   /* every action needs it in X-KFT-CSRF */
	const char *cookie; /* the token cookie's name */
	bool loopback;      /* the server listens on loopback: Host must be a loopback name */
	const char *public_origin; /* --public-url's "scheme://host[:port]", or NULL */
	const char *public_host;   /* its "host[:port]", or NULL */
} kft_ui_gate;

/* Whether r may go on (0), else the refusal in *a and its code: 403 (a
 * Host that is not ours on loopback, an action without the CSRF token or
 * from another origin), 401 (no token), 303 (a page load with ?token=: the
 * cookie and a redirect to "/"), 413 (a body over KFT_UI_BODY_MAX, told
 * only to who has the token). */
int kft_ui_admit(const kft_ui_gate *g, const kft_http_req *r, kft_http_answer *a);

/* Splits path into at most max '/'-separated segments in seg, pointing into
 * *copy (a copy the caller frees, even on failure). The count, or -1 for an
 * empty segment, more than max segments or no memory. A trailing '/' is
 * passed over. */
int kft_ui_split(const char *path, char **copy, char **seg, int max);

#endif
