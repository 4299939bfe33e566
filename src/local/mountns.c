/*
 * mountns.c - a private filesystem view for one local pod (see mountns.h).
 *
 * The view is built the way bubblewrap builds one. In the child, after
 * unshare(): every mount becomes a slave (nothing we do reaches the host),
 * a tmpfs goes over /tmp and becomes the root (pivot_root), with the host's
 * tree moved under /oldroot and an empty tmpfs at /newroot. The plan's steps
 * then fill /newroot: a directory per top-level host directory with the host
 * one bound onto it (recursively, so /proc, /dev and /home keep their
 * submounts), the host's top-level symlinks and files likewise, shadows for
 * directories that must gain a mount point, and the pod's volumes. A second
 * pivot_root makes /newroot the root and the intermediate tmpfs, with the
 * host's tree under it, is detached.
 *
 * Everything that needs the host's directories read or a string built is
 * done by kft_mountns_plan() in the parent; the child only makes system
 * calls, which keeps it safe after fork.
 */
#include "local/mountns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NEWROOT "/newroot"
#define OLDROOT "/oldroot"
#define MAX_OPS 65536

typedef enum { OP_DIR, OP_FILE, OP_LINK, OP_BIND, OP_TMPFS, OP_RDONLY } op_kind;

/* One step: src is a host path under OLDROOT (a link's target for OP_LINK),
 * dst a path under NEWROOT. */
typedef struct op {
	op_kind kind;
	char *src, *dst;
} op;

struct kft_mountns {
	op *ops;
	size_t n, cap;
	kft_mount *mounts; /* copies, sorted by mount path */
	size_t n_mounts;
	char **shadowed; /* host directories already shadowed */
	size_t n_shadowed;
	int userns; /* not root: a user namespace is needed to mount */
	char uid_map[64], gid_map[64];
};

/* ---- building the plan ---------------------------------------------------- */

static int add_op(kft_mountns *ns, op_kind kind, const char *src, const char *dst, kft_error *err)
{
	if (ns->n == MAX_OPS)
		return kft_error_set(err, KFT_ELIMIT, "mount namespace: more than %d steps",
		                     MAX_OPS);
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 64;
		op *ops = realloc(ns->ops, cap * sizeof(*ops));
		if (!ops)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		ns->ops = ops;
		ns->cap = cap;
	}
	op *o = &ns->ops[ns->n];
	o->kind = kind;
	o->src = NULL;
	o->dst = NULL;
	if (src && asprintf(&o->src, "%s%s", kind == OP_LINK ? "" : OLDROOT, src) < 0)
		o->src = NULL;
	if (asprintf(&o->dst, NEWROOT "%s", dst) < 0)
		o->dst = NULL;
	if ((src && !o->src) || !o->dst) {
		free(o->src);
		free(o->dst);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	ns->n++;
	return 0;
}

static int in_list(const char *name, char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], name) == 0)
			return 1;
	return 0;
}

/* "/" + name or dir + "/" + name, into buf. */
static int join(char *buf, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(buf, cap, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* The steps that recreate host entry dir/name at the same place in the view. */
static int add_entry(kft_mountns *ns, int dfd, const char *dir, const char *name, kft_error *err)
{
	char path[4096], target[4096];
	struct stat st;
	if (join(path, sizeof(path), dir, name) != 0 ||
	    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0; /* gone, or a name too long to use: not part of the view */
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);
		if (n < 0)
			return 0;
		target[n] = '\0';
		return add_op(ns, OP_LINK, target, path, err);
	}
	int rc = add_op(ns, S_ISDIR(st.st_mode) ? OP_DIR : OP_FILE, NULL, path, err);
	return rc < 0 ? rc : add_op(ns, OP_BIND, path, path, err);
}

/* Shadows host directory dir: a tmpfs at its place with each of its entries
 * bound back, except the names in skip (a mount point goes there instead).
 * A directory we may not list is shadowed empty: its entries were not ours
 * to see anyway. */
static int shadow(kft_mountns *ns, const char *dir, char *const *skip, size_t n_skip,
                  kft_error *err)
{
	char **grown = realloc(ns->shadowed, (ns->n_shadowed + 1) * sizeof(*grown));
	if (!grown)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	ns->shadowed = grown;
	if (!(ns->shadowed[ns->n_shadowed] = strdup(dir)))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	ns->n_shadowed++;
	int rc = add_op(ns, OP_TMPFS, NULL, strcmp(dir, "/") == 0 ? "" : dir, err);
	DIR *d = rc == 0 ? opendir(dir) : NULL;
	struct dirent *de;
	while (rc == 0 && d && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    in_list(de->d_name, skip, n_skip))
			continue;
		rc = add_entry(ns, dirfd(d), dir, de->d_name, err);
	}
	if (d)
		closedir(d);
	return rc;
}

