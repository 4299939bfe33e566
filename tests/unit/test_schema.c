/*
 * test_schema.c - the schema engine: defaulting, structural validation with
 * the API server's wording, CEL rules, $ref layering, CRD expansion, and the
 * built-in bundle's integrity (every CEL rule implemented, every $ref bound).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kftrainer/decode.h"
#include "kftrainer/schema.h"
#include "util/strbuf.h"

static const char TEST_SCHEMA[] =
        "kinds:\n"
        "- {group: example.com, version: v1, kind: Widget, listKind: WidgetList,\n"
        "   plural: widgets, singular: widget, scope: Namespaced, schema: Widget}\n"
        "definitions:\n"
        "  Widget:\n"
        "    type: object\n"
        "    properties:\n"
        "      apiVersion: {type: string}\n"
        "      kind: {type: string}\n"
        "      metadata: {type: object}\n"
        "      spec: {$ref: WidgetSpec, description: overridden}\n"
        "  WidgetSpec:\n"
        "    type: object\n"
        "    description: original\n"
        "    required: [name]\n"
        "    properties:\n"
        "      name: {type: string, minLength: 1, maxLength: 5}\n"
        "      size: {type: integer, format: int32, minimum: 1, default: 3}\n"
        "      mode: {type: string, enum: [fast, slow], default: fast}\n"
        "      cpu: {$ref: io.k8s.apimachinery.pkg.api.resource.Quantity}\n"
        "      tags: {type: array, items: {type: string}, x-kubernetes-list-type: set, maxItems: "
        "3}\n"
        "      ports:\n"
        "        type: array\n"
        "        x-kubernetes-list-type: map\n"
        "        x-kubernetes-list-map-keys: [name]\n"
        "        items:\n"
        "          type: object\n"
        "          properties:\n"
        "            name: {type: string}\n"
        "            port: {type: integer, x-kubernetes-validations: [{rule: self == oldSelf, "
        "message: field is immutable}]}\n"
        "      labels: {type: object, additionalProperties: {type: string}}\n"
        "      when: {type: string, format: date-time}\n"
        "      frozen: {type: string, x-kubernetes-validations: [{rule: self == oldSelf, "
        "message: field is immutable}]}\n"
        "      uri: {type: string, x-kubernetes-validations: [{rule: \"self == '' || "
        "self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')\", message: bad uri}]}\n"
        "  io.k8s.apimachinery.pkg.api.resource.Quantity:\n"
        "    anyOf: [{type: integer}, {type: string}]\n"
        "    x-kubernetes-int-or-string: true\n"
        "    pattern: '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE]"
        "(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'\n";

static kft_schema *load_test_schema(void)
{
	const char *names[] = {"test.yaml"};
	const char *datas[] = {TEST_SCHEMA};
	size_t lens[] = {sizeof(TEST_SCHEMA) - 1};
	kft_schema *s = NULL;
	kft_error err;
	int rc = kft_schema_load(names, datas, lens, 1, &s, &err);
	if (rc != 0)
		fail_msg("schema load: %s", err.message);
	return s;
}

static json_t *parse(const char *yaml)
{
	kft_doc_list docs = {0};
	kft_error err;
	if (kft_decode(yaml, strlen(yaml), "t", &docs, &err) != 0)
		fail_msg("decode: %s", err.message);
	json_t *root = json_incref(docs.items[0].root);
	kft_doc_list_free(&docs);
	return root;
}

/* Validates `yaml` (defaulted first) and returns the formatted errors joined
 * by newlines. Caller frees. */
static char *check(const kft_schema *s, const char *yaml, const char *old_yaml)
{
	const kft_kind_info *k = kft_schema_find_kind(s, "example.com/v1", "Widget");
	assert_non_null(k);
	json_t *obj = parse(yaml), *old = old_yaml ? parse(old_yaml) : NULL;
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	/* The API server's order: strict decoding, defaults, structure, rules. */
	if (kft_schema_check_unknown(s, k, obj, &errs) == 0) {
		kft_schema_default(s, k, obj);
		kft_schema_validate(s, k, obj, old, &errs);
		if (!kft_field_errors_blocking(&errs))
			kft_schema_validate_rules(s, k, obj, old, &errs);
	}
	size_t cap = 4096, len = 0;
	char *out = calloc(1, cap);
	for (size_t i = 0; i < errs.count; i++) {
		char *line = kft_field_error_format(&errs.items[i]);
		len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? "\n" : "", line);
		free(line);
	}
	kft_field_errors_free(&errs);
	json_decref(obj);
	json_decref(old);
	return out;
}

