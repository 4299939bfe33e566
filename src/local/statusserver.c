/*
 * statusserver.c - the supervisor's HTTPS server for upstream's status
 * endpoint (see statusserver.h and docs/local.md).
 *
 * Design in plain words. The server presents a CA (P-256, util/cert.c) and a
 * serving certificate it signed for 127.0.0.1 and localhost, kept per state
 * directory in a 0600 file and made anew when that file does not hold (on a
 * thread of their own while the supervisor waits for its job's commit and
 * reads the job: kft_statusserver_creds_start). At job start the supervisor
 * draws a random bearer token; the CA certificate and the token are written
 * 0600 where the TrainJobStatus plugin told the pods to look. The token is
 * what admits a report; the key only proves the server is ours to our pods,
 * and no one who cannot read the state directory can read either. The
 * server is the core's (src/http/server.c): its poll thread takes each
 * connection through the TLS handshake and the head, and refuses there a
 * request that is not a POST to this job's path with this job's token
 * (upstream's 404 and 403), so a flood from other local users holds no
 * worker; a worker decodes and judges the rest (statusreq.c) and rings the
 * supervisor's loop when a report is valid. Upstream's 10 s read/write
 * deadlines, one request per connection (Connection: close).
 *
 * TLS: 1.2 only (mbedTLS 2.28 has no 1.3) with ECDHE-ECDSA AEAD suites, so
 * every session is forward secret.
 */
#include "local/statusserver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http/server.h"
#include "kftrainer/constants.h"
#include "local/local_internal.h"
#include "util/cert.h"
#include "util/random.h"
#include "util/secret.h"

#define SERVER_NAME "status"
#define DEADLINE_MS 10000 /* upstream's readTimeout and writeTimeout */
#define TOKEN_BYTES 32
#define CA_DAYS     3650 /* kept ones are made anew in their last year */
#define AUTH_MAX    8192
#define KEPT_MAX    16384 /* the kept credentials' file: three PEM blocks */
/* Kept credentials are made anew this long before they would end. */
#define KEEP_MARGIN_S (365LL * 24 * 3600)

struct kft_statusserver {
	kft_httpd *http;
	kft_httpd_handlers handlers;
	kft_statusreq_target target;
	char *ns, *name, *token;
	json_t *trainjob;   /* a copy: the supervisor changes its own */
	pthread_mutex_t mu; /* report */
	json_t *report;     /* the last valid report not yet taken */
	int bell[2];        /* a byte per report: the supervisor's poll wakes */
};

/* ---- start-up ------------------------------------------------------------------ */

/* Writes a secret file: 0600, whole or not at all (a pod may read it any
 * time). */
static int write_private(const char *path, const char *text, kft_error *err)
{
	char *tmp = NULL;
	if (asprintf(&tmp, "%s.%d.tmp", path, (int)getpid()) < 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	size_t len = strlen(text);
	bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	if (ok && rename(tmp, path) != 0)
		ok = false;
	int rc = ok ? 0 : kft_error_set(err, KFT_EIO, "cannot write %s: %s", path, strerror(errno));
	if (!ok)
		unlink(tmp);
	free(tmp);
	return rc;
}

static int make_dir_of(const char *path, kft_error *err)
{
	char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
	int rc = 0;
	if (!dir)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			rc = kft_error_set(err, KFT_EIO, "cannot create %s: %s", dir,
			                   strerror(errno));
	}
	free(dir);
	return rc;
}

/* A copy of the next PEM block at *p (its BEGIN line through its END
 * line's newline), *p moved past it; NULL when there is none. */
static char *next_pem(const char **p)
{
	const char *b = strstr(*p, "-----BEGIN "), *e = b ? strstr(b, "-----END ") : NULL;
	const char *nl = e ? strchr(e, '\n') : NULL;
	if (!nl)
		return NULL;
	*p = nl + 1;
	return strndup(b, (size_t)(nl + 1 - b));
}

static char *new_token(void)
{
	char *hex = malloc(TOKEN_BYTES * 2 + 1);
	if (hex && kft_random_hex(hex, TOKEN_BYTES) != 0) {
		free(hex);
		return NULL;
	}
	return hex;
}

/* The port of url, when url is this job's status URL on loopback. */
static int url_port(const char *url, const char *ns, const char *name, int *port)
{
	char path[1024], *end = NULL;
	const char *p;
	if (strncmp(url, "https://127.0.0.1:", 18) == 0)
		p = url + 18;
	else if (strncmp(url, "https://localhost:", 18) == 0)
		p = url + 18;
	else
		return -1;
	long v = strtol(p, &end, 10);
	if (end == p || v <= 0 || v > 65535 ||
	    snprintf(path, sizeof(path), KFT_STATUS_PATH_FORMAT, ns, name) >= (int)sizeof(path) ||
	    strcmp(end, path) != 0)
		return -1;
	*port = (int)v;
	return 0;
}

