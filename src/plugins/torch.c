/*
 * torch.c - the Torch plugin: PyTorch distributed training through torchrun.
 *
 * torchrun reads every command-line flag from a PET_<FLAG> environment
 * variable when the flag is absent, so the plugin configures it entirely
 * through env on the trainer's `node` container (and on the extra containers
 * the runtime lists under mlPolicy.torch.envInjection):
 *
 *   PET_NNODES          the trainer pod count (TrainJob numNodes wins)
 *   PET_NPROC_PER_NODE  processes per node, see resolve_nproc below
 *   PET_NODE_RANK       the pod's Job completion index (a fieldRef)
 *   PET_MASTER_ADDR     the first trainer pod, as the backend addresses it
 *   PET_MASTER_PORT     the "torch" service port, 29500 on Kubernetes
 *
 * and declares the port on the container for the headless service. These
 * mirror upstream Kubeflow Trainer v2.3.0. A TrainJob whose command is
 * `tune run` is a torchtune fine-tune: instead of the master env the command
 * is completed (torchtune.c) and stored as the container's command.
 *
 * Beyond upstream, mlPolicy.torch keeps two v2.0-era fields:
 *
 *   numProcPerNode  int-or-string in the runtime; the TrainJob's integer
 *                   wins. "auto" follows v2.3.0 (keep "auto" when the node
 *                   has GPUs, else the CPU count); "cpu" and "gpu" follow
 *                   v2.0 (see resolve_word).
 *   elasticPolicy   elastic training, which upstream accepted but never
 *                   implemented. See the "elastic" section.
 *
 * Addresses and ports are never spelled here: they are questions to the
 * backend, so a local run gets loopback addresses from the same code.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kftrainer/constants.h"
#include "kftrainer/framework.h"
#include "kftrainer/quantity.h"
#include "plugins/builtin.h"
#include "plugins/torchtune.h"

#define TORCH_ENV_NUM_NODES     "PET_NNODES"
#define TORCH_ENV_NPROC         "PET_NPROC_PER_NODE"
#define TORCH_ENV_NODE_RANK     "PET_NODE_RANK"
#define TORCH_ENV_MASTER_ADDR   "PET_MASTER_ADDR"
#define TORCH_ENV_MASTER_PORT   "PET_MASTER_PORT"
#define TORCH_ENV_MAX_RESTARTS  "PET_MAX_RESTARTS"
#define TORCH_ENV_RDZV_BACKEND  "PET_RDZV_BACKEND"
#define TORCH_ENV_RDZV_ENDPOINT "PET_RDZV_ENDPOINT"
#define TORCH_ENV_RDZV_ID       "PET_RDZV_ID"
#define TORCH_SERVICE           "torch"
#define TRAINER_PORT            29500
#define COMPLETION_INDEX_PATH   "metadata.annotations['batch.kubernetes.io/job-completion-index']"
#define ADDR_MAX                512

/* Names a TrainJob may not set in spec.trainer.env: upstream's five, plus
 * the rendezvous ones when the run is elastic. The error lists those used
 * sorted, as Go's sets.List prints them. */
static const char *const reserved_env[] = {TORCH_ENV_MASTER_ADDR, TORCH_ENV_MASTER_PORT,
                                           TORCH_ENV_NUM_NODES,   TORCH_ENV_NODE_RANK,
                                           TORCH_ENV_NPROC,       NULL};
static const char *const elastic_reserved_env[] = {TORCH_ENV_MAX_RESTARTS, TORCH_ENV_RDZV_BACKEND,
                                                   TORCH_ENV_RDZV_ENDPOINT, TORCH_ENV_RDZV_ID,
                                                   NULL};

/* ---- small JSON helpers ---------------------------------------------------- */

static const json_t *torch_policy(const kft_runtime_info *info)
{
	const json_t *t = info ? json_object_get(info->ml_policy, "torch") : NULL;
	return json_is_object(t) ? t : NULL;
}

static const json_t *child(const json_t *v, const char *const *keys, size_t n)
{
	for (size_t i = 0; i < n && v; i++)
		v = json_object_get(v, keys[i]);
	return v;
}

static const char *str_or_empty(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));
	return s ? s : "";
}

/* ---- resources ----------------------------------------------------------- */

/* What one trainer node has: the TrainJob's resourcesPerNode replaces the
 * runtime's as a whole, as upstream does. May be NULL. */
static const json_t *node_resources(const kft_runtime_info *info, const kft_trainjob *job)
{
	return job && job->resources_per_node ? job->resources_per_node
	                                      : kft_runtime_info_node_resources(info, NULL);
}

