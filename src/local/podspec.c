/*
 * podspec.c - the kubelet's share of starting a container, for the local
 * backend: pod identity, environment, $(VAR) expansion and volumes.
 *
 * The work happens in one pass over the container: the pod's metadata is
 * assembled first (fieldRefs read it), then envFrom and env fill a name/value
 * list (a later name replaces an earlier value in place), then command/args are
 * expanded and finally every string is checked against the mount table for
 * path rewriting. The mount table is built before the env so rewriting can run
 * over finished values. See podspec.h for the user-visible rules.
 */
#include "local/podspec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/digest.h"
#include "kftrainer/constants.h"
#include "util/strbuf.h"
#include "util/base64.h"
#include "util/json.h"

#define MAX_ITEMS 4096
#define MAX_VALUE (1u << 20)

/* ---- small helpers -------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int jbool(const json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

typedef struct env_list {
	char **names, **values;
	size_t n, cap;
} env_list;

static void env_list_free(env_list *e)
{
	for (size_t i = 0; i < e->n; i++) {
		free(e->names[i]);
		free(e->values[i]);
	}
	free(e->names);
	free(e->values);
	memset(e, 0, sizeof(*e));
}

static const char *env_get(const env_list *e, const char *name)
{
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->names[i], name) == 0)
			return e->values[i];
	return NULL;
}

static const char *env_lookup(const char *name, void *ctx)
{
	return env_get(ctx, name);
}

/* Takes ownership of value. */
static int env_set(env_list *e, const char *name, char *value, kft_error *err)
{
	if (!value)
		return kft_error_set(err, KFT_ENOMEM, "out of memory building env %s", name);
	for (size_t i = 0; i < e->n; i++) {
		if (strcmp(e->names[i], name) == 0) {
			free(e->values[i]);
			e->values[i] = value;
			return 0;
		}
	}
	if (e->n >= MAX_ITEMS) {
		free(value);
		return kft_error_set(err, KFT_ELIMIT, "more than %d environment variables",
		                     MAX_ITEMS);
	}
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 16;
		char **n = realloc(e->names, cap * sizeof(*n));
		if (n)
			e->names = n;
		char **v = n ? realloc(e->values, cap * sizeof(*v)) : NULL;
		if (!v) {
			free(value);
			return kft_error_set(err, KFT_ENOMEM, "out of memory building env");
		}
		e->values = v;
		e->cap = cap;
	}
	e->names[e->n] = strdup(name);
	if (!e->names[e->n]) {
		free(value);
		return kft_error_set(err, KFT_ENOMEM, "out of memory building env");
	}
	e->values[e->n++] = value;
	return 0;
}

/* ---- $(VAR) expansion ------------------------------------------------------ */

/* One '$' at in[0] with at least one byte after it: writes its meaning and
 * returns how many bytes were consumed. */
static size_t expand_one(kft_strbuf *b, const char *in, const char *(*lookup)(const char *, void *),
                         void *ctx)
{
	if (in[1] == '$') {
		kft_strbuf_putc(b, '$');
		return 2;
	}
	if (in[1] != '(') {
		/* "$x" stays; a multi-byte character is copied whole on the next step */
		kft_strbuf_putc(b, '$');
		return 1;
	}
	const char *close = strchr(in + 2, ')');
	if (!close) {
		kft_strbuf_puts(b, "$(");
		return 2;
	}
	size_t n = (size_t)(close - (in + 2));
	char *name = strndup(in + 2, n);
	const char *v = name ? lookup(name, ctx) : NULL;
	if (v)
		kft_strbuf_puts(b, v);
	else
		kft_strbuf_putn(b, in, n + 3);
	if (!name)
		b->failed = 1;
	free(name);
	return n + 3;
}

char *kft_expand_vars(const char *in, const char *(*lookup)(const char *name, void *ctx), void *ctx)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	while (*in && !b.failed && b.len <= MAX_VALUE) {
		const char *d = strchr(in, '$');
		if (!d || !d[1]) {
			kft_strbuf_puts(&b, in);
			break;
		}
		kft_strbuf_putn(&b, in, (size_t)(d - in));
		in = d + expand_one(&b, d, lookup, ctx);
	}
	if (b.len > MAX_VALUE) {
		kft_strbuf_free(&b);
		return NULL;
	}
	if (b.len == 0 && !b.failed) {
		kft_strbuf_free(&b);
		return strdup("");
	}
	return kft_strbuf_detach(&b);
}

/* ---- objects: ConfigMaps and Secrets ------------------------------------- */

static const json_t *find_object(const json_t *objects, const char *kind, const char *name,
                                 const char *ns)
{
	const json_t *list = json_is_array(objects) ? objects : json_object_get(objects, "items");
	size_t i;
	const json_t *o;
	json_array_foreach(list, i, o)
	{
		const json_t *md = json_object_get(o, "metadata");
		const char *ons = jstr(md, "namespace");
		if (jstr(o, "kind") && strcmp(jstr(o, "kind"), kind) == 0 && jstr(md, "name") &&
		    strcmp(jstr(md, "name"), name) == 0 && (!ons || strcmp(ons, ns) == 0))
			return o;
	}
	return NULL;
}

