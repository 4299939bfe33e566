/*
 * podspec.h - turn one container of one pod of a rendered JobSet into what
 * the local backend needs to start it as a plain process (internal).
 *
 * The local backend runs the very objects `kftrainer render` prints. A pod of
 * replicated job R, replica r, completion index i is the pod the JobSet and
 * Job controllers would create; this module plays the kubelet's part for it:
 *
 *  - Pod identity. The pod is named "<jobset>-<R>-<r>-<i>-local": the Job
 *    name, the completion index, then the fixed suffix "local" in place of the
 *    kubelet's random five characters, so names are stable across runs. Its
 *    labels and annotations are the template's plus those JobSet's controller
 *    adds (jobset.sigs.k8s.io/jobset-name, replicatedjob-name,
 *    replicatedjob-replicas, global-replicas, job-index, job-global-index,
 *    job-key, group-name, group-replicas, job-group-index, restart-attempt: "0"
 *    unless kft_podspec_defaults says otherwise)
 *    and the Job controller's batch.kubernetes.io/job-completion-index (label
 *    and annotation) and job-name. The pod IP is 127.0.0.1.
 *  - Environment. envFrom sources first, in order, each key with its prefix;
 *    then env entries in order. A later definition of a name replaces the
 *    value but keeps the first position. Values are expanded with $(VAR)
 *    against the variables defined before them, exactly as Kubernetes does
 *    ($$ is a literal $, unknown references stay as written); command and args
 *    are expanded against the final environment. Secret data is base64 and
 *    decoded; stringData is honoured too. A missing required key is an error
 *    worded like the kubelet's CreateContainerConfigError.
 *  - Volumes. Every volumeMount resolves to a host directory under
 *    <job_dir>/volumes: emptyDir and configMap/secret volumes by volume name,
 *    persistentVolumeClaim by claim name (a mount naming one of the JobSet's
 *    spec.volumeClaimPolicies templates counts as a claim of that name, as the
 *    JobSet controller adds that volume to every pod), so an initializer and the trainer
 *    that mount the same claim share the files. configMap and secret volumes
 *    are written out (items or all keys; configMap files default to 0644,
 *    secret files to 0600, defaultMode and item mode win).
 *  - Mount paths. The local backend runs a pod with volumes in a private
 *    filesystem view (mountns.h) where each mountPath is its host directory,
 *    so the spec keeps every path as the pod declares it
 *    (kft_podspec_defaults.view). Where no view can be made (a kernel without
 *    unprivileged user namespaces), the paths are rewritten instead: every
 *    env value, command/arg word and the working directory in which a mount
 *    path starts the word or follows its first '=' ("/workspace/x",
 *    "output_dir=/workspace/x", "--data=/workspace"), at a path boundary (not
 *    "/workspacex"), gets the host directory, longest mount first; a path in
 *    a program's own code is then beyond reach. Either way env
 *    KFTRAINER_MOUNTS holds a JSON object mapping each mountPath to its host
 *    directory, for programs that look paths up (kftrainer.host_path).
 */
#ifndef KFT_LOCAL_PODSPEC_H
#define KFT_LOCAL_PODSPEC_H

#include <stddef.h>

#include <jansson.h>

#include "kftrainer/error.h"
#include "local/mountns.h"

/* The fixed pod-name suffix that stands in for the kubelet's random one. */
#define KFT_POD_NAME_SUFFIX "local"
/* The environment variable holding the mountPath -> host directory map. */
#define KFT_MOUNTS_ENV "KFTRAINER_MOUNTS"

typedef struct kft_podspec {
	char **argv;       /* command + args, NULL-terminated; exec'd directly, no shell */
	char **envp;       /* "NAME=VALUE", NULL-terminated, in the container's env order */
	char *image;       /* recorded for status and logs, not used to run anything */
	char *workdir;     /* workingDir (mount-rewritten unless in a view) or job_dir */
	char *pod_name;    /* "<jobset>-<rjob>-<replica>-<index>-local" */
	kft_mount *mounts; /* mount_path as declared (trailing '/' removed), host_path
	                    * the directory (or subPath) under <job_dir>/volumes */
	size_t n_mounts;
} kft_podspec;

