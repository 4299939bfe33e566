/*
 * test_fetch.c - downloads against an HTTP server this process starts.
 *
 * libmicrohttpd serves on 127.0.0.1 with a kernel-chosen port:
 *   /data.bin     DATA_SIZE deterministic bytes, honours "Range: bytes=N-"
 *   /norange.bin  the same bytes, always a full 200 (ignores Range)
 *   /api/..., .../resolve/main/...  a tiny Hugging Face hub (serve_hub)
 *   /my-bucket/...  S3, path-style, signatures checked (serve_s3)
 *   anything else 404
 * The handler records the last Range header so tests can check that a
 * resume really asked for the missing tail only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <microhttpd.h>
#include <openssl/evp.h>

#include "local/fetch.h"

#define DATA_SIZE 100000

static unsigned char g_data[DATA_SIZE];
static char g_data_sha[65];
static char g_last_range[128];
static char g_last_auth[256];
static int g_data_requests;
static int g_port;
static struct MHD_Daemon *g_daemon;

static unsigned long long range_start(const char *range)
{
	unsigned long long n = 0;
	if (range && sscanf(range, "bytes=%llu-", &n) == 1 && n < DATA_SIZE)
		return n;
	return 0;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *body)
{
	struct MHD_Response *r =
	        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_data(struct MHD_Connection *conn, int honour_range)
{
	const char *range = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Range");
	g_data_requests++;
	snprintf(g_last_range, sizeof(g_last_range), "%s", range ? range : "");
	unsigned long long start = honour_range ? range_start(range) : 0;
	if (honour_range && range && start == 0 && strcmp(range, "bytes=0-") != 0)
		return reply(conn, MHD_HTTP_RANGE_NOT_SATISFIABLE, "");
	struct MHD_Response *r = MHD_create_response_from_buffer(DATA_SIZE - start, g_data + start,
	                                                         MHD_RESPMEM_PERSISTENT);
	unsigned status = MHD_HTTP_OK;
	if (start > 0) {
		char cr[96];
		snprintf(cr, sizeof(cr), "bytes %llu-%d/%d", start, DATA_SIZE - 1, DATA_SIZE);
		MHD_add_response_header(r, "Content-Range", cr);
		status = MHD_HTTP_PARTIAL_CONTENT;
	}
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* The hub: one model repository with a small plain file and an LFS file in
 * a folder, one dataset, and one model whose file list tries to escape. */
static enum MHD_Result serve_hub(struct MHD_Connection *conn, const char *url)
{
	static char model[512];
	const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	snprintf(g_last_auth, sizeof(g_last_auth), "%s", auth ? auth : "");
	snprintf(model, sizeof(model),
	         "{\"id\":\"org/model\",\"siblings\":[{\"rfilename\":\"config.json\"},"
	         "{\"rfilename\":\"weights/model.bin\",\"lfs\":{\"sha256\":\"%s\","
	         "\"size\":%d}}]}",
	         g_data_sha, DATA_SIZE);
	if (!strcmp(url, "/api/models/org/model"))
		return reply(conn, MHD_HTTP_OK, model);
	if (!strcmp(url, "/api/datasets/org/ds"))
		return reply(conn, MHD_HTTP_OK, "{\"siblings\":[{\"rfilename\":\"train.csv\"}]}");
	if (!strcmp(url, "/api/models/org/evil"))
		return reply(conn, MHD_HTTP_OK, "{\"siblings\":[{\"rfilename\":\"../escape\"}]}");
	if (!strcmp(url, "/api/models/org/badjson"))
		return reply(conn, MHD_HTTP_OK, "{\"siblings\":");
	if (!strcmp(url, "/org/model/resolve/main/config.json"))
		return reply(conn, MHD_HTTP_OK, "{}");
	if (!strcmp(url, "/org/model/resolve/main/weights/model.bin"))
		return serve_data(conn, 1);
	if (!strcmp(url, "/datasets/org/ds/resolve/main/train.csv"))
		return reply(conn, MHD_HTTP_OK, "a,b\n1,2\n");
	return reply(conn, MHD_HTTP_NOT_FOUND, "{\"error\":\"Repository not found\"}");
}

