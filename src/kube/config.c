/*
 * config.c - where the client connects and who it says it is.
 *
 * A kubeconfig is YAML with three named lists (clusters, users, contexts) and
 * a current-context. Several files may be named by $KUBECONFIG; kubectl
 * merges them so that the first file defining a name wins, and we do the same
 * by searching the files in order rather than building a merged tree. Each
 * entry remembers the file it came from because relative paths inside it are
 * relative to that file's directory.
 *
 * Only static credentials are supported. exec and auth-provider plugins run
 * other programs to obtain credentials; a controller image has none of them,
 * so a user entry asking for one is refused with an error naming it rather
 * than connecting anonymously. Impersonation is refused for the same reason:
 * ignoring it would silently act as a different identity.
 */
#include "kube/kube_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kftrainer/decode.h"
#include "util/base64.h"
#include "util/strbuf.h"
#include "util/secret.h"

#define MAX_KUBECONFIG_FILES 16
#define SA_DIR               "/var/run/secrets/kubernetes.io/serviceaccount"

typedef struct kc_file {
	char *path;
	char *dir;
	kft_doc_list docs;
	json_t *root; /* borrowed from docs; NULL for an empty file */
} kc_file;

typedef struct kc_set {
	kc_file files[MAX_KUBECONFIG_FILES];
	int n;
	char *names; /* "a:b" for messages */
} kc_set;

int kft_kube_config_new(kft_kube_config **out, kft_error *err)
{
	kft_kube_config *c = calloc(1, sizeof(*c));
	*out = NULL;
	if (!c || !(c->default_namespace = strdup("default"))) {
		free(c);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	c->qps = 5;
	c->burst = 10;
	c->max_retries = 10;
	*out = c;
	return 0;
}

void kft_kube_config_free(kft_kube_config *c)
{
	if (!c)
		return;
	char *strs[] = {c->server,    c->tls_server_name,   c->ca_file,   c->ca_data,
	                c->cert_file, c->cert_data,         c->key_file,  c->key_data,
	                c->token,     c->token_file,        c->username,  c->password,
	                c->proxy_url, c->default_namespace, c->user_agent};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		/* keys, tokens and passwords should not linger in freed memory */
		kft_secret_free(strs[i]);
	}
	free(c);
}

int kft_kube_read_file(const char *path, size_t max, const char *what, kft_kube_blob *out,
                       kft_error *err)
{
	out->data = NULL;
	out->len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kft_error_set(err, errno == ENOENT ? KFT_ENOTFOUND : KFT_EIO,
		                     "reading %s %s: %s", what, path, strerror(errno));
	kft_strbuf b;
	kft_strbuf_init(&b);
	char chunk[8192];
	ssize_t r;
	int rc = 0;
	while ((r = read(fd, chunk, sizeof(chunk))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = kft_error_set(err, KFT_EIO, "reading %s %s: %s", what, path,
			                   strerror(errno));
			break;
		}
		if (b.len + (size_t)r > max) {
			rc = kft_error_set(err, KFT_ELIMIT, "%s %s is larger than %zu bytes", what,
			                   path, max);
			break;
		}
		kft_strbuf_putn(&b, chunk, (size_t)r);
	}
	close(fd);
	if (rc == 0) {
		size_t len = b.len;
		out->data = kft_strbuf_detach(&b);
		if (!out->data) {
			out->data = strdup("");
			len = 0;
			if (!out->data)
				return kft_error_set(err, KFT_ENOMEM, "out of memory");
		}
		out->len = len;
		return 0;
	}
	kft_strbuf_free(&b);
	return rc;
}

static void kc_set_free(kc_set *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->files[i].path);
		free(s->files[i].dir);
		kft_doc_list_free(&s->files[i].docs);
	}
	free(s->names);
	s->n = 0;
	s->names = NULL;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* Adds the text of one file named `path` (which relative paths in it are
 * relative to). */
