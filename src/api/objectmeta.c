/*
 * objectmeta.c - Kubernetes name rules and metadata validation.
 *
 * The API server describes each name rule as a regular expression and, when a
 * string fails it, prints a sentence that quotes the expression. We keep the
 * sentences (users grep for them and compare them with kubectl output) but not
 * the regex engine: every rule here is "one character class for the first
 * byte, one for the last, one for the middle", so a single bounded pass over
 * the bytes decides it. Non-ASCII bytes and embedded NULs are in no class, so
 * they are rejected just as Go's ASCII-only character classes reject them.
 *
 * Every check reports through a `sink`: the public kft_is_* predicates collect
 * bare sentences into a JSON array, the kft_validate_* walkers turn each
 * sentence into an "Invalid value" field error carrying the offending string.
 * One set of checks therefore serves both, and the message text is assembled
 * in exactly one place.
 *
 * Two message families exist upstream and differ in one word: the older
 * helpers (names, namespaces, ConfigMap keys) say "must be no more than 63
 * characters", the newer label-key and label-value helpers say "... 63 bytes".
 * Each check passes the unit its upstream counterpart uses.
 */
#include "kftrainer/objectmeta.h"

#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

/* The expressions the API server quotes in its messages. */
#define DNS1123_LABEL_FMT     "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS1123_SUBDOMAIN_FMT DNS1123_LABEL_FMT "(\\." DNS1123_LABEL_FMT ")*"
#define DNS1035_LABEL_FMT     "[a-z]([-a-z0-9]*[a-z0-9])?"
#define LABEL_KEY_FMT         "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define LABEL_VALUE_FMT       "(" LABEL_KEY_FMT ")?"
#define ENV_VAR_NAME_FMT      "[-._a-zA-Z][-._a-zA-Z0-9]*"
#define CONFIG_MAP_KEY_FMT    "[-._a-zA-Z0-9]+"

#define DNS1123_LABEL_MSG                                                                          \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "   \
	"and must start and end with an alphanumeric character"
#define DNS1123_SUBDOMAIN_MSG                                                                      \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "  \
	"or '.', and must start and end with an alphanumeric character"
#define DNS1035_LABEL_MSG                                                                          \
	"a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "  \
	"an alphabetic character, and end with an alphanumeric character"
#define LABEL_KEY_MSG                                                                              \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and "            \
	"end with an alphanumeric character"
#define LABEL_VALUE_MSG                                                                            \
	"a valid label must be an empty string or consist of alphanumeric characters, '-', "       \
	"'_' or '.', and must start and end with an alphanumeric character"
#define ENV_VAR_NAME_MSG                                                                           \
	"a valid environment variable name must consist of alphabetic characters, digits, "        \
	"'_', '-', or '.', and must not start with a digit"
#define RELAXED_ENV_VAR_NAME_MSG                                                                   \
	"a valid environment variable name must consist only of printable ASCII characters "       \
	"other than '='"
#define CONFIG_MAP_KEY_MSG                                                                         \
	"a valid config key must consist of alphanumeric characters, '-', '_' or '.'"

#define UNIT_CHARS "characters"
#define UNIT_BYTES "bytes"

static const char *const EX_DNS1123_LABEL[] = {"my-name", "123-abc", NULL};
static const char *const EX_SUBDOMAIN[] = {"example.com", NULL};
static const char *const EX_DNS1035_LABEL[] = {"my-name", "abc-123", NULL};
static const char *const EX_LABEL_KEY[] = {"MyName", "my.name", "123-abc", NULL};
static const char *const EX_LABEL_VALUE[] = {"MyValue", "my_value", "12345", NULL};
static const char *const EX_ENV_VAR_NAME[] = {"my.env-name", "MY_ENV.NAME", "MyEnvName1", NULL};
static const char *const EX_CONFIG_MAP_KEY[] = {"key.name", "KEY_NAME", "key-name", NULL};

/* ---- where messages go ------------------------------------------------- */

typedef struct sink {
	json_t *msgs;           /* predicate form: bare sentences (may be NULL) */
	kft_field_errors *errs; /* validation form: one Invalid error per sentence */
	const char *field;      /* validation form: the error's path */
	const char *shown;      /* validation form: the bad value as the user wrote it */
} sink;

