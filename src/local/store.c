/*
 * store.c - the local backend's SQLite state store. See src/local/store.h.
 *
 * Design in plain words:
 *  - One database file per user, opened by many short-lived processes (CLI
 *    calls, supervisors). WAL mode lets readers run while one process writes;
 *    the busy timeout makes a second writer wait its turn instead of failing.
 *    Multi-statement writes take the write lock up front (BEGIN IMMEDIATE):
 *    a deferred transaction that upgrades from read to write can fail with
 *    SQLITE_BUSY in WAL mode without ever waiting.
 *  - Single-row changes are one statement each, addressed by namespace and
 *    name through a sub-select, so "does the job exist" and "change it" are
 *    atomic; sqlite3_changes() == 0 then means "not found".
 *  - Every value reaches SQL as a bound parameter; the SQL text is constant.
 *  - Statements are prepared once per connection and reused: a supervisor
 *    writes the same few statements over and over, and parsing SQL cost it
 *    more than running it. The SQL text is always a string constant, so its
 *    address names the statement in the connection's small cache. Each use
 *    ends with release(), which resets the statement (ending the read it may
 *    hold open) and drops its parameters.
 *  - Child tables reference jobs with ON DELETE CASCADE, so deleting a job
 *    removes everything that belongs to it.
 *  - Durability: synchronous = NORMAL, so a commit reaches the write-ahead
 *    log but is not flushed by itself. A crashed process loses nothing (the
 *    log is in the kernel's page cache and is replayed at the next open); a
 *    power cut may lose the last commits, never consistency. The log is
 *    flushed and copied into the database (a checkpoint, two fdatasyncs) when
 *    it passes SQLite's 1000 pages and, by default, when the last connection
 *    closes. Short-lived CLI connections skip that close-time checkpoint
 *    (kft_store_skip_close_checkpoint): it was most of a CLI call's disk
 *    time, and their commits are then flushed by the next checkpoint, usually
 *    the closing of a job's supervisor. That only widens the power-cut
 *    window for a few CLI writes; it changes nothing for crashes.
 *  - SQLite checkpoints at close only when no other connection is open, and
 *    a job's supervisor seldom closes last (a `wait` or `get` is reading).
 *    The log then grows towards the 1000 pages, and every open that finds
 *    no other connection (most CLI calls) reads all of it to rebuild its
 *    index: 0.7 ms a call with 30 jobs' worth. So a connection that keeps
 *    the close-time checkpoint also empties a log past WAL_TRIM_BYTES at
 *    close, waiting at most WAL_TRIM_WAIT_MS for the others, and leaves it
 *    for a later close when they are busy.
 *  - The schema version lives in PRAGMA user_version; migrations[i] moves a
 *    database from version i to i + 1 and runs inside the open transaction.
 */
#define _POSIX_C_SOURCE 200809L

#include "local/store.h"
#include "local/store_internal.h"
#include "util/json.h"
#include "util/rfc3339.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#define BUSY_TIMEOUT_MS  60000
#define WAL_TRIM_BYTES   (256 * 1024)
#define WAL_TRIM_WAIT_MS 200
#define TJ_RESOURCE      "trainjobs.trainer.kubeflow.org"

/* More than the distinct statements below; beyond it, statements are
 * prepared and finalized per use as if there were no cache. */
#define STMT_CACHE 48

struct kft_store {
	sqlite3 *db;
	char *path;
	bool in_txn;            /* a caller's kft_store_begin is open */
	bool skip_ckpt;         /* kft_store_skip_close_checkpoint was called */
	kft_store_warn_fn warn; /* kft_store_set_warn; NULL: say nothing */
	void *warn_ctx;
	size_t n_stmts;
	struct {
		const char *sql; /* a string constant: the key */
		sqlite3_stmt *st;
	} stmts[STMT_CACHE];
};

static const char *const migrations[KFT_STORE_SCHEMA_VERSION] = {
        /* 0 -> 1 */
        "CREATE TABLE jobs ("
        " id INTEGER PRIMARY KEY,"
        " namespace TEXT NOT NULL, name TEXT NOT NULL, uid TEXT NOT NULL UNIQUE,"
        " spec TEXT NOT NULL, runtime_name TEXT, runtime_kind TEXT,"
        " created TEXT NOT NULL, started TEXT, finished TEXT,"
        " supervisor_pid INTEGER NOT NULL DEFAULT 0,"
        " supervisor_start INTEGER NOT NULL DEFAULT 0,"
        " suspended INTEGER NOT NULL DEFAULT 0, status TEXT,"
        " UNIQUE (namespace, name));"
        "CREATE TABLE objects ("
        " job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
        " seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (job_id, seq));"
        "CREATE TABLE pods ("
        " job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
        " step TEXT NOT NULL, idx INTEGER NOT NULL, state TEXT NOT NULL,"
        " pid INTEGER NOT NULL DEFAULT 0, exit_code INTEGER NOT NULL DEFAULT 0,"
        " signal INTEGER NOT NULL DEFAULT 0, restarts INTEGER NOT NULL DEFAULT 0,"
        " started TEXT, finished TEXT, log_path TEXT,"
        " PRIMARY KEY (job_id, step, idx));",
        /* 1 -> 2: what a job's processes inherit (captured at submit so a
         * resume or a restarted pod sees the same), the start time of each
         * pod's process (so a reused pid is never signalled) and why a pod
         * ended. Old rows keep NULL / 0, which mean "unknown". */
        "ALTER TABLE jobs ADD COLUMN workdir TEXT;"
        "ALTER TABLE jobs ADD COLUMN base_env TEXT;"
        "ALTER TABLE pods ADD COLUMN start_ticks INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE pods ADD COLUMN reason TEXT;"
        "ALTER TABLE pods ADD COLUMN message TEXT;",
        /* 2 -> 3: when a delete began (a deletionTimestamp). A job is
         * marked before its supervisor is signalled, so the supervisor,
         * the liveness check and suspend/resume can tell a deletion from a
         * crash. NULL: not being deleted. */
        "ALTER TABLE jobs ADD COLUMN deleting TEXT;",
        /* 3 -> 4: events, each a core/v1 Event's JSON, in the order recorded
         * (the rowid). */
        "CREATE TABLE events ("
        " id INTEGER PRIMARY KEY,"
        " job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
        " body TEXT NOT NULL);"
        "CREATE INDEX events_by_job ON events (job_id, id);",
        /* 4 -> 5: the plugin files the submitter's framework loaded (a JSON
         * array of absolute paths), so the supervisor, now and after a
         * resume, runs the job's PostExecution with the very same plugins.
         * NULL: none (and every job recorded before). */
        "ALTER TABLE jobs ADD COLUMN plugins TEXT;",
        /* 5 -> 6: the history of what the training reported (each
         * status.trainerStatus the supervisor recorded, with when), so the
         * dashboard can chart progress and metrics over time. Bounded per
         * job: the oldest rows go once KFT_STORE_REPORTS_MAX are kept. */
        "CREATE TABLE reports ("
        " id INTEGER PRIMARY KEY,"
        " job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
        " recorded TEXT NOT NULL, body TEXT NOT NULL);"
        "CREATE INDEX reports_by_job ON reports (job_id, id);",
        /* 6 -> 7: OptimizationJobs (optstore.c): the object and its status,
         * what its trials inherit (the runtime resolved at submit, plugins,
         * working directory, base environment, the search's seed), where
         * its supervisor has read each trial's output (cursors), its
         * supervisor, and its Events and metric observations. A trial is a
         * TrainJob of the jobs table. */
        "CREATE TABLE optimizations ("
        " id INTEGER PRIMARY KEY,"
        " namespace TEXT NOT NULL, name TEXT NOT NULL, uid TEXT NOT NULL UNIQUE,"
        " body TEXT NOT NULL, status TEXT, runtime TEXT NOT NULL, plugins TEXT,"
        " workdir TEXT, base_env TEXT, job_workdir INTEGER NOT NULL DEFAULT 0,"
        " seed INTEGER NOT NULL DEFAULT 0, cursors TEXT,"
        " created TEXT NOT NULL, finished TEXT, deleting TEXT,"
        " supervisor_pid INTEGER NOT NULL DEFAULT 0,"
        " supervisor_start INTEGER NOT NULL DEFAULT 0,"
        " UNIQUE (namespace, name));"
        "CREATE TABLE optimization_events ("
        " id INTEGER PRIMARY KEY,"
        " opt_id INTEGER NOT NULL REFERENCES optimizations(id) ON DELETE CASCADE,"
        " body TEXT NOT NULL);"
        "CREATE INDEX optimization_events_by_opt ON optimization_events (opt_id, id);"
        "CREATE TABLE observations ("
        " id INTEGER PRIMARY KEY,"
        " opt_id INTEGER NOT NULL REFERENCES optimizations(id) ON DELETE CASCADE,"
        " trial TEXT NOT NULL, metric TEXT NOT NULL, value TEXT NOT NULL,"
        " recorded TEXT NOT NULL);"
        "CREATE INDEX observations_by_trial ON observations (opt_id, trial, id);",
};

