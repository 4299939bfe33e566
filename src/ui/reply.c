/*
 * reply.c - answering one dashboard request through the server core's
 * connection: whole answers, JSON, errors with the status their code means,
 * streams and their waits, and the log writer every source's logs go
 * through (see ui_internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui_internal.h"
#include "util/json.h"

int kft_ui_send(kft_ui_conn *c, const void *buf, size_t len)
{
	return kft_http_send(c->http, buf, len);
}

int kft_ui_wait(kft_ui_conn *c, int ms)
{
	return kft_http_wait(c->http, ms);
}

int kft_ui_respond(kft_ui_conn *c, int code, const char *type, const char *body, size_t len,
                   const char *extra)
{
	return kft_http_respond(c->http, code, type, body, len, extra);
}

int kft_ui_respond_json(kft_ui_conn *c, int code, json_t *body)
{
	kft_strbuf text;
	kft_strbuf_init(&text);
	int rc = body ? kft_json_dump(body, &text) : KFT_ENOMEM;
	json_decref(body);
	if (rc == 0)
		rc = kft_ui_respond(c, code, "application/json", text.buf, text.len, NULL);
	else {
		const char *why = rc == KFT_EINVAL ? "not UTF-8\n" : "out of memory\n";
		rc = kft_ui_respond(c, 500, "text/plain; charset=utf-8", why, strlen(why), NULL);
	}
	kft_strbuf_free(&text);
	return rc;
}

int kft_ui_respond_error(kft_ui_conn *c, int code, const char *message)
{
	return kft_ui_respond_json(c, code, json_pack("{s:s}", "error", message ? message : ""));
}

int kft_ui_respond_failure(kft_ui_conn *c, const kft_error *err)
{
	int code = err->code == KFT_ENOTFOUND                              ? 404
	           : err->code == KFT_EINVAL || err->code == KFT_ECONFLICT ? 409
	           : err->code == KFT_EDENIED                              ? 403
	           : err->code == KFT_EUNAVAILABLE                         ? 503
	                                                                   : 500;
	return kft_ui_respond_error(c, code, err->message);
}

int kft_ui_start_stream(kft_ui_conn *c, const char *type, const char *extra)
{
	return kft_http_stream_start(c->http, type, extra);
}

bool kft_ui_query(const kft_ui_conn *c, const char *name, char *buf, size_t size)
{
	return kft_http_query_value(c->query, name, buf, size);
}

int kft_ui_log_write(kft_ui_log *out, const void *data, size_t len)
{
	if (!out->started) {
		out->started = true;
		if (kft_ui_start_stream(out->c, "text/plain; charset=utf-8", out->extra) != 0)
			return -1;
	}
	return len ? kft_ui_send(out->c, data, len) : 0;
}
