/*
 * client.c - the client object: TLS material, credentials, the pool of curl
 * handles and the rate limiter.
 *
 * Certificates, keys and CAs are read into memory once, when the client is
 * made, and handed to libcurl as blobs; a missing file is then reported at
 * start-up rather than at the first request. The bearer token is the
 * exception: a token file is re-read when the copy in memory is a minute old,
 * because projected service-account tokens rotate under a running process.
 *
 * Each request borrows an easy handle from a small pool and returns it
 * afterwards. The handle keeps its connections open, so a later request on
 * the same handle reuses them (keep-alive) without two threads ever sharing
 * one connection. DNS results and TLS sessions live in a CURLSH that all
 * handles share, protected by one mutex per kind of shared data.
 *
 * The rate limiter is a token bucket like client-go's: `burst` requests may
 * go at once, then `qps` per second. A caller reserves a token under the lock
 * (the count may go negative, which queues callers fairly) and sleeps outside
 * it for as long as its reservation needs. A client has one bucket, or with
 * rate_per_resource one per API resource, as controller-runtime's client
 * has: it makes a REST client, and so a limiter, for each kind it touches.
 */
#include "kube/kube_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/curl_tls.h"
#include "util/secret.h"
#include "util/strbuf.h"

/* How long a token read from a file is trusted before reading it again. */
#define TOKEN_REFRESH_SEC  60
#define CONNECT_TIMEOUT_MS 30000L

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ctx)
{
	(void)h;
	(void)access;
	kft_kube *kube = ctx;
	pthread_mutex_lock(&kube->share_mu[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ctx)
{
	(void)h;
	kft_kube *kube = ctx;
	pthread_mutex_unlock(&kube->share_mu[data]);
}

static int dup_opt(const char *src, char **dst)
{
	*dst = NULL;
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : KFT_ENOMEM;
}

static int blob_from(const char *data, const char *file, const char *what, kft_kube_blob *out,
                     kft_error *err)
{
	out->data = NULL;
	out->len = 0;
	if (data) {
		out->len = strlen(data);
		out->data = strdup(data);
		return out->data ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	if (file) {
		kft_error ferr;
		int rc = kft_kube_read_file(file, KFT_KUBE_MAX_FILE_BYTES, what, out, &ferr);
		/* a file the config names but that is missing is an I/O problem */
		return rc ? kft_error_set(err, rc == KFT_ENOTFOUND ? KFT_EIO : rc, "%s",
		                          ferr.message)
		          : 0;
	}
	return 0;
}

static void blob_free(kft_kube_blob *b)
{
	kft_secret_wipe(b->data, b->len);
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

/* Splits "scheme://host[:port]/..." into host and port for CONNECT_TO. */
static int connect_to_entry(const char *server, const char *sni, struct curl_slist **out,
                            kft_error *err)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL;
	int rc = 0;
	if (!u || curl_url_set(u, CURLUPART_URL, server, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
		rc = kft_error_set(err, KFT_EINVAL, "server \"%s\" is not a valid URL", server);
	} else {
		kft_strbuf b;
		kft_strbuf_init(&b);
		kft_strbuf_printf(&b, "%s:%s:%s:%s", sni, port, host, port);
		char *line = kft_strbuf_detach(&b);
		*out = line ? curl_slist_append(NULL, line) : NULL;
		free(line);
		if (!*out)
			rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

/* server with its host replaced by sni (so curl sends and verifies it). */
static int server_with_host(const char *server, const char *sni, char **out, kft_error *err)
{
	CURLU *u = curl_url();
	int rc = 0;
	*out = NULL;
	if (!u || curl_url_set(u, CURLUPART_URL, server, 0) ||
	    curl_url_set(u, CURLUPART_HOST, sni, 0) || curl_url_get(u, CURLUPART_URL, out, 0))
		rc = kft_error_set(err, KFT_EINVAL,
		                   "server \"%s\" with tls-server-name \"%s\" is not "
		                   "a valid URL",
		                   server, sni);
	curl_url_cleanup(u);
	return rc;
}

static int set_server(kft_kube *k, const kft_kube_config *cfg, kft_error *err)
{
	const char *s = cfg->server;
	if (!s || !*s)
		return kft_error_set(err, KFT_EINVAL, "no server in the client configuration");
	if (strncmp(s, "https://", 8) != 0 && strncmp(s, "http://", 7) != 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "server \"%s\": must start with https:// or http://", s);
	char *url = NULL;
	int rc = 0;
	if (cfg->tls_server_name && *cfg->tls_server_name) {
		rc = connect_to_entry(s, cfg->tls_server_name, &k->connect_to, err);
		if (!rc)
			rc = server_with_host(s, cfg->tls_server_name, &url, err);
		if (rc)
			return rc;
		k->server = strdup(url);
		curl_free(url);
	} else {
		k->server = strdup(s);
	}
	if (!k->server)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	size_t n = strlen(k->server);
	while (n > 0 && k->server[n - 1] == '/')
		k->server[--n] = '\0';
	return 0;
}

static int copy_strings(kft_kube *k, const kft_kube_config *cfg, kft_error *err)
{
	int rc = dup_opt(cfg->default_namespace ? cfg->default_namespace : "default",
	                 &k->namespace_);
	rc = rc ? rc : dup_opt(cfg->user_agent ? cfg->user_agent : "kftrainer", &k->user_agent);
	rc = rc ? rc : dup_opt(cfg->proxy_url, &k->proxy_url);
	rc = rc ? rc : dup_opt(cfg->username, &k->username);
	rc = rc ? rc : dup_opt(cfg->password, &k->password);
	rc = rc ? rc : dup_opt(cfg->token, &k->token);
	rc = rc ? rc : dup_opt(cfg->token_file, &k->token_file);
	return rc ? kft_error_set(err, KFT_ENOMEM, "out of memory") : 0;
}

static int load_tls(kft_kube *k, const kft_kube_config *cfg, kft_error *err)
{
	int rc = blob_from(cfg->ca_data, cfg->ca_file, "certificate authority", &k->ca, err);
	if (!rc)
		rc = blob_from(cfg->cert_data, cfg->cert_file, "client certificate", &k->cert, err);
	if (!rc)
		rc = blob_from(cfg->key_data, cfg->key_file, "client key", &k->key, err);
	if (!rc && (k->cert.data != NULL) != (k->key.data != NULL))
		rc = kft_error_set(err, KFT_EINVAL,
		                   "a client certificate needs a client key, and "
		                   "a key a certificate");
	return rc;
}

/* Reads the token file now; keeps the previous token when that fails after a
 * first success, as client-go does. Called with token_mu held. */
static int token_reload(kft_kube *k, kft_error *err)
{
	kft_kube_blob b;
	int rc = kft_kube_read_file(k->token_file, KFT_KUBE_MAX_FILE_BYTES, "token file", &b, err);
	clock_gettime(CLOCK_MONOTONIC, &k->token_read_at);
	if (rc)
		return rc;
	while (b.len &&
	       (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r' || b.data[b.len - 1] == ' '))
		b.data[--b.len] = '\0';
	if (b.len == 0 || strlen(b.data) != b.len || strpbrk(b.data, "\r\n")) {
		blob_free(&b);
		return kft_error_set(err, KFT_EINVAL, "token file %s: empty or not one line",
		                     k->token_file);
	}
	kft_secret_free(k->token);
	k->token = b.data;
	return 0;
}

static int init_locks(kft_kube *k)
{
	pthread_mutex_init(&k->token_mu, NULL);
	pthread_mutex_init(&k->rate_mu, NULL);
	pthread_mutex_init(&k->pool_mu, NULL);
	pthread_mutex_init(&k->events_mu, NULL);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&k->share_mu[i], NULL);
	k->share = curl_share_init();
	if (!k->share)
		return KFT_ENOMEM;
	curl_share_setopt(k->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(k->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(k->share, CURLSHOPT_USERDATA, k);
	curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(k->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	return 0;
}

static void init_limits(kft_kube *k, const kft_kube_config *cfg)
{
	k->insecure = cfg->insecure;
	k->max_retries = cfg->max_retries < 0 ? 0 : cfg->max_retries;
	k->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 0;
	k->qps = cfg->qps > 0 ? cfg->qps : 0;
	k->burst = cfg->burst < 1 ? 1 : cfg->burst;
	k->rate_per_resource = cfg->rate_per_resource;
	k->n_buckets = 0;
}

int kft_kube_new(const kft_kube_config *cfg, kft_kube **out, kft_error *err)
{
	*out = NULL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return kft_error_set(err, KFT_EIO, "initialising libcurl: %s",
		                     curl_easy_strerror(curl_init_rc));
	kft_kube *k = calloc(1, sizeof(*k));
	if (!k)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = init_locks(k) ? kft_error_set(err, KFT_ENOMEM, "out of memory") : 0;
	init_limits(k, cfg);
	rc = rc ? rc : set_server(k, cfg, err);
	rc = rc ? rc : copy_strings(k, cfg, err);
	rc = rc ? rc : load_tls(k, cfg, err);
	if (!rc && k->token_file) {
		kft_error terr;
		rc = token_reload(k, &terr);
		if (rc)
			rc = kft_error_set(err, rc == KFT_ENOTFOUND ? KFT_EIO : rc, "%s",
			                   terr.message);
	}
	if (rc) {
		kft_kube_free(k);
		return rc;
	}
	*out = k;
	return 0;
}

void kft_kube_free(kft_kube *k)
{
	if (!k)
		return;
	for (int i = 0; i < k->pool_len; i++)
		curl_easy_cleanup(k->pool[i]);
	if (k->share)
		curl_share_cleanup(k->share);
	if (k->events_free)
		k->events_free(k->events);
	free(k->server);
	curl_slist_free_all(k->connect_to);
	free(k->namespace_);
	free(k->user_agent);
	free(k->proxy_url);
	free(k->username);
	kft_secret_free(k->password);
	kft_secret_free(k->token);
	free(k->token_file);
	blob_free(&k->ca);
	blob_free(&k->cert);
	blob_free(&k->key);
	pthread_mutex_destroy(&k->token_mu);
	pthread_mutex_destroy(&k->rate_mu);
	pthread_mutex_destroy(&k->pool_mu);
	pthread_mutex_destroy(&k->events_mu);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&k->share_mu[i]);
	free(k);
}

const char *kft_kube_namespace(const kft_kube *kube)
{
	return kube->namespace_;
}

CURL *kft_kube_handle_get(kft_kube *k)
{
	CURL *h = NULL;
	pthread_mutex_lock(&k->pool_mu);
	if (k->pool_len > 0)
		h = k->pool[--k->pool_len];
	pthread_mutex_unlock(&k->pool_mu);
	return h ? h : curl_easy_init();
}

void kft_kube_handle_put(kft_kube *k, CURL *h)
{
	if (!h)
		return;
	/* reset drops options (and pointers into the caller's buffers) but keeps
	 * the handle's open connections for the next request */
	curl_easy_reset(h);
	pthread_mutex_lock(&k->pool_mu);
	if (k->pool_len < KFT_KUBE_POOL_MAX) {
		k->pool[k->pool_len++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&k->pool_mu);
	if (h)
		curl_easy_cleanup(h);
}

static double elapsed_sec(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* Copies the current bearer token (re-reading its file when stale) into a
 * header line; NULL when the client has no token. */
static char *auth_header(kft_kube *k)
{
	char *line = NULL;
	pthread_mutex_lock(&k->token_mu);
	if (k->token_file) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (elapsed_sec(&k->token_read_at, &now) >= TOKEN_REFRESH_SEC)
			(void)token_reload(k, NULL); /* keep the old token when this fails */
	}
	if (k->token) {
		kft_strbuf b;
		kft_strbuf_init(&b);
		kft_strbuf_printf(&b, "Authorization: Bearer %s", k->token);
		line = kft_strbuf_detach(&b);
	}
	pthread_mutex_unlock(&k->token_mu);
	return line;
}

void kft_kube_token_expire(kft_kube *k)
{
	pthread_mutex_lock(&k->token_mu);
	k->token_read_at.tv_sec -= TOKEN_REFRESH_SEC + 1;
	pthread_mutex_unlock(&k->token_mu);
}

static void set_tls(kft_kube *k, CURL *h)
{
	curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	if (k->ca.data) {
		struct curl_blob ca = {k->ca.data, k->ca.len, CURL_BLOB_COPY};
		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
		/* the configured CA alone is trusted, as in client-go: not the
		 * bundle or directory libcurl was built to read as well */
		curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
		curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	}
	kft_curl_tls_setup(h);
	if (k->cert.data) {
		struct curl_blob cert = {k->cert.data, k->cert.len, CURL_BLOB_COPY};
		struct curl_blob key = {k->key.data, kft_curl_tls_key_blob_len(k->key.len),
		                        CURL_BLOB_COPY};
		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	}
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, k->insecure ? 0L : 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, k->insecure ? 0L : 2L);
}

static void set_transport(kft_kube *k, CURL *h, const char *url)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	/* curl keeps a 64 KiB upload buffer on every handle that ever sent a
	 * body; our bodies are a few KiB, and 16 KiB is the smallest allowed */
	curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
	curl_easy_setopt(h, CURLOPT_SHARE, k->share);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 15L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, k->user_agent);
	if (k->proxy_url)
		curl_easy_setopt(h, CURLOPT_PROXY, k->proxy_url);
}

/* Appends line to *l; on failure frees the whole list and leaves *l NULL,
 * so one check at the end covers every append. */
static void add_header(struct curl_slist **l, const char *line)
{
	if (!*l)
		return;
	struct curl_slist *t = curl_slist_append(*l, line);
	if (!t)
		curl_slist_free_all(*l);
	*l = t;
}

int kft_kube_handle_setup(kft_kube *k, CURL *h, const char *url, const char *content_type,
                          const char *accept, struct curl_slist **headers, kft_error *err)
{
	char *auth = auth_header(k);
	char ct[256], acc[256];
	set_transport(k, h, url);
	set_tls(k, h);
	if (k->connect_to) /* read-only, lives as long as the client */
		curl_easy_setopt(h, CURLOPT_CONNECT_TO, k->connect_to);
	if (!auth && k->username) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, k->username);
		curl_easy_setopt(h, CURLOPT_PASSWORD, k->password ? k->password : "");
	}
	/* JSON first, anything else after it, as kubectl asks: the issuer's key
	 * set (/openid/v1/jwks) is served only as application/jwk-set+json */
	snprintf(acc, sizeof(acc), "Accept: %s", accept ? accept : KFT_KUBE_ACCEPT_JSON);
	struct curl_slist *l = curl_slist_append(NULL, acc);
	add_header(&l, "Expect:"); /* no 100-continue round trip before bodies */
	if (content_type) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
		add_header(&l, ct);
	}
	if (auth)
		add_header(&l, auth);
	kft_secret_free(auth);
	*headers = l;
	if (!l)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	return 0;
}

void kft_kube_cancel(kft_kube *k, int on)
{
	if (k)
		atomic_store(&k->cancel, on ? 1 : 0);
}

int kft_kube_canceled(kft_kube *k, const atomic_int *stop)
{
	return atomic_load(&k->cancel) || (stop && atomic_load(stop));
}

int kft_kube_sleep(kft_kube *k, long ms, const atomic_int *stop)
{
	while (ms > 0 && !kft_kube_canceled(k, stop)) {
		long step = ms > 50 ? 50 : ms;
		kft_sleep_ms(step, NULL);
		ms -= step;
	}
	return kft_kube_canceled(k, stop);
}

const char *kft_kube_server(const kft_kube *k)
{
	return k->server;
}

void kft_kube_set_observer(kft_kube *k, kft_kube_observer fn, void *ctx)
{
	k->observe = fn;
	k->observe_ctx = ctx;
}

void kft_kube_set_warning_handler(kft_kube *k, kft_kube_warning_fn fn, void *ctx)
{
	k->warn = fn;
	k->warn_ctx = ctx;
}

void kft_kube_warn(kft_kube *k, const char *fmt, ...)
{
	if (!k || !k->warn)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	k->warn(k->warn_ctx, msg);
}

int kft_kube_unholdable(const json_error_t *e)
{
	enum json_error_code c = json_error_code(e);
	return c == json_error_null_byte_in_key || c == json_error_stack_overflow;
}

void kft_kube_observe(kft_kube *k, const char *method, long code)
{
	if (k->observe)
		k->observe(k->observe_ctx, method, code);
}

void kft_kube_rate_key(const char *path, char *key, size_t size)
{
	/* /api/v1/[namespaces/NS/]RES[/...] or /apis/G/V/[namespaces/NS/]RES[/...] */
	const char *seg[7] = {0};
	size_t len[7] = {0};
	int n = 0;
	const char *p = path ? path : "";
	while (*p == '/' && n < 7) {
		const char *e = p + 1 + strcspn(p + 1, "/?");
		seg[n] = p + 1;
		len[n++] = (size_t)(e - p - 1);
		p = e;
		if (*p == '?')
			break;
	}
	key[0] = '\0';
	int core = n >= 1 && len[0] == 3 && strncmp(seg[0], "api", 3) == 0;
	int named = n >= 1 && len[0] == 4 && strncmp(seg[0], "apis", 4) == 0;
	int r = core ? 2 : named ? 3 : -1; /* index of the first segment after the version */
	if (r < 0 || n <= r)
		return;
	/* namespaces/NS/RES...: the resource is RES; "namespaces/NS" alone is
	 * the namespaces resource itself */
	if (n > r + 2 && len[r] == 10 && strncmp(seg[r], "namespaces", 10) == 0)
		r += 2;
	if (core)
		snprintf(key, size, "/%.*s/%.*s", (int)len[1], seg[1], (int)len[r], seg[r]);
	else
		snprintf(key, size, "%.*s/%.*s/%.*s", (int)len[1], seg[1], (int)len[2], seg[2],
		         (int)len[r], seg[r]);
}

/* The bucket for path, made full on first use. Called with rate_mu held. */
static kft_kube_bucket *bucket_for(kft_kube *k, const char *path)
{
	char key[sizeof(k->buckets[0].key)] = "";
	if (k->rate_per_resource)
		kft_kube_rate_key(path, key, sizeof(key));
	for (int i = 0; i < k->n_buckets; i++)
		if (strcmp(k->buckets[i].key, key) == 0)
			return &k->buckets[i];
	if (k->n_buckets == KFT_KUBE_BUCKETS_MAX)
		return &k->buckets[KFT_KUBE_BUCKETS_MAX - 1];
	kft_kube_bucket *b = &k->buckets[k->n_buckets++];
	snprintf(b->key, sizeof(b->key), "%s", key);
	b->tokens = k->burst;
	clock_gettime(CLOCK_MONOTONIC, &b->last);
	return b;
}

int kft_kube_rate_wait(kft_kube *k, const char *path, const atomic_int *stop)
{
	double wait = 0;
	struct timespec now;
	if (kft_kube_canceled(k, stop))
		return 1;
	if (k->qps <= 0)
		return 0;
	pthread_mutex_lock(&k->rate_mu);
	kft_kube_bucket *b = bucket_for(k, path);
	clock_gettime(CLOCK_MONOTONIC, &now);
	b->tokens += elapsed_sec(&b->last, &now) * k->qps;
	if (b->tokens > k->burst)
		b->tokens = k->burst;
	b->last = now;
	b->tokens -= 1;
	if (b->tokens < 0)
		wait = -b->tokens / k->qps;
	pthread_mutex_unlock(&k->rate_mu);
	if (wait <= 0 || !kft_kube_sleep(k, (long)(wait * 1000 + 0.5), stop))
		return 0;
	/* Canceled: the reservation goes back, so later callers do not wait
	 * for a request that was never sent. Buckets are never removed, so b
	 * is still this path's. */
	pthread_mutex_lock(&k->rate_mu);
	b->tokens += 1;
	pthread_mutex_unlock(&k->rate_mu);
	return 1;
}
