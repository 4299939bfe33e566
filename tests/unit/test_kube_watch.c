/*
 * test_kube_watch.c - the streaming watch (src/kube/watch.c) against the
 * scripted TLS server of kube_server_fixture.h.
 *
 * Behaviour pinned, from the API server's watch protocol
 * (k8s.io/apimachinery pkg/watch, apiserver endpoints/handlers/watch.go):
 * newline-delimited {"type","object"} events, ADDED/MODIFIED/DELETED/BOOKMARK,
 * bookmarks only when allowWatchBookmarks=true is asked; an ERROR event whose
 * object is a Status with code 410 ("too old resource version") means relist,
 * as does HTTP 410 on opening; the query carries watch=1, resourceVersion and
 * timeoutSeconds. Ours: events may arrive split anywhere; a cut connection,
 * a stall past the idle bound, a malformed event each end the watch with a
 * distinct status; an event the client cannot hold (oversized, a NUL in a
 * key) is skipped with a warning; a stop flag ends it from another thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kube_server_fixture.h"

#include "kube/kube.h"

static ks_pki g_pki;
static ks_server g_srv;
static kft_kube *g_kube;

typedef struct seen {
	int n;
	char types[16][16];
	char names[16][64];
	char kinds[16][32];
	int stop_after; /* return 7 from this event on (0: never) */
} seen;

static int on_event(void *ctx, const char *type, const json_t *obj)
{
	seen *s = ctx;
	if (s->n < 16) {
		json_t *md = json_object_get(obj, "metadata");
		const char *name = json_string_value(json_object_get(md, "name"));
		if (!name)
			name = json_string_value(json_object_get(md, "resourceVersion"));
		snprintf(s->types[s->n], 16, "%s", type);
		snprintf(s->names[s->n], 64, "%s", name ? name : "");
		const char *kind = json_string_value(json_object_get(obj, "kind"));
		snprintf(s->kinds[s->n], 32, "%s", kind ? kind : "");
	}
	s->n++;
	return s->stop_after && s->n >= s->stop_after ? 7 : 0;
}

typedef struct warned {
	int n;
	char last[512];
} warned;

static void on_warning(void *ctx, const char *message)
{
	warned *w = ctx;
	w->n++;
	snprintf(w->last, sizeof(w->last), "%s", message);
}

typedef struct nul_seen {
	int n;
	size_t annotation_len;
} nul_seen;

static int on_nul_event(void *ctx, const char *type, const json_t *obj)
{
	nul_seen *ns = ctx;
	(void)type;
	json_t *x = json_object_get(
	        json_object_get(json_object_get(obj, "metadata"), "annotations"), "x");
	if (x)
		ns->annotation_len = json_string_length(x);
	ns->n++;
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	kft_kube_config *cfg = NULL;
	if (ks_pki_make(&g_pki) || ks_start(&g_srv, &g_pki, 0) || kft_kube_config_new(&cfg, NULL))
		return -1;
	if (asprintf(&cfg->server, "https://127.0.0.1:%d", g_srv.port) < 0)
		return -1;
	cfg->ca_file = strdup(g_pki.ca.cert_path);
	int rc = kft_kube_new(cfg, &g_kube, NULL);
	kft_kube_config_free(cfg);
	return rc;
}

static int group_teardown(void **state)
{
	(void)state;
	kft_kube_free(g_kube);
	ks_stop(&g_srv);
	ks_pki_free(&g_pki);
	return 0;
}

static int each_setup(void **state)
{
	(void)state;
	ks_reset(&g_srv);
	return 0;
}

static int each_teardown(void **state)
{
	(void)state;
	ks_release(&g_srv); /* frees server threads held by KS_END_HOLD */
	return 0;
}

static const kft_gvr *trainjobs(void)
{
	return kft_gvr_lookup("trainer.kubeflow.org/v1alpha1", "TrainJob");
}

