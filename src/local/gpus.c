/*
 * gpus.c - GPUs on a workstation: which exist, which a running job holds,
 * and which slice each pod of a new job gets (see gpus.h).
 *
 * Design in plain words:
 *  - The inventory is asked once per submit, and only when the job asks for
 *    GPUs, so a CPU job never pays for it. $KFTRAINER_GPUS, when set, is the
 *    inventory (tests, and a user who wants to lend the engine only some
 *    GPUs); otherwise NVML answers, opened with dlopen at run time so that
 *    neither the CLI nor the library depends on the NVIDIA driver. NVML's
 *    UUIDs are what the slices name: CUDA_VISIBLE_DEVICES accepts them, and
 *    unlike indices they mean the same device whatever CUDA_DEVICE_ORDER is.
 *  - A placement is a private object stored with the job's other objects
 *    (kind GPUAllocation, see gpus.h), so it lives and dies with the job and
 *    needs no table of its own; the supervisor reads its slice from there.
 *  - GPUs held by the jobs that have not finished are never handed out
 *    again: a second job that does not fit is refused, not queued, since a
 *    queued job would sit "Created" with nothing saying why and the engine
 *    has no scheduler to wake it; refusing at submit says so at once.
 */
#include "local/gpus.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kftrainer/constants.h"
#include "kftrainer/framework.h"
#include "local/local_internal.h"

#define NVML_LIBRARY   "libnvidia-ml.so.1"
#define NVML_UUID_SIZE 96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */

void kft_local_gpus_free(kft_local_gpus *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++)
		free(g->ids[i]);
	free(g->ids);
	g->ids = NULL;
	g->n = 0;
}

static int gpus_add(kft_local_gpus *g, const char *id, size_t len, kft_error *err)
{
	char **grown = realloc(g->ids, (g->n + 1) * sizeof(char *));
	if (!grown)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	g->ids = grown;
	if (!(g->ids[g->n] = strndup(id, len)))
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	g->n++;
	return 0;
}

bool kft_local_gpus_has(const kft_local_gpus *g, const char *id)
{
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->ids[i], id) == 0)
			return true;
	return false;
}

int kft_local_gpus_minus(const kft_local_gpus *all, const kft_local_gpus *held, kft_local_gpus *out,
                         kft_error *err)
{
	*out = (kft_local_gpus){0};
	for (size_t i = 0; i < all->n; i++) {
		int rc = kft_local_gpus_has(held, all->ids[i])
		                 ? 0
		                 : gpus_add(out, all->ids[i], strlen(all->ids[i]), err);
		if (rc) {
			kft_local_gpus_free(out);
			return rc;
		}
	}
	return 0;
}

/* ---- $KFTRAINER_GPUS ------------------------------------------------------------ */

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

/* A device as CUDA_VISIBLE_DEVICES names it: an index, a UUID
 * ("GPU-8f3c..."), a MIG name ("MIG-GPU-.../1/0"). Nothing that could split
 * the variable (a comma) or surprise a shell reading a log. */
static bool id_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == ':' || c == '.' || c == '/';
}

/* One entry p[0..n) of a device list, appended to out. */
static int list_entry(kft_local_gpus *out, const char *p, size_t n, kft_error *err)
{
	char shown[40];
	for (size_t i = 0; i < n; i++) /* before showing it: it may hold anything */
		if (!id_char(p[i]))
			return kft_error_set(
			        err, KFT_EINVAL,
			        "%s: entry %zu: byte 0x%02x: a device is an index or a "
			        "UUID (letters, digits, - _ : . /)",
			        KFT_LOCAL_GPUS_ENV, out->n + 1, (unsigned char)p[i]);
	snprintf(shown, sizeof(shown), "%.*s%s", n > 32 ? 32 : (int)n, p, n > 32 ? "..." : "");
	if (n == 0)
		return kft_error_set(err, KFT_EINVAL, "%s: entry %zu is empty", KFT_LOCAL_GPUS_ENV,
		                     out->n + 1);
	if (n > KFT_LOCAL_GPU_ID_MAX)
		return kft_error_set(err, KFT_EINVAL,
		                     "%s: entry %zu \"%s\" is longer than %d bytes",
		                     KFT_LOCAL_GPUS_ENV, out->n + 1, shown, KFT_LOCAL_GPU_ID_MAX);
	if (out->n == KFT_LOCAL_GPUS_MAX)
		return kft_error_set(err, KFT_EINVAL, "%s: more than %d devices",
		                     KFT_LOCAL_GPUS_ENV, KFT_LOCAL_GPUS_MAX);
	for (size_t i = 0; i < out->n; i++)
		if (strlen(out->ids[i]) == n && memcmp(out->ids[i], p, n) == 0)
			return kft_error_set(err, KFT_EINVAL, "%s: device \"%s\" is listed twice",
			                     KFT_LOCAL_GPUS_ENV, shown);
	return gpus_add(out, p, n, err);
}

