/*
 * jobinput.h - the front half `render` and `train` share: TrainJobs and
 * runtimes read from -f/-r inputs (or built in memory), each checked as
 * `kftrainer validate` checks it, the runtime each TrainJob references
 * resolved, and the plugins' CustomValidation run. Every problem is printed
 * as `validate` prints it:
 *
 *     FILE: KIND/NAMESPACE/NAME: FIELD-PATH: message
 *
 * so a TrainJob that `validate` rejects gives the same lines here.
 */
#ifndef KFT_CMD_JOBINPUT_H
#define KFT_CMD_JOBINPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "inputs.h"
#include "kftrainer/framework.h"
#include "kftrainer/object.h"
#include "kftrainer/schema.h"

typedef struct kft_jobinput {
	const kft_schema *schema; /* the built-in schema (static, not freed) */
	json_t *jobs;             /* {"file", "object"} records of valid TrainJobs, defaulted */
	json_t *runtimes;         /* valid TrainingRuntimes and ClusterTrainingRuntimes */
	json_t *others;           /* v1 Secrets and ConfigMaps in the inputs (for train's
	                           * pods, as if they were on the cluster) */
	json_t *optjobs;          /* {"file", "object"} records of valid OptimizationJobs */
	FILE *errors;             /* where field errors go (validate's stream: stdout) */
	const char *ns;           /* kubectl -n: the namespace of objects that name none; an
	                           * object naming another is an error (NULL: no such rule) */
	bool generate_names;      /* give TrainJobs with only metadata.generateName their name
	                           * before checking, as the API server does on create */
	bool defer_runtimes;      /* objects of the runtime inputs are only read by
	                           * kft_jobinput_read; each is checked when a TrainJob
	                           * references it (kft_jobinput_check_runtimes) */
	json_t *unchecked;        /* {"file", "object"} records of those not checked yet */
	const char *runtime_name; /* with defer_runtimes: a runtime wanted besides those the
	                           * TrainJob inputs name (the --runtime shortcut's), or NULL */
} kft_jobinput;

/* Sets in up empty, field errors going to `errors`. Returns 0, or
 * KFT_EXIT_INPUT (reported) when the schema or memory is missing. Release
 * with kft_jobinput_free, also after a failure. */
int kft_jobinput_init(kft_jobinput *in, FILE *errors);
void kft_jobinput_free(kft_jobinput *in);

/* When no -r was given, adds the default runtime location to runtimes:
 * $KFTRAINER_RUNTIMES, ./manifests/runtimes, the runtimes installed beside
 * this binary (BIN/../share/kftrainer/runtimes), or the configured
 * directory, whichever is a directory first. verb names the caller in the
 * error. Returns 0, or KFT_EXIT_INPUT (reported) when none exists. */
int kft_jobinput_default_runtimes(const char *verb, kft_paths *runtimes);

/* Reads every file of the TrainJob inputs, then of the runtime inputs
 * (runtimes may be NULL; directories are walked), and checks every object in
 * that order, sorting valid TrainJobs and runtimes into in. With
 * defer_runtimes, the runtime inputs' objects are kept unchecked, and a
 * runtime file whose text names none of the wanted runtimes (runtime_name and
 * the TrainJobs' spec.runtimeRef.name) is not even decoded; a file with a
 * backslash is always decoded, as an escape could spell a name. Returns 0,
 * KFT_EXIT_INPUT when an input is unreadable (reported; nothing checked),
 * or KFT_EXIT_INVALID when an object is invalid (its errors printed; the
 * valid ones are kept). */
int kft_jobinput_read(kft_jobinput *in, const kft_paths *jobs, const kft_paths *runtimes);

/* With defer_runtimes: checks the not yet checked runtimes that the TrainJob
 * record (of in->jobs) references by kind and name, as kft_jobinput_read
 * would have, moving the valid ones to in->runtimes. `train` uses this so a
 * broken runtime file it does not use neither blocks it nor costs a check.
 * Returns 0, or KFT_EXIT_INVALID when such a runtime is invalid (errors
 * printed). Without defer_runtimes there is nothing to check: returns 0. */
int kft_jobinput_check_runtimes(kft_jobinput *in, const json_t *record);

/* Checks one object built in memory (obj is borrowed; the defaulted copy is
 * kept) as if it came from a file called `source`. Returns as
 * kft_jobinput_read. */
int kft_jobinput_add(kft_jobinput *in, const char *source, const json_t *obj);

/* A TrainJob record standing for the trials of an OptimizationJob record
 * (its template's spec, named and placed as the OptimizationJob), for
 * kft_jobinput_check_runtimes and kft_jobinput_resolve. New reference; NULL
 * on ENOMEM. */
json_t *kft_jobinput_template_record(const json_t *optjob_record);

/* Resolves the runtime of a TrainJob record of in->jobs and runs
 * CustomValidation with fw (and backend, NULL: the default). Field errors and
 * warnings are printed. Returns the runtime (borrowed from in->runtimes), or
 * NULL when the TrainJob is invalid (errors printed) or validation itself
 * failed (reported). */
const json_t *kft_jobinput_resolve(const kft_jobinput *in, const kft_framework *fw,
                                   const kft_backend *backend, const json_t *record);

/* Plugins: one list, configured once, loaded by every verb that runs the
 * pipeline (validate, render, train and the supervisors train starts). */
#define KFT_PLUGINS_ENV  "KFTRAINER_PLUGINS"
#define KFT_PLUGINS_FILE "plugins"

/* The plugin list, from the first source that is set: the --plugin flags
 * (`flags`, may be NULL), else $KFTRAINER_PLUGINS (colon-separated paths; set
 * but empty means no plugins), else <state-dir>/plugins (one path a line,
 * blank lines and #-comments passed over, relative paths taken against the
 * state directory; no file: no plugins). Sources are not merged: the first
 * one set is the whole list. Each path is made absolute (realpath) into out,
 * so the supervisors `train` starts load the very same files. Returns 0, or
 * KFT_EXIT_INPUT (reported, naming the path and where it was configured) for
 * a file that does not exist or an unreadable plugins file. */
int kft_jobinput_plugin_paths(const kft_paths *flags, kft_paths *out);

/* Loads each shared object of plugins into fw, in order. Returns 0, or
 * KFT_EXIT_INPUT (reported) for one that cannot be loaded. */
int kft_jobinput_load_plugins(kft_framework *fw, const kft_paths *plugins);

/* What train and optimize start with: a framework with `features` and the
 * plugins --plugin (flags) or the configuration names, each plugin's path
 * appended to `recorded` so the supervisors load the same files. Returns
 * 0, KFT_EXIT_INPUT (a plugin: reported) or KFT_EXIT_FAILED (reported with
 * `verb`); *fw is set either way (NULL or to free). */
int kft_jobinput_framework(const char *verb, unsigned features, const kft_paths *flags,
                           kft_framework **fw, json_t *recorded);

#endif
