/*
 * test_objectmeta.c - name rules and metadata validation, line for line
 * against the Kubernetes API server.
 *
 * The big table below pins facts from k8s.io/apimachinery v0.36.2. Its inputs
 * are the good and bad values of these upstream tests:
 *
 *   pkg/util/validation/validation_test.go   TestIsDNS1123Label, TestIsDNS1123Subdomain,
 *                                             TestIsDNS1035Label, TestIsQualifiedName,
 *                                             TestIsValidLabelValue, TestIsConfigMapKey
 *   pkg/api/validate/content/kube_test.go    TestIsLabelKey, TestIsLabelValue
 *   pkg/api/validate/content/dns_test.go     TestIsDNS1123Label, TestIsDNS1123Subdomain
 *   pkg/api/validation/objectmeta_test.go    TestValidateObjectMetaNamespaces,
 *                                             TestValidateObjectMetaOwnerReferences,
 *                                             TestValidateFinalizersPreventConflictingFinalizers,
 *                                             TestValidateObjectMetaUpdatePreventsDeletionFieldMutation,
 *                                             TestValidateObjectMetaUpdateIgnoresCreationTimestamp,
 *                                             TestValidateObjectMetaTrimsTrailingDash,
 *                                             TestValidateAnnotations
 *   pkg/api/validation/generic_test.go       TestMaskTrailingDash (through generateName)
 *
 * plus a few boundary values of our own choosing (several problems at once,
 * the environment-variable examples quoted in the message itself). Upstream's
 * tests mostly assert only good/bad; the expected text here is what
 * apimachinery v0.36.2 itself prints for each input (IsDNS1123Label ...,
 * ValidateObjectMetaAccessor with NameIsDNSSubdomain at "metadata", and the
 * immutable-field part of ValidateObjectMetaUpdate), recorded by running it.
 *
 * Notation: "{a*63}" in an input or an expected line stands for 63 'a's, so
 * the length limits can be tested without unreadable literals. An expected
 * value of "" means valid; several messages or error lines are joined by "\n".
 *
 * Kinds: L dns1123 label, S dns1123 subdomain, D dns1035 label, Q qualified
 * name, V label value, E env var name, C ConfigMap key (messages of the
 * kft_is_* predicate); N/M create of a namespaced/cluster-scoped object, U
 * update (new, old) — full kft_field_error_format() lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kftrainer/objectmeta.h"
#include "util/strbuf.h"

#define NL "\n"

/* The long sentences, as the API server prints them (note the double space
 * after each example but the last). */
#define M_LABEL                                                                                    \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "   \
	"and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "   \
	"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define M_SUBDOMAIN                                                                                \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "  \
	"or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "      \
	"regex used for validation is "                                                            \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define M_DNS1035                                                                                  \
	"a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "  \
	"an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "    \
	"'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
#define M_KEY                                                                                      \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "   \
	"an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "      \
	"for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define M_VALUE                                                                                    \
	"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "   \
	"or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "      \
	"'my_value',  or '12345', regex used for validation is "                                   \
	"'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define M_ENV                                                                                      \
	"a valid environment variable name must consist of alphabetic characters, digits, '_', "   \
	"'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  "   \
	"or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
/* apimachinery v0.36.2 IsRelaxedEnvVarName (pods since Kubernetes 1.34) */
#define M_RENV                                                                                     \
	"a valid environment variable name must consist only of printable ASCII characters other " \
	"than '='"
#define M_CMKEY                                                                                    \
	"a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "       \
	"'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "                \
	"'[-._a-zA-Z0-9]+')"

struct meta_case {
	char kind;
	const char *input;
	const char *old; /* U only */
	const char *want;
};