static int kc_add_text(kc_set *s, const char *path, const char *text, size_t len, kft_error *err)
{
	if (s->n == MAX_KUBECONFIG_FILES)
		return kft_error_set(err, KFT_ELIMIT, "more than %d kubeconfig files",
		                     MAX_KUBECONFIG_FILES);
	kc_file *f = &s->files[s->n];
	memset(f, 0, sizeof(*f));
	kft_error derr;
	kft_error_clear(&derr);
	int rc = len ? kft_decode(text, len, path, &f->docs, &derr) : 0;
	/* a file of only comments is an empty config, as in kubectl */
	if (rc == KFT_EINVAL && strstr(derr.message, "empty input"))
		rc = 0;
	if (rc)
		return kft_error_set(err, rc, "%s", derr.message);
	f->path = strdup(path);
	f->dir = dir_of(path);
	s->n++;
	if (!f->path || !f->dir)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (f->docs.count > 0) {
		f->root = f->docs.items[0].root;
		if (!json_is_object(f->root))
			return kft_error_set(err, KFT_EINVAL, "kubeconfig %s: not a mapping", path);
	}
	return 0;
}

/* Adds one file; missing files are skipped when `optional`. */
static int kc_add(kc_set *s, const char *path, int optional, kft_error *err)
{
	kft_kube_blob blob;
	int rc = kft_kube_read_file(path, KFT_KUBE_MAX_FILE_BYTES, "kubeconfig", &blob, err);
	if (rc == KFT_ENOTFOUND && optional)
		return 0;
	if (rc)
		return rc;
	rc = kc_add_text(s, path, blob.data, blob.len, err);
	free(blob.data);
	return rc;
}

static int kc_names(kc_set *s, kft_error *err)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	for (int i = 0; i < s->n; i++) {
		if (i)
			kft_strbuf_putc(&b, ':');
		kft_strbuf_puts(&b, s->files[i].path);
	}
	s->names = kft_strbuf_detach(&b);
	if (!s->names)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

static int kc_open_list(kc_set *s, const char *list, kft_error *err)
{
	char *copy = strdup(list);
	int rc = 0;
	if (!copy)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	char *save = NULL;
	for (char *p = strtok_r(copy, ":", &save); p && rc == 0; p = strtok_r(NULL, ":", &save))
		rc = kc_add(s, p, 1, err);
	free(copy);
	if (rc == 0 && s->n == 0)
		rc = kft_error_set(err, KFT_ENOTFOUND, "no kubeconfig file found in KUBECONFIG=%s",
		                   list);
	return rc;
}

static int kc_open(kc_set *s, const char *kubeconfig, kft_error *err)
{
	const char *env = getenv("KUBECONFIG");
	int rc;
	if (kubeconfig && *kubeconfig) {
		rc = kc_add(s, kubeconfig, 0, err);
	} else if (env && *env) {
		rc = kc_open_list(s, env, err);
	} else {
		const char *home = getenv("HOME");
		if (!home || !*home)
			return kft_error_set(err, KFT_ENOTFOUND,
			                     "no kubeconfig: KUBECONFIG and HOME are unset");
		char path[4096];
		snprintf(path, sizeof(path), "%s/.kube/config", home);
		rc = kc_add(s, path, 0, err);
	}
	return rc ? rc : kc_names(s, err);
}

/* Finds list[i] with name == name in the first file that has it; *body is
 * list[i][inner] (borrowed), *file the file. Absent: KFT_ENOTFOUND, no
 * message. */
static int kc_find(const kc_set *s, const char *list, const char *inner, const char *name,
                   json_t **body, const kc_file **file, kft_error *err)
{
	for (int i = 0; i < s->n; i++) {
		json_t *arr = s->files[i].root ? json_object_get(s->files[i].root, list) : NULL;
		if (arr && !json_is_array(arr) && !json_is_null(arr))
			return kft_error_set(err, KFT_EINVAL, "kubeconfig %s: %s: must be a list",
			                     s->files[i].path, list);
		size_t k;
		json_t *e;
		json_array_foreach(arr, k, e)
		{
			const char *n = json_string_value(json_object_get(e, "name"));
			if (!n || strcmp(n, name) != 0)
				continue;
			*body = json_object_get(e, inner);
			if (*body && !json_is_object(*body))
				return kft_error_set(
				        err, KFT_EINVAL,
				        "kubeconfig %s: %s[name=\"%s\"].%s: must be a mapping",
				        s->files[i].path, list, name, inner);
			*file = &s->files[i];
			return 0;
		}
	}
	return KFT_ENOTFOUND;
}

