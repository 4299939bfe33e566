/*
 * check.c - a TrainJob's tracking annotations checked where the object is
 * (kftrainer validate, train, the controller's webhook: kft_object_check),
 * so a destination that could never be exported to, or parameters that
 * are not an object, are refused before the job runs rather than found
 * out when it completes.
 */
#include "track/track.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kftrainer/validation.h"

static const char *annotation(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(
	        json_object_get(json_object_get(obj, "metadata"), "annotations"), key));
}

static void invalid(kft_field_errors *errs, const char *key, const char *value, const char *why)
{
	char field[256];
	json_t *v = json_string(value);
	snprintf(field, sizeof(field), "metadata.annotations[%s]", key);
	kft_field_errors_add(errs, KFT_FIELD_INVALID, field, v, "%s", why);
	json_decref(v);
}

static void check_bool(const json_t *tj, const char *key, kft_field_errors *errs)
{
	const char *v = annotation(tj, key);
	if (v && strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
		invalid(errs, key, v, "must be \"true\" or \"false\"");
}

/* export-to: dest.c's refusal, after its "FIELD: Invalid value: "URI": ". */
static void check_dest(const char *uri, kft_field_errors *errs)
{
	kft_track_dest d;
	kft_error err = {0};
	if (kft_track_dest_parse(uri, &d, &err) == 0) {
		kft_track_dest_free(&d);
		return;
	}
	char prefix[1200];
	snprintf(prefix, sizeof(prefix),
	         "metadata.annotations[%s]: Invalid value: \"%s\": ", KFT_TRACK_ANN_EXPORT_TO, uri);
	const char *why = strncmp(err.message, prefix, strlen(prefix)) == 0
	                          ? err.message + strlen(prefix)
	                          : err.message;
	invalid(errs, KFT_TRACK_ANN_EXPORT_TO, uri, why);
}

/* register-to: a model's name, and files somewhere the registry can point
 * at (an s3:// or file:// export-to; models:/ is MLflow's own registry). */
static void check_register(const char *name, const char *to, kft_field_errors *errs)
{
	bool control = false;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		control |= *c < 0x20 || *c == 0x7f;
	if (!*name || strlen(name) > 256 || control)
		invalid(errs, KFT_TRACK_ANN_REGISTER_TO, name,
		        "must be a registered model's name: 1 to 256 characters, no control "
		        "characters");
	else if (!to || (strncmp(to, "s3://", 5) != 0 && strncmp(to, "file://", 7) != 0))
		invalid(errs, KFT_TRACK_ANN_REGISTER_TO, name,
		        "needs an s3:// or file:// " KFT_TRACK_ANN_EXPORT_TO
		        ": the registered version points at the exported files");
}

void kft_track_validate(const json_t *trainjob, kft_field_errors *errs)
{
	const char *reg = annotation(trainjob, KFT_TRACK_ANN_REGISTER_TO);
	const char *to = annotation(trainjob, KFT_TRACK_ANN_EXPORT_TO);
	const char *from = annotation(trainjob, KFT_TRACK_ANN_EXPORT_FROM);
	const char *params = annotation(trainjob, KFT_TRACK_ANN_PARAMS);
	check_bool(trainjob, KFT_TRACK_ANN_ENABLED, errs);
	check_bool(trainjob, KFT_TRACK_ANN_LOGS, errs);
	if (to)
		check_dest(to, errs);
	if (reg)
		check_register(reg, to, errs);
	if (from && from[0] != '/')
		invalid(errs, KFT_TRACK_ANN_EXPORT_FROM, from,
		        "must be an absolute path, as the trainer's pod sees it");
	if (params) {
		json_t *doc = json_loads(params, JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(doc))
			invalid(errs, KFT_TRACK_ANN_PARAMS, params, "must be a JSON object");
		json_decref(doc);
	}
}