/* S3 with path-style addressing: the server recomputes the signature from
 * what it received, so a Host or header mismatch shows up as a 403. */
static enum MHD_Result serve_s3(struct MHD_Connection *conn, const char *url)
{
#define HDR(name) MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name)
	const char *auth = HDR("Authorization");
	snprintf(g_last_auth, sizeof(g_last_auth), "%s", auth ? auth : "");
	kft_aws_credentials c = {.access_key_id = "AKIDTEST",
	                         .secret_access_key = "s3cr3t",
	                         .session_token = HDR("x-amz-security-token"),
	                         .region = "eu-west-3"};
	kft_sigv4_request req = {.method = "GET",
	                         .host = HDR("Host"),
	                         .path = url,
	                         .payload_hash = HDR("x-amz-content-sha256"),
	                         .amz_date = HDR("x-amz-date"),
	                         .service = "s3"};
#undef HDR
	kft_sigv4_result want;
	if (!auth || kft_sigv4_sign(&req, &c, &want, NULL) != 0 ||
	    strcmp(auth, want.authorization) != 0)
		return reply(conn, MHD_HTTP_FORBIDDEN, "<Error><Code>SignatureDoesNotMatch</Code>");
	if (strcmp(url, "/my-bucket/dir/obj.bin") != 0)
		return reply(conn, MHD_HTTP_NOT_FOUND, "<Error><Code>NoSuchKey</Code>");
	return serve_data(conn, 1);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
	(void)cls, (void)method, (void)version, (void)upload, (void)upload_size, (void)con_cls;
	if (!strcmp(url, "/data.bin"))
		return serve_data(conn, 1);
	if (!strcmp(url, "/norange.bin"))
		return serve_data(conn, 0);
	if (strncmp(url, "/my-bucket/", 11) == 0)
		return serve_s3(conn, url);
	if (strncmp(url, "/api/", 5) == 0 || strstr(url, "/resolve/main/"))
		return serve_hub(conn, url);
	static char missing[] = "no such object";
	struct MHD_Response *r =
	        MHD_create_response_from_buffer(strlen(missing), missing, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, r);
	MHD_destroy_response(r);
	return ret;
}

static void hex_sha256(const unsigned char *p, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned int len = 0;
	assert_true(EVP_Digest(p, n, md, &len, EVP_sha256(), NULL));
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static int group_setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < DATA_SIZE; i++)
		g_data[i] = (unsigned char)((i * 7 + 3) & 0xff);
	hex_sha256(g_data, DATA_SIZE, g_data_sha);
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g_daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handler, NULL,
	                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_END);
	if (!g_daemon)
		return -1;
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(g_daemon, MHD_DAEMON_INFO_BIND_PORT);
	g_port = info ? info->port : 0;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return g_port > 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	MHD_stop_daemon(g_daemon);
	curl_global_cleanup();
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int dir_setup(void **state)
{
	char *dir = strdup("/tmp/kft-fetch-XXXXXX");
	if (!dir || !mkdtemp(dir))
		return -1;
	*state = dir;
	return 0;
}