/* Context for reading fields of one entry with messages naming them. */
typedef struct entry {
	const kc_file *file;
	const char *list; /* "users" */
	const char *name;
	const char *inner; /* "user" */
	json_t *body;
} entry;

static int field_err(const entry *e, const char *key, const char *what, kft_error *err)
{
	return kft_error_set(err, KFT_EINVAL, "kubeconfig %s: %s[name=\"%s\"].%s.%s: %s",
	                     e->file->path, e->list, e->name, e->inner, key, what);
}

/* Copies string field key into *dst (left alone when absent or empty). */
static int get_str(const entry *e, const char *key, char **dst, kft_error *err)
{
	json_t *v = e->body ? json_object_get(e->body, key) : NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return field_err(e, key, "must be a string", err);
	if (json_string_length(v) == 0)
		return 0;
	if (strlen(json_string_value(v)) != json_string_length(v))
		return field_err(e, key, "contains a NUL byte", err);
	free(*dst);
	*dst = strdup(json_string_value(v));
	return *dst ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* A path field, made absolute against the entry's file directory. */
static int get_path(const entry *e, const char *key, char **dst, kft_error *err)
{
	char *p = NULL;
	int rc = get_str(e, key, &p, err);
	if (rc || !p)
		return rc;
	if (p[0] != '/') {
		kft_strbuf b;
		kft_strbuf_init(&b);
		kft_strbuf_printf(&b, "%s/%s", e->file->dir, p);
		free(p);
		p = kft_strbuf_detach(&b);
		if (!p)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	free(*dst);
	*dst = p;
	return 0;
}

/* A base64 field decoded into PEM text. */
static int get_b64(const entry *e, const char *key, char **dst, kft_error *err)
{
	char *enc = NULL;
	int rc = get_str(e, key, &enc, err);
	if (rc || !enc)
		return rc;
	size_t len = 0;
	char *dec = kft_base64_decode(enc, &len);
	free(enc);
	if (!dec)
		return field_err(e, key, "is not valid base64", err);
	if (strlen(dec) != len) {
		free(dec);
		return field_err(e, key, "is not PEM text", err);
	}
	free(*dst);
	*dst = dec;
	return 0;
}

static int fill_cluster(const entry *e, kft_kube_config *c, kft_error *err)
{
	int rc = get_str(e, "server", &c->server, err);
	if (!rc && !c->server)
		return field_err(e, "server", "is required (the cluster has no server)", err);
	if (!rc)
		rc = get_path(e, "certificate-authority", &c->ca_file, err);
	if (!rc)
		rc = get_b64(e, "certificate-authority-data", &c->ca_data, err);
	if (!rc)
		rc = get_str(e, "tls-server-name", &c->tls_server_name, err);
	if (!rc)
		rc = get_str(e, "proxy-url", &c->proxy_url, err);
	if (rc)
		return rc;
	json_t *ins = json_object_get(e->body, "insecure-skip-tls-verify");
	if (ins && !json_is_boolean(ins) && !json_is_null(ins))
		return field_err(e, "insecure-skip-tls-verify", "must be true or false", err);
	c->insecure = json_is_true(ins);
	return 0;
}

static int refuse_plugins(const entry *e, kft_error *err)
{
	static const char *const plugin[][2] = {
	        {"exec", "exec credential plugins are not supported"},
	        {"auth-provider", "auth-provider plugins are not supported"},
	        {"as", "impersonation is not supported"},
	        {"as-uid", "impersonation is not supported"},
	        {"as-groups", "impersonation is not supported"},
	        {"as-user-extra", "impersonation is not supported"},
	};
	for (size_t i = 0; i < sizeof(plugin) / sizeof(plugin[0]); i++) {
		json_t *v = json_object_get(e->body, plugin[i][0]);
		if (v && !json_is_null(v))
			return kft_error_set(
			        err, KFT_EINVAL,
			        "kubeconfig %s: user \"%s\": %s (users[name=\"%s\"].user.%s); "
			        "use a client certificate, token or tokenFile",
			        e->file->path, e->name, plugin[i][1], e->name, plugin[i][0]);
	}
	return 0;
}

static int fill_user(const entry *e, kft_kube_config *c, kft_error *err)
{
	int rc = e->body ? refuse_plugins(e, err) : 0;
	static const char *const strs[] = {"token", "username", "password"};
	char **dst[] = {&c->token, &c->username, &c->password};
	for (size_t i = 0; i < 3 && !rc; i++)
		rc = get_str(e, strs[i], dst[i], err);
	if (!rc)
		rc = get_path(e, "tokenFile", &c->token_file, err);
	if (!rc)
		rc = get_path(e, "client-certificate", &c->cert_file, err);
	if (!rc)
		rc = get_b64(e, "client-certificate-data", &c->cert_data, err);
	if (!rc)
		rc = get_path(e, "client-key", &c->key_file, err);
	if (!rc)
		rc = get_b64(e, "client-key-data", &c->key_data, err);
	return rc;
}

static int current_context(const kc_set *s, const char **name, kft_error *err)
{
	for (int i = 0; i < s->n; i++) {
		json_t *v = s->files[i].root ? json_object_get(s->files[i].root, "current-context")
		                             : NULL;
		if (v && !json_is_string(v) && !json_is_null(v))
			return kft_error_set(err, KFT_EINVAL,
			                     "kubeconfig %s: current-context: must be a string",
			                     s->files[i].path);
		if (json_string_value(v) && *json_string_value(v)) {
			*name = json_string_value(v);
			return 0;
		}
	}
	return kft_error_set(err, KFT_EINVAL,
	                     "kubeconfig %s: no current-context is set and no context was given",
	                     s->names);
}

/* Looks up the entry `name` of `list`; fills e. */
static int lookup(const kc_set *s, const char *list, const char *inner, const char *name,
                  const char *named_by, entry *e, kft_error *err)
{
	e->list = list;
	e->inner = inner;
	e->name = name;
	e->body = NULL;
	int rc = kc_find(s, list, inner, name, &e->body, &e->file, err);
	if (rc == KFT_ENOTFOUND) {
		if (named_by)
			return kft_error_set(err, KFT_ENOTFOUND,
			                     "kubeconfig %s: %s \"%s\" not found (named by context "
			                     "\"%s\")",
			                     s->names, inner, name, named_by);
		return kft_error_set(err, KFT_ENOTFOUND, "kubeconfig %s: %s \"%s\" not found",
		                     s->names, inner, name);
	}
	return rc;
}

static int ctx_ref(const entry *ctx, const char *key, char **out, kft_error *err)
{
	*out = NULL;
	return get_str(ctx, key, out, err);
}

static int resolve(const kc_set *s, const char *context, kft_kube_config *c, kft_error *err)
{
	entry ctx, e;
	char *cluster = NULL, *user = NULL;
	int rc = 0;
	if (!context || !*context)
		rc = current_context(s, &context, err);
	if (!rc)
		rc = lookup(s, "contexts", "context", context, NULL, &ctx, err);
	if (!rc)
		rc = ctx_ref(&ctx, "cluster", &cluster, err);
	if (!rc)
		rc = ctx_ref(&ctx, "user", &user, err);
	if (!rc)
		rc = get_str(&ctx, "namespace", &c->default_namespace, err);
	if (!rc && !cluster)
		rc = kft_error_set(err, KFT_EINVAL,
		                   "kubeconfig %s: context \"%s\" names no cluster", s->names,
		                   context);
	if (!rc)
		rc = lookup(s, "clusters", "cluster", cluster, context, &e, err);
	if (!rc)
		rc = fill_cluster(&e, c, err);
	if (!rc && user) {
		rc = lookup(s, "users", "user", user, context, &e, err);
		if (!rc)
			rc = fill_user(&e, c, err);
	}
	free(cluster);
	free(user);
	return rc;
}

/* Resolves context in an opened set into *out; frees the set either way. */
static int load_set(kc_set *s, int rc, const char *context, kft_kube_config **out, kft_error *err)
{
	kft_kube_config *c = NULL;
	if (!rc)
		rc = kft_kube_config_new(&c, err);
	if (!rc)
		rc = resolve(s, context, c, err);
	kc_set_free(s);
	if (rc) {
		kft_kube_config_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int kft_kube_config_load(const char *kubeconfig, const char *context, kft_kube_config **out,
                         kft_error *err)
{
	kc_set s = {0};
	*out = NULL;
	return load_set(&s, kc_open(&s, kubeconfig, err), context, out, err);
}

int kft_kube_config_load_text(const char *text, size_t len, const char *path, const char *context,
                              kft_kube_config **out, kft_error *err)
{
	kc_set s = {0};
	*out = NULL;
	int rc = kc_add_text(&s, path, text, len, err);
	if (!rc)
		rc = kc_names(&s, err);
	return load_set(&s, rc, context, out, err);
}

/* Reads a small text file in the service-account directory, trimmed. */
static int sa_read(const char *dir, const char *name, char **out, kft_error *err)
{
	char path[4096];
	kft_kube_blob b;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int rc = kft_kube_read_file(path, KFT_KUBE_MAX_FILE_BYTES, "service account file", &b, err);
	if (rc)
		return rc;
	while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == ' '))
		b.data[--b.len] = '\0';
	*out = b.data;
	return 0;
}

static char *join(const char *a, const char *b)
{
	kft_strbuf sb;
	kft_strbuf_init(&sb);
	kft_strbuf_printf(&sb, "%s%s", a, b);
	return kft_strbuf_detach(&sb);
}

static int in_cluster_fill(const char *host, const char *port, kft_kube_config *c, kft_error *err)
{
	const char *dir = getenv("KFT_KUBE_SERVICEACCOUNT_DIR");
	if (!dir || !*dir)
		dir = SA_DIR;
	kft_strbuf b;
	kft_strbuf_init(&b);
	int v6 = strchr(host, ':') != NULL;
	kft_strbuf_printf(&b, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
	c->server = kft_strbuf_detach(&b);
	c->token_file = join(dir, "/token");
	c->ca_file = join(dir, "/ca.crt");
	if (!c->server || !c->token_file || !c->ca_file)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	kft_error terr;
	int rc = sa_read(dir, "token", &c->token, &terr);
	if (rc)
		return kft_error_set(err, rc == KFT_ENOTFOUND ? KFT_EIO : rc, "%s", terr.message);
	char *ns = NULL;
	if (sa_read(dir, "namespace", &ns, NULL) == 0 && *ns) {
		free(c->default_namespace);
		c->default_namespace = ns;
	} else {
		free(ns);
	}
	return 0;
}

int kft_kube_config_in_cluster(kft_kube_config **out, kft_error *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	*out = NULL;
	if (!host || !*host || !port || !*port)
		return kft_error_set(err, KFT_ENOTFOUND,
		                     "not running in a cluster: KUBERNETES_SERVICE_HOST and "
		                     "KUBERNETES_SERVICE_PORT must be set");
	kft_kube_config *c = NULL;
	int rc = kft_kube_config_new(&c, err);
	if (!rc)
		rc = in_cluster_fill(host, port, c, err);
	if (rc) {
		kft_kube_config_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int kft_kube_config_default(const char *kubeconfig, const char *context, kft_kube_config **out,
                            kft_error *err)
{
	const char *env = getenv("KUBECONFIG");
	*out = NULL;
	if ((kubeconfig && *kubeconfig) || (env && *env))
		return kft_kube_config_load(kubeconfig, context, out, err);
	int rc = kft_kube_config_in_cluster(out, err);
	if (rc != KFT_ENOTFOUND)
		return rc;
	kft_error lerr;
	rc = kft_kube_config_load(NULL, context, out, &lerr);
	if (rc == KFT_ENOTFOUND && strstr(lerr.message, ".kube/config: "))
		return kft_error_set(
		        err, rc,
		        "no configuration: no --kubeconfig, KUBECONFIG unset, not in a "
		        "cluster and %s",
		        lerr.message);
	return rc ? kft_error_set(err, rc, "%s", lerr.message) : 0;
}