/* Quantity.Value() of a resource list entry: rounded up to a whole unit. */
static int quantity_units(const json_t *v, const char *what, int64_t *out, kft_error *err)
{
	kft_quantity q;
	kft_error qerr;
	*out = 0;
	if (!v)
		return 0;
	if (kft_quantity_from_json(v, &q, &qerr) != 0)
		return kft_error_set(err, KFT_EINVAL, "trainer resources: %s: %s", what,
		                     qerr.message);
	*out = kft_quantity_value(&q);
	return 0;
}

/* CPUs per node as upstream v2.3.0 counts them: the request when it is set
 * and not zero, else the limit, else 0. */
static int node_cpus(const json_t *res, int64_t *out, kft_error *err)
{
	const json_t *req = json_object_get(json_object_get(res, "requests"), "cpu");
	const json_t *lim = json_object_get(json_object_get(res, "limits"), "cpu");
	int rc = quantity_units(req, "cpu", out, err);
	if (rc == 0 && *out == 0)
		rc = quantity_units(lim, "cpu", out, err);
	return rc;
}

/* ---- numProcPerNode ----------------------------------------------------------- */

/* The requested value: the TrainJob's integer, else the runtime's
 * int-or-string, else "auto". */
static int requested_nproc(const kft_runtime_info *info, const kft_trainjob *job,
                           kft_torch_nproc *npp, kft_error *err)
{
	static const char *const words[] = {"auto", "cpu", "gpu"};
	const json_t *v = json_object_get(torch_policy(info), "numProcPerNode");
	*npp = (kft_torch_nproc){.str = "auto"};
	if (job && job->has_num_proc_per_node) {
		*npp = (kft_torch_nproc){.is_int = 1, .n = job->num_proc_per_node};
		return 0;
	}
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		*npp = (kft_torch_nproc){.is_int = 1, .n = json_integer_value(v)};
		return 0;
	}
	for (size_t i = 0; json_is_string(v) && i < 3; i++)
		if (strcmp(json_string_value(v), words[i]) == 0) {
			npp->str = words[i];
			return 0;
		}
	return kft_error_set(err, KFT_EINVAL,
	                     "mlPolicy.torch.numProcPerNode must be auto, cpu, gpu or an integer");
}

/* "cpu" as upstream v2.0 resolved it: when the node's resources say
 * anything, the CPU limit, else the CPU request, at least 1 (1 when neither
 * names a CPU); with no resources at all torchrun counts on the node. "gpu"
 * always stays for torchrun, as in v2.0. */
static int resolve_word(const json_t *res, kft_torch_nproc *npp, kft_error *err)
{
	const json_t *lim = json_object_get(res, "limits"), *req = json_object_get(res, "requests");
	if (strcmp(npp->str, "cpu") != 0 || (!json_object_size(lim) && !json_object_size(req)))
		return 0;
	const json_t *cpu = json_object_get(lim, "cpu");
	if (!cpu)
		cpu = json_object_get(req, "cpu");
	int64_t n = 0;
	int rc = quantity_units(cpu, "cpu", &n, err);
	if (rc != 0)
		return rc;
	*npp = (kft_torch_nproc){.is_int = 1, .n = n > 1 ? n : 1};
	return 0;
}

/* The value torchrun gets, and the node's GPU count (torchtune needs it). */
static int resolve_nproc(const kft_runtime_info *info, const kft_trainjob *job,
                         kft_torch_nproc *npp, int64_t *gpus, kft_error *err)
{
	const json_t *res = node_resources(info, job);
	int rc = requested_nproc(info, job, npp, err);
	if (rc == 0)
		rc = kft_resources_gpus(res, gpus, err);
	if (rc == 0 && !npp->is_int && strcmp(npp->str, "auto") == 0) {
		int64_t cpus = 0;
		if (*gpus > 0)
			return 0; /* torchrun counts the GPUs itself */
		if ((rc = node_cpus(res, &cpus, err)) != 0)
			return rc;
		*npp = (kft_torch_nproc){.is_int = 1, .n = cpus > 1 ? cpus : 1};
		return 0;
	}
	return rc || npp->is_int ? rc : resolve_word(res, npp, err);
}

/* ---- elastic ------------------------------------------------------------------
 *
 * mlPolicy.torch.elasticPolicy runs torchrun's elastic agent:
 *
 *   - PET_NNODES="<min>:<max>": torchrun starts training once `min` nodes
 *     joined and admits up to `max`;
 *   - the c10d rendezvous (PET_RDZV_BACKEND=c10d) hosted by the first
 *     trainer pod at the master address and port (PET_RDZV_ENDPOINT), keyed
 *     by the TrainJob's name (PET_RDZV_ID) so that restarted pods rejoin the
 *     same rendezvous; c10d needs no etcd, only the port already declared;
 *   - PET_MAX_RESTARTS: how often the agent restarts its workers;
 *   - the trainer pod set runs `max` pods: JobSet cannot resize a running
 *     Job, so every node that may join is started, and the rendezvous
 *     proceeds with whoever arrives;
 *   - maxRestarts also becomes the JobSet's failurePolicy.maxRestarts unless
 *     the runtime set one, as the v2.0 API documented.
 *
 * Missing bounds make the run fixed-size (maxNodes defaults to minNodes,
 * minNodes to maxNodes, both to 1), as Kubeflow's v1 PyTorchJob did.
 * `metrics` would drive a HorizontalPodAutoscaler; nothing can scale a
 * JobSet's Job, so they are ignored with a warning. */