/* The CA (whose certificate the pods trust) and the serving pair. */
int kft_statusserver_creds_make(kft_statusserver_creds *c, kft_error *err)
{
	kft_cert ca = {0}, srv = {0};
	kft_cert_opts ca_opts = {.key_type = KFT_CERT_EC_P256,
	                         .is_ca = true,
	                         .subject = "CN=kftrainer local status server CA",
	                         .valid_days = CA_DAYS};
	kft_cert_opts srv_opts = {
	        .key_type = KFT_CERT_EC_P256, .subject = "CN=localhost", .valid_days = CA_DAYS};
	memset(c, 0, sizeof(*c));
	int rc = kft_cert_make_chain(&ca_opts, &srv_opts,
	                             "status server: cannot make its CA and certificate", &ca, &srv,
	                             err);
	if (rc == 0) { /* the CA's key signed the one certificate and goes */
		c->ca_pem = ca.cert_pem, c->cert_pem = srv.cert_pem, c->key_pem = srv.key_pem;
		ca.cert_pem = srv.cert_pem = srv.key_pem = NULL;
	}
	kft_cert_free(&ca);
	kft_cert_free(&srv);
	return rc;
}

bool kft_statusserver_creds_parse(const char *text, kft_statusserver_creds *out)
{
	const char *p = text;
	memset(out, 0, sizeof(*out));
	out->ca_pem = next_pem(&p);
	out->cert_pem = next_pem(&p);
	out->key_pem = next_pem(&p);
	if (kft_cert_chain_holds(out->ca_pem, out->cert_pem, out->key_pem, KEEP_MARGIN_S))
		return true;
	kft_statusserver_creds_free(out);
	return false;
}

/* The credentials kept at path into got, when the file is the caller's own
 * regular file, 0600 or stricter, and they still hold. */
static bool load_kept(const char *path, kft_statusserver_creds *got)
{
	char buf[KEPT_MAX + 1];
	struct stat st;
	ssize_t n = -1;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    (st.st_mode & 077) == 0 && st.st_size <= KEPT_MAX)
		n = read(fd, buf, KEPT_MAX);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	bool ok = kft_statusserver_creds_parse(buf, got);
	kft_secret_wipe(buf, (size_t)n);
	return ok;
}

/* Writes c to path for the next supervisors; a failure only means they
 * make their own. */
static void keep(const char *path, const kft_statusserver_creds *c)
{
	char *text = NULL;
	kft_error ignored = {0};
	if (asprintf(&text, "%s%s%s", c->ca_pem, c->cert_pem, c->key_pem) >= 0) {
		write_private(path, text, &ignored);
		kft_secret_free(text);
	}
}

/* How the server serves the pair: TLS 1.2, the core's default suites. */
static kft_http_tls tls_of(const kft_statusserver_creds *c)
{
	return (kft_http_tls){.cert_pem = c->cert_pem,
	                      .key_pem = c->key_pem,
	                      .min_minor = 2,
	                      .made_together = true,
	                      .prepared = c->tls};
}

static void *get_creds(void *arg)
{
	kft_statusserver_creds *c = arg, got = {0};
	kft_error ignored = {0}; /* made again, and reported, at the server's start */
	bool kept = c->keep_at && load_kept(c->keep_at, &got);
	if (!kept && kft_statusserver_creds_make(&got, &ignored) == 0 && c->keep_at)
		keep(c->keep_at, &got);
	kft_http_tls tls = tls_of(&got);
	if (got.cert_pem && got.key_pem)
		kft_http_tls_prepare(SERVER_NAME, &tls, &got.tls, &ignored);
	c->ca_pem = got.ca_pem;
	c->cert_pem = got.cert_pem;
	c->key_pem = got.key_pem;
	c->tls = got.tls;
	return NULL;
}

void kft_statusserver_creds_start(kft_statusserver_creds *c, const char *keep_at)
{
	memset(c, 0, sizeof(*c));
	c->keep_at = keep_at ? strdup(keep_at) : NULL;
	c->making = pthread_create(&c->maker, NULL, get_creds, c) == 0;
}

void kft_statusserver_creds_wait(kft_statusserver_creds *c)
{
	if (c->making)
		pthread_join(c->maker, NULL);
	c->making = false;
}