static void emit(sink *k, kft_strbuf *b)
{
	if (b->failed) {
		if (k->errs)
			k->errs->oom = 1;
	} else if (k->errs) {
		char *value = kft_go_quote(k->shown);
		if (value)
			kft_field_errors_add_rendered(k->errs, KFT_FIELD_INVALID, k->field, value,
			                              kft_strbuf_str(b));
		else
			k->errs->oom = 1;
		free(value);
	} else if (k->msgs) {
		json_array_append_new(k->msgs, json_string(kft_strbuf_str(b)));
	}
	kft_strbuf_free(b);
}

static void say(sink *k, const char *prefix, const char *msg)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_puts(&b, prefix);
	kft_strbuf_puts(&b, msg);
	emit(k, &b);
}

static void say_max_len(sink *k, const char *prefix, int max, const char *unit)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "%smust be no more than %d %s", prefix, max, unit);
	emit(k, &b);
}

/* The upstream RegexError layout: every example is followed by ", " and the
 * next one preceded by " or ", hence the double space users see. */
static void say_regex(sink *k, const char *prefix, const char *msg, const char *re,
                      const char *const *examples, const char *suffix)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "%s%s (e.g. ", prefix, msg);
	for (size_t i = 0; examples[i]; i++)
		kft_strbuf_printf(&b, "%s'%s', ", i ? " or " : "", examples[i]);
	kft_strbuf_printf(&b, "regex used for validation is '%s')%s", re, suffix);
	emit(k, &b);
}

/* ---- character-class scanners ------------------------------------------ */

typedef int (*char_class)(unsigned char c);

static int lower_alpha(unsigned char c)
{
	return c >= 'a' && c <= 'z';
}

static int digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int alpha(unsigned char c)
{
	return lower_alpha(c) || (c >= 'A' && c <= 'Z');
}

static int lower_alnum(unsigned char c)
{
	return lower_alpha(c) || digit(c);
}

static int lower_alnum_dash(unsigned char c)
{
	return lower_alnum(c) || c == '-';
}

static int alnum(unsigned char c)
{
	return alpha(c) || digit(c);
}

static int key_middle(unsigned char c)
{
	return alnum(c) || c == '-' || c == '_' || c == '.';
}

static int env_first(unsigned char c)
{
	return alpha(c) || c == '-' || c == '_' || c == '.';
}

/* Matches first(middle*last)? — every rule in this file has that shape and in
 * each the first class is contained in the last, so a one-byte string needs
 * to satisfy both. The empty string never matches. */
static int match_shape(const char *s, size_t n, char_class first, char_class middle,
                       char_class last)
{
	const unsigned char *u = (const unsigned char *)s;
	if (n == 0 || !first(u[0]) || !last(u[n - 1]))
		return 0;
	for (size_t i = 1; i + 1 < n; i++)
		if (!middle(u[i]))
			return 0;
	return 1;
}

static int match_dns1123_label(const char *s, size_t n)
{
	return match_shape(s, n, lower_alnum, lower_alnum_dash, lower_alnum);
}

/* label(\.label)*: dots split labels, no label may be empty. */
static int match_dns1123_subdomain(const char *s, size_t n)
{
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (!match_dns1123_label(s + start, i - start))
			return 0;
		start = i + 1;
	}
	return 1;
}

static int match_label_key_name(const char *s, size_t n)
{
	return match_shape(s, n, alnum, key_middle, alnum);
}

/* ---- the rules ---------------------------------------------------------- */

typedef int (*check_fn)(const char *s, size_t n, sink *k);

static int check_dns1123_label(const char *s, size_t n, sink *k)
{
	int ok = 1;
	if (n > KFT_DNS1123_LABEL_MAX_LENGTH) {
		say_max_len(k, "", KFT_DNS1123_LABEL_MAX_LENGTH, UNIT_CHARS);
		ok = 0;
	}
	if (!match_dns1123_label(s, n)) {
		/* A valid subdomain that is not a label can only be wrong by its dots. */
		if (match_dns1123_subdomain(s, n))
			say(k, "", "must not contain dots");
		else
			say_regex(k, "", DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, EX_DNS1123_LABEL,
			          "");
		ok = 0;
	}
	return ok;
}

static int check_subdomain(const char *s, size_t n, sink *k, const char *prefix, const char *unit)
{
	int ok = 1;
	if (n > KFT_DNS1123_SUBDOMAIN_MAX_LENGTH) {
		say_max_len(k, prefix, KFT_DNS1123_SUBDOMAIN_MAX_LENGTH, unit);
		ok = 0;
	}
	if (!match_dns1123_subdomain(s, n)) {
		say_regex(k, prefix, DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, EX_SUBDOMAIN,
		          "");
		ok = 0;
	}
	return ok;
}

