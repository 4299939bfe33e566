/*
 * fuzz_controller_config.c - libFuzzer target for the controller manager's
 * Configuration file (src/controller/config.c) and its --feature-gates list.
 *
 * The input is the text of a Configuration file. Its document goes to
 * kft_cm_config_from_json, and the same bytes, put in a memfd (so nothing is
 * left on disk), go to the public kft_cm_config_load; both are told the same
 * path, so they must end with the same status and message and the same
 * configuration. An optional first line "#feature-gates:SPEC" (a YAML
 * comment to the loader) also feeds SPEC to kft_cm_feature_gates_set.
 *
 * A loaded configuration must satisfy what validation promises (ports in
 * range, lease > renew > 0, "leases" lock, at least one worker, ...), and
 * every featureGates key must be a gate's name: upstream reads the map key
 * by key, so a key is never a list of gates. Failures must carry a message.
 * A violation is reported by abort() since the fuzzer needs a crash (never
 * in library code); leaks are LeakSanitizer's.
 *
 * `make fuzz-run FUZZER=fuzz_controller_config SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_controller_config.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "kftrainer/decode.h"

#define GATES_PREFIX   "#feature-gates:"
#define KNOWN_FEATURES (KFT_FEATURE_TRAINJOB_STATUS | KFT_FEATURE_RUNTIME_IN_USE_FINALIZER)

#define FUZZ_NAME "fuzz_controller_config"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(int rc, const kft_error *err)
{
	if (rc >= 0 || rc != (int)err->code || !err->message[0])
		fail("a failure without a matching message", err->message);
}

static void check_gates(const uint8_t *data, size_t size)
{
	size_t n = strlen(GATES_PREFIX);
	if (size < n || memcmp(data, GATES_PREFIX, n) != 0)
		return;
	const uint8_t *end = memchr(data + n, '\n', size - n);
	char *spec = strndup((const char *)data + n, end ? (size_t)(end - data) - n : size - n);
	if (!spec)
		fail("out of memory", NULL);
	unsigned features = 0;
	kft_error err;
	kft_error_clear(&err);
	int rc = kft_cm_feature_gates_set(&features, spec, &err);
	if (rc != 0)
		check_error(rc, &err);
	else if (features & ~KNOWN_FEATURES)
		fail("feature gates set an unknown bit", spec);
	free(spec);
}

static int same_str(const char *a, const char *b)
{
	return (a == NULL) == (b == NULL) && (!a || strcmp(a, b) == 0);
}

static void compare(const kft_cm_config *a, const kft_cm_config *b)
{
	const char *sa[] = {
	        a->metrics_bind_address, a->health_bind_address,   a->readiness_endpoint,
	        a->liveness_endpoint,    a->webhook_host,          a->le_resource_lock,
	        a->le_resource_name,     a->le_resource_namespace, a->cert_webhook_service,
	        a->cert_webhook_secret,  a->tls_min_version};
	const char *sb[] = {
	        b->metrics_bind_address, b->health_bind_address,   b->readiness_endpoint,
	        b->liveness_endpoint,    b->webhook_host,          b->le_resource_lock,
	        b->le_resource_name,     b->le_resource_namespace, b->cert_webhook_service,
	        b->cert_webhook_secret,  b->tls_min_version};
	for (size_t i = 0; i < sizeof(sa) / sizeof(sa[0]); i++)
		if (!same_str(sa[i], sb[i]))
			fail("document and file loads differ in a string", sa[i]);
	if (a->webhook_port != b->webhook_port || a->leader_elect != b->leader_elect ||
	    a->le_lease_ms != b->le_lease_ms || a->le_renew_ms != b->le_renew_ms ||
	    a->le_retry_ms != b->le_retry_ms || a->trainjob_workers != b->trainjob_workers ||
	    a->runtime_workers != b->runtime_workers ||
	    a->cluster_runtime_workers != b->cluster_runtime_workers || a->qps != b->qps ||
	    a->burst != b->burst || a->status_port != b->status_port ||
	    a->status_qps != b->status_qps || a->status_burst != b->status_burst ||
	    a->features != b->features || !json_equal(a->warnings, b->warnings))
		fail("document and file loads differ in a value", NULL);
}

/* What validation and defaulting promise about a loaded configuration. */
static void check_loaded(const kft_cm_config *c)
{
	if (c->webhook_port < 1 || c->webhook_port > 65535 || c->status_port < 1 ||
	    c->status_port > 65535)
		fail("a port out of range was accepted", NULL);
	if (!(c->qps >= 0) || c->burst < 0 || !(c->status_qps >= 0) || c->status_burst < 0)
		fail("a negative rate was accepted", NULL);
	if (c->le_retry_ms <= 0 || c->le_renew_ms <= 0 || c->le_lease_ms <= c->le_renew_ms)
		fail("bad leader election durations were accepted", NULL);
	if (!c->le_resource_lock || strcmp(c->le_resource_lock, "leases") != 0)
		fail("a lock other than leases was accepted", c->le_resource_lock);
	if (c->trainjob_workers < 1 || c->runtime_workers < 1 || c->cluster_runtime_workers < 1)
		fail("fewer than one worker was accepted", NULL);
	if (!c->metrics_bind_address || !c->health_bind_address || !c->readiness_endpoint ||
	    !c->liveness_endpoint || !c->le_resource_name || !*c->le_resource_name)
		fail("a defaulted string is missing", NULL);
	if (c->features & ~KNOWN_FEATURES)
		fail("an unknown feature bit was set", NULL);
	size_t i;
	json_t *w;
	json_array_foreach(c->warnings, i, w) if (!json_is_string(w))
	        fail("a warning is not a string", NULL);
}

