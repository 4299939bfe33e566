/*
 * flux.c - the Flux plugin: run the TrainJob under the Flux HPC resource
 * manager, one Flux broker per node pod.
 *
 * A runtime with spec.mlPolicy.flux needs nothing Flux-specific in its
 * image. Following upstream Kubeflow Trainer v2.3.0
 * (pkg/runtime/framework/plugins/flux):
 *
 *   EnforceMLPolicy   on the "node" replicated job: an init container
 *                     "flux-installer" that copies Flux out of a flux-view
 *                     image into an emptyDir; volumes for that install, the
 *                     Spack software tree, shared memory, the scripts
 *                     ConfigMap "<job>-flux-entrypoint" and the CURVE Secret
 *                     "<job>-flux-curve"; their mounts in the "node"
 *                     container; and that container's command replaced by
 *                     `/bin/bash /etc/flux-config/entrypoint.sh "<command>"`,
 *                     where <command> is the TrainJob's (else the
 *                     template's) command and args joined by spaces;
 *   ComponentBuilder  the ConfigMap with init.sh, entrypoint.sh (see
 *                     flux_templates.h), broker.toml and the host list, and
 *                     the Secret with the brokers' shared CURVE certificate;
 *   CustomValidation  numProcPerNode >= 1, and "flux-installer" is a reserved
 *                     init container name.
 *
 * Three settings come from the environment of the trainer's "node"
 * container, the TrainJob's env overriding the runtime's: FLUX_VIEW_IMAGE
 * (the installer image), FLUX_NETWORK_DEVICE (what brokers bind to) and
 * FLUX_QUEUE_POLICY (Fluxion's queue policy).
 *
 * Where we differ from upstream, and why:
 *
 *   - Hosts come from the "node" pod set's endpoints (set by PodNetwork via
 *     the backend), not from a name pattern. Upstream assumes the JobSet
 *     subdomain is the job's name and the cluster domain is cluster.local;
 *     we take the broker hostnames (first label) and the domain they are
 *     reached at from the endpoints, and the port from the backend
 *     ("flux", default 8050). On a cluster this yields upstream's host list
 *     "<job>-node-0-[0-N]" and a connect URI "tcp://%h.<subdomain>:%p",
 *     which the pod's DNS search path resolves. Endpoints that share no
 *     domain get one hosts entry each with its own connect URI.
 *   - The CURVE key pair is random, generated once, and kept while the
 *     Secret exists. Upstream derives it from SHA-256 of the TrainJob's UID,
 *     which anyone who can read the TrainJob can recompute; the brokers only
 *     need all pods to share the certificate, which the Secret ensures.
 *   - broker.toml and the host list are their own ConfigMap keys, copied by
 *     init.sh, instead of a here-document inside it: no shell quoting of
 *     user-supplied settings. TOML strings are escaped.
 *   - entrypoint.sh exits with the status of `flux run`; upstream's ends
 *     with `touch` and so reports success whatever the job did.
 *   - A runtime without a "node" pod set with endpoints is an error at
 *     Build: upstream would emit a host list for pods that do not exist.
 *
 * Upstream replaces spec.trainer.command in the TrainJob itself; we cannot
 * (the TrainJob is read-only here), so the wrapper is written to the trainer
 * "node" container's command in RuntimeInfo, and the JobSet plugin must not
 * then re-apply the TrainJob's own command and args for a Flux runtime.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/ecp.h>

#include "kftrainer/constants.h"
#include "kftrainer/framework.h"
#include "kftrainer/quantity.h"
#include "plugins/builtin.h"
#include "util/base64.h"
#include "plugins/flux_templates.h"
#include "util/random.h"
#include "util/strbuf.h"
#include "util/secret.h"

/* Names and defaults from upstream's pkg/constants (candidates for
 * constants.h). */
