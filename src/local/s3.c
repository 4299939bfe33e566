/*
 * s3.c - an S3 bucket's address, signed request headers, and uploads (see
 * s3.h). The initializers' downloads (fetch.c) and the model exporter
 * (src/track/export.c) share the addressing and signing here, so both read
 * the same environment the same way.
 *
 * A file larger than one part goes up as a multipart upload, the only way
 * S3 takes an object over 5 GiB: each part is read from the file at its
 * offset, so nothing larger than curl's buffer is held; a failure at any
 * step aborts the upload (AbortMultipartUpload), since the parts of an
 * unfinished upload are kept, and billed, until someone does.
 */
#include "local/s3.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "local/s3list.h"
#include "util/pctenc.h"
#include "util/strbuf.h"

#define REPLY_MAX (1 << 20)
#define URL_MAX   (4 * KFT_S3_KEY_MAX + 700)

/* ---- the bucket ---------------------------------------------------------------- */

static int is_http_url(const char *url)
{
	return strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0;
}

/* An endpoint override (MinIO, Ceph, a test server) is addressed
 * path-style; AWS itself virtual-hosted unless the bucket name has dots,
 * which would not match the wildcard TLS certificate. */
int kft_s3_target_for(const char *endpoint, const char *region, const char *bucket,
                      kft_s3_target *t, kft_error *err)
{
	if (endpoint && *endpoint) {
		const char *auth = strstr(endpoint, "://");
		size_t n = auth ? strcspn(auth + 3, "/") : 0;
		if (!is_http_url(endpoint) || n == 0 || n >= sizeof(t->host) ||
		    strcmp(auth + 3 + n, "/") > 0)
			return kft_error_set(err, KFT_EINVAL,
			                     "s3: endpoint %s must be http(s)://HOST[:PORT]",
			                     endpoint);
		snprintf(t->host, sizeof(t->host), "%.*s", (int)n, auth + 3);
		snprintf(t->base, sizeof(t->base), "%.*s", (int)(auth + 3 + n - endpoint),
		         endpoint);
		snprintf(t->prefix, sizeof(t->prefix), "/%s", bucket);
	} else if (strchr(bucket, '.')) {
		snprintf(t->host, sizeof(t->host), "s3.%s.amazonaws.com", region);
		snprintf(t->base, sizeof(t->base), "https://%s", t->host);
		snprintf(t->prefix, sizeof(t->prefix), "/%s", bucket);
	} else {
		snprintf(t->host, sizeof(t->host), "%s.s3.%s.amazonaws.com", bucket, region);
		snprintf(t->base, sizeof(t->base), "https://%s", t->host);
		t->prefix[0] = '\0';
	}
	return 0;
}

static const char *env_or(const char *name, const char *fallback)
{
	const char *v = getenv(name);
	return (v && *v) ? v : fallback;
}

int kft_s3_open(const char *bucket, kft_s3 *out, kft_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!bucket || !kft_s3_bucket_ok(bucket, strlen(bucket)))
		return kft_error_set(err, KFT_EINVAL, "s3: %s is not a bucket name",
		                     bucket ? bucket : "(none)");
	out->bucket = bucket;
	out->c = (kft_aws_credentials){
	        .access_key_id = getenv("AWS_ACCESS_KEY_ID"),
	        .secret_access_key = getenv("AWS_SECRET_ACCESS_KEY"),
	        .session_token = getenv("AWS_SESSION_TOKEN"),
	        .region = env_or("AWS_REGION", env_or("AWS_DEFAULT_REGION", "us-east-1"))};
	return kft_s3_target_for(getenv("AWS_ENDPOINT_URL"), out->c.region, bucket, &out->t, err);
}

