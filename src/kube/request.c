/*
 * request.c - one API request with retries, and what its answer means.
 *
 * The loop follows client-go's: wait for the rate limiter, send, and when the
 * server says "later" (429, or a 5xx) or the connection failed, wait and try
 * again, up to max_retries times. A Retry-After header sets the wait; without
 * one the wait grows exponentially with jitter. A request that creates
 * (POST) is only repeated when the server cannot have acted on it - the
 * connection never opened, or the answer was 429 or carried Retry-After - so
 * a retry never makes a second object.
 *
 * A 401 on a client whose token comes from a file re-reads the file and tries
 * once more: the token may have rotated since it was cached.
 *
 * Error answers are kube Status objects; their message is passed on word for
 * word since it is what the user must read (it names the object and fields).
 */
#include "kube/kube_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/strbuf.h"

#define RETRY_BASE_MS       200
#define RETRY_CAP_MS        8000
#define RETRY_AFTER_CAP_SEC 60

/* What one attempt produced. */
typedef struct attempt {
	kft_kube_body body;
	long code;        /* HTTP status, 0 when no answer */
	CURLcode cc;      /* transport result */
	long retry_after; /* seconds, -1 when absent */
	char curl_msg[CURL_ERROR_SIZE];
	const kft_kube_req *req;
	CURL *h;
	int sunk;    /* body bytes went to req->sink */
	int sink_rc; /* the sink's non-zero result */
} attempt;

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	attempt *a = ctx;
	kft_kube_body *b = &a->body;
	size_t len = size * n;
	if (a->req->sink) {
		long code = 0;
		curl_easy_getinfo(a->h, CURLINFO_RESPONSE_CODE, &code);
		if (code >= 200 && code <= 299) {
			a->sunk = 1;
			a->sink_rc = a->req->sink(a->req->sink_ctx, data, len);
			return a->sink_rc ? 0 : len;
		}
	}
	if (len > b->max - b->text.len) {
		b->too_big = 1;
		return 0; /* aborts the transfer */
	}
	kft_strbuf_putn(&b->text, data, len);
	return b->text.failed ? 0 : len;
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
	attempt *a = ctx;
	size_t len = size * n;
	static const char name[] = "retry-after:";
	if (len > sizeof(name) && strncasecmp(data, name, sizeof(name) - 1) == 0) {
		char buf[32];
		size_t vlen = len - (sizeof(name) - 1);
		if (vlen >= sizeof(buf))
			vlen = sizeof(buf) - 1;
		memcpy(buf, data + sizeof(name) - 1, vlen);
		buf[vlen] = '\0';
		char *end;
		long v = strtol(buf, &end, 10);
		while (isspace((unsigned char)*end))
			end++;
		/* only delta-seconds, as client-go reads it; a date is ignored */
		if (end != buf && *end == '\0' && v >= 0)
			a->retry_after = v > RETRY_AFTER_CAP_SEC ? RETRY_AFTER_CAP_SEC : v;
	}
	return len;
}

static void set_method(CURL *h, const kft_kube_req *req)
{
	if (strcmp(req->method, "GET") != 0)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
	if (req->body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	} else if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "DELETE") != 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
}

typedef struct cancel_ctx {
	kft_kube *k;
	const atomic_int *stop;
} cancel_ctx;

/* curl calls it at least once a second during a transfer; non-zero aborts. */
static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const cancel_ctx *c = ctx;
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return kft_kube_canceled(c->k, c->stop);
}

static int send_once(kft_kube *k, const kft_kube_req *req, const char *url, attempt *a,
                     kft_error *err)
{
	cancel_ctx cc = {k, req->stop};
	struct curl_slist *headers = NULL;
	CURL *h = kft_kube_handle_get(k);
	if (!h)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int rc = kft_kube_handle_setup(k, h, url, req->content_type, req->accept, &headers, err);
	if (rc) {
		kft_kube_handle_put(k, h);
		return rc;
	}
	set_method(h, req);
	a->curl_msg[0] = '\0';
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, a->curl_msg);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	a->req = req;
	a->h = h;
	curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, &cc);
	if (k->timeout_ms)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, k->timeout_ms);
	a->cc = curl_easy_perform(h);
	a->code = 0;
	long answered = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &answered);
	if (a->cc == CURLE_OK)
		a->code = answered;
	kft_kube_observe(k, req->method, answered);
	kft_kube_handle_put(k, h);
	curl_slist_free_all(headers);
	return 0;
}