typedef struct elastic {
	int on;
	int32_t min, max;
	int has_restarts;
	int32_t restarts;
} elastic;

static int read_int32(const json_t *pol, const char *key, int *has, int32_t *out, char *why,
                      size_t size)
{
	const json_t *v = json_object_get(pol, key);
	*has = v && !json_is_null(v);
	if (!*has)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN ||
	    json_integer_value(v) > INT32_MAX) {
		snprintf(why, size, "mlPolicy.torch.elasticPolicy.%s must be an int32", key);
		return -1;
	}
	*out = (int32_t)json_integer_value(v);
	return 0;
}

/* Reads the policy; -1 with `why` filled when its values contradict. */
static int elastic_read(const kft_runtime_info *info, elastic *e, char *why, size_t size)
{
	const json_t *pol = json_object_get(torch_policy(info), "elasticPolicy");
	int has_min, has_max;
	*e = (elastic){.on = json_is_object(pol)};
	if (!e->on)
		return 0;
	if (read_int32(pol, "minNodes", &has_min, &e->min, why, size) ||
	    read_int32(pol, "maxNodes", &has_max, &e->max, why, size) ||
	    read_int32(pol, "maxRestarts", &e->has_restarts, &e->restarts, why, size))
		return -1;
	if (!has_max)
		e->max = has_min ? e->min : 1;
	if (!has_min)
		e->min = e->max;
	if (e->min < 1)
		snprintf(why, size, "mlPolicy.torch.elasticPolicy.minNodes must be at least 1");
	else if (e->min > e->max)
		snprintf(why, size,
		         "mlPolicy.torch.elasticPolicy.minNodes (%d) must not be greater than "
		         "maxNodes (%d)",
		         (int)e->min, (int)e->max);
	else if (e->has_restarts && e->restarts < 0)
		snprintf(why, size,
		         "mlPolicy.torch.elasticPolicy.maxRestarts must not be negative");
	else
		return 0;
	return -1;
}

/* The JobSet restarts as often as torchrun may, unless the runtime says. */
static int elastic_failure_policy(kft_runtime_info *info, const elastic *e)
{
	if (!e->has_restarts || !json_is_object(info->template_spec))
		return 0;
	json_t *fp = json_object_get(info->template_spec, "failurePolicy");
	if (!json_is_object(fp)) {
		fp = json_object();
		if (!fp || json_object_set_new(info->template_spec, "failurePolicy", fp) != 0)
			return KFT_ENOMEM;
	}
	if (json_object_get(fp, "maxRestarts"))
		return 0;
	return json_object_set_new(fp, "maxRestarts", json_integer(e->restarts)) ? KFT_ENOMEM : 0;
}

/* ---- addresses ----------------------------------------------------------------- */

/* The first trainer pod's address: the master and the rendezvous host. */
static int master_address(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                          const kft_trainjob *job, char *buf, size_t size, kft_error *err)
{
	const kft_backend *be = ctx && ctx->backend && ctx->backend->pod_address
	                                ? ctx->backend
	                                : kft_backend_default();
	const kft_pod_set *ps = kft_runtime_info_find_ancestor(info, KFT_ANCESTOR_TRAINER);
	const char *sub = json_string_value(
	        json_object_get(json_object_get(info->template_spec, "network"), "subdomain"));
	if (!sub || !*sub)
		sub = job->name;
	if (be->pod_address(be->self, job->name, ps ? ps->name : KFT_CONTAINER_NODE, 0, 0, sub, buf,
	                    size) != 0)
		return kft_error_set(err, KFT_ELIMIT, "the master address of %s is too long",
		                     job->name);
	return 0;
}

static int torch_port(const kft_plugin_ctx *ctx, const kft_trainjob *job, int *port, kft_error *err)
{
	const kft_backend *be = ctx && ctx->backend && ctx->backend->service_port
	                                ? ctx->backend
	                                : kft_backend_default();
	*port = be->service_port(be->self, job->name, TORCH_SERVICE, TRAINER_PORT);
	if (*port < 1 || *port > 65535)
		return kft_error_set(err, KFT_EINVAL, "backend gave torch port %d", *port);
	return 0;
}

