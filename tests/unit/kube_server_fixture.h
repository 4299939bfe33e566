/*
 * kube_server_fixture.h - a scripted HTTPS "API server" for the kube client
 * tests (test_kube_*.c), with certificates made at start-up.
 *
 * ks_pki_make() creates, with OpenSSL, a CA, a server certificate for
 * localhost/127.0.0.1, a client certificate (CN kft-test, O system:masters)
 * signed by that CA, and an unrelated "rogue" CA, and writes each as PEM
 * into a fresh temporary directory that ks_pki_free() removes.
 *
 * ks_start() runs libmicrohttpd over TLS on 127.0.0.1 (a kernel-chosen port,
 * one thread per connection, so a slow stream blocks nobody else). Each
 * request takes the next queued ks_response (ks_push); when the queue is
 * empty the "fallback" response (ks_fallback) answers, else 500. Every
 * request is recorded (method, path, decoded query, headers of interest,
 * body, whether a valid client certificate came) for the test to inspect.
 *
 * Responses can stream: `chunks` are sent one by one with a delay between
 * them (so a watch event arrives split across reads), then the stream ends
 * cleanly, is cut (no terminating chunk), or stays silent until the test
 * releases it. With `require_client_cert`, requests without a certificate
 * signed by the CA get 401 - libmicrohttpd only asks for one, so the check
 * is made here through GnuTLS, found at run time because libmicrohttpd
 * already loaded it.
 */
#ifndef KFT_TEST_KUBE_SERVER_FIXTURE_H
#define KFT_TEST_KUBE_SERVER_FIXTURE_H

#include <arpa/inet.h>
#include <dlfcn.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define KS_FN          static __attribute__((unused))
#define KS_MAX_QUEUE   64
#define KS_MAX_RECORDS 256
#define KS_MAX_CHUNKS  32

/* ------------------------------------------------------------------ PKI */

typedef struct ks_pem {
	char *cert, *key; /* PEM text */
	char cert_path[512], key_path[512];
} ks_pem;

typedef struct ks_pki {
	char dir[256];
	ks_pem ca, server, client, rogue;
} ks_pki;

KS_FN char *ks_bio_string(BIO *b)
{
	char *p = NULL;
	long n = BIO_get_mem_data(b, &p);
	char *s = malloc((size_t)n + 1);
	if (s) {
		memcpy(s, p, (size_t)n);
		s[n] = '\0';
	}
	return s;
}

KS_FN int ks_add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	int ok = e && X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok ? 0 : -1;
}

/* A certificate for key, signed by (issuer, issuer_key) or self-signed. */
KS_FN X509 *ks_cert(EVP_PKEY *key, const char *cn, const char *org, X509 *issuer,
                    EVP_PKEY *issuer_key, int is_ca)
{
	static long serial = 1;
	X509 *x = X509_new();
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, key);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	if (org)
		X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)org, -1, -1,
		                           0);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
	X509 *iss = issuer ? issuer : x;
	int rc = ks_add_ext(x, iss, NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "CA:FALSE");
	rc |= ks_add_ext(x, iss, NID_key_usage,
	                 is_ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
	rc |= ks_add_ext(x, iss, NID_subject_key_identifier, "hash");
	if (!is_ca) {
		rc |= ks_add_ext(x, iss, NID_ext_key_usage, "serverAuth,clientAuth");
		rc |= ks_add_ext(x, iss, NID_subject_alt_name,
		                 "DNS:localhost,DNS:kube.test,IP:127.0.0.1");
	}
	if (rc || !X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256())) {
		X509_free(x);
		return NULL;
	}
	return x;
}

KS_FN int ks_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Fills pem (text and files dir/NAME.crt, dir/NAME.key) from x and key. */
KS_FN int ks_save(const char *dir, const char *name, X509 *x, EVP_PKEY *key, ks_pem *pem)
{
	BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
	int ok = cb && kb && PEM_write_bio_X509(cb, x) &&
	         PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL);
	if (ok) {
		pem->cert = ks_bio_string(cb);
		pem->key = ks_bio_string(kb);
	}
	BIO_free(cb);
	BIO_free(kb);
	snprintf(pem->cert_path, sizeof(pem->cert_path), "%s/%s.crt", dir, name);
	snprintf(pem->key_path, sizeof(pem->key_path), "%s/%s.key", dir, name);
	if (!ok || !pem->cert || !pem->key)
		return -1;
	return ks_write(pem->cert_path, pem->cert) | ks_write(pem->key_path, pem->key);
}

