/*
 * validation.h - field errors, worded the way the Kubernetes API server words
 * them, and the entry point that validates a trainer.kubeflow.org object.
 *
 * A field error is the triple Kubernetes uses (field.Error): a path such as
 * "spec.trainer.numNodes", a type ("Invalid value", "Required value" ...), the
 * offending value and a detail. kft_field_error_format() renders one exactly
 * as `kubectl` prints it:
 *
 *     spec.trainer.numNodes: Invalid value: 0: spec.trainer.numNodes in body
 *         should be greater than or equal to 1
 *
 * Validation never stops at the first problem: every error is collected, in
 * the order the object's fields are visited, so a user fixes them in one pass.
 */
#ifndef KFTRAINER_VALIDATION_H
#define KFTRAINER_VALIDATION_H

#include <jansson.h>
#include <stddef.h>

#include "kftrainer/error.h"
#include "kftrainer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kft_field_error_type {
	KFT_FIELD_NOT_FOUND,     /* "Not found" */
	KFT_FIELD_REQUIRED,      /* "Required value" */
	KFT_FIELD_DUPLICATE,     /* "Duplicate value" */
	KFT_FIELD_INVALID,       /* "Invalid value" */
	KFT_FIELD_NOT_SUPPORTED, /* "Unsupported value" */
	KFT_FIELD_FORBIDDEN,     /* "Forbidden" */
	KFT_FIELD_TOO_LONG,      /* "Too long" */
	KFT_FIELD_TOO_MANY,      /* "Too many" */
	KFT_FIELD_INTERNAL,
	/* "Internal error" */ KFT_FIELD_UNKNOWN, /* strict decoding: a field the schema does not
	                                             have */
	KFT_FIELD_TYPE_INVALID, /* "Invalid value", for a value of the wrong type */
} kft_field_error_type;

typedef struct kft_field_error {
	kft_field_error_type type;
	char *field;  /* "spec.trainer.numNodes"; "<nil>" for the object itself */
	char *value;  /* the bad value rendered as Kubernetes does (0, "abc", {"a":1}); NULL =
	                 omitted */
	char *detail; /* may be NULL */
} kft_field_error;

/* A growable list of errors (and, separately, warnings: plain strings). */
typedef struct kft_field_errors {
	kft_field_error *items;
	size_t count, cap;
	char **warnings;
	size_t nwarnings, capwarnings;
	int oom; /* set when an allocation failed; the list may then be incomplete */
} kft_field_errors;

KFT_EXPORT void kft_field_errors_init(kft_field_errors *errs);
/* Frees everything the list owns; leaves it empty and reusable. */
KFT_EXPORT void kft_field_errors_free(kft_field_errors *errs);

/* Appends an error. `value` is rendered now (NULL omits it); detail is a printf
 * format (NULL for none). Returns 0 or KFT_ENOMEM (also recorded in errs->oom). */
KFT_EXPORT int kft_field_errors_add(kft_field_errors *errs, kft_field_error_type type,
                                    const char *field, const json_t *value, const char *detail_fmt,
                                    ...) __attribute__((format(printf, 5, 6)));
/* Like kft_field_errors_add, with the value already rendered (or NULL). */
KFT_EXPORT int kft_field_errors_add_rendered(kft_field_errors *errs, kft_field_error_type type,
                                             const char *field, const char *rendered_value,
                                             const char *detail);
KFT_EXPORT int kft_field_errors_warn(kft_field_errors *errs, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* Renders a value the way Go's field.Error does: numbers and booleans bare,
 * strings Go-quoted, anything else as compact JSON. Caller frees. */
KFT_EXPORT char *kft_render_value(const json_t *value);
/* Go's strconv.Quote of a UTF-8 string. Caller frees. */
KFT_EXPORT char *kft_go_quote(const char *s);

/* Whether errs holds an error that stops the API server from evaluating
 * CEL rules (Required, Unsupported value, Too long, Too many, a wrong
 * type), as apiextensions-apiserver's hasBlockingErr decides. */
KFT_EXPORT int kft_field_errors_blocking(const kft_field_errors *errs);

/* The OpenAPI type name of a JSON value ("object", "integer", "number" ...),
 * as the API server names it in type errors and CEL failures. */
KFT_EXPORT const char *kft_json_type_name(const json_t *value);

/* "FIELD: TYPE: VALUE: DETAIL" as kubectl prints it. Caller frees. */
KFT_EXPORT char *kft_field_error_format(const kft_field_error *e);

#ifdef __cplusplus
}
#endif

#endif