static void check_gate_keys(const json_t *doc)
{
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(doc, "featureGates"), k, v)
	{
		if (strcmp(k, "TrainJobStatus") != 0 && strcmp(k, "RuntimeInUseFinalizer") != 0 &&
		    strcmp(k, "AllAlpha") != 0 && strcmp(k, "AllBeta") != 0)
			fail("a featureGates key that is not a gate was accepted", k);
	}
}

/* Loads the document and the file; both must agree. */
static void check_config(const json_t *doc, const char *path)
{
	kft_cm_config a, b;
	kft_error aerr, berr;
	kft_error_clear(&aerr);
	kft_error_clear(&berr);
	if (kft_cm_config_defaults(&a, NULL) != 0 || kft_cm_config_defaults(&b, NULL) != 0)
		fail("defaults failed", NULL);
	int arc = kft_cm_config_from_json(&a, doc, path, &aerr);
	int brc = kft_cm_config_load(&b, path, &berr);
	if (arc != brc || strcmp(aerr.message, berr.message) != 0)
		fail("document and file loads end differently", aerr.message);
	if (arc == 0) {
		check_loaded(&a);
		check_gate_keys(doc);
		compare(&a, &b);
	} else {
		check_error(arc, &aerr);
	}
	kft_cm_config_free(&a);
	kft_cm_config_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_gates(data, size);
	const char *path = as_file("config", data, size);
	kft_doc_list docs = {0};
	if (kft_decode((const char *)data, size, path, &docs, NULL) == 0 && docs.count == 1) {
		check_config(docs.items[0].root, path);
	} else {
		kft_cm_config c;
		kft_error err;
		kft_error_clear(&err);
		if (kft_cm_config_defaults(&c, NULL) != 0)
			fail("defaults failed", NULL);
		int rc = kft_cm_config_load(&c, path, &err);
		if (rc == 0)
			fail("a file that is not one document was loaded", NULL);
		check_error(rc, &err);
		kft_cm_config_free(&c);
	}
	kft_doc_list_free(&docs);
	return 0;
}
