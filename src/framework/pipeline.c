/*
 * pipeline.c - running the phases: each extension point calls every
 * registered plugin that fills it, in registry order, stopping at the first
 * error. See kftrainer/framework.h for the phases and their order.
 */
#include <stdio.h>
#include <string.h>

#include "framework/guard.h"
#include "framework/runtime_info.h"
#include "framework/conditions.h"
#include "kftrainer/framework.h"

typedef int (*info_point)(const kft_plugin_ctx *, kft_runtime_info *, const kft_trainjob *,
                          kft_error *);

/* Which function of a plugin an info-changing point calls. */
static info_point point_of(const kft_plugin *p, int which)
{
	switch (which) {
	case 0: return p->enforce_ml_policy;
	case 1: return p->enforce_pod_group_policy;
	case 2: return p->pod_network;
	case 3: return p->enforce_pod_spec;
	default: return p->pre_component_builder;
	}
}

static const char *const point_names[] = {"EnforceMLPolicy", "EnforcePodGroupPolicy", "PodNetwork",
                                          "EnforcePodSpec", "PreComponentBuilder"};

static int run_point(const kft_framework *fw, const kft_plugin_ctx *ctx, int which,
                     kft_runtime_info *info, const kft_trainjob *job, kft_error *err)
{
	for (size_t i = 0; i < kft_framework_plugin_count(fw); i++) {
		const kft_plugin *p = kft_framework_plugin_at(fw, i);
		info_point fn = point_of(p, which);
		if (!fn)
			continue;
		kft_plugin_guard_enter(p->name, point_names[which]);
		int rc = fn(ctx, info, job, err);
		kft_plugin_guard_leave();
		if (rc != 0) {
			if (err && !strstr(err->message, p->name)) {
				char msg[KFT_ERROR_MESSAGE_MAX];
				snprintf(msg, sizeof(msg), "%s", err->message);
				kft_error_set(err, rc, "%s plugin %s: %s", point_names[which],
				              p->name, msg);
			}
			return rc;
		}
	}
	return 0;
}

/* A backend with every function set: missing ones take the default's. */
static kft_backend complete_backend(const kft_backend *b)
{
	const kft_backend *d = kft_backend_default();
	kft_backend out = b ? *b : *d;
	if (!out.pod_address)
		out.pod_address = d->pod_address;
	if (!out.service_port)
		out.service_port = d->service_port;
	if (!out.get_object)
		out.get_object = d->get_object;
	if (!out.trainjob_uid)
		out.trainjob_uid = d->trainjob_uid;
	if (!out.status_endpoint)
		out.status_endpoint = d->status_endpoint;
	if (!out.has_gpus)
		out.has_gpus = d->has_gpus;
	return out;
}

/* The TrainJob as this place can run it: itself, or, where the backend has
 * no GPUs, a copy (*cpu, the caller's to release) whose resourcesPerNode
 * asks for none, so that every plugin sees a CPU node (backend.h). */
static int for_this_place(const kft_backend *b, const json_t **trainjob, json_t **cpu,
                          kft_error *err)
{
	*cpu = NULL;
	if (b->has_gpus(b->self))
		return 0;
	if (!(*cpu = json_deep_copy(*trainjob)))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	kft_resources_drop_gpus(json_object_get(
	        json_object_get(json_object_get(*cpu, "spec"), "trainer"), "resourcesPerNode"));
	*trainjob = *cpu;
	return 0;
}

static int info_with_backend(const kft_framework *fw, const kft_backend *backend,
                             const json_t *trainjob, const json_t *runtime, kft_trainjob *job,
                             kft_runtime_info **out, kft_error *err)
{
	int rc = kft_trainjob_view(trainjob, job, err);
	if (rc == 0)
		rc = kft_runtime_info_build(runtime, job, out, err);
	if (rc == 0 && !backend->has_gpus(backend->self))
		kft_runtime_info_drop_gpus(*out);
	kft_plugin_ctx ctx = {.backend = backend, .framework = fw};
	for (int which = 0; rc == 0 && which < 4; which++)
		rc = run_point(fw, &ctx, which, *out, job, err);
	if (rc != 0) {
		kft_runtime_info_free(*out);
		*out = NULL;
	}
	return rc;
}