static int check_dns1123_subdomain(const char *s, size_t n, sink *k)
{
	return check_subdomain(s, n, k, "", UNIT_CHARS);
}

static int check_dns1035_label(const char *s, size_t n, sink *k)
{
	int ok = 1;
	if (n > KFT_DNS1035_LABEL_MAX_LENGTH) {
		say_max_len(k, "", KFT_DNS1035_LABEL_MAX_LENGTH, UNIT_CHARS);
		ok = 0;
	}
	if (!match_shape(s, n, lower_alpha, lower_alnum_dash, lower_alnum)) {
		say_regex(k, "", DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, EX_DNS1035_LABEL, "");
		ok = 0;
	}
	return ok;
}

/* The part after the optional "prefix/". */
static int check_key_name(const char *s, size_t n, sink *k)
{
	int ok = 1;
	if (n == 0) {
		say(k, "name part ", "must be non-empty");
		ok = 0;
	} else if (n > KFT_QUALIFIED_NAME_MAX_LENGTH) {
		say_max_len(k, "name part ", KFT_QUALIFIED_NAME_MAX_LENGTH, UNIT_BYTES);
		ok = 0;
	}
	if (!match_label_key_name(s, n)) {
		say_regex(k, "name part ", LABEL_KEY_MSG, LABEL_KEY_FMT, EX_LABEL_KEY, "");
		ok = 0;
	}
	return ok;
}

static int check_qualified_name(const char *s, size_t n, sink *k)
{
	const char *slash = memchr(s, '/', n);
	if (!slash)
		return check_key_name(s, n, k);
	size_t plen = (size_t)(slash - s);
	const char *name = slash + 1;
	size_t nlen = n - plen - 1;
	if (memchr(name, '/', nlen)) {
		say_regex(k, "a valid label key ", LABEL_KEY_MSG, LABEL_KEY_FMT, EX_LABEL_KEY,
		          " with an optional DNS subdomain prefix and '/' (e.g. "
		          "'example.com/MyName')");
		return 0;
	}
	int ok = 1;
	if (plen == 0) {
		say(k, "prefix part ", "must be non-empty");
		ok = 0;
	} else if (!check_subdomain(s, plen, k, "prefix part ", UNIT_BYTES)) {
		ok = 0;
	}
	return check_key_name(name, nlen, k) && ok;
}

static int check_label_value(const char *s, size_t n, sink *k)
{
	int ok = 1;
	if (n > KFT_LABEL_VALUE_MAX_LENGTH) {
		say_max_len(k, "", KFT_LABEL_VALUE_MAX_LENGTH, UNIT_BYTES);
		ok = 0;
	}
	if (n != 0 && !match_label_key_name(s, n)) {
		say_regex(k, "", LABEL_VALUE_MSG, LABEL_VALUE_FMT, EX_LABEL_VALUE, "");
		ok = 0;
	}
	return ok;
}

/* Names that would walk out of a directory when used as a file name. */
static int check_chdir_prefix(const char *s, size_t n, sink *k)
{
	if (n == 1 && s[0] == '.')
		say(k, "", "must not be '.'");
	else if (n == 2 && s[0] == '.' && s[1] == '.')
		say(k, "", "must not be '..'");
	else if (n > 2 && s[0] == '.' && s[1] == '.')
		say(k, "", "must not start with '..'");
	else
		return 1;
	return 0;
}

static int check_env_var_name(const char *s, size_t n, sink *k)
{
	int ok = 1;
	if (!match_shape(s, n, env_first, key_middle, key_middle)) {
		say_regex(k, "", ENV_VAR_NAME_MSG, ENV_VAR_NAME_FMT, EX_ENV_VAR_NAME, "");
		ok = 0;
	}
	return check_chdir_prefix(s, n, k) && ok;
}

/* IsRelaxedEnvVarName, what the API server applies to pods since
 * RelaxedEnvironmentVariableValidation was locked on (Kubernetes 1.34): any
 * printable ASCII byte but '='. Go walks runes, so a non-ASCII character
 * (or a byte of broken UTF-8) fails it just as a control byte does. */
