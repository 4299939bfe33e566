/*
 * http.h - the pieces of an HTTP/1.1 request head every server of ours
 * reads the same way (internal): where the head ends and the value of one
 * header field, the request line (which also checks every field line's
 * shape), and Go listen addresses. Used by the local status endpoint
 * (src/api/statusreq.c), the controller's servers (src/controller/httpd.c)
 * and the dashboard (src/ui/).
 */
#ifndef KFT_UTIL_HTTP_H
#define KFT_UTIL_HTTP_H

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

/* Parses a request head (NUL-terminated, as the servers read it, ending with
 * the blank line) into its method (upper-case token of at most 15 letters)
 * and its path, percent-decoded and without the query, written into `path`
 * (at least strlen(head) + 1 bytes). Returns 0, 400 for a malformed request
 * line or header line, or 505 for an HTTP version other than 1.0/1.1. */
int kft_http_request_line(const char *head, char method[16], char *path);

/* Parses a Go listen address (":8081", "127.0.0.1:0", "[::1]:8080") into
 * host (written into hostbuf; "" = every interface) and port. Returns 0 or
 * KFT_EINVAL naming the address. */
int kft_http_parse_listen(const char *addr, char *hostbuf, size_t hostsize, int *port,
                          kft_error *err);

#endif
