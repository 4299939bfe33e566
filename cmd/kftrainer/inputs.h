/*
 * inputs.h - turning the CLI's -f/-r arguments into objects: files,
 * directories (walked recursively in name order for *.yaml, *.yml and *.json,
 * passing over kustomization files and dot-files; symbolic link loops and
 * non-regular files are reported and passed over) and "-" for stdin.
 */
#ifndef KFT_CMD_INPUTS_H
#define KFT_CMD_INPUTS_H

#include <jansson.h>
#include <stddef.h>

typedef struct kft_paths {
	char **items;
	size_t count, cap;
} kft_paths;

int kft_paths_add(kft_paths *p, const char *s);
void kft_paths_free(kft_paths *p);

/* Expands each input (file, directory or "-") into files, appended to out.
 * Returns how many inputs could not be read (each reported on stderr). */
int kft_inputs_expand(const kft_paths *inputs, kft_paths *out);

/* Decodes a file and appends each object (List items one by one) as a new
 * {"file": name, "object": obj} record to out. Returns 0, or -1 after
 * reporting the decode error on stderr. */
int kft_inputs_read(const char *path, json_t *out);

/* "<stdin>" for "-", else the path. */
const char *kft_inputs_display_name(const char *path);

#endif
