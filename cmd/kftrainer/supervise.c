/*
 * supervise.c - the hidden verb `kftrainer supervise --state-dir DIR
 * {--go-fd FD | [--optimization] NAMESPACE NAME}`: the local backend starts
 * it, detached, for every running job (with --go-fd the job is named on that
 * pipe, local.c). Not for people; it is not listed in the help.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "local/local.h"
#include "local/optimizer.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: kftrainer supervise --state-dir DIR "
	             "{--go-fd FD | [--optimization] NAMESPACE NAME}\n"
	             "(started by the local backend; not meant to be run by hand)\n");
}

static int run(int argc, char **argv)
{
	const char *dir = NULL, *pos[2] = {NULL, NULL};
	int npos = 0, go_fd = -1;
	bool optimization = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], KFT_LOCAL_OPTIMIZATION_FLAG) == 0)
			optimization = true;
		else if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--go-fd") == 0 && i + 1 < argc)
			go_fd = atoi(argv[++i]);
		else if (strncmp(argv[i], "--state-dir=", 12) == 0)
			dir = argv[i] + 12;
		else if (argv[i][0] != '-' && npos < 2)
			pos[npos++] = argv[i];
		else {
			usage(stderr);
			return KFT_EXIT_USAGE;
		}
	}
	if (!dir || npos != (go_fd >= 0 ? 0 : 2) || (optimization && go_fd >= 0)) {
		usage(stderr);
		return KFT_EXIT_USAGE;
	}
	kft_error err = {0};
	int rc = optimization ? kft_local_optimization_supervise(dir, pos[0], pos[1], &err)
	                      : kft_local_supervise(dir, pos[0], pos[1], go_fd, &err);
	if (rc != 0) {
		if (pos[1])
			kft_cli_error("supervise %s/%s: %s", pos[0], pos[1], err.message);
		else
			kft_cli_error("supervise: %s", err.message);
		return KFT_EXIT_INVALID;
	}
	return KFT_EXIT_OK;
}

const kft_verb kft_verb_supervise = {
        .name = "supervise",
        .summary = NULL,
        .run = run,
        .usage = usage,
};