/* ---- small helpers ------------------------------------------------------ */

static int db_fail(kft_store *s, kft_error *err, const char *what)
{
	return kft_error_set(err, KFT_EIO, "state database %s: %s: %s", s->path, what,
	                     sqlite3_errmsg(s->db));
}

int kft_store_not_found_named(const kft_store_kind *k, const char *name, kft_error *err)
{
	return kft_error_set(err, KFT_ENOTFOUND, "%s \"%s\" not found", k->resource, name);
}

static const kft_store_kind trainjob_kind = {
        .kind = "TrainJob", .a_kind = "a TrainJob", .resource = TJ_RESOURCE};

static int not_found(kft_error *err, const char *name)
{
	return kft_store_not_found_named(&trainjob_kind, name, err);
}

static const char *ns_or_default(const char *ns)
{
	return ns && *ns ? ns : "default";
}

static int exec_sql(kft_store *s, const char *sql, kft_error *err)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(s, err, sql);
	return 0;
}

/* The statement for sql, a string constant, from the connection's cache or
 * newly prepared (and cached when there is room). A cached statement still
 * running (one use nested in another) is not handed out twice: the caller
 * gets a private one. Every statement from here goes back through release(). */
static int prepare(kft_store *s, const char *sql, sqlite3_stmt **st, kft_error *err)
{
	bool cached = false;
	for (size_t i = 0; i < s->n_stmts && !cached; i++) {
		cached = s->stmts[i].sql == sql;
		if (cached && !sqlite3_stmt_busy(s->stmts[i].st)) {
			*st = s->stmts[i].st;
			return 0;
		}
	}
	if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
		return db_fail(s, err, "prepare");
	if (!cached && s->n_stmts < STMT_CACHE) {
		s->stmts[s->n_stmts].sql = sql;
		s->stmts[s->n_stmts++].st = *st;
	}
	return 0;
}

/* Ends one use of a statement from prepare(): a cached one is reset and
 * forgets its parameters, any other is finalized. */
static void release(kft_store *s, sqlite3_stmt *st)
{
	for (size_t i = 0; i < s->n_stmts; i++)
		if (s->stmts[i].st == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return;
		}
	sqlite3_finalize(st);
}

/* Runs one constant statement that returns no rows through the cache: the
 * transaction statements, which a supervisor runs on every state change. */
static int run_stmt(kft_store *s, const char *sql, kft_error *err)
{
	sqlite3_stmt *st;
	int rc = prepare(s, sql, &st, err);
	if (rc)
		return rc;
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(s, err, sql);
	release(s, st);
	return rc;
}

static const char SQL_BEGIN[] = "BEGIN IMMEDIATE", SQL_COMMIT[] = "COMMIT";

/* Prepares sql and binds ?1 = namespace, ?2 = name, the convention of every
 * per-object statement here (and in optstore.c). */
int kft_store_prepare_named(kft_store *s, const kft_store_kind *k, const char *sql, const char *ns,
                            const char *name, sqlite3_stmt **st, kft_error *err)
{
	if (!name || !*name)
		return kft_error_set(err, KFT_EINVAL, "%s name is required", k->a_kind);
	int rc = prepare(s, sql, st, err);
	if (rc)
		return rc;
	sqlite3_bind_text(*st, 1, ns_or_default(ns), -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(*st, 2, name, -1, SQLITE_TRANSIENT);
	return 0;
}

/* The statements a running job's supervisor writes with (named, so
 * kft_store_prepare_job_writes can prepare the very texts the cache keys
 * on). */
static const char SQL_SET_STATUS[] =
        "UPDATE jobs SET status = ?3 WHERE namespace = ?1 AND name = ?2";
static const char *const SQL_JOB_MARK[] = {
        [KFT_JOB_STARTED] = "UPDATE jobs SET started = COALESCE(started, ?3)"
                            " WHERE namespace = ?1 AND name = ?2",
        [KFT_JOB_FINISHED] = "UPDATE jobs SET finished = COALESCE(finished, ?3)"
                             " WHERE namespace = ?1 AND name = ?2",
};
static const char SQL_EVENT_ADD[] = "INSERT INTO events (job_id, body) SELECT id, ?3 FROM jobs"
                                    " WHERE namespace = ?1 AND name = ?2";
/* The sub-select finds the job; ON CONFLICT turns a repeat into an update.
 * SQLite needs the WHERE on the SELECT to parse ON CONFLICT unambiguously. */
static const char SQL_POD_UPSERT[] =
        "INSERT INTO pods (job_id, step, idx, state, pid, exit_code, signal,"
        " restarts, started, finished, log_path, start_ticks, reason, message)"
        " SELECT id, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15"
        " FROM jobs"
        " WHERE namespace = ?1 AND name = ?2"
        " ON CONFLICT (job_id, step, idx) DO UPDATE SET state = excluded.state,"
        " pid = excluded.pid, exit_code = excluded.exit_code,"
        " signal = excluded.signal, restarts = excluded.restarts,"
        " started = excluded.started, finished = excluded.finished,"
        " log_path = excluded.log_path, start_ticks = excluded.start_ticks,"
        " reason = excluded.reason, message = excluded.message";

void kft_store_prepare_job_writes(kft_store *s, bool (*stop)(void *ctx), void *ctx)
{
	const char *const sql[] = {SQL_BEGIN,
	                           SQL_COMMIT,
	                           SQL_SET_STATUS,
	                           SQL_EVENT_ADD,
	                           SQL_POD_UPSERT,
	                           SQL_JOB_MARK[KFT_JOB_STARTED],
	                           SQL_JOB_MARK[KFT_JOB_FINISHED]};
	kft_error ignored = {0}; /* a statement that will not prepare fails its write */
	for (size_t i = 0; i < sizeof(sql) / sizeof(*sql) && !(stop && stop(ctx)); i++) {
		sqlite3_stmt *st;
		if (prepare(s, sql[i], &st, &ignored) == 0)
			release(s, st);
	}
}

static int prepare_job(kft_store *s, const char *sql, const char *ns, const char *name,
                       sqlite3_stmt **st, kft_error *err)
{
	return kft_store_prepare_named(s, &trainjob_kind, sql, ns, name, st, err);
}

/* Steps a write statement addressed at one object and releases it; no row
 * changed means the object does not exist. */
int kft_store_finish_named_write(kft_store *s, const kft_store_kind *k, sqlite3_stmt *st,
                                 const char *name, kft_error *err)
{
	int rc = sqlite3_step(st);
	release(s, st);
	if (rc != SQLITE_DONE)
		return db_fail(s, err, "write");
	return sqlite3_changes(s->db) == 0 ? kft_store_not_found_named(k, name, err) : 0;
}

static int finish_job_write(kft_store *s, sqlite3_stmt *st, const char *name, kft_error *err)
{
	return kft_store_finish_named_write(s, &trainjob_kind, st, name, err);
}

/* A copy of a text column; *oom is set when a non-NULL value could not be copied. */
static char *col_dup(sqlite3_stmt *st, int i, bool *oom)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	if (!t)
		return NULL;
	char *c = strdup((const char *)t);
	if (!c)
		*oom = true;
	return c;
}