static void events_split_across_chunks(void **state)
{
	(void)state;
	ks_response r = {
	        .status = 200,
	        .chunk_delay_ms = 30,
	        .chunks = {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n{\"ty",
	                   "pe\":\"MODIFIED\",\"object\":{\"metadata\":{\"na", "me\":\"b\"}}}\n",
	                   "\n{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"TrainJob\","
	                   "\"apiVersion\":"
	                   "\"trainer.kubeflow.org/v1alpha1\",\"metadata\":{\"resourceVersion\":"
	                   "\"55\"}}}\n{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":"
	                   "\"c\"}}}\n",
	                   NULL},
	        .end = KS_END_CLEAN};
	ks_push(&g_srv, r);
	seen s = {0};
	kft_error err;
	kft_watch_opts o = {.resource_version = "42", .allow_bookmarks = 1, .timeout_seconds = 30};
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), "ns", &o, on_event, &s, NULL, &err),
	                 0);
	assert_int_equal(s.n, 4);
	const char *types[] = {"ADDED", "MODIFIED", "BOOKMARK", "DELETED"};
	const char *names[] = {"a", "b", "55", "c"};
	for (int i = 0; i < 4; i++) {
		assert_string_equal(s.types[i], types[i]);
		assert_string_equal(s.names[i], names[i]);
		assert_string_equal(s.kinds[i], "TrainJob"); /* filled in when absent */
	}
	const ks_request *q = ks_req(&g_srv, -1);
	assert_string_equal(q->path, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs");
	assert_string_equal(
	        q->query, "watch=1&resourceVersion=42&allowWatchBookmarks=true&timeoutSeconds=30");
}

static void error_event_410_is_gone(void **state)
{
	(void)state;
	ks_response r = {
	        .status = 200,
	        .chunks = {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
	                   "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":"
	                   "\"v1\",\"status\":\"Failure\",\"message\":\"too old resource "
	                   "version: 1 (300)\",\"reason\":\"Expired\",\"code\":410}}\n"
	                   "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"z\"}}}\n",
	                   NULL},
	        .end = KS_END_HOLD};
	ks_push(&g_srv, r);
	seen s = {0};
	kft_error err;
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), NULL, NULL, on_event, &s, NULL, &err),
	                 KFT_EGONE);
	assert_string_equal(err.message, "too old resource version: 1 (300)");
	assert_int_equal(s.n, 1); /* nothing after the ERROR is delivered */
	/* all namespaces: no namespace in the path */
	assert_string_equal(ks_req(&g_srv, -1)->path,
	                    "/apis/trainer.kubeflow.org/v1alpha1/trainjobs");

	ks_push_body(
	        &g_srv, 410,
	        "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"too old "
	        "resource version: 2 (300)\"}");
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), NULL, NULL, on_event, &s, NULL, &err),
	                 KFT_EGONE);
	assert_string_equal(err.message, "too old resource version: 2 (300)");
	ks_push_body(&g_srv, 403, "{\"kind\":\"Status\",\"code\":403,\"message\":\"forbidden\"}");
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), NULL, NULL, on_event, &s, NULL, &err),
	                 KFT_EDENIED);
}

static void cut_mid_stream(void **state)
{
	(void)state;
	ks_response r = {
	        .status = 200,
	        .chunk_delay_ms = 20,
	        .chunks = {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n",
	                   "{\"type\":\"MODIFIED\",\"obj", NULL},
	        .end = KS_END_CUT};
	ks_push(&g_srv, r);
	seen s = {0};
	kft_error err;
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), "ns", NULL, on_event, &s, NULL, &err),
	                 KFT_EUNAVAILABLE);
	assert_int_equal(s.n, 1);
	assert_non_null(strstr(err.message, "watch trainjobs: "));
}

typedef struct canceller {
	atomic_int *stop;
	int after_ms;
	double at;
} canceller;

static void *cancel_later(void *p)
{
	canceller *c = p;
	ks_sleep_ms(c->after_ms);
	c->at = ks_now();
	atomic_store(c->stop, 1);
	return NULL;
}

static void cancel_from_another_thread(void **state)
{
	(void)state;
	ks_response r = {
	        .status = 200,
	        .chunks = {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n",
	                   NULL},
	        .end = KS_END_HOLD};
	ks_push(&g_srv, r);
	atomic_int stop = 0;
	canceller c = {&stop, 300, 0};
	pthread_t t;
	seen s = {0};
	kft_error err;
	assert_int_equal(pthread_create(&t, NULL, cancel_later, &c), 0);
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), "ns", NULL, on_event, &s, &stop, &err),
	                 0);
	double done = ks_now();
	pthread_join(t, NULL);
	assert_int_equal(s.n, 1);
	/* the stream was silent: the stop is seen at the next progress tick */
	assert_true(done - c.at < 2.0);
}

static void callback_stops_the_watch(void **state)
{
	(void)state;
	ks_response r = {
	        .status = 200,
	        .chunks = {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
	                   "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}\n"
	                   "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"c\"}}}\n",
	                   NULL},
	        .end = KS_END_HOLD};
	ks_push(&g_srv, r);
	seen s = {.stop_after = 2};
	double t0 = ks_now();
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), "ns", NULL, on_event, &s, NULL, NULL),
	                 7);
	assert_int_equal(s.n, 2);
	assert_true(ks_now() - t0 < 2.0);
}

