/*
 * exportjob.c - on a cluster, the model leaves a completed TrainJob through
 * a batch/v1 Job the controller adds (see track.h): this builds that Job
 * and reads its outcome, as pure functions over JSON.
 *
 * The Job's one pod sees the output where the trainer's first node saw it:
 * it mounts the node container's volumeMounts over the trainer pod's
 * volumes, plus the claims JobSet's volumeClaimPolicies made for it (named
 * as JobSet's KEP-572 names them: CLAIM-JOBSET when shared by every
 * replicated job, CLAIM-JOBSET-RJOB-0-0 for the first node's own). It runs
 * kftrainer-export, the local exporter's code in a static program, with
 * --from and --to from the annotations and the TrainJob's identity in
 * KFTRAINER_EXPORT_TRAINJOB (for its run); credentials come from the
 * Secret export-secret names (envFrom), the tracking server from the
 * controller's setting. A failed export says why in its termination
 * message, which becomes the condition's message.
 */
#include "track/track.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/conditions.h"
#include "kftrainer/constants.h"
#include "util/json.h"

#define NAME_MAX_LEN 63

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const char *annotation(const json_t *obj, const char *key)
{
	return jstr(json_object_get(json_object_get(obj, "metadata"), "annotations"), key);
}

char *kft_track_export_job_name(const char *trainjob)
{
	char *out = NULL;
	size_t suffix = strlen(KFT_TRACK_EXPORT_JOB_SUFFIX);
	int keep = (int)(strlen(trainjob) + suffix > NAME_MAX_LEN ? NAME_MAX_LEN - suffix
	                                                          : strlen(trainjob));
	if (asprintf(&out, "%.*s%s", keep, trainjob, KFT_TRACK_EXPORT_JOB_SUFFIX) < 0)
		return NULL;
	return out;
}

/* The trainer's replicated job: labelled as the trainer step, else "node". */
static const json_t *trainer_rjob(const json_t *jobset)
{
	const json_t *rjobs = json_object_get(json_object_get(jobset, "spec"), "replicatedJobs");
	const json_t *rj;
	size_t i;
	json_array_foreach(rjobs, i, rj)
	{
		const json_t *labels = json_object_get(
		        json_object_get(json_object_get(rj, "template"), "metadata"), "labels");
		const char *step = jstr(labels, KFT_LABEL_ANCESTOR);
		if (step && strcmp(step, KFT_ANCESTOR_TRAINER) == 0)
			return rj;
	}
	return kft_json_find(rjobs, "name", KFT_CONTAINER_NODE);
}

/* The claims volumeClaimPolicies make for the trainer's first pod. */
static int claim_volumes(const json_t *jobset, const char *rjob, json_t *volumes)
{
	const char *js = jstr(json_object_get(jobset, "metadata"), "name");
	const json_t *policies =
	        json_object_get(json_object_get(jobset, "spec"), "volumeClaimPolicies");
	const json_t *p, *tpl;
	size_t i, k;
	json_array_foreach(policies, i, p)
	{
		const json_t *targets = json_object_get(p, "targetReplicatedJobs"), *t;
		bool shared = json_array_size(targets) == 0, mine = shared;
		size_t n;
		json_array_foreach(targets, n, t)
		{
			mine = mine ||
			       (json_string_value(t) && strcmp(json_string_value(t), rjob) == 0);
		}
		if (!mine)
			continue;
		json_array_foreach(json_object_get(p, "templates"), k, tpl)
		{
			const char *claim = jstr(json_object_get(tpl, "metadata"), "name");
			char name[512];
			if (!claim || kft_json_find(volumes, "name", claim))
				continue;
			if (shared)
				snprintf(name, sizeof(name), "%s-%s", claim, js);
			else
				snprintf(name, sizeof(name), "%s-%s-%s-0-0", claim, js, rjob);
			if (json_array_append_new(volumes, json_pack("{s:s, s:{s:s}}", "name",
			                                             claim, "persistentVolumeClaim",
			                                             "claimName", name)))
				return KFT_ENOMEM;
		}
	}
	return 0;
}

/* KFTRAINER_EXPORT_TRAINJOB: the TrainJob's identity and declarations. */
static char *trainjob_env(const json_t *tj)
{
	const json_t *meta = json_object_get(tj, "metadata");
	json_t *id =
	        json_pack("{s:s, s:{s:O*, s:O*, s:O*, s:O*, s:O*}, s:{s:O*}}", "kind", "TrainJob",
	                  "metadata", "name", json_object_get(meta, "name"), "namespace",
	                  json_object_get(meta, "namespace"), "uid", json_object_get(meta, "uid"),
	                  "annotations", json_object_get(meta, "annotations"), "labels",
	                  json_object_get(meta, "labels"), "spec", "runtimeRef",
	                  json_object_get(json_object_get(tj, "spec"), "runtimeRef"));
	char *text = id ? json_dumps(id, JSON_COMPACT) : NULL;
	json_decref(id);
	return text;
}

static json_t *env_list(const json_t *tj, const kft_track_export_cfg *cfg)
{
	char *ident = trainjob_env(tj);
	json_t *env = ident ? json_pack("[{s:s, s:s}]", "name", KFT_TRACK_EXPORT_TRAINJOB_ENV,
	                                "value", ident)
	                    : NULL;
	free(ident);
	if (env && cfg->tracking_uri)
		json_array_append_new(env, json_pack("{s:s, s:s}", "name", "MLFLOW_TRACKING_URI",
		                                     "value", cfg->tracking_uri));
	if (env && cfg->experiment)
		json_array_append_new(env, json_pack("{s:s, s:s}", "name", "MLFLOW_EXPERIMENT_NAME",
		                                     "value", cfg->experiment));
	return env;
}

