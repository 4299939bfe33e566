/*
 * optstore.c - OptimizationJobs in the local store (see optstore.h).
 *
 * The tables are created by store.c's migration 6 -> 7; this file keeps
 * to store.c's ways (store_internal.h): every value a bound parameter,
 * statements from string constants through the connection's cache,
 * single-row changes addressed by namespace and name so that "no row
 * changed" means "not found", child rows deleted by ON DELETE CASCADE.
 */
#include "local/optstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "local/store_internal.h"
#include "util/rfc3339.h"

#define OPT_RESOURCE "optimizationjobs.trainer.kubeflow.org"
#define OPT_ID       "(SELECT id FROM optimizations WHERE namespace = ?1 AND name = ?2)"

static const kft_store_kind optimization = {
        .kind = "OptimizationJob", .a_kind = "an OptimizationJob", .resource = OPT_RESOURCE};

/* Prepares sql with ?1 = namespace, ?2 = name. */
static int prepare_opt(kft_store *s, const char *sql, const char *ns, const char *name,
                       sqlite3_stmt **st, kft_error *err)
{
	return kft_store_prepare_named(s, &optimization, sql, ns, name, st, err);
}

/* Steps a write addressed at one OptimizationJob; no change: not found. */
static int finish_write(kft_store *s, sqlite3_stmt *st, const char *name, kft_error *err)
{
	return kft_store_finish_named_write(s, &optimization, st, name, err);
}

/* Binds JSON j (NULL: SQL NULL) as text at index i. */
static int bind_json(sqlite3_stmt *st, int i, const json_t *j, kft_error *err)
{
	char *text = NULL;
	int rc = j ? kft_store_dump_json(j, &text, err) : 0;
	if (rc == 0)
		sqlite3_bind_text(st, i, text, -1, SQLITE_TRANSIENT);
	free(text);
	return rc;
}

/* ---- create ------------------------------------------------------------------- */

static int bind_create(sqlite3_stmt *st, const json_t *opt, const kft_opt_exec *e, const char *uid,
                       kft_error *err)
{
	char now[32];
	json_t *body = json_deep_copy(opt);
	if (!body)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_object_del(body, "status");
	kft_rfc3339_now_micro(now);
	sqlite3_bind_text(st, 3, uid, -1, SQLITE_TRANSIENT);
	int rc = bind_json(st, 4, body, err);
	if (rc == 0)
		rc = bind_json(st, 5, json_object_get(opt, "status"), err);
	if (rc == 0)
		rc = bind_json(st, 6, e->runtime, err);
	if (rc == 0)
		rc = bind_json(st, 7, e->plugins, err);
	sqlite3_bind_text(st, 8, e->workdir, -1, SQLITE_TRANSIENT);
	if (rc == 0)
		rc = bind_json(st, 9, e->base_env, err);
	sqlite3_bind_int(st, 10, e->job_workdir);
	sqlite3_bind_int64(st, 11, e->seed);
	sqlite3_bind_text(st, 12, now, -1, SQLITE_TRANSIENT);
	json_decref(body);
	return rc;
}