static int check_relaxed_env_var_name(const char *s, size_t n, sink *k)
{
	int ok = 1;
	if (n == 0) {
		say(k, "environment variable name ", "must be non-empty");
		ok = 0;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c > 0x7e || c == '=') {
			say(k, "", RELAXED_ENV_VAR_NAME_MSG);
			return 0;
		}
	}
	return ok;
}

static int check_config_map_key(const char *s, size_t n, sink *k)
{
	int ok = 1;
	if (n > KFT_DNS1123_SUBDOMAIN_MAX_LENGTH) {
		say_max_len(k, "", KFT_DNS1123_SUBDOMAIN_MAX_LENGTH, UNIT_CHARS);
		ok = 0;
	}
	if (!match_shape(s, n, key_middle, key_middle, key_middle)) {
		say_regex(k, "", CONFIG_MAP_KEY_MSG, CONFIG_MAP_KEY_FMT, EX_CONFIG_MAP_KEY, "");
		ok = 0;
	}
	return check_chdir_prefix(s, n, k) && ok;
}

/* ---- public predicates -------------------------------------------------- */

static int predicate(const char *s, json_t *msgs, check_fn check)
{
	sink k = {.msgs = json_is_array(msgs) ? msgs : NULL};
	if (!s)
		s = "";
	return check(s, strlen(s), &k);
}

int kft_is_dns1123_label(const char *s, json_t *msgs)
{
	return predicate(s, msgs, check_dns1123_label);
}

int kft_is_dns1123_subdomain(const char *s, json_t *msgs)
{
	return predicate(s, msgs, check_dns1123_subdomain);
}

int kft_is_dns1035_label(const char *s, json_t *msgs)
{
	return predicate(s, msgs, check_dns1035_label);
}

int kft_is_qualified_name(const char *s, json_t *msgs)
{
	return predicate(s, msgs, check_qualified_name);
}

int kft_is_valid_label_value(const char *s, json_t *msgs)
{
	return predicate(s, msgs, check_label_value);
}

int kft_is_env_var_name(const char *s, json_t *msgs)
{
	return predicate(s, msgs, check_env_var_name);
}

int kft_is_relaxed_env_var_name(const char *s, json_t *msgs)
{
	return predicate(s, msgs, check_relaxed_env_var_name);
}

int kft_is_config_map_key(const char *s, json_t *msgs)
{
	return predicate(s, msgs, check_config_map_key);
}

/* ---- field-error helpers ------------------------------------------------- */

/* Runs a rule on `checked` and reports each failure at `field` with `shown`
 * (the user's spelling, which differs from `checked` when a key is
 * lower-cased or a generateName masked). */
static void check_field(kft_field_errors *errs, const char *field, const char *shown,
                        const char *checked, size_t n, check_fn check)
{
	sink k = {.errs = errs, .field = field, .shown = shown};
	check(checked, n, &k);
}

/* "path.child", or "path[key]" when `bracket`; NULL (and errs->oom) on
 * allocation failure. The caller frees. */
static char *sub_path(kft_field_errors *errs, const char *path, const char *child, int bracket)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	if (bracket)
		kft_strbuf_printf(&b, "%s[%s]", path, child);
	else if (*path)
		kft_strbuf_printf(&b, "%s.%s", path, child);
	else
		kft_strbuf_puts(&b, child);
	char *p = kft_strbuf_detach(&b);
	if (!p)
		errs->oom = 1;
	return p;
}

static char *index_path(kft_field_errors *errs, const char *path, size_t i)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	kft_strbuf_printf(&b, "%s[%zu]", path, i);
	char *p = kft_strbuf_detach(&b);
	if (!p)
		errs->oom = 1;
	return p;
}

/* Worded like the schema validator, so a mistyped metadata field reads the
 * same as a mistyped spec field. */
static void type_error(kft_field_errors *errs, const char *field, const json_t *v, const char *want)
{
	kft_strbuf value, detail;
	kft_strbuf_init(&value);
	kft_strbuf_init(&detail);
	kft_strbuf_printf(&value, "\"%s\"", kft_json_type_name(v));
	kft_strbuf_printf(&detail, "%s in body must be of type %s: \"%s\"", field, want,
	                  kft_json_type_name(v));
	if (value.failed || detail.failed)
		errs->oom = 1;
	else
		kft_field_errors_add_rendered(errs, KFT_FIELD_INVALID, field,
		                              kft_strbuf_str(&value), kft_strbuf_str(&detail));
	kft_strbuf_free(&value);
	kft_strbuf_free(&detail);
}