/* Transport failures where the request never reached the server. */
static int never_sent(CURLcode cc)
{
	return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
	       cc == CURLE_COULDNT_RESOLVE_PROXY;
}

/* Transport failures worth another try: not TLS trust or local problems. */
static int transient(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR: return 1;
	default: return 0;
	}
}

static int should_retry(const kft_kube_req *req, const attempt *a)
{
	int post = strcmp(req->method, "POST") == 0;
	if (a->sunk)
		return 0; /* the sink has seen part of the body */
	if (a->cc != CURLE_OK)
		return post ? never_sent(a->cc) : transient(a->cc);
	if (a->code == 429)
		return 1;
	if (a->code >= 500 && a->code <= 599)
		return !post || a->retry_after >= 0;
	return 0;
}

static int transport_error(const char *what, const attempt *a, kft_error *err)
{
	if (a->body.too_big)
		return kft_error_set(err, KFT_ELIMIT, "%s: the response is larger than %zu bytes",
		                     what, a->body.max);
	/* mbedTLS's words alone ("Cert verify failed: BADCERT_NOT_TRUSTED") do
	 * not say what was refused */
	if (a->cc == CURLE_PEER_FAILED_VERIFICATION && a->curl_msg[0])
		return kft_error_set(err, KFT_EUNAVAILABLE,
		                     "%s: failed to verify the server's certificate: %s", what,
		                     a->curl_msg);
	return kft_error_set(err, KFT_EUNAVAILABLE, "%s: %s", what,
	                     a->curl_msg[0] ? a->curl_msg : curl_easy_strerror(a->cc));
}

static int finish(const char *what, const attempt *a, json_t **out, kft_error *err)
{
	if (a->sink_rc)
		return a->sink_rc;
	if (a->cc != CURLE_OK)
		return transport_error(what, a, err);
	if (a->code < 200 || a->code > 299)
		return kft_kube_map_status(a->code, a->body.text.buf, a->body.text.len, what, err);
	if (!out || a->body.text.len == 0)
		return 0;
	json_error_t jerr;
	/* objects are data: "\u0000" is a valid string, as for Go's client */
	*out = json_loadb(a->body.text.buf, a->body.text.len, JSON_ALLOW_NUL, &jerr);
	if (!*out)
		return kft_error_set(err, KFT_EPARSE, "%s: the answer is not JSON: %s", what,
		                     jerr.text);
	return 0;
}

static void attempt_reset(attempt *a)
{
	kft_strbuf_free(&a->body.text);
	memset(a, 0, sizeof(*a)); /* an all-zero kft_strbuf is an empty one */
	a->body.max = KFT_KUBE_MAX_RESPONSE_BYTES;
	a->retry_after = -1;
}

/* Returns 1 when canceled during the wait. */
static int wait_before_retry(kft_kube *k, const kft_kube_req *req, const attempt *a,
                             kft_backoff *bo)
{
	long ms = kft_backoff_next(bo);
	if (a->retry_after >= 0)
		ms = a->retry_after * 1000;
	return kft_kube_sleep(k, ms, req->stop);
}

static int canceled(const char *what, kft_error *err)
{
	return kft_error_set(err, KFT_EUNAVAILABLE, "%s: canceled (shutting down)", what);
}

static int gave_up(const char *what, const attempt *a, int retries, json_t **out, kft_error *err)
{
	int rc = finish(what, a, out, err);
	if (rc && retries > 0 && err) {
		char msg[KFT_ERROR_MESSAGE_MAX];
		snprintf(msg, sizeof(msg), "%s", err->message);
		kft_error_set(err, KFT_EUNAVAILABLE, "%s (gave up after %d retries)", msg, retries);
	}
	return rc ? (retries > 0 ? KFT_EUNAVAILABLE : rc) : 0;
}

/* A request about to be retried is worth saying at once: retries of a
 * refused connection take half a minute, and a start-up that waits on
 * them must not be silent meanwhile. Said once per request. */
