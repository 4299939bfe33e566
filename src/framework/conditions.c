/*
 * conditions.c - TrainJob status conditions (see conditions.h).
 *
 * Conditions live in the JSON tree as Kubernetes stores them, so there is
 * no typed copy to keep in sync: each function finds the condition by type
 * and edits the object in place. A new condition is written with the key
 * order of metav1.Condition (type, status, observedGeneration,
 * lastTransitionTime, reason, message) so printed objects read the way
 * kubectl shows them.
 *
 * The reconcile steps are small functions rather than one "reconcile"
 * because the caller builds and applies the children between them, and
 * only the caller knows how (cluster, local processes, tests).
 */
#include "framework/conditions.h"
#include "util/utf8.h"
#include "util/rfc3339.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- finding ---------------------------------------------------------------- */

static const char *str_field(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static int str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* Index of the condition of this type in the array, or -1. */
static long index_of(const json_t *conds, const char *type)
{
	size_t i;
	const json_t *c;
	json_array_foreach(conds, i, c)
	{
		if (str_eq(str_field(c, "type"), type))
			return (long)i;
	}
	return -1;
}

const json_t *kft_condition_find(const json_t *status, const char *type)
{
	const json_t *conds = json_object_get(status, "conditions");
	if (!json_is_array(conds) || !type)
		return NULL;
	long i = index_of(conds, type);
	return i < 0 ? NULL : json_array_get(conds, (size_t)i);
}

int kft_condition_is_true(const json_t *status, const char *type)
{
	return str_eq(str_field(kft_condition_find(status, type), "status"), KFT_CONDITION_TRUE);
}

/* ---- setting ---------------------------------------------------------------- */

/* status.conditions, created when missing; NULL with err set otherwise. */
static json_t *conditions_of(json_t *status, kft_error *err)
{
	if (!json_is_object(status)) {
		kft_error_set(err, KFT_EINVAL, "status is not an object");
		return NULL;
	}
	json_t *conds = json_object_get(status, "conditions");
	if (json_is_array(conds))
		return conds;
	if (conds && !json_is_null(conds)) {
		kft_error_set(err, KFT_EINVAL, "status.conditions is not a list");
		return NULL;
	}
	conds = json_array();
	if (!conds || json_object_set_new(status, "conditions", conds) != 0) {
		kft_error_set(err, KFT_ENOMEM, "out of memory");
		return NULL;
	}
	return conds;
}

/* Go's metav1.Time.IsZero for what a JSON condition may hold. */
static int time_is_zero(const json_t *t)
{
	const char *s = json_string_value(t);
	return !s || !*s;
}

static json_int_t generation_of(const json_t *cond)
{
	const json_t *g = json_object_get(cond, "observedGeneration");
	return json_is_integer(g) ? json_integer_value(g) : 0;
}

/* Sets key to a copy of string s, reporting whether the value changed. */
static int set_string(json_t *obj, const char *key, const char *s, int *changed)
{
	if (str_eq(str_field(obj, key), s))
		return 0;
	*changed = 1;
	return json_object_set_new(obj, key, json_string(s)) == 0 ? 0 : KFT_ENOMEM;
}

static int set_generation(json_t *obj, json_int_t gen, int *changed)
{
	if (generation_of(obj) == gen)
		return 0;
	*changed = 1;
	if (gen == 0)
		return json_object_del(obj, "observedGeneration") == 0 ? 0 : KFT_ENOMEM;
	return json_object_set_new(obj, "observedGeneration", json_integer(gen)) == 0 ? 0
	                                                                              : KFT_ENOMEM;
}

/* A new condition object in metav1.Condition's field order. */
static json_t *new_condition(const json_t *cond, const char *ltt)
{
	json_t *c = json_object();
	json_int_t gen = generation_of(cond);
	const char *reason = str_field(cond, "reason");
	const char *message = str_field(cond, "message");
	if (!c)
		return NULL;
	int bad = json_object_set_new(c, "type", json_string(str_field(cond, "type"))) ||
	          json_object_set_new(c, "status", json_string(str_field(cond, "status")));
	if (!bad && gen != 0)
		bad = json_object_set_new(c, "observedGeneration", json_integer(gen));
	if (!bad)
		bad = json_object_set_new(c, "lastTransitionTime", json_string(ltt)) ||
		      json_object_set_new(c, "reason", json_string(reason ? reason : "")) ||
		      json_object_set_new(c, "message", json_string(message ? message : ""));
	if (bad) {
		json_decref(c);
		return NULL;
	}
	return c;
}

/* meta.SetStatusCondition's update of an existing condition. */
static int update_condition(json_t *have, const json_t *cond, const char *ltt, int *changed)
{
	const char *reason = str_field(cond, "reason");
	const char *message = str_field(cond, "message");
	int rc = 0;
	if (!str_eq(str_field(have, "status"), str_field(cond, "status"))) {
		int ignored = 0;
		rc = set_string(have, "status", str_field(cond, "status"), changed);
		if (rc == 0)
			rc = set_string(have, "lastTransitionTime", ltt, &ignored);
	}
	if (rc == 0)
		rc = set_string(have, "reason", reason ? reason : "", changed);
	if (rc == 0)
		rc = set_string(have, "message", message ? message : "", changed);
	if (rc == 0)
		rc = set_generation(have, generation_of(cond), changed);
	return rc;
}

int kft_condition_set_object(json_t *status, const json_t *cond, const char *now, int *changed,
                             kft_error *err)
{
	int dummy = 0;
	int *chg = changed ? changed : &dummy;
	*chg = 0;
	const char *type = str_field(cond, "type");
	if (!type || !str_field(cond, "status"))
		return kft_error_set(err, KFT_EINVAL, "a condition needs a type and a status");
	const json_t *given = json_object_get(cond, "lastTransitionTime");
	const char *ltt = time_is_zero(given) ? now : json_string_value(given);
	if (!ltt)
		return kft_error_set(err, KFT_EINVAL, "no time given for a condition");
	json_t *conds = conditions_of(status, err);
	if (!conds)
		return err ? err->code : KFT_EINVAL;
	long i = index_of(conds, type);
	if (i < 0) {
		json_t *c = new_condition(cond, ltt);
		if (!c || json_array_append_new(conds, c) != 0)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		*chg = 1;
		return 0;
	}
	if (update_condition(json_array_get(conds, (size_t)i), cond, ltt, chg) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

int kft_condition_set(json_t *status, const char *type, const char *cond_status, const char *reason,
                      const char *message, const char *now, kft_error *err)
{
	if (!type || !cond_status || !now)
		return kft_error_set(err, KFT_EINVAL, "a condition needs a type, status and time");
	json_t *cond = json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status", cond_status,
	                         "reason", reason ? reason : "", "message", message ? message : "");
	if (!cond)
		return kft_error_set(err, KFT_EINVAL, "a condition's strings must be UTF-8");
	int rc = kft_condition_set_object(status, cond, now, NULL, err);
	json_decref(cond);
	return rc;
}

int kft_condition_remove(json_t *status, const char *type)
{
	json_t *conds = json_object_get(status, "conditions");
	int removed = 0;
	long i;
	if (!json_is_array(conds) || !type)
		return 0;
	while ((i = index_of(conds, type)) >= 0) {
		json_array_remove(conds, (size_t)i);
		removed = 1;
	}
	if (removed && json_array_size(conds) == 0)
		json_object_del(status, "conditions");
	return removed;
}

int kft_condition_copy_from_child(json_t *status, const json_t *child_status,
                                  const char *child_type, const char *type, const char *now,
                                  kft_error *err)
{
	const json_t *c = kft_condition_find(child_status, child_type);
	if (!c || !str_eq(str_field(c, "status"), KFT_CONDITION_TRUE))
		return 0;
	json_t *copy = json_deep_copy(c);
	if (!copy || json_object_set_new(copy, "type", json_string(type)) != 0) {
		json_decref(copy);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	int rc = kft_condition_set_object(status, copy, now, NULL, err);
	json_decref(copy);
	return rc;
}

/* ---- a TrainJob --------------------------------------------------------- */

static const json_t *spec_of(const json_t *trainjob)
{
	return json_object_get(trainjob, "spec");
}

int kft_trainjob_is_finished(const json_t *trainjob)
{
	const json_t *status = json_object_get(trainjob, "status");
	return kft_condition_is_true(status, KFT_CONDITION_COMPLETE) ||
	       kft_condition_is_true(status, KFT_CONDITION_FAILED);
}

int kft_trainjob_is_managed_externally(const json_t *trainjob)
{
	const char *by = str_field(spec_of(trainjob), "managedBy");
	return by && strcmp(by, KFT_TRAINJOB_CONTROLLER_NAME) != 0;
}

char *kft_trainjob_runtime_key(const json_t *trainjob)
{
	const json_t *ref = json_object_get(spec_of(trainjob), "runtimeRef");
	const char *group = str_field(ref, "apiGroup");
	const char *kind = str_field(ref, "kind");
	char *out = NULL;
	int n;
	if (!kind)
		kind = "";
	/* schema.GroupKind.String(): the kind alone when the group is empty. */
	if (!group || !*group)
		n = asprintf(&out, "%s", kind);
	else
		n = asprintf(&out, "%s.%s", kind, group);
	return n < 0 ? NULL : out;
}

/* trainjob.status, created when missing. */
static json_t *status_of(json_t *trainjob, kft_error *err)
{
	if (!json_is_object(trainjob)) {
		kft_error_set(err, KFT_EINVAL, "the TrainJob is not an object");
		return NULL;
	}
	json_t *status = json_object_get(trainjob, "status");
	if (json_is_object(status))
		return status;
	status = json_object();
	if (!status || json_object_set_new(trainjob, "status", status) != 0) {
		kft_error_set(err, KFT_ENOMEM, "out of memory");
		return NULL;
	}
	return status;
}

void kft_trainjob_clear_failed(json_t *trainjob)
{
	json_t *status = json_object_get(trainjob, "status");
	const json_t *failed = kft_condition_find(status, KFT_CONDITION_FAILED);
	if (failed && str_eq(str_field(failed, "reason"), KFT_REASON_DEADLINE_EXCEEDED))
		return;
	kft_condition_remove(status, KFT_CONDITION_FAILED);
}

int kft_trainjob_set_failed(json_t *trainjob, const char *message, const char *reason,
                            const char *now, kft_error *err)
{
	json_t *status = status_of(trainjob, err);
	if (!status)
		return err ? err->code : KFT_EINVAL;
	return kft_condition_set(status, KFT_CONDITION_FAILED, KFT_CONDITION_TRUE, reason, message,
	                         now, err);
}

int kft_trainjob_set_unsupported_runtime(json_t *trainjob, const char *now, kft_error *err)
{
	char *key = kft_trainjob_runtime_key(trainjob);
	char *msg = NULL;
	if (!key || asprintf(&msg, "unsupported runtime: %s", key) < 0) {
		free(key);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	int rc = kft_trainjob_set_failed(trainjob, msg, KFT_REASON_RUNTIME_NOT_SUPPORTED, now, err);
	free(msg);
	free(key);
	return rc;
}

int kft_trainjob_set_suspended(json_t *trainjob, const char *now, kft_error *err)
{
	int suspend = json_is_true(json_object_get(spec_of(trainjob), "suspend"));
	const json_t *cur = json_object_get(trainjob, "status");
	if (!suspend && !kft_condition_is_true(cur, KFT_CONDITION_SUSPENDED))
		return 0;
	json_t *status = status_of(trainjob, err);
	if (!status)
		return err ? err->code : KFT_EINVAL;
	if (suspend)
		return kft_condition_set(status, KFT_CONDITION_SUSPENDED, KFT_CONDITION_TRUE,
		                         KFT_REASON_SUSPENDED, KFT_MESSAGE_SUSPENDED, now, err);
	return kft_condition_set(status, KFT_CONDITION_SUSPENDED, KFT_CONDITION_FALSE,
	                         KFT_REASON_RESUMED, KFT_MESSAGE_RESUMED, now, err);
}

/* A copy of the Failed condition when its reason is DeadlineExceeded. */
static json_t *deadline_condition(const json_t *trainjob)
{
	const json_t *f =
	        kft_condition_find(json_object_get(trainjob, "status"), KFT_CONDITION_FAILED);
	if (!f || !str_eq(str_field(f, "reason"), KFT_REASON_DEADLINE_EXCEEDED))
		return NULL;
	return json_deep_copy(f);
}

int kft_trainjob_adopt_status(json_t *trainjob, json_t *new_status, const char *now, kft_error *err)
{
	if (!json_is_object(trainjob)) {
		json_decref(new_status);
		return kft_error_set(err, KFT_EINVAL, "the TrainJob is not an object");
	}
	if (new_status && !json_is_object(new_status)) {
		json_decref(new_status);
		return kft_error_set(err, KFT_EINVAL, "a TrainJob status must be an object");
	}
	json_t *kept = deadline_condition(trainjob);
	if (new_status && json_object_set_new(trainjob, "status", new_status) != 0) {
		json_decref(kept);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	int rc = 0;
	if (kept) {
		json_t *status = status_of(trainjob, err);
		rc = status ? kft_condition_set_object(status, kept, now, NULL, err)
		            : (err ? err->code : KFT_EINVAL);
	}
	json_decref(kept);
	return rc;
}

/* ---- deadlines -------------------------------------------------------------- */

/* When the TrainJob's clock started, or 0 in *known when it is unknown. */
static int start_time_ms(const json_t *trainjob, int64_t *start, int *known, kft_error *err)
{
	const json_t *status = json_object_get(trainjob, "status");
	const json_t *susp = kft_condition_find(status, KFT_CONDITION_SUSPENDED);
	const char *t = str_field(json_object_get(trainjob, "metadata"), "creationTimestamp");
	if (susp && str_eq(str_field(susp, "status"), KFT_CONDITION_FALSE))
		t = str_field(susp, "lastTransitionTime");
	*known = t && *t;
	if (!*known)
		return 0;
	return kft_rfc3339_parse_ms(t, start, err);
}

/* start + seconds*1000. Seconds are clamped to +-10^12 (31,000 years) so
 * the sum cannot overflow where Go's Duration arithmetic would wrap. */
static int64_t add_seconds_ms(int64_t start, json_int_t seconds)
{
	const json_int_t bound = 1000000000000;
	if (seconds > bound)
		seconds = bound;
	if (seconds < -bound)
		seconds = -bound;
	return start + (int64_t)seconds * 1000;
}

int kft_trainjob_reconcile_deadline(json_t *trainjob, const char *now, kft_deadline_state *state,
                                    int64_t *requeue_after_ms, kft_error *err)
{
	const json_t *ads = json_object_get(spec_of(trainjob), "activeDeadlineSeconds");
	json_int_t seconds = json_is_integer(ads) ? json_integer_value(ads) : 0;
	int64_t start = 0, now_ms = 0;
	int known = 0, rc;
	*state = KFT_DEADLINE_NONE;
	*requeue_after_ms = 0;
	if (seconds == 0 || kft_trainjob_is_finished(trainjob) ||
	    json_is_true(json_object_get(spec_of(trainjob), "suspend")))
		return 0;
	rc = start_time_ms(trainjob, &start, &known, err);
	if (rc != 0 || !known)
		return rc;
	rc = kft_rfc3339_parse_ms(now, &now_ms, err);
	if (rc != 0)
		return rc;
	int64_t deadline = add_seconds_ms(start, seconds);
	if (now_ms > deadline) {
		rc = kft_trainjob_set_failed(trainjob, KFT_MESSAGE_DEADLINE_EXCEEDED,
		                             KFT_REASON_DEADLINE_EXCEEDED, now, err);
		if (rc == 0)
			*state = KFT_DEADLINE_EXCEEDED;
		return rc;
	}
	*state = KFT_DEADLINE_PENDING;
	*requeue_after_ms = deadline - now_ms > 0 ? deadline - now_ms : 1000;
	return 0;
}

/* ---- the reconcile-failure event -------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (at most len bytes), or 1 when
 * the bytes there are not one: Go's utf8.DecodeRuneInString. */
static size_t utf8_len(const unsigned char *s, size_t len)
{
	size_t n = kft_utf8_sequence(s, len);
	return n ? n : 1;
}

/* Bytes taken by the first `runes` code points of s, an invalid byte
 * counting as one, the way Go's "%.950v" counts. */
static size_t prefix_bytes(const char *s, size_t len, size_t runes)
{
	size_t i = 0;
	for (size_t r = 0; r < runes && i < len; r++)
		i += utf8_len((const unsigned char *)s + i, len - i);
	return i;
}

char *kft_trainjob_reconcile_failed_message(const char *error_text)
{
	const char *text = error_text ? error_text : "";
	size_t len = strlen(text);
	size_t keep = prefix_bytes(text, len, 950);
	char *out = NULL;
	int n = asprintf(&out, "TrainJob resources reconciliation failed: %.*s%s", (int)keep, text,
	                 len > 950 ? " ..." : "");
	return n < 0 ? NULL : out;
}