KS_FN int ks_pki_make(ks_pki *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->dir, sizeof(p->dir), "/tmp/kft-kube-test-XXXXXX");
	if (!mkdtemp(p->dir))
		return -1;
	EVP_PKEY *k[4];
	for (int i = 0; i < 4; i++)
		k[i] = EVP_EC_gen("P-256");
	X509 *ca = ks_cert(k[0], "kft-test-ca", NULL, NULL, NULL, 1);
	X509 *srv = ks_cert(k[1], "localhost", NULL, ca, k[0], 0);
	X509 *cli = ks_cert(k[2], "kft-test", "system:masters", ca, k[0], 0);
	X509 *rogue = ks_cert(k[3], "rogue-ca", NULL, NULL, NULL, 1);
	int rc = !ca || !srv || !cli || !rogue;
	rc = rc || ks_save(p->dir, "ca", ca, k[0], &p->ca);
	rc = rc || ks_save(p->dir, "server", srv, k[1], &p->server);
	rc = rc || ks_save(p->dir, "client", cli, k[2], &p->client);
	rc = rc || ks_save(p->dir, "rogue", rogue, k[3], &p->rogue);
	X509_free(ca);
	X509_free(srv);
	X509_free(cli);
	X509_free(rogue);
	for (int i = 0; i < 4; i++)
		EVP_PKEY_free(k[i]);
	return rc ? -1 : 0;
}

KS_FN EVP_PKEY *ks_pem_key(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	return k;
}

KS_FN X509 *ks_pem_cert(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	return x;
}

/* A server certificate for cn and san (OpenSSL's "DNS:a,IP:b" syntax) from
 * issuer (a CA of the fixture: its own or its rogue one), saved as name in
 * dir (removed with the fixture). 0, or -1; the caller frees pem->cert and
 * pem->key. */
KS_FN int ks_server_cert(const char *dir, const ks_pem *issuer, const char *name, const char *cn,
                         const char *san, ks_pem *pem)
{
	static long serial = 1000;
	EVP_PKEY *ca_key = ks_pem_key(issuer->key), *key = EVP_EC_gen("P-256");
	X509 *ca = ks_pem_cert(issuer->cert), *x = X509_new();
	int rc = !ca_key || !key || !ca || !x;
	memset(pem, 0, sizeof(*pem));
	if (!rc) {
		X509_set_version(x, 2);
		ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
		X509_gmtime_adj(X509_getm_notBefore(x), -3600);
		X509_gmtime_adj(X509_getm_notAfter(x), 86400);
		X509_set_pubkey(x, key);
		X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
		                           (const unsigned char *)cn, -1, -1, 0);
		X509_set_issuer_name(x, X509_get_subject_name(ca));
		rc = ks_add_ext(x, ca, NID_basic_constraints, "CA:FALSE") |
		     ks_add_ext(x, ca, NID_key_usage, "critical,digitalSignature") |
		     ks_add_ext(x, ca, NID_ext_key_usage, "serverAuth") |
		     ks_add_ext(x, ca, NID_subject_alt_name, san);
		rc = rc || X509_sign(x, ca_key, EVP_sha256()) <= 0 ||
		     ks_save(dir, name, x, key, pem);
	}
	X509_free(x);
	X509_free(ca);
	EVP_PKEY_free(key);
	EVP_PKEY_free(ca_key);
	return rc ? -1 : 0;
}

KS_FN int ks_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

KS_FN void ks_pki_free(ks_pki *p)
{
	ks_pem *all[] = {&p->ca, &p->server, &p->client, &p->rogue};
	for (int i = 0; i < 4; i++) {
		free(all[i]->cert);
		free(all[i]->key);
	}
	if (p->dir[0])
		nftw(p->dir, ks_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	memset(p, 0, sizeof(*p));
}

/* --------------------------------------------------------------- server */

typedef enum ks_end {
	KS_END_CLEAN, /* terminating chunk: the stream ends normally */
	KS_END_CUT,   /* connection dropped mid-stream */
	KS_END_HOLD,  /* silent until ks_release() (or 10 s), then clean */
} ks_end;

typedef struct ks_response {
	unsigned status;
	const char *body;                  /* whole body (copied); ignored when chunks[0] is set */
	const char *retry_after;           /* Retry-After header value, or NULL */
	const char *chunks[KS_MAX_CHUNKS]; /* a streamed body, NULL-terminated */
	int chunk_delay_ms;
	ks_end end;
} ks_response;

typedef struct ks_request {
	char method[16];
	char path[1024];
	char query[2048]; /* decoded "k=v&k=v" in arrival order */
	char content_type[128];
	char auth[512];
	char *body;
	int client_cert; /* 1 when a valid client certificate came */
} ks_request;

typedef struct ks_server {
	struct MHD_Daemon *d;
	int port;
	int require_client_cert;
	pthread_mutex_t mu;
	ks_response queue[KS_MAX_QUEUE];
	int qhead, qlen;
	ks_response fallback;
	int has_fallback;
	ks_request rec[KS_MAX_RECORDS];
	int nrec;
	atomic_int released;
	atomic_int streams_open;
	atomic_int connections; /* TCP connections accepted so far */
} ks_server;

/* Per-connection state while a body uploads and a stream is sent. */
typedef struct ks_conn {
	char *body;
	size_t len;
	ks_response resp;
	ks_server *s;
	int chunk;
	size_t off;
	int delayed;
	int held_ms;
} ks_conn;

KS_FN void ks_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

KS_FN enum MHD_Result ks_query_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
	(void)kind;
	ks_request *r = cls;
	size_t n = strlen(r->query);
	snprintf(r->query + n, sizeof(r->query) - n, "%s%s=%s", n ? "&" : "", key,
	         value ? value : "");
	return MHD_YES;
}