int kft_s3_sign(const kft_s3 *s, const char *method, const char *path, const char *query,
                kft_s3_headers *h, kft_error *err)
{
	char date[20];
	time_t now = time(NULL);
	struct tm tm;
	memset(h, 0, sizeof(*h));
	if (!s->c.access_key_id || !*s->c.access_key_id)
		return 0;
	strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
	kft_sigv4_request req = {.method = method,
	                         .host = s->t.host,
	                         .path = path,
	                         .query = query,
	                         .payload_hash = KFT_SIGV4_UNSIGNED_PAYLOAD,
	                         .amz_date = date,
	                         .service = "s3"};
	kft_sigv4_result sig;
	int rc = kft_sigv4_sign(&req, &s->c, &sig, err);
	if (rc)
		return rc;
	snprintf(h->buf[0], sizeof(h->buf[0]), "Host: %s", s->t.host);
	snprintf(h->buf[1], sizeof(h->buf[1]), "x-amz-content-sha256: %s",
	         KFT_SIGV4_UNSIGNED_PAYLOAD);
	snprintf(h->buf[2], sizeof(h->buf[2]), "x-amz-date: %s", date);
	snprintf(h->buf[3], sizeof(h->buf[3]), "Authorization: %s", sig.authorization);
	if (s->c.session_token && *s->c.session_token &&
	    (size_t)snprintf(h->buf[4], sizeof(h->buf[4]), "x-amz-security-token: %s",
	                     s->c.session_token) >= sizeof(h->buf[4]))
		return kft_error_set(err, KFT_ELIMIT, "s3: session token too long");
	for (int i = 0, k = 0; i < 5; i++)
		if (h->buf[i][0])
			h->lines[k++] = h->buf[i];
	return 0;
}

int kft_s3_query_encode(const char *v, char *out, size_t cap)
{
	return kft_pct_encode(v, false, out, cap);
}

/* ---- one request ------------------------------------------------------------------ */

/* What a request sends (a slice of a file, or bytes) and what it keeps of
 * the reply (the body, bounded; the ETag header). */
typedef struct exchange {
	int fd;
	uint64_t offset, left; /* the file slice still to send */
	const char *bytes;     /* or these */
	size_t n_bytes;
	kft_strbuf_capped reply;
	char etag[200];
} exchange;

static size_t on_read(char *buf, size_t size, size_t n, void *user)
{
	exchange *x = user;
	size_t want = size * n;
	if (x->bytes) {
		size_t k = want < x->n_bytes ? want : x->n_bytes;
		memcpy(buf, x->bytes, k);
		x->bytes += k;
		x->n_bytes -= k;
		return k;
	}
	if (want > x->left)
		want = (size_t)x->left;
	ssize_t r = want ? pread(x->fd, buf, want, (off_t)x->offset) : 0;
	if (r < 0)
		return CURL_READFUNC_ABORT;
	x->offset += (uint64_t)r;
	x->left -= (uint64_t)r;
	return (size_t)r;
}

static size_t on_header(char *line, size_t size, size_t n, void *user)
{
	exchange *x = user;
	size_t len = size * n;
	if (len > 5 && strncasecmp(line, "etag:", 5) == 0) {
		const char *v = line + 5;
		while (*v == ' ' && v < line + len)
			v++;
		size_t k = (size_t)(line + len - v);
		while (k && (v[k - 1] == '\r' || v[k - 1] == '\n' || v[k - 1] == ' '))
			k--;
		if (k < sizeof(x->etag))
			snprintf(x->etag, sizeof(x->etag), "%.*s", (int)k, v);
	}
	return len;
}