/* The value of key in a ConfigMap or Secret as a heap buffer (decoded), NULL
 * with *missing set when the key is absent, NULL otherwise on bad data. */
static char *object_key(const json_t *obj, int secret, const char *key, size_t *len, int *missing)
{
	const char *v = jstr(json_object_get(obj, "stringData"), key);
	*missing = 0;
	if (!v && !secret)
		v = jstr(json_object_get(obj, "data"), key);
	if (v) {
		*len = strlen(v);
		return strdup(v);
	}
	v = jstr(json_object_get(obj, secret ? "data" : "binaryData"), key);
	if (!v) {
		*missing = 1;
		return NULL;
	}
	return kft_base64_decode(v, len);
}

/* Every key of a ConfigMap or Secret, in document order, into a JSON object
 * key -> 1 (only the key set matters). */
static void object_keys(const json_t *obj, int secret, json_t *keys)
{
	const char *fields[] = {"data", secret ? "stringData" : "binaryData"};
	for (size_t f = 0; f < 2; f++) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)json_object_get(obj, fields[f]), k, v)
		        json_object_set_new(keys, k, json_true());
	}
}

/* ---- the pod: identity and metadata -------------------------------------- */

typedef struct pod_ctx {
	const json_t *jobset, *rjob, *podspec, *container, *objects;
	const char *ns, *job_dir;
	const kft_podspec_defaults *defaults; /* never NULL */
	json_t *claim_volume; /* a volume standing for a volumeClaimPolicies template */
	char *pod_name;
	json_t *labels, *annotations;
	kft_mount *mounts;
	size_t n_mounts;
} pod_ctx;

static const json_t *find_rjob(const json_t *js, const char *name, long *global_off,
                               long *global_total)
{
	const json_t *found = NULL, *r;
	size_t i;
	*global_off = *global_total = 0;
	json_array_foreach(json_object_get(json_object_get(js, "spec"), "replicatedJobs"), i, r)
	{
		const json_t *reps = json_object_get(r, "replicas");
		long n = reps ? (long)json_integer_value(reps) : 1;
		if (jstr(r, "name") && strcmp(jstr(r, "name"), name) == 0)
			found = r;
		if (!found)
			*global_off += n;
		*global_total += n;
	}
	return found;
}

static const char *group_of(const json_t *r)
{
	return jstr(r, "groupName") ? jstr(r, "groupName") : "default";
}

/* Offset of `rjob` inside its group and the group's total replicas. */
static void group_counts(const json_t *js, const json_t *rjob, long *off, long *total)
{
	const json_t *r;
	size_t i;
	int seen = 0;
	*off = *total = 0;
	json_array_foreach(json_object_get(json_object_get(js, "spec"), "replicatedJobs"), i, r)
	{
		const json_t *reps = json_object_get(r, "replicas");
		long n = reps ? (long)json_integer_value(reps) : 1;
		if (strcmp(group_of(r), group_of(rjob)) != 0)
			continue;
		if (r == rjob)
			seen = 1;
		if (!seen)
			*off += n;
		*total += n;
	}
}

/* JobSet's controller puts the same key/value on labels and annotations. */
static void set_both(pod_ctx *p, const char *key, const char *s)
{
	json_object_set_new(p->labels, key, json_string(s));
	json_object_set_new(p->annotations, key, json_string(s));
}

static void set_both_n(pod_ctx *p, const char *key, long v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%ld", v);
	set_both(p, key, buf);
}

/* JobSet's job-key label: the SHA-1 hex digest of "namespace/job-name". */
static void job_key(const char *ns, const char *job, char hex[2 * KFT_SHA1_LEN + 1])
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "%s/%s", ns, job);
	kft_sha1_hex(kft_strbuf_str(&b), b.len, hex);
	kft_strbuf_free(&b);
}

