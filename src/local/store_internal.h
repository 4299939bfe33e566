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

#include "kftrainer/store.h"

/* sql must be a string constant (its address keys the statement cache). */
int kft_store_prepare(kft_store *s, const char *sql, sqlite3_stmt **st, kft_error *err);
void kft_store_release(kft_store *s, sqlite3_stmt *st);
int kft_store_db_fail(kft_store *s, kft_error *err, const char *what);
sqlite3 *kft_store_db(kft_store *s);

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

/* Hands message to the warn hook (kft_store_set_warn), if any. */
void kft_store_warn(kft_store *s, const char *message);

#endif
