/*
 * main.c - the kftrainer command: global options, then one verb.
 *
 *     kftrainer [--version] [--help] VERB [ARGS...]
 *
 * Verbs are kubectl-like (validate, later render, train, get, logs ...);
 * each is a kft_verb in its own file, listed in `verbs` below.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef KFT_VERSION_STRING
#define KFT_VERSION_STRING "0.1.0"
#endif

static const kft_verb *const verbs[] = {
        &kft_verb_validate,
        &kft_verb_render,
};
#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

void kft_cli_error(const char *fmt, ...)
{
	va_list ap;
	fputs("kftrainer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *out)
{
	fputs("kftrainer - Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1) in C\n\n"
	      "Usage:\n  kftrainer [--version] [--help] VERB [ARGS...]\n\nVerbs:\n",
	      out);
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(out, "  %-10s %s\n", verbs[i]->name, verbs[i]->summary);
	fputs("\nRun 'kftrainer VERB --help' for a verb's options; 'man kftrainer' for more.\n",
	      out);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return KFT_EXIT_USAGE;
	}
	const char *verb = argv[1];
	if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0 || strcmp(verb, "help") == 0) {
		if (argc > 2 && strcmp(verb, "help") == 0)
			for (size_t i = 0; i < NVERBS; i++)
				if (strcmp(verbs[i]->name, argv[2]) == 0) {
					verbs[i]->usage(stdout);
					return KFT_EXIT_OK;
				}
		usage(stdout);
		return KFT_EXIT_OK;
	}
	if (strcmp(verb, "--version") == 0 || strcmp(verb, "version") == 0) {
		printf("kftrainer %s (trainer.kubeflow.org/v1alpha1, upstream v2.3.0 API)\n",
		       KFT_VERSION_STRING);
		return KFT_EXIT_OK;
	}
	for (size_t i = 0; i < NVERBS; i++)
		if (strcmp(verbs[i]->name, verb) == 0)
			return verbs[i]->run(argc - 1, argv + 1);
	kft_cli_error("unknown verb \"%s\"; run 'kftrainer --help' for the list", verb);
	return KFT_EXIT_USAGE;
}
