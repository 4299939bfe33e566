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
 * upstream programs use. IGNORE_PATTERNS (comma-separated; the SDK sets
 * its defaults, "*.msgpack,*.h5,*.bin,*.pt,*.pth") leaves out hub files and
 * S3 keys that match, as upstream's initializers do.
 *
 * The log gets one "fetched FILE (N bytes)" line per file and, while a file
 * downloads, a progress line at most once a second (format and parser below,
 * shared with the CLI, which draws them as a bar on a terminal).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <curl/curl.h>

#include "local/fetch.h"
#include "local/local.h"
#include "local/local_internal.h"
#include "util/clock.h"

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

/* What the progress callback remembers between calls: libcurl calls it many
 * times per file, including several times once the last byte is in. */
typedef struct init_progress {
	const char *kind; /* "dataset" or "model" */
	const char *dest; /* the destination directory, cut from file names */
	char file[1024];  /* the file being fetched */
	bool done_said;   /* its "fetched" line is printed */
	int64_t last_ms;  /* when its last progress line was printed */
} init_progress;

/* 1536 -> "1.5 KiB": one decimal, binary units, as download tools print. */
static void human_bytes(uint64_t n, char *buf, size_t size)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)n;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%llu B", (unsigned long long)n);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
}

int kft_local_progress_format(char *buf, size_t size, const char *kind, const char *file,
                              uint64_t done, uint64_t total)
{
	char d[32], t[32];
	human_bytes(done, d, sizeof(d));
	if (!total)
		return snprintf(buf, size, "%s-initializer: " KFT_LOCAL_PROGRESS_WORD " %s: %s",
		                kind, file, d);
	human_bytes(total, t, sizeof(t));
	unsigned pct = done >= total ? 100u : (unsigned)(done * 100.0 / (double)total);
	return snprintf(buf, size, "%s-initializer: " KFT_LOCAL_PROGRESS_WORD " %s: %s / %s (%u%%)",
	                kind, file, d, t, pct);
}

static bool starts(const char *s, size_t n, const char *head)
{
	size_t h = strlen(head);
	return n >= h && memcmp(s, head, h) == 0;
}

bool kft_local_progress_parse(const char *line, size_t len, size_t *what, int *percent)
{
	static const char *const heads[] = {"dataset-initializer: " KFT_LOCAL_PROGRESS_WORD " ",
	                                    "model-initializer: " KFT_LOCAL_PROGRESS_WORD " "};
	size_t at = 0;
	for (size_t i = 0; i < 2 && !at; i++)
		if (starts(line, len, heads[i]))
			at = strlen(heads[i]);
	if (!at || len < at + 3 || !memchr(line + at, ':', len - at))
		return false;
	*what = at;
	*percent = -1;
	if (line[len - 1] == 'B')
		return true;
	if (len < 4 || line[len - 1] != ')' || line[len - 2] != '%')
		return false;
	size_t k = len - 2, digits = 0;
	int pct = 0, scale = 1;
	while (k > at && line[k - 1] >= '0' && line[k - 1] <= '9' && digits < 3) {
		pct += (line[--k] - '0') * scale;
		scale *= 10;
		digits++;
	}
	if (!digits || k == at || line[k - 1] != '(' || pct > 100)
		return false;
	*percent = pct;
	return true;
}

/* A "fetched" line once per file when its last byte is in, and between
 * those a progress line at most every KFT_LOCAL_PROGRESS_MS: the log stays
 * short, and `kftrainer logs -f` on a terminal draws them as a bar. */
static int progress(void *user, const char *name, uint64_t done, uint64_t total)
{
	init_progress *p = user;
	size_t dl = strlen(p->dest);
	if (strncmp(name, p->dest, dl) == 0 && name[dl] == '/')
		name += dl + 1;
	int64_t now = kft_clock_mono_ms();
	if (strcmp(name, p->file) != 0) {
		snprintf(p->file, sizeof(p->file), "%s", name);
		p->done_said = false;
		p->last_ms = now; /* a file fetched within a second shows no progress */
	}
	if (total && done == total) {
		if (!p->done_said)
			printf("fetched %s (%llu bytes)\n", name, (unsigned long long)total);
		p->done_said = true;
		return 0;
	}
	if (now - p->last_ms >= KFT_LOCAL_PROGRESS_MS) {
		char line[1200];
		kft_local_progress_format(line, sizeof(line), p->kind, name, done, total);
		printf("%s\n", line);
		p->last_ms = now;
	}
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
	init_progress prog = {.kind = kind, .dest = dest};
	/* as upstream's initializers ask the hub: a dataset repository; a
	 * model's weights, configuration and tokenizer files only */
	static const char *const model_files[] = {"*.json", "*.safetensors", "*.model", "*.txt",
	                                          NULL};
	int dataset = strcmp(kind, "dataset") == 0;
	kft_fetch_options opt = {.progress = progress,
	                         .progress_user = &prog,
	                         .hf_dataset = dataset,
	                         .hf_allow = dataset ? NULL : model_files,
	                         .ignore_patterns = getenv("IGNORE_PATTERNS")};
	int rc = kft_fetch_uri(uri, dest, &opt, &err);
	curl_global_cleanup();
	if (rc) {
		fprintf(stderr, "%s initialization failed: %s\n", kind, err.message);
		return 1;
	}
	printf("%s initialization done: %s -> %s\n", kind, uri, dest);
	return 0;
}
