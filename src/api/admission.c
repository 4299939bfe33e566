/*
 * admission.c - runtime-independent webhook checks (upstream v2.3.0
 * pkg/webhooks): for TrainingRuntime and ClusterTrainingRuntime, every
 * replicated job labelled as a TrainJob ancestor (dataset-initializer,
 * model-initializer, trainer) has exactly one replica and the container that
 * step runs in; a ClusterTrainingRuntime labelled deprecated draws a warning.
 * For an OptimizationJob, kftrainer's own checks (src/hpo/check.c).
 */
#include "api/admission.h"
#include "hpo/hpo.h"

#include <string.h>

#include "kftrainer/constants.h"

static const char *expected_container(const char *ancestor)
{
	if (strcmp(ancestor, KFT_ANCESTOR_TRAINER) == 0)
		return KFT_CONTAINER_NODE;
	if (strcmp(ancestor, KFT_DATASET_INITIALIZER) == 0)
		return KFT_DATASET_INITIALIZER;
	if (strcmp(ancestor, KFT_MODEL_INITIALIZER) == 0)
		return KFT_MODEL_INITIALIZER;
	return NULL;
}

static int has_container(const json_t *containers, const char *name)
{
	size_t i;
	const json_t *c;
	json_array_foreach(containers, i, c)
	{
		const char *n = json_string_value(json_object_get(c, "name"));
		if (n && strcmp(n, name) == 0)
			return 1;
	}
	return 0;
}

/* corev1.Container's fields in Go declaration order: upstream renders the
 * offending container list with encoding/json, which follows it (and
 * always writes "resources", a struct). Nested values keep their order. */
static const char *const container_fields[] = {
        "name",
        "image",
        "command",
        "args",
        "workingDir",
        "ports",
        "envFrom",
        "env",
        "resources",
        "resizePolicy",
        "restartPolicy",
        "restartPolicyRules",
        "volumeMounts",
        "volumeDevices",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "securityContext",
        "stdin",
        "stdinOnce",
        "tty",
};

static json_t *as_go_containers(const json_t *containers)
{
	json_t *out = json_array();
	size_t i;
	const json_t *c;
	json_array_foreach(containers, i, c)
	{
		json_t *o = json_object();
		for (size_t f = 0; f < sizeof(container_fields) / sizeof(container_fields[0]);
		     f++) {
			json_t *v = json_object_get(c, container_fields[f]);
			if (!v && strcmp(container_fields[f], "resources") == 0)
				v = json_object();
			else if (v)
				json_incref(v);
			if (v)
				json_object_set_new(o, container_fields[f], v);
		}
		json_array_append_new(out, o);
	}
	return out;
}

static void check_replicated_job(size_t idx, const json_t *rj, kft_field_errors *errs)
{
	const json_t *tmpl = json_object_get(rj, "template");
	const json_t *labels = json_object_get(json_object_get(tmpl, "metadata"), "labels");
	const char *ancestor = json_string_value(json_object_get(labels, KFT_LABEL_ANCESTOR));
	const char *container = ancestor ? expected_container(ancestor) : NULL;
	if (!container)
		return;
	char path[256];
	/* JobSet defaults replicas to 1; the webhook sees the defaulted value. */
	const json_t *replicas = json_object_get(rj, "replicas");
	if (replicas && !(json_is_integer(replicas) && json_integer_value(replicas) == 1)) {
		snprintf(path, sizeof(path), "spec.template.spec.replicatedJobs[%zu].replicas",
		         idx);
		kft_field_errors_add(errs, KFT_FIELD_INVALID, path, replicas, "always must be 1");
	}
	const json_t *pod_spec = json_object_get(
	        json_object_get(json_object_get(json_object_get(tmpl, "spec"), "template"), "spec"),
	        "containers");
	if (!has_container(pod_spec, container)) {
		snprintf(path, sizeof(path),
		         "spec.template.spec.replicatedJobs[%zu].template.spec.template.spec."
		         "containers",
		         idx);
		json_t *value = pod_spec ? as_go_containers(pod_spec) : json_null();
		kft_field_errors_add(errs, KFT_FIELD_INVALID, path, value,
		                     "must contain the required container for the ancestor: %s",
		                     ancestor);
		json_decref(value);
	}
}

void kft_admission_check(const kft_kind_info *kind, const json_t *obj, const json_t *old_obj,
                         kft_field_errors *errs)
{
	if (strcmp(kind->kind, KFT_KIND_OPTIMIZATIONJOB) == 0) {
		kft_hpo_validate(obj, errs);
		return;
	}
	int cluster = strcmp(kind->kind, "ClusterTrainingRuntime") == 0;
	if (!cluster && strcmp(kind->kind, "TrainingRuntime") != 0)
		return;
	const json_t *rjobs = json_object_get(
	        json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec"),
	        "replicatedJobs");
	size_t i;
	const json_t *rj;
	json_array_foreach(rjobs, i, rj) check_replicated_job(i, rj, errs);
	const json_t *meta = json_object_get(obj, "metadata");
	const char *support = json_string_value(
	        json_object_get(json_object_get(meta, "labels"), KFT_LABEL_SUPPORT));
	if (cluster && support && strcmp(support, KFT_SUPPORT_DEPRECATED) == 0) {
		const char *name = json_string_value(json_object_get(meta, "name"));
		kft_field_errors_warn(
		        errs,
		        "ClusterTrainingRuntime \"%s\" is deprecated and will be "
		        "removed in a future release of Kubeflow Trainer. See runtime "
		        "deprecation policy: %s",
		        name ? name : "", KFT_RUNTIME_DEPRECATION_POLICY_URL);
	}
}
