/*
 * corev1.c - core/v1 checks for what travels with a TrainJob. See
 * kftrainer/corev1.h.
 *
 * The API server handles a Secret or ConfigMap in two stages, and so do we:
 * decoding (kubectl sends JSON with every map's keys sorted, the server's
 * JSON decoder keeps the first error it meets, and a decoding error is the
 * only thing reported), then validation (every problem, each with a field
 * path). Base64 is Go's StdEncoding as encoding/json applies it to []byte:
 * padding required, CR and LF skipped anywhere, and the error names the byte
 * offset where decoding went wrong, which users compare with kubectl's.
 */
#include "kftrainer/corev1.h"

#include <stdlib.h>
#include <string.h>

#include "kftrainer/objectmeta.h"
#include "util/base64.h"
#include "util/strbuf.h"

#define MAX_DATA_SIZE  (1024 * 1024) /* core.MaxSecretSize, also ConfigMaps' limit */
#define MAX_ENV_DEPTH  64
#define REDACTED_VALUE "<secret contents redacted>"

/* ---- decoding ----------------------------------------------------------- */

/* What Go's encoding/json calls a JSON value's type in UnmarshalTypeError. */
static const char *go_json_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	default: return "number";
	}
}

typedef struct decode_error {
	char *field;   /* "data[key]" or "data" */
	char *message; /* after "KIND in version "v1" cannot be handled as a KIND: " */
	int redact;
} decode_error;

static void decode_error_set(decode_error *d, char *field, char *message, int redact)
{
	d->field = field;
	d->message = message;
	d->redact = redact;
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first decoding error in map `field` of obj (keys in sorted order, as
 * kubectl sends them); `bytes` when its values are base64 ([]byte). Leaves
 * d untouched when there is none. Returns -1 on allocation failure. */
static int decode_map(const json_t *obj, const char *kind, const char *field, int bytes, int redact,
                      decode_error *d)
{
	const json_t *map = json_object_get(obj, field);
	kft_strbuf f, m;
	kft_strbuf_init(&f);
	kft_strbuf_init(&m);
	if (!map || json_is_null(map))
		return 0;
	if (!json_is_object(map)) {
		kft_strbuf_puts(&f, field);
		kft_strbuf_printf(&m,
		                  "json: cannot unmarshal %s into Go struct field %s.%s of type "
		                  "map[string]%s",
		                  go_json_type(map), kind, field, bytes ? "[]uint8" : "string");
		decode_error_set(d, kft_strbuf_detach(&f), kft_strbuf_detach(&m), 0);
		return d->field && d->message ? 0 : -1;
	}
	size_t n = json_object_size(map), k = 0;
	const char **keys = malloc((n ? n : 1) * sizeof(*keys));
	if (!keys)
		return -1;
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)map, key, v) keys[k++] = key;
	qsort(keys, n, sizeof(*keys), cmp_keys);
	for (k = 0; k < n; k++) {
		v = json_object_get(map, keys[k]);
		if (json_is_null(v))
			continue;
		if (!json_is_string(v)) {
			kft_strbuf_printf(&m,
			                  "json: cannot unmarshal %s into Go struct field %s.%s of "
			                  "type %s",
			                  go_json_type(v), kind, field,
			                  bytes ? "[]uint8" : "string");
		} else if (bytes) {
			size_t len;
			long bad =
			        kft_base64_check(json_string_value(v), json_string_length(v), &len);
			if (bad < 0)
				continue;
			kft_strbuf_printf(&m, "illegal base64 data at input byte %ld", bad);
		} else {
			continue;
		}
		kft_strbuf_printf(&f, "%s[%s]", field, keys[k]);
		decode_error_set(d, kft_strbuf_detach(&f), kft_strbuf_detach(&m), redact);
		free(keys);
		return d->field && d->message ? 0 : -1;
	}
	free(keys);
	return 0;
}

static void report_decode_error(const char *kind, const json_t *obj, decode_error *d,
                                kft_field_errors *errs)
{
	kft_strbuf detail;
	kft_strbuf_init(&detail);
	kft_strbuf_printf(&detail, "%s in version \"v1\" cannot be handled as a %s: %s", kind, kind,
	                  d->message);
	char *value = NULL;
	if (d->redact) {
		value = kft_go_quote(REDACTED_VALUE);
	} else {
		/* the offending value of "field[key]" */
		const char *open = strchr(d->field, '[');
		if (open) {
			char *top = strndup(d->field, (size_t)(open - d->field));
			char *key = strndup(open + 1, strlen(open + 1) - 1);
			if (top && key)
				value = kft_render_value(
				        json_object_get(json_object_get(obj, top), key));
			free(top);
			free(key);
		}
	}
	if (detail.failed)
		errs->oom = 1;
	else
		kft_field_errors_add_rendered(errs, KFT_FIELD_INVALID, d->field, value,
		                              kft_strbuf_str(&detail));
	free(value);
	kft_strbuf_free(&detail);
}

/* ---- validation ----------------------------------------------------------- */

