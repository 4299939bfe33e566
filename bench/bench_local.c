/*
 * bench_local.c - how long the local backend takes to start a multi-node job,
 * against the floor of starting the same processes directly.
 *
 * The job is 4 nodes x 4 processes on torch-distributed. That runtime runs the
 * TrainJob's command once per node (torchrun's part is the command's), so the
 * command is this very program in "node" mode: it forks PET_NPROC_PER_NODE
 * copies of itself in "rank" mode. A rank writes its global rank as one line
 * to a FIFO and exits; the measurement ends when all 16 lines have been read.
 * Nodes then block on a second FIFO until the bench closes it, so the job and
 * its supervisor are still there to be measured: the supervisor's peak RSS is
 * its VmHWM (/proc/PID/status) read at that moment, when every pod has been
 * started and recorded.
 *
 * Figures, each over several runs taken in rounds, one of each figure per
 * round so that the machine's drift reaches them alike (median, p10, p90):
 *   floor   fork+exec of the 16 rank processes from here;
 *   tree    fork+exec of 4 node processes that each fork+exec 4 ranks (the
 *           same process tree the job has, without kftrainer);
 *   train   from starting `kftrainer train` to the 16th rank's line, on a
 *           state directory already in use (one job ran in it before, as
 *           for every `train` but a user's first): the headline;
 *   first   the same with a fresh state directory each run, which also
 *           creates the store (SQLite's first writes, with their flushes).
 * Prints figures; never fails on time. Exits 1 only when a run cannot be
 * carried out at all; prints why and exits 0 when kftrainer has no `train`.
 *
 *   build/bench/bench_local [RUNS]      (KFTRAINER: the binary; default
 *                                        ../bin/kftrainer beside this one)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* the build defines it; standalone compiles need it too */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NODES   4
#define PROCS   4
#define RANKS   (NODES * PROCS)
#define WAIT_MS 120000