/* The compact text json_dumps would give (util/json.c's writer). */
static int dump_json(const json_t *j, char **out, kft_error *err)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	int rc = kft_json_dump(j, &b);
	size_t len = b.len;
	*out = rc == 0 ? kft_strbuf_detach(&b) : NULL;
	kft_strbuf_free(&b);
	if (rc == KFT_EINVAL)
		return kft_error_set(err, KFT_EINVAL,
		                     "cannot serialize JSON: a string is not UTF-8, or it nests "
		                     "deeper than %d",
		                     KFT_JSON_DUMP_MAX_DEPTH);
	if (!*out)
		return kft_error_set(err, KFT_ENOMEM, "cannot serialize JSON");
	if (len > KFT_STORE_MAX_JSON) {
		free(*out);
		*out = NULL;
		return kft_error_set(err, KFT_ELIMIT, "JSON document exceeds %u bytes",
		                     KFT_STORE_MAX_JSON);
	}
	return 0;
}

/* NUL is allowed: the API server stores any string, "\u0000" included, and
 * the writer escaped it, so the text column never holds a raw NUL. */
static int load_json(const char *text, json_t **out, kft_error *err)
{
	json_error_t je;
	*out = text ? json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je) : NULL;
	if (!text)
		return kft_error_set(err, KFT_EPARSE, "stored JSON is missing");
	if (!*out)
		return kft_error_set(err, KFT_EPARSE, "stored JSON is damaged: %s", je.text);
	return 0;
}

static int new_uid(char out[37], kft_error *err)
{
	unsigned char b[16];
	/* The kernel's generator, not OpenSSL's: setting up OpenSSL 3's DRBG
	 * costs a CLI call more than the rest of a submit. */
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return kft_error_set(err, KFT_EIO, "cannot generate a uid: no randomness");
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
	         b[13], b[14], b[15]);
	return 0;
}

/* ---- opening ------------------------------------------------------------ */

/* mkdir -p with mode 0700 for every directory it creates. */
/* The state directory is trusted only when it is ours, as ssh's StrictModes
 * trusts ~/.ssh: a directory another user owns, or one group or others may
 * write, lets someone else plant a symlink or a database of their own for us
 * to follow. (The directory itself may be a symlink, as ~/.local/state often
 * is: what it leads to is judged.) */
static int trusted_dir(const char *dir, kft_error *err)
{
	struct stat sb;
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return kft_error_set(err, KFT_EIO, "state directory %s is not a directory", dir);
	if (sb.st_uid != geteuid())
		return kft_error_set(err, KFT_EINVAL,
		                     "state directory %s is owned by uid %u, not by this user (uid "
		                     "%u): refusing to use it",
		                     dir, (unsigned)sb.st_uid, (unsigned)geteuid());
	if (sb.st_mode & (S_IWGRP | S_IWOTH))
		return kft_error_set(
		        err, KFT_EINVAL,
		        "state directory %s is writable by group or others (mode %04o): "
		        "refusing to use it (chmod go-w %s)",
		        dir, (unsigned)(sb.st_mode & 07777), dir);
	return 0;
}

static int make_dirs(const char *dir, kft_error *err)
{
	char *p = strdup(dir);
	if (!p)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (char *c = p + 1;; c++) {
		char saved = *c;
		if (saved != '/' && saved != '\0')
			continue;
		*c = '\0';
		if (mkdir(p, 0700) == 0)
			(void)chmod(p, 0700); /* umask may have narrowed it oddly */
		else if (errno != EEXIST) {
			int e = errno;
			kft_error_set(err, KFT_EIO, "cannot create %s: %s", p, strerror(e));
			free(p);
			return KFT_EIO;
		}
		*c = saved;
		if (saved == '\0')
			break;
	}
	free(p);
	return trusted_dir(dir, err);
}

/* Creates the file with mode 0600 before SQLite does, so it never exists
 * with wider permissions; SQLite gives its -wal and -shm files the same mode. */
static int touch_private(const char *path, kft_error *err)
{
	/* Never open (and so close) a database that is there already: closing
	 * any descriptor of it drops every POSIX lock this process holds on it,
	 * the locks of its other connections too, and a connection in another
	 * process closing then takes itself for the last one and deletes the
	 * write-ahead log under ours (test_second_open_keeps_locks). SQLite
	 * opens it without following links (configure). */
	struct stat st;
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		errno = ELOOP; /* as O_NOFOLLOW says it */
	else if (fd < 0 && errno == EEXIST)
		return 0;
	if (fd < 0)
		return kft_error_set(err, KFT_EIO, "cannot open %s: %s", path, strerror(errno));
	close(fd);
	return 0;
}

static int read_version(kft_store *s, int *version, kft_error *err)
{
	sqlite3_stmt *st;
	int rc = prepare(s, "PRAGMA user_version", &st, err);
	if (rc)
		return rc;
	rc = sqlite3_step(st);
	*version = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	release(s, st);
	return rc == SQLITE_ROW ? 0 : db_fail(s, err, "reading the schema version");
}

static int apply_migrations(kft_store *s, kft_error *err)
{
	int version, rc = read_version(s, &version, err);
	if (rc)
		return rc;
	if (version > KFT_STORE_SCHEMA_VERSION)
		return kft_error_set(err, KFT_EVERSION,
		                     "state database %s has schema version %d; this kftrainer "
		                     "understands up to %d (upgrade kftrainer)",
		                     s->path, version, KFT_STORE_SCHEMA_VERSION);
	for (; version < KFT_STORE_SCHEMA_VERSION; version++) {
		rc = exec_sql(s, migrations[version], err);
		if (rc)
			return rc;
	}
	/* PRAGMA takes no bound parameters; the value is our own constant. */
	char sql[64];
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", KFT_STORE_SCHEMA_VERSION);
	return exec_sql(s, sql, err);
}

