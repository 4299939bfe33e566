/*
 * jobs.c - the job verbs' shared ground (see jobs.h). Everything is read from
 * the store through the local backend, which checks the job's supervisor is
 * alive on every read, so a verb never shows a job as running when nothing
 * runs it.
 */
#include "jobs.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "kftrainer/constants.h"

/* A job the store passes over (its row is damaged) is named on stderr. */
static void warn_skipped(void *ctx, const char *message)
{
	(void)ctx;
	kft_cli_error("warning: %s", message);
}

static int open_local(bool to_submit, kft_local **out)
{
	kft_error err;
	if ((to_submit ? kft_local_open_to_submit : kft_local_open)(NULL, NULL, out, &err) != 0) {
		kft_cli_error("opening the local state: %s", err.message);
		return KFT_EXIT_FAILED;
	}
	kft_store_set_warn(kft_local_store(*out), warn_skipped, NULL);
	return 0;
}

int kft_cli_open_local(kft_local **out)
{
	return open_local(false, out);
}

int kft_cli_open_local_to_submit(kft_local **out)
{
	return open_local(true, out);
}

#define TYPE_GROUP ".trainer.kubeflow.org"

bool kft_cli_is_type(const char *word, const char *singular, const char *plural, const char **name)
{
	const char *slash = strchr(word, '/');
	size_t n = slash ? (size_t)(slash - word) : strlen(word), g = strlen(TYPE_GROUP);
	size_t base = n >= g && strncmp(word + n - g, TYPE_GROUP, g) == 0 ? n - g : n;
	bool type = (base == strlen(singular) && strncmp(word, singular, base) == 0) ||
	            (base == strlen(plural) && strncmp(word, plural, base) == 0);
	*name = type && slash ? slash + 1 : NULL;
	return type && (!slash || slash[1] != '\0');
}

int kft_cli_typed_operands(char **names, int *count, const char *singular, const char *plural)
{
	const char *name = NULL;
	if (*count == 0 || !kft_cli_is_type(names[0], singular, plural, &name))
		return 0;
	bool slashed = name != NULL;
	int k = 0;
	for (int i = slashed ? 0 : 1; i < *count; i++) {
		bool typed = kft_cli_is_type(names[i], singular, plural, &name);
		if (slashed ? !typed || !name : typed) {
			kft_cli_error("there is no need to specify a resource type as a separate "
			              "argument when passing arguments in resource/name form");
			return KFT_EXIT_USAGE;
		}
		names[k++] = slashed ? (char *)name : names[i];
	}
	*count = k;
	return 0;
}

int kft_cli_trainjob_operands(char **names, int *count)
{
	return kft_cli_typed_operands(names, count, "trainjob", "trainjobs");
}

int kft_cli_list_jobs(kft_local *l, const char *ns, json_t **out)
{
	kft_error err;
	if (kft_local_list(l, ns, out, &err) != 0) {
		kft_cli_error("%s", err.message);
		return KFT_EXIT_FAILED;
	}
	return 0;
}

int kft_cli_job_error(const char *name, const kft_error *err)
{
	if (err->code == KFT_ENOTFOUND) {
		kft_cli_not_found(name);
		return KFT_EXIT_NOT_FOUND;
	}
	kft_cli_error("%s", err->message);
	return KFT_EXIT_FAILED;
}

static const char *str_at(const json_t *obj, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(obj, a), b));
}

const json_t *kft_cli_condition_find(const json_t *job, const char *type, const char *status,
                                     bool nocase)
{
	int (*cmp)(const char *, const char *) = nocase ? strcasecmp : strcmp;
	const json_t *conds = json_object_get(json_object_get(job, "status"), "conditions");
	size_t i;
	const json_t *c;
	json_array_foreach(conds, i, c)
	{
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));
		if (t && s && cmp(t, type) == 0 && cmp(s, status) == 0)
			return c;
	}
	return NULL;
}

const json_t *kft_cli_condition_true(const json_t *job, const char *type)
{
	return kft_cli_condition_find(job, type, "True", false);
}

const char *kft_cli_job_outcome(const json_t *job)
{
	if (kft_cli_condition_true(job, "Failed"))
		return "Failed";
	if (kft_cli_condition_true(job, "Complete"))
		return "Complete";
	return NULL;
}

/* Whether any child Job counts as active in status.jobsStatus. */
static bool children_active(const json_t *job)
{
	const json_t *js = json_object_get(json_object_get(job, "status"), "jobsStatus");
	size_t i;
	const json_t *j;
	json_array_foreach(js, i,
	                   j) if (json_integer_value(json_object_get(j, "active")) > 0) return true;
	return false;
}

static bool pods_running(kft_local *l, const json_t *job)
{
	kft_pod_record *recs = NULL;
	size_t n = 0;
	bool running = false;
	if (kft_store_pods(kft_local_store(l), kft_cli_job_ns(job), kft_cli_job_name(job), &recs,
	                   &n, NULL) != 0)
		return false;
	for (size_t i = 0; i < n && !running; i++)
		running = recs[i].state && strcmp(recs[i].state, "Running") == 0;
	kft_pod_records_free(recs, n);
	return running;
}

