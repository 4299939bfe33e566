/*
 * ui_internal.h - what server.c gives the request handlers of api.c
 * (internal to src/ui).
 */
#ifndef KFT_UI_INTERNAL_H
#define KFT_UI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "ui/ui.h"

/* One request being answered, on a thread of its own. */
typedef struct kft_ui_conn {
	kft_ui *ui;
	int fd;
	char method[16];
	char *path;         /* percent-decoded, without the query */
	const char *query;  /* the raw query after '?', "" when none */
	const char *fields; /* the head's field lines */
	char *body;         /* a POST's body, NUL-terminated (NULL: none) */
	size_t body_len;
	kft_local *local; /* opened on first use, closed with the connection */
} kft_ui_conn;

/* The largest request body taken (a TrainJob to preview). */
#define KFT_UI_BODY_MAX (1024 * 1024)

/* The local engine for this connection's thread. NULL on failure (err set). */
kft_local *kft_ui_local(kft_ui_conn *c, kft_error *err);

/* The hooks; kft_ui_hooks_lock/unlock serialise runtimes and render. */
const kft_ui_hooks *kft_ui_hooks_of(const kft_ui_conn *c);
void kft_ui_hooks_lock(kft_ui_conn *c);
void kft_ui_hooks_unlock(kft_ui_conn *c);

/* The per-server CSRF token the page sends back with every action. */
const char *kft_ui_csrf(const kft_ui_conn *c);

/* Sends all of buf. 0, or -1 when the client is gone or too slow. */
int kft_ui_send(kft_ui_conn *c, const void *buf, size_t len);

/* A whole answer with Content-Length; extra is more header lines (each
 * ending "\r\n") or NULL. 0 or -1 as kft_ui_send. */
int kft_ui_respond(kft_ui_conn *c, int code, const char *type, const char *body, size_t len,
                   const char *extra);

/* A JSON answer; body is stolen (NULL: 500). */
int kft_ui_respond_json(kft_ui_conn *c, int code, json_t *body);

/* {"error": message} with code. */
int kft_ui_respond_error(kft_ui_conn *c, int code, const char *message);

/* The head of an answer whose body runs until the connection closes (a
 * stream of events or a file being followed). */
int kft_ui_start_stream(kft_ui_conn *c, const char *type, const char *extra);

/* Waits up to ms. 0 when the time passed, -1 when the client closed its
 * side or the server is stopping: a stream's cue to end. */
int kft_ui_wait(kft_ui_conn *c, int ms);

/* The value of query parameter name (percent-decoded) into buf; false when
 * absent or too long. */
bool kft_ui_query(const kft_ui_conn *c, const char *name, char *buf, size_t size);

/* api.c: answers c's request (method, path, query, body), authorised. */
void kft_ui_api(kft_ui_conn *c);

#endif
