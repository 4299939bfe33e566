/*
 * registry.c - the plugin registry: built-ins in their fixed order, then
 * plugins added at run time, from tables or from shared objects. Which
 * built-ins exist is the build's business (framework/builtins.h): this file
 * names none of them.
 *
 * A framework is an ordinary object (not a global), filled once when a
 * program starts and read-only afterwards, so several may coexist (tests do).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framework/builtins.h"
#include "framework/guard.h"
#include "kftrainer/framework.h"

#define MAX_PLUGINS 64

struct kft_framework {
	const kft_plugin *plugins[MAX_PLUGINS];
	size_t count;
	void *handles[MAX_PLUGINS]; /* dlopen handles of loaded shared objects */
	size_t nhandles;
};

int kft_framework_new(unsigned features, kft_framework **out, kft_error *err)
{
	kft_framework *fw = calloc(1, sizeof(*fw));
	*out = NULL;
	if (!fw)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (size_t i = 0; i < kft_builtins_count; i++) {
		unsigned gate = kft_builtins[i].feature;
		if ((features & gate) != gate)
			continue;
		int rc = kft_framework_add_plugin(fw, kft_builtins[i].plugin, err);
		if (rc != 0) {
			kft_framework_free(fw);
			return rc;
		}
	}
	*out = fw;
	return 0;
}

void kft_framework_free(kft_framework *fw)
{
	if (!fw)
		return;
	for (size_t i = 0; i < fw->nhandles; i++)
		dlclose(fw->handles[i]);
	free(fw);
}

int kft_framework_add_plugin(kft_framework *fw, const kft_plugin *p, kft_error *err)
{
	if (!p || !p->name || !*p->name)
		return kft_error_set(err, KFT_EINVAL, "a plugin must have a name");
	if (p->abi_version != KFT_PLUGIN_ABI_VERSION)
		return kft_error_set(err, KFT_EVERSION,
		                     "plugin %s was built for plugin ABI version %u, but this "
		                     "kftrainer provides version %u; rebuild it against this "
		                     "kftrainer's <kftrainer/plugin.h>",
		                     p->name, p->abi_version, KFT_PLUGIN_ABI_VERSION);
	for (size_t i = 0; i < fw->count; i++)
		if (strcmp(fw->plugins[i]->name, p->name) == 0)
			return kft_error_set(err, KFT_EINVAL,
			                     "a plugin named %s is already registered", p->name);
	if (fw->count == MAX_PLUGINS)
		return kft_error_set(err, KFT_ELIMIT, "too many plugins (at most %d)", MAX_PLUGINS);
	fw->plugins[fw->count++] = p;
	return 0;
}

/* Whether st (of `what`, a plugin file or one of its directories) could
 * have been written by someone other than us or root: owned by another
 * user, or writable by group or others (a directory with the sticky bit,
 * such as /tmp, lets them add entries but not replace ours). */
static int unsafe(const struct stat *st, int dir, const char *path, const char *what,
                  kft_error *err)
{
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return kft_error_set(err, KFT_EINVAL,
		                     "plugin %s is refused: %s belongs to user %u, not to this "
		                     "user or root",
		                     path, what, (unsigned)st->st_uid);
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(dir && (st->st_mode & S_ISVTX)))
		return kft_error_set(err, KFT_EINVAL,
		                     "plugin %s is refused: %s is writable by other users (mode "
		                     "%04o); keep plugins where only their owner or root can write",
		                     path, what, (unsigned)(st->st_mode & 07777));
	return 0;
}

/* Resolves path into real (PATH_MAX) and checks that nobody but this user
 * and root can have written the file or replaced it: the file and every
 * directory above it, as sshd's StrictModes checks authorized_keys. */
static int check_plugin_file(const char *path, char *real, kft_error *err)
{
	struct stat st;
	if (!realpath(path, real) || stat(real, &st) != 0)
		return kft_error_set(err, KFT_ENOTFOUND, "cannot load plugin %s: %s", path,
		                     strerror(errno));
	if (!S_ISREG(st.st_mode))
		return kft_error_set(err, KFT_EINVAL, "cannot load plugin %s: not a regular file",
		                     path);
	int rc = unsafe(&st, 0, path, "the file", err);
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", real);
	for (char *slash = strrchr(dir, '/'); rc == 0 && slash; slash = strrchr(dir, '/')) {
		slash[slash == dir] = '\0'; /* "/a/b" -> "/a", "/a" -> "/" */
		char what[PATH_MAX + 16];
		snprintf(what, sizeof(what), "its directory %s", dir);
		if (stat(dir, &st) != 0)
			return kft_error_set(err, KFT_EIO, "cannot load plugin %s: %s: %s", path,
			                     dir, strerror(errno));
		rc = unsafe(&st, 1, path, what, err);
		if (slash == dir)
			break;
	}
	return rc;
}

int kft_framework_load_plugin(kft_framework *fw, const char *path, kft_error *err)
{
	char real[PATH_MAX];
	if (fw->nhandles == MAX_PLUGINS)
		return kft_error_set(err, KFT_ELIMIT, "too many plugins (at most %d)", MAX_PLUGINS);
	int rc = check_plugin_file(path, real, err);
	if (rc)
		return rc;
	kft_plugin_guard_enter(path, "loading (its constructors and kft_plugin_entry)");
	void *h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
	kft_plugin_guard_leave();
	if (!h)
		return kft_error_set(err, KFT_ENOTFOUND, "cannot load plugin %s: %s", path,
		                     dlerror());
	kft_plugin_entry_fn entry;
	*(void **)&entry = dlsym(h, KFT_PLUGIN_SYMBOL);
	if (!entry) {
		dlclose(h);
		return kft_error_set(err, KFT_EINVAL,
		                     "%s is not a kftrainer plugin: it does not export %s", path,
		                     KFT_PLUGIN_SYMBOL);
	}
	kft_plugin_guard_enter(path, "loading (its constructors and kft_plugin_entry)");
	const kft_plugin *p = entry();
	kft_plugin_guard_leave();
	rc = kft_framework_add_plugin(fw, p, err);
	if (rc != 0) {
		char msg[KFT_ERROR_MESSAGE_MAX];
		snprintf(msg, sizeof(msg), "%s", err ? err->message : "");
		dlclose(h);
		return kft_error_set(err, rc, "%s: %s", path, msg);
	}
	fw->handles[fw->nhandles++] = h;
	return 0;
}

size_t kft_framework_plugin_count(const kft_framework *fw)
{
	return fw->count;
}

const kft_plugin *kft_framework_plugin_at(const kft_framework *fw, size_t i)
{
	return i < fw->count ? fw->plugins[i] : NULL;
}
