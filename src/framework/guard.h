/*
 * guard.h - naming the plugin a process crashed in (internal).
 *
 * Plugins are code from outside that runs inside our processes: a
 * CustomValidation that dereferences NULL takes `kftrainer validate`, a
 * `train` or the controller down with it. The framework cannot stop that,
 * but it can say whose fault it was: every call into a plugin (and the
 * loading of its shared object, which runs its constructors) is bracketed
 * by enter/leave, which record on the calling thread which plugin and which
 * extension point run. A process that installed the handlers (the CLI's and
 * the controller's main; a library never touches process-wide signal state)
 * prints, when a fatal signal comes during such a call,
 *
 *     PROG: plugin NAME crashed (SIGSEGV) in its CustomValidation
 *
 * on stderr, then dies of the same signal (its default action: a core
 * dump for the plugin's author, the signal in the exit status). A crash
 * outside a plugin prints nothing more than before.
 */
#ifndef KFT_FRAMEWORK_GUARD_H
#define KFT_FRAMEWORK_GUARD_H

/* Records that the calling thread runs `point` of plugin `name` (both
 * borrowed, and kept until leave: static names, or the loader's path). */
void kft_plugin_guard_enter(const char *name, const char *point);
void kft_plugin_guard_leave(void);

/*
 * Installs the handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT,
 * with an alternate signal stack for the calling thread (a plugin's runaway
 * recursion is reported too, when it happens on that thread). prog
 * ("kftrainer") starts the report; borrowed for the life of the process.
 * Call once, from main. 0, or -1 when a handler cannot be installed.
 */
int kft_plugin_guard_install(const char *prog);

#endif
