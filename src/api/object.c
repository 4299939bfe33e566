/*
 * object.c - whole-object checks. See kftrainer/object.h.
 *
 * Kinds outside our group are sorted into "a Kubernetes kind we know of"
 * (skipped: validating Deployments or CRDs is the API server's business, and
 * manifests/ mixes them with ours) and "unknown" (an error, as kubectl's
 * "no matches for kind" is).
 */
#include "kftrainer/object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/admission.h"
#include "kftrainer/corev1.h"
#include "kftrainer/objectmeta.h"
#include "util/strbuf.h"

/* API groups of Kubernetes itself and of the projects our objects work with
 * (JobSet, the PodGroup schedulers, Kueue). */
static const char *const known_groups[] = {
        "",
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "admissionregistration.k8s.io",
        "coordination.k8s.io",
        "policy",
        "networking.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "autoscaling",
        "certificates.k8s.io",
        "monitoring.coreos.com",
        "jobset.x-k8s.io",
        "scheduling.x-k8s.io",
        "scheduling.volcano.sh",
        "kueue.x-k8s.io",
        "cert-manager.io",
        /* the controller manager's Configuration file: read by the
         * controller (src/controller/config.c), never sent to a server */
        "config.trainer.kubeflow.org",
};

static const char OUR_GROUP[] = "trainer.kubeflow.org";

/* ObjectMeta's fields; anything else under metadata is an unknown field to
 * strict decoding. */
static const char *const object_meta_fields[] = {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
};

static void check_meta_fields(const json_t *meta, kft_field_errors *errs)
{
	const char *key;
	const json_t *x;
	json_object_foreach((json_t *)meta, key, x)
	{
		size_t i, n = sizeof(object_meta_fields) / sizeof(object_meta_fields[0]);
		for (i = 0; i < n && strcmp(object_meta_fields[i], key) != 0; i++)
			;
		if (i == n) {
			char path[300];
			snprintf(path, sizeof(path), "metadata.%.256s", key);
			kft_field_errors_add(errs, KFT_FIELD_UNKNOWN, path, NULL, NULL);
		}
	}
}

static int group_of(const char *api_version, char *buf, size_t size)
{
	const char *slash = strchr(api_version, '/');
	size_t n = slash ? (size_t)(slash - api_version) : 0;
	if (n >= size)
		return -1;
	memcpy(buf, api_version, n);
	buf[n] = '\0';
	return 0;
}

static int is_known_group(const char *group)
{
	for (size_t i = 0; i < sizeof(known_groups) / sizeof(known_groups[0]); i++)
		if (strcmp(known_groups[i], group) == 0)
			return 1;
	return 0;
}

static kft_object_class classify(const kft_schema *schema, const json_t *obj,
                                 kft_field_errors *errs, const kft_kind_info **kind_out)
{
	const json_t *av = json_object_get(obj, "apiVersion");
	const json_t *k = json_object_get(obj, "kind");
	int bad = 0;
	if (!json_is_string(av) || json_string_length(av) == 0) {
		kft_field_errors_add(errs, KFT_FIELD_REQUIRED, "apiVersion", NULL,
		                     "apiVersion not set");
		bad = 1;
	}
	if (!json_is_string(k) || json_string_length(k) == 0) {
		kft_field_errors_add(errs, KFT_FIELD_REQUIRED, "kind", NULL, "kind not set");
		bad = 1;
	}
	if (bad)
		return KFT_OBJECT_UNKNOWN;
	const char *api_version = json_string_value(av), *kind = json_string_value(k);
	*kind_out = kft_schema_find_kind(schema, api_version, kind);
	if (*kind_out)
		return KFT_OBJECT_OURS;
	char group[256];
	if (group_of(api_version, group, sizeof(group)) == 0 && strcmp(group, OUR_GROUP) != 0 &&
	    is_known_group(group))
		return KFT_OBJECT_EXTERNAL;
	kft_field_errors_add(errs, KFT_FIELD_INVALID, "kind", k,
	                     "no matches for kind \"%s\" in version \"%s\"", kind, api_version);
	return KFT_OBJECT_UNKNOWN;
}

