/*
 * test_fetch_tls.c - an initializer's https:// download (src/local/fetch.c)
 * from a server addressed by IP, against real TLS servers in this process
 * (kube_server_fixture.h) whose certificates name different hosts.
 *
 * Built three times: over the system libcurl (OpenSSL) plain and sanitized,
 * and as test_fetch_tls_slim over the libcurl the CLI links (mbedTLS), where
 * util/curl_tls.c completes mbedTLS's host check; before it, the slim build
 * refused a server whose certificate lists 127.0.0.1 (BADCERT_CN_MISMATCH)
 * and the local tier's initializer-tls case failed.
 *
 * Behaviour pinned, from Go's crypto/x509 (upstream's initializers fetch
 * through Go and Python clients that verify as it does): an IP host matches
 * only an iPAddress subjectAltName holding that address, never a DNS name
 * spelled as the address; an untrusted issuer is refused whatever the names,
 * and the message says it was the certificate and where a private CA goes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kube_server_fixture.h"

#include "local/fetch.h"

static ks_pki g_pki;

static int group_setup(void **state)
{
	(void)state;
	return ks_pki_make(&g_pki);
}

static int group_teardown(void **state)
{
	(void)state;
	ks_pki_free(&g_pki);
	return 0;
}

/* Serves "payload" with a certificate for san issued by issuer and fetches
 * https://127.0.0.1:PORT/data.txt trusting the fixture's CA (ca_file).
 * Returns the fetch's status; the file's text, when it came, in got. */
static int download(const ks_pem *issuer, const char *san, char got[64], kft_error *err)
{
	static int n;
	char name[32], url[96], dest[600];
	ks_pem pem;
	snprintf(name, sizeof(name), "server-%d", n++);
	assert_int_equal(ks_server_cert(g_pki.dir, issuer, name, "file-server", san, &pem), 0);
	ks_pki view = g_pki;
	view.server = pem;
	ks_server srv;
	assert_int_equal(ks_start(&srv, &view, 0), 0);
	ks_fallback(&srv, 200, "payload");
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/data.txt", srv.port);
	snprintf(dest, sizeof(dest), "%s/%s.out", g_pki.dir, name);
	kft_fetch_options opt = {.ca_file = g_pki.ca.cert_path, .connect_timeout_s = 10};
	int rc = kft_fetch_url(url, dest, NULL, NULL, &opt, err);
	got[0] = '\0';
	FILE *f = fopen(dest, "r");
	if (f) {
		size_t len = fread(got, 1, 63, f);
		got[len] = '\0';
		fclose(f);
	}
	ks_stop(&srv);
	free(pem.cert);
	free(pem.key);
	return rc;
}

static void ip_san_matches_ip_host(void **state)
{
	(void)state;
	char got[64];
	kft_error err = {0};
	assert_int_equal(download(&g_pki.ca, "DNS:localhost,IP:127.0.0.1", got, &err), 0);
	assert_string_equal(got, "payload");
}

/* mbedTLS alone compares "127.0.0.1" with the DNS names as strings and
 * would accept this certificate. */
static void dns_name_spelled_as_the_ip_is_refused(void **state)
{
	(void)state;
	char got[64];
	kft_error err = {0};
	assert_int_equal(download(&g_pki.ca, "DNS:127.0.0.1", got, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "certificate"));
	assert_string_equal(got, "");
}

static void other_ip_is_refused(void **state)
{
	(void)state;
	char got[64];
	kft_error err = {0};
	assert_int_equal(download(&g_pki.ca, "IP:127.0.0.2", got, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "certificate"));
}

static void untrusted_issuer_is_refused_and_said(void **state)
{
	(void)state;
	char got[64];
	kft_error err = {0};
	assert_int_equal(download(&g_pki.rogue, "IP:127.0.0.1", got, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "failed to verify the server's certificate"));
	assert_non_null(strstr(err.message, "CURL_CA_BUNDLE"));
	assert_string_equal(got, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(ip_san_matches_ip_host),
	        cmocka_unit_test(dns_name_spelled_as_the_ip_is_refused),
	        cmocka_unit_test(other_ip_is_refused),
	        cmocka_unit_test(untrusted_issuer_is_refused_and_said),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