static const struct meta_case CASES[] = {
        {'L', "a", NULL, ""},
        {'L', "a--1--2--b", NULL, ""},
        {'L', "0", NULL, ""},
        {'L', "1--a--b--2", NULL, ""},
        {'L', "{a*63}", NULL, ""},
        {'L', "", NULL, M_LABEL},
        {'L', "A", NULL, M_LABEL},
        {'L', "aBc", NULL, M_LABEL},
        {'L', "-", NULL, M_LABEL},
        {'L', "a-", NULL, M_LABEL},
        {'L', "_", NULL, M_LABEL},
        {'L', "a.b", NULL, "must not contain dots"},
        {'L', "1.2", NULL, "must not contain dots"},
        {'L', " ", NULL, M_LABEL},
        {'L', "a b", NULL, M_LABEL},
        {'L', "{a*64}", NULL, "must be no more than 63 characters"},
        {'L', "{a*30}.{a*40}", NULL,
         "must be no more than 63 characters" NL "must not contain dots"},
        {'L', "A.{a*70}", NULL, "must be no more than 63 characters" NL M_LABEL},
        {'S', "a.b.c.d.e", NULL, ""},
        {'S', "1.2.3.4.5", NULL, ""},
        {'S', "a--1--2--b.1", NULL, ""},
        {'S', "{a*253}", NULL, ""},
        {'S', "", NULL, M_SUBDOMAIN},
        {'S', "a..b", NULL, M_SUBDOMAIN},
        {'S', ".a", NULL, M_SUBDOMAIN},
        {'S', "a.", NULL, M_SUBDOMAIN},
        {'S', "A.a", NULL, M_SUBDOMAIN},
        {'S', "aa.bB.cc.dd.ee", NULL, M_SUBDOMAIN},
        {'S', "a@b", NULL, M_SUBDOMAIN},
        {'S', "a_b", NULL, M_SUBDOMAIN},
        {'S', "a$b", NULL, M_SUBDOMAIN},
        {'S', "{a*254}", NULL, "must be no more than 253 characters"},
        {'S', "{a*254}.", NULL, "must be no more than 253 characters" NL M_SUBDOMAIN},
        {'D', "a", NULL, ""},
        {'D', "a-1", NULL, ""},
        {'D', "a--1--2--b", NULL, ""},
        {'D', "{a*63}", NULL, ""},
        {'D', "0", NULL, M_DNS1035},
        {'D', "1a", NULL, M_DNS1035},
        {'D', "", NULL, M_DNS1035},
        {'D', "A", NULL, M_DNS1035},
        {'D', "-a", NULL, M_DNS1035},
        {'D', "a.b", NULL, M_DNS1035},
        {'D', "{a*64}", NULL, "must be no more than 63 characters"},
        {'Q', "simple", NULL, ""},
        {'Q', "now-with-dashes", NULL, ""},
        {'Q', "1234/5678", NULL, ""},
        {'Q', "1.2.3.4/5678", NULL, ""},
        {'Q', "example.com/Uppercase_Is_OK_123", NULL, ""},
        {'Q', "requests.storage-foo", NULL, ""},
        {'Q', "{a*63}", NULL, ""},
        {'Q', "{a*253}/{b*63}", NULL, ""},
        {'Q', "nospecialchars%^=@", NULL, "name part " M_KEY},
        {'Q', "cantendwithadash-", NULL, "name part " M_KEY},
        {'Q', "-cantstartwithadash-", NULL, "name part " M_KEY},
        {'Q', "only/one/slash", NULL,
         "a valid label key " M_KEY
         " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"},
        {'Q', "Example.com/abc", NULL, "prefix part " M_SUBDOMAIN},
        {'Q', "example_com/abc", NULL, "prefix part " M_SUBDOMAIN},
        {'Q', "example.com/", NULL, "name part must be non-empty" NL "name part " M_KEY},
        {'Q', "/simple", NULL, "prefix part must be non-empty"},
        {'Q', "{a*64}", NULL, "name part must be no more than 63 bytes"},
        {'Q', "{a*254}/abc", NULL, "prefix part must be no more than 253 bytes"},
        {'Q', "", NULL, "name part must be non-empty" NL "name part " M_KEY},
        {'Q', "/", NULL,
         "prefix part must be non-empty" NL "name part must be non-empty" NL "name part " M_KEY},
        {'Q', "{a*254}./-", NULL,
         "prefix part must be no more than 253 bytes" NL "prefix part " M_SUBDOMAIN NL
         "name part " M_KEY},
        {'V', "simple", NULL, ""},
        {'V', "end-with-num-1", NULL, ""},
        {'V', "1234", NULL, ""},
        {'V', "{a*63}", NULL, ""},
        {'V', "", NULL, ""},
        {'V', "nospecialchars%^=@", NULL, M_VALUE},
        {'V', "Tama-nui-te-rā.is.Māori.sun", NULL, M_VALUE},
        {'V', "\\backslashes\\are\\bad", NULL, M_VALUE},
        {'V', "-starts-with-dash", NULL, M_VALUE},
        {'V', "ends-with-dash-", NULL, M_VALUE},
        {'V', ".starts.with.dot", NULL, M_VALUE},
        {'V', "ends.with.dot.", NULL, M_VALUE},
        {'V', "{a*64}", NULL, "must be no more than 63 bytes"},
        {'V', "{a*63}-", NULL, "must be no more than 63 bytes" NL M_VALUE},
        {'E', "my.env-name", NULL, ""},
        {'E', "MY_ENV.NAME", NULL, ""},
        {'E', "MyEnvName1", NULL, ""},
        {'E', "_", NULL, ""},
        {'E', ".a", NULL, ""},
        {'E', "1abc", NULL, M_ENV},
        {'E', "", NULL, M_ENV},
        {'E', ".", NULL, "must not be '.'"},
        {'E', "..", NULL, "must not be '..'"},
        {'E', "..a", NULL, "must not start with '..'"},
        {'E', "a=b", NULL, M_ENV},
        {'R', "1st name.with-space~", NULL, ""},
        {'R', " ", NULL, ""},
        {'R', "a=b", NULL, M_RENV},
        {'R', "tab\there", NULL, M_RENV},
        {'R', "del\x7f", NULL, M_RENV},
        {'R', "caf\xc3\xa9", NULL, M_RENV},
        {'R', "", NULL, "environment variable name must be non-empty"},
        {'C', "a", NULL, ""},
        {'C', "good", NULL, ""},
        {'C', "still.good", NULL, ""},
        {'C', ".so.is.this", NULL, ""},
        {'C', "THIS_IS_GOOD", NULL, ""},
        {'C', "so_is_this_17", NULL, ""},
        {'C', ".", NULL, "must not be '.'"},
        {'C', "..", NULL, "must not be '..'"},
        {'C', "..bad", NULL, "must not start with '..'"},
        {'C', "b*d", NULL, M_CMKEY},
        {'C', "bad!&bad", NULL, M_CMKEY},
        {'C', "", NULL, M_CMKEY},
        {'C', "{a*254}", NULL, "must be no more than 253 characters"},
        {'C', "..{a*300}", NULL,
         "must be no more than 253 characters" NL "must not start with '..'"},
        {'N', "{\"name\":\"test\",\"namespace\":\"default\"}", NULL, ""},
        {'N', "{\"name\":\"test\",\"namespace\":\"foo.bar\"}", NULL,
         "metadata.namespace: Invalid value: \"foo.bar\": must not contain dots"},
        {'N', "{\"name\":\"test\"}", NULL, "metadata.namespace: Required value"},
        {'N', "{\"name\":\"test\",\"namespace\":\"Default\"}", NULL,
         "metadata.namespace: Invalid value: \"Default\": " M_LABEL},
        {'N', "{\"name\":\"test\",\"namespace\":\"A{a*63}\"}", NULL,
         "metadata.namespace: Invalid value: \"A{a*63}\": must be no more than 63 characters" NL
         "metadata.namespace: Invalid value: \"A{a*63}\": " M_LABEL},
        {'M', "{\"name\":\"test\",\"namespace\":\"x\"}", NULL,
         "metadata.namespace: Forbidden: not allowed on this type"},
        {'M', "{}", NULL, "metadata.name: Required value: name or generateName is required"},
        {'M', "{\"generateName\":\"foo-\"}", NULL,
         "metadata.name: Required value: name or generateName is required"},
        {'M', "{\"generateName\":\"foo-\",\"name\":\"test\"}", NULL, ""},
        {'M', "{\"generateName\":\"Foo-\",\"name\":\"test\"}", NULL,
         "metadata.generateName: Invalid value: \"Foo-\": " M_SUBDOMAIN},
        {'M', "{\"generateName\":\"-\",\"name\":\"test\"}", NULL,
         "metadata.generateName: Invalid value: \"-\": " M_SUBDOMAIN},
        {'M', "{\"generateName\":\"ab-.\",\"name\":\"test\"}", NULL,
         "metadata.generateName: Invalid value: \"ab-.\": " M_SUBDOMAIN},
        {'M', "{\"name\":\"My_Name\"}", NULL,
         "metadata.name: Invalid value: \"My_Name\": " M_SUBDOMAIN},
        {'M', "{\"name\":\"{a*254}\"}", NULL,
         "metadata.name: Invalid value: \"{a*254}\": must be no more than 253 characters"},
        {'M', "{\"name\":\"{a*253}\"}", NULL, ""},
        {'M', "{\"name\":\"test\",\"generation\":-1}", NULL,
         "metadata.generation: Invalid value: -1: must be greater than or equal to 0"},
        {'M', "{\"name\":\"test\",\"labels\":{\"only/one/slash\":\"bar\"}}", NULL,
         "metadata.labels: Invalid value: \"only/one/slash\": a valid label key " M_KEY
         " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"},
        {'M', "{\"name\":\"test\",\"labels\":{\"key\":\"-bad-\"}}", NULL,
         "metadata.labels: Invalid value: \"-bad-\": " M_VALUE},
        {'M', "{\"name\":\"test\",\"labels\":{\"a/b/c\":\"-\"}}", NULL,
         "metadata.labels: Invalid value: \"a/b/c\": a valid label key " M_KEY
         " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')" NL
         "metadata.labels: Invalid value: \"-\": " M_VALUE},
        {'M', "{\"name\":\"test\",\"labels\":{\"Example.com/abc\":\"x\"}}", NULL,
         "metadata.labels: Invalid value: \"Example.com/abc\": prefix part " M_SUBDOMAIN},
        {'M', "{\"name\":\"test\",\"labels\":{\"example.com/{b*64}\":\"{c*64}\"}}", NULL,
         "metadata.labels: Invalid value: \"example.com/{b*64}\": name part must be no more than "
         "63 bytes" NL "metadata.labels: Invalid value: \"{c*64}\": must be no more than 63 bytes"},
        {'M', "{\"name\":\"test\",\"annotations\":{\"nospecialchars^=@\":\"bar\"}}", NULL,
         "metadata.annotations: Invalid value: \"nospecialchars^=@\": name part " M_KEY},
        {'M', "{\"name\":\"test\",\"annotations\":{\"cantendwithadash-\":\"bar\"}}", NULL,
         "metadata.annotations: Invalid value: \"cantendwithadash-\": name part " M_KEY},
        {'M', "{\"name\":\"test\",\"annotations\":{\"only/one/slash\":\"bar\"}}", NULL,
         "metadata.annotations: Invalid value: \"only/one/slash\": a valid label key " M_KEY
         " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"},
        {'M', "{\"name\":\"test\",\"annotations\":{\"{a*254}\":\"bar\"}}", NULL,
         "metadata.annotations: Invalid value: \"{a*254}\": name part must be no more than 63 "
         "bytes"},
        {'M',
         "{\"name\":\"test\",\"annotations\":{\"UpperCase123\":\"bar\",\"Example.com/"
         "ABC\":\"x\",\"1.2.3.4/5678\":\"bar\"}}",
         NULL, ""},
        {'M', "{\"name\":\"test\",\"annotations\":{\"a\":\"{b*262143}\"}}", NULL, ""},
        {'M', "{\"name\":\"test\",\"annotations\":{\"a\":\"{b*131071}\",\"c\":\"{d*131071}\"}}",
         NULL, ""},
        {'M', "{\"name\":\"test\",\"annotations\":{\"a\":\"{b*262144}\"}}", NULL,
         "metadata.annotations: Too long: may not be more than 262144 bytes"},
        {'M', "{\"name\":\"test\",\"annotations\":{\"a\":\"{b*131072}\",\"c\":\"{d*131072}\"}}",
         NULL, "metadata.annotations: Too long: may not be more than 262144 bytes"},
        {'M',
         "{\"name\":\"test\",\"ownerReferences\":[{\"apiVersion\":\"customresourceVersion\","
         "\"kind\":\"customresourceKind\",\"name\":\"name\",\"uid\":\"1\"}]}",
         NULL, ""},
        {'M',
         "{\"name\":\"test\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Event\","
         "\"name\":\"name\",\"uid\":\"1\"}]}",
         NULL,
         "metadata.ownerReferences: Invalid value: "
         "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"name\",\"uid\":\"1\"}: /v1, "
         "Kind=Event is disallowed from being an owner"},
        {'M',
         "{\"name\":\"test\",\"ownerReferences\":[{\"apiVersion\":\"v\",\"kind\":\"K\",\"name\":"
         "\"n\",\"uid\":\"1\",\"controller\":false},{\"apiVersion\":\"v\",\"kind\":\"K\",\"name\":"
         "\"n\",\"uid\":\"2\",\"controller\":true},{\"apiVersion\":\"v\",\"kind\":\"K\",\"name\":"
         "\"n\",\"uid\":\"3\",\"controller\":false},{\"apiVersion\":\"v\",\"kind\":\"K\",\"name\":"
         "\"n\",\"uid\":\"4\"}]}",
         NULL, ""},
        {'M',
         "{\"name\":\"test\",\"ownerReferences\":[{\"apiVersion\":\"customresourceVersion\","
         "\"kind\":\"customresourceKind1\",\"name\":\"name\",\"uid\":\"1\",\"controller\":false},{"
         "\"apiVersion\":\"customresourceVersion\",\"kind\":\"customresourceKind2\",\"name\":"
         "\"name\",\"uid\":\"2\",\"controller\":true},{\"apiVersion\":\"customresourceVersion\","
         "\"kind\":\"customresourceKind3\",\"name\":\"name\",\"uid\":\"3\",\"controller\":true},{"
         "\"apiVersion\":\"customresourceVersion\",\"kind\":\"customresourceKind4\",\"name\":"
         "\"name\",\"uid\":\"4\"}]}",
         NULL,
         "metadata.ownerReferences: Invalid value: "
         "[{\"apiVersion\":\"customresourceVersion\",\"kind\":\"customresourceKind1\",\"name\":"
         "\"name\",\"uid\":\"1\",\"controller\":false},{\"apiVersion\":\"customresourceVersion\","
         "\"kind\":\"customresourceKind2\",\"name\":\"name\",\"uid\":\"2\",\"controller\":true},{"
         "\"apiVersion\":\"customresourceVersion\",\"kind\":\"customresourceKind3\",\"name\":"
         "\"name\",\"uid\":\"3\",\"controller\":true},{\"apiVersion\":\"customresourceVersion\","
         "\"kind\":\"customresourceKind4\",\"name\":\"name\",\"uid\":\"4\"}]: Only one reference "
         "can have Controller set to true. Found \"true\" in references for "
         "customresourceKind2/name and customresourceKind3/name"},
        {'M', "{\"name\":\"test\",\"ownerReferences\":[{}]}", NULL,
         "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty" NL
         "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty" NL
         "metadata.ownerReferences.name: Invalid value: \"\": must not be empty" NL
         "metadata.ownerReferences.uid: Invalid value: \"\": must not be empty"},
        {'M',
         "{\"name\":\"test\",\"ownerReferences\":[{\"apiVersion\":\"apps/"
         "\",\"kind\":\"X\",\"name\":\"n\",\"uid\":\"u\"},{\"apiVersion\":\"a/b/"
         "c\",\"kind\":\"X\",\"name\":\"n\",\"uid\":\"u\",\"blockOwnerDeletion\":true},{"
         "\"apiVersion\":\"/"
         "v1\",\"kind\":\"Event\",\"name\":\"n\",\"uid\":\"u\",\"controller\":true}]}",
         NULL,
         "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be "
         "empty" NL "metadata.ownerReferences.apiVersion: Invalid value: \"a/b/c\": version must "
         "not be empty" NL "metadata.ownerReferences: Invalid value: "
         "{\"apiVersion\":\"/"
         "v1\",\"kind\":\"Event\",\"name\":\"n\",\"uid\":\"u\",\"controller\":true}: /v1, "
         "Kind=Event is disallowed from being an owner"},
        {'M', "{\"name\":\"test\",\"finalizers\":[\"orphan\",\"foregroundDeletion\"]}", NULL,
         "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer "
         "orphan and foregroundDeletion cannot be both set"},
        {'M', "{\"name\":\"test\",\"finalizers\":[\"x/a\",\"kubernetes\"]}", NULL, ""},
        {'M', "{\"name\":\"test\",\"finalizers\":[\"a/b/c\",\"-x\"]}", NULL,
         "metadata.finalizers: Invalid value: \"a/b/c\": a valid label key " M_KEY
         " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')" NL
         "metadata.finalizers: Invalid value: \"-x\": name part " M_KEY},
        {'M',
         "{\"name\":\"Bad_Name\",\"namespace\":\"ns\",\"generation\":-2,\"labels\":{\"-k\":\"v\"},"
         "\"annotations\":{\"-a\":\"v\"},\"ownerReferences\":[{\"kind\":\"K\",\"name\":\"n\","
         "\"uid\":\"u\"}],\"finalizers\":[\"-f\"]}",
         NULL,
         "metadata.name: Invalid value: \"Bad_Name\": " M_SUBDOMAIN NL
         "metadata.namespace: Forbidden: not allowed on this type" NL
         "metadata.generation: Invalid value: -2: must be greater than or equal to 0" NL
         "metadata.labels: Invalid value: \"-k\": name part " M_KEY NL
         "metadata.annotations: Invalid value: \"-a\": name part " M_KEY NL
         "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty" NL
         "metadata.finalizers: Invalid value: \"-f\": name part " M_KEY},
        {'M', "{\"generateName\":\"a.-\",\"name\":\"test\"}", NULL, ""},
        {'M', "{\"generateName\":\"x.-.\",\"name\":\"test\"}", NULL,
         "metadata.generateName: Invalid value: \"x.-.\": " M_SUBDOMAIN},
        {'U', "{\"name\":\"test\",\"resourceVersion\":\"1\"}",
         "{\"name\":\"test\",\"resourceVersion\":\"1\"}", ""},
        {'U',
         "{\"name\":\"test\",\"resourceVersion\":\"1\",\"deletionTimestamp\":\"1970-01-01T00:16:"
         "40Z\"}",
         "{\"name\":\"test\",\"resourceVersion\":\"1\"}",
         "metadata.deletionTimestamp: Invalid value: \"1970-01-01T00:16:40Z\": field is immutable"},
        {'U', "{\"name\":\"test\",\"resourceVersion\":\"1\"}",
         "{\"name\":\"test\",\"resourceVersion\":\"1\",\"deletionTimestamp\":\"1970-01-01T00:16:"
         "40Z\"}",
         "metadata.deletionTimestamp: Invalid value: null: field is immutable"},
        {'U',
         "{\"name\":\"test\",\"resourceVersion\":\"1\",\"deletionTimestamp\":\"1970-01-01T00:33:"
         "20Z\"}",
         "{\"name\":\"test\",\"resourceVersion\":\"1\",\"deletionTimestamp\":\"1970-01-01T00:16:"
         "40Z\"}",
         "metadata.deletionTimestamp: Invalid value: \"1970-01-01T00:33:20Z\": field is immutable"},
        {'U', "{\"name\":\"test\",\"resourceVersion\":\"1\",\"deletionGracePeriodSeconds\":30}",
         "{\"name\":\"test\",\"resourceVersion\":\"1\"}",
         "metadata.deletionGracePeriodSeconds: Invalid value: 30: field is immutable"},
        {'U', "{\"name\":\"test\",\"resourceVersion\":\"1\"}",
         "{\"name\":\"test\",\"resourceVersion\":\"1\",\"deletionGracePeriodSeconds\":30}",
         "metadata.deletionGracePeriodSeconds: Invalid value: null: field is immutable"},
        {'U', "{\"name\":\"test\",\"resourceVersion\":\"1\",\"deletionGracePeriodSeconds\":40}",
         "{\"name\":\"test\",\"resourceVersion\":\"1\",\"deletionGracePeriodSeconds\":30}",
         "metadata.deletionGracePeriodSeconds: Invalid value: 40: field is immutable"},
        {'U', "{\"name\":\"test\",\"resourceVersion\":\"1\"}",
         "{\"name\":\"test\",\"resourceVersion\":\"1\",\"creationTimestamp\":\"1970-01-01T00:00:"
         "10Z\"}",
         "metadata.creationTimestamp: Invalid value: null: field is immutable"},
        {'U',
         "{\"name\":\"test\",\"resourceVersion\":\"1\",\"creationTimestamp\":\"1970-01-01T00:00:"
         "10Z\"}",
         "{\"name\":\"test\",\"resourceVersion\":\"1\"}",
         "metadata.creationTimestamp: Invalid value: \"1970-01-01T00:00:10Z\": field is immutable"},
        {'U',
         "{\"name\":\"test\",\"resourceVersion\":\"1\",\"creationTimestamp\":\"1970-01-01T00:00:"
         "10Z\"}",
         "{\"name\":\"test\",\"resourceVersion\":\"1\",\"creationTimestamp\":\"1970-01-01T00:00:"
         "11Z\"}",
         "metadata.creationTimestamp: Invalid value: \"1970-01-01T00:00:10Z\": field is immutable"},
        {'U', "{\"name\":\"other\",\"namespace\":\"b\",\"uid\":\"2\",\"resourceVersion\":\"1\"}",
         "{\"name\":\"test\",\"namespace\":\"a\",\"uid\":\"1\",\"resourceVersion\":\"1\"}",
         "metadata.name: Invalid value: \"other\": field is immutable" NL
         "metadata.namespace: Invalid value: \"b\": field is immutable" NL
         "metadata.uid: Invalid value: \"2\": field is immutable"},
        {'U', "{\"resourceVersion\":\"1\"}", "{\"name\":\"test\",\"resourceVersion\":\"1\"}",
         "metadata.name: Invalid value: \"\": field is immutable"},
};

