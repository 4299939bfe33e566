/*
 * path.c - `kftrainer path NAME PATH`: where a path of a job's pod is on this
 * machine. A local job's volumes are directories of its own (the pod sees
 * them at their mount paths, docs/local.md), so a fine-tune's
 * /workspace/output is found with `ls "$(kftrainer path NAME
 * /workspace/output)"`. The pod is the trainer's first node unless --step
 * names another replicated job (dataset-initializer, ...).
 */
#include <getopt.h>
#include <stdlib.h>

#include "cli.h"
#include "jobs.h"

static void path_usage(FILE *out)
{
	fputs("Usage: kftrainer path NAME PATH [-n NAMESPACE] [--step STEP]\n\n"
	      "Print where PATH, as the TrainJob's pod sees it, is on this machine: the\n"
	      "directory of the volume mounted there (say /workspace/output, where a\n"
	      "torchtune fine-tune leaves its checkpoint or adapter).\n\n"
	      "Options:\n"
	      "  -n, --namespace NS  the namespace (default: default)\n"
	      "      --step STEP     the pod of replicated job STEP (default: the trainer's\n"
	      "                      first node)\n"
	      "  -h, --help          this help\n\n"
	      "Exit status: 0 printed; 1 no such step, or no volume holds PATH; 2 bad\n"
	      "usage; 3 no such job.\n",
	      out);
}

static int run_path(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"namespace", required_argument, NULL, 'n'},
	        {"step", required_argument, NULL, 's'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	const char *ns = "default", *step = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': ns = optarg; break;
		case 's': step = optarg; break;
		case 'h': path_usage(stdout); return KFT_EXIT_OK;
		default: path_usage(stderr); return KFT_EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		kft_cli_error("path: give the TrainJob's NAME and a PATH its pod sees");
		return KFT_EXIT_USAGE;
	}
	const char *name = argv[optind], *path = argv[optind + 1];
	kft_local *l = NULL;
	int rc = kft_cli_open_local(&l);
	if (rc)
		return rc;
	json_t *job = NULL;
	char *out = NULL;
	kft_error err;
	if (kft_local_get(l, ns, name, &job, &err) != 0)
		rc = kft_cli_job_error(name, &err);
	else if (kft_local_host_path(l, ns, name, step, path, &out, &err) != 0) {
		kft_cli_error("%s", err.message);
		rc = err.code == KFT_EINVAL ? KFT_EXIT_USAGE : KFT_EXIT_FAILED;
	} else
		printf("%s\n", out);
	free(out);
	json_decref(job);
	kft_local_close(l);
	return rc;
}

const kft_verb kft_verb_path = {
        .name = "path",
        .summary = "print where a path of a job's pod is on this machine",
        .run = run_path,
        .usage = path_usage,
};