static void check_key(kft_field_errors *errs, const char *field, const char *key)
{
	json_t *msgs = json_array();
	if (!msgs) {
		errs->oom = 1;
		return;
	}
	kft_strbuf path;
	kft_strbuf_init(&path);
	kft_strbuf_printf(&path, "%s[%s]", field, key);
	json_t *shown = json_string(key);
	if (!kft_is_config_map_key(key, msgs)) {
		size_t i;
		json_t *m;
		json_array_foreach(msgs, i, m)
		        kft_field_errors_add(errs, KFT_FIELD_INVALID, kft_strbuf_str(&path), shown,
		                             "%s", json_string_value(m));
	}
	if (path.failed || !shown)
		errs->oom = 1;
	json_decref(shown);
	json_decref(msgs);
	kft_strbuf_free(&path);
}

static void require_key(kft_field_errors *errs, const json_t *data, const char *key)
{
	if (json_object_get(data, key))
		return;
	char path[96];
	snprintf(path, sizeof(path), "data[%s]", key);
	kft_field_errors_add(errs, KFT_FIELD_REQUIRED, path, NULL, NULL);
}

/* The keys a typed Secret must carry (ValidateSecret's switch on type). */
static void check_secret_type(const json_t *obj, const json_t *data, kft_field_errors *errs)
{
	const char *type = json_string_value(json_object_get(obj, "type"));
	if (!type)
		return;
	if (strcmp(type, "kubernetes.io/service-account-token") == 0) {
		const json_t *ann =
		        json_object_get(json_object_get(obj, "metadata"), "annotations");
		const char *sa = json_string_value(
		        json_object_get(ann, "kubernetes.io/service-account.name"));
		if (!sa || !*sa)
			kft_field_errors_add(
			        errs, KFT_FIELD_REQUIRED,
			        "metadata.annotations[kubernetes.io/service-account.name]", NULL,
			        NULL);
	} else if (strcmp(type, "kubernetes.io/dockercfg") == 0) {
		require_key(errs, data, ".dockercfg");
	} else if (strcmp(type, "kubernetes.io/dockerconfigjson") == 0) {
		require_key(errs, data, ".dockerconfigjson");
	} else if (strcmp(type, "kubernetes.io/basic-auth") == 0) {
		if (!json_object_get(data, "username") && !json_object_get(data, "password")) {
			require_key(errs, data, "username");
			require_key(errs, data, "password");
		}
	} else if (strcmp(type, "kubernetes.io/ssh-auth") == 0) {
		const json_t *v = json_object_get(data, "ssh-privatekey");
		if (!json_is_string(v) || json_string_length(v) == 0)
			kft_field_errors_add(errs, KFT_FIELD_REQUIRED, "data[ssh-privatekey]", NULL,
			                     NULL);
	} else if (strcmp(type, "kubernetes.io/tls") == 0) {
		require_key(errs, data, "tls.crt");
		require_key(errs, data, "tls.key");
	}
}

/* Decoded size of a data value already known to be valid base64 or null. */
static size_t bytes_size(const json_t *v)
{
	size_t len = 0;
	if (json_is_string(v))
		kft_base64_check(json_string_value(v), json_string_length(v), &len);
	return len;
}

static void check_metadata(const json_t *obj, kft_field_errors *errs)
{
	json_t *meta = json_object_get(obj, "metadata");
	json_t *copy = json_is_object(meta) ? json_copy(meta) : json_incref(meta);
	if (json_is_object(copy) && !json_object_get(copy, "namespace"))
		json_object_set_new(copy, "namespace", json_string("default"));
	kft_validate_object_meta(copy, 1, "metadata", errs);
	json_decref(copy);
}

static void validate_secret(const json_t *obj, kft_field_errors *errs)
{
	check_metadata(obj, errs);
	/* stringData overwrites data (the v1 to internal conversion). */
	json_t *data = json_object();
	const json_t *in = json_object_get(obj, "data");
	const json_t *str = json_object_get(obj, "stringData");
	const char *key;
	json_t *v;
	if (!data) {
		errs->oom = 1;
		return;
	}
	json_object_foreach((json_t *)in, key, v) json_object_set(data, key, v);
	json_object_foreach((json_t *)str, key, v) json_object_set(data, key, v);
	size_t total = 0;
	json_object_foreach(data, key, v)
	{
		if (json_object_get(str, key))
			total += json_is_string(v) ? json_string_length(v) : 0;
		else
			total += bytes_size(v);
	}
	json_object_foreach(data, key, v) check_key(errs, "data", key);
	if (total > MAX_DATA_SIZE)
		kft_field_errors_add(errs, KFT_FIELD_TOO_LONG, "data", NULL,
		                     "may not be more than %d bytes", MAX_DATA_SIZE);
	check_secret_type(obj, data, errs);
	json_decref(data);
}