#define FLUX_INSTALLER_IMAGE     "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"
#define FLUX_NETWORK_DEVICE      "eth0"
#define FLUX_QUEUE_POLICY        "fcfs"
#define FLUX_INSTALLER_CONTAINER "flux-installer"
#define FLUX_INSTALL_VOLUME      "flux-install"
#define FLUX_INSTALL_PATH        "/mnt/flux"
#define FLUX_CONFIG_PATH         "/etc/flux-config"
#define FLUX_CURVE_VOLUME        "flux-curve"
#define FLUX_CURVE_PATH          "/curve"
#define FLUX_MEMORY_VOLUME       "shared-memory"
#define FLUX_MEMORY_PATH         "/dev/shm"
#define FLUX_SPACK_VOLUME        "spack-install"
#define FLUX_SPACK_PATH          "/opt/software"
#define FLUX_ENTRYPOINT_SUFFIX   "-flux-entrypoint"
#define FLUX_CURVE_SUFFIX        "-flux-curve"
#define FLUX_CURVE_KEY           "curve.cert"
#define FLUX_CONFIG_MODE         0755
#define FLUX_CURVE_MODE          0400

#define FLUX_SERVICE      "flux"
#define FLUX_DEFAULT_PORT 8050

#define NAME_MAX_LEN 320

static const json_t *flux_source(const kft_runtime_info *info)
{
	if (!info || !info->ml_policy)
		return NULL;
	const json_t *flux = json_object_get(info->ml_policy, "flux");
	return json_is_object(flux) ? flux : NULL;
}

static kft_container *trainer_container(const kft_runtime_info *info)
{
	kft_pod_set *ps = kft_runtime_info_find_ancestor(info, KFT_ANCESTOR_TRAINER);
	return ps ? kft_pod_set_find_container(ps, KFT_CONTAINER_NODE) : NULL;
}

static int object_name(char *buf, const char *job, const char *suffix, kft_error *err)
{
	int n = snprintf(buf, NAME_MAX_LEN, "%s%s", job, suffix);
	if (n < 0 || n >= NAME_MAX_LEN)
		return kft_error_set(err, KFT_ELIMIT,
		                     "TrainJob name too long for its Flux objects");
	return 0;
}

/* ---- settings ------------------------------------------------------------------ */

typedef struct flux_settings {
	const char *view_image, *network_device, *queue_policy; /* borrowed */
} flux_settings;

/* Sets the setting `name` names, if any. */
static void take_setting(flux_settings *s, const char *name, const char *value)
{
	if (!name || !value)
		return;
	if (strcmp(name, "FLUX_VIEW_IMAGE") == 0)
		s->view_image = value;
	else if (strcmp(name, "FLUX_NETWORK_DEVICE") == 0)
		s->network_device = value;
	else if (strcmp(name, "FLUX_QUEUE_POLICY") == 0)
		s->queue_policy = value;
}

/* Defaults, then the trainer container's env (entries with a value), then
 * the TrainJob's env (a value-less entry counts as "", as upstream reads
 * EnvVar.Value). */
static flux_settings settings_of(const kft_runtime_info *info, const kft_trainjob *job)
{
	flux_settings s = {FLUX_INSTALLER_IMAGE, FLUX_NETWORK_DEVICE, FLUX_QUEUE_POLICY};
	kft_container *c = trainer_container(info);
	size_t i;
	const json_t *e;
	json_array_foreach(c ? c->env : NULL, i, e)
	{
		take_setting(&s, json_string_value(json_object_get(e, "name")),
		             json_string_value(json_object_get(e, "value")));
	}
	json_array_foreach(job->env, i, e)
	{
		const char *value = json_string_value(json_object_get(e, "value"));
		take_setting(&s, json_string_value(json_object_get(e, "name")), value ? value : "");
	}
	return s;
}

/* ---- EnforceMLPolicy -------------------------------------------------------------- */

/* Appends each word after a space (none before the very first), as Go's
 * strings.Join over command and args together. */
static void join_words(kft_strbuf *b, const json_t *words, size_t *count)
{
	size_t i;
	const json_t *w;
	json_array_foreach(words, i, w)
	{
		if ((*count)++ > 0)
			kft_strbuf_putc(b, ' ');
		kft_strbuf_puts(b, json_string_value(w) ? json_string_value(w) : "");
	}
}

/* The command to wrap: the TrainJob's command (else the template's) and
 * the TrainJob's args, joined by spaces and trimmed. Caller frees. */
