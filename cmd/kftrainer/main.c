/*
 * main.c - the kftrainer command: global options, then one verb.
 *
 *     kftrainer [--state-dir DIR] [--version] [--help] VERB [ARGS...]
 *
 * Verbs are kubectl-like; each is a kft_verb in its own file, listed in
 * `verbs` below. Hidden verbs (the job supervisor the local backend starts
 * for itself) dispatch the same way but are not listed in the help.
 * Global options come before the verb so that a verb's own options never
 * collide with them, as with git.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "framework/guard.h"

#ifndef KFT_VERSION_STRING
#define KFT_VERSION_STRING "0.1.0"
#endif

static const kft_verb *const verbs[] = {
        &kft_verb_train,  &kft_verb_get,      &kft_verb_logs,     &kft_verb_wait,
        &kft_verb_pods,   &kft_verb_events,   &kft_verb_suspend,  &kft_verb_resume,
        &kft_verb_delete, &kft_verb_optimize, &kft_verb_runtimes, &kft_verb_validate,
        &kft_verb_render, &kft_verb_path,     &kft_verb_export,   &kft_verb_ui,
};
#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

static const kft_verb *const hidden_verbs[] = {
        &kft_verb_supervise,
};
#define NHIDDEN (sizeof(hidden_verbs) / sizeof(hidden_verbs[0]))

static void usage(FILE *out)
{
	fputs("kftrainer - Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1) in C\n\n"
	      "Usage:\n  kftrainer [--state-dir DIR] [--version] [--help] VERB [ARGS...]\n\n"
	      "Verbs:\n",
	      out);
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(out, "  %-10s %s\n", verbs[i]->name, verbs[i]->summary);
	fputs("\nGlobal options:\n"
	      "  --state-dir DIR  where the local backend keeps its jobs (default:\n"
	      "                   $KFTRAINER_STATE_DIR, $XDG_STATE_HOME/kftrainer or\n"
	      "                   ~/.local/state/kftrainer)\n"
	      "\nFeature gates (no flag here): local jobs (train, the SDK's LocalBackend) always\n"
	      "run with TrainJobStatus=true, the progress endpoint being the job's own\n"
	      "supervisor; render and validate build as a controller with default gates (all\n"
	      "false). The controller's gates: kftrainer-controller-manager --help.\n"
	      "\nRun 'kftrainer VERB --help' for a verb's options; 'man kftrainer' for more.\n",
	      out);
}

static const kft_verb *find_verb(const char *name)
{
	for (size_t i = 0; i < NVERBS; i++)
		if (strcmp(verbs[i]->name, name) == 0)
			return verbs[i];
	for (size_t i = 0; i < NHIDDEN; i++)
		if (strcmp(hidden_verbs[i]->name, name) == 0)
			return hidden_verbs[i];
	return NULL;
}

/* Handles `help [VERB]`, --help and --version. Returns an exit code, or -1
 * when arg is none of them. */
static int meta_verb(const char *arg, const char *next)
{
	if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "help") == 0) {
		const kft_verb *v = next && strcmp(arg, "help") == 0 ? find_verb(next) : NULL;
		if (v)
			v->usage(stdout);
		else
			usage(stdout);
		return KFT_EXIT_OK;
	}
	if (strcmp(arg, "--version") == 0 || strcmp(arg, "version") == 0) {
		printf("kftrainer %s (trainer.kubeflow.org/v1alpha1, upstream v2.3.0 API)\n",
		       KFT_VERSION_STRING);
		return KFT_EXIT_OK;
	}
	return -1;
}

static bool is_meta(const char *arg)
{
	return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 ||
	       strcmp(arg, "--version") == 0;
}

/* Consumes global options at argv[*i]. Returns 0 when the verb is next, an
 * exit code otherwise (usage errors reported). */
static int global_options(int argc, char **argv, int *i)
{
	const char *state_dir = NULL;
	while (*i < argc && argv[*i][0] == '-' && !is_meta(argv[*i])) {
		const char *a = argv[*i];
		if (strcmp(a, "--state-dir") == 0) {
			if (*i + 1 >= argc) {
				kft_cli_error("--state-dir needs a directory");
				return KFT_EXIT_USAGE;
			}
			state_dir = argv[++*i];
		} else if (strncmp(a, "--state-dir=", 12) == 0) {
			state_dir = a + 12;
		} else {
			kft_cli_error("unknown global option \"%s\"; run 'kftrainer --help'", a);
			return KFT_EXIT_USAGE;
		}
		++*i;
	}
	return kft_cli_set_state_dir(state_dir) == 0 ? 0 : KFT_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	int i = 1;
	kft_plugin_guard_install("kftrainer"); /* a plugin that crashes us is named */
	int rc = global_options(argc, argv, &i);
	if (rc != 0)
		return rc;
	if (i >= argc) {
		usage(stderr);
		return KFT_EXIT_USAGE;
	}
	rc = meta_verb(argv[i], i + 1 < argc ? argv[i + 1] : NULL);
	if (rc >= 0)
		return rc;
	const kft_verb *v = find_verb(argv[i]);
	if (v)
		return v->run(argc - i, argv + i);
	kft_cli_error("unknown verb \"%s\"; run 'kftrainer --help' for the list", argv[i]);
	return KFT_EXIT_USAGE;
}
