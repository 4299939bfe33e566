/*
 * events.c - what happened to a local job, as a cluster's Events would say it.
 *
 * On a cluster, `kubectl events` and the Kubeflow SDK's get_job_events read
 * core/v1 Events that the kubelet (Pod: Created, Started, BackOff, Failed),
 * the Job controller (Job: Completed, BackoffLimitExceeded) and the JobSet
 * controller (JobSet: its condition reasons) record. The local engine plays
 * those parts, so it records the same Events with the same reasons and
 * wording, and the store keeps them with the job (store.h). This file builds
 * one Event and reads a job's Events back as a v1 EventList.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "local/local.h"
#include "local/local_internal.h"
#include "util/rfc3339.h"

/* The API group/version and recording component of each kind the engine
 * records Events about, as on a cluster. */
static void kind_facts(const char *kind, const char **api_version, const char **component)
{
	*api_version = "v1";
	*component = "kubelet";
	if (strcmp(kind, "Job") == 0) {
		*api_version = "batch/v1";
		*component = "job-controller";
	} else if (strcmp(kind, "JobSet") == 0) {
		*api_version = "jobset.x-k8s.io/v1alpha2";
		*component = "jobset-controller";
	} else if (strcmp(kind, "TrainJob") == 0 || strcmp(kind, "OptimizationJob") == 0) {
		*api_version = "trainer.kubeflow.org/v1alpha1";
		*component = "trainer-controller-manager";
	}
}

json_t *kft_local_event_new(const char *ns, const char *type, const char *reason, const char *kind,
                            const char *object, const char *message)
{
	struct timespec ts;
	char seconds[KFT_RFC3339_MAX], micro[KFT_RFC3339_MAX], name[320];
	const char *api_version, *component;
	clock_gettime(CLOCK_REALTIME, &ts);
	kft_rfc3339_from_timespec(&ts, seconds, micro);
	/* client-go names an Event "<object>.<unix nanoseconds in hex>" */
	snprintf(name, sizeof(name), "%.250s.%llx", object,
	         (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	kind_facts(kind, &api_version, &component);
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s,"
	                 " s:s, s:s, s:s, s:i, s:{s:s}, s:s}",
	                 "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
	                 ns, "creationTimestamp", seconds, "involvedObject", "apiVersion",
	                 api_version, "kind", kind, "name", object, "namespace", ns, "type", type,
	                 "reason", reason, "message", message, "firstTimestamp", seconds,
	                 "lastTimestamp", seconds, "eventTime", micro, "count", 1, "source",
	                 "component", component, "reportingComponent", component);
}

int kft_local_events(kft_local *l, const char *ns, const char *name, json_t **out, kft_error *err)
{
	json_t *items = NULL;
	*out = NULL;
	int rc = kft_store_events(kft_local_store(l), ns, name, &items, err);
	if (rc)
		return rc;
	*out = json_pack("{s:s, s:s, s:{}, s:o}", "apiVersion", "v1", "kind", "EventList",
	                 "metadata", "items", items);
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}