/* The status of a finished exchange: 2xx is 0; else S3's Code names it. */
static int verdict(CURL *c, CURLcode cc, const char *errbuf, exchange *x, const char *what,
                   kft_error *err)
{
	long status = 0;
	char code[128] = "";
	if (cc != CURLE_OK)
		return kft_error_set(err, KFT_EUNAVAILABLE, "s3 %s: %s", what,
		                     errbuf[0] ? errbuf : curl_easy_strerror(cc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300)
		return 0;
	kft_s3_xml_value(kft_strbuf_str(&x->reply.text), x->reply.text.len, "Code", code,
	                 sizeof(code));
	int rc = status == 404                    ? KFT_ENOTFOUND
	         : status == 401 || status == 403 ? KFT_EDENIED
	         : status >= 500                  ? KFT_EUNAVAILABLE
	                                          : KFT_EIO;
	return kft_error_set(err, rc, "s3 %s: HTTP %ld%s%s", what, status, code[0] ? " " : "",
	                     code);
}

/* One signed request of METHOD /KEY?query (query canonical, NULL: none). */
static int request(const kft_s3 *s, const char *method, const char *key, const char *query,
                   exchange *x, uint64_t body_len, const char *what, kft_error *err)
{
	char enc[3 * KFT_S3_KEY_MAX + 1], path[3 * KFT_S3_KEY_MAX + 100], url[URL_MAX];
	char errbuf[CURL_ERROR_SIZE] = "";
	kft_s3_headers h;
	int rc = kft_s3_encode_key(key, enc, sizeof(enc), err);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s", s->t.prefix, enc);
	snprintf(url, sizeof(url), "%s%s%s%s", s->t.base, path, query ? "?" : "",
	         query ? query : "");
	if ((rc = kft_s3_sign(s, method, path, query, &h, err)) != 0)
		return rc;
	struct curl_slist *hdrs = NULL;
	for (int i = 0; h.lines[i]; i++)
		hdrs = curl_slist_append(hdrs, h.lines[i]);
	hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
	CURL *c = curl_easy_init();
	if (!c || !hdrs) {
		curl_slist_free_all(hdrs);
		if (c)
			curl_easy_cleanup(c);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 120L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "kftrainer-exporter");
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kft_strbuf_capped_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &x->reply);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	if (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, x);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_len);
	}
	const char *ca =
	        getenv("CURL_CA_BUNDLE") ? getenv("CURL_CA_BUNDLE") : getenv("SSL_CERT_FILE");
	if (ca && *ca)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	CURLcode cc = curl_easy_perform(c);
	rc = x->reply.over ? kft_error_set(err, KFT_ELIMIT, "s3 %s: reply too large", what)
	                   : verdict(c, cc, errbuf, x, what, err);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	return rc;
}

static void exchange_init(exchange *x, int fd)
{
	memset(x, 0, sizeof(*x));
	x->fd = fd;
	kft_strbuf_init(&x->reply.text);
	x->reply.max = REPLY_MAX;
}

/* ---- uploads ----------------------------------------------------------------------- */

static int put_whole(const kft_s3 *s, const char *key, int fd, uint64_t size, const char *what,
                     kft_error *err)
{
	exchange x;
	exchange_init(&x, fd);
	x.left = size;
	int rc = request(s, "PUT", key, NULL, &x, size, what, err);
	kft_strbuf_free(&x.reply.text);
	return rc;
}

/* CreateMultipartUpload: the UploadId into id. */
static int create_upload(const kft_s3 *s, const char *key, char *id, size_t size, const char *what,
                         kft_error *err)
{
	exchange x;
	exchange_init(&x, -1);
	x.bytes = "";
	int rc = request(s, "POST", key, "uploads=", &x, 0, what, err);
	if (rc == 0 && !kft_s3_xml_value(kft_strbuf_str(&x.reply.text), x.reply.text.len,
	                                 "UploadId", id, size))
		rc = kft_error_set(err, KFT_EPARSE, "s3 %s: CreateMultipartUpload without UploadId",
		                   what);
	kft_strbuf_free(&x.reply.text);
	return rc;
}

static int upload_query(char *q, size_t size, int part, const char *id)
{
	char enc[3 * 1024 + 1];
	if (kft_s3_query_encode(id, enc, sizeof(enc)) != 0)
		return -1;
	if (part > 0)
		return snprintf(q, size, "partNumber=%d&uploadId=%s", part, enc) < (int)size ? 0
		                                                                             : -1;
	return snprintf(q, size, "uploadId=%s", enc) < (int)size ? 0 : -1;
}

/* The parts, each's ETag appended to `done` as CompleteMultipartUpload
 * lists them. */