static int is_real_dir(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Where mount path mp meets the host: the deepest ancestor-or-self that is a
 * real directory on the host (into deepest) and the component after it
 * (into next; empty when mp itself is one). */
static void host_anchor(const char *mp, char *deepest, char *next, size_t cap)
{
	char path[4096];
	snprintf(deepest, cap, "/");
	next[0] = '\0';
	for (const char *p = mp + 1; *p;) {
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if ((size_t)(p - mp) + len >= sizeof(path))
			break;
		memcpy(path, mp, (size_t)(p - mp) + len);
		path[(size_t)(p - mp) + len] = '\0';
		if (!is_real_dir(path)) {
			snprintf(next, cap, "%.*s", (int)len, p);
			return;
		}
		snprintf(deepest, cap, "%s", path);
		p = end ? end + 1 : p + len;
	}
}

/* The earlier mount whose path contains mp (the longest), or NULL. */
static const kft_mount *covering(const kft_mountns *ns, size_t upto, const char *mp)
{
	const kft_mount *best = NULL;
	for (size_t i = 0; i < upto; i++) {
		size_t n = strlen(ns->mounts[i].mount_path);
		if (strncmp(mp, ns->mounts[i].mount_path, n) == 0 && mp[n] == '/' &&
		    (!best || n > strlen(best->mount_path)))
			best = &ns->mounts[i];
	}
	return best;
}

/* Directories from just below base down to mp, made in the view. */
static int add_dirs(kft_mountns *ns, const char *base, const char *mp, kft_error *err)
{
	char path[4096];
	size_t start = strcmp(base, "/") == 0 ? 0 : strlen(base);
	int rc = 0;
	for (size_t i = start + 1; rc == 0 && i <= strlen(mp); i++) {
		if (mp[i] != '/' && mp[i] != '\0')
			continue;
		if (i >= sizeof(path))
			return kft_error_set(err, KFT_ELIMIT, "mount path %s is too long", mp);
		memcpy(path, mp, i);
		path[i] = '\0';
		rc = add_op(ns, OP_DIR, NULL, path, err);
	}
	return rc;
}

static int mount_compare(const void *a, const void *b)
{
	return strcmp(((const kft_mount *)a)->mount_path, ((const kft_mount *)b)->mount_path);
}

/* The names each shadowed directory must leave out: where a mount path
 * passes through a symlink or a file, the mount point replaces it. */
static int skips_of(const kft_mountns *ns, const char *dir, char ***skip, size_t *n, kft_error *err)
{
	char deepest[4096], next[4096];
	*skip = NULL;
	*n = 0;
	for (size_t i = 0; i < ns->n_mounts; i++) {
		if (covering(ns, i, ns->mounts[i].mount_path))
			continue;
		host_anchor(ns->mounts[i].mount_path, deepest, next, sizeof(deepest));
		if (!next[0] || strcmp(deepest, dir) != 0 || in_list(next, *skip, *n))
			continue;
		char **grown = realloc(*skip, (*n + 1) * sizeof(**skip));
		if (!grown || !(grown[*n] = strdup(next))) {
			*skip = grown ? grown : *skip;
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		}
		*skip = grown;
		(*n)++;
	}
	return 0;
}

static void free_list(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

static int shadow_with_skips(kft_mountns *ns, const char *dir, kft_error *err)
{
	char **skip;
	size_t n_skip;
	int rc = skips_of(ns, dir, &skip, &n_skip, err);
	if (rc == 0)
		rc = shadow(ns, dir, skip, n_skip, err);
	free_list(skip, n_skip);
	return rc;
}

static int plan_mount(kft_mountns *ns, size_t i, kft_error *err)
{
	const kft_mount *m = &ns->mounts[i];
	const kft_mount *outer = covering(ns, i, m->mount_path);
	char deepest[4096], next[4096];
	int rc = 0;
	if (outer) {
		/* below another volume: the mount point is made in that volume,
		 * which is the job's own directory, as a kubelet makes it */
		rc = add_dirs(ns, outer->mount_path, m->mount_path, err);
	} else {
		host_anchor(m->mount_path, deepest, next, sizeof(deepest));
		if (next[0] && !in_list(deepest, ns->shadowed, ns->n_shadowed))
			rc = shadow_with_skips(ns, deepest, err);
		if (rc == 0 && next[0])
			rc = add_dirs(ns, deepest, m->mount_path, err);
	}
	if (rc == 0)
		rc = add_op(ns, OP_BIND, m->host_path, m->mount_path, err);
	if (rc == 0 && m->read_only)
		rc = add_op(ns, OP_RDONLY, NULL, m->mount_path, err);
	return rc;
}

static int copy_mounts(kft_mountns *ns, const kft_mount *mounts, size_t n, kft_error *err)
{
	ns->mounts = calloc(n ? n : 1, sizeof(*ns->mounts));
	if (!ns->mounts)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *mp = mounts[i].mount_path;
		if (!mp || mp[0] != '/' || !mp[1] || !mounts[i].host_path ||
		    mounts[i].host_path[0] != '/')
			return kft_error_set(err, KFT_EINVAL,
			                     "mount path %s: must be absolute and not /",
			                     mp ? mp : "(null)");
		ns->mounts[i].mount_path = strdup(mp);
		ns->mounts[i].host_path = strdup(mounts[i].host_path);
		ns->mounts[i].read_only = mounts[i].read_only;
		ns->n_mounts++;
		if (!ns->mounts[i].mount_path || !ns->mounts[i].host_path)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	qsort(ns->mounts, n, sizeof(*ns->mounts), mount_compare);
	return 0;
}

int kft_mountns_plan(const kft_mount *mounts, size_t n, kft_mountns **out, kft_error *err)
{
	kft_mountns *ns = calloc(1, sizeof(*ns));
	int rc;
	*out = NULL;
	if (!ns)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	ns->userns = geteuid() != 0;
	snprintf(ns->uid_map, sizeof(ns->uid_map), "%u %u 1\n", (unsigned)geteuid(),
	         (unsigned)geteuid());
	snprintf(ns->gid_map, sizeof(ns->gid_map), "%u %u 1\n", (unsigned)getegid(),
	         (unsigned)getegid());
	rc = copy_mounts(ns, mounts, n, err);
	if (rc == 0)
		rc = shadow_with_skips(ns, "/", err);
	for (size_t i = 0; rc == 0 && i < ns->n_mounts; i++)
		rc = plan_mount(ns, i, err);
	if (rc < 0) {
		kft_mountns_free(ns);
		return rc;
	}
	*out = ns;
	return 0;
}

const char *kft_mountns_host_path(const kft_mountns *ns, const char *path, char *buf, size_t cap)
{
	const kft_mount *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; ns && i < ns->n_mounts; i++) {
		size_t n = strlen(ns->mounts[i].mount_path);
		if (n > best_len && strncmp(path, ns->mounts[i].mount_path, n) == 0 &&
		    (path[n] == '\0' || path[n] == '/')) {
			best = &ns->mounts[i];
			best_len = n;
		}
	}
	int w = best ? snprintf(buf, cap, "%s%s", best->host_path, path + best_len)
	             : snprintf(buf, cap, "%s", path);
	return w >= 0 && (size_t)w < cap ? buf : NULL;
}

const char *kft_mountns_describe(const kft_mountns *ns, int i, char *buf, size_t cap)
{
	static const char *const verbs[] = {
	        [OP_DIR] = "make directory",     [OP_FILE] = "make file",
	        [OP_LINK] = "make symlink",      [OP_BIND] = "bind",
	        [OP_TMPFS] = "mount a tmpfs at", [OP_RDONLY] = "make read-only"};
	if (i < 0 || !ns || (size_t)i >= ns->n) {
		snprintf(buf, cap, "%s",
		         i == KFT_MOUNTNS_STEP_NAMESPACES ? "create the namespaces"
		         : i == KFT_MOUNTNS_STEP_CWD      ? "change to the working directory"
		                                          : "switch to the new root");
		return buf;
	}
	const op *o = &ns->ops[i];
	const char *dst = o->dst + strlen(NEWROOT);
	if (o->kind == OP_BIND)
		snprintf(buf, cap, "bind %s onto %s", o->src + strlen(OLDROOT), *dst ? dst : "/");
	else
		snprintf(buf, cap, "%s %s", verbs[o->kind], *dst ? dst : "/");
	return buf;
}

void kft_mountns_free(kft_mountns *ns)
{
	if (!ns)
		return;
	for (size_t i = 0; i < ns->n; i++) {
		free(ns->ops[i].src);
		free(ns->ops[i].dst);
	}
	free(ns->ops);
	for (size_t i = 0; i < ns->n_mounts; i++) {
		free(ns->mounts[i].mount_path);
		free(ns->mounts[i].host_path);
	}
	free(ns->mounts);
	free_list(ns->shadowed, ns->n_shadowed);
	free(ns);
}

/* ---- entering it (in the child: system calls only) ------------------------ */

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = strlen(text);
	ssize_t w = write(fd, text, n);
	int saved = errno;
	close(fd);
	errno = saved;
	return w == (ssize_t)n ? 0 : -1;
}