/* Expands "{c*N}" into N copies of c; everything else is copied. Caller frees. */
static char *expand(const char *s)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	while (*s) {
		char c;
		int n, used = 0;
		if (s[0] == '{' && sscanf(s, "{%c*%d}%n", &c, &n, &used) == 2 && used > 0) {
			for (int i = 0; i < n; i++)
				kft_strbuf_putc(&b, c);
			s += used;
		} else {
			kft_strbuf_putc(&b, *s++);
		}
	}
	char *out = kft_strbuf_detach(&b);
	assert_non_null(out);
	return out;
}

/* Every formatted error line, joined by "\n". Caller frees. */
static char *format_errors(const kft_field_errors *errs)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	for (size_t i = 0; i < errs->count; i++) {
		char *line = kft_field_error_format(&errs->items[i]);
		assert_non_null(line);
		kft_strbuf_printf(&b, "%s%s", i ? "\n" : "", line);
		free(line);
	}
	char *out = kft_strbuf_detach(&b);
	assert_non_null(out);
	return out;
}

static char *join_messages(const json_t *msgs)
{
	kft_strbuf b;
	kft_strbuf_init(&b);
	for (size_t i = 0; i < json_array_size(msgs); i++)
		kft_strbuf_printf(&b, "%s%s", i ? "\n" : "",
		                  json_string_value(json_array_get(msgs, i)));
	char *out = kft_strbuf_detach(&b);
	assert_non_null(out);
	return out;
}