static int put_parts(const kft_s3 *s, const char *key, int fd, uint64_t size, uint64_t part_size,
                     const char *id, kft_strbuf *done, const char *what, kft_error *err)
{
	char q[4 * 1024];
	int rc = 0;
	for (int part = 1; rc == 0 && (uint64_t)(part - 1) * part_size < size; part++) {
		uint64_t off = (uint64_t)(part - 1) * part_size;
		uint64_t len = size - off < part_size ? size - off : part_size;
		exchange x;
		exchange_init(&x, fd);
		x.offset = off;
		x.left = len;
		if (upload_query(q, sizeof(q), part, id) != 0)
			rc = kft_error_set(err, KFT_ELIMIT, "s3 %s: UploadId too long", what);
		else
			rc = request(s, "PUT", key, q, &x, len, what, err);
		if (rc == 0 && !x.etag[0])
			rc = kft_error_set(err, KFT_EPARSE, "s3 %s: part %d without an ETag", what,
			                   part);
		if (rc == 0)
			kft_strbuf_printf(done,
			                  "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>",
			                  part, x.etag);
		kft_strbuf_free(&x.reply.text);
	}
	return rc;
}

static int finish_upload(const kft_s3 *s, const char *key, const char *id, const char *parts,
                         const char *what, kft_error *err)
{
	char q[4 * 1024];
	kft_strbuf body;
	kft_strbuf_init(&body);
	kft_strbuf_printf(&body, "<CompleteMultipartUpload>%s</CompleteMultipartUpload>", parts);
	exchange x;
	exchange_init(&x, -1);
	x.bytes = kft_strbuf_str(&body);
	x.n_bytes = body.len;
	int rc = upload_query(q, sizeof(q), 0, id) == 0
	                 ? request(s, "POST", key, q, &x, body.len, what, err)
	                 : kft_error_set(err, KFT_ELIMIT, "s3 %s: UploadId too long", what);
	/* S3 may answer 200 with an Error document when completing fails late */
	char code[128];
	if (rc == 0 && kft_s3_xml_value(kft_strbuf_str(&x.reply.text), x.reply.text.len, "Code",
	                                code, sizeof(code)))
		rc = kft_error_set(err, KFT_EIO, "s3 %s: CompleteMultipartUpload: %s", what, code);
	kft_strbuf_free(&x.reply.text);
	kft_strbuf_free(&body);
	return rc;
}

static void abort_upload(const kft_s3 *s, const char *key, const char *id)
{
	char q[4 * 1024];
	exchange x;
	exchange_init(&x, -1);
	if (upload_query(q, sizeof(q), 0, id) == 0)
		request(s, "DELETE", key, q, &x, 0, "abort", NULL);
	kft_strbuf_free(&x.reply.text);
}

static int put_multipart(const kft_s3 *s, const char *key, int fd, uint64_t size,
                         uint64_t part_size, const char *what, kft_error *err)
{
	char id[1024];
	kft_strbuf parts;
	while (part_size < KFT_S3_PART_MIN || (size + part_size - 1) / part_size > KFT_S3_PARTS_MAX)
		part_size *= 2;
	int rc = create_upload(s, key, id, sizeof(id), what, err);
	if (rc)
		return rc;
	kft_strbuf_init(&parts);
	rc = put_parts(s, key, fd, size, part_size, id, &parts, what, err);
	if (rc == 0)
		rc = kft_strbuf_str(&parts)
		             ? finish_upload(s, key, id, kft_strbuf_str(&parts), what, err)
		             : kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (rc)
		abort_upload(s, key, id);
	kft_strbuf_free(&parts);
	return rc;
}

int kft_s3_put_file(const kft_s3 *s, const char *key, const char *path, uint64_t part_size,
                    kft_error *err)
{
	char what[KFT_S3_KEY_MAX + 80];
	struct stat st;
	snprintf(what, sizeof(what), "s3://%s/%s", s->bucket, key);
	if (!part_size)
		part_size = KFT_S3_PART_DEFAULT;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		int rc = kft_error_set(err, KFT_EIO, "s3 %s: reading %s: %s", what, path,
		                       fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return rc;
	}
	int rc = (uint64_t)st.st_size <= part_size
	                 ? put_whole(s, key, fd, (uint64_t)st.st_size, what, err)
	                 : put_multipart(s, key, fd, (uint64_t)st.st_size, part_size, what, err);
	close(fd);
	return rc;
}