/* "host:port", with an IPv6 host in brackets. */
static void host_port(char *buf, size_t size, const char *host, int port)
{
	snprintf(buf, size, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

/* ---- env --------------------------------------------------------------------- */

/* Appends {"name": name, "value": value}. */
static int add_env(json_t *env, const char *name, const char *value)
{
	return json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
}

static int add_env_int(json_t *env, const char *name, long long value)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%lld", value);
	return add_env(env, name, buf);
}

static int add_env_field_ref(json_t *env, const char *name, const char *path)
{
	return json_array_append_new(env, json_pack("{s:s, s:{s:{s:s}}}", "name", name, "valueFrom",
	                                            "fieldRef", "fieldPath", path));
}

/* The PET_* variables every torch container gets (the "pet" group), and
 * the master endpoint (which torchtune's main container does without). */
typedef struct torch_env {
	json_t *pet, *master;
	char addr[ADDR_MAX];
	int port;
} torch_env;

static int pet_env(torch_env *te, int32_t count, const kft_torch_nproc *npp, const elastic *e,
                   const kft_trainjob *job)
{
	char buf[ADDR_MAX + 16];
	int rc = 0;
	if (e->on)
		snprintf(buf, sizeof(buf), "%d:%d", (int)e->min, (int)e->max);
	else
		snprintf(buf, sizeof(buf), "%d", (int)count);
	rc |= add_env(te->pet, TORCH_ENV_NUM_NODES, buf);
	rc |= npp->is_int ? add_env_int(te->pet, TORCH_ENV_NPROC, (long long)npp->n)
	                  : add_env(te->pet, TORCH_ENV_NPROC, npp->str);
	rc |= add_env_field_ref(te->pet, TORCH_ENV_NODE_RANK, COMPLETION_INDEX_PATH);
	if (e->on) {
		host_port(buf, sizeof(buf), te->addr, te->port);
		rc |= add_env(te->pet, TORCH_ENV_RDZV_BACKEND, "c10d");
		rc |= add_env(te->pet, TORCH_ENV_RDZV_ENDPOINT, buf);
		rc |= add_env(te->pet, TORCH_ENV_RDZV_ID, job->name);
		if (e->has_restarts)
			rc |= add_env_int(te->pet, TORCH_ENV_MAX_RESTARTS, e->restarts);
	}
	rc |= add_env(te->master, TORCH_ENV_MASTER_ADDR, te->addr);
	rc |= add_env_int(te->master, TORCH_ENV_MASTER_PORT, te->port);
	return rc ? KFT_ENOMEM : 0;
}

static int upsert_all(json_t *env, const json_t *items)
{
	size_t i;
	const json_t *item;
	json_array_foreach(items, i, item)
	{
		if (kft_upsert_env_object(env, item) != 0)
			return KFT_ENOMEM;
	}
	return 0;
}

/* ---- EnforceMLPolicy ------------------------------------------------------------ */

/* Upstream's message for an envInjection target that names no container;
 * the names are Go-quoted (%q). Caller frees; NULL when out of memory. */
static char *target_missing(const char *job_name, const char *name)
{
	char *q1 = kft_go_quote(job_name ? job_name : ""), *q2 = kft_go_quote(name ? name : "");
	char *msg = NULL;
	if (q1 && q2 &&
	    asprintf(&msg,
	             "envInjection target podSet %s container %s not found in runtime template", q1,
	             q2) < 0)
		msg = NULL;
	free(q1);
	free(q2);
	return msg;
}

/* A container of the named pod set, regular ones first, then init ones. */
static kft_container *find_any_container(const kft_runtime_info *info, const char *ps_name,
                                         const char *name)
{
	kft_pod_set *ps = kft_runtime_info_find_pod_set(info, ps_name);
	if (!ps)
		return NULL;
	kft_container *c = kft_pod_set_find_container(ps, name);
	for (size_t i = 0; !c && i < ps->n_init_containers; i++)
		if (strcmp(ps->init_containers[i].name, name) == 0)
			c = &ps->init_containers[i];
	return c;
}

static int inject_targets(const kft_runtime_info *info, const torch_env *te, kft_error *err)
{
	static const char *const targets_path[] = {"envInjection", "targets"};
	size_t i, j;
	const json_t *t, *cn;
	json_array_foreach(child(torch_policy(info), targets_path, 2), i, t)
	{
		const char *job_name = json_string_value(json_object_get(t, "jobName"));
		json_array_foreach(json_object_get(t, "containerNames"), j, cn)
		{
			const char *name = json_string_value(cn);
			kft_container *c =
			        job_name && name ? find_any_container(info, job_name, name) : NULL;
			if (!c) {
				char *msg = target_missing(job_name, name);
				int rc = kft_error_set(err, msg ? KFT_EINVAL : KFT_ENOMEM, "%s",
				                       msg ? msg : "out of memory");
				free(msg);
				return rc;
			}
			if (upsert_all(c->env, te->pet) || upsert_all(c->env, te->master))
				return kft_error_set(err, KFT_ENOMEM, "out of memory");
		}
	}
	return 0;
}

/* A backend without GPUs (backend.h): the job runs on CPU. A backend table
 * a caller filled by hand may leave the question out: GPUs, as on a cluster. */
static int on_cpu(const kft_backend *b)
{
	return b->has_gpus && !b->has_gpus(b->self);
}

/* The trainer's main container: the TrainJob's env, PET_*, and either the
 * master endpoint or, for torchtune, the completed command. */
static int enforce_trainer(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                           const kft_trainjob *job, kft_container *c, const torch_env *te,
                           int32_t count, const kft_torch_nproc *npp, int64_t gpus, kft_error *err)
{
	if (upsert_all(c->env, job->env) || upsert_all(c->env, te->pet))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (!kft_torchtune_is_entrypoint(job->command)) {
		if (upsert_all(c->env, te->master))
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
	} else {
		char rdzv[ADDR_MAX + 16];
		const json_t *ref =
		        json_object_get(json_object_get(job->obj, "spec"), "runtimeRef");
		host_port(rdzv, sizeof(rdzv), te->addr, te->port);
		json_t *cmd = kft_torchtune_command(
		        job->command,
		        kft_torchtune_needs_rendezvous(count, npp, gpus) ? rdzv : NULL, count, npp,
		        gpus, job->args, json_string_value(json_object_get(ref, "name")),
		        info->template_spec, on_cpu(ctx->backend));
		if (!cmd)
			return kft_error_set(err, KFT_ENOMEM,
			                     "building the torchtune command failed");
		json_decref(c->command);
		c->command = cmd;
	}
	if (kft_upsert_port(c->ports, te->port))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

static int enforce_with_env(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                            const kft_trainjob *job, torch_env *te, kft_error *err)
{
	char why[200];
	elastic e;
	kft_torch_nproc npp;
	int64_t gpus = 0;
	kft_pod_set *ps = kft_runtime_info_find_ancestor(info, KFT_ANCESTOR_TRAINER);
	if (elastic_read(info, &e, why, sizeof(why)) != 0)
		return kft_error_set(err, KFT_EINVAL, "%s", why);
	if (ps && job->trainer && job->has_num_nodes)
		ps->count = job->num_nodes;
	if (ps && e.on)
		ps->count = e.max;
	int32_t count = ps ? ps->count : 1;
	int rc = resolve_nproc(info, job, &npp, &gpus, err);
	/* kftrainer: a torchtune node on CPU is one device, one process (torch
	 * computes with every core of it; torchtune 0.6.1's distributed LoRA
	 * recipe asks for NCCL, which has no CPU backend) */
	if (rc == 0 && on_cpu(ctx->backend) && kft_torchtune_is_entrypoint(job->command))
		npp = (kft_torch_nproc){.is_int = 1, .n = 1};
	rc = rc ? rc : master_address(ctx, info, job, te->addr, sizeof(te->addr), err);
	rc = rc ? rc : torch_port(ctx, job, &te->port, err);
	if (rc != 0)
		return rc;
	if (pet_env(te, count, &npp, &e, job) != 0 || elastic_failure_policy(info, &e) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	kft_container *c =
	        job->trainer && ps ? kft_pod_set_find_container(ps, KFT_CONTAINER_NODE) : NULL;
	if (c && (rc = enforce_trainer(ctx, info, job, c, te, count, &npp, gpus, err)) != 0)
		return rc;
	return inject_targets(info, te, err);
}

static int torch_enforce_ml_policy(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                                   const kft_trainjob *job, kft_error *err)
{
	if (!info || !torch_policy(info) || !job)
		return 0;
	torch_env te = {.pet = json_array(), .master = json_array()};
	int rc = te.pet && te.master ? enforce_with_env(ctx, info, job, &te, err)
	                             : kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(te.pet);
	json_decref(te.master);
	return rc;
}

/* ---- rendering values as Go's encoding/json does ------------------------------------
 *
 * A field error shows the offending value as Go marshals it: struct fields
 * in declaration order, map keys sorted, and <, >, & escaped. The TrainJob
 * we hold keeps the user's key order, so values are rebuilt in Go's shape. */

static char *go_json(const json_t *v)
{
	char *raw = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!raw)
		return NULL;
	char *out = malloc(6 * strlen(raw) + 1), *o = out;
	for (const unsigned char *p = (const unsigned char *)raw; out && *p; p++) {
		if (*p == '<' || *p == '>' || *p == '&') {
			o += sprintf(o, "\\u%04x", (unsigned)*p);
		} else if (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
			o += sprintf(o, "\\u%04x", 0x2000u + (p[2] - 0xA8u) + 0x28u);
			p += 2; /* U+2028 and U+2029, which JavaScript reads as newlines */
		} else {
			*o++ = (char)*p;
		}
	}
	if (out)
		*o = '\0';
	free(raw);
	return out;
}

/* A copy of obj with `keys` first in that order, then the rest. */
static json_t *reorder(const json_t *obj, const char *const *keys)
{
	json_t *out = json_object();
	const char *k;
	const json_t *v;
	for (size_t i = 0; out && keys[i]; i++)
		if ((v = json_object_get(obj, keys[i])))
			json_object_set_new(out, keys[i], json_deep_copy(v));
	json_object_foreach((json_t *)obj, k, v)
	{
		if (out && !json_object_get(out, k))
			json_object_set_new(out, k, json_deep_copy(v));
	}
	return out;
}

static json_t *go_env_source(const json_t *from)
{
	static const char *const order[] = {"fieldRef",     "resourceFieldRef", "configMapKeyRef",
	                                    "secretKeyRef", "fileKeyRef",       NULL};
	static const char *const field_ref[] = {"apiVersion", "fieldPath", NULL};
	static const char *const res_ref[] = {"containerName", "resource", "divisor", NULL};
	static const char *const key_ref[] = {"name", "key", "optional", NULL};
	static const char *const file_ref[] = {"volumeName", "path", "key", "optional", NULL};
	static const char *const *const sub[] = {field_ref, res_ref, key_ref, key_ref, file_ref};
	json_t *out = reorder(from, order);
	for (size_t i = 0; out && i < 5; i++) {
		json_t *v = json_object_get(out, order[i]);
		if (json_is_object(v))
			json_object_set_new(out, order[i], reorder(v, sub[i]));
	}
	return out;
}

/* []corev1.EnvVar as Go marshals it: name, value (omitted when empty),
 * valueFrom. */
static json_t *go_env_list(const json_t *env)
{
	static const char *const order[] = {"name", "value", "valueFrom", NULL};
	json_t *out = json_array();
	size_t i;
	const json_t *e;
	json_array_foreach(env, i, e)
	{
		json_t *item = reorder(e, order);
		const char *v = json_string_value(json_object_get(item, "value"));
		if (v && !*v)
			json_object_del(item, "value");
		if (json_is_object(json_object_get(item, "valueFrom")))
			json_object_set_new(item, "valueFrom",
			                    go_env_source(json_object_get(item, "valueFrom")));
		json_array_append_new(out, item);
	}
	return out;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* What Quantity.String() prints for a quantity we hold as JSON. */
static json_t *go_quantity(const json_t *v)
{
	char buf[KFT_QUANTITY_STRING_MAX], text[32];
	kft_quantity q;
	const char *s = json_string_value(v);
	if (json_is_integer(v)) {
		snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		s = text;
	}
	if (s && kft_quantity_reserialize(s, buf, sizeof(buf), NULL) == 0)
		return json_string(buf);
	if (kft_quantity_from_json(v, &q, NULL) == 0 &&
	    kft_quantity_format_canonical(&q, buf, sizeof(buf)) == 0)
		return json_string(buf);
	return json_deep_copy(v);
}

/* A ResourceList with sorted keys, or NULL when empty (omitempty). */
static json_t *go_resource_list(const json_t *list)
{
	size_t n = json_object_size(list), i = 0;
	if (n == 0)
		return NULL;
	const char **keys = calloc(n, sizeof(*keys));
	const char *k;
	const json_t *v;
	json_t *out = json_object();
	if (!keys || !out) {
		free(keys);
		json_decref(out);
		return NULL;
	}
	json_object_foreach((json_t *)list, k, v)
	{
		keys[i++] = k;
	}
	qsort(keys, n, sizeof(*keys), cmp_str);
	for (i = 0; i < n; i++)
		json_object_set_new(out, keys[i], go_quantity(json_object_get(list, keys[i])));
	free(keys);
	return out;
}

/* *corev1.ResourceRequirements: null, or limits, requests, claims. */
static json_t *go_resources(const json_t *res)
{
	if (!json_is_object(res))
		return json_null();
	json_t *out = json_object();
	json_t *lim = go_resource_list(json_object_get(res, "limits"));
	json_t *req = go_resource_list(json_object_get(res, "requests"));
	const json_t *claims = json_object_get(res, "claims");
	if (lim)
		json_object_set_new(out, "limits", lim);
	if (req)
		json_object_set_new(out, "requests", req);
	if (json_array_size(claims))
		json_object_set_new(out, "claims", json_deep_copy(claims));
	return out;
}

/* Adds an "Invalid value" error whose value is `v` (stolen) rendered as Go. */
static void add_invalid(kft_field_errors *errs, const char *field, json_t *v, const char *detail)
{
	char *rendered = v ? go_json(v) : NULL;
	if (!v || !rendered)
		errs->oom = 1;
	kft_field_errors_add_rendered(errs, KFT_FIELD_INVALID, field, rendered, detail);
	free(rendered);
	json_decref(v);
}

static json_t *nproc_value(const kft_torch_nproc *npp)
{
	return npp->is_int ? json_integer(npp->n) : json_string(npp->str);
}

/* ---- CustomValidation -------------------------------------------------------- */

static void validate_env_injection(const kft_runtime_info *info, kft_field_errors *errs)
{
	static const char *const targets_path[] = {"envInjection", "targets"};
	static const char *const order[] = {"jobName", "containerNames", NULL};
	size_t i, j;
	const json_t *t, *cn;
	json_array_foreach(child(torch_policy(info), targets_path, 2), i, t)
	{
		const char *job_name = json_string_value(json_object_get(t, "jobName"));
		json_array_foreach(json_object_get(t, "containerNames"), j, cn)
		{
			const char *name = json_string_value(cn);
			if (job_name && name && find_any_container(info, job_name, name))
				continue;
			char *detail = target_missing(job_name, name);
			if (!detail)
				errs->oom = 1;
			add_invalid(errs, "spec.runtimeRef", reorder(t, order), detail);
			free(detail);
		}
	}
}

/* One error listing, sorted and once each, the reserved names used. */
static void validate_reserved_env(const kft_trainjob *job, int elastic_on, kft_field_errors *errs)
{
	const char *all[16];
	size_t n = 0;
	for (size_t i = 0; reserved_env[i]; i++)
		all[n++] = reserved_env[i];
	for (size_t i = 0; elastic_on && elastic_reserved_env[i]; i++)
		all[n++] = elastic_reserved_env[i];
	qsort(all, n, sizeof(*all), cmp_str);
	char detail[400] = "must not have reserved envs, invalid envs configured: [";
	int found = 0;
	for (size_t k = 0; k < n; k++) {
		size_t i;
		const json_t *e;
		json_array_foreach(job->env, i, e)
		{
			if (strcmp(str_or_empty(e, "name"), all[k]) != 0)
				continue;
			strcat(strcat(detail, found++ ? " " : ""), all[k]);
			break;
		}
	}
	if (!found)
		return;
	strcat(detail, "]");
	add_invalid(errs, "spec.trainer.env", go_env_list(job->env), detail);
}

static void validate_qlora(const kft_runtime_info *info, const kft_trainjob *job, const char *model,
                           const char *config, kft_field_errors *errs)
{
	char detail[400];
	const json_t *ref = json_object_get(json_object_get(job->obj, "spec"), "runtimeRef");
	if (!strstr(config, "_qlora"))
		return;
	if (strcmp(model, "qwen2_5/1.5B") == 0) {
		snprintf(detail, sizeof(detail), "QLoRA is not supported for %s model", model);
		add_invalid(errs, "spec.runtimeRef.name", json_string(str_or_empty(ref, "name")),
		            detail);
	}
	if (!strstr(config, "_qlora_single_device") &&
	    (!strcmp(model, "llama3_2/1B") || !strcmp(model, "llama3_2/3B"))) {
		kft_torch_nproc npp;
		if (requested_nproc(info, job, &npp, NULL) != 0)
			npp = (kft_torch_nproc){.str = "auto"};
		snprintf(detail, sizeof(detail), "must be auto or 1 for %s model when using QLoRA",
		         model);
		add_invalid(errs, "spec.trainer.numProcPerNode", nproc_value(&npp), detail);
		snprintf(detail, sizeof(detail),
		         "must have gpu resource with value 1 for %s model when using QLoRA",
		         model);
		add_invalid(errs, "spec.trainer.resourcesPerNode",
		            go_resources(job->resources_per_node), detail);
	}
}

static void validate_immutable_args(const kft_trainjob *job, kft_field_errors *errs)
{
	size_t i;
	const json_t *a;
	json_array_foreach(job->args, i, a)
	{
		char key[64], field[64], detail[200];
		if (!kft_torchtune_immutable_key(json_string_value(a), key, sizeof(key)))
			continue;
		snprintf(field, sizeof(field), "spec.trainer.args[%zu]", i);
		snprintf(detail, sizeof(detail),
		         "must not set immutable config \"%s\" in trainer args; it is managed by "
		         "the runtime",
		         key);
		add_invalid(errs, field, json_deep_copy(a), detail);
	}
}

/* The torchtune rules: a supported model, one node except for the 70B
 * model, QLoRA limits, no LoRA on several nodes, no runtime-owned args. */
static void validate_torchtune(const kft_runtime_info *info, const kft_trainjob *job,
                               kft_field_errors *errs)
{
	const json_t *ref = json_object_get(json_object_get(job->obj, "spec"), "runtimeRef");
	const char *ref_name = json_string_value(json_object_get(ref, "name"));
	char model[256], config[320], detail[400];
	const char *recipe;
	kft_torch_nproc npp;
	int64_t gpus = 0;
	int32_t nodes = job->has_num_nodes ? job->num_nodes : 1;
	kft_torchtune_model(ref_name, model, sizeof(model));
	if (!kft_torchtune_model_supported(model)) {
		snprintf(detail, sizeof(detail),
		         "must have a supported pretrained model, invalid model configured: %s",
		         model);
		add_invalid(errs, "spec.runtimeRef.name", json_string(ref_name ? ref_name : ""),
		            detail);
	}
	if (nodes > 1 && strcmp(model, "llama3_3/70B") != 0) {
		snprintf(detail, sizeof(detail), "must be 1 for %s model", model);
		add_invalid(errs, "spec.trainer.numNodes", json_integer(nodes), detail);
	}
	if (requested_nproc(info, job, &npp, NULL) != 0 ||
	    kft_resources_gpus(node_resources(info, job), &gpus, NULL) != 0)
		npp = (kft_torch_nproc){.str = "auto"};
	if (kft_torchtune_recipe_config(nodes, &npp, gpus, job->args, ref_name, &recipe, config,
	                                sizeof(config)) == 0)
		validate_qlora(info, job, model, config, errs);
	if (nodes > 1 &&
	    (kft_torchtune_lora_enabled(job->args) || kft_torchtune_qlora_enabled(job->args)))
		add_invalid(errs, "spec.trainer.numNodes", json_integer(nodes),
		            "LoRA fine-tuning is not supported for multi-node training in "
		            "TorchTune");
	validate_immutable_args(job, errs);
}

static void validate_elastic(const kft_runtime_info *info, const kft_trainjob *job,
                             kft_field_errors *errs)
{
	static const char *const order[] = {"maxRestarts", "minNodes", "maxNodes", "metrics", NULL};
	const json_t *pol = json_object_get(torch_policy(info), "elasticPolicy");
	char why[200];
	elastic e;
	if (elastic_read(info, &e, why, sizeof(why)) != 0)
		add_invalid(errs, "spec.runtimeRef", reorder(pol, order), why);
	if (e.on && job->trainer && job->has_num_nodes)
		add_invalid(errs, "spec.trainer.numNodes", json_integer(job->num_nodes),
		            "should not be set if the runtime's torch.elasticPolicy is configured");
	if (e.on && json_array_size(json_object_get(pol, "metrics")))
		kft_field_errors_warn(errs,
		                      "mlPolicy.torch.elasticPolicy.metrics of the runtime are "
		                      "ignored: kftrainer does not autoscale TrainJobs");
}

/* The typed view of a TrainJob being admitted. A create that only has
 * metadata.generateName has no name yet, which these rules do not need:
 * the view is then taken of a copy named "". Frees *copy after use. */
static int admitted_view(const json_t *obj, kft_trainjob *job, json_t **copy)
{
	*copy = NULL;
	if (json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")))
		return kft_trainjob_view(obj, job, NULL);
	*copy = json_deep_copy(obj);
	if (!json_is_object(*copy))
		return KFT_EINVAL;
	json_t *meta = json_object_get(*copy, "metadata");
	if (!json_is_object(meta)) {
		meta = json_object();
		if (json_object_set_new(*copy, "metadata", meta) != 0)
			return KFT_ENOMEM;
	}
	if (json_object_set_new(meta, "name", json_string("")) != 0)
		return KFT_ENOMEM;
	return kft_trainjob_view(*copy, job, NULL);
}

static void torch_validate(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                           const json_t *old_job, const json_t *new_job, kft_field_errors *errs)
{
	kft_trainjob job;
	json_t *copy;
	if (!info || !torch_policy(info) || !new_job)
		return;
	validate_env_injection(info, errs);
	if (admitted_view(new_job, &job, &copy) != 0) {
		json_decref(copy);
		return;
	}
	if (job.trainer) {
		validate_reserved_env(
		        &job, json_is_object(json_object_get(torch_policy(info), "elasticPolicy")),
		        errs);
		if (kft_torchtune_is_entrypoint(job.command))
			validate_torchtune(info, &job, errs);
	}
	validate_elastic(info, &job, errs);
	json_decref(copy);
}

const kft_plugin kft_plugin_torch = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "Torch",
        .custom_validation = torch_validate,
        .enforce_ml_policy = torch_enforce_ml_policy,
};