static int (*predicate_for(char kind))(const char *, json_t *)
{
	switch (kind) {
	case 'L': return kft_is_dns1123_label;
	case 'S': return kft_is_dns1123_subdomain;
	case 'D': return kft_is_dns1035_label;
	case 'Q': return kft_is_qualified_name;
	case 'V': return kft_is_valid_label_value;
	case 'E': return kft_is_env_var_name;
	case 'R': return kft_is_relaxed_env_var_name;
	case 'C': return kft_is_config_map_key;
	}
	return NULL;
}

/* Runs a predicate case; also checks the verdict agrees with the messages
 * and does not depend on whether messages were asked for. */
static char *run_predicate(char kind, const char *input)
{
	int (*is)(const char *, json_t *) = predicate_for(kind);
	assert_non_null(is);
	char *s = expand(input);
	json_t *msgs = json_array();
	int ok = is(s, msgs);
	assert_int_equal(ok, json_array_size(msgs) == 0);
	assert_int_equal(is(s, NULL), ok);
	char *got = join_messages(msgs);
	json_decref(msgs);
	free(s);
	return got;
}

static json_t *load(const char *text)
{
	char *expanded = expand(text);
	json_error_t jerr;
	json_t *v = json_loads(expanded, JSON_DECODE_ANY, &jerr);
	free(expanded);
	if (!v)
		fail_msg("bad test JSON: %s", jerr.text);
	return v;
}