void kft_statusserver_creds_free(kft_statusserver_creds *c)
{
	kft_statusserver_creds_wait(c);
	free(c->ca_pem);
	free(c->cert_pem);
	kft_secret_free(c->key_pem);
	kft_http_tls_free(c->tls);
	free(c->keep_at);
	memset(c, 0, sizeof(*c));
}

/* ---- requests (on the server core's threads) ---------------------------------------- */

static kft_statusreq_request request_of(const kft_http_req *r, char *auth)
{
	if (kft_http_header(r->head->fields, "Authorization", auth, AUTH_MAX) != 1)
		auth[0] = '\0'; /* absent, repeated or too long for any token of ours */
	return (kft_statusreq_request){.method = r->head->method,
	                               .path = r->head->path,
	                               .auth = auth,
	                               .body = r->body,
	                               .len = r->body_len};
}

static void to_answer(kft_statusreq_answer *sa, kft_http_answer *a)
{
	a->code = sa->code;
	a->type = sa->content_type;
	a->body = sa->body;
	sa->body = NULL;
}

/* On the core's poll thread: a refused body, another path, another token
 * are answered here, before a worker is taken. */
static int admit(void *ctx, const kft_http_req *r, kft_http_answer *a)
{
	kft_statusserver *s = ctx;
	kft_statusreq_answer sa = {0};
	int rc;
	if (r->refused) {
		rc = kft_statusreq_refused(r->refused, &sa) ? KFT_ENOMEM : r->refused;
	} else {
		char *auth = malloc(AUTH_MAX);
		kft_statusreq_request req = auth ? request_of(r, auth) : (kft_statusreq_request){0};
		rc = auth ? kft_statusreq_admit(&s->target, &req, &sa) : KFT_ENOMEM;
		free(auth);
	}
	if (rc == 0)
		return 0;
	if (rc < 0 || !sa.body)
		*a = (kft_http_answer){.code = 500};
	else
		to_answer(&sa, a);
	kft_statusreq_answer_free(&sa);
	return 1;
}

static void keep_report(kft_statusserver *s, json_t *report)
{
	pthread_mutex_lock(&s->mu);
	json_decref(s->report);
	s->report = json_incref(report);
	pthread_mutex_unlock(&s->mu);
	if (write(s->bell[1], "r", 1) < 0) {
		/* non-blocking: a full pipe already rings */
	}
}

static void serve(void *ctx, kft_http_conn *c, const kft_http_req *r)
{
	kft_statusserver *s = ctx;
	kft_statusreq_answer sa = {0};
	char *auth = malloc(AUTH_MAX);
	kft_statusreq_request req = auth ? request_of(r, auth) : (kft_statusreq_request){0};
	if (!auth || kft_statusreq_judge(&s->target, &req, &sa) != 0 || !sa.body) {
		kft_http_respond(c, 500, NULL, "out of memory", 13, NULL);
	} else {
		if (sa.report)
			keep_report(s, sa.report);
		kft_http_respond(c, sa.code, sa.content_type, sa.body, strlen(sa.body), NULL);
	}
	kft_statusreq_answer_free(&sa);
	free(auth);
}

/* ---- open and close --------------------------------------------------------------------- */

/* Takes c's prepared pair, when there is one. */
static int start_http(kft_statusserver *s, int port, kft_statusserver_creds *c, kft_error *err)
{
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	kft_http_tls tls = tls_of(c);
	c->tls = NULL;
	s->handlers = (kft_httpd_handlers){.admit = admit, .serve = serve, .ctx = s};
	kft_httpd_opts o = {.name = SERVER_NAME,
	                    .listen = addr,
	                    .handlers = &s->handlers,
	                    .tls = &tls,
	                    .body_max = KFT_STATUSREQ_BODY_MAX,
	                    .head_timeout_ms = DEADLINE_MS,
	                    .write_timeout_ms = DEADLINE_MS,
	                    .workers = 2};
	int rc = kft_httpd_start(&o, &s->http, err);
	if (rc == KFT_EIO)
		kft_error_set(err, rc, "status server: cannot listen on 127.0.0.1:%d: %s", port,
		              err->message);
	return rc;
}

