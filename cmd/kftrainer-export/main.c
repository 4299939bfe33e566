/*
 * kftrainer-export - the model exporter as a program of its own, what the
 * Job the controller manager adds after a completed TrainJob runs (static,
 * in the controller's image; docs/tracking.md). The work is
 * kft_export_run's (src/track/export.c), the code `kftrainer export` runs
 * for a local job:
 *
 *   kftrainer-export --from DIR --to URI
 *
 * The TrainJob (its name, uid, annotations: the run a models:/ export
 * attaches to) comes in $KFTRAINER_EXPORT_TRAINJOB; MLflow's settings and
 * AWS_* credentials from the environment. Where the model went, or why it
 * did not, is the last line and the container's termination message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "track/export.h"
#include "track/track.h"

#define TERMINATION_LOG "/dev/termination-log"

static void say_last(const char *text)
{
	FILE *f = fopen(TERMINATION_LOG, "we");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void progress(void *ctx, const char *line)
{
	(void)ctx;
	printf("%s\n", line);
	fflush(stdout);
}

static int usage(FILE *out, int rc)
{
	fputs("Usage: kftrainer-export --from DIR --to URI\n\n"
	      "Exports the model in DIR to URI: s3://BUCKET[/PREFIX], file:///DIR or\n"
	      "models:/NAME (MLflow's registry). The TrainJob is read from\n"
	      "$" KFT_TRACK_EXPORT_TRAINJOB_ENV "; MLFLOW_* and AWS_* from the environment.\n"
	      "A TrainJob annotated " KFT_TRACK_ANN_REGISTER_TO " has the model registered\n"
	      "in the Kubeflow Model Registry at $KFTRAINER_MODEL_REGISTRY_URL.\n",
	      out);
	return rc;
}

int main(int argc, char **argv)
{
	const char *from = NULL, *to = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--from") == 0 && i + 1 < argc)
			from = argv[++i];
		else if (strcmp(argv[i], "--to") == 0 && i + 1 < argc)
			to = argv[++i];
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return usage(stdout, 0);
		else
			return usage(stderr, 2);
	}
	if (!from || !to)
		return usage(stderr, 2);
	const char *ident = getenv(KFT_TRACK_EXPORT_TRAINJOB_ENV);
	json_t *tj = ident ? json_loads(ident, 0, NULL) : NULL;
	kft_export_opts o = {.from = from, .to = to, .trainjob = tj, .progress = progress};
	kft_mlflow_opts_from_env(NULL, &o.mlflow);
	o.default_experiment = kft_mlflow_env(NULL, "MLFLOW_EXPERIMENT_NAME");
	char *where = NULL, line[1200];
	kft_error err = {0};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int rc = kft_export_run(&o, &where, &err);
	if (rc == 0)
		snprintf(line, sizeof(line), "exported %s to %s", from, where);
	else
		snprintf(line, sizeof(line), "%s", err.message);
	fprintf(rc ? stderr : stdout, "%s\n", line);
	say_last(line);
	free(where);
	json_decref(tj);
	return rc ? 1 : 0;
}
