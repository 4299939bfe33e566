/*
 * ui_internal.h - what server.c gives the request handlers of api.c
 * (internal to src/ui).
 */
#ifndef KFT_UI_INTERNAL_H
#define KFT_UI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "ui/ui.h"

/* One request being answered, on a thread of its own. */
typedef struct kft_ui_conn {
	kft_ui *ui;
	int fd;
	char method[16];
	char *path;         /* percent-decoded, without the query */
	const char *query;  /* the raw query after '?', "" when none */
	const char *fields; /* the head's field lines */
	char *body;         /* a POST's body, NUL-terminated (NULL: none) */
	size_t body_len;
	kft_local *local; /* opened on first use, closed with the connection */
} kft_ui_conn;

/* The largest request body taken (a TrainJob to preview). */
#define KFT_UI_BODY_MAX (1024 * 1024)

/* The local engine for this connection's thread. NULL on failure (err set). */
kft_local *kft_ui_local(kft_ui_conn *c, kft_error *err);

/* The hooks; kft_ui_hooks_lock/unlock serialise runtimes and render. */
const kft_ui_hooks *kft_ui_hooks_of(const kft_ui_conn *c);
void kft_ui_hooks_lock(kft_ui_conn *c);
void kft_ui_hooks_unlock(kft_ui_conn *c);

/* The per-server CSRF token the page sends back with every action. */
const char *kft_ui_csrf(const kft_ui_conn *c);

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

/* The head of an answer whose body runs until the connection closes (a
 * stream of events or a file being followed). */
int kft_ui_start_stream(kft_ui_conn *c, const char *type, const char *extra);

/* Waits up to ms. 0 when the time passed, -1 when the client closed its
 * side or the server is stopping: a stream's cue to end. */
int kft_ui_wait(kft_ui_conn *c, int ms);

/* The value of query parameter name of c (kft_ui_query_value). */
bool kft_ui_query(const kft_ui_conn *c, const char *name, char *buf, size_t size);

/* ---- reading requests (request.c: pure, fuzzed by fuzz_ui_request) ---------- */

typedef struct kft_ui_request {
	char method[16];
	char *head;         /* a copy of the head; query and fields point into it */
	char *path;         /* the target percent-decoded, without the query */
	const char *query;  /* the raw query after '?', "" when none */
	const char *fields; /* the field lines */
	char host[256];
	long long content_length; /* -1 when not sent */
} kft_ui_request;

/* Reads the head buf[0..len) (through its blank line) into r. 0, or the
 * HTTP status to refuse it with: 400 (a malformed request line or field, a
 * NUL byte, no Host, a bad Content-Length), 505 (not HTTP/1.x), 500 (no
 * memory). r is filled as far as it got either way: free it with
 * kft_ui_request_free. */
int kft_ui_request_parse(const char *buf, size_t len, kft_ui_request *r);
void kft_ui_request_free(kft_ui_request *r);

/* The value of parameter name in query (a raw query string), percent- and
 * '+'-decoded, into buf (size bytes, NUL-terminated); false when absent,
 * too long, or decoding to a NUL byte. */
bool kft_ui_query_value(const char *query, const char *name, char *buf, size_t size);

/* The value of cookie name in the Cookie field of fields into buf; false
 * when absent or too long. */
bool kft_ui_cookie(const char *fields, const char *name, char *buf, size_t size);

/* Splits path into at most max '/'-separated segments in seg, pointing into
 * *copy (a copy the caller frees, even on failure). The count, or -1 for an
 * empty segment, more than max segments or no memory. A trailing '/' is
 * passed over. */
int kft_ui_split(const char *path, char **copy, char **seg, int max);

/* api.c: answers c's request (method, path, query, body), authorised. */
void kft_ui_api(kft_ui_conn *c);

/* api.c: what each step's containers run, from the JobSet among objects:
 * [{step, container, image, command, args, workingDir}], a new array. */
json_t *kft_ui_step_commands(const json_t *objects);