static char *original_command(const kft_runtime_info *info, const kft_trainjob *job)
{
	kft_container *c = trainer_container(info);
	const json_t *command = job->command ? job->command : (c ? c->command : NULL);
	kft_strbuf b;
	size_t count = 0;
	kft_strbuf_init(&b);
	join_words(&b, command, &count);
	join_words(&b, job->args, &count);
	char *s = kft_strbuf_detach(&b);
	if (!s)
		return NULL;
	size_t start = 0, end = strlen(s);
	while (start < end && isspace((unsigned char)s[start]))
		start++;
	while (end > start && isspace((unsigned char)s[end - 1]))
		end--;
	memmove(s, s + start, end - start);
	s[end - start] = '\0';
	return s;
}

static json_t *mount_json(const char *name, const char *path, int read_only)
{
	if (read_only)
		return json_pack("{s:s, s:s, s:b}", "name", name, "mountPath", path, "readOnly", 1);
	return json_pack("{s:s, s:s}", "name", name, "mountPath", path);
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

/* In upstream's order: the view volumes, then the certificate. */
static int add_volumes(kft_pod_set *ps, const char *configmap, const char *secret)
{
	json_t *v[5] = {
	        json_pack("{s:s, s:{}}", "name", FLUX_SPACK_VOLUME, "emptyDir"),
	        json_pack("{s:s, s:{}}", "name", FLUX_INSTALL_VOLUME, "emptyDir"),
	        json_pack("{s:s, s:{s:s, s:i}}", "name", configmap, "configMap", "name", configmap,
	                  "defaultMode", FLUX_CONFIG_MODE),
	        json_pack("{s:s, s:{s:s}}", "name", FLUX_MEMORY_VOLUME, "emptyDir", "medium",
	                  "Memory"),
	        json_pack("{s:s, s:{s:s, s:i}}", "name", FLUX_CURVE_VOLUME, "secret", "secretName",
	                  secret, "defaultMode", FLUX_CURVE_MODE),
	};
	int rc = 0;
	for (size_t i = 0; i < 5; i++)
		if (upsert_new(ps->volumes, "name", v[i]) != 0)
			rc = KFT_ENOMEM;
	return rc;
}

static int add_node_mounts(kft_container *c, const char *configmap)
{
	json_t *m[5] = {
	        mount_json(FLUX_INSTALL_VOLUME, FLUX_INSTALL_PATH, 0),
	        mount_json(FLUX_SPACK_VOLUME, FLUX_SPACK_PATH, 0),
	        mount_json(configmap, FLUX_CONFIG_PATH, 1),
	        mount_json(FLUX_CURVE_VOLUME, FLUX_CURVE_PATH, 1),
	        mount_json(FLUX_MEMORY_VOLUME, FLUX_MEMORY_PATH, 1),
	};
	int rc = 0;
	for (size_t i = 0; i < 5; i++)
		if (upsert_new(c->volume_mounts, "mountPath", m[i]) != 0)
			rc = KFT_ENOMEM;
	return rc;
}

/* Appends the flux-installer init container to ps. */
static int add_installer(kft_pod_set *ps, const char *image, const char *configmap)
{
	kft_container c = {
	        .name = strdup(FLUX_INSTALLER_CONTAINER),
	        .image = strdup(image),
	        .command = json_pack("[s, s]", "/bin/bash", FLUX_CONFIG_PATH "/init.sh"),
	        .env = json_array(),
	        .ports = json_array(),
	        .volume_mounts =
	                json_pack("[o, o]", mount_json(FLUX_INSTALL_VOLUME, FLUX_INSTALL_PATH, 0),
	                          mount_json(configmap, FLUX_CONFIG_PATH, 1)),
	};
	kft_container *grown = NULL;
	if (c.name && c.image && c.command && c.env && c.ports && c.volume_mounts)
		grown = realloc(ps->init_containers,
		                (ps->n_init_containers + 1) * sizeof(*ps->init_containers));
	if (!grown) {
		free(c.name);
		free(c.image);
		json_decref(c.command);
		json_decref(c.env);
		json_decref(c.ports);
		json_decref(c.volume_mounts);
		return KFT_ENOMEM;
	}
	ps->init_containers = grown;
	ps->init_containers[ps->n_init_containers++] = c;
	return 0;
}

/* The trainer container runs entrypoint.sh with the original command. */
static int wrap_command(kft_runtime_info *info, const kft_trainjob *job)
{
	kft_container *c = trainer_container(info);
	if (!c)
		return 0;
	char *original = original_command(info, job);
	json_t *command = original ? json_pack("[s, s, s]", "/bin/bash",
	                                       FLUX_CONFIG_PATH "/entrypoint.sh", original)
	                           : NULL;
	free(original);
	if (!command)
		return KFT_ENOMEM;
	json_decref(c->command);
	c->command = command;
	return 0;
}

static int flux_enforce_ml_policy(const kft_plugin_ctx *ctx, kft_runtime_info *info,
                                  const kft_trainjob *job, kft_error *err)
{
	if (!flux_source(info))
		return 0;
	char configmap[NAME_MAX_LEN], secret[NAME_MAX_LEN];
	int rc = object_name(configmap, job->name, FLUX_ENTRYPOINT_SUFFIX, err);
	if (rc == 0)
		rc = object_name(secret, job->name, FLUX_CURVE_SUFFIX, err);
	if (rc != 0)
		return rc;
	flux_settings s = settings_of(info, job);
	/* settings_of borrows from the trainer container's env, which the
	 * steps below do not change. */
	rc = wrap_command(info, job);
	for (size_t i = 0; rc == 0 && i < info->n_pod_sets; i++) {
		kft_pod_set *ps = &info->pod_sets[i];
		if (strcmp(ps->name, KFT_CONTAINER_NODE) != 0)
			continue;
		rc = add_volumes(ps, configmap, secret);
		if (rc == 0)
			rc = add_installer(ps, s.view_image, configmap);
		for (size_t j = 0; rc == 0 && j < ps->n_containers; j++)
			if (strcmp(ps->containers[j].name, KFT_CONTAINER_NODE) == 0)
				rc = add_node_mounts(&ps->containers[j], configmap);
	}
	return rc == 0 ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* ---- hosts -------------------------------------------------------------------- */

/* The brokers' hostnames (first DNS label of each endpoint) and, when every
 * endpoint is "<host>.<domain>" with one shared domain, that domain. */
typedef struct flux_hosts {
	char **names;
	size_t n;
	const char *domain; /* borrowed from an endpoint, or NULL */
	const kft_pod_set *ps;
} flux_hosts;

static void hosts_free(flux_hosts *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->names[i]);
	free(h->names);
}

static int is_ip(const char *s)
{
	unsigned char buf[16];
	return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static int hosts_of(const kft_runtime_info *info, flux_hosts *h, kft_error *err)
{
	memset(h, 0, sizeof(*h));
	h->ps = kft_runtime_info_find_pod_set(info, KFT_CONTAINER_NODE);
	if (!h->ps || h->ps->n_endpoints == 0)
		return kft_error_set(err, KFT_EINVAL,
		                     "Flux needs the endpoints of the runtime's \"node\" job");
	h->names = calloc(h->ps->n_endpoints, sizeof(char *));
	if (!h->names)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	int shared = 1;
	for (size_t i = 0; i < h->ps->n_endpoints; i++) {
		const char *ep = h->ps->endpoints[i];
		const char *dot = is_ip(ep) ? NULL : strchr(ep, '.');
		h->names[i] = dot ? strndup(ep, (size_t)(dot - ep)) : strdup(ep);
		if (!h->names[i]) {
			hosts_free(h);
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		}
		h->n++;
		if (!dot || dot[1] == '\0' || (h->domain && strcmp(h->domain, dot + 1) != 0))
			shared = 0;
		else if (!h->domain)
			h->domain = dot + 1;
	}
	if (!shared)
		h->domain = NULL;
	return 0;
}

/* "5" for one, "start-end" for more (upstream's generateRange). */
static void put_range(kft_strbuf *b, long long start, long long size)
{
	if (size <= 1)
		kft_strbuf_printf(b, "%lld", start);
	else
		kft_strbuf_printf(b, "%lld-%lld", start, start + size - 1);
}

/* Length of the prefix of name before its numeric suffix; the whole length
 * when there is no suffix, it has a leading zero, or name is an address. */
static size_t prefix_len(const char *name, long long *number)
{
	size_t n = strlen(name), p = n;
	if (is_ip(name))
		return n;
	while (p > 0 && isdigit((unsigned char)name[p - 1]))
		p--;
	if (p == n || n - p > 15 || (name[p] == '0' && n - p > 1))
		return n;
	*number = strtoll(name + p, NULL, 10);
	return p;
}

/* Flux's compressed host list: runs of one prefix with numeric suffixes
 * become "prefix[0-3,5]", as upstream writes "<job>-node-0-[0-N]". */
static void put_hostlist(kft_strbuf *b, char *const *names, size_t n)
{
	size_t i = 0;
	while (i < n) {
		long long first = 0;
		size_t p = prefix_len(names[i], &first);
		if (i > 0)
			kft_strbuf_putc(b, ',');
		if (p == strlen(names[i])) {
			kft_strbuf_puts(b, names[i++]);
			continue;
		}
		kft_strbuf_putn(b, names[i], p);
		kft_strbuf_putc(b, '[');
		long long start = first, size = 1;
		for (i++; i < n; i++) {
			long long num = 0;
			if (prefix_len(names[i], &num) != p ||
			    strncmp(names[i], names[i - 1], p) != 0)
				break;
			if (num == start + size) {
				size++;
				continue;
			}
			put_range(b, start, size);
			kft_strbuf_putc(b, ',');
			start = num;
			size = 1;
		}
		put_range(b, start, size);
		kft_strbuf_putc(b, ']');
	}
}

/* ---- broker.toml ------------------------------------------------------------------ */

/* A TOML basic string. */
static void put_toml_string(kft_strbuf *b, const char *s)
{
	kft_strbuf_putc(b, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			kft_strbuf_printf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			kft_strbuf_printf(b, "\\u%04x", c);
		else
			kft_strbuf_putc(b, (char)c);
	}
	kft_strbuf_putc(b, '"');
}

static void put_toml_kv(kft_strbuf *b, const char *key, const char *value)
{
	kft_strbuf_printf(b, "%s = ", key);
	put_toml_string(b, value);
	kft_strbuf_putc(b, '\n');
}

static void put_bootstrap(kft_strbuf *b, const flux_hosts *h, const flux_settings *s, int port)
{
	kft_strbuf uri;
	kft_strbuf_init(&uri);
	kft_strbuf_printf(b,
	                  "[bootstrap]\ncurve_cert = \"" FLUX_INSTALL_PATH
	                  "/config/etc/curve/curve.cert\"\ndefault_port = %d\n",
	                  port);
	kft_strbuf_printf(&uri, "tcp://%s:%%p", s->network_device);
	put_toml_kv(b, "default_bind", kft_strbuf_str(&uri));
	kft_strbuf_reset(&uri);
	kft_strbuf_printf(&uri, "tcp://%%h%s%s:%%p", h->domain ? "." : "",
	                  h->domain ? h->domain : "");
	put_toml_kv(b, "default_connect", kft_strbuf_str(&uri));
	kft_strbuf_puts(b, "hosts = [\n");
	if (h->domain) {
		kft_strbuf hl;
		kft_strbuf_init(&hl);
		put_hostlist(&hl, h->names, h->n);
		kft_strbuf_puts(b, "  { host = ");
		put_toml_string(b, kft_strbuf_str(&hl));
		kft_strbuf_puts(b, " },\n");
		b->failed |= hl.failed;
		kft_strbuf_free(&hl);
	}
	for (size_t i = 0; !h->domain && i < h->n; i++) {
		kft_strbuf_reset(&uri);
		kft_strbuf_printf(&uri, "tcp://%s:%%p", h->ps->endpoints[i]);
		kft_strbuf_puts(b, "  { host = ");
		put_toml_string(b, h->names[i]);
		kft_strbuf_puts(b, ", connect = ");
		put_toml_string(b, kft_strbuf_str(&uri));
		kft_strbuf_puts(b, " },\n");
	}
	kft_strbuf_puts(b, "]\n\n");
	b->failed |= uri.failed;
	kft_strbuf_free(&uri);
}

static char *broker_toml(const kft_trainjob *job, const flux_hosts *h, const flux_settings *s,
                         int port)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "# Flux broker configuration for TrainJob %s (kftrainer).\n",
	                  job->name);
	kft_strbuf_puts(&b, "[access]\nallow-guest-user = true\nallow-root-owner = true\n\n"
	                    "# The resource set entrypoint.sh writes with flux R encode.\n"
	                    "[resource]\npath = \"" FLUX_INSTALL_PATH
	                    "/config/etc/flux/system/R\"\n\n");
	put_bootstrap(&b, h, s, port);
	kft_strbuf_puts(&b, "[archive]\ndbpath = \"" FLUX_INSTALL_PATH
	                    "/config/var/lib/flux/job-archive.sqlite\"\nperiod = \"1m\"\n"
	                    "busytimeout = \"50s\"\n\n[sched-fluxion-qmanager]\n");
	put_toml_kv(&b, "queue-policy", s->queue_policy);
	return kft_strbuf_detach(&b);
}

