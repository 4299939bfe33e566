/*
 * store_internal.h - the store's SQLite plumbing, for the files that keep
 * tables of their own in the same database (internal to src/local/):
 * optstore.c (OptimizationJobs). The schema and its migrations stay in
 * store.c, so one list says what a database of each version holds.
 *
 * The helpers are store.c's own (see its header comment): statements are
 * prepared once per connection from string constants and must each be
 * ended with kft_store_release; failures are KFT_EIO naming the database.
 */
#ifndef KFT_LOCAL_STORE_INTERNAL_H
#define KFT_LOCAL_STORE_INTERNAL_H

#include <stdbool.h>

#include <jansson.h>
#include <sqlite3.h>

#include "local/store.h"

/* sql must be a string constant (its address keys the statement cache). */
int kft_store_prepare(kft_store *s, const char *sql, sqlite3_stmt **st, kft_error *err);
void kft_store_release(kft_store *s, sqlite3_stmt *st);
int kft_store_db_fail(kft_store *s, kft_error *err, const char *what);
sqlite3 *kft_store_db(kft_store *s);

/* A kind of object kept by name (namespace, name), for the helpers below:
 * how refusals name it ("a TrainJob name is required", `RESOURCE "x" not
 * found`). */
typedef struct kft_store_kind {
	const char *kind;     /* "TrainJob" */
	const char *a_kind;   /* "a TrainJob" */
	const char *resource; /* "trainjobs.trainer.kubeflow.org" */
} kft_store_kind;

/* KFT_ENOTFOUND, `RESOURCE "name" not found` as the API server says it. */
int kft_store_not_found_named(const kft_store_kind *k, const char *name, kft_error *err);
/* Prepares sql (a string constant) with ?1 = namespace ("default" when
 * NULL or empty), ?2 = name; an empty name is KFT_EINVAL. */
int kft_store_prepare_named(kft_store *s, const kft_store_kind *k, const char *sql, const char *ns,
                            const char *name, sqlite3_stmt **st, kft_error *err);
/* Steps a write addressed at one object and releases st; no row changed is
 * KFT_ENOTFOUND. */
int kft_store_finish_named_write(kft_store *s, const kft_store_kind *k, sqlite3_stmt *st,
                                 const char *name, kft_error *err);
/* Appends each row's column 0 (JSON text) to arr, skipping NULLs: with a
 * LEFT JOIN from the object's table, one NULL row means "exists, none", no
 * row KFT_ENOTFOUND. Does not release st. */
int kft_store_collect_named(kft_store *s, const kft_store_kind *k, sqlite3_stmt *st,
                            const char *name, json_t *arr, kft_error *err);
/* One stored row (its columns as the caller's SELECT lists them, namespace
 * and name first) into a new object; KFT_EPARSE for JSON that cannot be
 * read. */
typedef int (*kft_store_row_fn)(sqlite3_stmt *st, json_t **out, kft_error *err);
/* The object sql (?1 = namespace, ?2 = name) selects, or KFT_ENOTFOUND. */
int kft_store_get_named(kft_store *s, const kft_store_kind *k, const char *sql, const char *ns,
                        const char *name, kft_store_row_fn row, json_t **out, kft_error *err);
/* Every object sql (?1 = namespace, or NULL for all) selects, as a new
 * array; a row row() cannot read (KFT_EPARSE) is left out and reported to
 * the warn hook. */
int kft_store_list_named(kft_store *s, const kft_store_kind *k, const char *sql, const char *ns,
                         kft_store_row_fn row, json_t **out, kft_error *err);
/* The supervisor recorded on the object sql addresses (?1 = namespace,
 * ?2 = name): set's sql is an UPDATE with ?3 = pid, ?4 = its start time in
 * /proc ticks (stored as 0 when pid is 0); get's a SELECT of the pid and
 * the ticks, both 0 when none was recorded. Errors as the helpers above:
 * KFT_EINVAL, KFT_ENOTFOUND, KFT_EIO. */
int kft_store_set_supervisor_named(kft_store *s, const kft_store_kind *k, const char *sql,
                                   const char *ns, const char *name, int pid, long long ticks,
                                   kft_error *err);
int kft_store_get_supervisor_named(kft_store *s, const kft_store_kind *k, const char *sql,
                                   const char *ns, const char *name, int *pid, long long *ticks,
                                   kft_error *err);
/* An RFC 3339 time cut to the second, as Kubernetes prints object times. */
json_t *kft_store_seconds_only(const char *ts);

/* JSON in and out of text columns (bounded by KFT_STORE_MAX_JSON; NUL in
 * strings kept). *out is malloc'd / a new reference. */
int kft_store_dump_json(const json_t *j, char **out, kft_error *err);
int kft_store_load_json(const char *text, json_t **out, kft_error *err);

/* A new RFC 4122 v4 uid. */
int kft_store_new_uid(char out[37], kft_error *err);

/* A multi-statement write joins the caller's kft_store_begin or opens its
 * own transaction (*own); own_end commits or rolls back what own_begin
 * opened and passes rc through. */
int kft_store_own_begin(kft_store *s, bool *own, kft_error *err);
int kft_store_own_end(kft_store *s, bool own, int rc, kft_error *err);

#endif
