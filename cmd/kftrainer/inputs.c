/*
 * inputs.c - files and objects from command-line inputs. See inputs.h.
 */
#include "inputs.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "kftrainer/decode.h"
#include "kftrainer/object.h"

int kft_paths_add(kft_paths *p, const char *s)
{
	if (p->count == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;
		char **n = realloc(p->items, ncap * sizeof(*n));
		if (!n)
			return -1;
		p->items = n;
		p->cap = ncap;
	}
	p->items[p->count] = strdup(s);
	if (!p->items[p->count])
		return -1;
	p->count++;
	return 0;
}

void kft_paths_free(kft_paths *p)
{
	for (size_t i = 0; i < p->count; i++)
		free(p->items[i]);
	free(p->items);
	p->items = NULL;
	p->count = p->cap = 0;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_manifest_name(const char *name)
{
	if (name[0] == '.' || strcmp(name, "kustomization.yaml") == 0 ||
	    strcmp(name, "kustomization.yml") == 0 || strcmp(name, "Kustomization") == 0)
		return 0;
	return has_suffix(name, ".yaml") || has_suffix(name, ".yml") || has_suffix(name, ".json");
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directories being walked, innermost first: a directory met again
 * among its own ancestors (a symbolic link to ".." or to itself) is a loop. */
typedef struct walk_frame {
	dev_t dev;
	ino_t ino;
	const char *path;
	const struct walk_frame *up;
} walk_frame;

static const walk_frame *walk_ancestor(const walk_frame *f, const struct stat *st)
{
	for (; f; f = f->up)
		if (f->dev == st->st_dev && f->ino == st->st_ino)
			return f;
	return NULL;
}

/* Appends the manifests under dir, in name order, depth first. Symbolic
 * links are followed, except into a directory already being walked (a
 * loop: reported and passed over). Only regular files are read: a FIFO,
 * socket or device named *.yaml would block or never end, so it is
 * reported and passed over too. Returns the number of directories that
 * could not be read (each already reported). */
static int walk(const char *dir, kft_paths *out, int depth, const walk_frame *up)
{
	if (depth > 32) {
		kft_cli_error("%s: directories nested too deeply", dir);
		return 1;
	}
	struct stat dst;
	DIR *d = opendir(dir);
	if (!d || fstat(dirfd(d), &dst) != 0) {
		kft_cli_error("%s: cannot open directory: %m", dir);
		if (d)
			closedir(d);
		return 1;
	}
	walk_frame here = {.dev = dst.st_dev, .ino = dst.st_ino, .path = dir, .up = up};
	kft_paths names = {0};
	struct dirent *e;
	int failures = 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && kft_paths_add(&names, e->d_name) != 0)
			failures++;
	closedir(d);
	if (names.count)
		qsort(names.items, names.count, sizeof(char *), cmp_names);
	for (size_t i = 0; i < names.count; i++) {
		char *full = NULL;
		if (asprintf(&full, "%s%s%s", dir, has_suffix(dir, "/") ? "" : "/",
		             names.items[i]) < 0) {
			failures++;
			continue;
		}
		struct stat st;
		const walk_frame *seen;
		int found = stat(full, &st) == 0;
		if (found && S_ISDIR(st.st_mode) && (seen = walk_ancestor(&here, &st)))
			kft_cli_error("%s: a symbolic link loop (back to %s), not walked again",
			              full, seen->path);
		else if (found && S_ISDIR(st.st_mode))
			failures += walk(full, out, depth + 1, &here);
		else if (!is_manifest_name(names.items[i]))
			;
		else if (found && !S_ISREG(st.st_mode))
			kft_cli_error(
			        "%s: not a regular file (a FIFO, socket or device), passed over",
			        full);
		else if (kft_paths_add(out, full) != 0)
			failures++;
		free(full);
	}
	kft_paths_free(&names);
	return failures;
}

int kft_inputs_expand(const kft_paths *inputs, kft_paths *out)
{
	int failures = 0;
	for (size_t i = 0; i < inputs->count; i++) {
		struct stat st;
		const char *in = inputs->items[i];
		if (strcmp(in, "-") != 0 && stat(in, &st) == 0 && S_ISDIR(st.st_mode))
			failures += walk(in, out, 0, NULL);
		else if (kft_paths_add(out, in) != 0)
			failures++;
	}
	return failures;
}

const char *kft_inputs_display_name(const char *path)
{
	return strcmp(path, "-") == 0 ? "<stdin>" : path;
}

static void append(json_t *out, const char *name, json_t *obj)
{
	json_array_append_new(out, json_pack("{s:s, s:O}", "file", name, "object", obj));
}

int kft_inputs_read(const char *path, json_t *out)
{
	kft_doc_list docs = {0};
	kft_error err;
	if (kft_decode_file(path, &docs, &err) != 0) {
		kft_cli_error("%s", err.message);
		return -1;
	}
	const char *name = kft_inputs_display_name(path);
	for (size_t i = 0; i < docs.count; i++) {
		json_t *items = kft_object_list_items(docs.items[i].root);
		if (items) {
			size_t j;
			json_t *item;
			json_array_foreach(items, j, item) append(out, name, item);
		} else {
			append(out, name, docs.items[i].root);
		}
	}
	kft_doc_list_free(&docs);
	return 0;
}