static void idle_connection_is_dead(void **state)
{
	(void)state;
	ks_response r = {.status = 200, .chunks = {"\n", NULL}, .end = KS_END_HOLD};
	ks_push(&g_srv, r);
	seen s = {0};
	kft_error err;
	kft_watch_opts o = {.idle_timeout_sec = 1};
	double t0 = ks_now();
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), "ns", &o, on_event, &s, NULL, &err),
	                 KFT_EUNAVAILABLE);
	assert_true(ks_now() - t0 < 5.0);
	assert_int_equal(s.n, 0);
}

static void malformed_and_oversized_events(void **state)
{
	(void)state;
	ks_response r = {.status = 200, .chunks = {"{\"type\":\"ADDED\"}\n", NULL}};
	ks_push(&g_srv, r);
	seen s = {0};
	kft_error err;
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), "ns", NULL, on_event, &s, NULL, &err),
	                 KFT_EPARSE);
	ks_response r2 = {.status = 200, .chunks = {"{\"type\":\"WEIRD\",\"object\":{}}\n", NULL}};
	ks_push(&g_srv, r2);
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), "ns", NULL, on_event, &s, NULL, &err),
	                 KFT_EPARSE);
	assert_non_null(strstr(err.message, "unknown event type \"WEIRD\""));

	/* one line beyond the bound, sent in 1 MiB pieces, then a good event:
	 * the big one is skipped with a warning, the watch goes on (an object
	 * the client cannot hold must not stop every watch of its kind) */
	size_t piece = 1024 * 1024;
	char *big = malloc(piece + 1);
	assert_non_null(big);
	memset(big, 'a', piece);
	big[piece] = '\0';
	ks_response r3 = {.status = 200};
	size_t pieces = KFT_KUBE_MAX_WATCH_EVENT_BYTES / piece + 2;
	assert_true(pieces + 2 < KS_MAX_CHUNKS);
	for (size_t i = 0; i < pieces; i++)
		r3.chunks[i] = big;
	r3.chunks[pieces] =
	        "\n{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"after\"}}}\n";
	ks_push(&g_srv, r3);
	warned w = {0};
	kft_kube_set_warning_handler(g_kube, on_warning, &w);
	assert_int_equal(kft_kube_watch(g_kube, trainjobs(), "ns", NULL, on_event, &s, NULL, &err),
	                 0);
	kft_kube_set_warning_handler(g_kube, NULL, NULL);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.names[0], "after");
	assert_int_equal(w.n, 1);
	assert_non_null(strstr(w.last, "event skipped: larger than"));
	/* the server thread may still be reading `big`: wait for it to finish */
	for (int i = 0; i < 500 && atomic_load(&g_srv.streams_open) > 0; i++)
		ks_sleep_ms(10);
	free(big);
}

/* A "\u0000" in a string is valid JSON that the API server stores (any user
 * who may write a ConfigMap can put one there) and Go's client decodes; it
 * reaches the callback intact. A NUL in an object key, which jansson cannot
 * hold, skips that one event with a warning and the watch goes on. */
static void nul_characters_are_data(void **state)
{
	(void)state;
	ks_response r = {
	        .status = 200,
	        .chunks = {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\","
	                   "\"annotations\":{\"x\":\"1\\u00002\"}}}}\n",
	                   "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\"},"
	                   "\"spec\":{\"k\\u0000\":1}}}\n",
	                   "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"c\"}}}\n",
	                   NULL}};
	ks_push(&g_srv, r);
	warned w = {0};
	nul_seen ns = {0};
	kft_kube_set_warning_handler(g_kube, on_warning, &w);
	kft_error err;
	assert_int_equal(
	        kft_kube_watch(g_kube, trainjobs(), "ns", NULL, on_nul_event, &ns, NULL, &err), 0);
	kft_kube_set_warning_handler(g_kube, NULL, NULL);
	assert_int_equal(ns.n, 2);
	assert_int_equal(ns.annotation_len, 3); /* "1", NUL, "2" */
	assert_int_equal(w.n, 1);
	assert_non_null(strstr(w.last, "watch trainjobs: event skipped: NUL byte in object key"));
}

/* ---- kft_kube_stream: a body that is not JSON, handed over as it comes ---- */

typedef struct collected {
	char buf[256];
	size_t len;
	int calls, stop_after;
} collected;