long long kft_cli_job_restarts(kft_local *l, const json_t *job)
{
	kft_pod_record *recs = NULL;
	size_t n = 0;
	long long total = 0;
	if (kft_store_pods(kft_local_store(l), kft_cli_job_ns(job), kft_cli_job_name(job), &recs,
	                   &n, NULL) != 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		total += recs[i].restarts > 0 ? recs[i].restarts : 0;
	kft_pod_records_free(recs, n);
	return total;
}

const char *kft_cli_job_phase(kft_local *l, const json_t *job)
{
	/* kubectl shows an object with a deletionTimestamp as Terminating until
	 * it is gone; whatever it was doing no longer matters. */
	if (json_object_get(json_object_get(job, "metadata"), "deletionTimestamp"))
		return "Terminating";
	const char *outcome = kft_cli_job_outcome(job);
	if (outcome)
		return outcome;
	if (kft_cli_condition_true(job, "Suspended"))
		return "Suspended";
	if (children_active(job) || pods_running(l, job))
		return "Running";
	return "Created";
}

const char *kft_cli_job_name(const json_t *job)
{
	const char *n = str_at(job, "metadata", "name");
	return n ? n : "";
}

const char *kft_cli_job_ns(const json_t *job)
{
	const char *ns = str_at(job, "metadata", "namespace");
	return ns && *ns ? ns : "default";
}

json_t *kft_cli_job_jobset(kft_local *l, const char *ns, const char *name)
{
	json_t *objects = NULL, *found = NULL;
	if (kft_store_job_objects(kft_local_store(l), ns, name, &objects, NULL) != 0)
		return NULL;
	size_t i;
	json_t *o;
	json_array_foreach(objects, i, o)
	{
		const char *kind = json_string_value(json_object_get(o, "kind"));
		if (kind && strcmp(kind, "JobSet") == 0) {
			found = json_incref(o);
			break;
		}
	}
	json_decref(objects);
	return found;
}

int kft_cli_rjob_pods(const json_t *jobset, const char *rjob)
{
	const json_t *rjobs = json_object_get(json_object_get(jobset, "spec"), "replicatedJobs");
	size_t i;
	const json_t *r;
	json_array_foreach(rjobs, i, r)
	{
		const char *name = json_string_value(json_object_get(r, "name"));
		if (!name || strcmp(name, rjob) != 0)
			continue;
		kft_rjob_counts c;
		if (kft_rjob_counts_of(r, &c) != 0)
			return 0;
		if (c.replicas > 1000000 || c.completions > 1000000)
			return 1000000;
		int64_t n = c.replicas * c.completions;
		return n > 1000000 ? 1000000 : (int)n;
	}
	return 0;
}

static const char *labels_step(const json_t *rjob)
{
	const json_t *labels = json_object_get(
	        json_object_get(json_object_get(rjob, "template"), "metadata"), "labels");
	return json_string_value(json_object_get(labels, KFT_LABEL_ANCESTOR));
}

void kft_cli_job_nodes(kft_local *l, const json_t *job, char *buf, size_t size)
{
	const json_t *n = json_object_get(json_object_get(json_object_get(job, "spec"), "trainer"),
	                                  "numNodes");
	if (json_is_integer(n)) {
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(n));
		return;
	}
	json_t *js = kft_cli_job_jobset(l, kft_cli_job_ns(job), kft_cli_job_name(job));
	const json_t *rjobs = json_object_get(json_object_get(js, "spec"), "replicatedJobs");
	int total = 0;
	size_t i;
	const json_t *r;
	json_array_foreach(rjobs, i, r)
	{
		const char *name = json_string_value(json_object_get(r, "name"));
		const char *step = labels_step(r);
		if (name &&
		    (strcmp(name, "node") == 0 || (strcmp(name, "launcher") == 0 && step &&
		                                   strcmp(step, KFT_ANCESTOR_TRAINER) == 0)))
			total += kft_cli_rjob_pods(js, name);
	}
	json_decref(js);
	if (js)
		snprintf(buf, size, "%d", total);
	else
		snprintf(buf, size, "-");
}

void kft_cli_events_table(const json_t *items)
{
	json_t *rows = json_array();
	const char *head[] = {"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"};
	kft_cli_table_row(rows, 5, head);
	const json_t *ev;
	size_t i;
	json_array_foreach(items, i, ev)
	{
		const json_t *io = json_object_get(ev, "involvedObject");
		const char *kind = json_string_value(json_object_get(io, "kind"));
		char age[32], object[600];
		kft_cli_format_age(kft_cli_seconds_since(
		                           json_string_value(json_object_get(ev, "lastTimestamp"))),
		                   age, sizeof(age));
		snprintf(object, sizeof(object), "%s/%s", kind ? kind : "",
		         json_string_value(json_object_get(io, "name")) ?: "");
		for (char *c = object; *c && *c != '/'; c++)
			*c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
		const char *cells[] = {age, json_string_value(json_object_get(ev, "type")),
		                       json_string_value(json_object_get(ev, "reason")), object,
		                       json_string_value(json_object_get(ev, "message"))};
		kft_cli_table_row(rows, 5, cells);
	}
	kft_cli_print_table(stdout, rows);
	json_decref(rows);
}
