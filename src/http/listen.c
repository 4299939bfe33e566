/*
 * listen.c - a listening socket for a Go listen address, as net.Listen
 * binds one: "" is every interface (IPv6 with IPv4 mapped in, or IPv4's
 * wildcard on a kernel without IPv6), "localhost" is 127.0.0.1, anything
 * else must be an IP literal (no name is resolved: a server binds what its
 * operator wrote).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/server_internal.h"

/* As many as the kernel allows (net.core.somaxconn): a flood that fills a
 * short queue between two accept batches would drop other clients' SYNs. */
#define BACKLOG SOMAXCONN

static int sockaddr_for(const char *name, const char *addr, const char *host, int port,
                        struct sockaddr_storage *ss, socklen_t *len, kft_error *err)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	memset(ss, 0, sizeof(*ss));
	if (!host[0]) {
		a6->sin6_family = AF_INET6;
		a6->sin6_addr = in6addr_any;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
	} else if (strcmp(host, "localhost") == 0 || inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		if (strcmp(host, "localhost") == 0)
			a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof(*a4);
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
	} else {
		return kft_error_set(err, KFT_EINVAL,
		                     "%s: listen address \"%s\": host must be an IP address", name,
		                     addr);
	}
	return 0;
}

/* A socket bound to ss and listening; when every interface was asked for
 * and the kernel has no IPv6, IPv4's wildcard instead. -1 with errno set. */
static int open_listener(struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)ss;
	if (fd < 0 && errno == EAFNOSUPPORT && ss->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr)) {
		uint16_t port = a6->sin6_port;
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
		memset(ss, 0, sizeof(*ss));
		a4->sin_family = AF_INET;
		a4->sin_port = port;
		len = sizeof(*a4);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	}
	if (fd < 0)
		return -1;
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr))
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)ss, len) != 0 || listen(fd, BACKLOG) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

bool kft_http_addr_loopback(const struct in6_addr *a)
{
	if (IN6_IS_ADDR_V4MAPPED(a))
		return a->s6_addr[12] == 127;
	return IN6_IS_ADDR_LOOPBACK(a);
}

static bool bound_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

int kft_http_listen(const char *name, const char *addr, int *fd, int *port, bool *loopback,
                    kft_error *err)
{
	char host[256];
	int want;
	struct sockaddr_storage ss;
	socklen_t len = 0;
	int rc = kft_http_parse_listen(addr, host, sizeof(host), &want, err);
	if (rc || (rc = sockaddr_for(name, addr, host, want, &ss, &len, err)))
		return rc;
	*fd = open_listener(&ss, len);
	if (*fd < 0)
		return kft_error_set(err, KFT_EIO, "%s: listen tcp %s: %s", name, addr,
		                     strerror(errno));
	len = sizeof(ss);
	getsockname(*fd, (struct sockaddr *)&ss, &len);
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                       : ((struct sockaddr_in *)&ss)->sin_port);
	*loopback = bound_loopback(&ss);
	return 0;
}
