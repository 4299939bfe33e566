/*
 * procutil.c - small process, clock and file helpers of the local backend
 * (see local_internal.h).
 *
 * The one idea worth stating: a process is identified by pid *and* start
 * time. /proc/PID/stat field 22 is the start time in clock ticks since boot;
 * the command name in field 2 may hold spaces and parentheses, so fields are
 * counted from the last ')' rather than split naively.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "local/local_internal.h"
#include "util/strbuf.h"
#include "util/clock.h"

#define RMTREE_MAX_DEPTH 64

/* /proc/PID/stat into buf (size bytes), returning where its fields after
 * the command name start (field 3, the state), or NULL. The command name
 * may hold spaces and parentheses: the last ')' ends it. */
static char *proc_stat(pid_t pid, char *buf, size_t size)
{
	char path[64];
	if (pid <= 0)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] && p[3] == ' ' ? p + 2 : NULL;
}

/* Field n (n > 3) of a /proc/PID/stat whose field 3 starts at p, or NULL. */
static char *stat_field(char *p, int n)
{
	for (int field = 3; p && field < n; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p;
}

int kft_local_proc_ticks(pid_t pid, long long *ticks, bool *zombie)
{
	char buf[1024];
	char *p = proc_stat(pid, buf, sizeof(buf));
	char state = p ? *p : '\0';
	if (!(p = stat_field(p, 22))) /* the start time */
		return -1;
	*ticks = strtoll(p, NULL, 10);
	if (zombie)
		*zombie = state == 'Z' || state == 'X';
	return 0;
}

int kft_local_proc_cpu(pid_t pid)
{
	char buf[1024];
	char *p = stat_field(proc_stat(pid, buf, sizeof(buf)), 39); /* the processor */
	return p && *p >= '0' && *p <= '9' ? atoi(p) : -1;
}

int kft_local_proc_is(pid_t pid, long long ticks)
{
	long long t;
	bool zombie;
	return kft_local_proc_ticks(pid, &t, &zombie) == 0 && !zombie && t == ticks;
}

int kft_local_kill_group(pid_t pgid, long long ticks)
{
	long long t;
	if (pgid <= 1)
		return 0;
	if (kft_local_proc_ticks(pgid, &t, NULL) == 0 && t != ticks)
		return 0; /* the number belongs to another process now */
	return kill(-pgid, SIGKILL) == 0;
}

int kft_local_free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

char *kft_local_job_dir_of(const char *state_dir, const char *ns, const char *name)
{
	char *out = NULL;
	if (asprintf(&out, "%s/jobs/%s/%s", state_dir, ns && *ns ? ns : "default", name) < 0)
		return NULL;
	return out;
}

static int rm_at(int dirfd, const char *name, const char *path, int depth, kft_error *err);

static int rm_children(int fd, const char *path, int depth, kft_error *err)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int rc = 0;
	if (!d) {
		close(fd);
		return kft_error_set(err, KFT_EIO, "cannot read %s: %s", path, strerror(errno));
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		kft_strbuf b;
		kft_strbuf_init(&b);
		kft_strbuf_printf(&b, "%s/%s", path, de->d_name);
		rc = rm_at(dirfd(d), de->d_name, kft_strbuf_str(&b), depth + 1, err);
		kft_strbuf_free(&b);
	}
	closedir(d);
	return rc;
}

static int rm_at(int dirfd, const char *name, const char *path, int depth, kft_error *err)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0
		                       : kft_error_set(err, KFT_EIO, "cannot remove %s: %s", path,
		                                       strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		if (depth > RMTREE_MAX_DEPTH)
			return kft_error_set(err, KFT_ELIMIT, "cannot remove %s: nested too deep",
			                     path);
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			return 0; /* removed meanwhile (two deletes at once): done */
		if (fd < 0)
			return kft_error_set(err, KFT_EIO, "cannot remove %s: %s", path,
			                     strerror(errno));
		(void)fchmod(fd, 0700); /* a read-only volume dir must still be emptied */
		int rc = rm_children(fd, path, depth, err);
		if (rc)
			return rc;
	}
	if (unlinkat(dirfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT)
		return kft_error_set(err, KFT_EIO, "cannot remove %s: %s", path, strerror(errno));
	return 0;
}

int kft_local_rmtree(const char *path, kft_error *err)
{
	return rm_at(AT_FDCWD, path, path, 0, err);
}

int kft_local_mkdir_under(const char *state_dir, const char *dir, kft_error *err)
{
	size_t base = strlen(state_dir);
	if (strncmp(dir, state_dir, base) != 0 || dir[base] != '/')
		return kft_error_set(err, KFT_EINVAL, "%s is not under the state directory %s", dir,
		                     state_dir);
	char *p = strdup(dir);
	if (!p)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = 0;
	for (char *c = p + base + 1; rc == 0; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		char saved = *c;
		struct stat sb;
		*c = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			rc = kft_error_set(err, KFT_EIO, "cannot create %s: %s", p,
			                   strerror(errno));
		else if (lstat(p, &sb) != 0)
			rc = kft_error_set(err, KFT_EIO, "%s: %s", p, strerror(errno));
		else if (S_ISLNK(sb.st_mode))
			rc = kft_error_set(
			        err, KFT_EIO,
			        "%s is a symbolic link: refusing to follow it in the state "
			        "directory",
			        p);
		else if (!S_ISDIR(sb.st_mode))
			rc = kft_error_set(err, KFT_EIO, "%s is not a directory", p);
		else if (sb.st_uid != geteuid())
			rc = kft_error_set(
			        err, KFT_EIO,
			        "%s is owned by uid %u, not by this user: refusing to use it", p,
			        (unsigned)sb.st_uid);
		*c = saved;
		if (!saved)
			break;
	}
	free(p);
	return rc;
}