/* Builds the exec spec of container `container` (searched in containers, then
 * initContainers) of the pod with completion index `pod_index` of replica
 * `replica` of replicated job `rjob` in `jobset`. `objects` is a JSON array of
 * the other rendered objects (Secrets, ConfigMaps; others are ignored) or
 * NULL. `job_dir` must exist; volume directories are created under it and
 * configMap/secret volume files are written there.
 *
 * On success returns 0 and fills *out, which the caller releases with
 * kft_podspec_free(). On failure returns a negative kft_status, fills err,
 * and leaves *out empty (safe to free). Errors: KFT_EINVAL (unknown replicated
 * job/container, a container without command, an unsupported fieldRef or
 * volume type, a bad path), KFT_ENOTFOUND (a required ConfigMap/Secret or key
 * missing: "couldn't find key K in Secret NS/NAME"), KFT_ELIMIT (more than
 * 4096 env entries or argv words, or a value over 1 MiB), KFT_EIO (writing the
 * volumes), KFT_ENOMEM. Bytes written to disk before a failure stay. */
int kft_podspec_build(const json_t *jobset, const json_t *objects, const char *rjob, int replica,
                      int pod_index, const char *container, const char *job_dir, kft_podspec *out,
                      kft_error *err);

/* What a pod inherits from the machine rather than from its spec: the
 * stand-in for the image's environment and working directory. All borrowed. */
typedef struct kft_podspec_defaults {
	char *const *base_env;  /* "K=V", NULL-terminated, or NULL: placed under the pod's
	                         * env (a name the pod defines keeps the pod's value); not
	                         * visible to $(VAR) expansion, as an image's env is not */
	char *const *extra_env; /* "K=V", NULL-terminated, or NULL: set over everything
	                         * (what the local backend itself passes, e.g. the status file) */
	const char *workdir;    /* used when the container has no workingDir; NULL: job_dir */
	int restart_attempt;    /* the JobSet's restarts so far: the pod's
	                         * jobset.sigs.k8s.io/restart-attempt label */
	int native;             /* the caller runs the container's work itself (an
	                         * initializer image's program): a missing command is
	                         * no error, argv is then empty */
	int view;               /* the process runs in the mounts' view (mountns.h):
	                         * paths are kept as declared, not rewritten */
	int dry;                /* only compute: no volume directory is made, no
	                         * configMap/secret file written (a query about an
	                         * existing job, kft_local_host_path) */
} kft_podspec_defaults;

/* kft_podspec_build with defaults (NULL: none, the same as
 * kft_podspec_build). Malformed entries (no '=') in the env lists are
 * KFT_EINVAL. Ownership and other errors as kft_podspec_build. */
int kft_podspec_build_with(const json_t *jobset, const json_t *objects, const char *rjob,
                           int replica, int pod_index, const char *container, const char *job_dir,
                           const kft_podspec_defaults *defaults, kft_podspec *out, kft_error *err);

/* The container the local backend runs for each pod of replicated job rjob
 * (a JobSet replicatedJobs entry) named rjob_name: the one named "node", else
 * the one named like the replicated job, else the first; NULL when it has
 * none. Borrowed from rjob. */
const char *kft_pod_main_container(const json_t *rjob, const char *rjob_name);

/* The Pod the Job controller would create for completion index pod_index of
 * replica `replica` of replicated job `rjob`: apiVersion/kind, metadata (the
 * name, namespace, labels and annotations above, restart-attempt from
 * restart_attempt) and the template's spec as rendered; no status. Nothing
 * is written to disk. *out is a new reference. Errors: KFT_EINVAL (no such
 * replicated job or replica, a JobSet without a name), KFT_ENOMEM. */
int kft_pod_object(const json_t *jobset, const char *rjob, int replica, int pod_index,
                   int restart_attempt, json_t **out, kft_error *err);

/* Frees everything *spec owns and zeroes it. spec may be NULL. */
void kft_podspec_free(kft_podspec *spec);

/* Kubernetes $(VAR) expansion of `in`: lookup(name, ctx) returns the value or
 * NULL when unknown (then "$(name)" stays). Returns a heap string the caller
 * frees, or NULL when out of memory or the result would exceed 1 MiB. */
char *kft_expand_vars(const char *in, const char *(*lookup)(const char *name, void *ctx),
                      void *ctx);

#endif