/* ---- entrypoint.sh ------------------------------------------------------------------ */

/* A shell word in single quotes. */
static void put_shell_word(kft_strbuf *b, const char *s)
{
	kft_strbuf_putc(b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			kft_strbuf_puts(b, "'\\''");
		else
			kft_strbuf_putc(b, *s);
	}
	kft_strbuf_putc(b, '\'');
}

/* gpus: per node, the TrainJob's resourcesPerNode, else the template's
 * (kft_resources_gpus, upstream's GetNumGPUPerNode). */
static char *entrypoint_sh(const kft_runtime_info *info, const kft_trainjob *job,
                           const flux_hosts *h, int64_t gpus)
{
	const json_t *p = json_object_get(flux_source(info), "numProcPerNode");
	long long tasks = job->has_num_proc_per_node ? job->num_proc_per_node
	                  : json_is_integer(p)       ? (long long)json_integer_value(p)
	                                             : 1;
	long long nodes = (long long)h->n;
	kft_strbuf spec, flags, b;
	kft_strbuf_init(&spec);
	kft_strbuf_init(&flags);
	kft_strbuf_init(&b);
	kft_strbuf_puts(&spec, "--cores=");
	put_range(&spec, 0, tasks);
	kft_strbuf_printf(&flags, "-N %lld -n %lld", nodes, tasks * nodes);
	if (gpus > 0) {
		kft_strbuf_puts(&spec, " --gpu=");
		put_range(&spec, 0, gpus);
		kft_strbuf_printf(&flags, " -g %lld", (long long)gpus);
	}
	kft_strbuf_printf(&b, "#!/bin/bash\n# Flux entrypoint for TrainJob %s (kftrainer).\n",
	                  job->name);
	kft_strbuf_puts(&b, "main_host=");
	put_shell_word(&b, h->names[0]);
	kft_strbuf_puts(&b, "\nresource_spec=");
	put_shell_word(&b, kft_strbuf_str(&spec));
	kft_strbuf_puts(&b, "\nrun_flags=");
	put_shell_word(&b, kft_strbuf_str(&flags));
	kft_strbuf_puts(&b, "\n\n" FLUX_ENTRYPOINT_BODY);
	b.failed |= spec.failed | flags.failed;
	kft_strbuf_free(&spec);
	kft_strbuf_free(&flags);
	return kft_strbuf_detach(&b);
}

