/*
 * export.c - a model directory to S3, a directory, or MLflow's model
 * registry (see export.h).
 *
 * The tree is listed first (regular files only, depth and count bounded),
 * so an empty or missing output is refused before anything is written
 * anywhere. Uploads go one file at a time, each whole or not at all (S3
 * multipart uploads are aborted on failure, a copied file appears under
 * its name only once complete), so a retried export overwrites what a
 * failed one left rather than mixing two.
 */
#include "track/export.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "local/fetch.h"
#include "local/s3.h"
#include "track/modelreg.h"
#include "track/track.h"

#define WALK_DEPTH 32
#define WALK_FILES 100000
#define PATH_LEN   4096

/* ---- the tree ------------------------------------------------------------------ */

static int walk(const char *root, const char *rel, int depth, json_t *files, kft_error *err)
{
	char dir[PATH_LEN];
	snprintf(dir, sizeof(dir), "%s%s%s", root, *rel ? "/" : "", rel);
	if (depth > WALK_DEPTH)
		return kft_error_set(err, KFT_ELIMIT, "export: %s is deeper than %d levels", root,
		                     WALK_DEPTH);
	DIR *d = opendir(dir);
	if (!d)
		return kft_error_set(err, errno == ENOENT ? KFT_ENOTFOUND : KFT_EIO,
		                     "export: nothing to export at %s: %s", dir, strerror(errno));
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && (e = readdir(d))) {
		char r[PATH_LEN], full[2 * PATH_LEN];
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(r, sizeof(r), "%s%s%s", rel, *rel ? "/" : "", e->d_name) >=
		    sizeof(r))
			rc = kft_error_set(err, KFT_ELIMIT, "export: a path under %s is too long",
			                   root);
		snprintf(full, sizeof(full), "%s/%s", root, r);
		if (rc || lstat(full, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode))
			rc = walk(root, r, depth + 1, files, err);
		else if (S_ISREG(st.st_mode) && json_array_size(files) >= WALK_FILES)
			rc = kft_error_set(err, KFT_ELIMIT, "export: more than %d files under %s",
			                   WALK_FILES, root);
		else if (S_ISREG(st.st_mode) && json_array_append_new(files, json_string(r)))
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	closedir(d);
	return rc;
}

static int list_files(const char *root, json_t **files, kft_error *err)
{
	*files = json_array();
	if (!*files)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = walk(root, "", 0, *files, err);
	if (rc == 0 && json_array_size(*files) == 0)
		rc = kft_error_set(err, KFT_ENOTFOUND,
		                   "export: nothing to export: %s holds no file", root);
	if (rc) {
		json_decref(*files);
		*files = NULL;
	}
	return rc;
}

/* "exported FILE to WHERE" to the progress function. */
static void said(const kft_export_opts *o, const char *file, const char *where)
{
	char line[2 * PATH_LEN];
	if (!o->progress)
		return;
	snprintf(line, sizeof(line), "exported %s to %s", file, where);
	o->progress(o->progress_ctx, line);
}

/* ---- destinations ------------------------------------------------------------------ */

/* Every file to bucket/prefix. */
static int to_s3(const kft_export_opts *o, const char *bucket, const char *prefix,
                 const json_t *files, kft_error *err)
{
	kft_s3 s;
	kft_track_dest d = {.kind = KFT_DEST_S3, .bucket = (char *)bucket, .path = (char *)prefix};
	int rc = kft_s3_open(bucket, &s, err);
	size_t i;
	const json_t *f;
	json_array_foreach(files, i, f)
	{
		char path[2 * PATH_LEN], *key = NULL;
		if (rc)
			break;
		snprintf(path, sizeof(path), "%s/%s", o->from, json_string_value(f));
		if (!(key = kft_track_dest_key(&d, json_string_value(f))))
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
		else if ((rc = kft_s3_put_file(&s, key, path, o->part_size, err)) == 0)
			said(o, json_string_value(f), bucket);
		free(key);
	}
	return rc;
}