int kft_statusserver_open(const char *url, const char *ca_path, const char *token_path,
                          const char *ns, const char *name, const json_t *trainjob,
                          kft_statusserver_creds *creds, kft_statusserver **out, kft_error *err)
{
	int port = 0;
	*out = NULL;
	if (!url || url_port(url, ns, name, &port) != 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "status server: %s is not this job's status URL on loopback",
		                     url ? url : "(none)");
	kft_statusserver *s = calloc(1, sizeof(*s));
	if (!s)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	s->bell[0] = s->bell[1] = -1;
	pthread_mutex_init(&s->mu, NULL);
	s->ns = strdup(ns);
	s->name = strdup(name);
	s->token = new_token();
	s->trainjob = trainjob ? json_deep_copy(trainjob) : NULL;
	kft_statusserver_creds own = {0};
	int rc = s->ns && s->name && s->token && (s->trainjob || !trainjob)
	                 ? 0
	                 : kft_error_set(err, KFT_ENOMEM, "out of memory");
	s->target = (kft_statusreq_target){
	        .ns = s->ns, .name = s->name, .token = s->token, .trainjob = s->trainjob};
	if (rc == 0 && pipe2(s->bell, O_CLOEXEC | O_NONBLOCK) != 0)
		rc = kft_error_set(err, KFT_EIO, "status server: pipe: %s", strerror(errno));
	if (creds)
		kft_statusserver_creds_wait(creds);
	if (rc == 0 && (!creds || !creds->ca_pem || !creds->cert_pem || !creds->key_pem)) {
		rc = kft_statusserver_creds_make(&own, err);
		creds = &own;
	}
	if (rc == 0)
		rc = make_dir_of(ca_path, err);
	if (rc == 0)
		rc = make_dir_of(token_path, err);
	if (rc == 0)
		rc = write_private(ca_path, creds->ca_pem, err);
	if (rc == 0)
		rc = write_private(token_path, s->token, err);
	if (rc == 0)
		rc = start_http(s, port, creds, err);
	kft_statusserver_creds_free(&own);
	if (rc) {
		kft_statusserver_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

int kft_statusserver_fd(const kft_statusserver *s)
{
	return s ? s->bell[0] : -1;
}

json_t *kft_statusserver_take(kft_statusserver *s)
{
	char buf[64];
	if (!s)
		return NULL;
	while (read(s->bell[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&s->mu);
	json_t *r = s->report;
	s->report = NULL;
	pthread_mutex_unlock(&s->mu);
	return r;
}

int kft_statusserver_check_port(const json_t *jobset, kft_error *err)
{
	const char *url = NULL, *ca = NULL, *token = NULL;
	kft_statusserver_find_env(jobset, &url, &ca, &token);
	const char *colon = url ? strrchr(url + 8, ':') : NULL;
	int port = colon ? atoi(colon + 1) : 0;
	if (!url || port <= 0)
		return 0;
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
	         bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 1) == 0;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (ok)
		return 0;
	return kft_error_set(err, KFT_EIO,
	                     "the job's status endpoint 127.0.0.1:%d is in use (%s): its pods "
	                     "were given %s; free the port, then resume again",
	                     port, strerror(e), url);
}

static const char *env_value(const json_t *env, const char *name)
{
	size_t i;
	const json_t *e;
	json_array_foreach(env, i, e)
	{
		const char *n = json_string_value(json_object_get(e, "name"));
		if (n && strcmp(n, name) == 0)
			return json_string_value(json_object_get(e, "value"));
	}
	return NULL;
}

void kft_statusserver_find_env(const json_t *jobset, const char **url, const char **ca,
                               const char **token)
{
	size_t i, k;
	const json_t *rj, *c;
	*url = *ca = *token = NULL;
	json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i,
	                   rj)
	{
		const json_t *pod = json_object_get(
		        json_object_get(json_object_get(json_object_get(rj, "template"), "spec"),
		                        "template"),
		        "spec");
		json_array_foreach(json_object_get(pod, "containers"), k, c)
		{
			const json_t *env = json_object_get(c, "env");
			const char *u = env_value(env, KFT_ENV_STATUS_SERVER_URL);
			const char *a = env_value(env, KFT_ENV_STATUS_CA_CERT);
			const char *t = env_value(env, KFT_ENV_STATUS_TOKEN);
			if (u && a && t) {
				*url = u, *ca = a, *token = t;
				return;
			}
		}
	}
}

void kft_statusserver_close(kft_statusserver *s)
{
	if (!s)
		return;
	kft_httpd_stop(s->http);
	for (int i = 0; i < 2; i++)
		if (s->bell[i] >= 0)
			close(s->bell[i]);
	json_decref(s->report);
	json_decref(s->trainjob);
	pthread_mutex_destroy(&s->mu);
	free(s->ns);
	free(s->name);
	kft_secret_free(s->token);
	free(s);
}