/* ---- objects -------------------------------------------------------------------- */

static json_t *core_object(const kft_plugin_ctx *ctx, const kft_trainjob *job, const char *kind,
                           const char *name, json_t *data)
{
	json_t *owners = json_pack("[o]", kft_owner_reference(ctx, job));
	if (!owners || !data) {
		json_decref(owners);
		json_decref(data);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:o}", "apiVersion", "v1", "kind", kind,
	                 "metadata", "name", name, "namespace", job->ns ? job->ns : "default",
	                 "ownerReferences", owners, "data", data);
}

static int flux_configmap(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                          const kft_trainjob *job, const char *name, json_t **out, kft_error *err)
{
	flux_hosts h;
	int64_t gpus = 0;
	int rc = kft_resources_gpus(kft_runtime_info_node_resources(info, job), &gpus, err);
	if (rc == 0)
		rc = hosts_of(info, &h, err);
	if (rc != 0)
		return rc;
	flux_settings s = settings_of(info, job);
	const kft_backend *be = ctx->backend;
	int port = be->service_port
	                   ? be->service_port(be->self, job->name, FLUX_SERVICE, FLUX_DEFAULT_PORT)
	                   : FLUX_DEFAULT_PORT;
	kft_strbuf hl;
	kft_strbuf_init(&hl);
	put_hostlist(&hl, h.names, h.n);
	kft_strbuf_putc(&hl, '\n');
	char *hostlist = kft_strbuf_detach(&hl);
	char *toml = broker_toml(job, &h, &s, port);
	char *entry = entrypoint_sh(info, job, &h, gpus);
	hosts_free(&h);
	json_t *data =
	        (hostlist && toml && entry)
	                ? json_pack("{s:s, s:s, s:s, s:s}", "entrypoint.sh", entry, "init.sh",
	                            FLUX_INIT_SH, "broker.toml", toml, "hostlist", hostlist)
	                : NULL;
	free(hostlist);
	free(toml);
	free(entry);
	*out = core_object(ctx, job, "ConfigMap", name, data);
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

/* ---- the CURVE certificate ---------------------------------------------------------- */

/* Z85 (ZeroMQ RFC 32): each 4 bytes, big-endian, as 5 base-85 digits.
 * len must be a multiple of 4; out gets len * 5 / 4 characters and a NUL. */
static void z85_encode(const unsigned char *data, size_t len, char *out)
{
	static const char digits[] =
	        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	        ".-:+=^!/*?&<>()[]{}@%$#";
	for (size_t i = 0; i + 4 <= len; i += 4) {
		uint32_t v = (uint32_t)data[i] << 24 | (uint32_t)data[i + 1] << 16 |
		             (uint32_t)data[i + 2] << 8 | (uint32_t)data[i + 3];
		for (int k = 4; k >= 0; k--) {
			out[k] = digits[v % 85];
			v /= 85;
		}
		out += 5;
	}
	*out = '\0';
}

/* A fresh X25519 key pair, both halves Z85-encoded (40 characters). */
static int curve_keys(char public_z85[41], char secret_z85[41], kft_error *err)
{
	unsigned char pub[32], sec[32];
	mbedtls_ecp_group grp;
	mbedtls_mpi d;
	mbedtls_ecp_point q;
	mbedtls_ecp_group_init(&grp);
	mbedtls_mpi_init(&d);
	mbedtls_ecp_point_init(&q);
	/* X25519: d is the clamped scalar, Q.X the u-coordinate; both are
	 * little-endian 32-byte strings on the wire (RFC 7748). */
	int rc = mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_CURVE25519);
	rc = rc ? rc : mbedtls_ecp_gen_keypair(&grp, &d, &q, kft_random_bytes, NULL);
	rc = rc ? rc : mbedtls_mpi_write_binary_le(&d, sec, sizeof(sec));
	rc = rc ? rc : mbedtls_mpi_write_binary_le(&q.X, pub, sizeof(pub));
	mbedtls_mpi_free(&d); /* zeroizes */
	mbedtls_ecp_point_free(&q);
	mbedtls_ecp_group_free(&grp);
	if (rc != 0) {
		kft_secret_wipe(sec, sizeof(sec));
		return kft_error_set(err, KFT_EIO, "generating the Flux CURVE key failed");
	}
	z85_encode(pub, 32, public_z85);
	z85_encode(sec, 32, secret_z85);
	kft_secret_wipe(sec, sizeof(sec));
	return 0;
}