int kft_optstore_create(kft_store *s, const json_t *opt, const kft_opt_exec *exec, char **uid_out,
                        kft_error *err)
{
	const json_t *meta = json_object_get(opt, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	sqlite3_stmt *st;
	char uid[37];
	if (uid_out)
		*uid_out = NULL;
	if (!exec || !exec->runtime)
		return kft_error_set(err, KFT_EINVAL, "an OptimizationJob needs its runtime");
	int rc = kft_store_new_uid(uid, err);
	if (rc == 0)
		rc = prepare_opt(
		        s,
		        "INSERT INTO optimizations (namespace, name, uid, body, status, runtime,"
		        " plugins, workdir, base_env, job_workdir, seed, created)"
		        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
		        ns, name, &st, err);
	if (rc)
		return rc;
	rc = bind_create(st, opt, exec, uid, err);
	int step = rc ? SQLITE_DONE : sqlite3_step(st);
	kft_store_release(s, st);
	if (rc)
		return rc;
	if (step == SQLITE_CONSTRAINT)
		return kft_error_set(err, KFT_EINVAL, OPT_RESOURCE " \"%s\" already exists", name);
	if (step != SQLITE_DONE)
		return kft_store_db_fail(s, err, "recording the OptimizationJob");
	if (uid_out && !(*uid_out = strdup(uid)))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

/* ---- reading -------------------------------------------------------------------- */

#define OPT_COLUMNS "namespace, name, uid, body, created, status, deleting"

static int row_to_opt(sqlite3_stmt *st, json_t **out, kft_error *err)
{
	json_t *opt, *status = NULL;
	int rc = kft_store_load_json((const char *)sqlite3_column_text(st, 3), &opt, err);
	if (rc)
		return rc;
	json_t *meta = json_object_get(opt, "metadata");
	if (!json_is_object(meta))
		rc = kft_error_set(err, KFT_EPARSE, "stored OptimizationJob has no metadata");
	if (rc == 0 && sqlite3_column_type(st, 5) != SQLITE_NULL)
		rc = kft_store_load_json((const char *)sqlite3_column_text(st, 5), &status, err);
	if (rc) {
		json_decref(opt);
		return rc;
	}
	json_object_set_new(meta, "namespace",
	                    json_string((const char *)sqlite3_column_text(st, 0)));
	json_object_set_new(meta, "name", json_string((const char *)sqlite3_column_text(st, 1)));
	json_object_set_new(meta, "uid", json_string((const char *)sqlite3_column_text(st, 2)));
	json_object_set_new(meta, "creationTimestamp",
	                    kft_store_seconds_only((const char *)sqlite3_column_text(st, 4)));
	if (sqlite3_column_type(st, 6) != SQLITE_NULL)
		json_object_set_new(
		        meta, "deletionTimestamp",
		        kft_store_seconds_only((const char *)sqlite3_column_text(st, 6)));
	if (status)
		json_object_set_new(opt, "status", status);
	*out = opt;
	return 0;
}

int kft_optstore_get(kft_store *s, const char *ns, const char *name, json_t **out, kft_error *err)
{
	return kft_store_get_named(s, &optimization,
	                           "SELECT " OPT_COLUMNS " FROM optimizations"
	                           " WHERE namespace = ?1 AND name = ?2",
	                           ns, name, row_to_opt, out, err);
}

int kft_optstore_list(kft_store *s, const char *ns, json_t **out, kft_error *err)
{
	return kft_store_list_named(s, &optimization,
	                            "SELECT " OPT_COLUMNS " FROM optimizations"
	                            " WHERE ?1 IS NULL OR namespace = ?1 ORDER BY namespace, name",
	                            ns, row_to_opt, out, err);
}

void kft_opt_exec_free(kft_opt_exec *e)
{
	if (!e)
		return;
	json_decref(e->runtime);
	json_decref(e->plugins);
	json_decref(e->base_env);
	free(e->workdir);
	memset(e, 0, sizeof(*e));
}

/* Column i as JSON into *out (NULL stays NULL). */
static int column_json(sqlite3_stmt *st, int i, json_t **out, kft_error *err)
{
	*out = NULL;
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return 0;
	return kft_store_load_json((const char *)sqlite3_column_text(st, i), out, err);
}

int kft_optstore_exec(kft_store *s, const char *ns, const char *name, kft_opt_exec *out,
                      kft_error *err)
{
	sqlite3_stmt *st;
	memset(out, 0, sizeof(*out));
	int rc = prepare_opt(s,
	                     "SELECT runtime, plugins, workdir, base_env, job_workdir, seed"
	                     " FROM optimizations WHERE namespace = ?1 AND name = ?2",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		const unsigned char *wd = sqlite3_column_text(st, 2);
		rc = column_json(st, 0, &out->runtime, err);
		if (rc == 0)
			rc = column_json(st, 1, &out->plugins, err);
		if (rc == 0)
			rc = column_json(st, 3, &out->base_env, err);
		if (rc == 0 && wd && !(out->workdir = strdup((const char *)wd)))
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
		out->job_workdir = sqlite3_column_int(st, 4) != 0;
		out->seed = sqlite3_column_int64(st, 5);
	} else {
		rc = step == SQLITE_DONE ? kft_store_not_found_named(&optimization, name, err)
		                         : kft_store_db_fail(s, err, "reading the OptimizationJob");
	}
	kft_store_release(s, st);
	if (rc)
		kft_opt_exec_free(out);
	return rc;
}

/* ---- writing ------------------------------------------------------------------- */

int kft_optstore_set_status(kft_store *s, const char *ns, const char *name, const json_t *status,
                            const json_t *cursors, bool finished, kft_error *err)
{
	sqlite3_stmt *st;
	char now[32];
	int rc =
	        prepare_opt(s,
	                    "UPDATE optimizations SET status = ?3, cursors = COALESCE(?4, cursors),"
	                    " finished = CASE WHEN ?5 THEN COALESCE(finished, ?6) ELSE finished END"
	                    " WHERE namespace = ?1 AND name = ?2",
	                    ns, name, &st, err);
	if (rc)
		return rc;
	kft_rfc3339_now_micro(now);
	rc = bind_json(st, 3, status, err);
	if (rc == 0)
		rc = bind_json(st, 4, cursors, err);
	sqlite3_bind_int(st, 5, finished);
	sqlite3_bind_text(st, 6, now, -1, SQLITE_TRANSIENT);
	if (rc) {
		kft_store_release(s, st);
		return rc;
	}
	return finish_write(s, st, name, err);
}

int kft_optstore_cursors(kft_store *s, const char *ns, const char *name, json_t **out,
                         kft_error *err)
{
	sqlite3_stmt *st;
	*out = NULL;
	int rc = prepare_opt(s,
	                     "SELECT cursors FROM optimizations WHERE namespace = ?1 AND name = ?2",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	int step = sqlite3_step(st);
	rc = step == SQLITE_ROW    ? column_json(st, 0, out, err)
	     : step == SQLITE_DONE ? kft_store_not_found_named(&optimization, name, err)
	                           : kft_store_db_fail(s, err, "reading the OptimizationJob");
	kft_store_release(s, st);
	if (rc == 0 && !*out && !(*out = json_object()))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	return rc;
}

int kft_optstore_set_supervisor(kft_store *s, const char *ns, const char *name, int pid,
                                long long ticks, kft_error *err)
{
	return kft_store_set_supervisor_named(
	        s, &optimization,
	        "UPDATE optimizations SET supervisor_pid = ?3, supervisor_start = ?4"
	        " WHERE namespace = ?1 AND name = ?2",
	        ns, name, pid, ticks, err);
}

int kft_optstore_get_supervisor(kft_store *s, const char *ns, const char *name, int *pid,
                                long long *ticks, kft_error *err)
{
	return kft_store_get_supervisor_named(
	        s, &optimization,
	        "SELECT supervisor_pid, supervisor_start FROM optimizations"
	        " WHERE namespace = ?1 AND name = ?2",
	        ns, name, pid, ticks, err);
}

int kft_optstore_mark_deleting(kft_store *s, const char *ns, const char *name, kft_error *err)
{
	sqlite3_stmt *st;
	char now[32];
	int rc = prepare_opt(s,
	                     "UPDATE optimizations SET deleting = COALESCE(deleting, ?3)"
	                     " WHERE namespace = ?1 AND name = ?2",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	kft_rfc3339_now_micro(now);
	sqlite3_bind_text(st, 3, now, -1, SQLITE_TRANSIENT);
	return finish_write(s, st, name, err);
}

int kft_optstore_delete(kft_store *s, const char *ns, const char *name, const char *uid,
                        kft_error *err)
{
	sqlite3_stmt *st;
	int rc = prepare_opt(s,
	                     "DELETE FROM optimizations WHERE namespace = ?1 AND name = ?2"
	                     " AND uid = ?3",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 3, uid, -1, SQLITE_TRANSIENT);
	return finish_write(s, st, name, err);
}

/* ---- events and observations --------------------------------------------------- */

int kft_optstore_event_add(kft_store *s, const char *ns, const char *name, const json_t *event,
                           kft_error *err)
{
	sqlite3_stmt *st;
	if (!json_is_object(event))
		return kft_error_set(err, KFT_EINVAL, "an event must be an object");
	int rc = prepare_opt(s,
	                     "INSERT INTO optimization_events (opt_id, body)"
	                     " SELECT id, ?3 FROM optimizations WHERE namespace = ?1 AND name = ?2",
	                     ns, name, &st, err);
	if (rc == 0 && (rc = bind_json(st, 3, event, err)) != 0)
		kft_store_release(s, st);
	return rc ? rc : finish_write(s, st, name, err);
}

/* Rows of one text column (JSON) into a new array (kft_store_collect_named). */
static int collect(kft_store *s, sqlite3_stmt *st, const char *name, json_t **out, kft_error *err)
{
	json_t *arr = json_array();
	int rc = arr ? kft_store_collect_named(s, &optimization, st, name, arr, err)
	             : kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc)
		json_decref(arr);
	else
		*out = arr;
	return rc;
}

int kft_optstore_events(kft_store *s, const char *ns, const char *name, json_t **out,
                        kft_error *err)
{
	sqlite3_stmt *st;
	*out = NULL;
	int rc = prepare_opt(s,
	                     "SELECT e.body FROM optimizations o"
	                     " LEFT JOIN optimization_events e ON e.opt_id = o.id"
	                     " WHERE o.namespace = ?1 AND o.name = ?2 ORDER BY e.id",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	rc = collect(s, st, name, out, err);
	kft_store_release(s, st);
	return rc;
}

int kft_optstore_observe(kft_store *s, const char *ns, const char *name, const char *trial,
                         const char *metric, const char *value, kft_error *err)
{
	sqlite3_stmt *st;
	char now[32];
	/* Only the first values of each trial are kept: the INSERT inserts
	 * nothing once the trial has its share, which is no error. */
	int rc = prepare_opt(s,
	                     "INSERT INTO observations (opt_id, trial, metric, value, recorded)"
	                     " SELECT id, ?3, ?4, ?5, ?6 FROM optimizations"
	                     " WHERE namespace = ?1 AND name = ?2 AND (SELECT count(*) FROM"
	                     " observations WHERE opt_id = " OPT_ID " AND trial = ?3) < ?7",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	kft_rfc3339_now_micro(now);
	sqlite3_bind_text(st, 3, trial, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, metric, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, value, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 6, now, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 7, KFT_OPTSTORE_OBSERVATIONS_MAX);
	rc = sqlite3_step(st);
	kft_store_release(s, st);
	return rc == SQLITE_DONE ? 0 : kft_store_db_fail(s, err, "recording an observation");
}

int kft_optstore_observations(kft_store *s, const char *ns, const char *name, long long after,
                              json_t **out, kft_error *err)
{
	sqlite3_stmt *st;
	*out = NULL;
	int rc = prepare_opt(s,
	                     "SELECT CASE WHEN b.id IS NULL THEN NULL ELSE json_object('id', b.id,"
	                     " 'trial', b.trial, 'metric', b.metric, 'value', b.value, 'recorded',"
	                     " b.recorded) END FROM optimizations o"
	                     " LEFT JOIN observations b ON b.opt_id = o.id AND b.id > ?3"
	                     " WHERE o.namespace = ?1 AND o.name = ?2 ORDER BY b.id",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 3, after);
	rc = collect(s, st, name, out, err);
	kft_store_release(s, st);
	return rc;
}