/* Whether the connection presented a certificate the CA signed. */
KS_FN int ks_has_client_cert(struct MHD_Connection *conn)
{
	typedef const void *(*get_peers_fn)(void *, unsigned *);
	typedef int (*verify_fn)(void *, unsigned *);
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	get_peers_fn get_peers = (get_peers_fn)dlsym(RTLD_DEFAULT, "gnutls_certificate_get_peers");
	verify_fn verify = (verify_fn)dlsym(RTLD_DEFAULT, "gnutls_certificate_verify_peers2");
	unsigned n = 0, status = 1;
	if (!ci || !get_peers || !verify || !get_peers(ci->tls_session, &n) || n == 0)
		return 0;
	return verify(ci->tls_session, &status) == 0 && status == 0;
}

KS_FN void ks_record(ks_server *s, struct MHD_Connection *conn, const char *method, const char *url,
                     ks_conn *c)
{
	ks_request r;
	memset(&r, 0, sizeof(r));
	snprintf(r.method, sizeof(r.method), "%s", method);
	snprintf(r.path, sizeof(r.path), "%s", url);
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, ks_query_iter, &r);
	const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
	const char *au = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	snprintf(r.content_type, sizeof(r.content_type), "%s", ct ? ct : "");
	snprintf(r.auth, sizeof(r.auth), "%s", au ? au : "");
	r.body = c->body ? strndup(c->body, c->len) : strdup("");
	r.client_cert = ks_has_client_cert(conn);
	pthread_mutex_lock(&s->mu);
	if (s->nrec < KS_MAX_RECORDS)
		s->rec[s->nrec++] = r;
	else
		free(r.body);
	pthread_mutex_unlock(&s->mu);
}

KS_FN ks_response ks_next(ks_server *s)
{
	ks_response r = {.status = 500,
	                 .body = "{\"kind\":\"Status\",\"code\":500,"
	                         "\"message\":\"no response queued\"}"};
	pthread_mutex_lock(&s->mu);
	if (s->qlen > 0) {
		r = s->queue[s->qhead];
		s->qhead = (s->qhead + 1) % KS_MAX_QUEUE;
		s->qlen--;
	} else if (s->has_fallback) {
		r = s->fallback;
	}
	pthread_mutex_unlock(&s->mu);
	return r;
}

KS_FN ssize_t ks_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	ks_conn *c = cls;
	const char *chunk = c->resp.chunks[c->chunk];
	if (!chunk) {
		if (c->resp.end == KS_END_CUT)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		while (c->resp.end == KS_END_HOLD && !atomic_load(&c->s->released) &&
		       c->held_ms < 10000) {
			ks_sleep_ms(20);
			c->held_ms += 20;
		}
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	if (!c->delayed && c->chunk > 0 && c->resp.chunk_delay_ms)
		ks_sleep_ms(c->resp.chunk_delay_ms);
	c->delayed = 1;
	size_t n = strlen(chunk) - c->off;
	if (n > max)
		n = max;
	memcpy(buf, chunk + c->off, n);
	c->off += n;
	if (c->off == strlen(chunk)) {
		c->chunk++;
		c->off = 0;
		c->delayed = 0;
	}
	return (ssize_t)n;
}

KS_FN void ks_stream_done(void *cls)
{
	ks_conn *c = cls;
	atomic_fetch_sub(&c->s->streams_open, 1);
	free(c);
}

KS_FN enum MHD_Result ks_reply(struct MHD_Connection *conn, ks_server *s, ks_response r)
{
	struct MHD_Response *resp;
	if (r.chunks[0]) {
		ks_conn *sc = calloc(1, sizeof(*sc));
		sc->resp = r;
		sc->s = s;
		atomic_fetch_add(&s->streams_open, 1);
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, ks_stream, sc,
		                                         ks_stream_done);
	} else {
		const char *b = r.body ? r.body : "";
		resp = MHD_create_response_from_buffer(strlen(b), (void *)b, MHD_RESPMEM_MUST_COPY);
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (r.retry_after)
		MHD_add_response_header(resp, "Retry-After", r.retry_after);
	enum MHD_Result ret = MHD_queue_response(conn, r.status, resp);
	MHD_destroy_response(resp);
	return ret;
}

