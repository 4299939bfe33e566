/*
 * export.h - the model exporter (internal): a finished job's output
 * directory to where its TrainJob says (tracking.kftrainer.dev/export-to,
 * track.h). The same function runs in `kftrainer export` (which the local
 * supervisor starts once a job is Complete) and in `kftrainer-export`, the
 * static program of the Job the controller adds on a cluster.
 *
 *   s3://BUCKET[/PREFIX]  every regular file under the directory as
 *                         PREFIX/RELATIVE/PATH (s3.h: one PUT, multipart past
 *                         a part; credentials and endpoint from AWS_*)
 *   file:///DIR           the tree copied into DIR (made when missing)
 *   models:/NAME          the tree uploaded as the artifact "model" of the
 *                         job's MLflow run (found by its uid tag, or made),
 *                         then a new version of registered model NAME from
 *                         it, linked to the run
 *
 * Symbolic links and special files are left out. Where a run exists, it is
 * tagged kftrainer.export.uri with where the model went. When the TrainJob
 * says tracking.kftrainer.dev/register-to, an s3:// or file:// export then
 * becomes a version of that model in the Kubeflow Model Registry
 * (modelreg.h, at $KFTRAINER_MODEL_REGISTRY_URL).
 */
#ifndef KFT_TRACK_EXPORT_H
#define KFT_TRACK_EXPORT_H

#include <stdint.h>

#include <jansson.h>

#include "kftrainer/error.h"
#include "track/mlflow.h"

typedef struct kft_export_opts {
	const char *from;       /* the model's directory on this machine */
	const char *to;         /* export-to's value */
	const json_t *trainjob; /* the job (borrowed): its run, for models:/ and the tag */
	kft_mlflow_opts mlflow; /* uri NULL: no tracking server (models:/ then refused) */
	const char *default_experiment;
	uint64_t part_size;                        /* S3 parts; 0: the default */
	void (*progress)(void *ctx, const char *); /* a line per file; may be NULL */
	void *progress_ctx;
} kft_export_opts;

/* Exports. *where (malloc'd) says where the model went: the s3:// or
 * file:// URI (followed by ", registered as MODEL version NAME"), or
 * models:/NAME/VERSION. Errors: KFT_EINVAL (a destination export-to
 * refuses; models:/ without a tracking URI; register-to without a
 * registry URL), KFT_ENOTFOUND
 * (nothing to export: no directory, or no file in it), and those of the
 * transfer (s3.h, mlflow.h, fetch.h). */
int kft_export_run(const kft_export_opts *o, char **where, kft_error *err);

#endif