static char *run_meta(const struct meta_case *c)
{
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	json_t *meta = load(c->input);
	if (c->kind == 'U') {
		json_t *old = load(c->old);
		kft_validate_object_meta_update(meta, old, "metadata", &errs);
		json_decref(old);
	} else {
		kft_validate_object_meta(meta, c->kind == 'N', "metadata", &errs);
	}
	json_decref(meta);
	assert_false(errs.oom);
	char *got = format_errors(&errs);
	kft_field_errors_free(&errs);
	return got;
}

static void test_upstream_table(void **state)
{
	(void)state;
	size_t failures = 0;
	for (size_t i = 0; i < sizeof(CASES) / sizeof(CASES[0]); i++) {
		const struct meta_case *c = &CASES[i];
		char *want = expand(c->want);
		char *got = strchr("MNU", c->kind) ? run_meta(c) : run_predicate(c->kind, c->input);
		if (strcmp(got, want) != 0) {
			print_error("case %zu (%c %.80s)\n  want: %s\n   got: %s\n", i, c->kind,
			            c->input, want, got);
			failures++;
		}
		free(want);
		free(got);
	}
	assert_int_equal(failures, 0);
}

/* ---- our own behaviour: argument handling and wrongly typed input -------- */

static void test_predicate_arguments(void **state)
{
	(void)state;
	assert_int_equal(kft_is_dns1123_label("abc", NULL), 1);
	assert_int_equal(kft_is_dns1123_label(NULL, NULL), 0); /* NULL reads as "" */
	assert_int_equal(kft_is_valid_label_value(NULL, NULL), 1);
	json_t *not_array = json_object();
	assert_int_equal(kft_is_qualified_name("-", not_array), 0);
	assert_int_equal(json_object_size(not_array), 0);
	json_decref(not_array);
	/* Messages accumulate after what the caller already had. */
	json_t *msgs = json_pack("[s]", "earlier");
	assert_int_equal(kft_is_dns1035_label("9", msgs), 0);
	assert_int_equal(json_array_size(msgs), 2);
	assert_string_equal(json_string_value(json_array_get(msgs, 1)), M_DNS1035);
	json_decref(msgs);
}