static int migrate(kft_store *s, kft_error *err)
{
	/* The common case, a current database, needs no write lock (and no
	 * fsync): every CLI call and supervisor opens the store. */
	int version = 0, rc = read_version(s, &version, err);
	if (rc == 0 && version == KFT_STORE_SCHEMA_VERSION)
		return 0;
	rc = exec_sql(s, "BEGIN IMMEDIATE", err);
	if (rc)
		return rc;
	rc = apply_migrations(s, err);
	if (rc == 0)
		rc = exec_sql(s, "COMMIT", err);
	if (rc)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

static int configure(kft_store *s, kft_error *err)
{
	int rc = sqlite3_open_v2(s->path, &s->db,
	                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
	                         NULL);
	if (rc != SQLITE_OK)
		return s->db ? db_fail(s, err, "open")
		             : kft_error_set(err, KFT_ENOMEM, "cannot open the state database");
	sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
	/* The first statement reads the header: a damaged file fails here. */
	if (sqlite3_exec(s->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL) != SQLITE_OK)
		return kft_error_set(err, KFT_EIO,
		                     "cannot use state database %s: %s (move the file away to "
		                     "start with an empty state)",
		                     s->path, sqlite3_errmsg(s->db));
	rc = exec_sql(s, "PRAGMA foreign_keys = ON", err);
	if (rc == 0)
		rc = exec_sql(s, "PRAGMA synchronous = NORMAL", err);
	return rc ? rc : migrate(s, err);
}

int kft_store_open(const char *state_dir, kft_store **out, kft_error *err)
{
	*out = NULL;
	if (!state_dir || !*state_dir)
		return kft_error_set(err, KFT_EINVAL, "no state directory given");
	int rc = make_dirs(state_dir, err);
	if (rc)
		return rc;
	kft_store *s = calloc(1, sizeof(*s));
	size_t len = strlen(state_dir) + sizeof("/" KFT_STORE_DB_NAME);
	if (!s || !(s->path = malloc(len))) {
		free(s);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	snprintf(s->path, len, "%s/%s", state_dir, KFT_STORE_DB_NAME);
	rc = touch_private(s->path, err);
	if (rc == 0)
		rc = configure(s, err);
	if (rc) {
		kft_store_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* Empties a log past WAL_TRIM_BYTES (see the top); a busy store is left
 * for a later close. */
static void trim_wal(kft_store *s)
{
	char wal[4096];
	struct stat st;
	int n = snprintf(wal, sizeof(wal), "%s-wal", s->path);
	if (n > 0 && (size_t)n < sizeof(wal) && stat(wal, &st) == 0 &&
	    st.st_size > WAL_TRIM_BYTES) {
		sqlite3_busy_timeout(s->db, WAL_TRIM_WAIT_MS);
		sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	}
}

void kft_store_close(kft_store *s)
{
	if (!s)
		return;
	if (s->db) {
		kft_store_rollback(s);
		for (size_t i = 0; i < s->n_stmts; i++)
			sqlite3_finalize(s->stmts[i].st);
		if (!s->skip_ckpt)
			trim_wal(s);
		sqlite3_close(s->db);
	}
	free(s->path);
	free(s);
}

void kft_store_set_warn(kft_store *s, kft_store_warn_fn fn, void *ctx)
{
	s->warn = fn;
	s->warn_ctx = ctx;
}

int kft_store_skip_close_checkpoint(kft_store *s, kft_error *err)
{
	if (sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL) != SQLITE_OK)
		return db_fail(s, err, "configuring the close");
	s->skip_ckpt = true;
	return 0;
}

char *kft_store_default_dir(void)
{
	const char *v = getenv("KFTRAINER_STATE_DIR");
	if (v && v[0] == '/')
		return strdup(v);
	const char *base = getenv("XDG_STATE_HOME"), *tail = "/kftrainer";
	if (!base || base[0] != '/') {
		base = getenv("HOME");
		tail = "/.local/state/kftrainer";
		if (!base || base[0] != '/')
			return NULL;
	}
	size_t len = strlen(base) + strlen(tail) + 1;
	char *dir = malloc(len);
	if (dir)
		snprintf(dir, len, "%s%s", base, tail);
	return dir;
}

/* ---- transactions ------------------------------------------------------- */

int kft_store_begin(kft_store *s, kft_error *err)
{
	if (s->in_txn)
		return kft_error_set(err, KFT_EINVAL, "a store transaction is already open");
	int rc = run_stmt(s, SQL_BEGIN, err);
	if (rc == 0)
		s->in_txn = true;
	return rc;
}

int kft_store_commit(kft_store *s, kft_error *err)
{
	if (!s->in_txn)
		return kft_error_set(err, KFT_EINVAL, "no store transaction is open");
	int rc = run_stmt(s, SQL_COMMIT, err);
	if (rc)
		kft_store_rollback(s);
	s->in_txn = false;
	return rc;
}

void kft_store_rollback(kft_store *s)
{
	if (s && s->in_txn && sqlite3_get_autocommit(s->db) == 0)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	if (s)
		s->in_txn = false;
}

/* Internal multi-statement writes join a caller's transaction or open their own. */
static int own_begin(kft_store *s, bool *own, kft_error *err)
{
	*own = !s->in_txn;
	return *own ? run_stmt(s, SQL_BEGIN, err) : 0;
}

static int own_end(kft_store *s, bool own, int rc, kft_error *err)
{
	if (!own)
		return rc;
	if (rc == 0)
		rc = run_stmt(s, SQL_COMMIT, err);
	if (rc)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* ---- jobs --------------------------------------------------------------- */

/* What job_create extracts from the submitted TrainJob. */
struct job_fields {
	const char *ns, *name, *runtime_name, *runtime_kind;
	bool suspend;
	char *spec_text, *status_text; /* malloc'd */
};

static int check_job(const json_t *tj, struct job_fields *f, kft_error *err)
{
	json_t *meta = json_object_get(tj, "metadata");
	f->name = json_string_value(json_object_get(meta, "name"));
	if (!json_is_object(tj) || !f->name || !*f->name)
		return kft_error_set(err, KFT_EINVAL, "a TrainJob needs metadata.name");
	f->ns = ns_or_default(json_string_value(json_object_get(meta, "namespace")));
	json_t *spec = json_object_get(tj, "spec");
	json_t *ref = json_object_get(spec, "runtimeRef");
	f->runtime_name = json_string_value(json_object_get(ref, "name"));
	f->runtime_kind = json_string_value(json_object_get(ref, "kind"));
	if (f->runtime_name && !f->runtime_kind)
		f->runtime_kind = "ClusterTrainingRuntime"; /* the API's default kind */
	f->suspend = json_is_true(json_object_get(spec, "suspend"));
	return 0;
}

/* The TrainJob without its status goes to `spec`, the status to `status`. */
static int split_job(const json_t *tj, struct job_fields *f, kft_error *err)
{
	json_t *copy = json_deep_copy(tj);
	if (!copy)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_t *status = json_object_get(copy, "status");
	int rc = status ? dump_json(status, &f->status_text, err) : 0;
	json_object_del(copy, "status");
	if (rc == 0)
		rc = dump_json(copy, &f->spec_text, err);
	json_decref(copy);
	return rc;
}

static int insert_job(kft_store *s, const struct job_fields *f, const char *uid, sqlite3_int64 *id,
                      kft_error *err)
{
	sqlite3_stmt *st;
	char now[32];
	int rc = prepare_job(s,
	                     "INSERT INTO jobs (namespace, name, uid, spec, runtime_name,"
	                     " runtime_kind, created, suspended, status)"
	                     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	                     f->ns, f->name, &st, err);
	if (rc)
		return rc;
	kft_rfc3339_now_micro(now);
	sqlite3_bind_text(st, 3, uid, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, f->spec_text, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, f->runtime_name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 6, f->runtime_kind, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 7, now, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 8, f->suspend);
	sqlite3_bind_text(st, 9, f->status_text, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	release(s, st);
	if (rc == SQLITE_CONSTRAINT)
		return kft_error_set(err, KFT_EINVAL, TJ_RESOURCE " \"%s\" already exists",
		                     f->name);
	if (rc != SQLITE_DONE)
		return db_fail(s, err, "recording the TrainJob");
	*id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

static int insert_objects(kft_store *s, sqlite3_int64 id, const json_t *objects, kft_error *err)
{
	sqlite3_stmt *st;
	int rc =
	        prepare(s, "INSERT INTO objects (job_id, seq, body) VALUES (?1, ?2, ?3)", &st, err);
	for (size_t i = 0; rc == 0 && i < json_array_size(objects); i++) {
		char *text;
		rc = dump_json(json_array_get(objects, i), &text, err);
		if (rc)
			break;
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		sqlite3_bind_text(st, 3, text, -1, SQLITE_TRANSIENT);
		free(text);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = db_fail(s, err, "recording the TrainJob's objects");
		sqlite3_reset(st);
	}
	release(s, st);
	return rc;
}

int kft_store_job_create(kft_store *s, const json_t *trainjob, const json_t *objects,
                         char **uid_out, kft_error *err)
{
	struct job_fields f = {0};
	char uid[37];
	sqlite3_int64 id = 0;
	bool own = false;
	if (uid_out)
		*uid_out = NULL;
	if (objects && !json_is_array(objects))
		return kft_error_set(err, KFT_EINVAL, "the TrainJob's objects must be an array");
	int rc = check_job(trainjob, &f, err);
	if (rc == 0)
		rc = split_job(trainjob, &f, err);
	if (rc == 0)
		rc = new_uid(uid, err);
	if (rc == 0 && (rc = own_begin(s, &own, err)) == 0) {
		rc = insert_job(s, &f, uid, &id, err);
		if (rc == 0)
			rc = insert_objects(s, id, objects, err);
		rc = own_end(s, own, rc, err);
	}
	free(f.spec_text);
	free(f.status_text);
	if (rc == 0 && uid_out && !(*uid_out = strdup(uid)))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return rc;
}

/* Column order of every job read: see JOB_COLUMNS. */
#define JOB_COLUMNS "namespace, name, uid, spec, created, suspended, status, deleting"

/* Kubernetes prints object timestamps to the second. */
json_t *kft_store_seconds_only(const char *ts)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%.19sZ", ts ? ts : "");
	return json_string(buf);
}

static void overlay_suspend(json_t *tj, bool suspended)
{
	json_t *spec = json_object_get(tj, "spec");
	if (!json_is_object(spec)) {
		if (!suspended)
			return;
		spec = json_object();
		json_object_set_new(tj, "spec", spec);
	}
	if (suspended || json_object_get(spec, "suspend"))
		json_object_set_new(spec, "suspend", json_boolean(suspended));
}

static int overlay_meta(sqlite3_stmt *st, json_t *tj, kft_error *err)
{
	json_t *meta = json_object_get(tj, "metadata");
	if (!json_is_object(meta))
		return kft_error_set(err, KFT_EPARSE, "stored TrainJob has no metadata");
	json_object_set_new(meta, "namespace",
	                    json_string((const char *)sqlite3_column_text(st, 0)));
	json_object_set_new(meta, "name", json_string((const char *)sqlite3_column_text(st, 1)));
	json_object_set_new(meta, "uid", json_string((const char *)sqlite3_column_text(st, 2)));
	json_object_set_new(meta, "creationTimestamp",
	                    kft_store_seconds_only((const char *)sqlite3_column_text(st, 4)));
	if (sqlite3_column_type(st, 7) != SQLITE_NULL)
		json_object_set_new(
		        meta, "deletionTimestamp",
		        kft_store_seconds_only((const char *)sqlite3_column_text(st, 7)));
	return 0;
}

/* Builds the TrainJob a reader sees from one row of JOB_COLUMNS. */
static int row_to_job(sqlite3_stmt *st, json_t **out, kft_error *err)
{
	json_t *tj, *status = NULL;
	int rc = load_json((const char *)sqlite3_column_text(st, 3), &tj, err);
	if (rc)
		return rc;
	rc = json_is_object(tj)
	             ? overlay_meta(st, tj, err)
	             : kft_error_set(err, KFT_EPARSE, "stored TrainJob is not an object");
	if (rc == 0 && sqlite3_column_type(st, 6) != SQLITE_NULL)
		rc = load_json((const char *)sqlite3_column_text(st, 6), &status, err);
	if (rc) {
		json_decref(tj);
		return rc;
	}
	overlay_suspend(tj, sqlite3_column_int(st, 5) != 0);
	if (status)
		json_object_set_new(tj, "status", status);
	*out = tj;
	return 0;
}

/* Reports an object whose stored JSON cannot be read and lets the list go on. */
static int skip_damaged(kft_store *s, const kft_store_kind *k, sqlite3_stmt *st,
                        const kft_error *why)
{
	char msg[sizeof(why->message) + 512];
	if (s->warn) {
		snprintf(msg, sizeof(msg), "skipping %s %s/%s: %s", k->kind,
		         (const char *)sqlite3_column_text(st, 0),
		         (const char *)sqlite3_column_text(st, 1), why->message);
		s->warn(s->warn_ctx, msg);
	}
	return 0;
}

int kft_store_get_named(kft_store *s, const kft_store_kind *k, const char *sql, const char *ns,
                        const char *name, kft_store_row_fn row, json_t **out, kft_error *err)
{
	sqlite3_stmt *st;
	char what[64];
	*out = NULL;
	int rc = kft_store_prepare_named(s, k, sql, ns, name, &st, err);
	if (rc)
		return rc;
	snprintf(what, sizeof(what), "reading the %s", k->kind);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		rc = row(st, out, err);
	else if (rc == SQLITE_DONE)
		rc = kft_store_not_found_named(k, name, err);
	else
		rc = db_fail(s, err, what);
	release(s, st);
	return rc;
}

int kft_store_list_named(kft_store *s, const kft_store_kind *k, const char *sql, const char *ns,
                         kft_store_row_fn row, json_t **out, kft_error *err)
{
	sqlite3_stmt *st;
	char what[64];
	*out = NULL;
	int rc = prepare(s, sql, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, ns, -1, SQLITE_TRANSIENT);
	json_t *arr = json_array();
	int step;
	while (rc == 0 && arr && (step = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *obj;
		kft_error bad;
		rc = row(st, &obj, &bad);
		if (rc == 0)
			json_array_append_new(arr, obj);
		else if (rc == KFT_EPARSE) /* one damaged row must not hide the others */
			rc = skip_damaged(s, k, st, &bad);
		else if (err)
			*err = bad;
	}
	snprintf(what, sizeof(what), "listing %ss", k->kind);
	if (rc == 0 && !arr)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	else if (rc == 0 && step != SQLITE_DONE)
		rc = db_fail(s, err, what);
	release(s, st);
	if (rc)
		json_decref(arr);
	else
		*out = arr;
	return rc;
}

int kft_store_job_get(kft_store *s, const char *ns, const char *name, json_t **out, kft_error *err)
{
	return kft_store_get_named(s, &trainjob_kind,
	                           "SELECT " JOB_COLUMNS
	                           " FROM jobs WHERE namespace = ?1 AND name = ?2",
	                           ns, name, row_to_job, out, err);
}

int kft_store_job_list(kft_store *s, const char *ns, json_t **out, kft_error *err)
{
	return kft_store_list_named(s, &trainjob_kind,
	                            "SELECT " JOB_COLUMNS
	                            " FROM jobs WHERE ?1 IS NULL OR namespace = ?1"
	                            " ORDER BY namespace, name",
	                            ns, row_to_job, out, err);
}

int kft_store_job_set_status(kft_store *s, const char *ns, const char *name, const json_t *status,
                             kft_error *err)
{
	char *text = NULL;
	sqlite3_stmt *st;
	int rc = status ? dump_json(status, &text, err) : 0;
	if (rc == 0)
		rc = prepare_job(s, SQL_SET_STATUS, ns, name, &st, err);
	if (rc == 0) {
		sqlite3_bind_text(st, 3, text, -1, SQLITE_TRANSIENT);
		rc = finish_job_write(s, st, name, err);
	}
	free(text);
	return rc;
}

int kft_store_job_set_suspend(kft_store *s, const char *ns, const char *name, bool suspend,
                              kft_error *err)
{
	sqlite3_stmt *st;
	int rc = prepare_job(s, "UPDATE jobs SET suspended = ?3 WHERE namespace = ?1 AND name = ?2",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int(st, 3, suspend);
	return finish_job_write(s, st, name, err);
}

int kft_store_job_mark(kft_store *s, const char *ns, const char *name, kft_job_time which,
                       kft_error *err)
{
	sqlite3_stmt *st;
	char now[32];
	if (which != KFT_JOB_STARTED && which != KFT_JOB_FINISHED)
		return kft_error_set(err, KFT_EINVAL, "unknown job time %d", (int)which);
	int rc = prepare_job(s, SQL_JOB_MARK[which], ns, name, &st, err);
	if (rc)
		return rc;
	kft_rfc3339_now_micro(now);
	sqlite3_bind_text(st, 3, now, -1, SQLITE_TRANSIENT);
	return finish_job_write(s, st, name, err);
}

static int fill_info(sqlite3_stmt *st, kft_job_info *info, kft_error *err)
{
	bool oom = false;
	info->uid = col_dup(st, 0, &oom);
	info->created = col_dup(st, 1, &oom);
	info->started = col_dup(st, 2, &oom);
	info->finished = col_dup(st, 3, &oom);
	info->runtime_name = col_dup(st, 4, &oom);
	info->runtime_kind = col_dup(st, 5, &oom);
	info->suspended = sqlite3_column_int(st, 6) != 0;
	info->deleting = col_dup(st, 7, &oom);
	if (!oom)
		return 0;
	kft_job_info_free(info);
	return kft_error_set(err, KFT_ENOMEM, "out of memory");
}

int kft_store_job_info(kft_store *s, const char *ns, const char *name, kft_job_info *info,
                       kft_error *err)
{
	sqlite3_stmt *st;
	memset(info, 0, sizeof(*info));
	int rc = prepare_job(s,
	                     "SELECT uid, created, started, finished, runtime_name, runtime_kind,"
	                     " suspended, deleting FROM jobs WHERE namespace = ?1 AND name = ?2",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		rc = fill_info(st, info, err);
	else
		rc = rc == SQLITE_DONE ? not_found(err, name)
		                       : db_fail(s, err, "reading the TrainJob");
	release(s, st);
	return rc;
}

void kft_job_info_free(kft_job_info *info)
{
	if (!info)
		return;
	free(info->uid);
	free(info->created);
	free(info->started);
	free(info->finished);
	free(info->runtime_name);
	free(info->runtime_kind);
	free(info->deleting);
	memset(info, 0, sizeof(*info));
}

int kft_store_job_mark_deleting(kft_store *s, const char *ns, const char *name, kft_error *err)
{
	sqlite3_stmt *st;
	char now[32];
	int rc = prepare_job(s,
	                     "UPDATE jobs SET deleting = COALESCE(deleting, ?3)"
	                     " WHERE namespace = ?1 AND name = ?2",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	kft_rfc3339_now_micro(now);
	sqlite3_bind_text(st, 3, now, -1, SQLITE_TRANSIENT);
	return finish_job_write(s, st, name, err);
}

int kft_store_job_delete(kft_store *s, const char *ns, const char *name, kft_error *err)
{
	sqlite3_stmt *st;
	int rc = prepare_job(s, "DELETE FROM jobs WHERE namespace = ?1 AND name = ?2", ns, name,
	                     &st, err);
	return rc ? rc : finish_job_write(s, st, name, err);
}

/* ---- objects ------------------------------------------------------------ */

/* Reads rows whose column 0 is JSON into arr; one row with NULL means the
 * object exists with none (LEFT JOIN), no row at all means no object. */
int kft_store_collect_named(kft_store *s, const kft_store_kind *k, sqlite3_stmt *st,
                            const char *name, json_t *arr, kft_error *err)
{
	int rc = 0, step, rows = 0;
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		rows++;
		if (sqlite3_column_type(st, 0) == SQLITE_NULL)
			continue;
		json_t *obj;
		rc = load_json((const char *)sqlite3_column_text(st, 0), &obj, err);
		if (rc == 0)
			json_array_append_new(arr, obj);
	}
	if (rc)
		return rc;
	if (step != SQLITE_DONE)
		return db_fail(s, err, "reading rows");
	return rows ? 0 : kft_store_not_found_named(k, name, err);
}

static int collect_objects(kft_store *s, sqlite3_stmt *st, const char *name, json_t *arr,
                           kft_error *err)
{
	return kft_store_collect_named(s, &trainjob_kind, st, name, arr, err);
}

int kft_store_job_objects(kft_store *s, const char *ns, const char *name, json_t **out,
                          kft_error *err)
{
	sqlite3_stmt *st;
	*out = NULL;
	int rc = prepare_job(s,
	                     "SELECT o.body FROM jobs j LEFT JOIN objects o ON o.job_id = j.id"
	                     " WHERE j.namespace = ?1 AND j.name = ?2 ORDER BY o.seq",
	                     ns, name, &st, err);
	if (rc)
		return rc;
	json_t *arr = json_array();
	rc = arr ? collect_objects(s, st, name, arr, err)
	         : kft_error_set(err, KFT_ENOMEM, "out of memory");
	release(s, st);
	if (rc)
		json_decref(arr);
	else
		*out = arr;
	return rc;
}

/* ---- events ------------------------------------------------------------- */

int kft_store_event_add(kft_store *s, const char *ns, const char *job, const json_t *event,
                        kft_error *err)
{
	sqlite3_stmt *st;
	char *text = NULL;
	if (!json_is_object(event))
		return kft_error_set(err, KFT_EINVAL, "an event must be an object");
	int rc = dump_json(event, &text, err);
	if (rc == 0)
		rc = prepare_job(s, SQL_EVENT_ADD, ns, job, &st, err);
	if (rc) {
		free(text);
		return rc;
	}
	sqlite3_bind_text(st, 3, text, -1, SQLITE_TRANSIENT);
	free(text);
	return finish_job_write(s, st, job, err);
}

int kft_store_events(kft_store *s, const char *ns, const char *job, json_t **out, kft_error *err)
{
	sqlite3_stmt *st;
	*out = NULL;
	/* A LEFT JOIN keeps a named job without events as one NULL row, so
	 * "no such job" and "no events" differ; for a whole namespace an empty
	 * answer is no error. */
	int rc = job ? prepare_job(s,
	                           "SELECT e.body FROM jobs j LEFT JOIN events e ON e.job_id = j.id"
	                           " WHERE j.namespace = ?1 AND j.name = ?2 ORDER BY e.id",
	                           ns, job, &st, err)
	             : prepare(s,
	                       "SELECT e.body FROM jobs j JOIN events e ON e.job_id = j.id"
	                       " WHERE j.namespace = ?1 ORDER BY j.name, e.id",
	                       &st, err);
	if (rc)
		return rc;
	if (!job)
		sqlite3_bind_text(st, 1, ns_or_default(ns), -1, SQLITE_TRANSIENT);
	json_t *arr = json_array();
	rc = arr ? collect_objects(s, st, job ? job : "", arr, err)
	         : kft_error_set(err, KFT_ENOMEM, "out of memory");
	release(s, st);
	if (rc == KFT_ENOTFOUND && !job)
		rc = 0;
	if (rc)
		json_decref(arr);
	else
		*out = arr;
	return rc;
}

/* ---- reports ------------------------------------------------------------ */

int kft_store_report_add(kft_store *s, const char *ns, const char *job, const json_t *report,
                         kft_error *err)
{
	sqlite3_stmt *st;
	char *text = NULL, now[32];
	if (!json_is_object(report))
		return kft_error_set(err, KFT_EINVAL, "a report must be an object");
	int rc = dump_json(report, &text, err);
	if (rc == 0)
		rc = prepare_job(s,
		                 "INSERT INTO reports (job_id, recorded, body) SELECT id, ?3, ?4"
		                 " FROM jobs WHERE namespace = ?1 AND name = ?2",
		                 ns, job, &st, err);
	if (rc) {
		free(text);
		return rc;
	}
	kft_rfc3339_now_micro(now);
	sqlite3_bind_text(st, 3, now, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, text, -1, SQLITE_TRANSIENT);
	free(text);
	long long id;
	if ((rc = finish_job_write(s, st, job, err)) != 0)
		return rc;
	id = (long long)sqlite3_last_insert_rowid(s->db);
	/* The history is bounded: keep the newest KFT_STORE_REPORTS_MAX. */
	rc = prepare(s,
	             "DELETE FROM reports WHERE job_id = (SELECT job_id FROM reports WHERE id = ?1)"
	             " AND id <= (SELECT r.id FROM reports r WHERE r.job_id ="
	             " (SELECT job_id FROM reports WHERE id = ?1) ORDER BY r.id DESC"
	             " LIMIT 1 OFFSET ?2)",
	             &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, KFT_STORE_REPORTS_MAX);
	rc = sqlite3_step(st);
	release(s, st);
	return rc == SQLITE_DONE ? 0 : db_fail(s, err, "trimming the reports");
}

int kft_store_reports(kft_store *s, const char *ns, const char *job, long long after, json_t **out,
                      kft_error *err)
{
	sqlite3_stmt *st;
	*out = NULL;
	int rc = prepare_job(s,
	                     "SELECT r.id, r.recorded, r.body FROM jobs j"
	                     " LEFT JOIN reports r ON r.job_id = j.id AND r.id > ?3"
	                     " WHERE j.namespace = ?1 AND j.name = ?2 ORDER BY r.id",
	                     ns, job, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 3, after);
	json_t *arr = json_array();
	int step = SQLITE_DONE, rows = 0;
	while (rc == 0 && arr && (step = sqlite3_step(st)) == SQLITE_ROW) {
		rows++;
		if (sqlite3_column_type(st, 0) == SQLITE_NULL)
			continue;
		json_t *body;
		rc = load_json((const char *)sqlite3_column_text(st, 2), &body, err);
		if (rc == 0 &&
		    json_array_append_new(arr, json_pack("{s:I, s:s, s:o}", "id",
		                                         (json_int_t)sqlite3_column_int64(st, 0),
		                                         "recorded",
		                                         (const char *)sqlite3_column_text(st, 1),
		                                         "trainerStatus", body)) != 0)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	if (!arr)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	else if (rc == 0 && step != SQLITE_DONE)
		rc = db_fail(s, err, "reading the reports");
	else if (rc == 0 && rows == 0)
		rc = not_found(err, job);
	release(s, st);
	if (rc)
		json_decref(arr);
	else
		*out = arr;
	return rc;
}

/* ---- pods --------------------------------------------------------------- */

static bool known_state(const char *state)
{
	static const char *const states[] = {"Pending", "Running", "Succeeded", "Failed"};
	for (size_t i = 0; state && i < sizeof(states) / sizeof(states[0]); i++)
		if (strcmp(state, states[i]) == 0)
			return true;
	return false;
}

static void bind_pod(sqlite3_stmt *st, const kft_pod_record *r)
{
	sqlite3_bind_text(st, 3, r->step, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 4, r->index);
	sqlite3_bind_text(st, 5, r->state, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 6, r->pid);
	sqlite3_bind_int(st, 7, r->exit_code);
	sqlite3_bind_int(st, 8, r->signal);
	sqlite3_bind_int(st, 9, r->restarts);
	sqlite3_bind_text(st, 10, r->started, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 11, r->finished, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 12, r->log_path, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 13, r->start_ticks);
	sqlite3_bind_text(st, 14, r->reason, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 15, r->message, -1, SQLITE_TRANSIENT);
}

int kft_store_pod_upsert(kft_store *s, const char *ns, const char *job, const kft_pod_record *rec,
                         kft_error *err)
{
	sqlite3_stmt *st;
	if (!rec || !rec->step || !*rec->step || rec->index < 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "a pod record needs a step and an index >= 0");
	if (!known_state(rec->state))
		return kft_error_set(err, KFT_EINVAL, "unknown pod state \"%s\"",
		                     rec->state ? rec->state : "");
	int rc = prepare_job(s, SQL_POD_UPSERT, ns, job, &st, err);
	if (rc)
		return rc;
	bind_pod(st, rec);
	return finish_job_write(s, st, job, err);
}

static int fill_pod(sqlite3_stmt *st, kft_pod_record *r)
{
	bool oom = false;
	r->step = col_dup(st, 0, &oom);
	r->index = sqlite3_column_int(st, 1);
	r->state = col_dup(st, 2, &oom);
	r->pid = sqlite3_column_int(st, 3);
	r->exit_code = sqlite3_column_int(st, 4);
	r->signal = sqlite3_column_int(st, 5);
	r->restarts = sqlite3_column_int(st, 6);
	r->started = col_dup(st, 7, &oom);
	r->finished = col_dup(st, 8, &oom);
	r->log_path = col_dup(st, 9, &oom);
	r->start_ticks = sqlite3_column_int64(st, 10);
	r->reason = col_dup(st, 11, &oom);
	r->message = col_dup(st, 12, &oom);
	return oom ? KFT_ENOMEM : 0;
}

/* Appends one row to *recs, growing it geometrically. */
static int push_pod(sqlite3_stmt *st, kft_pod_record **recs, size_t *n, size_t *cap)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		kft_pod_record *grown = realloc(*recs, ncap * sizeof(**recs));
		if (!grown)
			return KFT_ENOMEM;
		*recs = grown;
		*cap = ncap;
	}
	memset(&(*recs)[*n], 0, sizeof(**recs));
	(*n)++;
	return fill_pod(st, &(*recs)[*n - 1]);
}

static int collect_pods(kft_store *s, sqlite3_stmt *st, const char *job, kft_pod_record **recs,
                        size_t *n, kft_error *err)
{
	size_t cap = 0;
	int rc = 0, step, rows = 0;
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		rows++;
		if (sqlite3_column_type(st, 0) != SQLITE_NULL)
			rc = push_pod(st, recs, n, &cap);
	}
	if (rc)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (step != SQLITE_DONE)
		return db_fail(s, err, "reading pod records");
	return rows ? 0 : not_found(err, job);
}

int kft_store_pods(kft_store *s, const char *ns, const char *job, kft_pod_record **recs, size_t *n,
                   kft_error *err)
{
	sqlite3_stmt *st;
	*recs = NULL;
	*n = 0;
	int rc = prepare_job(s,
	                     "SELECT p.step, p.idx, p.state, p.pid, p.exit_code, p.signal,"
	                     " p.restarts, p.started, p.finished, p.log_path, p.start_ticks,"
	                     " p.reason, p.message FROM jobs j LEFT JOIN pods p ON p.job_id = j.id"
	                     " WHERE j.namespace = ?1 AND j.name = ?2 ORDER BY p.step, p.idx",
	                     ns, job, &st, err);
	if (rc)
		return rc;
	rc = collect_pods(s, st, job, recs, n, err);
	release(s, st);
	if (rc) {
		kft_pod_records_free(*recs, *n);
		*recs = NULL;
		*n = 0;
	}
	return rc;
}

void kft_pod_records_free(kft_pod_record *recs, size_t n)
{
	for (size_t i = 0; recs && i < n; i++) {
		free(recs[i].step);
		free(recs[i].state);
		free(recs[i].started);
		free(recs[i].finished);
		free(recs[i].log_path);
		free(recs[i].reason);
		free(recs[i].message);
	}
	free(recs);
}

/* ---- supervisor --------------------------------------------------------- */

int kft_store_set_supervisor_named(kft_store *s, const kft_store_kind *k, const char *sql,
                                   const char *ns, const char *name, int pid, long long ticks,
                                   kft_error *err)
{
	sqlite3_stmt *st;
	int rc = kft_store_prepare_named(s, k, sql, ns, name, &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int(st, 3, pid);
	sqlite3_bind_int64(st, 4, pid ? ticks : 0);
	return kft_store_finish_named_write(s, k, st, name, err);
}

int kft_store_get_supervisor_named(kft_store *s, const kft_store_kind *k, const char *sql,
                                   const char *ns, const char *name, int *pid, long long *ticks,
                                   kft_error *err)
{
	sqlite3_stmt *st;
	*pid = 0;
	*ticks = 0;
	int rc = kft_store_prepare_named(s, k, sql, ns, name, &st, err);
	if (rc)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*pid = sqlite3_column_int(st, 0);
		*ticks = sqlite3_column_int64(st, 1);
		rc = 0;
	} else {
		rc = rc == SQLITE_DONE ? kft_store_not_found_named(k, name, err)
		                       : db_fail(s, err, "reading the supervisor");
	}
	release(s, st);
	return rc;
}

int kft_store_set_supervisor(kft_store *s, const char *ns, const char *job, int pid,
                             long long start_time_ticks, kft_error *err)
{
	return kft_store_set_supervisor_named(
	        s, &trainjob_kind,
	        "UPDATE jobs SET supervisor_pid = ?3, supervisor_start = ?4"
	        " WHERE namespace = ?1 AND name = ?2",
	        ns, job, pid, start_time_ticks, err);
}

int kft_store_get_supervisor(kft_store *s, const char *ns, const char *job, int *pid,
                             long long *start_time_ticks, kft_error *err)
{
	return kft_store_get_supervisor_named(s, &trainjob_kind,
	                                      "SELECT supervisor_pid, supervisor_start FROM jobs"
	                                      " WHERE namespace = ?1 AND name = ?2",
	                                      ns, job, pid, start_time_ticks, err);
}

/* ---- what a job's processes inherit -------------------------------------- */

/* The job's row id, or not found. */
static int job_id(kft_store *s, const char *ns, const char *name, sqlite3_int64 *id, kft_error *err)
{
	sqlite3_stmt *st;
	int rc = prepare_job(s, "SELECT id FROM jobs WHERE namespace = ?1 AND name = ?2", ns, name,
	                     &st, err);
	if (rc)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	release(s, st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? not_found(err, name) : db_fail(s, err, "finding the TrainJob");
}

int kft_store_job_set_objects(kft_store *s, const char *ns, const char *name, const json_t *objects,
                              kft_error *err)
{
	sqlite3_int64 id = 0;
	bool own = false;
	if (!json_is_array(objects))
		return kft_error_set(err, KFT_EINVAL, "the TrainJob's objects must be an array");
	int rc = own_begin(s, &own, err);
	if (rc)
		return rc;
	rc = job_id(s, ns, name, &id, err);
	if (rc == 0) {
		sqlite3_stmt *st;
		rc = prepare(s, "DELETE FROM objects WHERE job_id = ?1", &st, err);
		if (rc == 0) {
			sqlite3_bind_int64(st, 1, id);
			if (sqlite3_step(st) != SQLITE_DONE)
				rc = db_fail(s, err, "replacing the TrainJob's objects");
			release(s, st);
		}
	}
	if (rc == 0)
		rc = insert_objects(s, id, objects, err);
	return own_end(s, own, rc, err);
}

int kft_store_job_set_exec(kft_store *s, const char *ns, const char *name, const char *workdir,
                           const json_t *base_env, kft_error *err)
{
	sqlite3_stmt *st;
	char *env_text = NULL;
	if (base_env && !json_is_array(base_env))
		return kft_error_set(err, KFT_EINVAL, "the base environment must be an array");
	int rc = base_env ? dump_json(base_env, &env_text, err) : 0;
	if (rc == 0)
		rc = prepare_job(s,
		                 "UPDATE jobs SET workdir = ?3, base_env = ?4"
		                 " WHERE namespace = ?1 AND name = ?2",
		                 ns, name, &st, err);
	if (rc) {
		free(env_text);
		return rc;
	}
	sqlite3_bind_text(st, 3, workdir, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, env_text, -1, SQLITE_TRANSIENT);
	free(env_text);
	return finish_job_write(s, st, name, err);
}

static int read_exec_row(sqlite3_stmt *st, char **workdir, json_t **base_env, kft_error *err)
{
	bool oom = false;
	const char *env_text = (const char *)sqlite3_column_text(st, 1);
	*workdir = col_dup(st, 0, &oom);
	if (oom)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = env_text ? load_json(env_text, base_env, err) : 0;
	if (rc == 0 && *base_env && !json_is_array(*base_env))
		rc = kft_error_set(err, KFT_EPARSE, "stored base environment is not an array");
	if (rc) {
		json_decref(*base_env);
		*base_env = NULL;
		free(*workdir);
		*workdir = NULL;
	}
	return rc;
}

int kft_store_job_get_exec(kft_store *s, const char *ns, const char *name, char **workdir,
                           json_t **base_env, kft_error *err)
{
	sqlite3_stmt *st;
	*workdir = NULL;
	*base_env = NULL;
	int rc = prepare_job(
	        s, "SELECT workdir, base_env FROM jobs WHERE namespace = ?1 AND name = ?2", ns,
	        name, &st, err);
	if (rc)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		rc = read_exec_row(st, workdir, base_env, err);
	else
		rc = rc == SQLITE_DONE ? not_found(err, name)
		                       : db_fail(s, err, "reading the job's environment");
	release(s, st);
	return rc;
}

int kft_store_job_set_plugins(kft_store *s, const char *ns, const char *name, const json_t *plugins,
                              kft_error *err)
{
	sqlite3_stmt *st;
	char *text = NULL;
	if (plugins && !json_is_array(plugins))
		return kft_error_set(err, KFT_EINVAL, "the plugin list must be an array");
	int rc = plugins ? dump_json(plugins, &text, err) : 0;
	if (rc == 0)
		rc = prepare_job(s,
		                 "UPDATE jobs SET plugins = ?3 WHERE namespace = ?1 AND name = ?2",
		                 ns, name, &st, err);
	if (rc) {
		free(text);
		return rc;
	}
	sqlite3_bind_text(st, 3, text, -1, SQLITE_TRANSIENT);
	free(text);
	return finish_job_write(s, st, name, err);
}

int kft_store_job_get_plugins(kft_store *s, const char *ns, const char *name, json_t **plugins,
                              kft_error *err)
{
	sqlite3_stmt *st;
	*plugins = NULL;
	int rc = prepare_job(s, "SELECT plugins FROM jobs WHERE namespace = ?1 AND name = ?2", ns,
	                     name, &st, err);
	if (rc)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(st, 0);
		rc = text ? load_json(text, plugins, err) : 0;
		if (rc == 0 && *plugins && !json_is_array(*plugins)) {
			json_decref(*plugins);
			*plugins = NULL;
			rc = kft_error_set(err, KFT_EPARSE, "stored plugin list is not an array");
		}
	} else {
		rc = rc == SQLITE_DONE ? not_found(err, name)
		                       : db_fail(s, err, "reading the job's plugins");
	}
	release(s, st);
	return rc;
}

int kft_store_pods_clear(kft_store *s, const char *ns, const char *job, kft_error *err)
{
	sqlite3_int64 id = 0;
	sqlite3_stmt *st;
	int rc = job_id(s, ns, job, &id, err);
	if (rc == 0)
		rc = prepare(s, "DELETE FROM pods WHERE job_id = ?1", &st, err);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(s, err, "clearing pod records");
	release(s, st);
	return rc;
}

/* ---- for the store's other files (store_internal.h) -------------------------- */

int kft_store_prepare(kft_store *s, const char *sql, sqlite3_stmt **st, kft_error *err)
{
	return prepare(s, sql, st, err);
}

void kft_store_release(kft_store *s, sqlite3_stmt *st)
{
	release(s, st);
}

int kft_store_db_fail(kft_store *s, kft_error *err, const char *what)
{
	return db_fail(s, err, what);
}

sqlite3 *kft_store_db(kft_store *s)
{
	return s->db;
}

int kft_store_dump_json(const json_t *j, char **out, kft_error *err)
{
	return dump_json(j, out, err);
}

int kft_store_load_json(const char *text, json_t **out, kft_error *err)
{
	return load_json(text, out, err);
}

int kft_store_new_uid(char out[37], kft_error *err)
{
	return new_uid(out, err);
}

int kft_store_own_begin(kft_store *s, bool *own, kft_error *err)
{
	return own_begin(s, own, err);
}

int kft_store_own_end(kft_store *s, bool own, int rc, kft_error *err)
{
	return own_end(s, own, rc, err);
}