int kft_local_gpus_parse(const char *text, kft_local_gpus *out, kft_error *err)
{
	*out = (kft_local_gpus){0};
	size_t len = strlen(text);
	if (len > KFT_LOCAL_GPUS_TEXT_MAX)
		return kft_error_set(err, KFT_EINVAL, "%s: longer than %d bytes",
		                     KFT_LOCAL_GPUS_ENV, KFT_LOCAL_GPUS_TEXT_MAX);
	if (all_digits(text, len)) { /* a count: indices 0..N-1 */
		if (len > 3 || atoi(text) > KFT_LOCAL_GPUS_MAX)
			return kft_error_set(err, KFT_EINVAL, "%s: %s GPUs: at most %d",
			                     KFT_LOCAL_GPUS_ENV, text, KFT_LOCAL_GPUS_MAX);
		for (int i = 0, n = atoi(text); i < n; i++) {
			char id[8];
			int rc = gpus_add(out, id, (size_t)snprintf(id, sizeof(id), "%d", i), err);
			if (rc) {
				kft_local_gpus_free(out);
				return rc;
			}
		}
		return 0;
	}
	if (len == 0) /* set and empty: no GPUs, whatever NVML says */
		return 0;
	for (const char *p = text;; p++) {
		size_t n = strcspn(p, ",");
		int rc = list_entry(out, p, n, err);
		if (rc) {
			kft_local_gpus_free(out);
			return rc;
		}
		if (!*(p += n))
			return 0;
	}
}

/* ---- NVML ------------------------------------------------------------------------ */

typedef int (*nvml_void_fn)(void);
typedef int (*nvml_count_fn)(unsigned int *);
typedef int (*nvml_handle_fn)(unsigned int, void **);
typedef int (*nvml_uuid_fn)(void *, char *, unsigned int);

/* The devices NVML sees, by UUID (by index when a UUID cannot be read). No
 * library, no driver or no device is an empty inventory, never an error:
 * that is simply a machine without GPUs. */
