/*
 * test_lazy_libs.c - libcurl loaded on first use (src/util/curl_lazy.c): it
 * is not mapped before the library calls it, and every forwarded call keeps
 * its arguments - each class of curl_easy_setopt argument (long, pointer,
 * callback, curl_off_t, blob), getinfo, the share interface and the URL API -
 * shown by a real request from libcurl to a libmicrohttpd daemon (linked
 * the ordinary way, as every unit test's fake server is).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <curl/curl.h>
#include <microhttpd.h>

/* dl_iterate_phdr callback: counts loaded objects whose path has the name. */
static int count_named(struct dl_phdr_info *info, size_t size, void *data)
{
	const char **name = data;
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, name[0]))
		name[1] = info->dlpi_name;
	return 0;
}

static int is_loaded(const char *name)
{
	const char *probe[2] = {name, NULL};
	dl_iterate_phdr(count_named, probe);
	return probe[1] != NULL;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
	static const char body[] = "hello from the lazy daemon";
	(void)cls, (void)url, (void)method, (void)version, (void)upload, (void)upload_size;
	(void)state;
	struct MHD_Response *r = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body,
	                                                         MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "X-Lazy", "yes");
	enum MHD_Result ok = MHD_queue_response(c, 203, r);
	MHD_destroy_response(r);
	return ok;
}

typedef struct sink {
	char buf[256];
	size_t len;
	int header_seen;
} sink;

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
	sink *s = userdata;
	size_t len = size * n;
	if (s->len + len < sizeof(s->buf)) {
		memcpy(s->buf + s->len, data, len);
		s->len += len;
	}
	return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata)
{
	sink *s = userdata;
	if (size * n >= 6 && strncasecmp(data, "X-Lazy", 6) == 0)
		s->header_seen = 1;
	return size * n;
}

/* Runs first: nothing has called libcurl yet in this process, so it is not
 * mapped. (Test programs link libmicrohttpd themselves for their fixtures,
 * so only its forwarding can be checked here.) */
static void test_curl_not_loaded_at_start(void **state)
{
	(void)state;
#ifndef KFT_LINK_CURL /* built with KFT_LAZY_CURL=OFF: linked, so loaded */
	assert_false(is_loaded("libcurl"));
#endif
}

static unsigned start_daemon(struct MHD_Daemon **d)
{
	*d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL, answer,
	                      NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
	assert_non_null(*d);
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(*d, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	assert_true(info->port > 0);
	return info->port;
}

/* The URL API builds the address the request goes to. */
static char *daemon_url(unsigned port)
{
	char portstr[16], *url = NULL;
	snprintf(portstr, sizeof(portstr), "%u", port);
	CURLU *u = curl_url();
	assert_non_null(u);
	assert_int_equal(curl_url_set(u, CURLUPART_URL, "http://127.0.0.1/lazy?x=1", 0), CURLUE_OK);
	assert_int_equal(curl_url_set(u, CURLUPART_PORT, portstr, 0), CURLUE_OK);
	assert_int_equal(curl_url_get(u, CURLUPART_URL, &url, 0), CURLUE_OK);
	curl_url_cleanup(u);
	return url;
}

static void test_request_round_trip(void **state)
{
	(void)state;
	struct MHD_Daemon *d;
	unsigned port = start_daemon(&d);
	assert_int_equal(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	assert_true(is_loaded("libcurl"));
	char *url = daemon_url(port);
	CURLSH *sh = curl_share_init();
	assert_non_null(sh);
	assert_int_equal(curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS), CURLSHE_OK);
	assert_int_equal(curl_share_setopt(sh, CURLSHOPT_USERDATA, NULL), CURLSHE_OK);
	CURL *h = curl_easy_init();
	assert_non_null(h);
	sink s = {.len = 0};
	struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: text/plain");
	static const char blob_bytes[] = "not a certificate";
	struct curl_blob blob = {(void *)blob_bytes, sizeof(blob_bytes) - 1, CURL_BLOB_COPY};
	/* One option of each argument class. */
	assert_int_equal(curl_easy_setopt(h, CURLOPT_URL, url), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_SHARE, sh), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_WRITEDATA, &s), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_HEADERDATA, &s), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)1 << 20),
	                 CURLE_OK);
	/* A blob for a TLS option: accepted (copied), unused over plain HTTP. */
	assert_int_equal(curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob), CURLE_OK);
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	long code = 0;
	assert_int_equal(curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code), CURLE_OK);
	assert_int_equal(code, 203);
	s.buf[s.len] = '\0';
	assert_string_equal(s.buf, "hello from the lazy daemon");
	assert_true(s.header_seen);
	/* A limit below the body's size is honoured: the off_t got through. */
	curl_easy_reset(h);
	s.len = 0;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)5);
	assert_int_equal(curl_easy_perform(h), CURLE_FILESIZE_EXCEEDED);
	assert_string_equal(curl_easy_strerror(CURLE_OK), "No error");
	curl_easy_cleanup(h);
	curl_slist_free_all(hdrs);
	curl_share_cleanup(sh);
	curl_free(url);
	MHD_stop_daemon(d);
	curl_global_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_curl_not_loaded_at_start),
	        cmocka_unit_test(test_request_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
