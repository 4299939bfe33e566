/*
 * mpi.c - the MPI plugin: mpirun over SSH from a launcher pod to the nodes.
 *
 * A runtime with spec.mlPolicy.mpi runs two replicated jobs: "launcher",
 * whose "node" container runs mpirun (or mpiexec), and "node", the pods it
 * starts ranks on. This plugin wires them together the way upstream Kubeflow
 * Trainer v2.3.0 does (pkg/runtime/framework/plugins/mpi):
 *
 *   EnforceMLPolicy   the node count (numNodes, one fewer when the launcher
 *                     is also a node), the processes per node (the TrainJob's
 *                     numProcPerNode, else the runtime's, else - when that is
 *                     1 - the GPUs per node), the SSH key volume on launcher
 *                     and nodes, the hostfile volume on the launcher, their
 *                     mounts in each "node" container, and on the launcher the
 *                     environment that points the MPI implementation at the
 *                     hostfile;
 *   EnforcePodSpec    (Intel MPI and MPICH only) a DNS search domain on the
 *                     node pods, see below;
 *   ComponentBuilder  the Secret "<job>-mpi-ssh-auth" with a fresh key pair
 *                     (only when it does not exist yet: it is immutable and
 *                     running pods depend on it), and the ConfigMap
 *                     "<job>-mpi-hostfile" listing every node's address with
 *                     its slots;
 *   CustomValidation  numNodes >= 2 with runLauncherAsNode needs both
 *                     replicated jobs, and the TrainJob must not set the
 *                     environment variables this plugin owns.
 *
 * Addresses in the hostfile are the pod sets' endpoints, which the PodNetwork
 * point filled in through the backend: DNS names on a cluster, whatever the
 * local backend says on this machine.
 *
 * Upstream accepts only OpenMPI (its switch rejects anything else); this
 * plugin also drives Intel MPI and MPICH, with the facts the Kubeflow MPI
 * Operator (kubeflow/mpi-operator, pkg/controller/mpi_job_controller.go)
 * established for them:
 *
 *   - hostfile lines are "<host>:<slots>", the Hydra machine-file form both
 *     read, instead of OpenMPI's "<host> slots=<slots>";
 *   - Intel MPI reads I_MPI_HYDRA_HOST_FILE, I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS
 *     (extra ssh arguments) and I_MPI_PERHOST (processes per host);
 *     MPICH's Hydra reads HYDRA_HOST_FILE and HYDRA_LAUNCH_EXTRA_ARGS, and
 *     takes its slots from the hostfile alone;
 *   - Hydra's proxies on the nodes call back to the launcher by its bare
 *     hostname, which a pod cannot resolve by default. The MPI Operator adds
 *     the job's headless-service domain to the worker pods' DNS search list;
 *     we do the same, with the domain taken from the launcher's endpoint
 *     ("<pod>.<subdomain>") completed by the namespace and Kubernetes'
 *     default cluster domain. Endpoints without a domain (a local backend's
 *     loopback addresses) need no search domain and get none.
 *
 * Upstream mutates the runtime's mpi policy to remember the effective
 * processes per node between EnforceMLPolicy and Build; our ml_policy is
 * borrowed and read-only, so both points compute it from the same inputs.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/framework.h"
#include "kftrainer/quantity.h"
#include "plugins/builtin.h"
#include "plugins/mpi.h"
#include "util/base64.h"
#include "util/sshkey.h"
#include "util/strbuf.h"
#include "util/secret.h"

/* Names from upstream's pkg/constants (candidates for constants.h). */
#define MPI_LAUNCHER             "launcher"
#define MPI_SSH_SECRET_SUFFIX    "-mpi-ssh-auth"
#define MPI_SSH_VOLUME           "mpi-ssh-auth"
#define MPI_SSH_PRIVATE_KEY      "ssh-privatekey" /* corev1.SSHAuthPrivateKey */
#define MPI_SSH_PUBLIC_KEY       "ssh-publickey"
#define MPI_SSH_PRIVATE_KEY_FILE "id_rsa"
#define MPI_SSH_PUBLIC_KEY_FILE  "id_rsa.pub"
#define MPI_SSH_AUTHORIZED_KEYS  "authorized_keys"
#define MPI_SSH_SECRET_TYPE      "kubernetes.io/ssh-auth"
#define MPI_SSH_DEFAULT_MODE     0400
#define MPI_SSH_PRIVATE_MODE     0640
#define MPI_SSH_PUBLIC_MODE      0644
#define MPI_HOSTFILE_DIR         "/etc/mpi"
#define MPI_HOSTFILE_NAME        "hostfile"
#define MPI_HOSTFILE_PATH        MPI_HOSTFILE_DIR "/" MPI_HOSTFILE_NAME
#define MPI_HOSTFILE_SUFFIX      "-mpi-hostfile"
#define MPI_HOSTFILE_VOLUME      "mpi-hostfile"
#define MPI_HOSTFILE_MODE        0444
#define MPI_SSH_ARGS             "-o ConnectionAttempts=10"

