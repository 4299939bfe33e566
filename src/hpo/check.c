/*
 * check.c - what kftrainer's OptimizationJob webhook checks beyond the
 * schema (see hpo.h): the annotations, the placeholders of the trial
 * template and Katib's grid rules, as field errors.
 *
 * The parts of src/hpo/ word their refusals as a field error already
 * ("FIELD: TYPE: VALUE: DETAIL", kubectl's shape) in a kft_error, since
 * the drivers want one message; this splits one back into its parts.
 */
#include "hpo/hpo.h"

#include <string.h>

static const struct {
	const char *word;
	kft_field_error_type type;
} types[] = {
        {"Invalid value", KFT_FIELD_INVALID},     {"Unsupported value", KFT_FIELD_NOT_SUPPORTED},
        {"Forbidden", KFT_FIELD_FORBIDDEN},       {"Required value", KFT_FIELD_REQUIRED},
        {"Duplicate value", KFT_FIELD_DUPLICATE},
};

/* message "FIELD: TYPE: rest" into errs; rest is "VALUE: DETAIL" for the
 * types that show a value, when the value is a quoted string. */
static void add_message(const char *message, kft_field_errors *errs)
{
	const char *sep = strstr(message, ": ");
	for (size_t i = 0; sep && i < sizeof(types) / sizeof(types[0]); i++) {
		size_t n = strlen(types[i].word);
		const char *t = sep + 2;
		if (strncmp(t, types[i].word, n) != 0 || (t[n] != ':' && t[n] != '\0'))
			continue;
		char field[512];
		snprintf(field, sizeof(field), "%.*s", (int)(sep - message), message);
		const char *rest = t[n] ? t + n + 2 : "";
		const char *end = rest[0] == '"' ? strstr(rest + 1, "\": ") : NULL;
		if (end) {
			char value[1024];
			snprintf(value, sizeof(value), "%.*s", (int)(end + 1 - rest), rest);
			kft_field_errors_add_rendered(errs, types[i].type, field, value, end + 3);
		} else {
			kft_field_errors_add_rendered(errs, types[i].type, field, NULL, rest);
		}
		return;
	}
	kft_field_errors_add_rendered(errs, KFT_FIELD_INVALID, "spec", NULL, message);
}

void kft_hpo_validate(const json_t *opt, kft_field_errors *errs)
{
	kft_hpo_spec spec;
	kft_error err = {0};
	uint64_t count;
	if (kft_hpo_spec_parse(opt, &spec, &err) != 0) {
		add_message(err.message, errs);
		return;
	}
	if (kft_hpo_check_placeholders(&spec, &err) != 0)
		add_message(err.message, errs);
	if (spec.algorithm == KFT_HPO_GRID && kft_hpo_grid_count(&spec, &count, &err) != 0)
		add_message(err.message, errs);
	kft_hpo_spec_free(&spec);
}
