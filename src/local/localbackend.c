/*
 * localbackend.c - the backend table (backend.h) the local backend builds
 * and computes status with.
 *
 * Addresses are all 127.0.0.1: every pod is a process on this machine. A
 * rendezvous port cannot be the framework's default (two jobs, or two tests,
 * would collide on 29500), so each service gets a free loopback port the
 * first time it is asked for during one build and the same answer after
 * that, since several plugins may ask about one service. The TrainJob status
 * endpoint is the job's supervisor (statusserver.c), likewise on a port
 * picked at build time.
 */
#include <stdio.h>
#include <string.h>

#include "local/local_internal.h"

#define LOOPBACK "127.0.0.1"

static int pod_address(void *self, const char *job, const char *rjob, int replica, int pod,
                       const char *subdomain, char *buf, size_t size)
{
	(void)self, (void)job, (void)rjob, (void)replica, (void)pod, (void)subdomain;
	return snprintf(buf, size, "%s", LOOPBACK) < (int)size ? 0 : -1;
}

static int service_port(void *self, const char *job, const char *service, int default_port)
{
	kft_local_backend_state *b = self;
	(void)job;
	for (size_t i = 0; i < b->n_ports; i++)
		if (strcmp(b->ports[i].service, service ? service : "") == 0)
			return b->ports[i].port;
	int port = kft_local_free_port();
	if (port <= 0)
		return default_port; /* no socket to probe with: the default is all we know */
	if (b->n_ports < KFT_LOCAL_MAX_SERVICES) {
		snprintf(b->ports[b->n_ports].service, sizeof(b->ports[0].service), "%s",
		         service ? service : "");
		b->ports[b->n_ports++].port = port;
	}
	return port;
}

static int str_eq(const json_t *o, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v && want && strcmp(v, want) == 0;
}

static json_t *get_object(void *self, const char *api_version, const char *kind, const char *ns,
                          const char *name)
{
	kft_local_backend_state *b = self;
	size_t i;
	const json_t *o;
	json_array_foreach(b->children, i, o)
	{
		const json_t *meta = json_object_get(o, "metadata");
		const char *ons = json_string_value(json_object_get(meta, "namespace"));
		if (str_eq(o, "apiVersion", api_version) && str_eq(o, "kind", kind) &&
		    str_eq(meta, "name", name) &&
		    strcmp(ons ? ons : "default", ns ? ns : "default") == 0)
			return json_incref((json_t *)o);
	}
	return NULL;
}

static const char *trainjob_uid(void *self, const json_t *trainjob)
{
	(void)trainjob;
	return ((kft_local_backend_state *)self)->uid;
}

/* The job's supervisor serves the endpoint on a loopback port picked now
 * (as rendezvous ports are) and writes the CA and token into the job
 * directory itself: no projected volume. */
static int status_endpoint(void *self, const char *ns, const char *job, kft_status_endpoint *out)
{
	kft_local_backend_state *b = self;
	const char *dir = b->job_dir ? b->job_dir : ".";
	(void)ns, (void)job;
	if (b->status_port <= 0)
		b->status_port = kft_local_free_port();
	if (b->status_port <= 0)
		return -1;
	out->files_provided = 1;
	int n1 = snprintf(out->base_url, sizeof(out->base_url), "https://" LOOPBACK ":%d",
	                  b->status_port);
	int n2 = snprintf(out->ca_cert, sizeof(out->ca_cert), "%s/" KFT_LOCAL_STATUS_CA_FILE, dir);
	int n3 = snprintf(out->token, sizeof(out->token), "%s/" KFT_LOCAL_STATUS_TOKEN_FILE, dir);
	return n1 < (int)sizeof(out->base_url) && n2 < (int)sizeof(out->ca_cert) &&
	                       n3 < (int)sizeof(out->token)
	               ? 0
	               : -1;
}

void kft_local_backend_init(kft_local_backend_state *b, const char *uid, const json_t *children)
{
	memset(b, 0, sizeof(*b));
	b->uid = uid;
	b->children = children;
	b->table = (kft_backend){.name = "local",
	                         .self = b,
	                         .pod_address = pod_address,
	                         .service_port = service_port,
	                         .get_object = get_object,
	                         .trainjob_uid = trainjob_uid,
	                         .status_endpoint = status_endpoint};
}
