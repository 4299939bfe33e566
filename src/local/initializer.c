/*
 * initializer.c - the dataset and model initializers, done natively.
 *
 * Upstream's runtimes run the images ghcr.io/kubeflow/trainer/
 * dataset-initializer and model-initializer, Python programs that read their
 * settings from the environment and download into the shared volume. Those
 * programs do not exist on this machine, so an initializer container that
 * names no command of its own is run by the supervisor itself: it forks, the
 * child takes the pod's environment, log and working directory exactly as a
 * spawned process would, and calls this function, which follows the same
 * contract (upstream v2.3.0 pkg/initializers):
 *
 *   STORAGE_URI        what to fetch (required): hf://, s3://, and here also
 *                      file:// and http(s)://
 *   ACCESS_TOKEN       Hugging Face token (also HF_TOKEN)
 *   ENDPOINT, ACCESS_KEY_ID, SECRET_ACCESS_KEY, REGION
 *                      S3 settings, passed on as AWS_ENDPOINT_URL,
 *                      AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION
 *                      unless those are set already
 *
 * and writes into <mount of /workspace>/dataset or .../model, the paths the
 * upstream programs use. IGNORE_PATTERNS is not supported (every file is
 * fetched) and says so in the log.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <curl/curl.h>

#include "local/fetch.h"
#include "local/local_internal.h"

#define STORAGE_URI_ENV "STORAGE_URI"

static void pass_on(const char *from, const char *to)
{
	const char *v = getenv(from);
	if (v && *v && !getenv(to))
		setenv(to, v, 0);
}

static int make_dest(const char *dir)
{
	if (mkdir(dir, 0755) == 0 || errno == EEXIST)
		return 0;
	fprintf(stderr, "cannot create %s: %s\n", dir, strerror(errno));
	return -1;
}

static int progress(void *user, const char *name, uint64_t done, uint64_t total)
{
	(void)user;
	/* one line per finished file keeps the log readable */
	if (total && done == total)
		printf("fetched %s (%llu bytes)\n", name, (unsigned long long)total);
	return 0;
}

int kft_local_initializer_main(const char *kind, const char *workspace)
{
	const char *uri = getenv(STORAGE_URI_ENV);
	char dest[4096];
	kft_error err = {0};
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("Starting %s initialization\n", kind);
	if (!uri || !*uri) {
		fprintf(stderr, "STORAGE_URI env variable must be set.\n");
		return 1;
	}
	if (!workspace || !*workspace) {
		fprintf(stderr, "no volume is mounted at /workspace: nowhere to put the %s\n",
		        kind);
		return 1;
	}
	if (getenv("IGNORE_PATTERNS"))
		printf("IGNORE_PATTERNS is not supported locally: every file is fetched\n");
	snprintf(dest, sizeof(dest), "%s/%s", workspace, kind);
	if (make_dest(dest) != 0)
		return 1;
	pass_on("ACCESS_TOKEN", "HF_TOKEN");
	pass_on("ENDPOINT", "AWS_ENDPOINT_URL");
	pass_on("ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID");
	pass_on("SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY");
	pass_on("REGION", "AWS_REGION");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		fprintf(stderr, "cannot initialise libcurl\n");
		return 1;
	}
	kft_fetch_options opt = {.progress = progress};
	int rc = kft_fetch_uri(uri, dest, &opt, &err);
	curl_global_cleanup();
	if (rc) {
		fprintf(stderr, "%s initialization failed: %s\n", kind, err.message);
		return 1;
	}
	printf("%s initialization done: %s -> %s\n", kind, uri, dest);
	return 0;
}
