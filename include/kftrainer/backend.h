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

/* Where training code reports progress (the TrainJobStatus plugin's
 * question): strings as the trainer's containers see them. */
typedef struct kft_status_endpoint {
	char base_url[256]; /* "https://host:port", the status path follows */
	char ca_cert[1024]; /* KUBEFLOW_TRAINER_SERVER_CA_CERT */
	char token[1024];   /* KUBEFLOW_TRAINER_SERVER_TOKEN */
	/* 0: the files come from the projected volume the plugin mounts (a
	 * service-account token, the CA ConfigMap it builds); 1: the backend
	 * provides them itself, so there is no volume and no ConfigMap. */
	int files_provided;
} kft_status_endpoint;

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

	/* The status endpoint of TrainJob ns/job. Kubernetes: upstream's
	 * defaults, "https://kubeflow-trainer-controller-manager.kubeflow-system.svc:10443"
	 * and the projected files under /var/run/secrets/kubeflow/trainer.
	 * Local: the job's supervisor on a free loopback port, files in the job
	 * directory. Returns 0, or -1 when it cannot say. */
	int (*status_endpoint)(void *self, const char *ns, const char *job,
	                       kft_status_endpoint *out);

	/* Whether the place has GPUs to give a pod at all: 1 or 0. Kubernetes:
	 * 1 (placing a GPU request is the scheduler's business). Local: 0 on a
	 * machine with none. When 0, the TrainJob runs on CPU: the framework
	 * removes every GPU request from the pods' resources (and from
	 * trainer.resourcesPerNode) before any plugin reads them, so process
	 * counts, recipes and placements are those of a CPU node, and a plugin
	 * may add what a CPU needs (torchtune: device=cpu, dtype=fp32, an
	 * optimizer that runs on CPU). */
	int (*has_gpus)(void *self);
};

#ifdef __cplusplus
}
#endif

#endif