static int pod_metadata(pod_ctx *p, const json_t *tmeta, int replica, int index, long goff,
                        long gtotal)
{
	const char *jsname = jstr(json_object_get(p->jobset, "metadata"), "name");
	const char *rname = jstr(p->rjob, "name");
	const json_t *reps = json_object_get(p->rjob, "replicas");
	long grp_off, grp_total;
	char job[512], hex[2 * KFT_SHA1_LEN + 1];
	snprintf(job, sizeof(job), "%s-%s-%d", jsname, rname, replica);
	job_key(p->ns, job, hex);
	group_counts(p->jobset, p->rjob, &grp_off, &grp_total);
	p->labels = json_deep_copy(json_object_get(tmeta, "labels"));
	p->annotations = json_deep_copy(json_object_get(tmeta, "annotations"));
	if (!p->labels)
		p->labels = json_object();
	if (!p->annotations)
		p->annotations = json_object();
	if (!json_is_object(p->labels) || !json_is_object(p->annotations))
		return -1;
	set_both(p, "jobset.sigs.k8s.io/jobset-name", jsname);
	set_both(p, "jobset.sigs.k8s.io/replicatedjob-name", rname);
	set_both_n(p, "jobset.sigs.k8s.io/restart-attempt", p->defaults->restart_attempt);
	set_both_n(p, "jobset.sigs.k8s.io/replicatedjob-replicas",
	           reps ? (long)json_integer_value(reps) : 1);
	set_both_n(p, "jobset.sigs.k8s.io/global-replicas", gtotal);
	set_both_n(p, "jobset.sigs.k8s.io/job-index", replica);
	set_both(p, "jobset.sigs.k8s.io/job-key", hex);
	set_both_n(p, "jobset.sigs.k8s.io/job-global-index", goff + replica);
	set_both(p, "jobset.sigs.k8s.io/group-name", group_of(p->rjob));
	set_both_n(p, "jobset.sigs.k8s.io/group-replicas", grp_total);
	set_both_n(p, "jobset.sigs.k8s.io/job-group-index", grp_off + replica);
	set_both_n(p, "batch.kubernetes.io/job-completion-index", index);
	json_object_set_new(p->labels, "batch.kubernetes.io/job-name", json_string(job));
	json_object_set_new(p->labels, "job-name", json_string(job));
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "%s-%d-%s", job, index, KFT_POD_NAME_SUFFIX);
	p->pod_name = kft_strbuf_detach(&b);
	return p->pod_name ? 0 : -1;
}

/* metadata.labels['k'] / metadata.annotations['k']: the key, or NULL. */
static char *subscript(const char *path, const char *prefix)
{
	size_t n = strlen(prefix), len = strlen(path);
	if (strncmp(path, prefix, n) != 0 || len < n + 4 || path[n] != '[' || path[n + 1] != '\'' ||
	    strcmp(path + len - 2, "']") != 0)
		return NULL;
	return strndup(path + n + 2, len - n - 4);
}

static int field_ref(pod_ctx *p, const char *path, char **out, kft_error *err)
{
	const char *v = NULL;
	char *key;
	if (strcmp(path, "metadata.name") == 0)
		v = p->pod_name;
	else if (strcmp(path, "metadata.namespace") == 0)
		v = p->ns;
	else if (!strcmp(path, "status.podIP") || !strcmp(path, "status.podIPs") ||
	         !strcmp(path, "status.hostIP") || !strcmp(path, "status.hostIPs"))
		v = "127.0.0.1";
	else if (strcmp(path, "spec.nodeName") == 0)
		v = "localhost";
	else if (strcmp(path, "spec.serviceAccountName") == 0)
		v = jstr(p->podspec, "serviceAccountName") ? jstr(p->podspec, "serviceAccountName")
		                                           : "default";
	else if ((key = subscript(path, "metadata.labels")) != NULL ||
	         (key = subscript(path, "metadata.annotations")) != NULL) {
		const json_t *m = path[9] == 'l' ? p->labels : p->annotations;
		v = jstr(m, key) ? jstr(m, key) : "";
		free(key);
	} else
		return kft_error_set(err, KFT_EINVAL,
		                     "fieldRef %s is not supported by the local backend", path);
	*out = strdup(v);
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* ---- env ------------------------------------------------------------------ */

static int key_ref(pod_ctx *p, const json_t *ref, int secret, char **out, kft_error *err)
{
	const char *name = jstr(ref, "name"), *key = jstr(ref, "key");
	const char *kind = secret ? "Secret" : "ConfigMap";
	const json_t *obj;
	size_t len;
	int missing;
	*out = NULL;
	if (!name || !key)
		return kft_error_set(err, KFT_EINVAL, "%sKeyRef needs name and key",
		                     secret ? "secret" : "configMap");
	obj = find_object(p->objects, kind, name, p->ns);
	if (!obj) {
		if (jbool(ref, "optional"))
			return 1;
		return kft_error_set(err, KFT_ENOTFOUND, "%s \"%s\" not found",
		                     secret ? "secrets" : "configmaps", name);
	}
	*out = object_key(obj, secret, key, &len, &missing);
	if (*out)
		return 0;
	if (!missing)
		return kft_error_set(err, KFT_EINVAL, "key %s in %s %s/%s is not valid base64", key,
		                     kind, p->ns, name);
	if (jbool(ref, "optional"))
		return 1;
	return kft_error_set(err, KFT_ENOTFOUND, "couldn't find key %s in %s %s/%s", key, kind,
	                     p->ns, name);
}

static int env_from(pod_ctx *p, env_list *env, kft_error *err)
{
	const json_t *src;
	size_t i;
	json_array_foreach(json_object_get(p->container, "envFrom"), i, src)
	{
		int secret = json_object_get(src, "secretRef") != NULL;
		const json_t *ref = json_object_get(src, secret ? "secretRef" : "configMapRef");
		const char *prefix = jstr(src, "prefix") ? jstr(src, "prefix") : "";
		const char *name = jstr(ref, "name");
		const json_t *obj;
		if (!name)
			return kft_error_set(err, KFT_EINVAL,
			                     "envFrom[%zu] names no ConfigMap or Secret", i);
		obj = find_object(p->objects, secret ? "Secret" : "ConfigMap", name, p->ns);
		if (!obj) {
			if (jbool(ref, "optional"))
				continue;
			return kft_error_set(err, KFT_ENOTFOUND, "%s \"%s\" not found",
			                     secret ? "secrets" : "configmaps", name);
		}
		json_t *keys = json_object();
		const char *k;
		json_t *unused;
		object_keys(obj, secret, keys);
		json_object_foreach(keys, k, unused)
		{
			char *full = NULL, *v;
			size_t len;
			int missing, rc;
			v = object_key(obj, secret, k, &len, &missing);
			if (asprintf(&full, "%s%s", prefix, k) < 0) {
				full = NULL;
				rc = -1;
			} else
				rc = 0;
			if (rc == 0 && v)
				rc = env_set(env, full, v, err);
			else {
				free(v);
				rc = kft_error_set(err, KFT_EINVAL, "key %s of %s is not valid", k,
				                   name);
			}
			free(full);
			if (rc < 0) {
				json_decref(keys);
				return rc;
			}
		}
		json_decref(keys);
	}
	return 0;
}

static int env_entry(pod_ctx *p, env_list *env, const json_t *e, kft_error *err)
{
	const char *name = jstr(e, "name");
	const json_t *vf = json_object_get(e, "valueFrom");
	char *v = NULL;
	int rc = 0;
	if (!name)
		return kft_error_set(err, KFT_EINVAL, "an env entry has no name");
	if (json_object_get(vf, "fieldRef"))
		rc = field_ref(p, jstr(json_object_get(vf, "fieldRef"), "fieldPath") ?: "", &v,
		               err);
	else if (json_object_get(vf, "secretKeyRef"))
		rc = key_ref(p, json_object_get(vf, "secretKeyRef"), 1, &v, err);
	else if (json_object_get(vf, "configMapKeyRef"))
		rc = key_ref(p, json_object_get(vf, "configMapKeyRef"), 0, &v, err);
	else if (vf)
		return kft_error_set(err, KFT_EINVAL,
		                     "env %s: this valueFrom is not supported by the local backend",
		                     name);
	else {
		v = kft_expand_vars(jstr(e, "value") ?: "", env_lookup, env);
		if (!v)
			return kft_error_set(err, KFT_ELIMIT, "env %s expands beyond %u bytes",
			                     name, MAX_VALUE);
	}
	if (rc != 0)
		return rc < 0 ? rc : 0; /* 1: optional and missing, skipped */
	return env_set(env, name, v, err);
}

/* ---- volumes --------------------------------------------------------------- */

static int mkdir_p(const char *path, kft_error *err)
{
	char buf[4096];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return kft_error_set(err, KFT_ELIMIT, "path too long: %s", path);
	for (char *s = buf + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST)
				return kft_error_set(err, KFT_EIO, "mkdir %s: %s", buf,
				                     strerror(errno));
			*s = c;
			if (!c)
				return 0;
		}
	}
}