#define W(spec) "apiVersion: example.com/v1\nkind: Widget\nspec: " spec "\n"

static void expect_errors(const char *yaml, const char *old, const char *want)
{
	kft_schema *s = load_test_schema();
	char *got = check(s, yaml, old);
	assert_string_equal(got, want);
	free(got);
	kft_schema_free(s);
}

static void test_valid_object_has_no_errors(void **state)
{
	expect_errors(W("{name: ab, size: 2, cpu: 500m, tags: [a, b], "
	                "ports: [{name: x, port: 1}], labels: {a: b}, uri: 'hf://x'}"),
	              NULL, "");
}

static void test_type_mismatch_uses_apiserver_wording(void **state)
{
	expect_errors(W("{name: ab, size: two}"), NULL,
	              "spec.size: Invalid value: \"string\": spec.size in body must be of type "
	              "integer: \"string\"");
}

static void test_unknown_field_is_an_error(void **state)
{
	expect_errors(W("{name: ab, colour: red}"), NULL, "spec.colour: unknown field");
}

static void test_required_and_bounds(void **state)
{
	expect_errors(W("{size: 0}"), NULL,
	              "spec.size: Invalid value: 0: spec.size in body should be greater than or "
	              "equal to 1\nspec.name: Required value");
	expect_errors(W("{name: toolong}"), NULL,
	              "spec.name: Too long: may not be more than 5 bytes");
	expect_errors(W("{name: ''}"), NULL,
	              "spec.name: Invalid value: \"\": spec.name in body should be at least 1 "
	              "chars long");
}

/* kube-openapi's strfmt IsDateTime, which the API server applies to
 * format: date-time: a real calendar date, "any character" before the
 * fraction (its pattern's unescaped '.'), seconds at most 59, a lower-case
 * 't'/'z' as good as upper case. */
static void test_date_time_as_kube_openapi(void **state)
{
	static const char *const good[] = {
	        "2026-11-21T14:00:00Z",        "2026-11-21t14:00:00z",
	        "2026-11-21T14:00:00.5+01:00", "2026-11-21T14:00:00,123456+01:00",
	        "2024-02-29T23:59:59-12:00",
	};
	static const char *const bad[] = {
	        "2026-02-29T00:00:00Z",  "2026-04-31T00:00:00Z", "2026-11-21T14:00:60Z",
	        "2026-11-21T24:00:00Z",  "+202-11-21T14:00:00Z", "2026-11-21T14:00:00",
	        "2026-11-21T14:00:00.Z", "2026-11-21 14:00:00Z", "2026-11-21T14:00:00+5",
	};
	char yaml[160], want[400];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(yaml, sizeof(yaml), W("{name: a, when: '%s'}"), good[i]);
		expect_errors(yaml, NULL, "");
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(yaml, sizeof(yaml), W("{name: a, when: '%s'}"), bad[i]);
		snprintf(want, sizeof(want),
		         "spec.when: Invalid value: \"%s\": spec.when in body must be of type "
		         "date-time: \"%s\"",
		         bad[i], bad[i]);
		expect_errors(yaml, NULL, want);
	}
}

static void test_enum_lists_supported_values(void **state)
{
	expect_errors(W("{name: a, mode: medium}"), NULL,
	              "spec.mode: Unsupported value: \"medium\": supported values: \"fast\", "
	              "\"slow\"");
}

