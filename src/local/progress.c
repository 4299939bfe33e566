/*
 * progress.c - the status file protocol: what a training process reports
 * through KFTRAINER_STATUS_FILE, turned into upstream v2.3.0's TrainerStatus
 * (see local_internal.h and docs/local.md).
 *
 * The file is written by the job's own code, so it is untrusted like any
 * input: the engine bounds its size before reading, and this checks every
 * field against the bounds the CRD schema gives it, so whatever lands in
 * status.trainerStatus would pass the API server's validation. Keys other
 * than the known ones are dropped rather than copied.
 */
#include <stdbool.h>
#include <string.h>

#include "framework/conditions.h"
#include "local/local_internal.h"
#include "util/rfc3339.h"

#define MAX_METRICS     256
#define MAX_METRIC_TEXT 64
#define INT32_MAX_VALUE 0x7fffffff

static bool valid_text(const json_t *v)
{
	const char *s = json_string_value(v);
	return s && *s && strlen(s) <= MAX_METRIC_TEXT;
}

static bool valid_metrics(const json_t *metrics)
{
	size_t i;
	const json_t *m;
	if (!metrics)
		return true;
	if (!json_is_array(metrics) || json_array_size(metrics) > MAX_METRICS)
		return false;
	json_array_foreach(metrics, i, m)
	{
		if (!valid_text(json_object_get(m, "name")) ||
		    !valid_text(json_object_get(m, "value")))
			return false;
	}
	return true;
}

static bool valid_int(const json_t *v, json_int_t max)
{
	return !v ||
	       (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= max);
}

static bool valid_status(const json_t *ts)
{
	return json_is_object(ts) && valid_int(json_object_get(ts, "progressPercentage"), 100) &&
	       valid_int(json_object_get(ts, "estimatedRemainingSeconds"), INT32_MAX_VALUE) &&
	       valid_metrics(json_object_get(ts, "metrics"));
}

/* The known keys of ts, with lastUpdatedTime the report's or now. */
static json_t *copy_known(const json_t *ts, const char *now)
{
	static const char *const keys[] = {"progressPercentage", "estimatedRemainingSeconds",
	                                   "metrics"};
	const char *given = json_string_value(json_object_get(ts, "lastUpdatedTime"));
	int64_t ms;
	json_t *out = json_object();
	for (size_t k = 0; out && k < sizeof(keys) / sizeof(keys[0]); k++)
		if (json_object_get(ts, keys[k]))
			json_object_set(out, keys[k], json_object_get(ts, keys[k]));
	if (out &&
	    json_object_set_new(out, "lastUpdatedTime",
	                        json_string(given && kft_rfc3339_parse_ms(given, &ms, NULL) == 0
	                                            ? given
	                                            : now)) != 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}

json_t *kft_local_parse_report(const char *text, const char *now)
{
	json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
	const json_t *ts =
	        json_object_get(doc, "trainerStatus") ? json_object_get(doc, "trainerStatus") : doc;
	json_t *out = valid_status(ts) ? copy_known(ts, now) : NULL;
	json_decref(doc);
	return out;
}
