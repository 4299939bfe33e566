/*
 * cli.h - the pieces the kftrainer verbs share: the verb table entry, exit
 * codes, the global options and small helpers (ages, tables,
 * kubectl's wording). Each verb lives in its own cmd/kftrainer/<verb>.c.
 *
 * Output conventions, kept by every verb: results on stdout, diagnostics on
 * stderr as "kftrainer: ..."; where kubectl has a fixed wording users grep
 * for (NotFound, "condition met", "timed out waiting ...") that wording is
 * used verbatim instead.
 */
#ifndef KFT_CMD_CLI_H
#define KFT_CMD_CLI_H

#include <jansson.h>
#include <stdio.h>

/* Exit codes every verb uses: 0 done; 1 the thing asked for failed (an
 * invalid object, a job that failed, a timeout); 2 bad usage or unreadable
 * input; 3 a TrainJob named on the command line does not exist (and nothing
 * else failed), so a program (the Python package) tells NotFound by the
 * status, not by the words. */
enum {
	KFT_EXIT_OK = 0,
	KFT_EXIT_INVALID = 1,
	KFT_EXIT_USAGE = 2,
	KFT_EXIT_INPUT = 2,
	KFT_EXIT_NOT_FOUND = 3
};

/* Exit code 1 under its meaning for the job verbs. */
#define KFT_EXIT_FAILED KFT_EXIT_INVALID

/* The exit status of a verb that acted on several jobs: a failure (1) wins
 * over a job not found (3), either over success. */
static inline int kft_cli_exit_worse(int a, int b)
{
	return a == KFT_EXIT_FAILED || b == KFT_EXIT_FAILED ? KFT_EXIT_FAILED : a ? a : b;
}

typedef struct kft_verb {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv); /* argv[0] is the verb */
	void (*usage)(FILE *out);
} kft_verb;

extern const kft_verb kft_verb_validate;
extern const kft_verb kft_verb_render;
extern const kft_verb kft_verb_runtimes;
extern const kft_verb kft_verb_train;
extern const kft_verb kft_verb_optimize;
extern const kft_verb kft_verb_get;
extern const kft_verb kft_verb_path;
extern const kft_verb kft_verb_export;
extern const kft_verb kft_verb_logs;
extern const kft_verb kft_verb_wait;
extern const kft_verb kft_verb_suspend;
extern const kft_verb kft_verb_resume;
extern const kft_verb kft_verb_delete;
extern const kft_verb kft_verb_pods;
extern const kft_verb kft_verb_events;
extern const kft_verb kft_verb_ui;
/* Hidden: the job supervisor the local backend starts for itself. */
extern const kft_verb kft_verb_supervise;

/* Prints "kftrainer: " and the message to stderr. */
void kft_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- global options (common.c) ------------------------------------------ */

/* Records `--state-dir DIR` (made absolute against the working directory, so
 * processes started elsewhere find the same store) and exports it as
 * KFTRAINER_STATE_DIR, which is what every verb and supervisor reads. A
 * relative KFTRAINER_STATE_DIR from the environment is made absolute the same
 * way when dir is NULL. dir is borrowed. Returns 0, or -1 (reported) when the
 * working directory cannot be read or memory runs out. */
int kft_cli_set_state_dir(const char *dir);

/* ---- ages (common.c; durations: util/duration.h) ------------------------- */

/* kubectl's AGE column for a span of `seconds` ("5s", "3m2s", "4h", "2d5h",
 * "3y"): at most two units, coarser as the span grows. Writes into buf
 * (NUL-terminated, truncated to size). */
void kft_cli_format_age(long long seconds, char *buf, size_t size);

/* Seconds from an RFC 3339 timestamp ("2026-01-02T03:04:05Z", fractions and
 * offsets allowed; kft_rfc3339_parse_ms) to now; -1 when ts is NULL or not
 * such a timestamp. */
long long kft_cli_seconds_since(const char *ts);

/* ---- tables (common.c) --------------------------------------------------- */

/* A kubectl-style table: rows of cells padded to each column's width with
 * at least three spaces between columns. The first row is the header.
 * rows is a JSON array of arrays of strings (borrowed); a non-string cell
 * prints as "<none>". Output goes to out. */
void kft_cli_print_table(FILE *out, const json_t *rows);

/* Appends a row built from `n` strings (NULL prints "<none>") to rows. */
void kft_cli_table_row(json_t *rows, size_t n, const char *const *cells);

/* ---- names ---------------------------------------------------------------- */

/* kft_local_generate_name (src/local/local.h, the one name generator) with
 * the CLI's error convention: *out is malloc'd, the caller frees. Returns 0,
 * or -1 (errno set) when no randomness or memory is to be had. */
int kft_cli_generate_name(const char *generate_name, char **out);

/* ---- kubectl's wording --------------------------------------------------- */

/* The resource's full name as kubectl prints it in messages. */
#define KFT_CLI_RESOURCE  "trainjob.trainer.kubeflow.org"
#define KFT_CLI_RESOURCES "trainjobs.trainer.kubeflow.org"

/* Prints kubectl's
 *   Error from server (NotFound): trainjobs.trainer.kubeflow.org "NAME" not found
 * to stderr. */
void kft_cli_not_found(const char *name);

/* Prints obj as JSON (indent 4, as kubectl) or YAML to stdout. Returns 0 or
 * -1 (reported) when writing fails. */
int kft_cli_print_object(const json_t *obj, int yaml);

/* The -o/--output formats get and runtimes share; KFT_OUT_TABLE when none is
 * given. */
enum kft_cli_out_format { KFT_OUT_TABLE, KFT_OUT_WIDE, KFT_OUT_JSON, KFT_OUT_YAML, KFT_OUT_NAME };

/* Sets *f to the format named s (wide, json, yaml or name). Returns 0, or
 * KFT_EXIT_USAGE (reported on stderr) for any other name; *f is then
 * unchanged. */
int kft_cli_parse_format(const char *s, enum kft_cli_out_format *f);

/* Prints a v1 List holding items (borrowed), as kubectl prints several
 * objects, like kft_cli_print_object. Returns 0 or -1 (reported) when
 * writing fails; -1 unreported on ENOMEM. */
int kft_cli_print_list(const json_t *items, int yaml);

/* Parses the options of a verb that takes only -n/--namespace NS, -o/--output
 * FORMAT and -h/--help (pods, events): *ns and *format are set when given;
 * optind is left at the first operand. Returns 0, -1 when --help printed the
 * usage to stdout, or KFT_EXIT_USAGE (reported; usage on stderr). */
int kft_cli_ns_output_options(int argc, char **argv, void (*usage)(FILE *), const char **ns,
                              enum kft_cli_out_format *format);

#endif
