/*
 * common.c - helpers every verb shares (see cli.h): error messages, the
 * global state directory option, Go-style durations, kubectl's AGE format,
 * tables aligned like kubectl's, and kubectl's fixed messages.
 *
 * The state directory travels as KFTRAINER_STATE_DIR in the environment
 * rather than as a variable passed around: kft_store_default_dir() reads it,
 * and so does every supervisor this CLI starts, so one mechanism serves both
 * `--state-dir` and the variable.
 */
#include <ctype.h>
#include <getopt.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "framework/conditions.h"
#include "kftrainer/decode.h"
#include "local/local.h"
#include "util/rfc3339.h"

#define STATE_ENV "KFTRAINER_STATE_DIR"

void kft_cli_error(const char *fmt, ...)
{
	va_list ap;
	fputs("kftrainer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static char *absolute(const char *dir)
{
	if (dir[0] == '/')
		return strdup(dir);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	char *out = NULL;
	if (asprintf(&out, "%s/%s", cwd, dir) < 0)
		return NULL;
	return out;
}

int kft_cli_set_state_dir(const char *dir)
{
	if (!dir) {
		dir = getenv(STATE_ENV);
		if (!dir || !*dir || dir[0] == '/')
			return 0;
	}
	if (!*dir) {
		kft_cli_error("--state-dir: empty directory name");
		return -1;
	}
	char *abs = absolute(dir);
	if (!abs || setenv(STATE_ENV, abs, 1) != 0) {
		kft_cli_error("state directory %s: %s", dir, strerror(errno ? errno : ENOMEM));
		free(abs);
		return -1;
	}
	free(abs);
	return 0;
}

/* ---- durations ------------------------------------------------------------ */

/* ---- ages ------------------------------------------------------------------ */

/* kubectl's rules (apimachinery duration.HumanDuration): two significant
 * units while the span is short, one as it grows. */
void kft_cli_format_age(long long s, char *buf, size_t size)
{
	long long m = s / 60, h = s / 3600, d = h / 24;
	if (s < -1)
		snprintf(buf, size, "<invalid>");
	else if (s < 0)
		snprintf(buf, size, "0s");
	else if (s < 120)
		snprintf(buf, size, "%llds", s);
	else if (m < 10 && s % 60)
		snprintf(buf, size, "%lldm%llds", m, s % 60);
	else if (m < 180)
		snprintf(buf, size, "%lldm", m);
	else if (h < 8 && m % 60)
		snprintf(buf, size, "%lldh%lldm", h, m % 60);
	else if (h < 48)
		snprintf(buf, size, "%lldh", h);
	else if (h < 24 * 8 && h % 24)
		snprintf(buf, size, "%lldd%lldh", d, h % 24);
	else if (h < 24 * 365 * 2)
		snprintf(buf, size, "%lldd", d);
	else if (h < 24 * 365 * 8 && d % 365)
		snprintf(buf, size, "%lldy%lldd", d / 365, d % 365);
	else
		snprintf(buf, size, "%lldy", d / 365);
}

long long kft_cli_seconds_since(const char *ts)
{
	int64_t then_ms;
	if (!ts || kft_rfc3339_parse_ms(ts, &then_ms, NULL) != 0)
		return -1;
	return (long long)time(NULL) -
	       (long long)(then_ms >= 0 ? then_ms / 1000 : (then_ms - 999) / 1000);
}

/* ---- tables ---------------------------------------------------------------- */

#define TABLE_PAD 3

static const char *cell(const json_t *row, size_t i)
{
	const char *s = json_string_value(json_array_get(row, i));
	return s ? s : "<none>";
}

void kft_cli_print_table(FILE *out, const json_t *rows)
{
	size_t ncols = 0, i, c;
	const json_t *row;
	json_array_foreach(rows, i, row) if (json_array_size(row) > ncols) ncols =
	        json_array_size(row);
	size_t *width = calloc(ncols ? ncols : 1, sizeof(*width));
	if (!width)
		return;
	json_array_foreach(rows, i, row) for (c = 0; c < json_array_size(row); c++)
	{
		size_t w = strlen(cell(row, c));
		if (w > width[c])
			width[c] = w;
	}
	json_array_foreach(rows, i, row)
	{
		size_t n = json_array_size(row);
		for (c = 0; c < n; c++) {
			if (c + 1 < n)
				fprintf(out, "%-*s", (int)(width[c] + TABLE_PAD), cell(row, c));
			else
				fputs(cell(row, c), out);
		}
		fputc('\n', out);
	}
	free(width);
}

void kft_cli_table_row(json_t *rows, size_t n, const char *const *cells)
{
	json_t *row = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(row, cells[i] ? json_string(cells[i]) : json_null());
	json_array_append_new(rows, row);
}

/* ---- names ---------------------------------------------------------------- */

/* One generator for every name: the library's, which submit uses too. */
int kft_cli_generate_name(const char *generate_name, char **out)
{
	kft_error err = {0};
	if (kft_local_generate_name(generate_name, out, &err) == 0)
		return 0;
	errno = err.code == KFT_ENOMEM ? ENOMEM : EIO;
	return -1;
}

/* ---- kubectl's wording ------------------------------------------------------ */

void kft_cli_not_found(const char *name)
{
	fprintf(stderr, "Error from server (NotFound): " KFT_CLI_RESOURCES " \"%s\" not found\n",
	        name);
}

int kft_cli_print_object(const json_t *obj, int yaml)
{
	kft_error err;
	if (yaml) {
		if (kft_yaml_emit_file(stdout, obj, 0, &err) != 0) {
			kft_cli_error("%s", err.message);
			return -1;
		}
		return 0;
	}
	if (json_dumpf(obj, stdout, JSON_INDENT(4) | JSON_PRESERVE_ORDER) != 0) {
		kft_cli_error("writing JSON: %s", strerror(errno));
		return -1;
	}
	fputc('\n', stdout);
	return 0;
}

int kft_cli_parse_format(const char *s, enum kft_cli_out_format *f)
{
	/* Indexed by the enum; the table format has no name of its own. */
	static const char *const names[] = {"", "wide", "json", "yaml", "name"};
	for (size_t i = 1; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i]) == 0) {
			*f = (enum kft_cli_out_format)i;
			return 0;
		}
	kft_cli_error("--output: unsupported format \"%s\" (wide, json, yaml or name)", s);
	return KFT_EXIT_USAGE;
}

int kft_cli_print_list(const json_t *items, int yaml)
{
	json_t *list = json_pack("{s:s, s:O, s:s, s:{s:s}}", "apiVersion", "v1", "items", items,
	                         "kind", "List", "metadata", "resourceVersion", "");
	int rc = list ? kft_cli_print_object(list, yaml) : -1;
	json_decref(list);
	return rc;
}

/* ---- verbs with only -n and -o ------------------------------------------ */

int kft_cli_ns_output_options(int argc, char **argv, void (*usage)(FILE *), const char **ns,
                              enum kft_cli_out_format *format)
{
	static const struct option opts[] = {{"namespace", required_argument, NULL, 'n'},
	                                     {"output", required_argument, NULL, 'o'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {NULL, 0, NULL, 0}};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:o:h", opts, NULL)) != -1) {
		if (c == 'n') {
			*ns = optarg;
		} else if (c == 'o') {
			if (kft_cli_parse_format(optarg, format) != 0)
				return KFT_EXIT_USAGE;
		} else if (c == 'h') {
			usage(stdout);
			return -1;
		} else {
			usage(stderr);
			return KFT_EXIT_USAGE;
		}
	}
	return 0;
}