static int dir_teardown(void **state)
{
	nftw(*state, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(*state);
	return 0;
}

static void url_for(char *buf, size_t n, const char *path)
{
	snprintf(buf, n, "http://127.0.0.1:%d%s", g_port, path);
}

static void path_in(char *buf, size_t n, const char *dir, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

/* Reads a whole (small) file; returns its size or -1. */
static long slurp(const char *path, unsigned char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, cap, f);
	fclose(f);
	return (long)n;
}

static void assert_has_data(const char *path)
{
	static unsigned char got[DATA_SIZE + 16];
	assert_int_equal(slurp(path, got, sizeof(got)), DATA_SIZE);
	assert_memory_equal(got, g_data, DATA_SIZE);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

typedef struct progress_seen {
	int calls;
	uint64_t done, total;
} progress_seen;

static int record_progress(void *user, const char *name, uint64_t done, uint64_t total)
{
	progress_seen *p = user;
	(void)name;
	p->calls++;
	p->done = done;
	p->total = total;
	return 0;
}

static void test_full_download(void **state)
{
	char url[128], dest[512], part[520];
	progress_seen seen = {0};
	kft_fetch_options opt = {.progress = record_progress, .progress_user = &seen};
	kft_error err;
	url_for(url, sizeof(url), "/data.bin");
	assert_int_equal(kft_fetch_uri(url, *state, &opt, &err), 0);
	path_in(dest, sizeof(dest), *state, "data.bin");
	assert_has_data(dest);
	snprintf(part, sizeof(part), "%s.part", dest);
	assert_int_not_equal(access(part, F_OK), 0);
	assert_true(seen.calls > 0);
	assert_int_equal(seen.done, DATA_SIZE);
	assert_int_equal(seen.total, DATA_SIZE);
	assert_string_equal(g_last_range, "");
}

static void test_resume_partial(void **state)
{
	char url[128], dest[512], part[520];
	progress_seen seen = {0};
	kft_fetch_options opt = {.progress = record_progress, .progress_user = &seen};
	kft_error err;
	url_for(url, sizeof(url), "/data.bin");
	path_in(dest, sizeof(dest), *state, "data.bin");
	snprintf(part, sizeof(part), "%s.part", dest);
	write_file(part, g_data, 30000);
	assert_int_equal(kft_fetch_url(url, dest, NULL, g_data_sha, &opt, &err), 0);
	assert_string_equal(g_last_range, "bytes=30000-");
	assert_has_data(dest);
	assert_int_equal(seen.done, DATA_SIZE);
	assert_int_equal(seen.total, DATA_SIZE);
}

/* A part file already holding the whole object gets 416 for its Range; the
 * download starts over rather than failing forever. */
static void test_complete_partial_restarts(void **state)
{
	char url[128], dest[512], part[520];
	kft_error err;
	url_for(url, sizeof(url), "/data.bin");
	path_in(dest, sizeof(dest), *state, "data.bin");
	snprintf(part, sizeof(part), "%s.part", dest);
	write_file(part, g_data, DATA_SIZE);
	int before = g_data_requests;
	assert_int_equal(kft_fetch_url(url, dest, NULL, g_data_sha, NULL, &err), 0);
	assert_int_equal(g_data_requests, before + 2);
	assert_has_data(dest);
}

/* A server that ignores Range sends the whole object with 200: the stale
 * partial bytes (here deliberately wrong) must be replaced, not appended to. */
static void test_range_ignored_restarts(void **state)
{
	char url[128], dest[512], part[520];
	static unsigned char junk[30000];
	memset(junk, 'x', sizeof(junk));
	url_for(url, sizeof(url), "/norange.bin");
	path_in(dest, sizeof(dest), *state, "norange.bin");
	snprintf(part, sizeof(part), "%s.part", dest);
	write_file(part, junk, sizeof(junk));
	assert_int_equal(kft_fetch_url(url, dest, NULL, g_data_sha, NULL, NULL), 0);
	assert_string_equal(g_last_range, "bytes=30000-");
	assert_has_data(dest);
}

static void test_not_found(void **state)
{
	char url[128], dest[512];
	kft_error err;
	url_for(url, sizeof(url), "/nope.bin");
	assert_int_equal(kft_fetch_uri(url, *state, NULL, &err), KFT_ENOTFOUND);
	assert_non_null(strstr(err.message, url));
	assert_non_null(strstr(err.message, "404"));
	path_in(dest, sizeof(dest), *state, "nope.bin");
	assert_int_not_equal(access(dest, F_OK), 0);
}

static void test_size_limit(void **state)
{
	char url[128], dest[512];
	kft_fetch_options opt = {.max_bytes = 1000};
	kft_error err;
	url_for(url, sizeof(url), "/data.bin");
	path_in(dest, sizeof(dest), *state, "data.bin");
	assert_int_equal(kft_fetch_url(url, dest, NULL, NULL, &opt, &err), KFT_ELIMIT);
	assert_non_null(strstr(err.message, "limit"));
	assert_int_not_equal(access(dest, F_OK), 0);
}

static void test_checksum_mismatch(void **state)
{
	char url[128], dest[512], part[520];
	kft_error err;
	url_for(url, sizeof(url), "/data.bin");
	path_in(dest, sizeof(dest), *state, "data.bin");
	snprintf(part, sizeof(part), "%s.part", dest);
	const char *wrong = "0000000000000000000000000000000000000000000000000000000000000000";
	assert_int_equal(kft_fetch_url(url, dest, NULL, wrong, NULL, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "sha256 mismatch"));
	assert_int_not_equal(access(dest, F_OK), 0);
	assert_int_not_equal(access(part, F_OK), 0);
}

static void test_file_uri_file_and_tree(void **state)
{
	char src[256], sub[300], f1[300], f2[400], uri[450], out[256], got[400];
	unsigned char buf[64];
	kft_error err;
	path_in(src, sizeof(src), *state, "src");
	path_in(out, sizeof(out), *state, "out");
	snprintf(sub, sizeof(sub), "%s/nested", src);
	assert_int_equal(mkdir(src, 0755), 0);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(mkdir(out, 0755), 0);
	snprintf(f1, sizeof(f1), "%s/a.txt", src);
	snprintf(f2, sizeof(f2), "%s/b.txt", sub);
	write_file(f1, "alpha", 5);
	write_file(f2, "beta", 4);

	snprintf(uri, sizeof(uri), "file://%s", src);
	assert_int_equal(kft_fetch_uri(uri, out, NULL, &err), 0);
	snprintf(got, sizeof(got), "%s/nested/b.txt", out);
	assert_int_equal(slurp(got, buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "beta", 4);

	snprintf(uri, sizeof(uri), "file://%s", f1);
	assert_int_equal(kft_fetch_uri(uri, *state, NULL, &err), 0);
	path_in(got, sizeof(got), *state, "a.txt");
	assert_int_equal(slurp(got, buf, sizeof(buf)), 5);

	snprintf(uri, sizeof(uri), "file://%s/missing", src);
	assert_int_equal(kft_fetch_uri(uri, out, NULL, &err), KFT_ENOTFOUND);
	assert_non_null(strstr(err.message, "missing"));
}

static void test_bad_schemes(void **state)
{
	kft_error err;
	assert_int_equal(kft_fetch_uri("ftp://example.com/x", *state, NULL, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "ftp://example.com/x"));
	assert_int_equal(kft_fetch_uri("file://relative/x", *state, NULL, &err), KFT_EINVAL);
	assert_int_equal(kft_fetch_url("file:///etc/passwd", "/tmp/x", NULL, NULL, NULL, &err),
	                 KFT_EINVAL);
}

static void hub_env(void)
{
	char ep[64];
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d/", g_port);
	setenv("HF_ENDPOINT", ep, 1);
	setenv("HF_TOKEN", "hf_secret", 1);
}

static void test_hf_model(void **state)
{
	char path[600];
	unsigned char buf[16];
	kft_error err;
	hub_env();
	assert_int_equal(kft_fetch_uri("hf://org/model", *state, NULL, &err), 0);
	assert_string_equal(g_last_auth, "Bearer hf_secret");
	path_in(path, sizeof(path), *state, "weights/model.bin");
	assert_has_data(path);
	path_in(path, sizeof(path), *state, "config.json");
	assert_int_equal(slurp(path, buf, sizeof(buf)), 2);
	/* A second run finds both files complete and downloads nothing. */
	int before = g_data_requests;
	assert_int_equal(kft_fetch_uri("hf://org/model", *state, NULL, &err), 0);
	assert_int_equal(g_data_requests, before);
}

static void test_hf_dataset_and_path(void **state)
{
	char path[600];
	kft_error err;
	kft_fetch_options opt = {.hf_token = ""};
	hub_env();
	assert_int_equal(kft_fetch_uri("hf://datasets/org/ds", *state, &opt, &err), 0);
	assert_string_equal(g_last_auth, ""); /* the empty option token wins over env */
	path_in(path, sizeof(path), *state, "train.csv");
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(kft_fetch_uri("hf://org/model/config.json", *state, NULL, &err), 0);
	path_in(path, sizeof(path), *state, "weights/model.bin");
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(kft_fetch_uri("hf://org/model/nothing", *state, NULL, &err),
	                 KFT_ENOTFOUND);
}

/* Upstream v2.3.0's initializers (pkg/initializers/{dataset,model}/huggingface.py):
 * the dataset one asks for repo_type="dataset" whatever the URI says, the
 * model one fetches allow_patterns *.json *.safetensors *.model *.txt only. */
static void test_hf_initializer_options(void **state)
{
	char path[600];
	kft_error err;
	hub_env();
	kft_fetch_options ds = {.hf_dataset = 1};
	assert_int_equal(kft_fetch_uri("hf://org/ds", *state, &ds, &err), 0);
	path_in(path, sizeof(path), *state, "train.csv");
	assert_int_equal(access(path, F_OK), 0);
	static const char *const allow[] = {"*.json", "*.safetensors", "*.model", "*.txt", NULL};
	kft_fetch_options model = {.hf_allow = allow};
	assert_int_equal(kft_fetch_uri("hf://org/model", *state, &model, &err), 0);
	path_in(path, sizeof(path), *state, "config.json");
	assert_int_equal(access(path, F_OK), 0);
	path_in(path, sizeof(path), *state, "weights/model.bin");
	assert_int_not_equal(access(path, F_OK), 0); /* *.bin is not among them */
}

static void test_hf_errors(void **state)
{
	kft_error err;
	hub_env();
	assert_int_equal(kft_fetch_uri("hf://org/missing", *state, NULL, &err), KFT_ENOTFOUND);
	assert_non_null(strstr(err.message, "404"));
	assert_non_null(strstr(err.message, "/api/models/org/missing"));
	assert_int_equal(kft_fetch_uri("hf://org/evil", *state, NULL, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "../escape"));
	assert_int_equal(kft_fetch_uri("hf://org/badjson", *state, NULL, &err), KFT_EPARSE);
	assert_int_equal(kft_fetch_uri("hf://org", *state, NULL, &err), KFT_EINVAL);
	assert_int_equal(kft_fetch_uri("hf://org/../x", *state, NULL, &err), KFT_EINVAL);
	assert_int_equal(kft_fetch_uri("hf://org/model/../x", *state, NULL, &err), KFT_EINVAL);
}

static void s3_env(const char *secret, const char *token)
{
	char ep[64];
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", g_port);
	setenv("AWS_ENDPOINT_URL", ep, 1);
	setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
	setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
	setenv("AWS_REGION", "eu-west-3", 1);
	if (token)
		setenv("AWS_SESSION_TOKEN", token, 1);
	else
		unsetenv("AWS_SESSION_TOKEN");
}

static void test_s3_signed_get(void **state)
{
	char path[600];
	kft_error err;
	s3_env("s3cr3t", NULL);
	assert_int_equal(kft_fetch_uri("s3://my-bucket/dir/obj.bin", *state, NULL, &err), 0);
	assert_true(strncmp(g_last_auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/", 37) == 0);
	assert_non_null(strstr(g_last_auth, "/eu-west-3/s3/aws4_request, SignedHeaders="
	                                    "host;x-amz-content-sha256;x-amz-date, Signature="));
	path_in(path, sizeof(path), *state, "obj.bin");
	assert_has_data(path);

	s3_env("s3cr3t", "session-token-value");
	unlink(path);
	assert_int_equal(kft_fetch_uri("s3://my-bucket/dir/obj.bin", *state, NULL, &err), 0);
	assert_non_null(strstr(g_last_auth, "x-amz-date;x-amz-security-token, Signature="));
	assert_has_data(path);
}

static void test_s3_errors(void **state)
{
	kft_error err;
	s3_env("wrong-secret", NULL);
	assert_int_equal(kft_fetch_uri("s3://my-bucket/dir/obj.bin", *state, NULL, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "403"));
	assert_non_null(strstr(err.message, "/my-bucket/dir/obj.bin"));
	s3_env("s3cr3t", NULL);
	assert_int_equal(kft_fetch_uri("s3://my-bucket/dir/none.bin", *state, NULL, &err),
	                 KFT_ENOTFOUND);
	/* a folder is listed (ListObjectsV2; this server has no listing) */
	assert_int_equal(kft_fetch_uri("s3://my-bucket/dir/", *state, NULL, &err), KFT_ENOTFOUND);
	assert_non_null(
	        strstr(err.message, "list-type=2&prefix=dir%2F: HTTP 404 (no such bucket)"));
	assert_int_equal(kft_fetch_uri("s3://Bad_Bucket/x", *state, NULL, &err), KFT_EINVAL);
	assert_int_equal(kft_fetch_uri("s3://my-bucket/../x", *state, NULL, &err), KFT_EINVAL);
	setenv("AWS_ENDPOINT_URL", "ftp://127.0.0.1", 1);
	assert_int_equal(kft_fetch_uri("s3://my-bucket/dir/obj.bin", *state, NULL, &err),
	                 KFT_EINVAL);
}

/* IGNORE_PATTERNS as upstream's initializers apply it: huggingface_hub's
 * snapshot_download(ignore_patterns=...) filters repository files with
 * fnmatch ('*' crossing '/'; a directory pattern "dir/" meaning every
 * file under it), opendal's S3 listing
 * skips keys that fnmatch (pkg/initializers/utils/opendal.py); the SDK's
 * default list is "*.msgpack,*.h5,*.bin,*.pt,*.pth". */
static void test_ignore_patterns(void **state)
{
	char path[600];
	kft_error err;
	hub_env();
	kft_fetch_options opt = {.ignore_patterns = "*.msgpack, *.h5,*.bin,*.pt,*.pth"};
	int before = g_data_requests;
	assert_int_equal(kft_fetch_uri("hf://org/model", *state, &opt, &err), 0);
	assert_int_equal(g_data_requests, before);
	path_in(path, sizeof(path), *state, "weights/model.bin");
	assert_int_not_equal(access(path, F_OK), 0);
	path_in(path, sizeof(path), *state, "config.json");
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);
	/* a directory pattern; everything under a path ignored is no error */
	opt.ignore_patterns = "weights/,";
	assert_int_equal(kft_fetch_uri("hf://org/model", *state, &opt, &err), 0);
	assert_int_equal(g_data_requests, before);
	assert_int_equal(access(path, F_OK), 0);
	opt.ignore_patterns = "*";
	assert_int_equal(kft_fetch_uri("hf://org/model/weights", *state, &opt, &err), 0);
	/* patterns do not hide a path that matches nothing */
	assert_int_equal(kft_fetch_uri("hf://org/model/nothing", *state, &opt, &err),
	                 KFT_ENOTFOUND);
	s3_env("s3cr3t", NULL);
	opt.ignore_patterns = "dir/*.bin";
	assert_int_equal(kft_fetch_uri("s3://my-bucket/dir/obj.bin", *state, &opt, &err), 0);
	assert_int_equal(g_data_requests, before);
	path_in(path, sizeof(path), *state, "obj.bin");
	assert_int_not_equal(access(path, F_OK), 0);
	opt.ignore_patterns = "*.txt";
	assert_int_equal(kft_fetch_uri("s3://my-bucket/dir/obj.bin", *state, &opt, &err), 0);
	assert_has_data(path);
}

#define DIR_TEST(f) cmocka_unit_test_setup_teardown(f, dir_setup, dir_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	        DIR_TEST(test_full_download),
	        DIR_TEST(test_resume_partial),
	        DIR_TEST(test_range_ignored_restarts),
	        DIR_TEST(test_complete_partial_restarts),
	        DIR_TEST(test_not_found),
	        DIR_TEST(test_size_limit),
	        DIR_TEST(test_checksum_mismatch),
	        DIR_TEST(test_file_uri_file_and_tree),
	        DIR_TEST(test_bad_schemes),
	        DIR_TEST(test_hf_model),
	        DIR_TEST(test_hf_dataset_and_path),
	        DIR_TEST(test_hf_initializer_options),
	        DIR_TEST(test_hf_errors),
	        DIR_TEST(test_ignore_patterns),
	        DIR_TEST(test_s3_signed_get),
	        DIR_TEST(test_s3_errors),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
