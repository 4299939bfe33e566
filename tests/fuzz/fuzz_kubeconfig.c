/*
 * fuzz_kubeconfig.c - libFuzzer target for the kubeconfig loader
 * (src/kube/config.c).
 *
 * The input is the text of one kubeconfig. An optional first line
 * "#ctx:NAME" (a YAML comment, so the loader ignores it) names the context
 * to ask for; without it the file's current-context is used.
 *
 * Two ways in must agree: kft_kube_config_load_text on the bytes, and the
 * public kft_kube_config_load on a file holding the same bytes (a memfd, so
 * no file is left behind; both are told the same path, which makes relative
 * paths and messages comparable). Either both fail with the same status and
 * message or both give the same config. A loaded config must have a server
 * and a namespace and only absolute file paths; a failure must leave *out
 * NULL and a message. A difference is a bug, reported by abort() since the
 * fuzzer needs a crash (never in library code). Leaks are LeakSanitizer's.
 *
 * `make fuzz-run FUZZER=fuzz_kubeconfig SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_kubeconfig.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_internal.h"

#define CTX_PREFIX "#ctx:"

#define FUZZ_NAME "fuzz_kubeconfig"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The context named by a leading "#ctx:NAME" line, or NULL. */
static char *context_of(const uint8_t *data, size_t size)
{
	size_t n = strlen(CTX_PREFIX);
	if (size < n || memcmp(data, CTX_PREFIX, n) != 0)
		return NULL;
	const uint8_t *start = data + n, *end = memchr(start, '\n', size - n);
	return strndup((const char *)start, end ? (size_t)(end - start) : size - n);
}

static void same_str(const char *field, const char *a, const char *b)
{
	if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
		fail("text and file loads differ in", field);
}

static void check_loaded(const kft_kube_config *c)
{
	if (!c->server || !*c->server)
		fail("loaded without a server", NULL);
	if (!c->default_namespace || !*c->default_namespace)
		fail("loaded without a namespace", NULL);
	const char *paths[] = {c->ca_file, c->cert_file, c->key_file, c->token_file};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (paths[i] && paths[i][0] != '/')
			fail("a file path was left relative", paths[i]);
}

static void compare(const kft_kube_config *a, const kft_kube_config *b)
{
#define SAME(f) same_str(#f, a->f, b->f)
	SAME(server);
	SAME(tls_server_name);
	SAME(ca_file);
	SAME(ca_data);
	SAME(cert_file);
	SAME(cert_data);
	SAME(key_file);
	SAME(key_data);
	SAME(token);
	SAME(token_file);
	SAME(username);
	SAME(password);
	SAME(proxy_url);
	SAME(default_namespace);
	SAME(user_agent);
#undef SAME
	if (a->insecure != b->insecure || a->qps != b->qps || a->burst != b->burst ||
	    a->max_retries != b->max_retries || a->timeout_ms != b->timeout_ms)
		fail("text and file loads differ in a number", NULL);
}

static void check_failed(int rc, const kft_kube_config *c, const kft_error *err)
{
	if (c)
		fail("a failed load returned a config", err->message);
	if (rc != (int)err->code || !err->message[0])
		fail("a failed load set no matching error", err->message);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > KFT_KUBE_MAX_FILE_BYTES)
		return 0;
	char *context = context_of(data, size);
	const char *path = as_file("kubeconfig", data, size);
	kft_kube_config *from_text = NULL, *from_file = NULL;
	kft_error terr, ferr;
	kft_error_clear(&terr);
	kft_error_clear(&ferr);
	int trc = kft_kube_config_load_text((const char *)data, size, path, context, &from_text,
	                                    &terr);
	int frc = kft_kube_config_load(path, context, &from_file, &ferr);
	if (trc != frc || strcmp(terr.message, ferr.message) != 0)
		fail("text and file loads end differently", terr.message);
	if (trc == 0) {
		check_loaded(from_text);
		compare(from_text, from_file);
	} else {
		check_failed(trc, from_text, &terr);
		check_failed(frc, from_file, &ferr);
	}
	kft_kube_config_free(from_text);
	kft_kube_config_free(from_file);
	free(context);
	return 0;
}