/* Reads an optional string member. Missing or null reads as "" (Go's zero
 * value). Returns 0, after reporting, when the member has another type. */
static int get_string(const json_t *obj, const char *key, const char *field, kft_field_errors *errs,
                      const char **s, size_t *n)
{
	const json_t *v = json_object_get(obj, key);
	*s = "";
	*n = 0;
	if (!v || json_is_null(v))
		return 1;
	if (!json_is_string(v)) {
		if (field)
			type_error(errs, field, v, "string");
		return 0;
	}
	*s = json_string_value(v);
	*n = json_string_length(v);
	return 1;
}

/* ---- labels and annotations --------------------------------------------- */

/* NULL/null maps are fine; anything but an object is reported. */
static int is_map(const json_t *m, const char *path, kft_field_errors *errs)
{
	if (!m || json_is_null(m))
		return 0;
	if (json_is_object(m))
		return 1;
	type_error(errs, path, m, "object");
	return 0;
}

static void value_type_error(kft_field_errors *errs, const char *path, const char *key,
                             const json_t *v)
{
	char *field = sub_path(errs, path, key, 1);
	if (field)
		type_error(errs, field, v, "string");
	free(field);
}

void kft_validate_labels(const json_t *labels, const char *path, kft_field_errors *errs)
{
	if (!path)
		path = "metadata.labels";
	if (!is_map(labels, path, errs))
		return;
	/* jansson's iteration API is not const-qualified; nothing is modified. */
	json_t *obj = (json_t *)labels;
	const char *key;
	size_t klen;
	json_t *v;
	json_object_keylen_foreach(obj, key, klen, v)
	{
		check_field(errs, path, key, key, klen, check_qualified_name);
		if (json_is_string(v))
			check_field(errs, path, json_string_value(v), json_string_value(v),
			            json_string_length(v), check_label_value);
		else
			value_type_error(errs, path, key, v);
	}
}

/* Annotation keys are label keys in any letter case: the rule is checked on
 * an ASCII-lower-cased copy, the error shows the key as written. */