int kft_framework_runtime_info(const kft_framework *fw, const kft_backend *backend,
                               const json_t *trainjob, const json_t *runtime,
                               kft_runtime_info **out, kft_error *err)
{
	kft_backend b = complete_backend(backend);
	kft_trainjob job;
	*out = NULL;
	json_t *cpu = NULL;
	int rc = for_this_place(&b, &trainjob, &cpu, err);
	if (rc == 0)
		rc = info_with_backend(fw, &b, trainjob, runtime, &job, out, err);
	json_decref(cpu);
	return rc;
}

int kft_framework_validate(const kft_framework *fw, const kft_backend *backend,
                           const json_t *runtime, const json_t *old_job, const json_t *new_job,
                           kft_field_errors *errs, kft_error *err)
{
	kft_backend b = complete_backend(backend);
	kft_plugin_ctx ctx = {.backend = &b, .framework = fw};
	kft_trainjob job;
	kft_runtime_info *info = NULL;
	int rc = kft_trainjob_view(new_job, &job, err);
	if (rc == 0)
		rc = kft_runtime_info_build(runtime, &job, &info, err);
	for (size_t i = 0; rc == 0 && i < kft_framework_plugin_count(fw); i++) {
		const kft_plugin *p = kft_framework_plugin_at(fw, i);
		if (!p->custom_validation)
			continue;
		kft_plugin_guard_enter(p->name, "CustomValidation");
		p->custom_validation(&ctx, info, old_job, new_job, errs);
		kft_plugin_guard_leave();
	}
	kft_runtime_info_free(info);
	return rc;
}

int kft_framework_build(const kft_framework *fw, const kft_backend *backend, const json_t *trainjob,
                        const json_t *runtime, json_t **objects, kft_error *err)
{
	kft_backend b = complete_backend(backend);
	kft_plugin_ctx ctx = {.backend = &b, .framework = fw};
	kft_trainjob job;
	kft_runtime_info *info = NULL;
	json_t *cpu = NULL;
	*objects = NULL;
	int rc = for_this_place(&b, &trainjob, &cpu, err);
	if (rc == 0)
		rc = info_with_backend(fw, &b, trainjob, runtime, &job, &info, err);
	if (rc == 0)
		rc = run_point(fw, &ctx, 4, info, &job, err);
	json_t *out = json_array();
	for (size_t i = 0; rc == 0 && i < kft_framework_plugin_count(fw); i++) {
		const kft_plugin *p = kft_framework_plugin_at(fw, i);
		if (!p->component_builder)
			continue;
		kft_plugin_guard_enter(p->name, "ComponentBuilder");
		rc = p->component_builder(&ctx, info, &job, out, err);
		kft_plugin_guard_leave();
	}
	kft_runtime_info_free(info);
	json_decref(cpu);
	if (rc != 0) {
		json_decref(out);
		return rc;
	}
	*objects = out;
	return 0;
}

int kft_framework_status(const kft_framework *fw, const kft_backend *backend,
                         const json_t *trainjob, const char *now, json_t **status, kft_error *err)
{
	kft_backend b = complete_backend(backend);
	kft_plugin_ctx ctx = {.backend = &b, .framework = fw};
	kft_trainjob job;
	*status = NULL;
	int rc = kft_trainjob_view(trainjob, &job, err);
	if (rc != 0)
		return rc;
	const json_t *cur = json_object_get(trainjob, "status");
	json_t *out = json_is_object(cur) ? json_deep_copy(cur) : json_object();
	json_t *terminal = NULL;
	for (size_t i = 0; rc == 0 && i < kft_framework_plugin_count(fw); i++) {
		const kft_plugin *p = kft_framework_plugin_at(fw, i);
		/* A child not there yet (KFT_ENOTFOUND) has nothing to report. */
		if (p->trainjob_status) {
			kft_plugin_guard_enter(p->name, "TrainJobStatus");
			rc = p->trainjob_status(&ctx, &job, out, err);
			kft_plugin_guard_leave();
			if (rc == KFT_ENOTFOUND) {
				rc = 0;
				kft_error_clear(err);
			}
		}
		if (rc == 0 && !terminal && p->terminal_condition) {
			kft_plugin_guard_enter(p->name, "TerminalCondition");
			rc = p->terminal_condition(&ctx, &job, &terminal, err);
			kft_plugin_guard_leave();
		}
	}
	/* The child's condition is copied whole, keeping its transition time,
	 * as upstream's meta.SetStatusCondition of the JobSet's condition does. */
	if (rc == 0 && terminal)
		rc = kft_condition_set_object(out, terminal, now, NULL, err);
	json_decref(terminal);
	if (rc != 0) {
		json_decref(out);
		return rc;
	}
	*status = out;
	return 0;
}