static void warn_retrying(kft_kube *k, const char *what, const attempt *a)
{
	kft_error why;
	kft_error_clear(&why);
	finish(what, a, NULL, &why);
	kft_kube_warn(k, "%s (retrying, at most %d times)", why.message, k->max_retries);
}

static int run(kft_kube *k, const kft_kube_req *req, const char *url, const char *what,
               json_t **out, kft_error *err)
{
	attempt a = {0};
	kft_backoff bo;
	int rc = 0, retries = 0, reauth = k->token_file != NULL;
	kft_backoff_init(&bo, RETRY_BASE_MS, RETRY_CAP_MS, 0.2);
	for (;;) {
		attempt_reset(&a);
		if (kft_kube_rate_wait(k, req->path, req->stop)) {
			rc = canceled(what, err);
			break;
		}
		rc = send_once(k, req, url, &a, err);
		if (rc)
			break;
		if (a.cc == CURLE_ABORTED_BY_CALLBACK && !a.sink_rc &&
		    kft_kube_canceled(k, req->stop)) {
			rc = canceled(what, err);
			break;
		}
		if (a.cc == CURLE_OK && a.code == 401 && reauth) {
			reauth = 0; /* the token may have rotated since it was read */
			kft_kube_token_expire(k);
			continue;
		}
		if (!should_retry(req, &a) || retries >= k->max_retries) {
			rc = should_retry(req, &a) ? gave_up(what, &a, retries, out, err)
			                           : finish(what, &a, out, err);
			break;
		}
		if (retries == 0)
			warn_retrying(k, what, &a);
		retries++;
		if (wait_before_retry(k, req, &a, &bo)) {
			rc = canceled(what, err);
			break;
		}
	}
	kft_strbuf_free(&a.body.text);
	return rc;
}

int kft_kube_do(kft_kube *k, const kft_kube_req *req, json_t **out, kft_error *err)
{
	if (out)
		*out = NULL;
	kft_strbuf url, what;
	kft_strbuf_init(&url);
	kft_strbuf_init(&what);
	kft_strbuf_printf(&url, "%s%s", k->server, req->path);
	kft_strbuf_printf(&what, "%s %s", req->method, kft_strbuf_str(&url));
	int rc;
	if (url.failed || what.failed)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	else
		rc = run(k, req, kft_strbuf_str(&url), kft_strbuf_str(&what),
		         req->sink ? NULL : out, err);
	kft_strbuf_free(&url);
	kft_strbuf_free(&what);
	if (rc && out && *out) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static kft_status status_for(long code, const char *reason)
{
	if (code == 404)
		return KFT_ENOTFOUND;
	if (code == 409)
		return reason && strcmp(reason, "AlreadyExists") == 0 ? KFT_EEXIST : KFT_ECONFLICT;
	if (code == 410)
		return KFT_EGONE;
	if (code == 401 || code == 403)
		return KFT_EDENIED;
	if (code == 429 || (code >= 500 && code <= 599))
		return KFT_EUNAVAILABLE;
	return KFT_EINVAL;
}

/* A short printable excerpt of a body that is not a Status. */
static void excerpt(const char *body, size_t len, char *buf, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 1 < n && i < 200; i++)
		buf[o++] = isprint((unsigned char)body[i]) ? body[i] : ' ';
	buf[o] = '\0';
}

int kft_kube_map_status(long code, const char *body, size_t len, const char *what, kft_error *err)
{
	json_t *st = body && len ? json_loadb(body, len, JSON_ALLOW_NUL, NULL) : NULL;
	const char *kind = json_string_value(json_object_get(st, "kind"));
	const char *reason = json_string_value(json_object_get(st, "reason"));
	const char *msg = json_string_value(json_object_get(st, "message"));
	int rc;
	if (kind && strcmp(kind, "Status") == 0 && msg && *msg) {
		rc = kft_error_set(err, status_for(code, reason), "%s", msg);
	} else {
		char ex[256];
		excerpt(body ? body : "", len, ex, sizeof(ex));
		rc = kft_error_set(err, status_for(code, reason), "%s: HTTP %ld%s%s", what, code,
		                   ex[0] ? ": " : "", ex);
	}
	json_decref(st);
	return rc;
}
