/*
 * statusserver.c - the supervisor's HTTPS server for upstream's status
 * endpoint (see statusserver.h and docs/local.md).
 *
 * Design in plain words. The supervisor makes a CA (P-256, util/cert.c) and a
 * serving certificate it signs for 127.0.0.1 and localhost (while it waits
 * for its job's commit: kft_statusserver_creds_make), and at job start a
 * random bearer token; the CA certificate and the token are written
 * 0600 where the TrainJobStatus plugin told the pods to look. The key never
 * touches the disk. The server then lives inside the supervisor's poll loop:
 * every socket is non-blocking, each connection is a small state machine
 * (handshake, read head and body, write the answer, close) advanced only
 * when poll says it can move, so a slow or silent client costs a slot, never
 * the loop's time. Slots are bounded; when all are taken the connection
 * nearest its deadline makes room, and every connection has upstream's 10 s
 * read/write deadline. One request per connection (Connection: close).
 *
 * TLS: 1.2 only (mbedTLS 2.28 has no 1.3) with ECDHE-ECDSA AEAD suites, so
 * every session is forward secret.
 */
#include "local/statusserver.h"

#include <errno.h>
#include <fcntl.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kftrainer/constants.h"
#include "local/local_internal.h"
#include "util/cert.h"
#include "util/random.h"
#include "util/clock.h"

#define MAX_CONNS   32
#define DEADLINE_MS 10000 /* upstream's readTimeout and writeTimeout */
#define TOKEN_BYTES 32
#define CA_DAYS     3650 /* the job's life bounds them, not the dates */
#define READ_CHUNK  4096

static const int suites[] = {
        MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        0,
};

typedef enum conn_state { C_FREE, C_HANDSHAKE, C_READ, C_WRITE, C_DONE } conn_state;

typedef struct conn {
	conn_state state;
	int fd;
	bool want_write; /* what mbedTLS last waited for */
	int64_t deadline;
	mbedtls_ssl_context ssl;
	char *in;
	size_t in_len, need; /* need: head + body once the head is parsed, else 0 */
	kft_statusreq_head *head;
	char *out;
	size_t out_len, out_off;
} conn;

struct kft_statusserver {
	int lfd;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt crt;
	mbedtls_pk_context key;
	kft_statusreq_target target;
	char *ns, *name, *token;
	json_t *report; /* the last valid report of this turn */
	conn conns[MAX_CONNS];
};

/* ---- start-up ------------------------------------------------------------------ */

/* Writes a secret file: 0600, whole or not at all (a pod may read it any
 * time). */
static int write_private(const char *path, const char *text, kft_error *err)
{
	char *tmp = NULL;
	if (asprintf(&tmp, "%s.tmp", path) < 0)
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

static char *new_token(void)
{
	unsigned char raw[TOKEN_BYTES];
	char *hex = malloc(TOKEN_BYTES * 2 + 1);
	if (!hex || kft_random_bytes(NULL, raw, sizeof(raw)) != 0) {
		free(hex);
		return NULL;
	}
	for (size_t i = 0; i < TOKEN_BYTES; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
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

static int listen_on(int port, kft_error *err)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 64) == 0)
		return fd;
	int e = errno;
	if (fd >= 0)
		close(fd);
	return kft_error_set(err, KFT_EIO, "status server: cannot listen on 127.0.0.1:%d: %s", port,
	                     strerror(e));
}

