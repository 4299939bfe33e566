/*
 * guard.c - which plugin a thread runs, and the fatal-signal handler that
 * names it (see guard.h).
 *
 * The handler only reads the thread's record and write(2)s a line built in
 * a fixed buffer (both async-signal-safe), then restores the default action
 * and raises the signal again, so the process ends as it would have without
 * us: same signal, same core dump.
 */
#include "framework/guard.h"

#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

typedef struct plugin_call {
	const char *name;
	const char *point;
} plugin_call;

static _Thread_local plugin_call current;
static const char *program = "kftrainer";

void kft_plugin_guard_enter(const char *name, const char *point)
{
	current.name = name;
	current.point = point;
}

void kft_plugin_guard_leave(void)
{
	current.name = NULL;
	current.point = NULL;
}

static const struct {
	int sig;
	const char *name;
} fatal[] = {{SIGSEGV, "SIGSEGV"},
             {SIGBUS, "SIGBUS"},
             {SIGILL, "SIGILL"},
             {SIGFPE, "SIGFPE"},
             {SIGABRT, "SIGABRT"}};

/* Appends s to buf (size n) at *len, truncating. */
static void put(char *buf, size_t n, size_t *len, const char *s)
{
	size_t k = s ? strlen(s) : 0;
	if (k > n - *len)
		k = n - *len;
	memcpy(buf + *len, s, k);
	*len += k;
}

static void on_fatal(int sig)
{
	const char *name = current.name, *point = current.point;
	if (name) {
		char line[512];
		size_t len = 0;
		const char *signame = "a fatal signal";
		for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
			if (fatal[i].sig == sig)
				signame = fatal[i].name;
		put(line, sizeof(line) - 1, &len, program);
		put(line, sizeof(line) - 1, &len, ": plugin ");
		put(line, sizeof(line) - 1, &len, name);
		put(line, sizeof(line) - 1, &len, " crashed (");
		put(line, sizeof(line) - 1, &len, signame);
		put(line, sizeof(line) - 1, &len, ") in its ");
		put(line, sizeof(line) - 1, &len, point);
		line[len++] = '\n';
		ssize_t w = write(STDERR_FILENO, line, len);
		(void)w;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

int kft_plugin_guard_install(const char *prog)
{
	program = prog;
	static char altstack[64 * 1024];
	stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack)};
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	int rc = sigaltstack(&ss, NULL);
	for (size_t i = 0; rc == 0 && i < sizeof(fatal) / sizeof(fatal[0]); i++)
		rc = sigaction(fatal[i].sig, &sa, NULL);
	return rc ? -1 : 0;
}