/* Wrong JSON types are reported in the schema validator's words; these lines
 * are ours (the API server would fail earlier, while decoding). */
static const struct meta_case TYPE_CASES[] = {
        {'M', "\"x\"", NULL,
         "metadata: Invalid value: \"string\": metadata in body must be of type object: "
         "\"string\""},
        {'M', "{\"name\":5}", NULL,
         "metadata.name: Invalid value: \"integer\": metadata.name in body must be of type string: "
         "\"integer\""},
        {'N', "{\"name\":\"a\",\"namespace\":true}", NULL,
         "metadata.namespace: Invalid value: \"boolean\": metadata.namespace in body must be of "
         "type string: \"boolean\""},
        {'M', "{\"name\":\"a\",\"generation\":1.5}", NULL,
         "metadata.generation: Invalid value: \"number\": metadata.generation in body must be of "
         "type integer: \"number\""},
        {'M', "{\"name\":\"a\",\"labels\":[]}", NULL,
         "metadata.labels: Invalid value: \"array\": metadata.labels in body must be of type "
         "object: \"array\""},
        {'M', "{\"name\":\"a\",\"labels\":{\"k\":1},\"annotations\":{\"k\":null}}", NULL,
         "metadata.labels[k]: Invalid value: \"integer\": metadata.labels[k] in body must be of "
         "type string: \"integer\"" NL
         "metadata.annotations[k]: Invalid value: \"null\": metadata.annotations[k] in body must "
         "be of type string: \"null\""},
        {'M', "{\"name\":\"a\",\"finalizers\":[\"ok\",7],\"ownerReferences\":{}}", NULL,
         "metadata.ownerReferences: Invalid value: \"object\": metadata.ownerReferences in body "
         "must be of type array: \"object\"" NL
         "metadata.finalizers[1]: Invalid value: \"integer\": metadata.finalizers[1] in body must "
         "be of type string: \"integer\""},
        {'M', "{\"name\":\"a\",\"ownerReferences\":[1,{\"kind\":2,\"controller\":\"yes\"}]}", NULL,
         "metadata.ownerReferences[0]: Invalid value: \"integer\": metadata.ownerReferences[0] in "
         "body must be of type object: \"integer\"" NL
         "metadata.ownerReferences[1].kind: Invalid value: \"integer\": "
         "metadata.ownerReferences[1].kind in body must be of type string: \"integer\"" NL
         "metadata.ownerReferences[1].controller: Invalid value: \"string\": "
         "metadata.ownerReferences[1].controller in body must be of type boolean: \"string\""},
        /* null is Go's zero value, never an error */
        {'M', "{\"name\":\"a\",\"labels\":null,\"finalizers\":null,\"namespace\":null}", NULL, ""},
        {'M', "null", NULL, "metadata.name: Required value: name or generateName is required"},
        {'U', "[]", "{}",
         "metadata: Invalid value: \"array\": metadata in body must be of type object: \"array\""},
        {'U', "{}", "3", "metadata: Internal error: the stored object's metadata is not an object"},
        {'U', "null", "{\"uid\":\"x\"}", "metadata.uid: Invalid value: \"\": field is immutable"},
};