static void check_annotation_key(kft_field_errors *errs, const char *path, const char *key,
                                 size_t klen)
{
	char *lower = malloc(klen + 1);
	if (!lower) {
		errs->oom = 1;
		return;
	}
	for (size_t i = 0; i < klen; i++) {
		unsigned char c = (unsigned char)key[i];
		lower[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
	}
	lower[klen] = '\0';
	check_field(errs, path, key, lower, klen, check_qualified_name);
	free(lower);
}

void kft_validate_annotations(const json_t *annotations, const char *path, kft_field_errors *errs)
{
	if (!path)
		path = "metadata.annotations";
	if (!is_map(annotations, path, errs))
		return;
	json_t *obj = (json_t *)annotations; /* see kft_validate_labels */
	const char *key;
	size_t klen, total = 0;
	json_t *v;
	json_object_keylen_foreach(obj, key, klen, v)
	{
		check_annotation_key(errs, path, key, klen);
		if (!json_is_string(v)) {
			value_type_error(errs, path, key, v);
			continue;
		}
		/* Stop adding once past the limit: the sum then cannot overflow. */
		if (total <= KFT_TOTAL_ANNOTATION_SIZE_LIMIT_B)
			total += klen + json_string_length(v);
	}
	if (total > KFT_TOTAL_ANNOTATION_SIZE_LIMIT_B)
		kft_field_errors_add(errs, KFT_FIELD_TOO_LONG, path, NULL,
		                     "may not be more than %d bytes",
		                     KFT_TOTAL_ANNOTATION_SIZE_LIMIT_B);
}

/* ---- names, namespace, generation --------------------------------------- */

/* NameIsDNSSubdomain with prefix=true: a generated suffix will follow, so a
 * trailing '-' is acceptable. Upstream masks it by replacing the last two
 * bytes with "a" (so "ab-" is checked as "aa"); we check the same string. */
static void check_generate_name(kft_field_errors *errs, const char *field, const char *s, size_t n)
{
	if (n < 2 || s[n - 1] != '-') {
		check_field(errs, field, s, s, n, check_dns1123_subdomain);
		return;
	}
	char *masked = malloc(n);
	if (!masked) {
		errs->oom = 1;
		return;
	}
	memcpy(masked, s, n - 2);
	masked[n - 2] = 'a';
	masked[n - 1] = '\0';
	check_field(errs, field, s, masked, n - 1, check_dns1123_subdomain);
	free(masked);
}

static void validate_names(const json_t *meta, const char *path, kft_field_errors *errs)
{
	char *gen_path = sub_path(errs, path, "generateName", 0);
	char *name_path = sub_path(errs, path, "name", 0);
	const char *s;
	size_t n;
	if (gen_path && name_path) {
		if (get_string(meta, "generateName", gen_path, errs, &s, &n) && n)
			check_generate_name(errs, gen_path, s, n);
		int typed = get_string(meta, "name", name_path, errs, &s, &n);
		if (typed && n == 0)
			kft_field_errors_add(errs, KFT_FIELD_REQUIRED, name_path, NULL,
			                     "name or generateName is required");
		else if (typed)
			check_field(errs, name_path, s, s, n, check_dns1123_subdomain);
	}
	free(gen_path);
	free(name_path);
}

static void validate_namespace(const json_t *meta, int namespaced, const char *path,
                               kft_field_errors *errs)
{
	char *field = sub_path(errs, path, "namespace", 0);
	const char *s;
	size_t n;
	if (field && get_string(meta, "namespace", field, errs, &s, &n)) {
		if (namespaced && n == 0)
			kft_field_errors_add(errs, KFT_FIELD_REQUIRED, field, NULL, NULL);
		else if (namespaced)
			check_field(errs, field, s, s, n, check_dns1123_label);
		else if (n != 0)
			kft_field_errors_add(errs, KFT_FIELD_FORBIDDEN, field, NULL,
			                     "not allowed on this type");
	}
	free(field);
}

static void validate_generation(const json_t *meta, const char *path, kft_field_errors *errs)
{
	const json_t *g = json_object_get(meta, "generation");
	if (!g || json_is_null(g))
		return;
	char *field = sub_path(errs, path, "generation", 0);
	if (!field)
		return;
	if (!json_is_integer(g))
		type_error(errs, field, g, "integer");
	else if (json_integer_value(g) < 0)
		kft_field_errors_add(errs, KFT_FIELD_INVALID, field, g,
		                     "must be greater than or equal to 0");
	free(field);
}

/* ---- finalizers --------------------------------------------------------- */

static int string_is(const json_t *v, const char *lit)
{
	size_t n = strlen(lit);
	return json_string_length(v) == n && memcmp(json_string_value(v), lit, n) == 0;
}

static void validate_finalizers(const json_t *fins, const char *path, kft_field_errors *errs)
{
	if (!fins || json_is_null(fins))
		return;
	if (!json_is_array(fins)) {
		type_error(errs, path, fins, "array");
		return;
	}
	int orphan = 0, foreground = 0;
	for (size_t i = 0; i < json_array_size(fins); i++) {
		const json_t *f = json_array_get(fins, i);
		if (!json_is_string(f)) {
			char *field = index_path(errs, path, i);
			if (field)
				type_error(errs, field, f, "string");
			free(field);
			continue;
		}
		check_field(errs, path, json_string_value(f), json_string_value(f),
		            json_string_length(f), check_qualified_name);
		orphan |= string_is(f, "orphan");
		foreground |= string_is(f, "foregroundDeletion");
	}
	if (orphan && foreground)
		kft_field_errors_add(errs, KFT_FIELD_INVALID, path, fins,
		                     "finalizer %s and %s cannot be both set", "orphan",
		                     "foregroundDeletion");
}

/* ---- ownerReferences ---------------------------------------------------- */

static const char *const OWNER_STRINGS[] = {"apiVersion", "kind", "name", "uid"};
static const char *const OWNER_BOOLS[] = {"controller", "blockOwnerDeletion"};

/* Rebuilds one reference with exactly the fields Go's OwnerReference has, in
 * its order, so a reference shown in an error renders as the API server
 * renders it. Returns a new reference (caller decrefs), or NULL after
 * reporting a type error or on allocation failure. */
static json_t *normalize_owner_ref(const json_t *ref, const char *field, kft_field_errors *errs)
{
	if (!json_is_object(ref)) {
		type_error(errs, field, ref, "object");
		return NULL;
	}
	json_t *out = json_object();
	int bad = !out;
	if (!out)
		errs->oom = 1;
	for (size_t i = 0; i < 4 && out; i++) {
		const json_t *v = json_object_get(ref, OWNER_STRINGS[i]);
		char *sub = NULL;
		if (v && !json_is_null(v) && !json_is_string(v)) {
			sub = sub_path(errs, field, OWNER_STRINGS[i], 0);
			if (sub)
				type_error(errs, sub, v, "string");
			bad = 1;
		}
		free(sub);
		if (json_object_set_new(out, OWNER_STRINGS[i],
		                        json_string(json_is_string(v) ? json_string_value(v) : "")))
			errs->oom = bad = 1;
	}
	for (size_t i = 0; i < 2 && out; i++) {
		const json_t *v = json_object_get(ref, OWNER_BOOLS[i]);
		if (json_is_boolean(v)) {
			json_object_set_new(out, OWNER_BOOLS[i], json_boolean(json_is_true(v)));
		} else if (v && !json_is_null(v)) {
			char *sub = sub_path(errs, field, OWNER_BOOLS[i], 0);
			if (sub)
				type_error(errs, sub, v, "boolean");
			free(sub);
			bad = 1;
		}
	}
	if (bad)
		json_decref(out);
	return bad ? NULL : out;
}

static const char *ref_str(const json_t *ref, const char *key)
{
	return json_string_value(json_object_get(ref, key));
}

/* Go's ParseGroupVersion: "" and "/" are empty, one '/' splits group from
 * version, more than one is unparseable (empty group and version). Sets the
 * group's length and returns the version. */
static const char *split_api_version(const char *av, size_t *glen)
{
	const char *slash = strchr(av, '/');
	*glen = 0;
	if (!slash)
		return av;
	if (strcmp(av, "/") == 0 || strchr(slash + 1, '/'))
		return "";
	*glen = (size_t)(slash - av);
	return slash + 1;
}

static void require_nonempty(const json_t *ref, const char *key, const char *path,
                             const char *detail, kft_field_errors *errs)
{
	char *field = sub_path(errs, path, key, 0);
	if (field)
		kft_field_errors_add(errs, KFT_FIELD_INVALID, field, json_object_get(ref, key),
		                     "%s", detail);
	free(field);
}

static void check_owner_ref(const json_t *ref, const char *path, kft_field_errors *errs)
{
	const char *kind = ref_str(ref, "kind");
	size_t glen;
	const char *version = split_api_version(ref_str(ref, "apiVersion"), &glen);
	if (!*version)
		require_nonempty(ref, "apiVersion", path, "version must not be empty", errs);
	if (!*kind)
		require_nonempty(ref, "kind", path, "must not be empty", errs);
	if (!*ref_str(ref, "name"))
		require_nonempty(ref, "name", path, "must not be empty", errs);
	if (!*ref_str(ref, "uid"))
		require_nonempty(ref, "uid", path, "must not be empty", errs);
	/* Events are the one banned owner: core group, v1. */
	if (glen == 0 && strcmp(version, "v1") == 0 && strcmp(kind, "Event") == 0)
		kft_field_errors_add(errs, KFT_FIELD_INVALID, path, ref,
		                     "/%s, Kind=%s is disallowed from being an owner", version,
		                     kind);
}

/* Every reference normalized (type errors reported), in order. Returns a new
 * array the caller decrefs, or NULL on allocation failure. */
static json_t *normalize_owner_refs(const json_t *refs, const char *path, kft_field_errors *errs)
{
	json_t *all = json_array();
	if (!all) {
		errs->oom = 1;
		return NULL;
	}
	for (size_t i = 0; i < json_array_size(refs); i++) {
		char *field = index_path(errs, path, i);
		json_t *ref =
		        field ? normalize_owner_ref(json_array_get(refs, i), field, errs) : NULL;
		free(field);
		if (ref && json_array_append_new(all, ref))
			errs->oom = 1;
	}
	return all;
}

static void validate_owner_references(const json_t *refs, const char *path, kft_field_errors *errs)
{
	if (!refs || json_is_null(refs))
		return;
	if (!json_is_array(refs)) {
		type_error(errs, path, refs, "array");
		return;
	}
	json_t *all = normalize_owner_refs(refs, path, errs);
	const json_t *first = NULL;
	for (size_t i = 0; i < json_array_size(all); i++) {
		const json_t *ref = json_array_get(all, i);
		check_owner_ref(ref, path, errs);
		if (!json_is_true(json_object_get(ref, "controller")))
			continue;
		if (!first) {
			first = ref;
			continue;
		}
		kft_field_errors_add(errs, KFT_FIELD_INVALID, path, all,
		                     "Only one reference can have Controller set to true. Found "
		                     "\"true\" in references for %s/%s and %s/%s",
		                     ref_str(first, "kind"), ref_str(first, "name"),
		                     ref_str(ref, "kind"), ref_str(ref, "name"));
	}
	json_decref(all);
}

/* ---- the object --------------------------------------------------------- */

static void validate_meta_maps(const json_t *meta, const char *path, kft_field_errors *errs)
{
	char *labels = sub_path(errs, path, "labels", 0);
	char *annotations = sub_path(errs, path, "annotations", 0);
	char *owners = sub_path(errs, path, "ownerReferences", 0);
	char *finalizers = sub_path(errs, path, "finalizers", 0);
	if (labels)
		kft_validate_labels(json_object_get(meta, "labels"), labels, errs);
	if (annotations)
		kft_validate_annotations(json_object_get(meta, "annotations"), annotations, errs);
	if (owners)
		validate_owner_references(json_object_get(meta, "ownerReferences"), owners, errs);
	if (finalizers)
		validate_finalizers(json_object_get(meta, "finalizers"), finalizers, errs);
	free(labels);
	free(annotations);
	free(owners);
	free(finalizers);
}

void kft_validate_object_meta(const json_t *metadata, int namespaced, const char *path,
                              kft_field_errors *errs)
{
	if (!path)
		path = "metadata";
	json_t *empty = NULL;
	if (!metadata || json_is_null(metadata)) {
		metadata = empty = json_object();
		if (!empty) {
			errs->oom = 1;
			return;
		}
	} else if (!json_is_object(metadata)) {
		type_error(errs, path, metadata, "object");
		return;
	}
	validate_names(metadata, path, errs);
	validate_namespace(metadata, namespaced, path, errs);
	validate_generation(metadata, path, errs);
	validate_meta_maps(metadata, path, errs);
	json_decref(empty);
}

/* ---- update ------------------------------------------------------------- */

/* The fields an update may not change; string ones read as "" when absent,
 * the others (timestamps, the grace period) as null. */
static const struct {
	const char *key;
	int is_string;
} IMMUTABLE[] = {
        {"name", 1},
        {"namespace", 1},
        {"uid", 1},
        {"creationTimestamp", 0},
        {"deletionTimestamp", 0},
        {"deletionGracePeriodSeconds", 0},
};

static const json_t *effective(const json_t *meta, const char *key, const json_t *zero)
{
	const json_t *v = meta ? json_object_get(meta, key) : NULL;
	return v && !json_is_null(v) ? v : zero;
}

static void compare_immutable(const json_t *meta, const json_t *old, const char *path,
                              kft_field_errors *errs)
{
	json_t *empty_string = json_string("");
	if (!empty_string) {
		errs->oom = 1;
		return;
	}
	for (size_t i = 0; i < sizeof(IMMUTABLE) / sizeof(IMMUTABLE[0]); i++) {
		const json_t *zero = IMMUTABLE[i].is_string ? empty_string : json_null();
		const json_t *now = effective(meta, IMMUTABLE[i].key, zero);
		if (json_equal(now, effective(old, IMMUTABLE[i].key, zero)))
			continue;
		char *field = sub_path(errs, path, IMMUTABLE[i].key, 0);
		if (field)
			kft_field_errors_add(errs, KFT_FIELD_INVALID, field, now,
			                     KFT_FIELD_IMMUTABLE_MSG);
		free(field);
	}
	json_decref(empty_string);
}

void kft_validate_object_meta_update(const json_t *metadata, const json_t *old_metadata,
                                     const char *path, kft_field_errors *errs)
{
	if (!path)
		path = "metadata";
	if (metadata && json_is_null(metadata))
		metadata = NULL;
	if (old_metadata && json_is_null(old_metadata))
		old_metadata = NULL;
	if (metadata && !json_is_object(metadata)) {
		type_error(errs, path, metadata, "object");
		return;
	}
	if (old_metadata && !json_is_object(old_metadata)) {
		kft_field_errors_add(errs, KFT_FIELD_INTERNAL, path, NULL,
		                     "the stored object's metadata is not an object");
		return;
	}
	compare_immutable(metadata, old_metadata, path, errs);
}