static int collect(void *ctx, const char *data, size_t len)
{
	collected *c = ctx;
	if (c->len + len < sizeof(c->buf)) {
		memcpy(c->buf + c->len, data, len);
		c->len += len;
	}
	return ++c->calls == c->stop_after ? 9 : 0;
}

static void stream_hands_over_the_body(void **state)
{
	(void)state;
	ks_response r = {.status = 200,
	                 .chunk_delay_ms = 20,
	                 .chunks = {"line 1\n", "line 2\npart", "ial\n", NULL},
	                 .end = KS_END_CLEAN};
	ks_push(&g_srv, r);
	collected c = {0};
	kft_error err;
	assert_int_equal(kft_kube_stream(g_kube, "/api/v1/namespaces/ns/pods/p/log?follow=true",
	                                 collect, &c, NULL, &err),
	                 0);
	assert_int_equal(c.len, strlen("line 1\nline 2\npartial\n"));
	assert_memory_equal(c.buf, "line 1\nline 2\npartial\n", c.len);
	const ks_request *q = ks_req(&g_srv, -1);
	assert_string_equal(q->path, "/api/v1/namespaces/ns/pods/p/log");
	assert_string_equal(q->query, "follow=true");
}

static void stream_error_is_the_servers(void **state)
{
	(void)state;
	ks_response r = {.status = 400,
	                 .body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
	                         "\"container \\\"node\\\" in pod \\\"p\\\" is waiting to "
	                         "start\",\"reason\":\"BadRequest\",\"code\":400}"};
	ks_push(&g_srv, r);
	collected c = {0};
	kft_error err;
	assert_int_equal(kft_kube_stream(g_kube, "/api/v1/namespaces/ns/pods/p/log", collect, &c,
	                                 NULL, &err),
	                 KFT_EINVAL);
	assert_int_equal(c.calls, 0); /* an error answer never reaches the sink */
	assert_non_null(strstr(err.message, "is waiting to start"));
}

static void stream_stops_when_asked(void **state)
{
	(void)state;
	ks_response r = {.status = 200, .chunks = {"first\n", NULL}, .end = KS_END_HOLD};
	ks_push(&g_srv, r);
	atomic_int stop = 0;
	canceller k = {&stop, 300, 0};
	pthread_t t;
	collected c = {0};
	kft_error err;
	assert_int_equal(pthread_create(&t, NULL, cancel_later, &k), 0);
	assert_int_equal(kft_kube_stream(g_kube, "/api/v1/namespaces/ns/pods/p/log?follow=true",
	                                 collect, &c, &stop, &err),
	                 0);
	double done = ks_now();
	pthread_join(t, NULL);
	assert_memory_equal(c.buf, "first\n", 6);
	assert_true(done - k.at < 2.0); /* a silent follow still ends */
}

static void stream_sink_ends_it(void **state)
{
	(void)state;
	ks_response r = {.status = 200,
	                 .chunk_delay_ms = 20,
	                 .chunks = {"a", "b", "c", NULL},
	                 .end = KS_END_HOLD};
	ks_push(&g_srv, r);
	collected c = {.stop_after = 2};
	double t0 = ks_now();
	assert_int_equal(kft_kube_stream(g_kube, "/api/v1/namespaces/ns/pods/p/log", collect, &c,
	                                 NULL, NULL),
	                 9);
	assert_int_equal(c.calls, 2);
	assert_true(ks_now() - t0 < 2.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(events_split_across_chunks, each_setup,
	                                        each_teardown),
	        cmocka_unit_test_setup_teardown(error_event_410_is_gone, each_setup, each_teardown),
	        cmocka_unit_test_setup_teardown(cut_mid_stream, each_setup, each_teardown),
	        cmocka_unit_test_setup_teardown(cancel_from_another_thread, each_setup,
	                                        each_teardown),
	        cmocka_unit_test_setup_teardown(stream_hands_over_the_body, each_setup,
	                                        each_teardown),
	        cmocka_unit_test_setup_teardown(stream_error_is_the_servers, each_setup,
	                                        each_teardown),
	        cmocka_unit_test_setup_teardown(stream_stops_when_asked, each_setup, each_teardown),
	        cmocka_unit_test_setup_teardown(stream_sink_ends_it, each_setup, each_teardown),
	        cmocka_unit_test_setup_teardown(callback_stops_the_watch, each_setup,
	                                        each_teardown),
	        cmocka_unit_test_setup_teardown(idle_connection_is_dead, each_setup, each_teardown),
	        cmocka_unit_test_setup_teardown(nul_characters_are_data, each_setup, each_teardown),
	        cmocka_unit_test_setup_teardown(malformed_and_oversized_events, each_setup,
	                                        each_teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
