/*
 * backend.c - the default backend: Kubernetes' answers, with nothing yet on
 * the cluster and no UID. `render` uses it as is; other backends take its
 * functions for the questions they do not answer differently.
 */
#include <stdio.h>

#include "kftrainer/framework.h"

static int k8s_pod_address(void *self, const char *job, const char *rjob, int replica, int pod,
                           const char *subdomain, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s-%s-%d-%d.%s", job, rjob, replica, pod, subdomain);
	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

static int k8s_service_port(void *self, const char *job, const char *service, int default_port)
{
	return default_port;
}

static json_t *nothing_exists(void *self, const char *api_version, const char *kind, const char *ns,
                              const char *name)
{
	return NULL;
}

static const char *no_uid(void *self, const json_t *trainjob)
{
	return NULL;
}

static const kft_backend default_backend = {
        .name = "render",
        .pod_address = k8s_pod_address,
        .service_port = k8s_service_port,
        .get_object = nothing_exists,
        .trainjob_uid = no_uid,
};

const kft_backend *kft_backend_default(void)
{
	return &default_backend;
}
