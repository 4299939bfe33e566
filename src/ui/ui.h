/*
 * ui.h - `kftrainer ui`: a dashboard over the local engine's state (internal;
 * the CLI's ui verb is its only caller; guide: docs/ui.md).
 *
 * A small HTTP/1.1 server (server.c) serves one page whose assets are
 * embedded in the binary at build time (assets.h), and a JSON API over the
 * same state directory every `kftrainer` verb uses (api.c): the jobs, a
 * job's pods, events, objects, logs and reported metrics, the runtimes, a
 * render preview, and suspend/resume/delete. Lists and job pages follow
 * changes through server-sent events; logs stream from their files. With
 * kft_ui_opts.kube the same API serves a cluster's TrainJobs instead
 * (cluster.c).
 *
 * What needs the CLI's own pieces (a job's one-word phase and node count as
 * `get` shows them, the runtimes as `runtimes` finds them, the render
 * pipeline's front half) is asked of hooks the verb supplies, so each rule
 * keeps one home. Hooks are called from several threads, one call at a time
 * for runtimes and render (the server serialises them), concurrently for
 * job_row (each thread passes its own kft_local).
 *
 * Safety: a loopback address by default, and a token on every address
 * (printed at start in the page's address; a request without it is
 * refused with 401): the state directory is private to its user, and so is
 * its dashboard. On loopback the Host must be a loopback name (no DNS
 * rebinding). Actions are POSTs carrying the server's CSRF token in
 * X-KFT-CSRF and, when the browser sends one, an Origin that is the
 * server's (request.c says which). Secret values are never sent.
 */
#ifndef KFT_UI_UI_H
#define KFT_UI_UI_H

#include <jansson.h>
#include <stdbool.h>

#include "kftrainer/error.h"
#include "local/local.h"

typedef struct kft_ui_hooks {
	void *ctx;
	/* The cells `get` shows for job (borrowed): {"status", "nodes",
	 * "restarts"}; a new reference, NULL on ENOMEM. */
	json_t *(*job_row)(void *ctx, kft_local *l, const json_t *job);
	/* The runtimes TrainJobs resolve against, checked and defaulted, as
	 * a new array; *problems (malloc'd, may be NULL) the field errors of
	 * those left out. 0 or a negative kft_status. */
	int (*runtimes)(void *ctx, json_t **out, char **problems);
	/* What trainjob (borrowed, as the user wrote it) becomes: the objects
	 * `render` prints, a new array in *objects; or the field errors
	 * `validate` prints in *problems (malloc'd) and a non-zero return. */
	int (*render)(void *ctx, const json_t *trainjob, json_t **objects, char **problems);
	/* The same against the runtimes given (borrowed; a cluster's) instead
	 * of those `runtimes` finds. NULL: no preview in cluster mode. */
	int (*render_with)(void *ctx, const json_t *trainjob, const json_t *runtimes,
	                   json_t **objects, char **problems);
} kft_ui_hooks;

typedef struct kft_ui_opts {
	const char *listen;    /* HOST:PORT; NULL: KFT_UI_DEFAULT_LISTEN; port 0 picks one */
	const char *state_dir; /* NULL: kft_store_default_dir() */
	/* NULL: made (32 hex digits); else 1 to 64 letters, digits, '-' or '_' */
	const char *token;
	/* The address a browser uses when it is not the listener's (a
	 * TLS-terminating proxy): "https://host[:port]" or "http://...", no
	 * path. Printed instead, and its origin and host accepted. NULL: none */
	const char *public_url;
	/* Cluster mode: the TrainJobs of this API server instead of the local
	 * engine's (borrowed; must outlive the server). */
	struct kft_kube *kube;
	const char *namespace; /* with kube: one namespace; NULL: every namespace */
	kft_ui_hooks hooks;
} kft_ui_opts;

#define KFT_UI_DEFAULT_LISTEN "127.0.0.1:8265"

typedef struct kft_ui kft_ui;

/* Binds the address and starts serving on threads of its own; in cluster
 * mode first lists the cluster's TrainJobs. Errors: KFT_EINVAL (a
 * malformed address, token or public URL; the message names which),
 * KFT_EIO (cannot bind), KFT_EUNAVAILABLE (the cluster cannot be read),
 * KFT_ENOMEM. */
int kft_ui_start(const kft_ui_opts *o, kft_ui **out, kft_error *err);

/* The page's address with its token ("http://127.0.0.1:8265/?token=...",
 * or the public URL's), borrowed from u. */
const char *kft_ui_url(const kft_ui *u);

/* Whether the server listens on a loopback address only. */
bool kft_ui_loopback(const kft_ui *u);

/* Stops accepting, ends every stream and waits for the threads. NULL ok. */
void kft_ui_stop(kft_ui *u);

/* ---- internal to src/ui ---------------------------------------------------- */

/* One embedded asset (generated at build time from src/ui/assets and the
 * charting library; see cmake/ui_assets.cmake). */
typedef struct kft_ui_asset {
	const char *path; /* "/app.js" */
	const char *type; /* Content-Type */
	const unsigned char *data;
	unsigned long len;
} kft_ui_asset;

extern const kft_ui_asset kft_ui_assets[];
extern const unsigned long kft_ui_nassets;
/* Whether the charting library was found at build time. */
extern const int kft_ui_have_charts;

#endif