/* The runtime API's defaults (MPIMLPolicySource markers). */
#define MPI_DEFAULT_IMPLEMENTATION "OpenMPI"
#define MPI_DEFAULT_SSH_MOUNT_PATH "/root/.ssh"

/* Kubernetes' default cluster domain, as the MPI Operator assumes it. */
#define CLUSTER_DOMAIN_SUFFIX ".svc.cluster.local"

#define NAME_MAX_LEN 320

/* ---- MPI implementations -------------------------------------------------- */

typedef enum env_value { V_HOSTFILE, V_TRUE, V_SLOTS, V_SSH_ARGS } env_value;

typedef struct mpi_env {
	const char *name;
	env_value value;
} mpi_env;

typedef struct mpi_flavour {
	const char *name;      /* the mpiImplementation value */
	const char *slots_sep; /* a hostfile line is <address><slots_sep><slots> */
	const mpi_env *env;    /* set on the launcher, in this order */
	size_t n_env;
	int needs_dns_search; /* Hydra proxies call the launcher by hostname */
} mpi_flavour;

/* Upstream's order (mpi.go EnforceMLPolicy); these four are also upstream's
 * MPIReservedEnvNames. */
static const mpi_env openmpi_env[] = {
        {"OMPI_MCA_orte_default_hostfile", V_HOSTFILE},
        {"OMPI_MCA_orte_keep_fqdn_hostnames", V_TRUE},
        {"OMPI_MCA_orte_set_default_slots", V_SLOTS},
        {"OMPI_MCA_plm_rsh_args", V_SSH_ARGS},
};
static const mpi_env intel_env[] = {
        {"I_MPI_HYDRA_HOST_FILE", V_HOSTFILE},
        {"I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", V_SSH_ARGS},
        {"I_MPI_PERHOST", V_SLOTS},
};
static const mpi_env mpich_env[] = {
        {"HYDRA_HOST_FILE", V_HOSTFILE},
        {"HYDRA_LAUNCH_EXTRA_ARGS", V_SSH_ARGS},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const mpi_flavour flavours[] = {
        {"OpenMPI", " slots=", openmpi_env, N_OF(openmpi_env), 0},
        {"Intel", ":", intel_env, N_OF(intel_env), 1},
        {"MPICH", ":", mpich_env, N_OF(mpich_env), 1},
};

/* The runtime's spec.mlPolicy.mpi, with the API's defaults applied. */
typedef struct mpi_policy {
	int32_t num_proc_per_node;
	const char *implementation;
	const mpi_flavour *flavour; /* NULL: an implementation we do not drive */
	const char *ssh_mount_path;
	int launcher_as_node;
} mpi_policy;

static const json_t *mpi_source(const kft_runtime_info *info)
{
	if (!info || !info->ml_policy)
		return NULL;
	const json_t *mpi = json_object_get(info->ml_policy, "mpi");
	return json_is_object(mpi) ? mpi : NULL;
}

static const mpi_flavour *find_flavour(const char *name)
{
	/* The API lets mpiImplementation be "" and documents OpenMPI as the
	 * default; upstream then fails with a garbled message, we use OpenMPI. */
	if (name[0] == '\0')
		name = MPI_DEFAULT_IMPLEMENTATION;
	for (size_t i = 0; i < N_OF(flavours); i++)
		if (strcmp(flavours[i].name, name) == 0)
			return &flavours[i];
	return NULL;
}

static void read_policy(const json_t *src, mpi_policy *p)
{
	const json_t *procs = json_object_get(src, "numProcPerNode");
	const char *impl = json_string_value(json_object_get(src, "mpiImplementation"));
	const char *mount = json_string_value(json_object_get(src, "sshAuthMountPath"));
	p->num_proc_per_node = json_is_integer(procs) ? (int32_t)json_integer_value(procs) : 1;
	p->implementation = impl ? impl : MPI_DEFAULT_IMPLEMENTATION;
	p->flavour = find_flavour(p->implementation);
	p->ssh_mount_path = mount ? mount : MPI_DEFAULT_SSH_MOUNT_PATH;
	p->launcher_as_node = json_is_true(json_object_get(src, "runLauncherAsNode"));
}

/* ---- processes per node ------------------------------------------------------ */

/* The TrainJob's numProcPerNode wins; a runtime value of 1 becomes the GPU
 * count per node when that is more than 1. A GPU quantity that does not
 * parse is an error (kft_resources_gpus). */
static int effective_procs(const kft_runtime_info *info, const kft_trainjob *job,
                           const mpi_policy *p, int32_t *out, kft_error *err)
{
	*out = p->num_proc_per_node;
	if (job->has_num_proc_per_node) {
		*out = job->num_proc_per_node;
		return 0;
	}
	if (p->num_proc_per_node != 1)
		return 0;
	const json_t *res = job->resources_per_node ? job->resources_per_node
	                                            : kft_runtime_info_node_resources(info, NULL);
	int64_t gpus = 0;
	int rc = kft_resources_gpus(res, &gpus, err);
	if (gpus > INT32_MAX)
		gpus = INT32_MAX;
	if (rc == 0 && gpus > 1)
		*out = (int32_t)gpus;
	return rc;
}

/* ---- volumes, mounts, environment ------------------------------------------------ */

static int object_name(char *buf, const char *job, const char *suffix, kft_error *err)
{
	int n = snprintf(buf, NAME_MAX_LEN, "%s%s", job, suffix);
	if (n < 0 || n >= NAME_MAX_LEN)
		return kft_error_set(err, KFT_ELIMIT, "TrainJob name too long for its MPI objects");
	return 0;
}

static json_t *ssh_volume(const char *secret)
{
	return json_pack(
	        "{s:s, s:{s:s, s:i, s:[{s:s, s:s, s:i}, {s:s, s:s, s:i}, {s:s, s:s, s:i}]}}",
	        "name", MPI_SSH_VOLUME, "secret", "secretName", secret, "defaultMode",
	        MPI_SSH_DEFAULT_MODE, "items", "key", MPI_SSH_PRIVATE_KEY, "path",
	        MPI_SSH_PRIVATE_KEY_FILE, "mode", MPI_SSH_PRIVATE_MODE, "key", MPI_SSH_PUBLIC_KEY,
	        "path", MPI_SSH_PUBLIC_KEY_FILE, "mode", MPI_SSH_PUBLIC_MODE, "key",
	        MPI_SSH_PUBLIC_KEY, "path", MPI_SSH_AUTHORIZED_KEYS, "mode", MPI_SSH_PUBLIC_MODE);
}

static json_t *hostfile_volume(const char *configmap)
{
	return json_pack("{s:s, s:{s:s, s:[{s:s, s:s, s:i}]}}", "name", MPI_HOSTFILE_VOLUME,
	                 "configMap", "name", configmap, "items", "key", MPI_HOSTFILE_NAME, "path",
	                 MPI_HOSTFILE_NAME, "mode", MPI_HOSTFILE_MODE);
}

/* Copies item into list by key, then drops our reference. */
static int upsert_new(json_t *list, const char *key, json_t *item)
{
	if (!item)
		return KFT_ENOMEM;
	int rc = kft_upsert_by_key(list, key, item);
	json_decref(item);
	return rc;
}

static int mount(kft_container *c, const char *volume, const char *path)
{
	return upsert_new(c->volume_mounts, "mountPath",
	                  json_pack("{s:s, s:s}", "name", volume, "mountPath", path));
}

static int launcher_env(kft_container *c, const mpi_flavour *f, int32_t procs)
{
	char slots[16];
	snprintf(slots, sizeof(slots), "%d", (int)procs);
	for (size_t i = 0; i < f->n_env; i++) {
		const char *value = f->env[i].value == V_HOSTFILE ? MPI_HOSTFILE_PATH
		                    : f->env[i].value == V_TRUE   ? "true"
		                    : f->env[i].value == V_SLOTS  ? slots
		                                                  : MPI_SSH_ARGS;
		if (kft_upsert_env(c->env, f->env[i].name, value) != 0)
			return KFT_ENOMEM;
	}
	return 0;
}

typedef struct mpi_names {
	char secret[NAME_MAX_LEN];
	char hostfile[NAME_MAX_LEN];
} mpi_names;

static int wire_container(kft_container *c, int is_launcher, const mpi_policy *p, int32_t procs,
                          kft_error *err)
{
	if (mount(c, MPI_SSH_VOLUME, p->ssh_mount_path) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (!is_launcher)
		return 0;
	if (mount(c, MPI_HOSTFILE_VOLUME, MPI_HOSTFILE_DIR) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (!p->flavour)
		return kft_error_set(err, KFT_EINVAL, "MPI implementation for %s doesn't supported",
		                     p->implementation);
	if (launcher_env(c, p->flavour, procs) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

static int wire_pod_set(kft_pod_set *ps, const mpi_policy *p, const mpi_names *names, int32_t procs,
                        kft_error *err)
{
	int is_launcher = strcmp(ps->name, MPI_LAUNCHER) == 0;
	if (upsert_new(ps->volumes, "name", ssh_volume(names->secret)) != 0 ||
	    (is_launcher && upsert_new(ps->volumes, "name", hostfile_volume(names->hostfile)) != 0))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	for (size_t i = 0; i < ps->n_containers; i++) {
		if (strcmp(ps->containers[i].name, KFT_CONTAINER_NODE) != 0)
			continue;
		int rc = wire_container(&ps->containers[i], is_launcher, p, procs, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int mpi_enforce_ml_policy(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                                 const kft_trainjob *job, kft_error *err)
{
	const json_t *src = mpi_source(info);
	if (!src)
		return 0;
	mpi_policy p;
	read_policy(src, &p);
	mpi_names names;
	int rc = object_name(names.secret, job->name, MPI_SSH_SECRET_SUFFIX, err);
	if (rc == 0)
		rc = object_name(names.hostfile, job->name, MPI_HOSTFILE_SUFFIX, err);
	if (rc != 0)
		return rc;

	kft_pod_set *node = kft_runtime_info_find_pod_set(info, KFT_CONTAINER_NODE);
	if (job->has_num_nodes && node) {
		/* The launcher is one of the nodes when it runs ranks too. */
		int64_t n = job->num_nodes;
		node->count = (int32_t)(p.launcher_as_node ? (n - 1 > 1 ? n - 1 : 1) : n);
	}
	int32_t procs;
	if ((rc = effective_procs(info, job, &p, &procs, err)) != 0)
		return rc;
	for (size_t i = 0; i < info->n_pod_sets; i++) {
		kft_pod_set *ps = &info->pod_sets[i];
		if (strcmp(ps->name, KFT_CONTAINER_NODE) != 0 &&
		    strcmp(ps->name, MPI_LAUNCHER) != 0)
			continue;
		rc = wire_pod_set(ps, &p, &names, procs, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* ---- DNS search domain for Hydra (Intel MPI, MPICH) --------------------------------- */

/* "<pod>.<subdomain>" gives "<subdomain>.<ns>.svc.cluster.local"; NULL when
 * the launcher's address has no domain or is an IP address. Caller frees. */
static char *launcher_search_domain(const kft_runtime_info *info, const kft_trainjob *job)
{
	kft_pod_set *launcher = kft_runtime_info_find_pod_set(info, MPI_LAUNCHER);
	if (!launcher || launcher->n_endpoints == 0 || !launcher->endpoints[0])
		return NULL;
	const char *addr = launcher->endpoints[0];
	unsigned char ip[16];
	if (inet_pton(AF_INET, addr, ip) == 1 || inet_pton(AF_INET6, addr, ip) == 1)
		return NULL;
	const char *dot = strchr(addr, '.');
	if (!dot || dot[1] == '\0')
		return NULL;
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "%s.%s%s", dot + 1, job->ns ? job->ns : "default",
	                  CLUSTER_DOMAIN_SUFFIX);
	return kft_strbuf_detach(&b);
}

/* The pod spec of the replicated job named `name` in the template, or NULL. */
static json_t *template_pod_spec(const kft_runtime_info *info, const char *name)
{
	size_t i;
	json_t *rjob;
	json_array_foreach(json_object_get(info->template_spec, "replicatedJobs"), i, rjob)
	{
		const char *n = json_string_value(json_object_get(rjob, "name"));
		if (!n || strcmp(n, name) != 0)
			continue;
		json_t *job_spec = json_object_get(json_object_get(rjob, "template"), "spec");
		json_t *pod = json_object_get(json_object_get(job_spec, "template"), "spec");
		return json_is_object(pod) ? pod : NULL;
	}
	return NULL;
}

/* Appends domain to spec.dnsConfig.searches unless it is there already. */
static int add_search(json_t *pod_spec, const char *domain)
{
	json_t *dns = json_object_get(pod_spec, "dnsConfig");
	if (!json_is_object(dns)) {
		dns = json_object();
		if (!dns || json_object_set_new(pod_spec, "dnsConfig", dns) != 0)
			return KFT_ENOMEM;
	}
	json_t *searches = json_object_get(dns, "searches");
	if (!json_is_array(searches)) {
		searches = json_array();
		if (!searches || json_object_set_new(dns, "searches", searches) != 0)
			return KFT_ENOMEM;
	}
	size_t i;
	json_t *s;
	json_array_foreach(searches, i, s)
	{
		if (json_is_string(s) && strcmp(json_string_value(s), domain) == 0)
			return 0;
	}
	return json_array_append_new(searches, json_string(domain)) == 0 ? 0 : KFT_ENOMEM;
}

static int mpi_enforce_pod_spec(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                                const kft_trainjob *job, kft_error *err)
{
	const json_t *src = mpi_source(info);
	if (!src)
		return 0;
	mpi_policy p;
	read_policy(src, &p);
	if (!p.flavour || !p.flavour->needs_dns_search)
		return 0;
	json_t *pod_spec = template_pod_spec(info, KFT_CONTAINER_NODE);
	char *domain = pod_spec ? launcher_search_domain(info, job) : NULL;
	if (!domain)
		return 0;
	int rc = add_search(pod_spec, domain);
	free(domain);
	return rc == 0 ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* ---- the Secret and the ConfigMap ---------------------------------------------- */

/* apiVersion v1, kind, and metadata with name, namespace and the TrainJob
 * as controlling owner. */
static json_t *core_object(const kft_plugin_ctx *ctx, const kft_trainjob *job, const char *kind,
                           const char *name)
{
	json_t *owners = json_pack("[o]", kft_owner_reference(ctx, job));
	if (!owners)
		return NULL;
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:o}}", "apiVersion", "v1", "kind", kind,
	                 "metadata", "name", name, "namespace", job->ns ? job->ns : "default",
	                 "ownerReferences", owners);
}

/* Secret data values are base64; the temporary copy is wiped because it
 * may hold a private key. */
static int set_base64(json_t *data, const char *key, const char *value)
{
	size_t n = strlen(value);
	char *b64 = kft_base64_encode(value, n);
	if (!b64)
		return KFT_ENOMEM;
	int rc = json_object_set_new(data, key, json_string(b64)) == 0 ? 0 : KFT_ENOMEM;
	kft_secret_wipe(b64, strlen(b64));
	free(b64);
	return rc;
}

static int ssh_secret(const kft_plugin_ctx *ctx, const kft_trainjob *job, const char *name,
                      json_t **out, kft_error *err)
{
	kft_sshkey key;
	int rc = kft_sshkey_generate(&key, err);
	if (rc != 0)
		return rc;
	json_t *secret = core_object(ctx, job, "Secret", name);
	json_t *data = json_object();
	rc = (secret && data) ? 0 : KFT_ENOMEM;
	if (rc == 0)
		rc = set_base64(data, MPI_SSH_PRIVATE_KEY, key.private_pem);
	if (rc == 0)
		rc = set_base64(data, MPI_SSH_PUBLIC_KEY, key.authorized_key);
	kft_sshkey_free(&key);
	if (rc == 0 && (json_object_set_new(secret, "immutable", json_true()) != 0 ||
	                json_object_set(secret, "data", data) != 0 ||
	                json_object_set_new(secret, "type", json_string(MPI_SSH_SECRET_TYPE)) != 0))
		rc = KFT_ENOMEM;
	json_decref(data);
	if (rc != 0) {
		json_decref(secret);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	*out = secret;
	return 0;
}

/* Every node's address with its slots: the "node" pods, and the launcher
 * too when it runs ranks. An address listed more than once (a backend that
 * runs several pods on one host: the local engine's 127.0.0.1) gets one
 * line with the slots summed, in its first place, since OpenMPI 4.1 refuses
 * a repeated host. On a cluster every pod has its own name and nothing
 * merges. */
static char *hostfile(const kft_runtime_info *info, const mpi_policy *p, int32_t slots)
{
	size_t n = 0;
	for (size_t i = 0; i < info->n_pod_sets; i++)
		n += info->pod_sets[i].n_endpoints;
	const char **hosts = calloc(n + 1, sizeof(*hosts));
	long *sum = calloc(n + 1, sizeof(*sum));
	size_t nh = 0;
	for (size_t i = 0; hosts && sum && i < info->n_pod_sets && p->flavour; i++) {
		const kft_pod_set *ps = &info->pod_sets[i];
		int is_node = strcmp(ps->name, KFT_CONTAINER_NODE) == 0 ||
		              (p->launcher_as_node && strcmp(ps->name, MPI_LAUNCHER) == 0);
		for (size_t e = 0; is_node && e < ps->n_endpoints; e++) {
			size_t k = 0;
			while (k < nh && strcmp(hosts[k], ps->endpoints[e]) != 0)
				k++;
			if (k == nh)
				hosts[nh++] = ps->endpoints[e];
			sum[k] += slots;
		}
	}
	kft_strbuf b;
	kft_strbuf_init(&b);
	if (!hosts || !sum)
		b.failed = 1;
	for (size_t k = 0; k < nh; k++)
		kft_strbuf_printf(&b, "%s%s%ld\n", hosts[k], p->flavour->slots_sep, sum[k]);
	free(hosts);
	free(sum);
	return kft_strbuf_detach(&b);
}

bool kft_mpi_started_by_launcher(const json_t *jobset_spec, const char *rjob)
{
	if (!rjob || strcmp(rjob, KFT_CONTAINER_NODE) != 0)
		return false;
	size_t i;
	const json_t *r;
	json_array_foreach(json_object_get(jobset_spec, "replicatedJobs"), i, r)
	{
		const char *name = json_string_value(json_object_get(r, "name"));
		if (name && strcmp(name, MPI_LAUNCHER) == 0)
			return true;
	}
	return false;
}

static int hostfile_configmap(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                              const kft_trainjob *job, const mpi_policy *p, const char *name,
                              json_t **out, kft_error *err)
{
	int32_t procs;
	int rc = effective_procs(info, job, p, &procs, err);
	if (rc != 0)
		return rc;
	char *text = hostfile(info, p, procs);
	json_t *cm = text ? core_object(ctx, job, "ConfigMap", name) : NULL;
	json_t *data = text ? json_pack("{s:s}", MPI_HOSTFILE_NAME, text) : NULL;
	free(text);
	if (!cm || !data || json_object_set_new(cm, "data", data) != 0) {
		json_decref(cm);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	*out = cm;
	return 0;
}

static int append_new(json_t *objects, json_t *obj, kft_error *err)
{
	if (json_array_append_new(objects, obj) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

static int mpi_component_builder(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                                 const kft_trainjob *job, json_t *objects, kft_error *err)
{
	const json_t *src = mpi_source(info);
	if (!src)
		return 0;
	mpi_policy p;
	read_policy(src, &p);
	mpi_names names;
	int rc = object_name(names.secret, job->name, MPI_SSH_SECRET_SUFFIX, err);
	if (rc == 0)
		rc = object_name(names.hostfile, job->name, MPI_HOSTFILE_SUFFIX, err);
	if (rc != 0)
		return rc;

	/* The Secret is immutable and mounted by running pods: a key pair is
	 * generated once, when the Secret does not exist yet. */
	json_t *obj = NULL;
	if (!kft_child_exists(ctx, job, "v1", "Secret", names.secret)) {
		rc = ssh_secret(ctx, job, names.secret, &obj, err);
		if (rc == 0)
			rc = append_new(objects, obj, err);
		if (rc != 0)
			return rc;
	}
	rc = hostfile_configmap(ctx, info, job, &p, names.hostfile, &obj, err);
	return rc == 0 ? append_new(objects, obj, err) : rc;
}

/* ---- CustomValidation ---------------------------------------------------------- */

/* An EnvVar as Go marshals it: name, value (omitted when empty),
 * valueFrom (omitted when absent). */
static json_t *go_env_var(const json_t *e)
{
	json_t *out = json_object();
	const json_t *name = json_object_get(e, "name");
	const json_t *value = json_object_get(e, "value");
	const json_t *from = json_object_get(e, "valueFrom");
	if (!out)
		return NULL;
	json_object_set_new(out, "name",
	                    json_string(json_string_value(name) ? json_string_value(name) : ""));
	if (json_string_value(value) && json_string_value(value)[0])
		json_object_set(out, "value", (json_t *)value);
	if (from && !json_is_null(from))
		json_object_set(out, "valueFrom", (json_t *)from);
	return out;
}

static json_t *go_env_list(const json_t *env)
{
	json_t *out = json_array();
	size_t i;
	const json_t *e;
	json_array_foreach((json_t *)env, i, e)
	{
		if (out && json_array_append_new(out, go_env_var(e)) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	return out;
}

static int reserved_name(const mpi_policy *p, const char *name)
{
	/* Upstream reserves OpenMPI's names whatever the implementation; the
	 * implementation's own names are reserved as well. */
	for (size_t i = 0; i < N_OF(openmpi_env); i++)
		if (strcmp(openmpi_env[i].name, name) == 0)
			return 1;
	for (size_t i = 0; p->flavour && i < p->flavour->n_env; i++)
		if (strcmp(p->flavour->env[i].name, name) == 0)
			return 1;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "[A B]": the sorted distinct reserved names the TrainJob sets, as Go
 * prints sets.List(); NULL when there are none. Caller frees. */
static char *reserved_in(const mpi_policy *p, const json_t *env)
{
	size_t n = json_array_size(env), k = 0;
	const char **hits = n ? calloc(n, sizeof(*hits)) : NULL;
	for (size_t i = 0; hits && i < n; i++) {
		const char *name =
		        json_string_value(json_object_get(json_array_get(env, i), "name"));
		if (name && reserved_name(p, name))
			hits[k++] = name;
	}
	if (k == 0) {
		free(hits);
		return NULL;
	}
	qsort(hits, k, sizeof(*hits), cmp_str);
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_putc(&b, '[');
	for (size_t i = 0; i < k; i++) {
		if (i > 0 && strcmp(hits[i], hits[i - 1]) == 0)
			continue;
		kft_strbuf_printf(&b, "%s%s", i ? " " : "", hits[i]);
	}
	kft_strbuf_putc(&b, ']');
	free(hits);
	return kft_strbuf_detach(&b);
}

static void validate_launcher_as_node(const kft_runtime_info *info, const mpi_policy *p,
                                      const json_t *trainer, kft_field_errors *errs)
{
	const json_t *nodes = json_object_get(trainer, "numNodes");
	json_int_t n = json_is_integer(nodes) ? json_integer_value(nodes) : 1;
	if (n < 2 || !p->launcher_as_node)
		return;
	if (kft_runtime_info_find_pod_set(info, MPI_LAUNCHER) &&
	    kft_runtime_info_find_pod_set(info, KFT_CONTAINER_NODE))
		return;
	kft_field_errors_add(errs, KFT_FIELD_INVALID, "spec.trainer.numNodes", nodes,
	                     "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode "
	                     "does not have either launcher and node");
}

static void validate_reserved_env(const mpi_policy *p, const json_t *trainer,
                                  kft_field_errors *errs)
{
	const json_t *env = json_object_get(trainer, "env");
	if (!json_is_array(env))
		return;
	char *names = reserved_in(p, env);
	if (!names)
		return;
	json_t *value = go_env_list(env);
	kft_field_errors_add(errs, KFT_FIELD_INVALID, "spec.trainer.env", value ? value : env,
	                     "must not have reserved envs, invalid envs configured: %s", names);
	json_decref(value);
	free(names);
}

static void mpi_custom_validation(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                                  const json_t *old_job, const json_t *new_job,
                                  kft_field_errors *errs)
{
	const json_t *src = mpi_source(info);
	if (!src)
		return;
	mpi_policy p;
	read_policy(src, &p);
	const json_t *trainer = json_object_get(json_object_get(new_job, "spec"), "trainer");
	if (!json_is_object(trainer))
		return;
	validate_launcher_as_node(info, &p, trainer, errs);
	validate_reserved_env(&p, trainer, errs);
}

static const char *const mpi_watch_kinds[] = {"v1/ConfigMap", "v1/Secret", NULL};

const kft_plugin kft_plugin_mpi = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "MPI",
        .watch_kinds = mpi_watch_kinds,
        .custom_validation = mpi_custom_validation,
        .enforce_ml_policy = mpi_enforce_ml_policy,
        .enforce_pod_spec = mpi_enforce_pod_spec,
        .component_builder = mpi_component_builder,
};