/* mkdir -p for an absolute directory. */
static int make_dirs(const char *dir, kft_error *err)
{
	char p[PATH_LEN];
	if ((size_t)snprintf(p, sizeof(p), "%s", dir) >= sizeof(p))
		return kft_error_set(err, KFT_ELIMIT, "export: %s is too long", dir);
	for (char *s = p + 1;; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			return kft_error_set(err, KFT_EIO, "export: mkdir %s: %s", p,
			                     strerror(errno));
		*s = c;
		if (!c)
			return 0;
	}
}

/* The tree copied into dir, as the file:// initializer copies one. */
static int to_dir(const kft_export_opts *o, const char *dir, kft_error *err)
{
	char uri[PATH_LEN + 8];
	int rc = make_dirs(dir, err);
	snprintf(uri, sizeof(uri), "file://%s", o->from);
	if (rc == 0 && (rc = kft_fetch_uri(uri, dir, NULL, err)) == 0)
		said(o, o->from, dir);
	return rc;
}

/* The tree as artifacts under rel of a run whose artifact store is
 * artifact_uri: the tracking server's, an S3 bucket, or a directory here. */
static int to_artifacts(const kft_export_opts *o, kft_mlflow *m, const char *artifact_uri,
                        const char *rel, const json_t *files, kft_error *err)
{
	if (strncmp(artifact_uri, "s3://", 5) == 0) {
		kft_track_dest d;
		int rc = kft_track_dest_parse(artifact_uri, &d, err);
		char *prefix = rc == 0 ? kft_track_dest_key(&d, rel) : NULL;
		if (rc == 0)
			rc = prefix ? to_s3(o, d.bucket, prefix, files, err)
			            : kft_error_set(err, KFT_ENOMEM, "out of memory");
		free(prefix);
		kft_track_dest_free(&d);
		return rc;
	}
	if (artifact_uri[0] == '/' || strncmp(artifact_uri, "file://", 7) == 0) {
		char dir[PATH_LEN];
		snprintf(dir, sizeof(dir), "%s/%s", artifact_uri + (artifact_uri[0] == '/' ? 0 : 7),
		         rel);
		return to_dir(o, dir, err);
	}
	size_t i;
	const json_t *f;
	int rc = 0;
	json_array_foreach(files, i, f)
	{
		char path[2 * PATH_LEN], art[PATH_LEN];
		if (rc)
			break;
		snprintf(path, sizeof(path), "%s/%s", o->from, json_string_value(f));
		snprintf(art, sizeof(art), "%s/%s", rel, json_string_value(f));
		if ((rc = kft_mlflow_artifact_put(m, artifact_uri, art, path, err)) == 0)
			said(o, json_string_value(f), artifact_uri);
	}
	return rc;
}

static int64_t now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* The job's run: found by its uid tag, or made (tracking off, or its start
 * not sent yet). *run_id and *artifact_uri malloc'd. */
static int job_run(const kft_export_opts *o, kft_mlflow *m, char **run_id, char **artifact_uri,
                   kft_error *err)
{
	kft_track_run run;
	char *exp = NULL;
	json_t *info = NULL;
	int rc = kft_track_run_of_trainjob(o->trainjob, o->default_experiment, &run, err);
	if (rc)
		return rc;
	rc = kft_mlflow_experiment(m, run.experiment, &exp, err);
	if (rc == 0)
		rc = kft_mlflow_run_ensure(m, exp, KFT_TRACK_TAG_UID, run.uid, run.name, now_ms(),
		                           run.tags, &info, err);
	const char *id = json_string_value(json_object_get(info, "run_id"));
	const char *art = json_string_value(json_object_get(info, "artifact_uri"));
	if (rc == 0 && (!id || !art))
		rc = kft_error_set(err, KFT_EPARSE, "export: the run has no id or artifact URI");
	if (rc == 0 && (!(*run_id = strdup(id)) || !(*artifact_uri = strdup(art))))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(info);
	free(exp);
	kft_track_run_free(&run);
	return rc;
}

/* The tree as run artifact "model", then a registered model version. */
static int to_registry(const kft_export_opts *o, kft_mlflow *m, const char *name,
                       const json_t *files, char **run_id, char **where, kft_error *err)
{
	char *art = NULL, *source = NULL, *version = NULL;
	int rc = job_run(o, m, run_id, &art, err);
	if (rc == 0)
		rc = to_artifacts(o, m, art, "model", files, err);
	if (rc == 0 && asprintf(&source, "%s/model", art) < 0)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0)
		rc = kft_mlflow_model_version(m, name, source, *run_id, &version, err);
	if (rc == 0 && asprintf(where, "models:/%s/%s", name, version) < 0)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	free(art);
	free(source);
	free(version);
	return rc;
}

