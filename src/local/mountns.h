/*
 * mountns.h - a private filesystem view for one local pod (internal).
 *
 * A container sees its volumes at the paths the pod declares (/workspace,
 * /etc/mpi, /root/.ssh) and nowhere else; a local pod's volumes are
 * directories under its job's directory. The local backend closes that gap
 * at the mechanism: the pod's process runs in a mount namespace of its own
 * (inside a user namespace of its own when it is not root, which needs the
 * kernel to allow unprivileged user namespaces), whose root is a fresh tmpfs
 * holding the host's top-level entries bound in place, with each of the
 * pod's volume directories bound at its mount path. So every path a runtime
 * mounts resolves to the job's own directory wherever it appears — a word of
 * argv, a value after '=', an env value, a path in the program's own code —
 * and nothing a job does at /workspace can reach the host's /workspace.
 *
 * Where a mount path does not exist on the host, the directory that would
 * hold it is shadowed: a tmpfs over it with each of its host entries bound
 * back, so the mount point is made in memory, never on the host. Mounts the
 * pod declares readOnly are remounted read-only. Nothing propagates back to
 * the host's mounts (the namespace's mounts are slaves); the namespace ends
 * with the last process in it.
 *
 * Use: the parent builds a plan with kft_mountns_plan() (it reads the host's
 * directories, so the child does not have to), the child calls
 * kft_mountns_enter() between fork and exec. A plan is immutable once built
 * and owned by whoever built it.
 */
#ifndef KFT_LOCAL_MOUNTNS_H
#define KFT_LOCAL_MOUNTNS_H

#include <stddef.h>

#include "kftrainer/error.h"

/* One volume of a pod: the path the container sees and the host directory
 * behind it. */
typedef struct kft_mount {
	char *mount_path; /* absolute, no trailing '/' (but "/" itself) */
	char *host_path;  /* an existing host directory */
	int read_only;
} kft_mount;

typedef struct kft_mountns kft_mountns;

/* Plans the view for mounts[0..n). Mount paths must be absolute and not "/".
 * Reads the host's directories along each mount path (never writes).
 * On success *out is a new plan (kft_mountns_free). Errors: KFT_EINVAL (a
 * relative mount path or "/"), KFT_ELIMIT (too many entries to bind: over
 * 65,536 operations), KFT_ENOMEM. */
int kft_mountns_plan(const kft_mount *mounts, size_t n, kft_mountns **out, kft_error *err);

/* The host path behind path as the planned view resolves it: under the
 * longest mount path that contains it (at a path boundary), the mount's host
 * directory; otherwise path itself. Writes into buf (cap bytes) and returns
 * buf, or NULL when it does not fit. ns may be NULL (no view: path itself). */
const char *kft_mountns_host_path(const kft_mountns *ns, const char *path, char *buf, size_t cap);

/* The steps kft_mountns_enter reports that are not planned ones. */
#define KFT_MOUNTNS_STEP_NAMESPACES (-1) /* unshare and the id maps */
#define KFT_MOUNTNS_STEP_ROOT       (-2) /* staging and switching roots */
#define KFT_MOUNTNS_STEP_CWD        (-3) /* changing to the working directory */

/*
 * In a child between fork and exec: enters the planned view and changes to
 * cwd (NULL: "/"), a path in the view. Async-signal-safe (system calls only),
 * as the child of a threaded parent needs. Returns 0, or -1 with errno set
 * and *failed_op (may be NULL) the failing step: the index of a planned one,
 * or a KFT_MOUNTNS_STEP_* (NAMESPACES is where a kernel that allows no
 * unprivileged user namespaces refuses), for kft_mountns_describe().
 */
int kft_mountns_enter(const kft_mountns *ns, const char *cwd, int *failed_op);

/* Words for step op of ns as kft_mountns_enter reported it ("bind /x onto
 * /workspace", "create the namespaces"), into buf. Returns buf. */
const char *kft_mountns_describe(const kft_mountns *ns, int op, char *buf, size_t cap);

void kft_mountns_free(kft_mountns *ns);

#endif