static void test_lists_map_and_set_uniqueness(void **state)
{
	expect_errors(W("{name: a, tags: [p, q, p]}"), NULL,
	              "spec.tags[2]: Duplicate value: \"p\"");
	expect_errors(W("{name: a, tags: [a, b, c, d]}"), NULL,
	              "spec.tags: Too many: 4: must have at most 3 items");
	expect_errors(W("{name: a, ports: [{name: p, port: 1}, {name: p, port: 2}]}"), NULL,
	              "spec.ports[1]: Duplicate value: {\"name\":\"p\"}");
	/* Upstream reports the first non-unique appearance of a value once,
	 * however many follow (apiextensions-apiserver pkg/apiserver/schema/
	 * listtype/validation.go: validateListSet counts, and reports at the
	 * second); a key absent from two items is the key {} twice. */
	expect_errors(W("{name: a, tags: [p, p, p]}"), NULL,
	              "spec.tags[1]: Duplicate value: \"p\"");
	expect_errors(W("{name: a, ports: [{name: p, port: 1}, {name: q}, {name: p, port: 2}, "
	                "{name: p}, {name: q}, {port: 5}, {port: 6}]}"),
	              NULL,
	              "spec.ports[2]: Duplicate value: {\"name\":\"p\"}\n"
	              "spec.ports[4]: Duplicate value: {\"name\":\"q\"}\n"
	              "spec.ports[6]: Duplicate value: {}");
}

/* A list of 50,000 items, old and new reordered: every item finds its old
 * counterpart by key (the transition rule sees the one changed port) and the
 * one duplicate is found, in one pass each (the checks were pairwise: a
 * TrainJob with 50,000 env entries took 52 s to validate; bench_render
 * prints the figure now). */
static void test_large_map_lists_are_checked_by_key(void **state)
{
	enum { N = 50000 };
	kft_schema *s = load_test_schema();
	kft_strbuf now, old;
	kft_strbuf_init(&now);
	kft_strbuf_init(&old);
	kft_strbuf_puts(&now, W("{name: a, ports: ["));
	kft_strbuf_puts(&old, W("{name: a, ports: ["));
	for (int i = 0; i < N; i++) {
		kft_strbuf_printf(&now, "%s{name: p%d, port: %d}", i ? ", " : "", N - 1 - i,
		                  i == N / 2 ? 7 : N - 1 - i);
		kft_strbuf_printf(&old, "%s{name: p%d, port: %d}", i ? ", " : "", i, i);
	}
	kft_strbuf_puts(&now, ", {name: p0}]}");
	kft_strbuf_puts(&old, "]}");
	char *got = check(s, kft_strbuf_str(&now), kft_strbuf_str(&old));
	char want[256];
	snprintf(want, sizeof(want),
	         "spec.ports[%d]: Duplicate value: {\"name\":\"p0\"}\n"
	         "spec.ports[%d].port: Invalid value: 7: field is immutable",
	         N, N / 2);
	assert_string_equal(got, want);
	free(got);
	kft_strbuf_free(&now);
	kft_strbuf_free(&old);
	kft_schema_free(s);
}

static void test_quantities_are_parsed_exactly(void **state)
{
	expect_errors(W("{name: a, cpu: 2}"), NULL, "");
	expect_errors(W("{name: a, cpu: 1.5Gi}"), NULL, "");
	expect_errors(W("{name: a, cpu: 12xy}"), NULL,
	              "spec.cpu: Invalid value: \"12xy\": spec.cpu in body should match "
	              "'^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE]"
	              "(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'");
}

static void test_cel_rules_and_transitions(void **state)
{
	expect_errors(W("{name: a, uri: 'not a uri'}"), NULL,
	              "spec.uri: Invalid value: \"not a uri\": bad uri");
	expect_errors(W("{name: a, frozen: x}"), W("{name: a, frozen: y}"),
	              "spec.frozen: Invalid value: \"x\": field is immutable");
	/* No old object: transition rules do not apply. */
	expect_errors(W("{name: a, frozen: x}"), NULL, "");
	/* Map-list items are correlated by key, so reordering is no change. */
	expect_errors(W("{name: a, ports: [{name: q, port: 2}, {name: p, port: 1}]}"),
	              W("{name: a, ports: [{name: p, port: 1}, {name: q, port: 2}]}"), "");
	expect_errors(W("{name: a, ports: [{name: p, port: 9}]}"),
	              W("{name: a, ports: [{name: p, port: 1}]}"),
	              "spec.ports[0].port: Invalid value: 9: field is immutable");
}