/* What the API server does to metadata before validating a create: the
 * namespace comes from kubectl's context when absent and is cleared on
 * cluster-scoped kinds, and a generateName becomes a name (here, for the
 * checks only, the prefix plus a placeholder suffix of generated length). */
static json_t *metadata_as_created(const kft_kind_info *kind, json_t *obj)
{
	json_t *meta = json_object_get(obj, "metadata");
	if (!json_is_object(meta))
		return json_incref(meta);
	if (kind->namespaced && !json_object_get(meta, "namespace"))
		json_object_set_new(meta, "namespace", json_string("default"));
	if (!kind->namespaced)
		json_object_del(meta, "namespace");
	const char *gen = json_string_value(json_object_get(meta, "generateName"));
	if (json_object_get(meta, "name") || !gen || !*gen)
		return json_incref(meta);
	json_t *copy = json_copy(meta);
	char name[320];
	snprintf(name, sizeof(name), "%.250sxxxxx", gen);
	json_object_set_new(copy, "name", json_string(name));
	return copy;
}

static const char NOT_ALL_RULES_CHECKED[] =
        "some validation rules were not checked because the object was invalid; correct the "
        "existing errors to complete validation";

kft_object_class kft_object_check(const kft_schema *schema, json_t *obj, const json_t *old_obj,
                                  kft_field_errors *errs, const kft_kind_info **kind_out)
{
	const kft_kind_info *kind = NULL;
	if (kind_out)
		*kind_out = NULL;
	if (!json_is_object(obj)) {
		kft_field_errors_add(errs, KFT_FIELD_INVALID, "<nil>", obj,
		                     "an object must be a mapping with apiVersion and kind");
		return KFT_OBJECT_UNKNOWN;
	}
	kft_object_class cls = classify(schema, obj, errs, &kind);
	if (cls == KFT_OBJECT_EXTERNAL)
		kft_corev1_check(obj, errs);
	if (cls != KFT_OBJECT_OURS)
		return cls;
	if (kind_out)
		*kind_out = kind;
	/* Strict decoding rejects unknown fields before anything is validated. */
	size_t before = errs->count;
	check_meta_fields(json_object_get(obj, "metadata"), errs);
	if (kft_schema_check_unknown(schema, kind, obj, errs) || errs->count > before)
		return cls;
	kft_schema_default(schema, kind, obj);
	json_t *meta = metadata_as_created(kind, obj);
	kft_validate_object_meta(meta, kind->namespaced, "metadata", errs);
	if (old_obj)
		kft_validate_object_meta_update(meta, json_object_get(old_obj, "metadata"),
		                                "metadata", errs);
	json_decref(meta);
	kft_schema_validate(schema, kind, obj, old_obj, errs);
	if (kft_field_errors_blocking(errs))
		kft_field_errors_add(errs, KFT_FIELD_INVALID, "<nil>", json_null(), "%s",
		                     NOT_ALL_RULES_CHECKED);
	else
		kft_schema_validate_rules(schema, kind, obj, old_obj, errs);
	/* Upstream's webhooks see only objects the API server accepted. */
	if (errs->count == before)
		kft_admission_check(kind, obj, old_obj, errs);
	return cls;
}

json_t *kft_object_list_items(const json_t *doc)
{
	const char *kind = json_string_value(json_object_get(doc, "kind"));
	json_t *items = json_object_get(doc, "items");
	size_t n = kind ? strlen(kind) : 0;
	if (n >= 4 && strcmp(kind + n - 4, "List") == 0 && json_is_array(items))
		return items;
	return NULL;
}

char *kft_object_ref(const json_t *obj, int namespaced)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	if (!name)
		name = json_string_value(json_object_get(meta, "generateName"));
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_puts(&b, kind && *kind ? kind : "<unknown>");
	if (namespaced)
		kft_strbuf_printf(&b, "/%s", ns && *ns ? ns : "default");
	kft_strbuf_printf(&b, "/%s", name && *name ? name : "<unnamed>");
	return kft_strbuf_detach(&b);
}
