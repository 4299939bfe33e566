/*
 * cli.h - the pieces the kftrainer verbs share: the verb table entry and
 * small argument helpers. Each verb lives in its own cmd/kftrainer/<verb>.c.
 */
#ifndef KFT_CMD_CLI_H
#define KFT_CMD_CLI_H

#include <stdio.h>

/* Exit codes every verb uses. */
enum { KFT_EXIT_OK = 0, KFT_EXIT_INVALID = 1, KFT_EXIT_USAGE = 2, KFT_EXIT_INPUT = 2 };

typedef struct kft_verb {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv); /* argv[0] is the verb */
	void (*usage)(FILE *out);
} kft_verb;

extern const kft_verb kft_verb_validate;
extern const kft_verb kft_verb_render;

/* Prints "kftrainer: " and the message to stderr. */
void kft_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
