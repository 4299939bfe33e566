/*
 * objectmeta.h - Kubernetes name rules and object-metadata validation, with
 * the API server's own messages.
 *
 * Two layers. The kft_is_* predicates answer "is this string a DNS label, a
 * label key, a label value ..." and, when it is not, explain why with the
 * exact sentences k8s.io/apimachinery (v0.36.2) produces, one string per
 * problem, e.g. for "My_Name" as a DNS-1123 label:
 *
 *     a lowercase RFC 1123 label must consist of lower case alphanumeric
 *     characters or '-', and must start and end with an alphanumeric character
 *     (e.g. 'my-name',  or '123-abc', regex used for validation is
 *     '[a-z0-9]([-a-z0-9]*[a-z0-9])?')
 *
 * (the doubled space after "'my-name'," is the API server's, kept on purpose).
 *
 * The kft_validate_* functions walk a decoded `metadata` object and append
 * field errors (validation.h) the way the API server reports them for a
 * custom resource, so users see the same lines from us as from kubectl:
 *
 *     metadata.name: Invalid value: "My_Name": a lowercase RFC 1123 subdomain ...
 *
 * Untrusted input: every string is scanned once by length (embedded NULs and
 * non-ASCII bytes are simply invalid characters), nothing recurses, and a
 * value of the wrong JSON type is reported, never trusted.
 */
#ifndef KFTRAINER_OBJECTMETA_H
#define KFTRAINER_OBJECTMETA_H

#include <jansson.h>

#include "kftrainer/export.h"
#include "kftrainer/validation.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KFT_DNS1123_LABEL_MAX_LENGTH      63
#define KFT_DNS1123_SUBDOMAIN_MAX_LENGTH  253
#define KFT_DNS1035_LABEL_MAX_LENGTH      63
#define KFT_QUALIFIED_NAME_MAX_LENGTH     63 /* the part after the optional "prefix/" */
#define KFT_LABEL_VALUE_MAX_LENGTH        63
#define KFT_TOTAL_ANNOTATION_SIZE_LIMIT_B (256 * 1024) /* keys + values, in bytes */
#define KFT_FIELD_IMMUTABLE_MSG           "field is immutable"

/*
 * Name predicates. Each returns 1 when `s` is valid. Otherwise it returns 0
 * and, when `msgs` is a JSON array, appends one JSON string per problem found
 * (apimachinery's wording; a string may collect several). `msgs` may be NULL
 * to ask only yes/no. `s` is borrowed; NULL is treated as "". Nothing is
 * allocated except the appended strings, which `msgs` owns. Allocation
 * failure only loses messages, never changes the verdict.
 */
KFT_EXPORT int kft_is_dns1123_label(const char *s, json_t *msgs);     /* IsDNS1123Label */
KFT_EXPORT int kft_is_dns1123_subdomain(const char *s, json_t *msgs); /* IsDNS1123Subdomain */
KFT_EXPORT int kft_is_dns1035_label(const char *s, json_t *msgs);     /* IsDNS1035Label */
/* Label and annotation keys, finalizers: "[dns-subdomain/]name". */
KFT_EXPORT int kft_is_qualified_name(const char *s, json_t *msgs);
KFT_EXPORT int kft_is_valid_label_value(const char *s, json_t *msgs); /* "" is valid */
KFT_EXPORT int kft_is_env_var_name(const char *s, json_t *msgs); /* IsEnvVarName, the strict form */
/* IsRelaxedEnvVarName: what the API server checks in pods since Kubernetes
 * 1.34 (printable ASCII but '='); the rule for env names and envFrom prefixes. */
KFT_EXPORT int kft_is_relaxed_env_var_name(const char *s, json_t *msgs);
KFT_EXPORT int kft_is_config_map_key(const char *s, json_t *msgs); /* ConfigMap and Secret keys */

/*
 * What the API server checks in a custom resource's metadata on create
 * (ValidateObjectMetaAccessor with NameIsDNSSubdomain), in its order:
 * generateName (a DNS subdomain once a trailing '-' is masked), name (a DNS
 * subdomain; required even when generateName is set, because the server
 * generates the name before validating — do the same), namespace (required
 * and a DNS-1123 label when `namespaced`; "Forbidden: not allowed on this
 * type" when not), generation (not negative), labels, annotations,
 * ownerReferences (apiVersion has a version, kind/name/uid non-empty, no
 * Event owner, at most one controller) and finalizers (qualified names, not
 * both "orphan" and "foregroundDeletion").
 *
 * `metadata` is borrowed; NULL or JSON null count as an empty object, anything
 * else that is not an object is reported once at `path` and nothing more is
 * checked. A field of the wrong JSON type is reported as the schema validator
 * reports it ("<field> in body must be of type string: \"integer\""). `path`
 * is the field path of the metadata object, normally "metadata" (NULL means
 * "metadata"). Errors are appended to `errs` (the caller owns and frees the
 * list); on allocation failure errs->oom is set and the list may be short.
 * managedFields are not checked.
 */
KFT_EXPORT void kft_validate_object_meta(const json_t *metadata, int namespaced, const char *path,
                                         kft_field_errors *errs);

/*
 * The immutable part of ValidateObjectMetaUpdate: name, namespace, uid,
 * creationTimestamp, deletionTimestamp and deletionGracePeriodSeconds must be
 * unchanged from `old_metadata`, else "<path>.<field>: Invalid value: <new>:
 * field is immutable" (a missing string field counts as "", a missing
 * timestamp or number as null). Type errors are left to
 * kft_validate_object_meta, which the caller runs on the new object as well;
 * resourceVersion, generation and finalizer rules of an update are not
 * checked here. Both objects are borrowed; NULL/null count as empty. A
 * non-object `metadata` is reported at `path`; a non-object `old_metadata` is
 * reported as an internal error. Errors are appended to `errs`.
 */
KFT_EXPORT void kft_validate_object_meta_update(const json_t *metadata, const json_t *old_metadata,
                                                const char *path, kft_field_errors *errs);

/*
 * ValidateLabels: every key a qualified name (error value: the key), every
 * value a label value (error value: the value), both reported at `path`
 * itself (normally "metadata.labels"; NULL means that), in the object's key
 * order. NULL/null labels are fine; a non-object or a non-string value is a
 * type error, reported at "<path>[key]" for a value. `labels` is borrowed;
 * errors are appended to `errs`.
 */
KFT_EXPORT void kft_validate_labels(const json_t *labels, const char *path, kft_field_errors *errs);

/*
 * ValidateAnnotations: every key, lower-cased, a qualified name (error value:
 * the key as written), and all keys plus values together at most
 * KFT_TOTAL_ANNOTATION_SIZE_LIMIT_B bytes ("<path>: Too long: may not be more
 * than 262144 bytes"). `path` is normally "metadata.annotations" (NULL
 * means that). Same ownership and type rules as kft_validate_labels.
 */
KFT_EXPORT void kft_validate_annotations(const json_t *annotations, const char *path,
                                         kft_field_errors *errs);

#ifdef __cplusplus
}
#endif

#endif
