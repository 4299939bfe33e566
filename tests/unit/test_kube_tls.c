/*
 * test_kube_tls.c - the server name check of the kube client when the API
 * server is addressed by IP (src/kube/client.c), against real TLS servers in
 * this process (kube_server_fixture.h) whose certificates name different
 * hosts.
 *
 * This file is built twice more than the usual pair: over the system
 * libcurl (OpenSSL), and as test_kube_tls_slim over the controller's libcurl
 * (mbedTLS, KFT_TEST_CURL_MBEDTLS), where client.c completes mbedTLS's host
 * check with the iPAddress names it does not match itself.
 *
 * Behaviour pinned, from Go's crypto/x509 (Certificate.VerifyHostname, which
 * client-go's TLS uses): a host that is an IP literal matches only an
 * iPAddress subjectAltName holding that address (net.IP.Equal, so also its
 * IPv4-mapped IPv6 form), never a DNS name or the common name; a name
 * match never excuses an untrusted issuer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kube_server_fixture.h"

#include "kube/kube.h"

static ks_pki g_pki;

static const char *ns_json = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                             "\"metadata\":{\"name\":\"default\"}}";

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

/*
 * Serves a Namespace with a certificate for (cn, san) issued by issuer, and
 * GETs it from a client of https://HOST:PORT trusting the fixture's CA.
 * Returns the client's status; *served is how many requests reached the
 * server (none when the handshake was refused).
 */
static int fetch(const ks_pem *issuer, const char *cn, const char *san, const char *host,
                 int *served, kft_error *err)
{
	static int n;
	char name[32];
	ks_pem pem;
	snprintf(name, sizeof(name), "server-%d", n++);
	assert_int_equal(ks_server_cert(g_pki.dir, issuer, name, cn, san, &pem), 0);
	ks_pki view = g_pki; /* the fixture's CA and client, this server certificate */
	view.server = pem;
	ks_server srv;
	assert_int_equal(ks_start(&srv, &view, 0), 0);
	ks_fallback(&srv, 200, ns_json);

	kft_kube_config *cfg = NULL;
	kft_kube *k = NULL;
	json_t *out = NULL;
	assert_int_equal(kft_kube_config_new(&cfg, NULL), 0);
	assert_true(asprintf(&cfg->server, "https://%s:%d", host, srv.port) > 0);
	cfg->ca_data = strdup(g_pki.ca.cert);
	cfg->token = strdup("tok");
	cfg->max_retries = 0;
	int rc = kft_kube_new(cfg, &k, err);
	if (!rc)
		rc = kft_kube_get(k, kft_gvr_lookup("v1", "Namespace"), NULL, "default", &out, err);
	if (!rc)
		assert_string_equal(json_string_value(json_object_get(
		                            json_object_get(out, "metadata"), "name")),
		                    "default");
	*served = ks_count(&srv);
	json_decref(out);
	kft_kube_free(k);
	kft_kube_config_free(cfg);
	ks_stop(&srv);
	free(pem.cert);
	free(pem.key);
	return rc;
}

static void ip_san_matches_ip_host(void **state)
{
	(void)state;
	kft_error err;
	int served = 0;
	/* the in-cluster shape: the apiserver certificate lists the service IP */
	assert_int_equal(fetch(&g_pki.ca, "kube-apiserver", "DNS:kubernetes.default,IP:127.0.0.1",
	                       "127.0.0.1", &served, &err),
	                 0);
	assert_int_equal(served, 1);
	/* an IP list where the address is not first */
	assert_int_equal(fetch(&g_pki.ca, "kube-apiserver", "IP:10.96.0.1,IP:::1,IP:127.0.0.1",
	                       "127.0.0.1", &served, &err),
	                 0);
	assert_int_equal(served, 1);
}

static void other_ip_is_refused(void **state)
{
	(void)state;
	kft_error err;
	int served = 1;
	int rc = fetch(&g_pki.ca, "kube-apiserver", "DNS:localhost,IP:127.0.0.2", "127.0.0.1",
	               &served, &err);
	assert_int_equal(rc, KFT_EUNAVAILABLE);
	assert_non_null(strstr(err.message, "certificate"));
	assert_int_equal(served, 0);
	/* the same certificate is good for a name it lists: the refusal was
	 * about the address */
	assert_int_equal(fetch(&g_pki.ca, "kube-apiserver", "DNS:localhost,IP:127.0.0.2",
	                       "localhost", &served, &err),
	                 0);
	assert_int_equal(served, 1);
	/* 127.0.0.1 inside a 16-byte address that is not its mapped form */
	rc = fetch(&g_pki.ca, "kube-apiserver", "IP:7f00:1::", "127.0.0.1", &served, &err);
	assert_int_equal(rc, KFT_EUNAVAILABLE);
	assert_non_null(strstr(err.message, "certificate"));
	assert_int_equal(served, 0);
}

static void names_never_match_an_ip_host(void **state)
{
	(void)state;
	kft_error err;
	int served = 1;
	/* a DNS name spelled like the address, and the address as the CN */
	int rc = fetch(&g_pki.ca, "127.0.0.1", "DNS:127.0.0.1,DNS:localhost", "127.0.0.1", &served,
	               &err);
	assert_int_equal(rc, KFT_EUNAVAILABLE);
	assert_non_null(strstr(err.message, "certificate"));
	assert_int_equal(served, 0);
}

static void untrusted_issuer_fails_despite_ip_match(void **state)
{
	(void)state;
	kft_error err;
	int served = 1;
	int rc = fetch(&g_pki.rogue, "kube-apiserver", "IP:127.0.0.1", "127.0.0.1", &served, &err);
	assert_int_equal(rc, KFT_EUNAVAILABLE);
	assert_non_null(strstr(err.message, "certificate"));
	assert_int_equal(served, 0);
}

#ifdef KFT_TEST_CURL_MBEDTLS
/* Go's net.IP.Equal: 127.0.0.1 equals ::ffff:127.0.0.1. OpenSSL compares the
 * bytes, so only the controller's client (mbedTLS plus our check) is held to
 * Go's rule here. */
static void ipv4_mapped_san_matches(void **state)
{
	(void)state;
	kft_error err;
	int served = 0;
	assert_int_equal(fetch(&g_pki.ca, "kube-apiserver", "IP:::ffff:127.0.0.1", "127.0.0.1",
	                       &served, &err),
	                 0);
	assert_int_equal(served, 1);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(ip_san_matches_ip_host),
	        cmocka_unit_test(other_ip_is_refused),
	        cmocka_unit_test(names_never_match_an_ip_host),
	        cmocka_unit_test(untrusted_issuer_fails_despite_ip_match),
#ifdef KFT_TEST_CURL_MBEDTLS
	        cmocka_unit_test(ipv4_mapped_san_matches),
#endif
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
