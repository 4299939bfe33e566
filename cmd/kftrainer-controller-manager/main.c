/*
 * kftrainer-controller-manager - a drop-in for Kubeflow Trainer v2.3.0's
 * trainer-controller-manager: flags, then the configuration file, then the
 * manager (src/controller/). Exit status: 0 after SIGTERM/SIGINT, 1 when the
 * configuration is invalid or the manager fails (including a lost leader
 * lease), 2 for a command-line error, as Go's flag package exits.
 */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/controller.h"
#include "framework/guard.h"

#ifndef KFT_VERSION_STRING
#define KFT_VERSION_STRING "dev"
#endif

/*
 * glibc's allocator, set for a small resident set (measured with
 * bench/controller/run, 1,000 TrainJobs, five workers; see docs/deploy.md):
 *   - two arenas shared by every thread, not eight per core;
 *   - blocks of 16 KiB and more come from mmap: mbedTLS's two 16.7 KiB
 *     record buffers per API server connection, and curl's 41 KiB of TLS
 *     state per connection, 38 KiB of which is an entropy pool its threaded
 *     mbedTLS backend never uses. calloc does not clear fresh mapped pages,
 *     so the pages nobody writes are never resident (-0.4 MiB at the peak);
 *   - no per-thread caches of freed blocks (tcache: up to seven of each
 *     small size per thread, with some fifteen threads allocating): -0.6
 *     MiB. Only the GLIBC_TUNABLES environment variable, read at start,
 *     turns them off, so unless the caller set that variable the manager
 *     runs itself again with it (same process, same arguments) before doing
 *     anything else; if that fails it carries on with them.
 */
static void malloc_settings(char **argv)
{
	mallopt(M_ARENA_MAX, 2);
	mallopt(M_MMAP_THRESHOLD, 16 * 1024);
	if (getenv("GLIBC_TUNABLES"))
		return;
	if (setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1) == 0)
		execv("/proc/self/exe", argv);
	unsetenv("GLIBC_TUNABLES");
}

static void log_warnings(kft_logger *lg, const kft_cm_config *cfg)
{
	size_t i;
	json_t *w;
	json_array_foreach(cfg->warnings, i, w)
	        KFT_LOG(lg, KFT_LOG_WARN, "setup", json_string_value(w), NULL);
}

static int load_config(kft_logger *lg, const kft_cm_flags *flags, kft_cm_config *cfg, char **argv)
{
	kft_error err = {0};
#ifndef KFT_CM_STATIC
	(void)argv;
#endif
	KFT_LOG(lg, KFT_LOG_INFO, "setup", "Loading configuration",
	        json_pack("{s:s}", "configFile", flags->config_file ? flags->config_file : ""));
	if (kft_cm_config_defaults(cfg, &err) != 0 ||
	    (flags->config_file && kft_cm_config_load(cfg, flags->config_file, &err) != 0)) {
		KFT_LOG_ERR(lg, "setup", "Unable to load configuration", err.message, NULL);
		return 1;
	}
	if (kft_cm_flags_apply(flags, cfg, &err) != 0) {
		KFT_LOG_ERR(lg, "setup", "Unable to set feature gates from command line",
		            err.message, NULL);
		return 1;
	}
#ifdef KFT_CM_STATIC
	/* glibc's dlopen in a static executable cannot give a plugin this
	 * binary's kft_* and json_* symbols: the same manager linked
	 * dynamically, installed beside this one, takes over (same arguments),
	 * so a configured plugin list is all a platform team has to write. */
	if (json_array_size(cfg->plugins)) {
		char self[4096], sibling[4200];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n > 0) {
			self[n] = '\0';
			snprintf(sibling, sizeof(sibling), "%s-plugins", self);
			KFT_LOG(lg, KFT_LOG_INFO, "setup",
			        "Plugins configured; running the dynamically linked manager",
			        json_pack("{s:s}", "binary", sibling));
			execv(sibling, argv);
		}
		KFT_LOG_ERR(lg, "setup", "Unable to load plugins",
		            "this controller manager is linked statically and cannot load plugin "
		            "files, and kftrainer-controller-manager-plugins (the same manager, "
		            "linked dynamically) is not installed beside it",
		            json_pack("{s:O}", "plugins", cfg->plugins));
		return 1;
	}
#endif
	log_warnings(lg, cfg);
	return 0;
}

int main(int argc, char **argv)
{
	kft_cm_flags flags;
	kft_error err = {0};
	signal(SIGPIPE, SIG_IGN);
	kft_plugin_guard_install("kftrainer-controller-manager");
	malloc_settings(argv);
	if (kft_cm_flags_parse(argc, argv, &flags, &err) != 0) {
		fprintf(stderr, "%s\n%s", err.message, kft_cm_usage());
		return 2;
	}
	if (flags.help) {
		fputs(kft_cm_usage(), stdout);
		return 0;
	}
	if (flags.version) {
		printf("kftrainer-controller-manager %s\n", KFT_VERSION_STRING);
		return 0;
	}
	kft_logger *lg = kft_logger_new(&flags.log, stderr);
	if (!lg) {
		fputs("kftrainer-controller-manager: out of memory\n", stderr);
		return 1;
	}
	kft_cm_config cfg;
	int status = load_config(lg, &flags, &cfg, argv);
	if (status == 0 && kft_cm_run(&flags, &cfg, lg, &err) != 0) {
		KFT_LOG_ERR(lg, "setup", "Could not run manager", err.message, NULL);
		status = 1;
	}
	kft_cm_config_free(&cfg);
	kft_logger_free(lg);
	return status;
}