static int make_namespaces(const kft_mountns *ns)
{
	int userns = ns->userns;
	if (unshare(CLONE_NEWNS | (userns ? CLONE_NEWUSER : 0)) != 0) {
		/* root without CAP_SYS_ADMIN (a container's root) still may
		 * have a user namespace of its own */
		if (userns || errno != EPERM || unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
			return -1;
		userns = 1;
	}
	if (userns && (write_file("/proc/self/setgroups", "deny") != 0 ||
	               write_file("/proc/self/uid_map", ns->uid_map) != 0 ||
	               write_file("/proc/self/gid_map", ns->gid_map) != 0))
		return -1;
	return mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL);
}

static int pivot(const char *new_root, const char *put_old)
{
	return (int)syscall(SYS_pivot_root, new_root, put_old);
}

/* The intermediate root: a tmpfs over /tmp holding newroot/ and, after the
 * pivot, the host's tree at oldroot/. */
static int stage_roots(void)
{
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0 ||
	    chdir("/tmp") != 0 || mkdir("newroot", 0755) != 0 || mkdir("oldroot", 0755) != 0 ||
	    pivot(".", "oldroot") != 0 || chdir("/") != 0)
		return -1;
	return 0;
}

/* Read-only again, keeping the flags a user namespace may not drop. */
static int remount_read_only(const char *dst)
{
	struct statvfs sv;
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
	if (statvfs(dst, &sv) != 0)
		return -1;
	if (sv.f_flag & ST_NOSUID)
		flags |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		flags |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		flags |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		flags |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		flags |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		flags |= MS_RELATIME;
	return mount(NULL, dst, NULL, flags, NULL);
}