/* ---- OptimizationJobs (optimizations.c) -------------------------------------------- */

/* The documents of /api/optimizations and /api/optimizations/NS/NAME (a
 * document function, as watch() takes one; the list ignores ns and name).
 * NULL on failure (err set; KFT_ENOTFOUND for a search that is gone). */
json_t *kft_ui_optimizations_doc(kft_ui_conn *c, const char *ns, const char *name, kft_error *err);
json_t *kft_ui_optimization_doc(kft_ui_conn *c, const char *ns, const char *name, kft_error *err);

/* Answers /api/optimizations[/NS/NAME[/observations|/delete]]: s[0..n) are
 * the segments after "optimizations". */
void kft_ui_optimizations_route(kft_ui_conn *c, char **s, int n, bool get);

/* The server-sent events of doc(c, ns, name) whenever its text changes
 * (api.c). */
typedef json_t *(*kft_ui_doc_fn)(kft_ui_conn *c, const char *ns, const char *name, kft_error *err);
void kft_ui_watch(kft_ui_conn *c, kft_ui_doc_fn doc, const char *ns, const char *name);

/* ---- the cluster source (cluster.c) ---------------------------------------------
 * With `kftrainer ui --kubeconfig`, api.c asks these instead of the local
 * store; each builds the document its local twin does (see api.c). */

/* Reports kept per job in the history (as the local store keeps). */
#define KFT_UI_HISTORY_MAX 1000

struct kft_kube;
typedef struct kft_ui_cluster kft_ui_cluster;

/* The source of c's server, or NULL (the local engine). */
kft_ui_cluster *kft_ui_cluster_of(const kft_ui_conn *c);

/* Starts watching ns (NULL or "": all namespaces) through kube (borrowed,
 * must outlive it) and waits for the TrainJobs' first list. Errors:
 * KFT_EUNAVAILABLE (cannot list TrainJobs; the message says why),
 * KFT_ENOMEM. */
int kft_ui_cluster_start(struct kft_kube *kube, const char *ns, kft_ui_cluster **out,
                         kft_error *err);
void kft_ui_cluster_stop(kft_ui_cluster *cl);

/* The one namespace watched, or NULL (all). Borrowed. */
const char *kft_ui_cluster_scope(const kft_ui_cluster *cl);

/* The namespace a TrainJob naming none is taken to be in. Borrowed. */
const char *kft_ui_cluster_namespace(const kft_ui_cluster *cl);

/* {"items": [row]}; NULL on failure (err set). */
json_t *kft_ui_cluster_jobs(kft_ui_cluster *cl, kft_error *err);

/* One job's document; NULL with KFT_ENOTFOUND when it is gone. */
json_t *kft_ui_cluster_job(kft_ui_cluster *cl, const char *ns, const char *name, kft_error *err);

/* {"items": [{"id", "recorded", "trainerStatus"}]} of reports after id. */
json_t *kft_ui_cluster_metrics(kft_ui_cluster *cl, const char *ns, const char *name,
                               long long after, kft_error *err);

/* The TrainJob, its JobSet, Jobs, pods, and the ConfigMaps and Secrets it
 * owns, as a new array of copies (Secrets not yet redacted). */
int kft_ui_cluster_objects(kft_ui_cluster *cl, const char *ns, const char *name, json_t **out,
                           kft_error *err);

/* suspend / resume (spec.suspend patched) / delete. */
int kft_ui_cluster_action(kft_ui_cluster *cl, const char *ns, const char *name, const char *verb,
                          kft_error *err);

/* The ClusterTrainingRuntimes and the namespace's TrainingRuntimes. */
int kft_ui_cluster_runtimes(kft_ui_cluster *cl, json_t **out, kft_error *err);

/* Answers a log request for pod step/index of a job from its log
 * subresource (?tail, ?follow, ?download as for the local engine). */
void kft_ui_cluster_log(kft_ui_conn *c, kft_ui_cluster *cl, const char *ns, const char *name,
                        const char *step, long index);

#endif
