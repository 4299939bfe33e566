/*
 * schema.h - the trainer.kubeflow.org schema: one source of truth for the
 * validator, the defaulter and the generated CRDs.
 *
 * The schema lives as files under api/ (our kinds, and the structure of the
 * Kubernetes and JobSet types they embed, imported from Kubernetes' published
 * OpenAPI). The build compiles those files into the library; this module
 * parses them once and walks them to default and validate objects exactly as
 * the API server does with the CRDs generated from the same files:
 * structural typing, unknown fields (strict field validation), required,
 * enum, bounds, list-type uniqueness, exact quantities, and the CEL rules
 * (each rule text has a C implementation in src/api/cel_rules.c; a rule with
 * none is reported as an internal error and fails the unit tests).
 *
 * A definition may be referenced from another with `$ref: Name`; siblings of
 * `$ref` are laid over the referenced schema. Lookups walk those layers
 * instead of expanding them, so the parsed schema stays small.
 */
#ifndef KFTRAINER_SCHEMA_H
#define KFTRAINER_SCHEMA_H

#include <jansson.h>

#include "kftrainer/error.h"
#include "kftrainer/export.h"
#include "kftrainer/validation.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kft_schema kft_schema;

/* One served kind, as the CRD names it. All pointers are borrowed from the
 * schema and live as long as it does. */
typedef struct kft_kind_info {
	const char *group, *version, *kind, *list_kind, *plural, *singular;
	int namespaced;
	const char *definition; /* the root definition's name */
	const json_t *entry;    /* the whole kinds: entry (subresources, printer columns ...) */
} kft_kind_info;

/* The schema built into the library. Parsed on first use (thread-safe) and
 * kept for the life of the process: the result is borrowed, never freed, and
 * immutable. Returns NULL with err filled when the embedded files are broken
 * (a build defect, caught by the unit tests). */
KFT_EXPORT const kft_schema *kft_schema_builtin(kft_error *err);

/* Parses a schema from in-memory files (name, bytes). For tests and tools;
 * the caller frees the result with kft_schema_free. */
KFT_EXPORT int kft_schema_load(const char *const *names, const char *const *datas,
                               const size_t *lens, size_t nfiles, kft_schema **out, kft_error *err);
KFT_EXPORT void kft_schema_free(kft_schema *schema);

/* The kind served under apiVersion ("group/version") and kind, or NULL. */
KFT_EXPORT const kft_kind_info *kft_schema_find_kind(const kft_schema *schema,
                                                     const char *api_version, const char *kind);
KFT_EXPORT size_t kft_schema_kind_count(const kft_schema *schema);
KFT_EXPORT const kft_kind_info *kft_schema_kind_at(const kft_schema *schema, size_t i);
/* A definition by name (borrowed), or NULL. */
KFT_EXPORT const json_t *kft_schema_definition(const kft_schema *schema, const char *name);

/* Applies the schema's defaults to obj in place, as the API server does on
 * create: null values of non-nullable fields are dropped, then every absent
 * field with a default gets it, recursively. Never fails on odd input: parts
 * that do not match the schema's types are left for validation to report. */
KFT_EXPORT void kft_schema_default(const kft_schema *schema, const kft_kind_info *kind,
                                   json_t *obj);

/* Strict decoding: appends an "unknown field" error for every field of obj
 * the schema has no place for (root metadata excepted), as kubectl's strict
 * field validation reports them. Returns how many it found; the API server
 * rejects such an object before validating it. */
KFT_EXPORT size_t kft_schema_check_unknown(const kft_schema *schema, const kft_kind_info *kind,
                                           const json_t *obj, kft_field_errors *errs);

/* Validates obj (already defaulted) against its kind's schema, appending
 * every problem to errs: types, required, enum, bounds, patterns, list-type
 * uniqueness. old_obj is the stored object for an update, or NULL. */
KFT_EXPORT void kft_schema_validate(const kft_schema *schema, const kft_kind_info *kind,
                                    const json_t *obj, const json_t *old_obj,
                                    kft_field_errors *errs);

/* The CEL rules of obj's schema (transition rules such as immutability
 * only when old_obj is given). The API server runs them only when the
 * other checks found nothing blocking (kft_field_errors_blocking). */
KFT_EXPORT void kft_schema_validate_rules(const kft_schema *schema, const kft_kind_info *kind,
                                          const json_t *obj, const json_t *old_obj,
                                          kft_field_errors *errs);

/* The definition `name` with every $ref expanded: a JSONSchemaProps tree ready
 * for a CRD's openAPIV3Schema. New reference; NULL with err on a dangling or
 * cyclic $ref. */
KFT_EXPORT json_t *kft_schema_expand(const kft_schema *schema, const char *name, kft_error *err);

/* The complete CustomResourceDefinition (apiextensions.k8s.io/v1) for a kind.
 * New reference, or NULL with err. */
KFT_EXPORT json_t *kft_schema_crd(const kft_schema *schema, const kft_kind_info *kind,
                                  kft_error *err);

/* Every CEL rule text in the schema that has no C implementation, as a new
 * JSON array of strings (empty when all are covered). */
KFT_EXPORT json_t *kft_schema_unimplemented_rules(const kft_schema *schema);

#ifdef __cplusplus
}
#endif

#endif