static json_t *exporter_container(const json_t *tj, const json_t *node,
                                  const kft_track_export_cfg *cfg)
{
	const char *from = annotation(tj, KFT_TRACK_ANN_EXPORT_FROM);
	const char *secret = annotation(tj, KFT_TRACK_ANN_EXPORT_SECRET);
	json_t *c = json_pack("{s:s, s:s, s:[s], s:[s, s, s, s], s:o*, s:O*, s:s}", "name",
	                      KFT_TRACK_EXPORT_CONTAINER, "image", cfg->image, "command",
	                      "kftrainer-export", "args", "--from",
	                      from ? from : KFT_TRACK_DEFAULT_FROM, "--to",
	                      annotation(tj, KFT_TRACK_ANN_EXPORT_TO), "env", env_list(tj, cfg),
	                      "volumeMounts", json_object_get(node, "volumeMounts"),
	                      "terminationMessagePolicy", "FallbackToLogsOnError");
	if (c && secret)
		json_object_set_new(c, "envFrom",
		                    json_pack("[{s:{s:s}}]", "secretRef", "name", secret));
	return c;
}

int kft_track_export_job(const json_t *tj, const json_t *jobset, const kft_track_export_cfg *cfg,
                         json_t **out, kft_error *err)
{
	const json_t *meta = json_object_get(tj, "metadata");
	const json_t *rj = trainer_rjob(jobset);
	const json_t *pod = json_object_get(
	        json_object_get(json_object_get(json_object_get(rj, "template"), "spec"),
	                        "template"),
	        "spec");
	const json_t *node =
	        kft_json_find(json_object_get(pod, "containers"), "name", KFT_CONTAINER_NODE);
	*out = NULL;
	if (!annotation(tj, KFT_TRACK_ANN_EXPORT_TO) || !cfg->image)
		return kft_error_set(err, KFT_EINVAL,
		                     "no export-to, or no export image configured");
	if (!rj || !node)
		return kft_error_set(err, KFT_ENOTFOUND,
		                     "the JobSet has no trainer node to export the output of");
	json_t *volumes = json_deep_copy(json_object_get(pod, "volumes"));
	if (!volumes)
		volumes = json_array();
	char *name = kft_track_export_job_name(jstr(meta, "name"));
	int rc = volumes && name ? claim_volumes(jobset, jstr(rj, "name"), volumes) : KFT_ENOMEM;
	json_t *job =
	        rc ? NULL
	           : json_pack("{s:s, s:s, s:{s:s, s:O*, s:{s:O*, s:s}, s:[{s:s, s:s, s:O*, s:O*, "
	                       "s:b, s:b}]},"
	                       " s:{s:i, s:{s:{s:s, s:[o*], s:O, s:O*, s:O*}}}}",
	                       "apiVersion", "batch/v1", "kind", "Job", "metadata", "name", name,
	                       "namespace", json_object_get(meta, "namespace"), "labels",
	                       KFT_TRACK_LABEL_TRAINJOB, json_object_get(meta, "name"),
	                       KFT_TRACK_LABEL_EXPORT, "true", "ownerReferences", "apiVersion",
	                       jstr(tj, "apiVersion") ? jstr(tj, "apiVersion")
	                                              : "trainer.kubeflow.org/v1alpha1",
	                       "kind", "TrainJob", "name", json_object_get(meta, "name"), "uid",
	                       json_object_get(meta, "uid"), "controller", 1, "blockOwnerDeletion",
	                       1, "spec", "backoffLimit", 2, "template", "spec", "restartPolicy",
	                       "Never", "containers", exporter_container(tj, node, cfg), "volumes",
	                       volumes, "nodeSelector", json_object_get(pod, "nodeSelector"),
	                       "tolerations", json_object_get(pod, "tolerations"));
	free(name);
	json_decref(volumes);
	if (!job)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	*out = job;
	return 0;
}

int kft_track_export_observe(const json_t *tj, const json_t *job, const char *termination,
                             kft_track_export_state *out)
{
	const json_t *st = json_object_get(job, "status");
	const char *to = annotation(tj, KFT_TRACK_ANN_EXPORT_TO);
	const char *from = annotation(tj, KFT_TRACK_ANN_EXPORT_FROM);
	memset(out, 0, sizeof(*out));
	from = from ? from : KFT_TRACK_DEFAULT_FROM;
	if (kft_condition_is_true(st, "Complete")) {
		out->status = KFT_CONDITION_TRUE;
		out->reason = KFT_TRACK_REASON_EXPORTED;
		out->done = true;
		/* the exporter's last line says where (models:/NAME/VERSION) */
		if (termination && *termination)
			out->message = strndup(termination, 1024);
		else if (asprintf(&out->message, "exported %s to %s", from, to) < 0)
			out->message = NULL;
	} else if (kft_condition_is_true(st, "Failed")) {
		const json_t *c = kft_condition_find(st, "Failed");
		out->status = KFT_CONDITION_FALSE;
		out->reason = KFT_TRACK_REASON_FAILED;
		out->done = true;
		out->message = strndup(termination && *termination ? termination
		                       : jstr(c, "message")        ? jstr(c, "message")
		                                                   : "the export Job failed",
		                       1024);
	} else {
		out->status = KFT_CONDITION_UNKNOWN;
		out->reason = KFT_TRACK_REASON_EXPORTING;
		if (asprintf(&out->message, "exporting %s to %s", from, to) < 0)
			out->message = NULL;
	}
	return out->message ? 0 : KFT_ENOMEM;
}
