/*
 * backend.c - the default backend: Kubernetes' answers, with nothing yet on
 * the cluster and no UID. `render` uses it as is; other backends take its
 * functions for the questions they do not answer differently.
 */
#include <stdio.h>

#include "kftrainer/constants.h"
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

/* Upstream's Configuration defaults: the manager's Service in the operator
 * namespace, status server port 10443, the projected volume's mount. */
static int k8s_status_endpoint(void *self, const char *ns, const char *job,
                               kft_status_endpoint *out)
{
	snprintf(out->base_url, sizeof(out->base_url), "https://%s.%s.svc:%d",
	         "kubeflow-trainer-controller-manager", "kubeflow-system", 10443);
	snprintf(out->ca_cert, sizeof(out->ca_cert), KFT_STATUS_MOUNT_PATH "/ca.crt");
	snprintf(out->token, sizeof(out->token), KFT_STATUS_MOUNT_PATH "/token");
	out->files_provided = 0;
	return 0;
}

static int k8s_has_gpus(void *self)
{
	(void)self;
	return 1;
}

static const kft_backend default_backend = {
        .name = "render",
        .pod_address = k8s_pod_address,
        .service_port = k8s_service_port,
        .get_object = nothing_exists,
        .trainjob_uid = no_uid,
        .status_endpoint = k8s_status_endpoint,
        .has_gpus = k8s_has_gpus,
};

const kft_backend *kft_backend_default(void)
{
	return &default_backend;
}
