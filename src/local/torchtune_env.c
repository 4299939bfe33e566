/*
 * torchtune_env.c - the check that a torchtune job's `tune` has the tested
 * versions behind it (see torchtune_env.h).
 *
 * The interpreter is the one the `tune` script starts: pip writes console
 * scripts with a "#!/path/to/python" line, or, where that path is too long
 * for the kernel, a "#!/bin/sh" line followed by "'''exec' "/path/to/python"
 * ...". It is asked with importlib.metadata, which reads the packages'
 * metadata without importing torch (a tenth of a second, not seconds).
 */
#include "local/torchtune_env.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"

#define MAX_PINS       16
#define REPORT_MAX     4096
#define ASK_TIMEOUT_MS 30000

/* Defined by the build (cmake/embed_text.cmake). */
extern const char kft_torchtune_requirements[];

extern char **environ;

/* argv: the config's name (or "-"), then the packages; prints "name version"
 * per package ("-" when missing) and "config yes|no" (whether torchtune's
 * distribution ships recipes/configs/NAME.yaml). */
static const char ASK_VERSIONS[] = "import sys, importlib.metadata as m\n"
                                   "for p in sys.argv[2:]:\n"
                                   "    try:\n"
                                   "        v = m.version(p)\n"
                                   "    except Exception:\n"
                                   "        v = '-'\n"
                                   "    print(p, v)\n"
                                   "if sys.argv[1] != '-':\n"
                                   "    try:\n"
                                   "        files = {str(f) for f in m.files('torchtune') or ()}\n"
                                   "    except Exception:\n"
                                   "        files = set()\n"
                                   "    print('config', 'yes' if 'recipes/configs/%s.yaml' % "
                                   "sys.argv[1] in files else 'no')\n";

/* ---- the pins ------------------------------------------------------------------ */

static int pin_line(const char *line, size_t len, kft_pin *pin)
{
	const char *eq = memchr(line, '=', len);
	if (!eq || eq + 1 >= line + len || eq[1] != '=' || eq == line)
		return -1;
	size_t nlen = (size_t)(eq - line), vlen = len - nlen - 2;
	if (nlen >= sizeof(pin->name) || vlen == 0 || vlen >= sizeof(pin->version))
		return -1;
	memcpy(pin->name, line, nlen);
	pin->name[nlen] = '\0';
	memcpy(pin->version, eq + 2, vlen);
	pin->version[vlen] = '\0';
	if (pin->version[0] < '0' || pin->version[0] > '9')
		return -1; /* a release number, as the metadata reports it */
	return strpbrk(pin->name, " \t<>!~;") || strpbrk(pin->version, " \t<>=!~;+") ? -1 : 0;
}

int kft_torchtune_pins_parse(const char *text, kft_pin *pins, size_t cap, kft_error *err)
{
	size_t n = 0;
	int lineno = 0;
	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *hash = memchr(p, '#', len);
		size_t use = hash ? (size_t)(hash - p) : len;
		while (use > 0 && (p[use - 1] == ' ' || p[use - 1] == '\t' || p[use - 1] == '\r'))
			use--;
		lineno++;
		if (use > 0) {
			if (n == cap)
				return kft_error_set(err, KFT_ELIMIT,
				                     "torchtune pins: more than %zu", cap);
			if (pin_line(p, use, &pins[n]) != 0)
				return kft_error_set(err, KFT_EPARSE,
				                     "torchtune pins: line %d: want name==version",
				                     lineno);
			for (size_t k = 0; k < n; k++)
				if (strcmp(pins[k].name, pins[n].name) == 0)
					return kft_error_set(
					        err, KFT_EPARSE,
					        "torchtune pins: line %d: %s pinned twice", lineno,
					        pins[n].name);
			n++;
		}
		p = end ? end + 1 : p + len;
	}
	return (int)n;
}

const char *kft_torchtune_install_command(void)
{
	static char cmd[1024];
	kft_pin pins[MAX_PINS];
	if (cmd[0])
		return cmd;
	int n = kft_torchtune_pins_parse(kft_torchtune_requirements, pins, MAX_PINS, NULL);
	size_t used = (size_t)snprintf(cmd, sizeof(cmd), "pip install");
	for (int i = 0; i < n && used < sizeof(cmd); i++)
		used += (size_t)snprintf(cmd + used, sizeof(cmd) - used, " %s==%s", pins[i].name,
		                         pins[i].version);
	return cmd;
}

/* ---- comparing ------------------------------------------------------------------ */

/* What the report says of package name: its version (without a local
 * label) into buf, "" when missing or not mentioned. */
static void reported(const char *report, const char *name, char *buf, size_t cap)
{
	size_t nlen = strlen(name);
	buf[0] = '\0';
	for (const char *p = report; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > nlen + 1 && strncmp(p, name, nlen) == 0 && p[nlen] == ' ') {
			const char *v = p + nlen + 1;
			size_t vlen = len - nlen - 1;
			const char *plus = memchr(v, '+', vlen);
			if (plus)
				vlen = (size_t)(plus - v);
			if (!(vlen == 1 && v[0] == '-'))
				snprintf(buf, cap, "%.*s", (int)vlen, v);
			return;
		}
		p = end ? end + 1 : p + len;
	}
}

int kft_torchtune_versions_check(const char *report, const kft_pin *pins, size_t n, kft_error *err)
{
	char diff[768] = "", have[64];
	size_t used = 0;
	for (size_t i = 0; i < n; i++) {
		reported(report, pins[i].name, have, sizeof(have));
		if (strcmp(have, pins[i].version) == 0 || used >= sizeof(diff))
			continue;
		used += (size_t)snprintf(diff + used, sizeof(diff) - used, "%s%s %s (wants %s)",
		                         used ? ", " : "", pins[i].name, have[0] ? have : "missing",
		                         pins[i].version);
	}
	return used ? kft_error_set(err, KFT_EINVAL, "%s", diff) : 0;
}

