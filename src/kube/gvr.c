/*
 * gvr.c - the kinds kftrainer touches and the REST paths that serve them.
 *
 * A fixed table rather than API discovery: the controller only ever asks for
 * these kinds, and their plural names and scopes do not change within an API
 * version. Anything else is unknown (NULL), which callers report.
 */
#include "kube/kube_internal.h"

#include <stdio.h>
#include <string.h>

#include "util/strbuf.h"

static const kft_gvr gvrs[] = {
        {"trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", 1},
        {"trainer.kubeflow.org", "v1alpha1", "trainingruntimes", "TrainingRuntime", 1},
        {"trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", "ClusterTrainingRuntime",
         0},
        {"trainer.kubeflow.org", "v1alpha1", "optimizationjobs", "OptimizationJob", 1},
        {"jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", 1},
        {"", "v1", "secrets", "Secret", 1},
        {"", "v1", "configmaps", "ConfigMap", 1},
        {"", "v1", "pods", "Pod", 1},
        {"", "v1", "namespaces", "Namespace", 0},
        {"", "v1", "events", "Event", 1},
        {"", "v1", "limitranges", "LimitRange", 1},
        {"", "v1", "services", "Service", 1},
        {"", "v1", "serviceaccounts", "ServiceAccount", 1},
        {"coordination.k8s.io", "v1", "leases", "Lease", 1},
        {"events.k8s.io", "v1", "events", "Event", 1},
        {"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", 1},
        {"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", 1},
        {"node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", 0},
        {"batch", "v1", "jobs", "Job", 1},
};

const kft_gvr *kft_gvr_lookup(const char *api_version, const char *kind)
{
	if (!api_version || !kind)
		return NULL;
	const char *slash = strchr(api_version, '/');
	size_t glen = slash ? (size_t)(slash - api_version) : 0;
	const char *version = slash ? slash + 1 : api_version;
	for (size_t i = 0; i < sizeof(gvrs) / sizeof(gvrs[0]); i++) {
		const kft_gvr *g = &gvrs[i];
		if (strlen(g->group) == glen && strncmp(g->group, api_version, glen) == 0 &&
		    strcmp(g->version, version) == 0 && strcmp(g->kind, kind) == 0)
			return g;
	}
	return NULL;
}

const kft_gvr *kft_gvr_of(const json_t *obj)
{
	return kft_gvr_lookup(json_string_value(json_object_get(obj, "apiVersion")),
	                      json_string_value(json_object_get(obj, "kind")));
}

const char *kft_gvr_api_version(const kft_gvr *gvr, char *buf, size_t n)
{
	if (gvr->group[0])
		snprintf(buf, n, "%s/%s", gvr->group, gvr->version);
	else
		snprintf(buf, n, "%s", gvr->version);
	return buf;
}

void kft_kube_set_type(json_t *obj, const kft_gvr *gvr)
{
	char av[256];
	if (!json_is_object(obj))
		return;
	/* A metadata-only answer's objects are the kind's, without their body. */
	const char *k = json_string_value(json_object_get(obj, "kind"));
	const char *a = json_string_value(json_object_get(obj, "apiVersion"));
	if (k && a && strcmp(k, "PartialObjectMetadata") == 0 && strcmp(a, "meta.k8s.io/v1") == 0) {
		json_object_del(obj, "apiVersion");
		json_object_del(obj, "kind");
	}
	if (!json_string_value(json_object_get(obj, "apiVersion")))
		json_object_set_new(obj, "apiVersion",
		                    json_string(kft_gvr_api_version(gvr, av, sizeof(av))));
	if (!json_string_value(json_object_get(obj, "kind")))
		json_object_set_new(obj, "kind", json_string(gvr->kind));
}

/* A path segment the server would read as written: not empty, not a dot
 * segment, no '/'. Other bytes are percent-encoded by the caller. */
static int bad_segment(const char *s)
{
	return !*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strchr(s, '/') != NULL;
}

static void put_escaped(kft_strbuf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p)) {
			kft_strbuf_putc(b, (char)*p);
		} else {
			kft_strbuf_putc(b, '%');
			kft_strbuf_putc(b, hex[*p >> 4]);
			kft_strbuf_putc(b, hex[*p & 15]);
		}
	}
}

char *kft_kube_path(const kft_gvr *gvr, const char *ns, const char *name, const char *sub,
                    kft_error *err)
{
	if (gvr->namespaced && ns && *ns && bad_segment(ns)) {
		kft_error_set(err, KFT_EINVAL, "invalid namespace \"%s\"", ns);
		return NULL;
	}
	if (name && bad_segment(name)) {
		kft_error_set(err, KFT_EINVAL, "invalid %s name \"%s\"", gvr->kind, name);
		return NULL;
	}
	kft_strbuf b;
	kft_strbuf_init(&b);
	if (gvr->group[0])
		kft_strbuf_printf(&b, "/apis/%s/%s", gvr->group, gvr->version);
	else
		kft_strbuf_printf(&b, "/api/%s", gvr->version);
	if (gvr->namespaced && ns && *ns) {
		kft_strbuf_puts(&b, "/namespaces/");
		put_escaped(&b, ns);
	}
	kft_strbuf_printf(&b, "/%s", gvr->resource);
	if (name) {
		kft_strbuf_putc(&b, '/');
		put_escaped(&b, name);
	}
	if (sub)
		kft_strbuf_printf(&b, "/%s", sub);
	char *s = kft_strbuf_detach(&b);
	if (!s)
		kft_error_set(err, KFT_ENOMEM, "out of memory");
	return s;
}

void kft_kube_query(kft_strbuf *b, const char *key, const char *value)
{
	kft_strbuf_putc(b, strchr(kft_strbuf_str(b), '?') ? '&' : '?');
	kft_strbuf_puts(b, key);
	kft_strbuf_putc(b, '=');
	put_escaped(b, value);
}
