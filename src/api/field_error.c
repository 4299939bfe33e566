/*
 * field_error.c - collecting and printing field errors. The wording and the
 * rendering of bad values follow Kubernetes' field.Error (k8s.io/apimachinery
 * pkg/util/validation/field), because users compare our output with kubectl's.
 */
#include "kftrainer/validation.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

void kft_field_errors_init(kft_field_errors *errs)
{
	memset(errs, 0, sizeof(*errs));
}

void kft_field_errors_free(kft_field_errors *errs)
{
	for (size_t i = 0; i < errs->count; i++) {
		free(errs->items[i].field);
		free(errs->items[i].value);
		free(errs->items[i].detail);
	}
	for (size_t i = 0; i < errs->nwarnings; i++)
		free(errs->warnings[i]);
	free(errs->items);
	free(errs->warnings);
	kft_field_errors_init(errs);
}

static int grow(void **items, size_t *cap, size_t count, size_t size)
{
	if (count < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 8;
	void *n = realloc(*items, ncap * size);
	if (!n)
		return -1;
	*items = n;
	*cap = ncap;
	return 0;
}

int kft_field_errors_add_rendered(kft_field_errors *errs, kft_field_error_type type,
                                  const char *field, const char *rendered_value, const char *detail)
{
	if (grow((void **)&errs->items, &errs->cap, errs->count, sizeof(*errs->items)) != 0)
		goto oom;
	kft_field_error *e = &errs->items[errs->count];
	e->type = type;
	e->field = strdup(field && *field ? field : "<nil>");
	e->value = rendered_value ? strdup(rendered_value) : NULL;
	e->detail = detail ? strdup(detail) : NULL;
	if (!e->field || (rendered_value && !e->value) || (detail && !e->detail)) {
		free(e->field);
		free(e->value);
		free(e->detail);
		goto oom;
	}
	errs->count++;
	return 0;
oom:
	errs->oom = 1;
	return KFT_ENOMEM;
}

int kft_field_errors_add(kft_field_errors *errs, kft_field_error_type type, const char *field,
                         const json_t *value, const char *detail_fmt, ...)
{
	char *rendered = value ? kft_render_value(value) : NULL;
	char *detail = NULL;
	if (detail_fmt) {
		va_list ap;
		va_start(ap, detail_fmt);
		if (vasprintf(&detail, detail_fmt, ap) < 0)
			detail = NULL;
		va_end(ap);
	}
	int rc;
	if ((value && !rendered) || (detail_fmt && !detail)) {
		errs->oom = 1;
		rc = KFT_ENOMEM;
	} else {
		rc = kft_field_errors_add_rendered(errs, type, field, rendered, detail);
	}
	free(rendered);
	free(detail);
	return rc;
}

int kft_field_errors_warn(kft_field_errors *errs, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0 || grow((void **)&errs->warnings, &errs->capwarnings, errs->nwarnings,
	                  sizeof(*errs->warnings)) != 0) {
		if (n >= 0)
			free(msg);
		errs->oom = 1;
		return KFT_ENOMEM;
	}
	errs->warnings[errs->nwarnings++] = msg;
	return 0;
}

char *kft_go_quote(const char *s)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_putc(&b, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': kft_strbuf_puts(&b, "\\\""); break;
		case '\\': kft_strbuf_puts(&b, "\\\\"); break;
		case '\n': kft_strbuf_puts(&b, "\\n"); break;
		case '\t': kft_strbuf_puts(&b, "\\t"); break;
		case '\r': kft_strbuf_puts(&b, "\\r"); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				kft_strbuf_printf(&b, "\\x%02x", *p);
			else
				kft_strbuf_putc(&b, (char)*p);
		}
	}
	kft_strbuf_putc(&b, '"');
	return kft_strbuf_detach(&b);
}

/* Go prints float64 with %v as strconv's shortest 'g' form with an exponent
 * past 21 digits; %.17g then trimming reproduces the common cases. */
static char *render_real(double d)
{
	char buf[64];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	return strdup(buf);
}

char *kft_render_value(const json_t *v)
{
	char buf[32];
	switch (json_typeof(v)) {
	case JSON_STRING: return kft_go_quote(json_string_value(v));
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return strdup(buf);
	case JSON_REAL: return render_real(json_real_value(v));
	case JSON_TRUE: return strdup("true");
	case JSON_FALSE: return strdup("false");
	case JSON_NULL: return strdup("null");
	default: return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	}
}

int kft_field_errors_blocking(const kft_field_errors *errs)
{
	for (size_t i = 0; i < errs->count; i++)
		switch (errs->items[i].type) {
		case KFT_FIELD_NOT_SUPPORTED:
		case KFT_FIELD_REQUIRED:
		case KFT_FIELD_TOO_LONG:
		case KFT_FIELD_TOO_MANY:
		case KFT_FIELD_TYPE_INVALID: return 1;
		default: break;
		}
	return 0;
}

const char *kft_json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "unknown";
}

static const char *type_string(kft_field_error_type t)
{
	switch (t) {
	case KFT_FIELD_NOT_FOUND: return "Not found";
	case KFT_FIELD_REQUIRED: return "Required value";
	case KFT_FIELD_DUPLICATE: return "Duplicate value";
	case KFT_FIELD_INVALID: return "Invalid value";
	case KFT_FIELD_NOT_SUPPORTED: return "Unsupported value";
	case KFT_FIELD_FORBIDDEN: return "Forbidden";
	case KFT_FIELD_TOO_LONG: return "Too long";
	case KFT_FIELD_TOO_MANY: return "Too many";
	case KFT_FIELD_INTERNAL: return "Internal error";
	case KFT_FIELD_UNKNOWN: return "unknown field";
	case KFT_FIELD_TYPE_INVALID: return "Invalid value";
	}
	return "Invalid value";
}

char *kft_field_error_format(const kft_field_error *e)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "%s: %s", e->field, type_string(e->type));
	int shows_value = e->type != KFT_FIELD_REQUIRED && e->type != KFT_FIELD_FORBIDDEN &&
	                  e->type != KFT_FIELD_TOO_LONG && e->type != KFT_FIELD_INTERNAL;
	if (shows_value && e->value)
		kft_strbuf_printf(&b, e->type == KFT_FIELD_UNKNOWN ? " %s" : ": %s", e->value);
	if (e->detail && *e->detail)
		kft_strbuf_printf(&b, ": %s", e->detail);
	return kft_strbuf_detach(&b);
}
