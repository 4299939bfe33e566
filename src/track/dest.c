/*
 * dest.c - where a trained model goes: the export-to annotation read (see
 * track.h). Pure; the value is a user's, so each form is checked whole and
 * a refusal names the annotation and the forms it takes.
 */
#include "track/track.h"
#include "local/s3list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMS "s3://BUCKET[/PREFIX], file:///ABSOLUTE/DIR or models:/NAME"

static int refuse(kft_error *err, const char *uri, const char *why)
{
	return kft_error_set(err, KFT_EINVAL,
	                     "metadata.annotations[%s]: Invalid value: \"%s\": %s (one of " FORMS
	                     ")",
	                     KFT_TRACK_ANN_EXPORT_TO, uri, why);
}

/* A path of '/'-separated names, none empty, "." or "..", no control
 * characters: nothing can climb out of where it is put. */
static bool path_ok(const char *p)
{
	if (!*p)
		return true;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += n;
		if (*s == '/')
			s++;
	}
	for (const unsigned char *c = (const unsigned char *)p; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

static int parse_s3(const char *uri, kft_track_dest *out, kft_error *err)
{
	const char *b = uri + 5, *slash = strchr(b, '/');
	size_t blen = slash ? (size_t)(slash - b) : strlen(b);
	if (!kft_s3_bucket_ok(b, blen))
		return refuse(err, uri, "not a valid bucket name");
	char *prefix = strdup(slash ? slash + 1 : "");
	if (!prefix)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	size_t n = strlen(prefix);
	while (n && prefix[n - 1] == '/')
		prefix[--n] = '\0';
	if (n > 900 || !path_ok(prefix)) {
		free(prefix);
		return refuse(err, uri, "the key prefix must be names separated by '/'");
	}
	out->kind = KFT_DEST_S3;
	out->bucket = strndup(b, blen);
	out->path = prefix;
	return out->bucket ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

static int parse_file(const char *uri, kft_track_dest *out, kft_error *err)
{
	const char *p = uri + 7;
	if (*p != '/')
		return refuse(err, uri, "file:// takes an absolute path (file:///DIR)");
	char *dir = strdup(p);
	if (!dir)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = '\0';
	if (n == 1 || n > 4000 || !path_ok(dir + 1)) {
		free(dir);
		return refuse(err, uri, "the directory must be a clean absolute path, not /");
	}
	out->kind = KFT_DEST_FILE;
	out->path = dir;
	return 0;
}

/* MLflow's registered model names: any text but '/' and ':' (the URI's own
 * separators) and control characters, at most 256 bytes here. */
static int parse_model(const char *uri, kft_track_dest *out, kft_error *err)
{
	const char *name = uri + 8;
	size_t n = strlen(name);
	if (n == 0 || n > 256 || strpbrk(name, "/:"))
		return refuse(err, uri, "models:/ takes a registered model's name");
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return refuse(err, uri, "a model name has no control characters");
	out->kind = KFT_DEST_MLFLOW;
	out->path = strdup(name);
	return out->path ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

int kft_track_dest_parse(const char *uri, kft_track_dest *out, kft_error *err)
{
	memset(out, 0, sizeof(*out));
	int rc;
	if (!uri || !*uri)
		return refuse(err, uri ? uri : "", "empty");
	if (strncmp(uri, "s3://", 5) == 0)
		rc = parse_s3(uri, out, err);
	else if (strncmp(uri, "file://", 7) == 0)
		rc = parse_file(uri, out, err);
	else if (strncmp(uri, "models:/", 8) == 0)
		rc = parse_model(uri, out, err);
	else
		return refuse(err, uri, "unsupported destination");
	if (rc)
		kft_track_dest_free(out);
	return rc;
}

void kft_track_dest_free(kft_track_dest *d)
{
	if (!d)
		return;
	free(d->bucket);
	free(d->path);
	memset(d, 0, sizeof(*d));
}

char *kft_track_dest_key(const kft_track_dest *d, const char *rel)
{
	char *out = NULL;
	if (asprintf(&out, "%s%s%s", d->path ? d->path : "", d->path && *d->path ? "/" : "", rel) <
	    0)
		return NULL;
	return out;
}
