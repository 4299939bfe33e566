/*
 * http.h - how every server of ours reads an HTTP/1.1 request head
 * (internal): where the head ends, the request line, the field lines,
 * query parameters and cookies, the body's length, the reason phrase of a
 * status code, and Go listen addresses. Pure functions over bytes any
 * client may send; fuzzed by tests/fuzz/fuzz_http_request.c. The server
 * core (http/server.h) reads heads with it; so do its handlers: the
 * controller's probes, metrics, webhooks and status server, the dashboard
 * and the local status endpoint.
 */
#ifndef KFT_HTTP_HTTP_H
#define KFT_HTTP_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "kftrainer/error.h"

/* The end of the head within buf[0..len): just past its blank line ("\r\n\r\n"
 * or "\n\n"), or 0 when the blank line has not arrived. */
size_t kft_http_head_end(const char *buf, size_t len);

/* The value of field `name` (case-insensitive) among `fields`, the head's
 * lines after the request line, NUL-terminated: copied into buf (size
 * bytes) with surrounding blanks trimmed. Returns 1 found, 0 absent, -1
 * when the value does not fit or the field is given twice. */
int kft_http_header(const char *fields, const char *name, char *buf, size_t size);

/* Walks every field line named `name` (case-insensitive) in fields: from
 * *pos (start it at fields), sets *value and *len to the next one's value,
 * blanks trimmed, borrowed from fields (not NUL-terminated), advances *pos
 * and returns true; false when there is no more. For fields a request may
 * repeat (Cookie). */
bool kft_http_field_next(const char **pos, const char *name, const char **value, size_t *len);

/* Parses a request head (NUL-terminated, as the servers read it, ending with
 * the blank line) into its method (upper-case token of at most 15 letters)
 * and its path, percent-decoded and without the query, written into `path`
 * (at least strlen(head) + 1 bytes). Returns 0, 400 for a malformed request
 * line or header line, or 505 for an HTTP version other than 1.0/1.1. */
int kft_http_request_line(const char *head, char method[16], char *path);

/* A request head taken apart. Strings point into memory the struct owns
 * (free with kft_http_head_free). */
typedef struct kft_http_head {
	char method[16];
	char *text;        /* the head, NUL-terminated, request line to blank line */
	size_t len;        /* its bytes */
	char *path;        /* the target percent-decoded, without the query */
	const char *query; /* the raw query after '?', "" when none */
	const char *fields;
	char host[256];           /* the Host field, "" when absent */
	long long content_length; /* -1 when absent */
	bool chunked;             /* a Transfer-Encoding field is present */
} kft_http_head;

/* Reads the head buf[0..len) (through its blank line) into h. 0, or the
 * status to refuse it with: 400 (a malformed request line or field, a NUL
 * byte, a Host or Content-Length given twice or too long, a Content-Length
 * that is not a decimal number of at most 18 digits, as Go's server
 * refuses it), 505 (not HTTP/1.x), 500 (no memory). h is filled as far as
 * it got either way (method "GET" and path "/" at worst, or path NULL on
 * ENOMEM); free it with kft_http_head_free. */
int kft_http_head_parse(const char *buf, size_t len, kft_http_head *h);
void kft_http_head_free(kft_http_head *h);

/* The value of parameter name in query (a raw query string), percent- and
 * '+'-decoded, into buf (size bytes, NUL-terminated); false when absent,
 * too long, or decoding to a NUL byte. */
bool kft_http_query_value(const char *query, const char *name, char *buf, size_t size);

/* Whether some cookie called name, in any Cookie field of fields (of any
 * length), has a value for which match(value, len, ctx) is true. Browsers
 * may send two cookies of one name (two paths, two servers on one host). */
bool kft_http_cookie_matches(const char *fields, const char *name,
                             bool (*match)(const char *value, size_t len, void *ctx), void *ctx);

/* Whether given[0..len) equals the NUL-terminated secret want, compared so
 * that the time taken does not tell where they differ. */
bool kft_http_secret_equal(const char *given, size_t len, const char *want);

/* The reason phrase for a status code, as Go's net/http words it
 * ("Internal Server Error" for codes it does not know). */
const char *kft_http_reason(int code);

/* Parses a Go listen address (":8081", "127.0.0.1:0", "[::1]:8080") into
 * host (written into hostbuf; "" = every interface) and port. Returns 0 or
 * KFT_EINVAL naming the address. */
int kft_http_parse_listen(const char *addr, char *hostbuf, size_t hostsize, int *port,
                          kft_error *err);

#endif