int kft_local_kill_pods(kft_store *s, const char *ns, const char *name, kft_error *err)
{
	kft_pod_record *recs = NULL;
	size_t n = 0;
	int rc = kft_store_pods(s, ns, name, &recs, &n, err);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (recs[i].pid > 0)
			kft_local_kill_group(recs[i].pid, recs[i].start_ticks);
	kft_pod_records_free(recs, n);
	return rc;
}

char *kft_local_status_path(const char *state_dir, const char *ns, const char *name)
{
	char *out = NULL;
	if (asprintf(&out, "%s/jobs/%s/%s/trainer-status.json", state_dir,
	             ns && *ns ? ns : "default", name) < 0)
		return NULL;
	return out;
}

/* Whether /proc/PID/environ holds the exact entry `want`. */
static bool environ_has(pid_t pid, const char *want, char *buf, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		if (strcmp(buf + i, want) == 0)
			return true;
	return false;
}

#define ENVIRON_READ_MAX (256 * 1024)
#define MAX_KILLED       4096

int kft_local_kill_by_env(const char *status_path)
{
	char *want = NULL, *buf = malloc(ENVIRON_READ_MAX);
	pid_t killed[MAX_KILLED];
	int n = 0;
	DIR *d = opendir("/proc");
	if (!buf || !d || asprintf(&want, "KFTRAINER_STATUS_FILE=%s", status_path) < 0) {
		free(buf);
		if (d)
			closedir(d);
		return 0;
	}
	for (struct dirent *de; (de = readdir(d)) != NULL;) {
		pid_t pid = (pid_t)atoi(de->d_name);
		if (pid <= 1 || pid == getpid() || !environ_has(pid, want, buf, ENVIRON_READ_MAX))
			continue;
		long long t;
		if (kill(pid, SIGKILL) == 0 && n < MAX_KILLED &&
		    kft_local_proc_ticks(pid, &t, NULL) == 0)
			killed[n++] = pid;
	}
	closedir(d);
	free(buf);
	free(want);
	int64_t end = kft_clock_mono_ms() + 2000;
	for (int i = 0; i < n; i++) {
		long long t;
		bool zombie = false;
		while (kft_local_proc_ticks(killed[i], &t, &zombie) == 0 && !zombie &&
		       kft_clock_mono_ms() < end) {
			struct timespec ts = {0, 5 * 1000000L};
			nanosleep(&ts, NULL);
		}
	}
	return n;
}

/* The parent and state of pid from /proc/PID/stat (fields 4 and 3). */
static int proc_parent(pid_t pid, pid_t *ppid, char *state)
{
	char buf[1024];
	char *p = proc_stat(pid, buf, sizeof(buf));
	if (!p)
		return -1;
	*state = p[0];
	*ppid = (pid_t)strtol(p + 2, NULL, 10);
	return 0;
}

typedef struct proc_link {
	pid_t pid, ppid;
	bool mine; /* a descendant of the caller */
} proc_link;

/* Every process's parent, in *out (malloc'd), count in *n. */
static int proc_links(proc_link **out, size_t *n)
{
	size_t cap = 256;
	proc_link *v = malloc(cap * sizeof(*v));
	DIR *d = opendir("/proc");
	*n = 0;
	if (!v || !d) {
		free(v);
		if (d)
			closedir(d);
		return -1;
	}
	for (struct dirent *de; (de = readdir(d)) != NULL;) {
		pid_t pid = (pid_t)atoi(de->d_name), ppid;
		char state;
		if (pid <= 1 || proc_parent(pid, &ppid, &state) != 0 || state == 'Z' ||
		    state == 'X')
			continue;
		if (*n == cap) {
			proc_link *g = realloc(v, 2 * cap * sizeof(*v));
			if (!g)
				break;
			v = g;
			cap *= 2;
		}
		v[(*n)++] = (proc_link){.pid = pid, .ppid = ppid};
	}
	closedir(d);
	*out = v;
	return 0;
}

/* One round: marks the descendants of `self` (passes until nothing new is
 * marked; the chain is at most as long as the table) and SIGKILLs them. */
static int kill_round(pid_t self)
{
	proc_link *v;
	size_t n, found = 0;
	if (proc_links(&v, &n) != 0)
		return 0;
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (v[i].mine || v[i].pid == self)
				continue;
			bool parent_mine = v[i].ppid == self;
			for (size_t j = 0; j < n && !parent_mine; j++)
				parent_mine = v[j].mine && v[j].pid == v[i].ppid;
			if (parent_mine) {
				v[i].mine = grew = true;
				found += kill(v[i].pid, SIGKILL) == 0;
			}
		}
	}
	free(v);
	return (int)found;
}

int kft_local_kill_descendants(void)
{
	pid_t self = getpid();
	int total = 0, round;
	int64_t end = kft_clock_mono_ms() + 2000;
	do {
		round = kill_round(self);
		total += round;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (round) {
			struct timespec ts = {0, 5 * 1000000L};
			nanosleep(&ts, NULL);
		}
	} while (round && kft_clock_mono_ms() < end);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return total;
}

int kft_local_wait_gone(pid_t pid, long long ticks, int ms)
{
	int64_t end = kft_clock_mono_ms() + ms;
	for (;;) {
		if (!kft_local_proc_is(pid, ticks))
			return 1;
		if (kft_clock_mono_ms() >= end)
			return 0;
		struct timespec ts = {0, 10 * 1000000L};
		nanosleep(&ts, NULL);
	}
}