/* A relative path with no "..", "." or empty component. */
static int safe_relpath(const char *p)
{
	if (!p || !*p || *p == '/' || strlen(p) > 1024)
		return 0;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return 0;
		s += n;
		if (*s)
			s++;
	}
	return 1;
}

static int write_file(const char *dir, const char *rel, const char *data, size_t len, int mode,
                      kft_error *err)
{
	char path[4096], tmp[4200];
	int fd, rc = 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
		return kft_error_set(err, KFT_ELIMIT, "path too long: %s/%s", dir, rel);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	rc = mkdir_p(path, err);
	*slash = '/';
	if (rc < 0)
		return rc;
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return kft_error_set(err, KFT_EIO, "create %s: %s", tmp, strerror(errno));
	if ((len && write(fd, data, len) != (ssize_t)len) || fchmod(fd, (mode_t)mode) != 0)
		rc = kft_error_set(err, KFT_EIO, "write %s: %s", tmp, strerror(errno));
	if (close(fd) != 0 && rc == 0)
		rc = kft_error_set(err, KFT_EIO, "close %s: %s", tmp, strerror(errno));
	if (rc == 0 && rename(tmp, path) != 0)
		rc = kft_error_set(err, KFT_EIO, "rename %s: %s", path, strerror(errno));
	if (rc < 0)
		unlink(tmp);
	return rc;
}

static int project_key(const json_t *obj, int secret, const char *key, const char *rel, int mode,
                       int optional, const char *dir, kft_error *err)
{
	size_t len;
	int missing, rc;
	char *data = object_key(obj, secret, key, &len, &missing);
	if (!data) {
		if (missing && optional)
			return 0;
		return kft_error_set(err, missing ? KFT_ENOTFOUND : KFT_EINVAL,
		                     "%s references non-existent config key: %s",
		                     secret ? "secret" : "configmap", key);
	}
	if (!safe_relpath(rel))
		rc = kft_error_set(err, KFT_EINVAL,
		                   "volume item path %s is not a safe relative path", rel);
	else
		rc = write_file(dir, rel, data, len, mode & 07777, err);
	free(data);
	return rc;
}