static void test_type_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(TYPE_CASES) / sizeof(TYPE_CASES[0]); i++) {
		char *got = run_meta(&TYPE_CASES[i]);
		if (strcmp(got, TYPE_CASES[i].want) != 0)
			print_error("type case %zu\n", i);
		assert_string_equal(got, TYPE_CASES[i].want);
		free(got);
	}
}

static void test_null_metadata_and_default_path(void **state)
{
	(void)state;
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_validate_object_meta(NULL, 1, NULL, &errs);
	char *got = format_errors(&errs);
	assert_string_equal(got,
	                    "metadata.name: Required value: name or generateName is required" NL
	                    "metadata.namespace: Required value");
	free(got);
	kft_field_errors_free(&errs);

	/* A nested object's metadata, e.g. a pod template's. */
	json_t *m = json_pack("{s:{s:s}}", "labels", "-", "v");
	kft_validate_labels(json_object_get(m, "labels"), "spec.template.metadata.labels", &errs);
	kft_validate_annotations(json_object_get(m, "labels"), NULL, &errs);
	got = format_errors(&errs);
	assert_string_equal(
	        got, "spec.template.metadata.labels: Invalid value: \"-\": name part " M_KEY NL
	             "metadata.annotations: Invalid value: \"-\": name part " M_KEY);
	free(got);
	kft_field_errors_free(&errs);
	kft_validate_labels(NULL, NULL, &errs);
	kft_validate_annotations(NULL, NULL, &errs);
	assert_int_equal(errs.count, 0);
	json_decref(m);
}

