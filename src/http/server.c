/*
 * server.c - the one HTTP/1.1 server core: a poll thread that takes every
 * connection as far as a whole, admitted request, and a pool of workers
 * that answer them (see server.h).
 *
 * Why this shape. Our servers answer two kinds of client: probes, scrapes,
 * webhooks and status reports (one short answer each), and a dashboard's
 * tabs (streams that last as long as the tab). What must never happen is a
 * client that has not said who it is, or says nothing at all, keeping an
 * authenticated one out. So nothing about a connection blocks until its
 * request is whole and `admit` let it through: the poll thread accepts,
 * shakes hands (mbedTLS, non-blocking), reads the head, asks admit, reads
 * the body, all as small steps when poll() says a socket can move. Only
 * then does a worker take it; a worker may block (with deadlines) on its
 * client or on the handler's own work. Until then a connection costs a
 * descriptor and a small record (TLS state is made when its first byte
 * arrives), and there are at most `pending` of them. Who a client is, for
 * sharing them: its address, or on loopback (where every client has one
 * address) the user owning its socket, which the kernel tells (peer.c).
 * A client other than our own user holds at most a quarter of the places
 * and past that pushes out its own oldest; when every place is taken a
 * newcomer pushes out first a connection that only lingers after its
 * answer, then a stranger's silent one, a stranger's active one, our own
 * user's silent one, the oldest first, and a stranger never pushes out our
 * own user's. So neither a flood of idle sockets nor one of slow clients,
 * from another local user or a remote address, keeps our own clients out,
 * and a client that sends its request at once gets in.
 *
 * Every connection answers one request and closes (Connection: close):
 * probes and reports are one request each, the dashboard opens few, and no
 * state outlives a request. Closing goes through LINGER: our side is shut
 * and what the client still sends is read off (bounded in time and bytes),
 * because closing a socket with unread input makes the kernel send a reset
 * that can destroy an answer the client has not read yet (a 431, say).
 *
 * Bodies are read into memory, bounded per request (body_max) and, across
 * the requests being read at once, by a budget of four bodies (at least
 * 1 MiB): a request whose body would exceed it waits, unpolled, until
 * others finish. Buffers grow with what arrives, so a client that declares
 * a large body and sends it slowly holds only what it sent.
 *
 * Threads: the poll thread and the workers run with every signal blocked;
 * workers start one at a time when every one is busy, up to `workers`, and
 * stay. stop() writes a pipe every wait also polls, so it returns at once
 * even mid-stream.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/server_internal.h"
#include "util/clock.h"

#define DEFAULT_HEAD_MAX 8192
#define DEFAULT_TIMEOUT  5000
#define DEFAULT_WORKERS  4
#define DEFAULT_PENDING  128
#define DEFAULT_STACK    (256 * 1024)
#define MAX_WORKERS      64
#define LINGER_MS        500
#define LINGER_MAX       (256 * 1024)
#define PEER_SHARE       4
#define ACCEPT_BATCH     256
#define BODY_CHUNK       (64 * 1024)

enum { KEEP, DROP, HANDED };

/* ---- connections ---------------------------------------------------------------- */

static size_t body_budget(const kft_httpd *s)
{
	size_t b = 4 * s->o.body_max;
	return b < (1u << 20) ? (1u << 20) : b;
}

/* Releases what a connection holds but its socket. */
static void conn_release(kft_httpd *s, kft_http_conn *c)
{
	kft_http_conn_tls_end(c);
	if (c->in_cap > s->o.head_max + 1)
		atomic_fetch_sub(&s->body_bytes, c->in_cap - (s->o.head_max + 1));
	free(c->in);
	free(c->out);
	kft_http_head_free(&c->head);
	c->in = c->out = NULL;
	c->in_len = c->in_cap = c->out_len = c->out_off = 0;
}

