/*
 * curl_lazy.c - libcurl, loaded on first use instead of at process start.
 *
 * libcurl drags some thirty shared libraries into every process that links
 * it (GnuTLS, Kerberos, LDAP, SSH, RTMP ...): mapping and relocating them
 * was two thirds of the dynamic loader's work and about 15 ms of every
 * `kftrainer` start on a busy machine, although most verbs (and the local
 * supervisor, unless a job has initializers) never make an HTTP request.
 * The library therefore does not link libcurl; it defines the few curl_*
 * functions it calls here, and the first call opens libcurl with dlopen()
 * and forwards every call to the real function.
 *
 * The definitions are hidden: they bind the library's own calls and are
 * never exported, so a program that links libcurl itself keeps its own.
 * When libcurl cannot be loaded, every function fails the way it fails for
 * lack of memory or initialisation (NULL, CURLE_FAILED_INIT ...), and
 * curl_easy_strerror() says why, so callers report it through their usual
 * error paths. The three variadic setters take exactly one argument whose
 * type the option number encodes (curl.h's CURLOPTTYPE_* ranges), which is
 * how it is read here and passed on with its own type.
 */
#ifndef KFT_LINK_CURL /* the build links libcurl itself (KFT_LAZY_CURL=OFF) */

/* The setters are defined here, so curl.h's type-checking macros for calls
 * to them must not rename them. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#define HIDDEN __attribute__((visibility("hidden")))

#ifndef KFT_LIBCURL_SONAME
#define KFT_LIBCURL_SONAME "libcurl.so.4"
#endif

typedef void (*any_fn)(void);

static struct {
	CURLcode (*global_init)(long);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	void (*free)(void *);
	CURLSH *(*share_init)(void);
	CURLSHcode (*share_setopt)(CURLSH *, CURLSHoption, ...);
	CURLSHcode (*share_cleanup)(CURLSH *);
	CURLU *(*url)(void);
	void (*url_cleanup)(CURLU *);
	CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
	CURLUcode (*url_get)(CURLU *, CURLUPart, char **, unsigned int);
} real;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[256];

/* dlsym into a typed slot; sets *ok to 0 when the symbol is missing. */
static void bind_sym(void *lib, const char *name, void *slot, int *ok)
{
	void *sym = dlsym(lib, name);
	if (!sym) {
		snprintf(load_error, sizeof(load_error), "libcurl could not be loaded: %s",
		         dlerror());
		*ok = 0;
	}
	*(void **)slot = sym;
}

