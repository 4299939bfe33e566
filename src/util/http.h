/*
 * http.h - the pieces of an HTTP/1.1 request head every server of ours
 * reads the same way (internal): where the head ends and the value of one
 * header field. The request line itself is parsed by kft_cm_http_parse
 * (controller.h), which also checks every field line's shape; these two
 * work on what it accepted. Used by the local status endpoint
 * (src/api/statusreq.c), the controller's servers (src/controller/httpd.c)
 * and the dashboard (src/ui/).
 */
#ifndef KFT_UTIL_HTTP_H
#define KFT_UTIL_HTTP_H

#include <stddef.h>

/* The end of the head within buf[0..len): just past its blank line ("\r\n\r\n"
 * or "\n\n"), or 0 when the blank line has not arrived. */
size_t kft_http_head_end(const char *buf, size_t len);

/* The value of field `name` (case-insensitive) among `fields`, the head's
 * lines after the request line, NUL-terminated: copied into buf (size
 * bytes) with surrounding blanks trimmed. Returns 1 found, 0 absent, -1
 * when the value does not fit or the field is given twice. */
int kft_http_header(const char *fields, const char *name, char *buf, size_t size);

#endif
