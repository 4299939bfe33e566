/*
 * mhd_lazy.c - libmicrohttpd, loaded on first use instead of at process
 * start (the reasons and the scheme are curl_lazy.c's).
 *
 * Only the controller manager serves HTTP, yet every program built on the
 * library mapped libmicrohttpd and its GnuTLS tree (a dozen libraries) at
 * start. The library defines the few MHD_* functions it calls here, hidden;
 * the first call opens libmicrohttpd and forwards to the real functions.
 * MHD_start_daemon's option list is passed on whole through
 * MHD_start_daemon_va. When the library cannot be loaded, starting a daemon
 * fails (NULL), which callers already report.
 */
#ifndef KFT_LINK_MHD /* the build links libmicrohttpd itself (KFT_LAZY_MHD=OFF) */

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

#define HIDDEN __attribute__((visibility("hidden")))

#ifndef KFT_LIBMHD_SONAME
#define KFT_LIBMHD_SONAME "libmicrohttpd.so.12"
#endif

static struct {
	struct MHD_Daemon *(*start_daemon_va)(unsigned int, uint16_t, MHD_AcceptPolicyCallback,
	                                      void *, MHD_AccessHandlerCallback, void *, va_list);
	void (*stop_daemon)(struct MHD_Daemon *);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType,
	                                               ...);
	enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
	                                  struct MHD_Response *);
	struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
	                                                    enum MHD_ResponseMemoryMode);
	void (*destroy_response)(struct MHD_Response *);
	enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
} real;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;

static void bind_sym(void *lib, const char *name, void *slot, int *ok)
{
	void *sym = dlsym(lib, name);
	if (!sym)
		*ok = 0;
	*(void **)slot = sym;
}

static void load(void)
{
	void *lib = dlopen(KFT_LIBMHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	int ok = lib != NULL;
	if (!lib)
		return;
	bind_sym(lib, "MHD_start_daemon_va", &real.start_daemon_va, &ok);
	bind_sym(lib, "MHD_stop_daemon", &real.stop_daemon, &ok);
	bind_sym(lib, "MHD_get_daemon_info", &real.get_daemon_info, &ok);
	bind_sym(lib, "MHD_queue_response", &real.queue_response, &ok);
	bind_sym(lib, "MHD_create_response_from_buffer", &real.create_response_from_buffer, &ok);
	bind_sym(lib, "MHD_destroy_response", &real.destroy_response, &ok);
	bind_sym(lib, "MHD_add_response_header", &real.add_response_header, &ok);
	loaded = ok; /* the library stays open for the life of the process */
}

/* Whether libmicrohttpd is there; loads it on the first call. Thread-safe. */
static int ready(void)
{
	pthread_once(&load_once, load);
	return loaded;
}

HIDDEN struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
                                           MHD_AcceptPolicyCallback apc, void *apc_cls,
                                           MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	va_list ap;
	struct MHD_Daemon *d = NULL;
	if (!ready())
		return NULL;
	va_start(ap, dh_cls);
	d = real.start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
	va_end(ap);
	return d;
}

HIDDEN void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
	if (ready())
		real.stop_daemon(daemon);
}

/* No info type the library asks for takes an argument. */
HIDDEN const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
                                                       enum MHD_DaemonInfoType info_type, ...)
{
	return ready() ? real.get_daemon_info(daemon, info_type) : NULL;
}

HIDDEN enum MHD_Result MHD_queue_response(struct MHD_Connection *connection,
                                          unsigned int status_code, struct MHD_Response *response)
{
	return ready() ? real.queue_response(connection, status_code, response) : MHD_NO;
}

HIDDEN struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                            enum MHD_ResponseMemoryMode mode)
{
	return ready() ? real.create_response_from_buffer(size, buffer, mode) : NULL;
}

HIDDEN void MHD_destroy_response(struct MHD_Response *response)
{
	if (ready())
		real.destroy_response(response);
}

HIDDEN enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header,
                                               const char *content)
{
	return ready() ? real.add_response_header(response, header, content) : MHD_NO;
}

#else
typedef int kft_mhd_linked; /* C wants every file to declare something */
#endif /* KFT_LINK_MHD */