static void validate_config_map(const json_t *obj, kft_field_errors *errs)
{
	check_metadata(obj, errs);
	const json_t *data = json_object_get(obj, "data");
	const json_t *bin = json_object_get(obj, "binaryData");
	const char *key;
	const json_t *v;
	size_t total = 0;
	json_object_foreach((json_t *)data, key, v)
	{
		check_key(errs, "data", key);
		if (json_object_get(bin, key)) {
			char *path = NULL;
			json_t *shown = json_string(key);
			if (asprintf(&path, "data[%s]", key) < 0 || !shown)
				errs->oom = 1;
			else
				kft_field_errors_add(errs, KFT_FIELD_INVALID, path, shown,
				                     "duplicate of key present in binaryData");
			free(path);
			json_decref(shown);
		}
		total += json_is_string(v) ? json_string_length(v) : 0;
	}
	json_object_foreach((json_t *)bin, key, v)
	{
		check_key(errs, "binaryData", key);
		total += bytes_size(v);
	}
	if (total > MAX_DATA_SIZE)
		kft_field_errors_add(errs, KFT_FIELD_TOO_LONG, "[]", NULL,
		                     "may not be more than %d bytes", MAX_DATA_SIZE);
}

int kft_corev1_check(const json_t *obj, kft_field_errors *errs)
{
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	if (!av || !kind || strcmp(av, "v1") != 0)
		return 0;
	int secret = strcmp(kind, "Secret") == 0;
	if (!secret && strcmp(kind, "ConfigMap") != 0)
		return 0;
	/* Top-level fields in sorted order, as the decoder meets them. */
	decode_error d = {0};
	int rc = secret ? decode_map(obj, kind, "data", 1, 1, &d)
	                : decode_map(obj, kind, "binaryData", 1, 0, &d);
	if (rc == 0 && !d.field)
		rc = secret ? decode_map(obj, kind, "stringData", 0, 1, &d)
		            : decode_map(obj, kind, "data", 0, 0, &d);
	if (rc != 0)
		errs->oom = 1;
	else if (d.field)
		report_decode_error(kind, obj, &d, errs);
	else if (secret)
		validate_secret(obj, errs);
	else
		validate_config_map(obj, errs);
	free(d.field);
	free(d.message);
	return 1;
}

/* ---- environment variables -------------------------------------------------- */

static void check_name(kft_field_errors *errs, const char *path, const json_t *name, int required)
{
	const char *s = json_string_value(name);
	if (!s || !*s) {
		if (required)
			kft_field_errors_add(errs, KFT_FIELD_REQUIRED, path, NULL, NULL);
		return;
	}
	json_t *msgs = json_array();
	if (!msgs) {
		errs->oom = 1;
		return;
	}
	if (!kft_is_relaxed_env_var_name(s, msgs)) {
		size_t i;
		json_t *m;
		json_array_foreach(msgs, i, m) kft_field_errors_add(
		        errs, KFT_FIELD_INVALID, path, name, "%s", json_string_value(m));
	}
	json_decref(msgs);
}

/* Each item of an env (member "name", required) or envFrom (member
 * "prefix", optional) list. */
static void check_env_list(const json_t *list, const char *path, const char *member, int required,
                           kft_field_errors *errs)
{
	size_t i;
	const json_t *item;
	json_array_foreach(list, i, item)
	{
		if (!json_is_object(item))
			continue; /* the schema reports wrong types */
		char *p = NULL;
		if (asprintf(&p, "%s[%zu].%s", path, i, member) < 0) {
			errs->oom = 1;
			return;
		}
		check_name(errs, p, json_object_get(item, member), required);
		free(p);
	}
}

static void walk_env(const json_t *v, const char *path, int depth, kft_field_errors *errs)
{
	if (depth > MAX_ENV_DEPTH)
		return;
	if (json_is_array(v)) {
		size_t i;
		const json_t *item;
		json_array_foreach(v, i, item)
		{
			if (!json_is_object(item) && !json_is_array(item))
				continue;
			char *p = NULL;
			if (asprintf(&p, "%s[%zu]", path, i) < 0) {
				errs->oom = 1;
				return;
			}
			walk_env(item, p, depth + 1, errs);
			free(p);
		}
		return;
	}
	const char *key;
	const json_t *child;
	json_object_foreach((json_t *)v, key, child)
	{
		if (!json_is_object(child) && !json_is_array(child))
			continue;
		char *p = NULL;
		if (asprintf(&p, "%s%s%s", path, *path ? "." : "", key) < 0) {
			errs->oom = 1;
			return;
		}
		if (json_is_array(child) && strcmp(key, "env") == 0)
			check_env_list(child, p, "name", 1, errs);
		else if (json_is_array(child) && strcmp(key, "envFrom") == 0)
			check_env_list(child, p, "prefix", 0, errs);
		else
			walk_env(child, p, depth + 1, errs);
		free(p);
	}
}

void kft_corev1_check_env(const json_t *tree, const char *path, kft_field_errors *errs)
{
	if (json_is_object(tree) || json_is_array(tree))
		walk_env(tree, path ? path : "", 0, errs);
}