/* The certificate in ZeroMQ's ZPL format, as `flux keygen` writes it.
 * Caller wipes and frees. */
static char *curve_cert(const kft_trainjob *job, kft_error *err)
{
	char pub[41], sec[41];
	if (curve_keys(pub, sec, err) != 0)
		return NULL;
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b,
	                  "#   ZeroMQ CURVE **Secret** Certificate\n"
	                  "#   for the Flux brokers of TrainJob %s (generated by kftrainer).\n"
	                  "#   Keep it readable by its owner only.\n\n"
	                  "metadata\n    name = \"%s\"\ncurve\n    public-key = \"%s\"\n"
	                  "    secret-key = \"%s\"\n",
	                  job->name, job->name, pub, sec);
	kft_secret_wipe(sec, sizeof(sec));
	char *s = kft_strbuf_detach(&b);
	if (!s)
		kft_error_set(err, KFT_ENOMEM, "out of memory");
	return s;
}

static int curve_secret(const kft_plugin_ctx *ctx, const kft_trainjob *job, const char *name,
                        json_t **out, kft_error *err)
{
	char *cert = curve_cert(job, err);
	if (!cert)
		return err ? err->code : KFT_EIO;
	size_t n = strlen(cert);
	char *b64 = kft_base64_encode(cert, n);
	json_t *data = NULL;
	if (b64) {
		data = json_pack("{s:s}", FLUX_CURVE_KEY, b64);
		kft_secret_wipe(b64, strlen(b64));
	}
	kft_secret_wipe(cert, n);
	free(cert);
	free(b64);
	*out = core_object(ctx, job, "Secret", name, data);
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}