/* The exported files (at where) as a version of the model register-to
 * names in the Kubeflow Model Registry; *where then says so too. */
static int to_model_registry(const kft_export_opts *o, const char *model, char **where,
                             kft_error *err)
{
	const json_t *meta = json_object_get(o->trainjob, "metadata");
	const char *version = json_string_value(json_object_get(meta, "name"));
	kft_mlflow_opts mo = {.uri = getenv(KFT_MODELREG_URL_ENV),
	                      .setting = KFT_MODELREG_URL_ENV,
	                      .label = "model registry"};
	kft_mlflow *c = NULL;
	char *id = NULL, *said = NULL;
	if (!mo.uri)
		return kft_error_set(
		        err, KFT_EINVAL,
		        "register %s: no Model Registry server (set " KFT_MODELREG_URL_ENV ")",
		        model);
	if (!version)
		return kft_error_set(err, KFT_EINVAL, "register %s: the TrainJob has no name",
		                     model);
	int rc = kft_mlflow_open(&mo, &c, err);
	if (rc == 0)
		rc = kft_modelreg_register(c, model, version, *where, "kftrainer", &id, err);
	if (rc == 0 &&
	    asprintf(&said, "%s, registered as %s version %s", *where, model, version) < 0)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0) {
		free(*where);
		*where = said;
	}
	free(id);
	kft_mlflow_close(c);
	return rc;
}

/* Tags the job's run (when there is one) with where the model went. */
static void tag_run(const kft_export_opts *o, kft_mlflow *m, const char *run_id, const char *where)
{
	char *id = run_id ? strdup(run_id) : NULL, *art = NULL;
	if (!id && job_run(o, m, &id, &art, NULL) != 0)
		id = NULL;
	json_t *tags = json_pack("[{s:s, s:s}]", "key", "kftrainer.export.uri", "value", where);
	if (id && tags)
		kft_mlflow_log_batch(m, id, NULL, NULL, tags, NULL);
	json_decref(tags);
	free(id);
	free(art);
}

int kft_export_run(const kft_export_opts *o, char **where, kft_error *err)
{
	kft_track_dest d;
	json_t *files = NULL;
	kft_mlflow *m = NULL;
	char *run_id = NULL;
	*where = NULL;
	int rc = kft_track_dest_parse(o->to, &d, err);
	if (rc)
		return rc;
	if (d.kind == KFT_DEST_MLFLOW && !o->mlflow.uri)
		rc = kft_error_set(err, KFT_EINVAL,
		                   "export to %s: no tracking server (set MLFLOW_TRACKING_URI)",
		                   o->to);
	if (rc == 0)
		rc = list_files(o->from, &files, err);
	if (rc == 0 && o->mlflow.uri)
		rc = kft_mlflow_open(&o->mlflow, &m, err);
	if (rc == 0 && d.kind == KFT_DEST_S3)
		rc = to_s3(o, d.bucket, d.path, files, err);
	else if (rc == 0 && d.kind == KFT_DEST_FILE)
		rc = to_dir(o, d.path, err);
	else if (rc == 0)
		rc = to_registry(o, m, d.path, files, &run_id, where, err);
	if (rc == 0 && !*where && !(*where = strdup(o->to)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	const char *reg = json_string_value(json_object_get(
	        json_object_get(json_object_get(o->trainjob, "metadata"), "annotations"),
	        KFT_TRACK_ANN_REGISTER_TO));
	if (rc == 0 && reg && d.kind != KFT_DEST_MLFLOW)
		rc = to_model_registry(o, reg, where, err);
	if (rc == 0 && m && o->trainjob && kft_track_wanted(o->trainjob))
		tag_run(o, m, run_id, *where);
	kft_mlflow_close(m);
	free(run_id);
	json_decref(files);
	kft_track_dest_free(&d);
	return rc;
}