static char self_exe[PATH_MAX];

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- rank and node modes (run as the job's processes) -------------------- */

static int rank_main(const char *fifo, const char *rank)
{
	int fd = open(fifo, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	char line[32];
	int n = snprintf(line, sizeof(line), "%s\n", rank);
	/* One write of a few bytes to a FIFO is atomic: lines never interleave. */
	int rc = write(fd, line, (size_t)n) == n ? 0 : 1;
	close(fd);
	return rc;
}

static pid_t spawn_self(const char *mode, const char *a, const char *b)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(self_exe, self_exe, mode, a, b, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Blocks on fd (the release FIFO) until the bench closes its end (EOF), or
 * WAIT_MS passes. */
static void wait_release(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;
	while (poll(&p, 1, WAIT_MS) > 0 && read(fd, &c, 1) > 0)
		;
	close(fd);
}

static int node_main(const char *fifo, const char *release)
{
	const char *np = getenv("PET_NPROC_PER_NODE"), *nr = getenv("PET_NODE_RANK");
	int nproc = np ? atoi(np) : 1, node = nr ? atoi(nr) : 0, failed = 0;
	if (nproc < 1 || nproc > 256)
		return 2;
	/* Opened before any rank reports, so before the bench can close its end;
	 * O_NONBLOCK because the open must not wait for a writer. */
	int release_fd = open(release, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (release_fd < 0)
		return 2;
	pid_t kids[256];
	for (int i = 0; i < nproc; i++) {
		char r[16];
		snprintf(r, sizeof(r), "%d", node * nproc + i);
		kids[i] = spawn_self("--rank", fifo, r);
	}
	for (int i = 0; i < nproc; i++) {
		int st = 0;
		if (kids[i] < 0 || waitpid(kids[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			failed = 1;
	}
	wait_release(release_fd);
	return failed;
}

/* ---- the bench's side -----------------------------------------------------
 */

typedef struct run_dir {
	char root[PATH_MAX];
	char ranks[PATH_MAX + 16];   /* FIFO the ranks write to */
	char release[PATH_MAX + 16]; /* FIFO the nodes wait on */
	char state[PATH_MAX + 16];   /* kftrainer's state directory */
	int ranks_fd, release_fd;    /* both held O_RDWR: opens never block, no early EOF */
} run_dir;

static int run_dir_open(run_dir *d)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(d->root, sizeof(d->root), "%s/kft-bench-local-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(d->root))
		return -1;
	snprintf(d->ranks, sizeof(d->ranks), "%s/ranks", d->root);
	snprintf(d->release, sizeof(d->release), "%s/release", d->root);
	snprintf(d->state, sizeof(d->state), "%s/state", d->root);
	if (mkfifo(d->ranks, 0600) != 0 || mkfifo(d->release, 0600) != 0)
		return -1;
	d->ranks_fd = open(d->ranks, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	d->release_fd = open(d->release, O_RDWR | O_CLOEXEC);
	return d->ranks_fd >= 0 && d->release_fd >= 0 ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

static void release_nodes(run_dir *d)
{
	if (d->release_fd >= 0)
		close(d->release_fd);
	d->release_fd = -1;
}

static void run_dir_close(run_dir *d)
{
	release_nodes(d);
	if (d->ranks_fd >= 0)
		close(d->ranks_fd);
	d->ranks_fd = -1;
	nftw(d->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Reads rank lines until all RANKS distinct ranks have reported. 0, or -1 on
 * timeout or a malformed line. */
static int await_ranks(int fd)
{
	char buf[512];
	size_t len = 0;
	unsigned seen = 0, want = (1u << RANKS) - 1;
	double deadline = now_ms() + WAIT_MS;
	while (seen != want) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int left = (int)(deadline - now_ms());
		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -1;
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			continue;
		len += (size_t)n;
		buf[len] = '\0';
		char *nl, *start = buf;
		while ((nl = strchr(start, '\n'))) {
			int r = atoi(start);
			if (r < 0 || r >= RANKS)
				return -1;
			seen |= 1u << r;
			start = nl + 1;
		}
		len = strlen(start);
		memmove(buf, start, len);
	}
	return 0;
}

static int reap_all(pid_t *pids, int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st = 0;
		if (pids[i] <= 0 || waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad = 1;
	}
	return bad ? -1 : 0;
}

static double floor_run(run_dir *d)
{
	pid_t pids[RANKS];
	double t0 = now_ms();
	for (int i = 0; i < RANKS; i++) {
		char r[16];
		snprintf(r, sizeof(r), "%d", i);
		pids[i] = spawn_self("--rank", d->ranks, r);
	}
	int rc = await_ranks(d->ranks_fd);
	double t = now_ms() - t0;
	return reap_all(pids, RANKS) == 0 && rc == 0 ? t : -1;
}

static double tree_run(run_dir *d)
{
	pid_t pids[NODES];
	char n[16];
	snprintf(n, sizeof(n), "%d", PROCS);
	setenv("PET_NPROC_PER_NODE", n, 1);
	double t0 = now_ms();
	for (int i = 0; i < NODES; i++) {
		snprintf(n, sizeof(n), "%d", i);
		setenv("PET_NODE_RANK", n, 1);
		pids[i] = spawn_self("--node", d->ranks, d->release);
	}
	int rc = await_ranks(d->ranks_fd);
	double t = now_ms() - t0;
	unsetenv("PET_NODE_RANK");
	unsetenv("PET_NPROC_PER_NODE");
	release_nodes(d);
	return reap_all(pids, NODES) == 0 && rc == 0 ? t : -1;
}

/* Runs kftrainer with argv (NULL-terminated) on state directory `state`,
 * output discarded. Returns its exit status, or -1. */
static int kft_run(const char *kft, const char *state, char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		int dn = open("/dev/null", O_WRONLY);
		if (dn >= 0) {
			dup2(dn, STDOUT_FILENO);
			dup2(dn, STDERR_FILENO);
		}
		setenv("KFTRAINER_STATE_DIR", state, 1);
		execv(kft, argv);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Whether /proc/PID/cmdline has the word `word` and an argument containing
 * `needle`. */
static int cmdline_has(const char *pid, const char *word, const char *needle)
{
	char path[300], buf[4096];
	snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	int w = 0, s = 0;
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
		w |= strcmp(buf + i, word) == 0;
		s |= strstr(buf + i, needle) != NULL;
	}
	return w && s;
}

/* VmHWM in kB of process `pid` (a /proc entry name), or -1. */
static long hwm_kb_of(const char *pid)
{
	char path[300], line[128];
	long kb = -1;
	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	FILE *f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* The /proc entry name of a supervisor of state dir `state` (its command
 * line has "supervise" and the directory) into pid; 0, or -1 when none. */
static int find_supervisor(const char *state, char *pid, size_t size)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;
	int rc = -1;
	while (proc && rc < 0 && (e = readdir(proc)))
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' &&
		    cmdline_has(e->d_name, "supervise", state)) {
			snprintf(pid, size, "%s", e->d_name);
			rc = 0;
		}
	if (proc)
		closedir(proc);
	return rc;
}

/* VmHWM in kB of the supervisor of state dir `state`, or -1 when none. */
static long supervisor_hwm_kb(const char *state)
{
	char pid[256];
	return find_supervisor(state, pid, sizeof(pid)) == 0 ? hwm_kb_of(pid) : -1;
}

/* Waits (up to 5 s) until no supervisor of `state` is left: a deleted job's
 * supervisor may still be exiting, which the next figure's run must not
 * share the machine with. */
static void await_no_supervisor(const char *state)
{
	char pid[256];
	double deadline = now_ms() + 5000;
	while (find_supervisor(state, pid, sizeof(pid)) == 0 && now_ms() < deadline)
		usleep(1000);
}

/* How long each warm train run's `kftrainer train` itself took (it returns
 * once the job is stored and its supervisor started), for the report. */
static double cli_ms[64];
static int cli_runs;

/* One job run and deleted before the timed one: the state directory then
 * exists with its store, as for every `train` but a user's first. */
static int warm_state(run_dir *d, const char *kft)
{
	char *train[] = {(char *)kft, "train", "--runtime", "torch-distributed", "--name", "warm",
	                 "--",        "true",  NULL};
	char *wait_cmd[] = {(char *)kft, "wait",      "warm", "--for",
	                    "Complete",  "--timeout", "60s",  NULL};
	char *del[] = {(char *)kft, "delete", "warm", NULL};
	int rc = kft_run(kft, d->state, train);
	if (rc == 0)
		rc = kft_run(kft, d->state, wait_cmd);
	return kft_run(kft, d->state, del) == 0 && rc == 0 ? 0 : -1;
}

static double train_run(run_dir *d, const char *kft, long *hwm_kb)
{
	char *train[] = {(char *)kft, "train",  "--runtime", "torch-distributed",
	                 "--name",    "bench",  "--nodes",   "4",
	                 "--procs",   "4",      "--",        self_exe,
	                 "--node",    d->ranks, d->release,  NULL};
	char *wait_cmd[] = {(char *)kft, "wait",      "bench", "--for",
	                    "Complete",  "--timeout", "60s",   NULL};
	char *del[] = {(char *)kft, "delete", "bench", NULL};
	double t0 = now_ms();
	int rc = kft_run(kft, d->state, train);
	if (cli_runs < 64)
		cli_ms[cli_runs++] = now_ms() - t0;
	int ranks = rc == 0 ? await_ranks(d->ranks_fd) : -1;
	double t = now_ms() - t0;
	*hwm_kb = ranks == 0 ? supervisor_hwm_kb(d->state) : -1;
	release_nodes(d);
	int done = rc == 0 ? kft_run(kft, d->state, wait_cmd) : -1;
	kft_run(kft, d->state, del);
	if (rc != 0 || ranks != 0 || done != 0)
		fprintf(stderr, "bench_local: train exit %d, %s, wait exit %d\n", rc,
		        ranks == 0 ? "all ranks started" : "ranks missing", done);
	return rc == 0 && ranks == 0 && done == 0 ? t : -1;
}

/* ---- reporting and main ---------------------------------------------------
 */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts samples and prints one line; returns the median. */
static double report(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	printf("%-46s median %8.2f ms   p10 %8.2f ms   p90 %8.2f ms   (n=%d)\n", what, v[n / 2],
	       v[n / 10], v[(n * 9) / 10], n);
	return v[n / 2];
}

static void find_kftrainer(char *out, size_t size)
{
	const char *env = getenv("KFTRAINER");
	if (env && *env) {
		snprintf(out, size, "%s", env);
		return;
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", self_exe);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	snprintf(out, size, "%s/../bin/kftrainer", dir);
}

/* Whether kft has the local backend's `train` verb. */
static int has_train(const char *kft)
{
	char *help[] = {(char *)kft, "train", "--help", NULL};
	return kft_run(kft, "/nonexistent", help) == 0;
}

typedef double (*run_fn)(run_dir *d, const char *kft, long *hwm_kb);

static double floor_fn(run_dir *d, const char *kft, long *hwm)
{
	(void)kft;
	*hwm = -1;
	return floor_run(d);
}

static double tree_fn(run_dir *d, const char *kft, long *hwm)
{
	(void)kft;
	*hwm = -1;
	return tree_run(d);
}

static double warm_train_fn(run_dir *d, const char *kft, long *hwm)
{
	return warm_state(d, kft) == 0 ? train_run(d, kft, hwm) : -1;
}

/* One run of fn in a fresh directory: its time (ms), or -1; *mib gets the
 * supervisor's peak RSS when fn measures one. */
static double once(run_fn fn, const char *kft, double *mib)
{
	run_dir d = {.ranks_fd = -1, .release_fd = -1};
	long kb = -1;
	double t = -1;
	if (run_dir_open(&d) != 0)
		perror("bench_local: temporary directory");
	else
		t = fn(&d, kft, &kb);
	await_no_supervisor(d.state);
	run_dir_close(&d);
	if (mib)
		*mib = (double)kb / 1024.0;
	return t;
}

/* The figures are taken in rounds, one run of each per round (floor, tree,
 * first, train), not each figure's runs in a block: this VM's speed drifts by
 * tens of percent over minutes, and a block of floor runs taken before a block
 * of train runs would put that drift into their ratio. */
static int bench_main(int runs)
{
	char kft[PATH_MAX + 32];
	find_kftrainer(kft, sizeof(kft));
	if (!getenv("KFTRAINER_RUNTIMES"))
		setenv("KFTRAINER_RUNTIMES", KFT_SOURCE_DIR "/manifests/runtimes", 1);
	double floor_v[64], tree_v[64], train_v[64], first_v[64], hwm[64], ratio[64];
	printf("local backend: %d nodes x %d processes on torch-distributed, %d runs\n", NODES,
	       PROCS, runs);
	int train = has_train(kft);
	for (int i = 0; i < runs; i++) {
		floor_v[i] = once(floor_fn, kft, NULL);
		tree_v[i] = once(tree_fn, kft, NULL);
		if (floor_v[i] < 0 || tree_v[i] < 0) {
			fprintf(stderr, "bench_local: the floor runs failed\n");
			return 1;
		}
		if (!train)
			continue;
		first_v[i] = once(train_run, kft, NULL);
		cli_runs = i; /* the warm run's return time is the one reported */
		train_v[i] = once(warm_train_fn, kft, &hwm[i]);
		if (first_v[i] < 0 || train_v[i] < 0) {
			fprintf(stderr, "bench_local: a kftrainer run failed\n");
			return 1;
		}
		ratio[i] = train_v[i] / floor_v[i];
	}
	double fl = report("floor: fork+exec of 16 ranks", floor_v, runs);
	report("tree: 4 nodes fork+exec 4 ranks each", tree_v, runs);
	if (!train) {
		printf("train: skipped: %s has no `train` verb (the local backend)\n", kft);
		return 0;
	}
	double tr = report("train: `kftrainer train` to 16 ranks started", train_v, runs);
	report("  of which `kftrainer train` until it returned", cli_ms, cli_runs);
	double first = report("first: the same, new state directory", first_v, runs);
	printf("train / floor (medians): %.2fx; first / floor %.2fx\n", tr / fl, first / fl);
	qsort(ratio, (size_t)runs, sizeof(double), cmp_double);
	printf("train / floor, each round's: median %.2fx   p10 %.2fx   p90 %.2fx\n",
	       ratio[runs / 2], ratio[runs / 10], ratio[(runs * 9) / 10]);
	qsort(hwm, (size_t)runs, sizeof(double), cmp_double);
	printf("supervisor peak RSS (VmHWM, all ranks running): median %.1f MiB, max "
	       "%.1f MiB\n",
	       hwm[runs / 2], hwm[runs - 1]);
	return 0;
}

int main(int argc, char **argv)
{
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 2;
	self_exe[n] = '\0';
	if (argc == 4 && strcmp(argv[1], "--rank") == 0)
		return rank_main(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "--node") == 0)
		return node_main(argv[2], argv[3]);
	int runs = argc > 1 ? atoi(argv[1]) : 9;
	if (runs < 1 || runs > 64) {
		fprintf(stderr, "usage: bench_local [RUNS (1-64)]\n");
		return 2;
	}
	/* A node killed mid-write must not take the bench down with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	return bench_main(runs);
}