/* The CA (whose certificate the pods trust) and the serving pair. */
int kft_statusserver_creds_make(kft_statusserver_creds *c, kft_error *err)
{
	kft_cert ca = {0}, srv = {0};
	kft_cert_opts ca_opts = {.key_type = KFT_CERT_EC_P256,
	                         .is_ca = true,
	                         .subject = "CN=kftrainer local status server CA",
	                         .valid_days = CA_DAYS};
	kft_cert_opts srv_opts = {.key_type = KFT_CERT_EC_P256,
	                          .issuer = &ca,
	                          .subject = "CN=localhost",
	                          .valid_days = CA_DAYS};
	memset(c, 0, sizeof(*c));
	int rc = kft_cert_make(&ca_opts, "status server: cannot make its CA", &ca, err);
	if (rc == 0)
		rc = kft_cert_make(&srv_opts, "status server: cannot make its certificate", &srv,
		                   err);
	if (rc == 0) { /* the CA's key signed the one certificate and goes */
		c->ca_pem = ca.cert_pem, c->cert_pem = srv.cert_pem, c->key_pem = srv.key_pem;
		ca.cert_pem = srv.cert_pem = srv.key_pem = NULL;
	}
	kft_cert_free(&ca);
	kft_cert_free(&srv);
	return rc;
}

void kft_statusserver_creds_free(kft_statusserver_creds *c)
{
	if (c->key_pem)
		mbedtls_platform_zeroize(c->key_pem, strlen(c->key_pem));
	free(c->ca_pem);
	free(c->cert_pem);
	free(c->key_pem);
	memset(c, 0, sizeof(*c));
}

/* Writes the CA where the pods look and loads the serving pair, from creds
 * or from new ones. */
static int use_creds(kft_statusserver *s, const kft_statusserver_creds *creds, const char *ca_path,
                     kft_error *err)
{
	kft_statusserver_creds own = {0};
	int rc = 0;
	if (!creds || !creds->ca_pem || !creds->cert_pem || !creds->key_pem) {
		rc = kft_statusserver_creds_make(&own, err);
		creds = &own;
	}
	if (rc == 0)
		rc = write_private(ca_path, creds->ca_pem, err);
	if (rc == 0 && (mbedtls_x509_crt_parse(&s->crt, (const unsigned char *)creds->cert_pem,
	                                       strlen(creds->cert_pem) + 1) != 0 ||
	                mbedtls_pk_parse_key(&s->key, (const unsigned char *)creds->key_pem,
	                                     strlen(creds->key_pem) + 1, NULL, 0) != 0))
		rc = kft_error_set(err, KFT_EIO, "status server: cannot load its certificate");
	kft_statusserver_creds_free(&own);
	return rc;
}

static int setup_tls(kft_statusserver *s, kft_error *err)
{
	mbedtls_ssl_config *c = &s->conf;
	if (mbedtls_ssl_config_defaults(c, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
	                                MBEDTLS_SSL_PRESET_DEFAULT) != 0)
		return kft_error_set(err, KFT_EIO, "status server: cannot configure TLS");
	mbedtls_ssl_conf_rng(c, kft_random_bytes, NULL);
	mbedtls_ssl_conf_min_version(c, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
	mbedtls_ssl_conf_ciphersuites(c, suites);
	mbedtls_ssl_conf_renegotiation(c, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
	if (mbedtls_ssl_conf_own_cert(c, &s->crt, &s->key) != 0)
		return kft_error_set(err, KFT_EIO, "status server: cannot use its certificate");
	return 0;
}

int kft_statusserver_open(const char *url, const char *ca_path, const char *token_path,
                          const char *ns, const char *name, const json_t *trainjob,
                          const kft_statusserver_creds *creds, kft_statusserver **out,
                          kft_error *err)
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
	s->lfd = -1;
	mbedtls_ssl_config_init(&s->conf);
	mbedtls_x509_crt_init(&s->crt);
	mbedtls_pk_init(&s->key);
	s->ns = strdup(ns);
	s->name = strdup(name);
	s->token = new_token();
	int rc = s->ns && s->name && s->token ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc == 0)
		rc = make_dir_of(ca_path, err);
	if (rc == 0)
		rc = make_dir_of(token_path, err);
	if (rc == 0)
		rc = use_creds(s, creds, ca_path, err);
	if (rc == 0)
		rc = write_private(token_path, s->token, err);
	if (rc == 0)
		rc = setup_tls(s, err);
	if (rc == 0 && (s->lfd = listen_on(port, err)) < 0)
		rc = s->lfd;
	if (rc) {
		kft_statusserver_close(s);
		return rc;
	}
	s->target = (kft_statusreq_target){
	        .ns = s->ns, .name = s->name, .token = s->token, .trainjob = trainjob};
	*out = s;
	return 0;
}