KS_FN enum MHD_Result ks_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_size, void **con_cls)
{
	(void)version;
	ks_server *s = cls;
	ks_conn *c = *con_cls;
	if (!c) {
		*con_cls = calloc(1, sizeof(ks_conn));
		return *con_cls ? MHD_YES : MHD_NO;
	}
	if (*upload_size) {
		char *p = realloc(c->body, c->len + *upload_size + 1);
		if (!p)
			return MHD_NO;
		memcpy(p + c->len, upload_data, *upload_size);
		c->body = p;
		c->len += *upload_size;
		c->body[c->len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	ks_record(s, conn, method, url, c);
	if (s->require_client_cert && !ks_has_client_cert(conn)) {
		ks_response deny = {
		        .status = 401,
		        .body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
		                "\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}"};
		return ks_reply(conn, s, deny);
	}
	return ks_reply(conn, s, ks_next(s));
}

KS_FN void ks_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)conn, (void)toe;
	ks_conn *c = *con_cls;
	if (c) {
		free(c->body);
		free(c);
	}
	*con_cls = NULL;
}

KS_FN void ks_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
                         enum MHD_ConnectionNotificationCode toe)
{
	(void)conn, (void)socket_ctx;
	ks_server *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		atomic_fetch_add(&s->connections, 1);
}

KS_FN int ks_start(ks_server *s, const ks_pki *p, int require_client_cert)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	s->require_client_cert = require_client_cert;
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->d = MHD_start_daemon(
	        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS, 0,
	        NULL, NULL, ks_handler, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	        MHD_OPTION_HTTPS_MEM_KEY, p->server.key, MHD_OPTION_HTTPS_MEM_CERT, p->server.cert,
	        MHD_OPTION_HTTPS_MEM_TRUST, p->ca.cert, MHD_OPTION_NOTIFY_COMPLETED, ks_completed,
	        s, MHD_OPTION_NOTIFY_CONNECTION, ks_connection, s, MHD_OPTION_CONNECTION_TIMEOUT,
	        (unsigned)30, MHD_OPTION_END);
	if (!s->d)
		return -1;
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : 0;
	return s->port > 0 ? 0 : -1;
}

/* Frees what the records hold and forgets them and the queue. */
KS_FN void ks_reset(ks_server *s)
{
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->nrec; i++)
		free(s->rec[i].body);
	s->nrec = 0;
	s->qhead = s->qlen = 0;
	s->has_fallback = 0;
	atomic_store(&s->released, 0);
	atomic_store(&s->connections, 0);
	pthread_mutex_unlock(&s->mu);
}

KS_FN void ks_stop(ks_server *s)
{
	atomic_store(&s->released, 1);
	if (s->d)
		MHD_stop_daemon(s->d);
	s->d = NULL;
	ks_reset(s);
	pthread_mutex_destroy(&s->mu);
}

KS_FN void ks_push(ks_server *s, ks_response r)
{
	pthread_mutex_lock(&s->mu);
	if (s->qlen < KS_MAX_QUEUE) {
		s->queue[(s->qhead + s->qlen) % KS_MAX_QUEUE] = r;
		s->qlen++;
	}
	pthread_mutex_unlock(&s->mu);
}

/* Queues a plain answer. */
KS_FN void ks_push_body(ks_server *s, unsigned status, const char *body)
{
	ks_response r = {.status = status, .body = body};
	ks_push(s, r);
}

KS_FN void ks_fallback(ks_server *s, unsigned status, const char *body)
{
	pthread_mutex_lock(&s->mu);
	s->fallback = (ks_response){.status = status, .body = body};
	s->has_fallback = 1;
	pthread_mutex_unlock(&s->mu);
}

KS_FN void ks_release(ks_server *s)
{
	atomic_store(&s->released, 1);
}

KS_FN int ks_count(ks_server *s)
{
	pthread_mutex_lock(&s->mu);
	int n = s->nrec;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Request i (negative: from the end); valid until ks_reset. */
KS_FN const ks_request *ks_req(ks_server *s, int i)
{
	pthread_mutex_lock(&s->mu);
	const ks_request *r = NULL;
	if (i < 0)
		i += s->nrec;
	if (i >= 0 && i < s->nrec)
		r = &s->rec[i];
	pthread_mutex_unlock(&s->mu);
	return r;
}

KS_FN double ks_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