/* configMap / secret volume: write its files into dir. */
static int materialise(pod_ctx *p, const json_t *src, int secret, const char *dir, kft_error *err)
{
	const char *name = jstr(src, secret ? "secretName" : "name");
	const json_t *dm = json_object_get(src, "defaultMode"), *it;
	int mode = dm ? (int)json_integer_value(dm) : secret ? 0600 : 0644;
	int optional = jbool(src, "optional"), rc = 0;
	const json_t *obj =
	        name ? find_object(p->objects, secret ? "Secret" : "ConfigMap", name, p->ns) : NULL;
	size_t i;
	if (!obj)
		return optional
		               ? 0
		               : kft_error_set(err, KFT_ENOTFOUND, "%s \"%s\" not found",
		                               secret ? "secrets" : "configmaps", name ? name : "");
	if (json_array_size(json_object_get(src, "items")) > 0) {
		json_array_foreach(json_object_get(src, "items"), i, it)
		{
			const json_t *m = json_object_get(it, "mode");
			rc = project_key(obj, secret, jstr(it, "key") ?: "", jstr(it, "path"),
			                 m ? (int)json_integer_value(m) : mode, optional, dir, err);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	json_t *keys = json_object();
	const char *k;
	json_t *unused;
	object_keys(obj, secret, keys);
	json_object_foreach(keys, k, unused)
	{
		if ((rc = project_key(obj, secret, k, k, mode, 0, dir, err)) < 0)
			break;
	}
	json_decref(keys);
	return rc;
}

/* The JobSet controller adds a volume claiming "<template>-<jobset>" to every
 * pod that mounts a volumeClaimPolicies template by name; locally the claim's
 * directory is named after the template, so every pod of the job shares it. */
static const json_t *claim_template_volume(pod_ctx *p, const char *name)
{
	const json_t *pol, *tpl;
	size_t i, j;
	json_array_foreach(
	        json_object_get(json_object_get(p->jobset, "spec"), "volumeClaimPolicies"), i, pol)
	{
		json_array_foreach(json_object_get(pol, "templates"), j, tpl)
		{
			const char *tn = jstr(json_object_get(tpl, "metadata"), "name");
			if (!tn || strcmp(tn, name) != 0)
				continue;
			json_decref(p->claim_volume);
			p->claim_volume = json_pack("{s:s, s:{s:s}}", "name", name,
			                            "persistentVolumeClaim", "claimName", name);
			return p->claim_volume;
		}
	}
	return NULL;
}

static int volume_dir(pod_ctx *p, const json_t *vol, char **dir, int *ro, kft_error *err)
{
	const char *vname = jstr(vol, "name");
	const json_t *pvc = json_object_get(vol, "persistentVolumeClaim");
	const char *leaf = pvc ? jstr(pvc, "claimName") : vname;
	int cm = json_object_get(vol, "configMap") != NULL;
	int sec = json_object_get(vol, "secret") != NULL;
	if (!pvc && !cm && !sec && !json_object_get(vol, "emptyDir"))
		return kft_error_set(err, KFT_EINVAL,
		                     "volume %s: only emptyDir, configMap, secret and "
		                     "persistentVolumeClaim volumes run locally",
		                     vname);
	if (!leaf || !safe_relpath(leaf) || strchr(leaf, '/'))
		return kft_error_set(err, KFT_EINVAL, "volume name %s is not usable as a directory",
		                     leaf ? leaf : "");
	if (asprintf(dir, "%s/volumes/%s", p->job_dir, leaf) < 0) {
		*dir = NULL;
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	*ro = cm || sec || (pvc && jbool(pvc, "readOnly"));
	if (p->defaults->dry)
		return 0;
	int rc = mkdir_p(*dir, err);
	if (rc == 0 && (cm || sec))
		rc = materialise(p, json_object_get(vol, cm ? "configMap" : "secret"), sec, *dir,
		                 err);
	return rc;
}

static int add_mount(pod_ctx *p, const json_t *vm, kft_error *err)
{
	const char *name = jstr(vm, "name"), *mp = jstr(vm, "mountPath");
	const char *sub = jstr(vm, "subPath");
	const json_t *vol =
	        name ? kft_json_find(json_object_get(p->podspec, "volumes"), "name", name) : NULL;
	kft_mount *m;
	if (!vol && name)
		vol = claim_template_volume(p, name);
	char *dir = NULL;
	int ro = 0, rc;
	if (!vol || !mp || mp[0] != '/')
		return kft_error_set(err, KFT_EINVAL,
		                     "cannot find volume \"%s\" to mount into "
		                     "container \"%s\"",
		                     name ? name : "", jstr(p->container, "name"));
	if ((rc = volume_dir(p, vol, &dir, &ro, err)) < 0) {
		free(dir);
		return rc;
	}
	if (sub && *sub) {
		char *full = NULL;
		if (!safe_relpath(sub))
			rc = kft_error_set(err, KFT_EINVAL,
			                   "subPath %s must be relative, without ..", sub);
		else if (asprintf(&full, "%s/%s", dir, sub) < 0)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
		else if (!p->defaults->dry)
			rc = mkdir_p(full, err);
		free(dir);
		dir = full;
		if (rc < 0) {
			free(dir);
			return rc;
		}
	}
	m = &p->mounts[p->n_mounts++];
	m->mount_path = strdup(mp);
	m->host_path = dir;
	m->read_only = ro || jbool(vm, "readOnly");
	size_t n = m->mount_path ? strlen(m->mount_path) : 0;
	while (n > 1 && m->mount_path[n - 1] == '/')
		m->mount_path[--n] = '\0';
	return m->mount_path ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

static int build_mounts(pod_ctx *p, kft_error *err)
{
	const json_t *vms = json_object_get(p->container, "volumeMounts"), *vm;
	size_t i, n = json_array_size(vms);
	if (n > MAX_ITEMS)
		return kft_error_set(err, KFT_ELIMIT, "more than %d volumeMounts", MAX_ITEMS);
	p->mounts = calloc(n ? n : 1, sizeof(*p->mounts));
	if (!p->mounts)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_array_foreach(vms, i, vm)
	{
		int rc = add_mount(p, vm, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- mount path rewriting ------------------------------------------------- */

/* The mount whose path starts s at a path boundary (longest wins), or NULL;
 * *len is its path's length. */
static const kft_mount *mount_at(const pod_ctx *p, const char *s, size_t *len)
{
	const kft_mount *best = NULL;
	*len = 0;
	for (size_t i = 0; i < p->n_mounts; i++) {
		const char *mp = p->mounts[i].mount_path;
		size_t n = strlen(mp);
		if (n <= 1 || n <= *len || strncmp(s, mp, n) != 0 || (s[n] && s[n] != '/'))
			continue;
		best = &p->mounts[i];
		*len = n;
	}
	return best;
}

/* Without a view: s with a mount path that starts it, or follows its first
 * '=', replaced by the mount's host directory (podspec.h); in a view, or
 * when no mount matches, s itself. Takes ownership of s. */
static char *rewrite(const pod_ctx *p, char *s)
{
	if (!s || p->defaults->view)
		return s;
	const char *eq = strchr(s, '=');
	size_t at = 0, len;
	const kft_mount *m = mount_at(p, s, &len);
	if (!m && eq && (m = mount_at(p, eq + 1, &len)))
		at = (size_t)(eq + 1 - s);
	if (!m)
		return s;
	char *out = NULL;
	if (asprintf(&out, "%.*s%s%s", (int)at, s, m->host_path, s + at + len) < 0)
		out = NULL;
	free(s);
	return out;
}

/* ---- argv, envp and the whole --------------------------------------------- */

static int build_argv(pod_ctx *p, const env_list *env, kft_podspec *out, kft_error *err)
{
	const json_t *cmd = json_object_get(p->container, "command");
	const json_t *args = json_object_get(p->container, "args");
	size_t nc = json_array_size(cmd), na = json_array_size(args), k = 0;
	if (nc == 0 && p->defaults->native) {
		out->argv = calloc(1, sizeof(char *));
		return out->argv ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	if (nc == 0)
		return kft_error_set(
		        err, KFT_EINVAL,
		        "container %s has no command: the local backend cannot read an "
		        "image's entrypoint",
		        jstr(p->container, "name"));
	if (nc + na > MAX_ITEMS)
		return kft_error_set(err, KFT_ELIMIT, "more than %d command and args", MAX_ITEMS);
	out->argv = calloc(nc + na + 1, sizeof(char *));
	if (!out->argv)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (size_t i = 0; i < nc + na; i++) {
		const char *w =
		        json_string_value(json_array_get(i < nc ? cmd : args, i < nc ? i : i - nc));
		if (!w)
			return kft_error_set(err, KFT_EINVAL,
			                     "command/args word %zu is not a string", i);
		out->argv[k] = rewrite(p, kft_expand_vars(w, env_lookup, (void *)env));
		if (!out->argv[k++])
			return kft_error_set(err, KFT_ELIMIT, "command/args word %zu is too long",
			                     i);
	}
	return 0;
}

static char *mounts_json(const pod_ctx *p)
{
	json_t *m = json_object();
	for (size_t i = 0; i < p->n_mounts; i++)
		json_object_set_new(m, p->mounts[i].mount_path,
		                    json_string(p->mounts[i].host_path));
	char *s = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(m);
	return s;
}

static int build_envp(pod_ctx *p, env_list *env, kft_podspec *out, kft_error *err)
{
	int rc = env_set(env, KFT_MOUNTS_ENV, mounts_json(p), err);
	if (rc < 0)
		return rc;
	out->envp = calloc(env->n + 1, sizeof(char *));
	if (!out->envp)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (size_t i = 0; i < env->n; i++) {
		int last = i + 1 == env->n; /* the mount map itself is never rewritten */
		char *v = last ? strdup(env->values[i]) : rewrite(p, strdup(env->values[i]));
		if (!v || asprintf(&out->envp[i], "%s=%s", env->names[i], v) < 0) {
			out->envp[i] = NULL;
			free(v);
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		}
		free(v);
	}
	return 0;
}

/* Replaces out->envp with copies of env's k entries, then frees the old
 * strings that were not kept and env itself. */
static int own_env(char **env, size_t k, kft_podspec *out, kft_error *err)
{
	char **copy = calloc(k + 1, sizeof(char *));
	int rc = copy ? 0 : KFT_ENOMEM;
	for (size_t i = 0; rc == 0 && i < k; i++)
		if (!(copy[i] = strdup(env[i])))
			rc = KFT_ENOMEM;
	free(env);
	if (rc) {
		for (size_t i = 0; copy && copy[i]; i++)
			free(copy[i]);
		free(copy);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; out->envp && out->envp[i]; i++)
		free(out->envp[i]);
	free(out->envp);
	out->envp = copy;
	return 0;
}

/* The length of the name part of "K=V", or 0 when malformed. */
static size_t env_name_len(const char *kv)
{
	const char *eq = kv ? strchr(kv, '=') : NULL;
	return eq && eq != kv ? (size_t)(eq - kv) : 0;
}

static int envp_has(char *const *envp, const char *kv, size_t n)
{
	for (size_t i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], kv, n) == 0 && envp[i][n] == '=')
			return 1;
	return 0;
}

static size_t vec_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* out->envp becomes: base entries the pod does not define, then the pod's
 * env, with extra entries replacing same-named ones or appended. */
static int apply_defaults_env(const kft_podspec_defaults *d, kft_podspec *out, kft_error *err)
{
	size_t nb = vec_len(d->base_env), np = vec_len(out->envp), nx = vec_len(d->extra_env);
	char **env = calloc(nb + np + nx + 1, sizeof(char *));
	size_t k = 0;
	if (!env)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	/* env borrows the strings until own_env copies them */
	for (size_t i = 0; i < nb + nx; i++) {
		const char *kv = i < nb ? d->base_env[i] : d->extra_env[i - nb];
		if (!env_name_len(kv)) {
			free(env);
			return kft_error_set(err, KFT_EINVAL,
			                     "environment entry \"%s\" has no name", kv);
		}
	}
	for (size_t i = 0; i < nb; i++) {
		size_t n = env_name_len(d->base_env[i]);
		if (!envp_has(out->envp, d->base_env[i], n) &&
		    !envp_has(d->extra_env, d->base_env[i], n) && !envp_has(env, d->base_env[i], n))
			env[k++] = d->base_env[i];
	}
	for (size_t i = 0; i < np; i++)
		if (!envp_has(d->extra_env, out->envp[i], env_name_len(out->envp[i])))
			env[k++] = out->envp[i];
	for (size_t i = 0; i < nx; i++)
		env[k++] = d->extra_env[i];
	return own_env(env, k, out, err);
}

static const json_t *find_container(const json_t *podspec, const char *name)
{
	const char *lists[] = {"containers", "initContainers"};
	for (size_t l = 0; l < 2; l++) {
		const json_t *c;
		size_t i;
		json_array_foreach(json_object_get(podspec, lists[l]), i, c)
		{
			if (jstr(c, "name") && strcmp(jstr(c, "name"), name) == 0)
				return c;
		}
	}
	return NULL;
}

static int locate(pod_ctx *p, const char *rjob, int replica, int index, long *goff, long *gtot,
                  const json_t **tmeta, kft_error *err)
{
	const json_t *reps, *tpl;
	if (!p->jobset || !rjob || replica < 0 || index < 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "a JobSet, replicated job name and indexes "
		                     "are required");
	p->rjob = find_rjob(p->jobset, rjob, goff, gtot);
	if (!p->rjob)
		return kft_error_set(err, KFT_EINVAL, "JobSet has no replicated job %s", rjob);
	reps = json_object_get(p->rjob, "replicas");
	if (replica >= (reps ? json_integer_value(reps) : 1))
		return kft_error_set(err, KFT_EINVAL, "replicated job %s has no replica %d", rjob,
		                     replica);
	tpl = json_object_get(json_object_get(json_object_get(p->rjob, "template"), "spec"),
	                      "template");
	*tmeta = json_object_get(tpl, "metadata");
	p->podspec = json_object_get(tpl, "spec");
	return 0;
}

static int build(pod_ctx *p, const char *rjob, int replica, int index, const char *container,
                 kft_podspec *out, kft_error *err)
{
	const json_t *tmeta = NULL;
	long goff = 0, gtot = 0;
	env_list env = {0};
	const char *wd;
	int rc = locate(p, rjob, replica, index, &goff, &gtot, &tmeta, err);
	if (rc < 0)
		return rc;
	p->container = container ? find_container(p->podspec, container) : NULL;
	if (!p->container)
		return kft_error_set(err, KFT_EINVAL, "replicated job %s has no container %s", rjob,
		                     container ? container : "(null)");
	if (pod_metadata(p, tmeta, replica, index, goff, gtot) < 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory building pod metadata");
	if ((rc = build_mounts(p, err)) < 0)
		return rc;
	const json_t *e;
	size_t i;
	rc = env_from(p, &env, err);
	json_array_foreach(json_object_get(p->container, "env"), i, e)
	{
		if (rc == 0)
			rc = env_entry(p, &env, e, err);
	}
	if (rc == 0)
		rc = build_argv(p, &env, out, err);
	if (rc == 0)
		rc = build_envp(p, &env, out, err);
	env_list_free(&env);
	if (rc < 0)
		return rc;
	if ((rc = apply_defaults_env(p->defaults, out, err)) < 0)
		return rc;
	wd = jstr(p->container, "workingDir");
	out->workdir = wd && *wd ? rewrite(p, strdup(wd))
	                         : strdup(p->defaults->workdir ? p->defaults->workdir : p->job_dir);
	out->image = strdup(jstr(p->container, "image") ?: "");
	if (!out->workdir || !out->image)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

int kft_podspec_build(const json_t *jobset, const json_t *objects, const char *rjob, int replica,
                      int pod_index, const char *container, const char *job_dir, kft_podspec *out,
                      kft_error *err)
{
	return kft_podspec_build_with(jobset, objects, rjob, replica, pod_index, container, job_dir,
	                              NULL, out, err);
}

int kft_podspec_build_with(const json_t *jobset, const json_t *objects, const char *rjob,
                           int replica, int pod_index, const char *container, const char *job_dir,
                           const kft_podspec_defaults *defaults, kft_podspec *out, kft_error *err)
{
	static const kft_podspec_defaults none = {0};
	pod_ctx p = {.jobset = jobset,
	             .objects = objects,
	             .job_dir = job_dir,
	             .defaults = defaults ? defaults : &none};
	int rc;
	if (!out)
		return kft_error_set(err, KFT_EINVAL, "no output spec");
	memset(out, 0, sizeof(*out));
	if (!job_dir || job_dir[0] != '/')
		return kft_error_set(err, KFT_EINVAL, "job_dir must be an absolute path");
	p.ns = jstr(json_object_get(jobset, "metadata"), "namespace") ?: "default";
	if (!jstr(json_object_get(jobset, "metadata"), "name"))
		return kft_error_set(err, KFT_EINVAL, "the JobSet has no metadata.name");
	rc = build(&p, rjob, replica, pod_index, container, out, err);
	out->pod_name = p.pod_name;
	out->mounts = p.mounts;
	out->n_mounts = p.n_mounts;
	json_decref(p.labels);
	json_decref(p.annotations);
	json_decref(p.claim_volume);
	if (rc < 0)
		kft_podspec_free(out);
	return rc;
}

const char *kft_pod_main_container(const json_t *rjob, const char *rjob_name)
{
	const json_t *tpl = json_object_get(
	        json_object_get(json_object_get(rjob, "template"), "spec"), "template");
	const json_t *cs = json_object_get(json_object_get(tpl, "spec"), "containers"), *c;
	size_t i;
	json_array_foreach(cs, i, c)
	{
		const char *n = jstr(c, "name");
		if (n && (strcmp(n, KFT_CONTAINER_NODE) == 0 || strcmp(n, rjob_name) == 0))
			return n;
	}
	return jstr(json_array_get(cs, 0), "name");
}

int kft_pod_object(const json_t *jobset, const char *rjob, int replica, int pod_index,
                   int restart_attempt, json_t **out, kft_error *err)
{
	const kft_podspec_defaults d = {.restart_attempt = restart_attempt};
	pod_ctx p = {.jobset = jobset, .defaults = &d};
	const json_t *tmeta = NULL;
	long goff = 0, gtot = 0;
	*out = NULL;
	p.ns = jstr(json_object_get(jobset, "metadata"), "namespace") ?: "default";
	if (!jstr(json_object_get(jobset, "metadata"), "name"))
		return kft_error_set(err, KFT_EINVAL, "the JobSet has no metadata.name");
	int rc = locate(&p, rjob, replica, pod_index, &goff, &gtot, &tmeta, err);
	if (rc == 0 && pod_metadata(&p, tmeta, replica, pod_index, goff, gtot) < 0)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory building pod metadata");
	if (rc == 0) {
		*out = json_pack("{s:s, s:s, s:{s:s, s:s, s:O, s:O}, s:O*}", "apiVersion", "v1",
		                 "kind", "Pod", "metadata", "name", p.pod_name, "namespace", p.ns,
		                 "labels", p.labels, "annotations", p.annotations, "spec",
		                 p.podspec);
		if (!*out)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	free(p.pod_name);
	json_decref(p.labels);
	json_decref(p.annotations);
	return rc;
}

static void free_vec(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void kft_podspec_free(kft_podspec *spec)
{
	if (!spec)
		return;
	free_vec(spec->argv);
	free_vec(spec->envp);
	free(spec->image);
	free(spec->workdir);
	free(spec->pod_name);
	for (size_t i = 0; i < spec->n_mounts; i++) {
		free(spec->mounts[i].mount_path);
		free(spec->mounts[i].host_path);
	}
	free(spec->mounts);
	memset(spec, 0, sizeof(*spec));
}