/* Bytes no JSON text can smuggle past the scanners: NUL and non-ASCII. */
static void test_hostile_bytes(void **state)
{
	(void)state;
	json_error_t jerr;
	json_t *m = json_loads("{\"name\":\"a\",\"labels\":{\"k\":\"a\\u0000b\"}}", JSON_ALLOW_NUL,
	                       &jerr);
	assert_non_null(m);
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_validate_object_meta(m, 0, "metadata", &errs);
	assert_int_equal(errs.count, 1);
	assert_string_equal(errs.items[0].field, "metadata.labels");
	assert_string_equal(errs.items[0].detail, M_VALUE);
	kft_field_errors_free(&errs);
	json_decref(m);

	assert_int_equal(kft_is_dns1123_subdomain("\xff.example.com", NULL), 0);
	assert_int_equal(kft_is_qualified_name("example.com/\xc3\xa9t\xc3\xa9", NULL), 0);
	assert_int_equal(kft_is_config_map_key("a\x7f", NULL), 0);
}

/* A huge key is scanned, not copied around or recursed into, and still gives
 * exactly the upstream messages. */
static void test_huge_values(void **state)
{
	(void)state;
	size_t n = 1u << 20;
	char *big = malloc(n + 1);
	assert_non_null(big);
	memset(big, 'a', n);
	big[n] = '\0';
	json_t *msgs = json_array();
	assert_int_equal(kft_is_qualified_name(big, msgs), 0);
	char *got = join_messages(msgs);
	assert_string_equal(got, "name part must be no more than 63 bytes");
	free(got);
	json_decref(msgs);
	big[n / 2] = '/';
	assert_int_equal(kft_is_qualified_name(big, NULL), 0);
	assert_int_equal(kft_is_env_var_name(big, NULL), 0);
	big[n / 2] = 'a';
	assert_int_equal(kft_is_env_var_name(big, NULL), 1); /* no length limit upstream */
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_upstream_table),
	        cmocka_unit_test(test_predicate_arguments),
	        cmocka_unit_test(test_type_errors),
	        cmocka_unit_test(test_null_metadata_and_default_path),
	        cmocka_unit_test(test_hostile_bytes),
	        cmocka_unit_test(test_huge_values),
	};
	return cmocka_run_group_tests_name("objectmeta", tests, NULL, NULL);
}
