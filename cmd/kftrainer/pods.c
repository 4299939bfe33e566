/*
 * pods.c - `kftrainer pods NAME`: a TrainJob's pods, as `kubectl get pods -l
 * jobset.sigs.k8s.io/jobset-name=NAME` shows a cluster's: named and labelled
 * as the Job controller names them, with the status the kubelet would report
 * (src/local/pods.c). -o json is the v1 PodList the Kubeflow SDK's backend
 * reads steps from.
 */
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "jobs.h"

static void pods_usage(FILE *out)
{
	fputs("Usage: kftrainer pods NAME [-n NAMESPACE] [-o wide|json|yaml|name]\n\n"
	      "List the pods of a TrainJob, as kubectl get pods does:\n\n"
	      "  NAME  READY  STATUS  RESTARTS  AGE\n\n"
	      "STATUS is the container's state reason (Running, Completed, Error,\n"
	      "CrashLoopBackOff, ...) or the pod's phase. -o wide adds the exit code; -o json\n"
	      "or yaml prints a v1 PodList.\n\n"
	      "Options:\n"
	      "  -n, --namespace NS   the namespace (default: default)\n"
	      "  -o, --output FORMAT  wide, json, yaml or name\n"
	      "  -h, --help           this help\n\n"
	      "Exit status: 0 listed; 2 bad usage; 3 no such job.\n",
	      out);
}

static const char *pod_str(const json_t *pod, const char *section, const char *key)
{
	return json_string_value(json_object_get(json_object_get(pod, section), key));
}

static void print_table(const json_t *items, enum kft_cli_out_format format)
{
	bool wide = format == KFT_OUT_WIDE;
	json_t *rows = json_array();
	const char *head[] = {"NAME", "READY", "STATUS", "RESTARTS", "AGE", "EXIT-CODE"};
	kft_cli_table_row(rows, wide ? 6 : 5, head);
	const json_t *pod;
	size_t i;
	json_array_foreach(items, i, pod)
	{
		const json_t *cs = json_array_get(
		        json_object_get(json_object_get(pod, "status"), "containerStatuses"), 0);
		const json_t *state = json_object_get(cs, "state");
		const json_t *term = json_object_get(state, "terminated");
		const char *status = pod_str(state, "waiting", "reason");
		if (!status)
			status = json_string_value(json_object_get(term, "reason"));
		if (!status)
			status = pod_str(pod, "status", "phase");
		char restarts[24], age[32], code[24] = "-";
		snprintf(restarts, sizeof(restarts), "%lld",
		         json_integer_value(json_object_get(cs, "restartCount")));
		if (term)
			snprintf(code, sizeof(code), "%lld",
			         json_integer_value(json_object_get(term, "exitCode")));
		kft_cli_format_age(kft_cli_seconds_since(pod_str(pod, "status", "startTime")), age,
		                   sizeof(age));
		const char *cells[] = {pod_str(pod, "metadata", "name"),
		                       json_is_true(json_object_get(cs, "ready")) ? "1/1" : "0/1",
		                       status,
		                       restarts,
		                       pod_str(pod, "status", "startTime") ? age : "<unknown>",
		                       code};
		kft_cli_table_row(rows, wide ? 6 : 5, cells);
	}
	kft_cli_print_table(stdout, rows);
	json_decref(rows);
}

static int run_pods(int argc, char **argv)
{
	const char *ns = "default";
	enum kft_cli_out_format format = KFT_OUT_TABLE;
	int rc = kft_cli_ns_output_options(argc, argv, pods_usage, &ns, &format);
	if (rc != 0)
		return rc < 0 ? KFT_EXIT_OK : rc;
	if (argc - optind != 1) {
		pods_usage(stderr);
		return KFT_EXIT_USAGE;
	}
	kft_local *l = NULL;
	rc = kft_cli_open_local(&l);
	if (rc)
		return rc;
	json_t *list = NULL;
	kft_error err;
	const json_t *items;
	if (kft_local_pods(l, ns, argv[optind], &list, &err) != 0) {
		rc = kft_cli_job_error(argv[optind], &err);
	} else if (format == KFT_OUT_JSON || format == KFT_OUT_YAML) {
		rc = kft_cli_print_object(list, format == KFT_OUT_YAML) ? KFT_EXIT_FAILED : 0;
	} else if (json_array_size(items = json_object_get(list, "items")) == 0) {
		fprintf(stderr, "No resources found in %s namespace.\n", ns);
	} else if (format == KFT_OUT_NAME) {
		const json_t *pod;
		size_t i;
		json_array_foreach(items, i, pod)
		        printf("pod/%s\n", pod_str(pod, "metadata", "name"));
	} else {
		print_table(items, format);
	}
	json_decref(list);
	kft_local_close(l);
	return rc;
}

const kft_verb kft_verb_pods = {
        .name = "pods",
        .summary = "list a TrainJob's pods: status, restarts, exit codes",
        .run = run_pods,
        .usage = pods_usage,
};