static int nvml_inventory(kft_local_gpus *out, kft_error *err)
{
	void *lib = dlopen(NVML_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return 0;
	nvml_void_fn init = (nvml_void_fn)dlsym(lib, "nvmlInit_v2");
	nvml_void_fn shutdown = (nvml_void_fn)dlsym(lib, "nvmlShutdown");
	nvml_count_fn count = (nvml_count_fn)dlsym(lib, "nvmlDeviceGetCount_v2");
	nvml_handle_fn handle = (nvml_handle_fn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	nvml_uuid_fn uuid = (nvml_uuid_fn)dlsym(lib, "nvmlDeviceGetUUID");
	unsigned int n = 0;
	int rc = 0;
	if (init && shutdown && count && handle && uuid && init() == 0) {
		if (count(&n) != 0)
			n = 0;
		for (unsigned int i = 0; i < n && i < KFT_LOCAL_GPUS_MAX && rc == 0; i++) {
			char id[NVML_UUID_SIZE + 1] = "";
			void *dev = NULL;
			if (handle(i, &dev) != 0 || uuid(dev, id, NVML_UUID_SIZE) != 0 || !id[0])
				snprintf(id, sizeof(id), "%u", i);
			id[NVML_UUID_SIZE] = '\0';
			rc = gpus_add(out, id, strlen(id), err);
		}
		shutdown();
	}
	dlclose(lib);
	if (rc)
		kft_local_gpus_free(out);
	return rc;
}

int kft_local_gpus_inventory(kft_local_gpus *out, const char **source, kft_error *err)
{
	const char *env = getenv(KFT_LOCAL_GPUS_ENV);
	*out = (kft_local_gpus){0};
	if (env) {
		*source = KFT_LOCAL_GPUS_ENV;
		return kft_local_gpus_parse(env, out, err);
	}
	*source = "NVML";
	return nvml_inventory(out, err);
}

/* ---- placement --------------------------------------------------------------------- */

static const json_t *pod_containers(const json_t *rjob)
{
	return json_object_get(
	        json_object_get(
	                json_object_get(json_object_get(json_object_get(rjob, "template"), "spec"),
	                                "template"),
	                "spec"),
	        "containers");
}

/* GPUs of one pod of rjob: its node container's, as on a cluster the device
 * plugin hands them to that container. */
static int pod_gpus(const json_t *rjob, int64_t *out, kft_error *err)
{
	size_t i;
	const json_t *c;
	*out = 0;
	json_array_foreach(pod_containers(rjob), i, c)
	{
		const char *name = json_string_value(json_object_get(c, "name"));
		if (name && strcmp(name, KFT_CONTAINER_NODE) == 0)
			return kft_resources_gpus(json_object_get(c, "resources"), out, err);
	}
	return 0;
}

static int64_t rjob_pods(const json_t *rjob)
{
	kft_rjob_counts c;
	if (kft_rjob_counts_of(rjob, &c) != 0 || c.replicas > 100000 || c.completions > 100000)
		return 0; /* the engine refuses such counts itself */
	return c.replicas * c.completions;
}

int kft_local_gpus_request(const json_t *jobset, int64_t *total, kft_error *err)
{
	size_t i;
	const json_t *rj;
	*total = 0;
	json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i,
	                   rj)
	{
		int64_t per = 0;
		int rc = pod_gpus(rj, &per, err);
		if (rc)
			return rc;
		if (per > KFT_LOCAL_GPUS_MAX)
			per = KFT_LOCAL_GPUS_MAX + 1; /* more than any machine: refused below */
		*total += per * rjob_pods(rj);
		if (*total > KFT_LOCAL_GPUS_MAX * 1000)
			*total = KFT_LOCAL_GPUS_MAX * 1000;
	}
	return 0;
}

/* The slice string "a,b,c" of n devices from free, starting at *next. */
static json_t *take_slice(const kft_local_gpus *free_ids, size_t *next, int64_t n)
{
	size_t len = 0;
	for (int64_t k = 0; k < n; k++)
		len += strlen(free_ids->ids[*next + (size_t)k]) + 1;
	char *s = calloc(len + 1, 1);
	if (!s)
		return NULL;
	for (int64_t k = 0; k < n; k++) {
		if (k)
			strcat(s, ",");
		strcat(s, free_ids->ids[(*next)++]);
	}
	json_t *v = json_string(s);
	free(s);
	return v;
}

int kft_local_gpus_place(const json_t *jobset, const kft_local_gpus *free_ids, json_t **out,
                         kft_error *err)
{
	size_t i, next = 0;
	const json_t *rj;
	json_t *devices = json_object();
	*out = NULL;
	if (!devices)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i,
	                   rj)
	{
		int64_t per = 0, pods = rjob_pods(rj);
		const char *name = json_string_value(json_object_get(rj, "name"));
		int rc = pod_gpus(rj, &per, err);
		if (rc == 0 && per > 0 && (uint64_t)per * (uint64_t)pods > free_ids->n - next)
			rc = kft_error_set(err, KFT_EINVAL, "not enough free GPUs");
		if (rc) {
			json_decref(devices);
			return rc;
		}
		json_t *slices = per > 0 && name ? json_array() : NULL;
		for (int64_t p = 0; slices && p < pods; p++)
			json_array_append_new(slices, take_slice(free_ids, &next, per));
		if (slices && (json_array_size(slices) != (size_t)pods ||
		               json_object_set_new(devices, name, slices) != 0)) {
			json_decref(devices);
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		}
	}
	*out = json_pack("{s:s, s:s, s:o}", "apiVersion", KFT_LOCAL_GPUS_API_VERSION, "kind",
	                 KFT_LOCAL_GPUS_KIND, "devices", devices);
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

json_t *kft_local_gpus_cpu_allocation(int64_t asked_per_node, const char *message)
{
	return json_pack("{s:s, s:s, s:{s:I, s:s}}", "apiVersion", KFT_LOCAL_GPUS_API_VERSION,
	                 "kind", KFT_LOCAL_GPUS_KIND, "cpu", "gpusPerNode",
	                 (json_int_t)asked_per_node, "message", message);
}

const char *kft_local_gpus_cpu_message(const json_t *allocation)
{
	return json_string_value(json_object_get(json_object_get(allocation, "cpu"), "message"));
}

const json_t *kft_local_gpus_find(const json_t *objects)
{
	size_t i;
	const json_t *o;
	json_array_foreach(objects, i, o)
	{
		const char *kind = json_string_value(json_object_get(o, "kind"));
		const char *av = json_string_value(json_object_get(o, "apiVersion"));
		if (kind && av && strcmp(kind, KFT_LOCAL_GPUS_KIND) == 0 &&
		    strcmp(av, KFT_LOCAL_GPUS_API_VERSION) == 0)
			return o;
	}
	return NULL;
}

int kft_local_gpus_held_by(const json_t *allocation, kft_local_gpus *held, size_t *count,
                           kft_error *err)
{
	const char *rjob;
	const json_t *slices;
	*count = 0;
	json_object_foreach((json_t *)json_object_get(allocation, "devices"), rjob, slices)
	{
		size_t i;
		const json_t *s;
		json_array_foreach(slices, i, s)
		{
			const char *p = json_string_value(s);
			while (p && *p) {
				size_t n = strcspn(p, ",");
				char id[KFT_LOCAL_GPU_ID_MAX + 1];
				snprintf(id, sizeof(id), "%.*s", (int)n, p);
				if (n && n <= KFT_LOCAL_GPU_ID_MAX &&
				    !kft_local_gpus_has(held, id)) {
					int rc = gpus_add(held, p, n, err);
					if (rc)
						return rc;
					(*count)++;
				}
				p += n + (p[n] == ',');
			}
		}
	}
	return 0;
}

const char *kft_local_gpus_slice(const json_t *allocation, const char *rjob, int rec_index)
{
	const json_t *slices = json_object_get(json_object_get(allocation, "devices"), rjob);
	return rec_index >= 0 ? json_string_value(json_array_get(slices, (size_t)rec_index)) : NULL;
}

/* torchrun's own "auto" counts CUDA devices only when torch sees CUDA, else
 * the CPUs; "gpu" fails without CUDA. The slice is the node's answer to
 * both, so the engine says it rather than leave it to torchrun's guess (the
 * plugin keeps the word on the object, as upstream does on a cluster). */
int kft_local_gpus_resolve_nproc(char **envp, const char *slice, kft_error *err)
{
	static const char key[] = KFT_LOCAL_NPROC_ENV "=";
	size_t n = 1;
	for (const char *c = slice; *c; c++)
		n += *c == ',';
	for (size_t i = 0; envp && envp[i]; i++) {
		const char *v = envp[i] + sizeof(key) - 1;
		if (strncmp(envp[i], key, sizeof(key) - 1) != 0 ||
		    (strcmp(v, "auto") != 0 && strcmp(v, "gpu") != 0))
			continue;
		char *kv = NULL;
		if (asprintf(&kv, "%s%zu", key, n) < 0)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		free(envp[i]);
		envp[i] = kv;
	}
	return 0;
}