/* ---- connections -------------------------------------------------------------- */

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	ssize_t n = send(*(int *)ctx, buf, len, MSG_NOSIGNAL);
	if (n >= 0)
		return (int)n;
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
	               ? MBEDTLS_ERR_SSL_WANT_WRITE
	               : MBEDTLS_ERR_NET_SEND_FAILED;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	ssize_t n = recv(*(int *)ctx, buf, len, 0);
	if (n >= 0)
		return (int)n;
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
	               ? MBEDTLS_ERR_SSL_WANT_READ
	               : MBEDTLS_ERR_NET_RECV_FAILED;
}

static void conn_close(conn *c)
{
	if (c->state == C_FREE)
		return;
	mbedtls_ssl_free(&c->ssl);
	close(c->fd);
	free(c->in);
	free(c->head);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* A free slot, or the one nearest its deadline, closed to make room. */
static conn *take_slot(kft_statusserver *s)
{
	conn *oldest = &s->conns[0];
	for (size_t i = 0; i < MAX_CONNS; i++) {
		if (s->conns[i].state == C_FREE)
			return &s->conns[i];
		if (s->conns[i].deadline < oldest->deadline)
			oldest = &s->conns[i];
	}
	conn_close(oldest);
	return oldest;
}

static void accept_all(kft_statusserver *s)
{
	for (int k = 0; k < MAX_CONNS; k++) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		conn *c = take_slot(s);
		c->fd = fd;
		c->state = C_HANDSHAKE;
		c->deadline = kft_clock_mono_ms() + DEADLINE_MS;
		mbedtls_ssl_init(&c->ssl);
		if (mbedtls_ssl_setup(&c->ssl, &s->conf) != 0) {
			conn_close(c);
			continue;
		}
		mbedtls_ssl_set_bio(&c->ssl, &c->fd, bio_send, bio_recv, NULL);
	}
}

/* Sets the answer to write; the connection closes after it. */
static void respond(conn *c, kft_statusreq_answer *a)
{
	free(c->out);
	c->out = a->body ? kft_statusreq_response(a, &c->out_len) : NULL;
	c->out_off = 0;
	c->state = c->out ? C_WRITE : C_DONE;
}

/* The request is whole: judge it and keep a valid report. */
static void judge(kft_statusserver *s, conn *c)
{
	kft_statusreq_answer a = {0};
	if (kft_statusreq_judge(&s->target, c->head, c->in + c->head->head_len,
	                        c->head->content_length, &a) == 0) {
		if (a.report) {
			json_decref(s->report);
			s->report = json_incref(a.report);
		}
		respond(c, &a);
	} else
		c->state = C_DONE;
	kft_statusreq_answer_free(&a);
}

static int read_more(conn *c)
{
	size_t cap = c->need ? c->need : KFT_STATUSREQ_HEAD_MAX;
	if (!c->in && !(c->in = malloc(KFT_STATUSREQ_HEAD_MAX + KFT_STATUSREQ_BODY_MAX + 1)))
		return -1;
	if (c->in_len >= cap)
		return 0;
	size_t want = cap - c->in_len < READ_CHUNK ? cap - c->in_len : READ_CHUNK;
	int n = mbedtls_ssl_read(&c->ssl, (unsigned char *)c->in + c->in_len, want);
	if (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE) {
		c->want_write = n == MBEDTLS_ERR_SSL_WANT_WRITE;
		return 1;
	}
	if (n <= 0)
		return -1; /* closed, or an alert: no request to answer */
	c->in_len += (size_t)n;
	return 0;
}