/* ---- finding and asking the interpreter ----------------------------------------- */

static const char *env_get(char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

/* `tune` on PATH into buf; -1 when there is none. */
static int find_tune(const char *path, char *buf, size_t cap)
{
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct stat st;
		int n = snprintf(buf, cap, "%.*s/tune", (int)(len ? len : 1), len ? p : ".");
		if (n > 0 && (size_t)n < cap && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(buf, X_OK) == 0)
			return 0;
		p = end ? end + 1 : p + len;
	}
	return -1;
}

/* The interpreter a pip console script starts, into buf; -1 when the file
 * is not such a script. */
static int script_interpreter(const char *script, char *buf, size_t cap)
{
	char head[8192];
	int fd = open(script, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, head, sizeof(head) - 1);
	if (fd >= 0)
		close(fd);
	if (n < 2 || head[0] != '#' || head[1] != '!')
		return -1;
	head[n] = '\0';
	const char *p = head + 2, *end;
	while (*p == ' ')
		p++;
	if (strncmp(p, "/bin/sh", 7) == 0) {
		const char *exec = strstr(p, "'''exec' \"");
		if (!exec)
			return -1;
		p = exec + strlen("'''exec' \"");
		end = strchr(p, '"');
	} else {
		end = p + strcspn(p, " \t\r\n");
	}
	if (!end || end == p || (size_t)(end - p) >= cap)
		return -1;
	memcpy(buf, p, (size_t)(end - p));
	buf[end - p] = '\0';
	return 0;
}

/* Reads fd to its end, or until the deadline, into buf. */
static size_t read_all(int fd, char *buf, size_t cap, int64_t deadline)
{
	size_t used = 0;
	for (;;) {
		int64_t left = deadline - kft_clock_mono_ms();
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		ssize_t n = read(fd, buf + used, cap - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used == cap - 1)
			break;
	}
	buf[used] = '\0';
	return used;
}

/* Runs python -c ASK_VERSIONS with the pins' names in env; its output into
 * report. Returns the exit status, or -1 when it could not run or took too
 * long (then it is killed). */
static int ask(const char *python, const char *config, const kft_pin *pins, int n, char *const *env,
               char *report, size_t cap)
{
	char *argv[MAX_PINS + 5] = {(char *)python, "-c", (char *)ASK_VERSIONS,
	                            (char *)(config ? config : "-")};
	for (int i = 0; i < n; i++)
		argv[4 + i] = (char *)pins[i].name;
	int out[2], status = -1;
	if (pipe2(out, O_CLOEXEC) != 0)
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int rc = posix_spawn(&pid, python, &fa, NULL, argv, env ? env : environ);
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	if (rc == 0) {
		read_all(out[0], report, cap, kft_clock_mono_ms() + ASK_TIMEOUT_MS);
		kill(pid, SIGKILL); /* done or too slow: it has nothing more to say */
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	close(out[0]);
	return rc == 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *pins_version(const kft_pin *pins, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(pins[i].name, name) == 0)
			return pins[i].version;
	return "?";
}

int kft_torchtune_env_check(char *const *env, const char *config, kft_error *err)
{
	const char *off = getenv(KFT_TORCHTUNE_CHECK_ENV);
	if (off && (strcmp(off, "off") == 0 || strcmp(off, "0") == 0))
		return 0;
	kft_pin pins[MAX_PINS];
	int n = kft_torchtune_pins_parse(kft_torchtune_requirements, pins, MAX_PINS, err);
	if (n < 0)
		return n;
	char tune[4096], python[4096], report[REPORT_MAX];
	const char *how = kft_torchtune_install_command();
	if (find_tune(env_get(env ? env : environ, "PATH"), tune, sizeof(tune)) != 0)
		return kft_error_set(
		        err, KFT_EINVAL,
		        "the trainer runs torchtune (`tune run`), and there is no `tune` "
		        "on the job's PATH: install the tested set with `%s` (or let "
		        "kftrainer.TrainerClient make its environment)",
		        how);
	if (script_interpreter(tune, python, sizeof(python)) != 0 ||
	    ask(python, config, pins, n, env, report, sizeof(report)) != 0)
		return kft_error_set(
		        err, KFT_EINVAL,
		        "the trainer runs torchtune (`tune run`), and %s is not a Python "
		        "console script whose interpreter says which torchtune it has: "
		        "install the tested set with `%s`",
		        tune, how);
	kft_error diff;
	if (kft_torchtune_versions_check(report, pins, (size_t)n, &diff) == 0) {
		if (!config || !strstr(report, "\nconfig no"))
			return 0;
		return kft_error_set(
		        err, KFT_EINVAL,
		        "the Torch plugin picked torchtune's config %s for this job (as "
		        "upstream's picks it for its nodes, processes and GPUs), and "
		        "torchtune %s does not ship it: give the job other numbers of "
		        "nodes or GPUs",
		        config, pins_version(pins, n, "torchtune"));
	}
	return kft_error_set(err, KFT_EINVAL,
	                     "the trainer runs torchtune (`tune run`) with %s, whose environment "
	                     "has %s: install the tested set with `%s` (or set %s=off to run "
	                     "yours)",
	                     tune, diff.message, how, KFT_TORCHTUNE_CHECK_ENV);
}