static void load(void)
{
	void *lib = dlopen(KFT_LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	int ok = lib != NULL;
	if (!lib) {
		snprintf(load_error, sizeof(load_error), "libcurl could not be loaded: %s",
		         dlerror());
		return;
	}
	bind_sym(lib, "curl_global_init", &real.global_init, &ok);
	bind_sym(lib, "curl_global_cleanup", &real.global_cleanup, &ok);
	bind_sym(lib, "curl_easy_init", &real.easy_init, &ok);
	bind_sym(lib, "curl_easy_cleanup", &real.easy_cleanup, &ok);
	bind_sym(lib, "curl_easy_reset", &real.easy_reset, &ok);
	bind_sym(lib, "curl_easy_perform", &real.easy_perform, &ok);
	bind_sym(lib, "curl_easy_setopt", &real.easy_setopt, &ok);
	bind_sym(lib, "curl_easy_getinfo", &real.easy_getinfo, &ok);
	bind_sym(lib, "curl_easy_strerror", &real.easy_strerror, &ok);
	bind_sym(lib, "curl_slist_append", &real.slist_append, &ok);
	bind_sym(lib, "curl_slist_free_all", &real.slist_free_all, &ok);
	bind_sym(lib, "curl_free", &real.free, &ok);
	bind_sym(lib, "curl_share_init", &real.share_init, &ok);
	bind_sym(lib, "curl_share_setopt", &real.share_setopt, &ok);
	bind_sym(lib, "curl_share_cleanup", &real.share_cleanup, &ok);
	bind_sym(lib, "curl_url", &real.url, &ok);
	bind_sym(lib, "curl_url_cleanup", &real.url_cleanup, &ok);
	bind_sym(lib, "curl_url_set", &real.url_set, &ok);
	bind_sym(lib, "curl_url_get", &real.url_get, &ok);
	loaded = ok; /* the library stays open for the life of the process */
}

/* Whether libcurl is there; loads it on the first call. Thread-safe. */
static int ready(void)
{
	pthread_once(&load_once, load);
	return loaded;
}

HIDDEN CURLcode curl_global_init(long flags)
{
	return ready() ? real.global_init(flags) : CURLE_FAILED_INIT;
}

HIDDEN void curl_global_cleanup(void)
{
	if (ready())
		real.global_cleanup();
}

HIDDEN CURL *curl_easy_init(void)
{
	return ready() ? real.easy_init() : NULL;
}

HIDDEN void curl_easy_cleanup(CURL *h)
{
	if (ready())
		real.easy_cleanup(h);
}

HIDDEN void curl_easy_reset(CURL *h)
{
	if (ready())
		real.easy_reset(h);
}

HIDDEN CURLcode curl_easy_perform(CURL *h)
{
	return ready() ? real.easy_perform(h) : CURLE_FAILED_INIT;
}

HIDDEN CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	va_list ap;
	CURLcode rc = CURLE_FAILED_INIT;
	if (!ready())
		return rc;
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = real.easy_setopt(h, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		rc = real.easy_setopt(h, opt, va_arg(ap, void *));
	else if (opt < CURLOPTTYPE_OFF_T)
		rc = real.easy_setopt(h, opt, va_arg(ap, any_fn));
	else if (opt < CURLOPTTYPE_BLOB)
		rc = real.easy_setopt(h, opt, va_arg(ap, curl_off_t));
	else
		rc = real.easy_setopt(h, opt, va_arg(ap, struct curl_blob *));
	va_end(ap);
	return rc;
}

/* Every CURLINFO_* takes a pointer to where the answer goes. */
HIDDEN CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	va_list ap;
	CURLcode rc = CURLE_FAILED_INIT;
	if (!ready())
		return rc;
	va_start(ap, info);
	rc = real.easy_getinfo(h, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

HIDDEN const char *curl_easy_strerror(CURLcode code)
{
	return ready() ? real.easy_strerror(code) : load_error;
}

HIDDEN struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
	return ready() ? real.slist_append(list, s) : NULL;
}

HIDDEN void curl_slist_free_all(struct curl_slist *list)
{
	if (ready())
		real.slist_free_all(list);
}

HIDDEN void curl_free(void *p)
{
	if (ready())
		real.free(p);
}

HIDDEN CURLSH *curl_share_init(void)
{
	return ready() ? real.share_init() : NULL;
}

HIDDEN CURLSHcode curl_share_setopt(CURLSH *sh, CURLSHoption opt, ...)
{
	va_list ap;
	CURLSHcode rc = CURLSHE_BAD_OPTION;
	if (!ready())
		return CURLSHE_NOT_BUILT_IN;
	va_start(ap, opt);
	switch (opt) {
	case CURLSHOPT_SHARE:
	case CURLSHOPT_UNSHARE: rc = real.share_setopt(sh, opt, va_arg(ap, int)); break;
	case CURLSHOPT_LOCKFUNC:
	case CURLSHOPT_UNLOCKFUNC: rc = real.share_setopt(sh, opt, va_arg(ap, any_fn)); break;
	case CURLSHOPT_USERDATA: rc = real.share_setopt(sh, opt, va_arg(ap, void *)); break;
	default: break;
	}
	va_end(ap);
	return rc;
}

HIDDEN CURLSHcode curl_share_cleanup(CURLSH *sh)
{
	return ready() ? real.share_cleanup(sh) : CURLSHE_INVALID;
}

HIDDEN CURLU *curl_url(void)
{
	return ready() ? real.url() : NULL;
}

HIDDEN void curl_url_cleanup(CURLU *u)
{
	if (ready())
		real.url_cleanup(u);
}

HIDDEN CURLUcode curl_url_set(CURLU *u, CURLUPart part, const char *content, unsigned int flags)
{
	return ready() ? real.url_set(u, part, content, flags) : CURLUE_OUT_OF_MEMORY;
}

HIDDEN CURLUcode curl_url_get(CURLU *u, CURLUPart part, char **out, unsigned int flags)
{
	return ready() ? real.url_get(u, part, out, flags) : CURLUE_OUT_OF_MEMORY;
}

#else
typedef int kft_curl_linked; /* C wants every file to declare something */
#endif /* KFT_LINK_CURL */