static int run_op(const op *o)
{
	int fd;
	switch (o->kind) {
	case OP_DIR: return mkdir(o->dst, 0755) == 0 || errno == EEXIST ? 0 : -1;
	case OP_FILE:
		fd = open(o->dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		return fd < 0 ? -1 : close(fd);
	case OP_LINK: return symlink(o->src, o->dst);
	case OP_BIND: return mount(o->src, o->dst, NULL, MS_BIND | MS_REC, NULL);
	case OP_TMPFS: return mount("tmpfs", o->dst, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
	case OP_RDONLY: return remount_read_only(o->dst);
	}
	errno = EINVAL;
	return -1;
}

int kft_mountns_enter(const kft_mountns *ns, const char *cwd, int *failed_op)
{
	int dummy;
	if (!failed_op)
		failed_op = &dummy;
	*failed_op = KFT_MOUNTNS_STEP_NAMESPACES;
	if (make_namespaces(ns) != 0)
		return -1;
	*failed_op = KFT_MOUNTNS_STEP_ROOT;
	if (stage_roots() != 0)
		return -1;
	for (size_t i = 0; i < ns->n; i++) {
		if (run_op(&ns->ops[i]) != 0) {
			*failed_op = (int)i;
			return -1;
		}
	}
	*failed_op = KFT_MOUNTNS_STEP_ROOT;
	if (chdir(NEWROOT) != 0 || pivot(".", ".") != 0 || umount2(".", MNT_DETACH) != 0 ||
	    chdir("/") != 0)
		return -1;
	*failed_op = KFT_MOUNTNS_STEP_CWD;
	if (cwd && chdir(cwd) != 0)
		return -1;
	return 0;
}
