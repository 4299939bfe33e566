/*
 * peer.c - who is at the other end of a loopback connection: the user that
 * owns the client's socket, asked of the kernel through sock_diag (the
 * netlink interface ss(8) reads; no privilege is needed for a socket in
 * our own network namespace). One request per accepted connection, a few
 * microseconds. On loopback every peer has one address, so the user is what
 * tells a flood from another user apart from our own clients (server.c).
 */
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "http/server_internal.h"

int kft_http_diag_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	struct timeval tv = {0, 100 * 1000}; /* the kernel answers at once; never hang on it */
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The client's end as the kernel files it: its address and port as the
 * source, ours as the destination. */
static void sockid_of(const struct sockaddr_storage *local, const struct sockaddr_storage *peer,
                      struct inet_diag_req_v2 *r)
{
	if (peer->ss_family == AF_INET6) {
		const struct sockaddr_in6 *p = (const void *)peer, *l = (const void *)local;
		bool v4 = IN6_IS_ADDR_V4MAPPED(&p->sin6_addr);
		r->sdiag_family = v4 ? AF_INET : AF_INET6;
		memcpy(r->id.idiag_src, v4 ? &p->sin6_addr.s6_addr[12] : p->sin6_addr.s6_addr,
		       v4 ? 4 : 16);
		memcpy(r->id.idiag_dst, v4 ? &l->sin6_addr.s6_addr[12] : l->sin6_addr.s6_addr,
		       v4 ? 4 : 16);
		r->id.idiag_sport = p->sin6_port;
		r->id.idiag_dport = l->sin6_port;
		return;
	}
	const struct sockaddr_in *p = (const void *)peer, *l = (const void *)local;
	r->sdiag_family = AF_INET;
	memcpy(r->id.idiag_src, &p->sin_addr, 4);
	memcpy(r->id.idiag_dst, &l->sin_addr, 4);
	r->id.idiag_sport = p->sin_port;
	r->id.idiag_dport = l->sin_port;
}

/* Whether m answers r: the same ports (a late answer to an earlier
 * request that timed out must not name this client's user). */
static bool answers(const struct inet_diag_msg *m, const struct inet_diag_req_v2 *r)
{
	return m->id.idiag_sport == r->id.idiag_sport && m->id.idiag_dport == r->id.idiag_dport &&
	       memcmp(m->id.idiag_src, r->id.idiag_src, sizeof(m->id.idiag_src)) == 0;
}

long kft_http_peer_uid(int diag_fd, int fd, const struct sockaddr_storage *peer)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	if (diag_fd < 0 || getsockname(fd, (struct sockaddr *)&local, &len) != 0)
		return -1;
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {.nlh = {.nlmsg_len = sizeof(req),
	                 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
	                 .nlmsg_flags = NLM_F_REQUEST},
	         .r = {.sdiag_protocol = IPPROTO_TCP,
	               .idiag_states = 1u << TCP_ESTABLISHED,
	               .id.idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}}};
	sockid_of(&local, peer, &req.r);
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	if (sendto(diag_fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -1;
	union {
		struct nlmsghdr nlh;
		char buf[1024];
	} ans;
	for (int stale = 0; stale < 8; stale++) {
		ssize_t n = recv(diag_fd, &ans, sizeof(ans), 0);
		if (n < 0)
			return -1;
		const struct inet_diag_msg *m = NLMSG_DATA(&ans.nlh);
		/* an exact lookup finds a client in any state; one that already
		 * closed its end may be filed as a time-wait entry, which the
		 * kernel reports as owned by root: such a client is nobody's */
		if (n >= (ssize_t)NLMSG_LENGTH(sizeof(*m)) &&
		    ans.nlh.nlmsg_type == SOCK_DIAG_BY_FAMILY && answers(m, &req.r))
			return m->idiag_state == TCP_ESTABLISHED ? (long)m->idiag_uid : -1;
		if (ans.nlh.nlmsg_type == NLMSG_ERROR)
			return -1; /* this client's, or an earlier one's: either way not known */
	}
	return -1;
}