static void step_read(kft_statusserver *s, conn *c)
{
	for (;;) {
		int r = read_more(c);
		if (r < 0) {
			c->state = C_DONE;
			return;
		}
		if (!c->need) {
			kft_statusreq_answer a = {0};
			if (!c->head && !(c->head = malloc(sizeof(*c->head)))) {
				c->state = C_DONE;
				return;
			}
			int hr = kft_statusreq_head_parse(c->in, c->in_len, c->head, &a);
			if (hr >= 400) /* an HTTP error: answer it */
				respond(c, &a);
			kft_statusreq_answer_free(&a);
			if (hr >= 400)
				return;
			if (hr < 0) {
				c->state = C_DONE;
				return;
			}
			if (hr == 1)
				c->need = c->head->head_len + c->head->content_length;
		}
		if (c->need && c->in_len >= c->need) {
			judge(s, c);
			return;
		}
		if (r == 1)
			return;
	}
}

static void step_write(conn *c)
{
	while (c->out_off < c->out_len) {
		int n = mbedtls_ssl_write(&c->ssl, (const unsigned char *)c->out + c->out_off,
		                          c->out_len - c->out_off);
		if (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE) {
			c->want_write = n == MBEDTLS_ERR_SSL_WANT_WRITE;
			return;
		}
		if (n <= 0) {
			c->state = C_DONE;
			return;
		}
		c->out_off += (size_t)n;
	}
	mbedtls_ssl_close_notify(&c->ssl);
	c->state = C_DONE;
}

static void step(kft_statusserver *s, conn *c)
{
	if (c->state == C_HANDSHAKE) {
		int r = mbedtls_ssl_handshake(&c->ssl);
		if (r == MBEDTLS_ERR_SSL_WANT_READ || r == MBEDTLS_ERR_SSL_WANT_WRITE) {
			c->want_write = r == MBEDTLS_ERR_SSL_WANT_WRITE;
			return;
		}
		c->state = r == 0 ? C_READ : C_DONE; /* plain HTTP, old TLS, other suites */
	}
	if (c->state == C_READ)
		step_read(s, c);
	if (c->state == C_WRITE)
		step_write(c);
}

/* ---- the loop's side -------------------------------------------------------------- */

size_t kft_statusserver_pollfds(const kft_statusserver *s, struct pollfd *pfd, size_t cap)
{
	size_t n = 0;
	if (!s || cap == 0)
		return 0;
	pfd[n++] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
	for (size_t i = 0; i < MAX_CONNS && n < cap; i++)
		if (s->conns[i].state != C_FREE)
			pfd[n++] = (struct pollfd){.fd = s->conns[i].fd,
			                           .events = s->conns[i].want_write ? POLLOUT
			                                                            : POLLIN};
	return n;
}

static conn *conn_of(kft_statusserver *s, int fd)
{
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (s->conns[i].state != C_FREE && s->conns[i].fd == fd)
			return &s->conns[i];
	return NULL;
}

json_t *kft_statusserver_serve(kft_statusserver *s, const struct pollfd *pfd, size_t n)
{
	if (!s)
		return NULL;
	int64_t now = kft_clock_mono_ms();
	for (size_t i = 1; i < n; i++) {
		conn *c = pfd[i].revents ? conn_of(s, pfd[i].fd) : NULL;
		if (c)
			step(s, c);
		if (c && c->state == C_DONE)
			conn_close(c);
	}
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (s->conns[i].state != C_FREE && s->conns[i].deadline <= now)
			conn_close(&s->conns[i]);
	if (n > 0 && pfd[0].revents & POLLIN)
		accept_all(s);
	json_t *r = s->report;
	s->report = NULL;
	return r;
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
	for (size_t i = 0; i < MAX_CONNS; i++)
		conn_close(&s->conns[i]);
	if (s->lfd >= 0)
		close(s->lfd);
	mbedtls_ssl_config_free(&s->conf);
	mbedtls_x509_crt_free(&s->crt);
	mbedtls_pk_free(&s->key);
	json_decref(s->report);
	free(s->ns);
	free(s->name);
	if (s->token) {
		memset(s->token, 0, strlen(s->token));
		free(s->token);
	}
	free(s);
}