static void conn_free(kft_httpd *s, kft_http_conn *c)
{
	conn_release(s, c);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static void begin_linger(kft_http_conn *c)
{
	kft_http_conn_tls_end(c);
	shutdown(c->fd, SHUT_WR);
	c->st = C_LINGER;
	c->deadline = kft_clock_mono_ms() + LINGER_MS;
}

static int step_linger(kft_http_conn *c)
{
	char sink[4096];
	for (;;) {
		ssize_t n = recv(c->fd, sink, sizeof(sink), 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return KEEP;
		if (n <= 0 || (c->lingered += (size_t)n) > LINGER_MAX)
			return DROP;
	}
}

static int step_write(kft_http_conn *c)
{
	while (c->out_off < c->out_len) {
		int n = kft_http_conn_write_nb(c, c->out + c->out_off, c->out_len - c->out_off);
		if (n == -2)
			return KEEP;
		if (n < 0)
			return DROP;
		c->out_off += (size_t)n;
	}
	begin_linger(c);
	return step_linger(c);
}

/* Answers c from the poll thread: body (malloc'd, taken; NULL: Go's
 * "CODE Reason" text). */
static int answer_now(kft_httpd *s, kft_http_conn *c, int code, const char *type, char *body,
                      const char *extra)
{
	char text[96];
	if (!body)
		snprintf(text, sizeof(text), "%d %s", code, kft_http_reason(code));
	const char *b = body ? body : text;
	bool head_only = c->head_parsed && strcmp(c->head.method, "HEAD") == 0;
	free(c->out);
	c->out = kft_http_answer_bytes(s, code, type, extra, (long long)strlen(b), b, head_only,
	                               &c->out_len);
	free(body);
	if (!c->out)
		return DROP;
	c->out_off = 0;
	c->st = C_WRITE;
	c->want_write = true;
	c->deadline = kft_clock_mono_ms() + s->o.write_timeout_ms;
	return step_write(c);
}

/* ---- handing over to workers ----------------------------------------------------------- */

static int start_thread(kft_httpd *s, pthread_t *t, void *(*fn)(void *))
{
	pthread_attr_t attr;
	sigset_t all, old;
	if (pthread_attr_init(&attr) != 0)
		return -1;
	pthread_attr_setstacksize(&attr, s->o.stack_size);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(t, &attr, fn, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return rc == 0 ? 0 : -1;
}

static void *work_main(void *arg);

/* One more worker; called before the poll thread starts, then by it alone. */
static int start_worker(kft_httpd *s)
{
	if (s->nworkers >= s->o.workers || start_thread(s, &s->workers[s->nworkers], work_main))
		return -1;
	s->nworkers++;
	return 0;
}

/* The request is whole: to a worker, or 503 when every worker is busy and
 * the queue is full. */
static int dispatch(kft_httpd *s, kft_http_conn *c)
{
	size_t body_at = c->head.len;
	c->in[c->need] = '\0';
	c->req.body = c->in + body_at;
	c->req.body_len = c->need - body_at;
	pthread_mutex_lock(&s->mu);
	bool free_worker = s->nworkers - s->busy > s->nready, grow = s->nworkers < s->o.workers;
	if (!free_worker && !grow && s->nready >= s->o.queue) {
		pthread_mutex_unlock(&s->mu);
		return answer_now(s, c, 503, NULL, NULL, "Retry-After: 1\r\n");
	}
	c->st = C_SERVING;
	c->next = NULL;
	if (s->ready_tail)
		s->ready_tail->next = c;
	else
		s->ready = c;
	s->ready_tail = c;
	s->nready++;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
	if (!free_worker)
		(void)start_worker(s); /* a failure leaves it to the others */
	return HANDED;
}

static void *work_main(void *arg)
{
	kft_httpd *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!atomic_load(&s->stopping) && !s->ready)
			pthread_cond_wait(&s->cond, &s->mu);
		if (atomic_load(&s->stopping))
			break;
		s->busy++;
		kft_http_conn *c = s->ready;
		s->ready = c->next;
		if (!s->ready)
			s->ready_tail = NULL;
		s->nready--;
		pthread_mutex_unlock(&s->mu);
		s->handlers.serve(s->handlers.ctx, c, &c->req);
		conn_release(s, c);
		pthread_mutex_lock(&s->mu);
		s->busy--;
		c->next = s->done;
		s->done = c;
		if (write(s->wake[1], "d", 1) < 0) {
			/* the pipe is non-blocking: a full one already rings */
		}
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- reading a request ------------------------------------------------------------------ */

/* Whether buf[0..n) can still become a request: no NUL bytes, and an
 * upper-case method of at most 15 letters before the first space. Lets
 * garbage be answered at once instead of after the head timeout. */
static bool plausible(const char *buf, size_t n)
{
	if (memchr(buf, '\0', n))
		return false;
	size_t i = 0;
	while (i < n && i < 16 && buf[i] >= 'A' && buf[i] <= 'Z')
		i++;
	return i == n || (i > 0 && i < 16 && buf[i] == ' ');
}

static bool has_body_method(const char *m)
{
	return strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0;
}

/* The server's own refusal of a body it will not read, or 0. */
static int body_refusal(const kft_httpd *s, const kft_http_head *h)
{
	if (s->o.body_max == 0)
		return 0; /* a server that reads no body answers without it */
	if (h->chunked)
		return 411;
	if (h->content_length > (long long)s->o.body_max)
		return 413;
	if (h->content_length < 0 && s->o.length_required && has_body_method(h->method))
		return 411;
	return 0;
}

static int step_body(kft_httpd *s, kft_http_conn *c);

/* The head is c->in[0..end): parse it, let admit judge it, then the body. */
static int head_done(kft_httpd *s, kft_http_conn *c, size_t end)
{
	int rc = kft_http_head_parse(c->in, end, &c->head);
	c->head_parsed = true;
	if (rc)
		return answer_now(s, c, rc, NULL, NULL, NULL);
	if (s->o.host_required && !c->head.host[0])
		return answer_now(s, c, 400, NULL,
		                  strdup("400 Bad Request: missing required Host header"), NULL);
	c->req = (kft_http_req){.head = &c->head,
	                        .body = "",
	                        .refused = body_refusal(s, &c->head),
	                        .peer_loopback = c->loopback};
	kft_http_answer a = {0};
	if (s->handlers.admit && s->handlers.admit(s->handlers.ctx, &c->req, &a))
		return answer_now(s, c, a.code, a.type, a.body, a.extra[0] ? a.extra : NULL);
	if (c->req.refused)
		return answer_now(s, c, c->req.refused, NULL, NULL, NULL);
	c->need = end;
	if (s->o.body_max && c->head.content_length > 0)
		c->need += (size_t)c->head.content_length;
	c->st = C_BODY;
	return step_body(s, c);
}

static int step_head(kft_httpd *s, kft_http_conn *c)
{
	size_t max = s->o.head_max;
	if (!c->in) {
		c->in = malloc(max + 1);
		c->in_cap = max + 1;
		if (!c->in)
			return DROP;
	}
	for (;;) {
		if (c->in_len >= max)
			return answer_now(s, c, 431, NULL, NULL, NULL);
		int n = kft_http_conn_read_nb(c, c->in + c->in_len, max - c->in_len);
		if (n == -2)
			return KEEP;
		if (n <= 0)
			return DROP; /* gone before a request: nothing to answer */
		size_t from = c->in_len > 3 ? c->in_len - 3 : 0;
		c->in_len += (size_t)n;
		c->got_bytes = true;
		size_t end = kft_http_head_end(c->in + from, c->in_len - from);
		if (end)
			return head_done(s, c, from + end);
		if (!plausible(c->in, c->in_len))
			return answer_now(s, c, 400, NULL, NULL, NULL);
	}
}

/* Room for more of the body, within the budget; false when it must wait. */
static bool grow_body(kft_httpd *s, kft_http_conn *c)
{
	size_t want =
	        c->in_cap * 2 > c->in_cap + BODY_CHUNK ? c->in_cap + BODY_CHUNK : c->in_cap * 2;
	if (want > c->need + 1)
		want = c->need + 1;
	size_t more = want - c->in_cap;
	if (atomic_load(&s->body_bytes) + more > body_budget(s))
		return false;
	char *in = realloc(c->in, want);
	if (!in)
		return false;
	atomic_fetch_add(&s->body_bytes, more);
	c->in = in;
	c->in_cap = want;
	return true;
}

static int step_body(kft_httpd *s, kft_http_conn *c)
{
	c->paused = false;
	while (c->in_len < c->need) {
		if (c->in_cap < c->need + 1 && c->in_len + 1 >= c->in_cap && !grow_body(s, c)) {
			c->paused = true;
			return KEEP;
		}
		size_t room = (c->in_cap - 1) - c->in_len, left = c->need - c->in_len;
		int n = kft_http_conn_read_nb(c, c->in + c->in_len, room < left ? room : left);
		if (n == -2)
			return KEEP;
		if (n <= 0)
			return DROP;
		c->in_len += (size_t)n;
	}
	return dispatch(s, c);
}

/* Moves c as far as it can go now. */
static int step(kft_httpd *s, kft_http_conn *c)
{
	switch (c->st) {
	case C_IDLE:
		if (s->tls_on && kft_http_conn_tls_begin(c) != 0)
			return DROP;
		c->st = s->tls_on ? C_HANDSHAKE : C_HEAD;
		return step(s, c);
	case C_HANDSHAKE: {
		int rc = kft_http_conn_handshake(c);
		c->got_bytes = true;
		if (rc == -2)
			return KEEP;
		if (rc < 0)
			return DROP; /* plain HTTP, an old TLS, no suite in common */
		c->st = C_HEAD;
		return step_head(s, c);
	}
	case C_HEAD: return step_head(s, c);
	case C_BODY: return step_body(s, c);
	case C_WRITE: return step_write(c);
	case C_LINGER: return step_linger(c);
	default: return KEEP;
	}
}

/* ---- accepting, and making room ----------------------------------------------------------- */

/* A client of our own user on loopback; everyone else is a stranger. */
static bool is_own(const kft_httpd *s, const kft_http_conn *c)
{
	return c->loopback && c->uid >= 0 && c->uid == s->own_uid;
}

/* One client as far as sharing goes: on loopback its user (every local
 * client has the same address), elsewhere its address. */
static bool same_client(const kft_http_conn *a, const kft_http_conn *b)
{
	if (a->loopback || b->loopback)
		return a->loopback && b->loopback && a->uid == b->uid;
	return memcmp(&a->peer, &b->peer, sizeof(a->peer)) == 0;
}

/* How good a victim c is when room must be made, lowest first: lingering
 * after an answer; a stranger's silent, then active connection; our own
 * user's silent, then active one. */
static int victim_rank(const kft_httpd *s, const kft_http_conn *c)
{
	if (c->st == C_LINGER || c->st == C_WRITE)
		return 0;
	return (is_own(s, c) ? 3 : 1) + c->got_bytes;
}

/* The best victim of all (the lowest rank, the oldest among equals), -1
 * when there is none. */
static long best_victim(const kft_httpd *s)
{
	long best = -1;
	for (size_t i = 0; i < s->nconns; i++)
		if (best < 0 || victim_rank(s, s->conns[i]) < victim_rank(s, s->conns[best]))
			best = (long)i;
	return best;
}

/* The connection a newcomer n pushes out (its index), -1 for none, or -2
 * when n itself must go: a stranger holds at most a quarter of the places
 * and then pushes out its own oldest; when every place is taken, the best
 * victim goes, but a stranger never pushes out our own user's clients.
 * Connections are kept in accept order, so the first found is the oldest. */
static long victim(const kft_httpd *s, const kft_http_conn *n)
{
	size_t share = (size_t)s->o.pending / PEER_SHARE, mine = 0;
	long first_mine = -1;
	if (!is_own(s, n)) {
		for (size_t i = 0; i < s->nconns; i++)
			if (same_client(s->conns[i], n) && mine++ == 0)
				first_mine = (long)i;
		if (mine >= (share ? share : 1))
			return first_mine;
	}
	if (s->nconns < (size_t)s->o.pending)
		return -1;
	long best = best_victim(s);
	if (best >= 0 && !is_own(s, n) && victim_rank(s, s->conns[best]) >= 3)
		return -2;
	return best;
}

static void remove_at(kft_httpd *s, size_t i)
{
	memmove(&s->conns[i], &s->conns[i + 1], (s->nconns - i - 1) * sizeof(s->conns[0]));
	s->nconns--;
}

static int append(kft_httpd *s, kft_http_conn *c)
{
	if (s->nconns == s->conns_cap) {
		size_t cap = s->conns_cap ? s->conns_cap * 2 : 16;
		kft_http_conn **grown = realloc(s->conns, cap * sizeof(*grown));
		if (!grown)
			return -1;
		s->conns = grown;
		s->conns_cap = cap;
	}
	s->conns[s->nconns++] = c;
	return 0;
}

static void peer_of(const struct sockaddr_storage *ss, struct in6_addr *out)
{
	if (ss->ss_family == AF_INET6) {
		*out = ((const struct sockaddr_in6 *)ss)->sin6_addr;
		return;
	}
	memset(out, 0, sizeof(*out));
	out->s6_addr[10] = out->s6_addr[11] = 0xff;
	memcpy(&out->s6_addr[12], &((const struct sockaddr_in *)ss)->sin_addr, 4);
}

static void drop_at(kft_httpd *s, size_t i)
{
	conn_free(s, s->conns[i]);
	remove_at(s, i);
}

static void take(kft_httpd *s, int fd, const struct sockaddr_storage *ss, long long now)
{
	kft_http_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->srv = s;
	c->fd = fd;
	peer_of(ss, &c->peer);
	c->loopback = kft_http_addr_loopback(&c->peer);
	c->uid = c->loopback ? kft_http_peer_uid(s->diag_fd, fd, ss) : -1;
	c->accepted = now;
	c->deadline = now + s->o.head_timeout_ms;
	long v = victim(s, c);
	if (v >= 0)
		drop_at(s, (size_t)v);
	if (v == -2 || append(s, c) != 0)
		conn_free(s, c);
}

/* Accepts what the listener holds; false when out of descriptors (the
 * listener then rests a moment instead of spinning on it). */
static bool accept_some(kft_httpd *s, long long now)
{
	for (int k = 0; k < ACCEPT_BATCH; k++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) {
			take(s, fd, &ss, now);
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			long v = best_victim(s);
			if (v < 0)
				return false;
			drop_at(s, (size_t)v);
			continue;
		}
		return true;
	}
	return true;
}

/* ---- the poll thread ------------------------------------------------------------------------ */

/* Connections workers finished with come back to linger. */
static void take_back(kft_httpd *s)
{
	char buf[64];
	while (read(s->wake[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&s->mu);
	kft_http_conn *c = s->done;
	s->done = NULL;
	pthread_mutex_unlock(&s->mu);
	while (c) {
		kft_http_conn *next = c->next;
		c->st = C_LINGER;
		begin_linger(c);
		if (append(s, c) != 0)
			conn_free(s, c);
		c = next;
	}
}

static short events_of(const kft_http_conn *c)
{
	if (c->paused)
		return 0;
	if (c->st == C_IDLE || c->st == C_LINGER)
		return POLLIN;
	return c->want_write ? POLLOUT : POLLIN;
}

/* Builds the poll set: the doorbell, the listener (unless resting), then
 * every connection; returns the poll timeout. */
static int poll_set(kft_httpd *s, struct pollfd *p, bool listening, long long now)
{
	long long next = now + 60000;
	p[0] = (struct pollfd){s->wake[0], POLLIN, 0};
	p[1] = (struct pollfd){listening ? s->lfd : -1, POLLIN, 0};
	for (size_t i = 0; i < s->nconns; i++) {
		p[i + 2] = (struct pollfd){s->conns[i]->fd, events_of(s->conns[i]), 0};
		if (s->conns[i]->deadline < next)
			next = s->conns[i]->deadline;
	}
	if (s->cert_dir && s->next_cert_check < next)
		next = s->next_cert_check;
	if (!listening && now + 100 < next)
		next = now + 100;
	return next > now ? (int)(next - now) : 0;
}

/* Steps what poll found ready (and paused bodies the budget now admits),
 * drops what is past its deadline. */
static void step_all(kft_httpd *s, const struct pollfd *p, size_t n, long long now)
{
	size_t kept = 0;
	for (size_t i = 0; i < s->nconns; i++) {
		kft_http_conn *c = s->conns[i];
		int act = KEEP;
		if (i < n && p[i + 2].revents)
			act = step(s, c);
		else if (c->paused)
			act = step_body(s, c);
		if (act == KEEP && c->deadline <= now)
			act = DROP;
		if (act == DROP)
			conn_free(s, c);
		if (act == KEEP)
			s->conns[kept++] = c;
	}
	s->nconns = kept;
}

static void *poll_main(void *arg)
{
	kft_httpd *s = arg;
	struct pollfd *p = NULL;
	size_t cap = 0;
	bool listening = true;
	while (!atomic_load(&s->stopping)) {
		if (cap < s->nconns + 2) {
			cap = s->nconns + 66;
			struct pollfd *grown = realloc(p, cap * sizeof(*p));
			if (!grown)
				break;
			p = grown;
		}
		long long now = kft_clock_mono_ms();
		size_t n = s->nconns;
		int rc = poll(p, n + 2, poll_set(s, p, listening, now));
		if (rc < 0 && errno != EINTR)
			break;
		if (atomic_load(&s->stopping))
			break;
		now = kft_clock_mono_ms();
		step_all(s, p, rc > 0 ? n : 0, now);
		if (rc > 0 && p[0].revents)
			take_back(s);
		listening = rc <= 0 || !p[1].revents || accept_some(s, now);
		kft_http_tls_check_dir(s, now);
	}
	free(p);
	return NULL;
}

/* ---- start and stop ------------------------------------------------------------------------- */

static void defaults(kft_httpd_opts *o)
{
	if (!o->head_max)
		o->head_max = DEFAULT_HEAD_MAX;
	if (o->head_timeout_ms <= 0)
		o->head_timeout_ms = DEFAULT_TIMEOUT;
	if (o->write_timeout_ms <= 0)
		o->write_timeout_ms = DEFAULT_TIMEOUT;
	if (o->workers <= 0)
		o->workers = DEFAULT_WORKERS;
	if (o->workers > MAX_WORKERS)
		o->workers = MAX_WORKERS;
	if (o->pending <= 0)
		o->pending = DEFAULT_PENDING;
	if (o->queue == 0)
		o->queue = o->pending;
	else if (o->queue < 0)
		o->queue = 0;
	if (!o->stack_size)
		o->stack_size = DEFAULT_STACK;
}

/* The TLS settings, and the first certificate: the one given, else the
 * directory's when both files are there. */
static int setup_tls(kft_httpd *s, const kft_http_tls *t, kft_error *err)
{
	s->tls_on = true;
	kft_http_tls_settings(t, &s->tls_min_minor, s->tls_suites);
	if (t->cert_dir && !(s->cert_dir = strdup(t->cert_dir))) {
		kft_http_tls_free(t->prepared);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	/* A pair given with its directory was read from it before this call:
	 * the directory is looked at again at once (its files may have changed
	 * since), and loaded only if it no longer holds that pair. */
	if (t->cert_pem || t->prepared)
		return kft_httpd_set_tls(s, t, err);
	if (s->cert_dir)
		kft_http_tls_check_dir(s, kft_clock_mono_ms());
	return 0;
}

/* A prepared pair (kft_http_tls.prepared) the server will not take. */
static void drop_prepared(const kft_httpd_opts *o)
{
	if (o->tls)
		kft_http_tls_free(o->tls->prepared);
}

static int setup(kft_httpd *s, const kft_httpd_opts *o, kft_error *err)
{
	s->o = *o;
	defaults(&s->o);
	s->handlers = *o->handlers;
	s->name = strdup(o->name ? o->name : "http");
	s->headers = o->headers ? strdup(o->headers) : NULL;
	s->workers = calloc((size_t)s->o.workers, sizeof(*s->workers));
	if (!s->name || (o->headers && !s->headers) || !s->workers) {
		drop_prepared(o);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	int rc = o->tls ? setup_tls(s, o->tls, err) : 0; /* takes o->tls->prepared */
	if (rc == 0)
		rc = kft_http_listen(s->name, o->listen, &s->lfd, &s->port, &s->loopback, err);
	if (rc)
		return rc;
	s->own_uid = (long)geteuid();
	s->diag_fd = kft_http_diag_open();
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(s->stop, O_CLOEXEC) != 0)
		return kft_error_set(err, KFT_EIO, "%s server: pipe: %s", s->name, strerror(errno));
	if (start_worker(s) != 0 || start_thread(s, &s->poller, poll_main) != 0)
		return kft_error_set(err, KFT_EIO, "%s server: cannot start a thread", s->name);
	s->polling = true;
	return 0;
}

int kft_httpd_start(const kft_httpd_opts *o, kft_httpd **out, kft_error *err)
{
	*out = NULL;
	if (!o->handlers || !o->handlers->serve || !o->listen) {
		drop_prepared(o);
		return kft_error_set(err, KFT_EINVAL,
		                     "server: an address and a handler are required");
	}
	kft_httpd *s = calloc(1, sizeof(*s));
	if (!s) {
		drop_prepared(o);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	s->lfd = s->diag_fd = s->wake[0] = s->wake[1] = s->stop[0] = s->stop[1] = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->tls_mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	int rc = setup(s, o, err);
	if (rc) {
		kft_httpd_stop(s);
		return rc;
	}
	*out = s;
	return 0;
}

int kft_httpd_port(const kft_httpd *h)
{
	return h ? h->port : 0;
}

bool kft_httpd_loopback(const kft_httpd *h)
{
	return h && h->loopback;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void kft_httpd_stop(kft_httpd *s)
{
	if (!s)
		return;
	atomic_store(&s->stopping, true);
	if ((s->stop[1] >= 0 && write(s->stop[1], "s", 1) < 0) ||
	    (s->wake[1] >= 0 && write(s->wake[1], "s", 1) < 0)) {
		/* a fresh pipe has room; a full doorbell already rings */
	}
	if (s->polling)
		pthread_join(s->poller, NULL);
	pthread_mutex_lock(&s->mu);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
	for (size_t i = 0; i < s->nconns; i++)
		conn_free(s, s->conns[i]);
	for (kft_http_conn *lists[2] = {s->ready, s->done}, **l = lists; l < lists + 2; l++)
		while (*l) {
			kft_http_conn *next = (*l)->next;
			conn_free(s, *l);
			*l = next;
		}
	free(s->conns);
	free(s->workers);
	close_fd(&s->lfd);
	close_fd(&s->diag_fd);
	for (int i = 0; i < 2; i++) {
		close_fd(&s->wake[i]);
		close_fd(&s->stop[i]);
	}
	kft_http_tls_put(s, s->tls);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->tls_mu);
	free(s->name);
	free(s->headers);
	free(s->cert_dir);
	free(s);
}