static void test_defaults_fill_absent_and_null_fields(void **state)
{
	kft_schema *s = load_test_schema();
	const kft_kind_info *k = kft_schema_find_kind(s, "example.com/v1", "Widget");
	json_t *obj = parse(W("{name: a, mode: null}"));
	kft_schema_default(s, k, obj);
	json_t *spec = json_object_get(obj, "spec");
	assert_int_equal(json_integer_value(json_object_get(spec, "size")), 3);
	assert_string_equal(json_string_value(json_object_get(spec, "mode")), "fast");
	assert_null(json_object_get(spec, "tags"));
	json_decref(obj);
	kft_schema_free(s);
}

static void test_expand_lays_siblings_over_refs(void **state)
{
	kft_schema *s = load_test_schema();
	kft_error err;
	json_t *x = kft_schema_expand(s, "Widget", &err);
	assert_non_null(x);
	json_t *spec = json_object_get(json_object_get(x, "properties"), "spec");
	assert_string_equal(json_string_value(json_object_get(spec, "description")), "overridden");
	assert_null(json_object_get(spec, "$ref"));
	json_t *cpu = json_object_get(json_object_get(spec, "properties"), "cpu");
	assert_true(json_is_true(json_object_get(cpu, "x-kubernetes-int-or-string")));
	char *dump = json_dumps(x, 0);
	assert_null(strstr(dump, "$ref"));
	free(dump);
	json_decref(x);
	kft_schema_free(s);
}

static void test_dangling_ref_is_reported(void **state)
{
	static const char bad[] = "definitions:\n  A: {$ref: Missing}\n";
	const char *names[] = {"bad.yaml"};
	const char *datas[] = {bad};
	size_t lens[] = {sizeof(bad) - 1};
	kft_schema *s = NULL;
	kft_error err;
	assert_int_equal(kft_schema_load(names, datas, lens, 1, &s, &err), 0);
	assert_null(kft_schema_expand(s, "A", &err));
	assert_non_null(strstr(err.message, "Missing"));
	kft_schema_free(s);
}

/* The bundle compiled from api/: it loads, serves our three kinds, every CEL
 * rule it carries has a C implementation, and every kind expands. */
static void test_builtin_bundle_is_complete(void **state)
{
	kft_error err;
	const kft_schema *s = kft_schema_builtin(&err);
	if (!s)
		fail_msg("builtin schema: %s", err.message);
	const char *kinds[] = {"TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"};
	for (size_t i = 0; i < 3; i++) {
		const kft_kind_info *k =
		        kft_schema_find_kind(s, "trainer.kubeflow.org/v1alpha1", kinds[i]);
		assert_non_null(k);
		json_t *crd = kft_schema_crd(s, k, &err);
		if (!crd)
			fail_msg("%s: %s", kinds[i], err.message);
		json_decref(crd);
	}
	assert_non_null(kft_schema_find_kind(s, "trainer.kubeflow.org/v1alpha1", "TrainJob"));
	assert_null(kft_schema_find_kind(s, "trainer.kubeflow.org/v1", "TrainJob"));
	json_t *missing = kft_schema_unimplemented_rules(s);
	char *dump = json_dumps(missing, JSON_ENCODE_ANY);
	if (json_array_size(missing) != 0)
		fail_msg("CEL rules without a C implementation: %s", dump);
	free(dump);
	json_decref(missing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_valid_object_has_no_errors),
	        cmocka_unit_test(test_type_mismatch_uses_apiserver_wording),
	        cmocka_unit_test(test_unknown_field_is_an_error),
	        cmocka_unit_test(test_required_and_bounds),
	        cmocka_unit_test(test_enum_lists_supported_values),
	        cmocka_unit_test(test_date_time_as_kube_openapi),
	        cmocka_unit_test(test_lists_map_and_set_uniqueness),
	        cmocka_unit_test(test_large_map_lists_are_checked_by_key),
	        cmocka_unit_test(test_quantities_are_parsed_exactly),
	        cmocka_unit_test(test_cel_rules_and_transitions),
	        cmocka_unit_test(test_defaults_fill_absent_and_null_fields),
	        cmocka_unit_test(test_expand_lays_siblings_over_refs),
	        cmocka_unit_test(test_dangling_ref_is_reported),
	        cmocka_unit_test(test_builtin_bundle_is_complete),
	};
	return cmocka_run_group_tests_name("schema", tests, NULL, NULL);
}