static int append_new(json_t *objects, json_t *obj, kft_error *err)
{
	if (json_array_append_new(objects, obj) != 0)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	return 0;
}

static int flux_component_builder(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                                  const kft_trainjob *job, json_t *objects, kft_error *err)
{
	if (!flux_source(info))
		return 0;
	char configmap[NAME_MAX_LEN], secret[NAME_MAX_LEN];
	int rc = object_name(configmap, job->name, FLUX_ENTRYPOINT_SUFFIX, err);
	if (rc == 0)
		rc = object_name(secret, job->name, FLUX_CURVE_SUFFIX, err);
	json_t *obj = NULL;
	if (rc == 0)
		rc = flux_configmap(ctx, info, job, configmap, &obj, err);
	if (rc == 0)
		rc = append_new(objects, obj, err);
	if (rc != 0)
		return rc;
	/* One certificate for the life of the job: running brokers hold it. */
	if (kft_child_exists(ctx, job, "v1", "Secret", secret))
		return 0;
	rc = curve_secret(ctx, job, secret, &obj, err);
	return rc == 0 ? append_new(objects, obj, err) : rc;
}

/* ---- CustomValidation ---------------------------------------------------------------- */

static void flux_custom_validation(const kft_plugin_ctx *ctx, const kft_runtime_info *info,
                                   const json_t *old_job, const json_t *new_job,
                                   kft_field_errors *errs)
{
	const json_t *src = flux_source(info);
	if (!src)
		return;
	const json_t *procs = json_object_get(src, "numProcPerNode");
	const json_t *trainer = json_object_get(json_object_get(new_job, "spec"), "trainer");
	const json_t *job_procs = json_object_get(trainer, "numProcPerNode");
	if (json_is_integer(job_procs))
		procs = job_procs;
	if (json_is_integer(procs) && json_integer_value(procs) < 1)
		kft_field_errors_add(errs, KFT_FIELD_INVALID, "spec.trainer.numProcPerNode", procs,
		                     "must be greater than or equal to 1 for Flux TrainJob");
	for (size_t i = 0; i < info->n_pod_sets; i++) {
		const kft_pod_set *ps = &info->pod_sets[i];
		if (strcmp(ps->name, KFT_CONTAINER_NODE) != 0)
			continue;
		for (size_t j = 0; j < ps->n_init_containers; j++) {
			const char *name = ps->init_containers[j].name;
			if (!name || strcmp(name, FLUX_INSTALLER_CONTAINER) != 0)
				continue;
			json_t *v = json_string(name);
			kft_field_errors_add(errs, KFT_FIELD_INVALID, "spec.trainer.initContainers",
			                     v, "InitContainer 'flux-installer' is reserved");
			json_decref(v);
		}
	}
}

static const char *const flux_watch_kinds[] = {"v1/ConfigMap", "v1/Secret", NULL};

const kft_plugin kft_plugin_flux = {
        .abi_version = KFT_PLUGIN_ABI_VERSION,
        .name = "Flux",
        .watch_kinds = flux_watch_kinds,
        .custom_validation = flux_custom_validation,
        .enforce_ml_policy = flux_enforce_ml_policy,
        .component_builder = flux_component_builder,
};
