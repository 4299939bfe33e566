/*
 * export.c - `kftrainer export NAME [--to URI]`: a completed local job's
 * model to where its TrainJob says (tracking.kftrainer.dev/export-to) or
 * --to says. The supervisor runs this verb itself once a job with
 * export-to is Complete; by hand it retries a failed export or sends the
 * model somewhere else. The work is kft_local_export's (src/local/export.c).
 */
#include <getopt.h>

#include "cli.h"
#include "jobs.h"
#include "local/tracking.h"

static void export_usage(FILE *out)
{
	fputs("Usage: kftrainer export NAME [-n NAMESPACE] [--to URI]\n\n"
	      "Export a completed TrainJob's model: the directory its trainer's first node\n"
	      "sees at the tracking.kftrainer.dev/export-from annotation (default\n"
	      "/workspace/output), to the tracking.kftrainer.dev/export-to annotation's\n"
	      "destination or URI:\n"
	      "  s3://BUCKET[/PREFIX]  (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,\n"
	      "                        AWS_ENDPOINT_URL as the s3:// initializer reads them)\n"
	      "  file:///DIR\n"
	      "  models:/NAME          a new version of an MLflow registered model, from the\n"
	      "                        job's run (MLFLOW_TRACKING_URI)\n"
	      "The TrainJob's ModelExported condition records the outcome.\n\n"
	      "Options:\n"
	      "  -n, --namespace NS  the namespace (default: default)\n"
	      "      --to URI        export here instead\n"
	      "  -h, --help          this help\n\n"
	      "Exit status: 0 exported; 1 failed (no such job, not completed, nothing to\n"
	      "export, the destination refused); 2 bad usage.\n",
	      out);
}

static int run_export(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"namespace", required_argument, NULL, 'n'},
	        {"to", required_argument, NULL, 't'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	const char *ns = "default", *to = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': ns = optarg; break;
		case 't': to = optarg; break;
		case 'h': export_usage(stdout); return KFT_EXIT_OK;
		default: export_usage(stderr); return KFT_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		kft_cli_error("export: give the TrainJob's NAME");
		return KFT_EXIT_USAGE;
	}
	kft_local *l = NULL;
	int rc = kft_cli_open_local(&l);
	if (rc)
		return rc;
	kft_error err = {0};
	json_t *job = NULL;
	if (kft_local_get(l, ns, argv[optind], &job, &err) != 0) {
		rc = kft_cli_job_error(argv[optind], &err);
	} else if (kft_local_export(l, ns, argv[optind], to, stdout, &err) != 0) {
		kft_cli_error("%s", err.message);
		rc = KFT_EXIT_FAILED;
	}
	json_decref(job);
	kft_local_close(l);
	return rc;
}

const kft_verb kft_verb_export = {
        .name = "export",
        .summary = "export a completed job's model (S3, a directory, MLflow's registry)",
        .run = run_export,
        .usage = export_usage,
};
