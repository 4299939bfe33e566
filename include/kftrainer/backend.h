/*
 * backend.h - what the pipeline asks of the place a TrainJob runs.
 *
 * The framework and its plugins never know whether they run for a cluster,
 * for this machine, or for an offline `render`. Anything that differs between
 * those places is a question to this interface: how a pod is addressed, which
 * port a rendezvous service listens on, where the status endpoint is, and
 * which children of the TrainJob already exist. That rule is what makes "what
 * you ran locally is what runs on the cluster" true.
 *
 * A backend is a const table of functions plus an opaque pointer handed back
 * to each. Every function may be NULL; the framework then uses the
 * Kubernetes answer (the one documented on each member), which is what
 * `render` prints.
 */
#ifndef KFTRAINER_BACKEND_H
#define KFTRAINER_BACKEND_H

#include <jansson.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kft_backend kft_backend;

struct kft_backend {
	const char *name; /* "kubernetes", "local", "render" ... */
	void *self;       /* passed back to every function */

	/* Writes the address of pod `pod` of replica `replica` of replicated job
	 * `rjob`, for a TrainJob named `job` whose JobSet network subdomain is
	 * `subdomain`. Kubernetes: "<job>-<rjob>-<replica>-<pod>.<subdomain>"
	 * (JobSet's headless service). Returns 0, or -1 when buf is too small. */
	int (*pod_address)(void *self, const char *job, const char *rjob, int replica, int pod,
	                   const char *subdomain, char *buf, size_t size);

	/* The port a rendezvous service (`service` is "torch", "jax", "xgboost"
	 * ...) listens on, given the framework's default. Kubernetes: the
	 * default (29500 for torch). Local: a free loopback port. */
	int (*service_port)(void *self, const char *job, const char *service, int default_port);

	/* The existing child object of the TrainJob (a JobSet, Secret ...) with
	 * this apiVersion, kind, namespace and name, as a new reference, or NULL
	 * when it does not exist. Kubernetes: a cache lookup. Render: NULL. */
	json_t *(*get_object)(void *self, const char *api_version, const char *kind, const char *ns,
	                      const char *name);

	/* The TrainJob's UID for owner references; NULL when there is none (an
	 * offline render, whose owner references then say so). */
	const char *(*trainjob_uid)(void *self, const json_t *trainjob);
};

#ifdef __cplusplus
}
#endif

#endif
