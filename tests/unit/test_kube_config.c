/*
 * test_kube_config.c - kubeconfig and in-cluster configuration, TLS trust and
 * authentication (src/kube/config.c, src/kube/client.c), against a real TLS
 * server in this process (kube_server_fixture.h).
 *
 * Behaviour pinned, from client-go v0.36 (tools/clientcmd, rest):
 * - *-data fields are base64 PEM; file paths are relative to the kubeconfig
 *   file that names them (clientcmd ResolvePaths);
 * - $KUBECONFIG lists files that merge with the first definition winning and
 *   missing files skipped (clientcmd loader.go);
 * - the context's namespace is the default namespace, "default" otherwise;
 * - a configured CA is the only trust root; insecure-skip-tls-verify skips
 *   verification; tls-server-name is the name checked against the cert;
 * - tokens go as "Authorization: Bearer"; a token file is re-read (and we
 *   re-read it at once on 401);
 * - in-cluster: KUBERNETES_SERVICE_HOST/PORT and the service-account token,
 *   ca.crt and namespace files (rest.InClusterConfig).
 * Exec/auth-provider plugins are ours to refuse: the error names the user.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kube_server_fixture.h"

#include "kube/kube.h"

static ks_pki g_pki;
static ks_server g_srv;      /* plain TLS, no client certificate needed */
static ks_server g_mtls_srv; /* requires a client certificate */

static const char *ns_json = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                             "\"metadata\":{\"name\":\"default\"}}";

static int group_setup(void **state)
{
	(void)state;
	if (ks_pki_make(&g_pki) || ks_start(&g_srv, &g_pki, 0) || ks_start(&g_mtls_srv, &g_pki, 1))
		return -1;
	unsetenv("KUBECONFIG");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	ks_stop(&g_srv);
	ks_stop(&g_mtls_srv);
	ks_pki_free(&g_pki);
	return 0;
}

static int each_setup(void **state)
{
	(void)state;
	ks_reset(&g_srv);
	ks_reset(&g_mtls_srv);
	unsetenv("KUBECONFIG");
	return 0;
}

static char *b64(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(4 * ((n + 2) / 3) + 1);
	assert_non_null(out);
	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
	return out;
}

/* Writes a kubeconfig into the test directory; returns its path (static). */
static const char *write_kc(const char *name, const char *fmt, ...)
{
	static char path[4][600];
	static int which;
	char *text = NULL;
	va_list ap;
	va_start(ap, fmt);
	assert_true(vasprintf(&text, fmt, ap) >= 0);
	va_end(ap);
	char *p = path[which++ % 4];
	snprintf(p, 600, "%s/%s", g_pki.dir, name);
	assert_int_equal(ks_write(p, text), 0);
	free(text);
	return p;
}

/* A GET of the default Namespace through a client made from cfg. */
static int probe(const kft_kube_config *cfg, kft_error *err)
{
	kft_kube *k = NULL;
	json_t *out = NULL;
	int rc = kft_kube_new(cfg, &k, err);
	if (rc)
		return rc;
	rc = kft_kube_get(k, kft_gvr_lookup("v1", "Namespace"), NULL, "default", &out, err);
	json_decref(out);
	kft_kube_free(k);
	return rc;
}

static void inline_data_and_client_cert(void **state)
{
	(void)state;
	char *ca = b64(g_pki.ca.cert), *crt = b64(g_pki.client.cert), *key = b64(g_pki.client.key);
	const char *path = write_kc("inline.yaml",
	                            "apiVersion: v1\nkind: Config\n"
	                            "clusters:\n- name: c\n  cluster:\n"
	                            "    server: https://127.0.0.1:%d\n"
	                            "    certificate-authority-data: %s\n"
	                            "users:\n- name: u\n  user:\n"
	                            "    client-certificate-data: %s\n"
	                            "    client-key-data: %s\n"
	                            "contexts:\n- name: ctx\n  context: {cluster: c, user: u, "
	                            "namespace: team-a}\n"
	                            "current-context: ctx\n",
	                            g_mtls_srv.port, ca, crt, key);
	free(ca);
	free(crt);
	free(key);
	kft_kube_config *cfg = NULL;
	kft_error err;
	assert_int_equal(kft_kube_config_load(path, NULL, &cfg, &err), 0);
	assert_string_equal(cfg->ca_data, g_pki.ca.cert);
	assert_string_equal(cfg->cert_data, g_pki.client.cert);
	assert_string_equal(cfg->key_data, g_pki.client.key);
	assert_string_equal(cfg->default_namespace, "team-a");
	ks_push_body(&g_mtls_srv, 200, ns_json);
	int rc = probe(cfg, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(ks_req(&g_mtls_srv, -1)->client_cert, 1);
	assert_string_equal(ks_req(&g_mtls_srv, -1)->path, "/api/v1/namespaces/default");
	kft_kube_config_free(cfg);
}

static void missing_client_cert_is_denied(void **state)
{
	(void)state;
	kft_kube_config *cfg = NULL;
	kft_error err;
	assert_int_equal(kft_kube_config_new(&cfg, NULL), 0);
	assert_int_equal(asprintf(&cfg->server, "https://127.0.0.1:%d", g_mtls_srv.port) > 0, 1);
	cfg->ca_file = strdup(g_pki.ca.cert_path);
	assert_int_equal(probe(cfg, &err), KFT_EDENIED);
	assert_string_equal(err.message, "Unauthorized");
	assert_int_equal(ks_req(&g_mtls_srv, -1)->client_cert, 0);
	kft_kube_config_free(cfg);
}

static void relative_files_and_token(void **state)
{
	(void)state;
	const char *path = write_kc("files.yaml",
	                            "clusters:\n- name: c\n  cluster:\n"
	                            "    server: https://127.0.0.1:%d/\n"
	                            "    certificate-authority: ca.crt\n"
	                            "users:\n- name: u\n  user:\n    token: s3cret\n"
	                            "contexts:\n- name: ctx\n  context: {cluster: c, user: u}\n"
	                            "current-context: ctx\n",
	                            g_srv.port);
	kft_kube_config *cfg = NULL;
	kft_error err;
	assert_int_equal(kft_kube_config_load(path, NULL, &cfg, &err), 0);
	assert_string_equal(cfg->ca_file, g_pki.ca.cert_path);
	assert_string_equal(cfg->default_namespace, "default");
	ks_push_body(&g_srv, 200, ns_json);
	assert_int_equal(probe(cfg, &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->auth, "Bearer s3cret");
	assert_int_equal(ks_req(&g_srv, -1)->client_cert, 0);
	kft_kube_config_free(cfg);
}

/* A token file that rotates: a 401 makes the client read it again at once. */
static void token_file_reread_on_401(void **state)
{
	(void)state;
	char tok[600];
	snprintf(tok, sizeof(tok), "%s/token", g_pki.dir);
	assert_int_equal(ks_write(tok, "first-token\n"), 0);
	const char *path = write_kc("tokfile.yaml",
	                            "clusters:\n- name: c\n  cluster:\n"
	                            "    server: https://127.0.0.1:%d\n"
	                            "    certificate-authority: %s\n"
	                            "users:\n- name: u\n  user:\n    tokenFile: token\n"
	                            "contexts:\n- name: ctx\n  context: {cluster: c, user: u}\n"
	                            "current-context: ctx\n",
	                            g_srv.port, g_pki.ca.cert_path);
	kft_kube_config *cfg = NULL;
	kft_kube *k = NULL;
	kft_error err;
	json_t *out = NULL;
	assert_int_equal(kft_kube_config_load(path, NULL, &cfg, &err), 0);
	assert_int_equal(kft_kube_new(cfg, &k, &err), 0);
	assert_int_equal(ks_write(tok, "second-token"), 0);
	ks_push_body(&g_srv, 401,
	             "{\"kind\":\"Status\",\"code\":401,\"message\":\"Unauthorized\"}");
	ks_push_body(&g_srv, 200, ns_json);
	assert_int_equal(
	        kft_kube_get(k, kft_gvr_lookup("v1", "Namespace"), NULL, "default", &out, &err), 0);
	assert_int_equal(ks_count(&g_srv), 2);
	assert_string_equal(ks_req(&g_srv, 0)->auth, "Bearer first-token");
	assert_string_equal(ks_req(&g_srv, 1)->auth, "Bearer second-token");
	json_decref(out);
	kft_kube_free(k);
	kft_kube_config_free(cfg);
}

static kft_kube_config *cfg_for(int port, const char *ca_file)
{
	kft_kube_config *cfg = NULL;
	assert_int_equal(kft_kube_config_new(&cfg, NULL), 0);
	assert_true(asprintf(&cfg->server, "https://127.0.0.1:%d", port) > 0);
	if (ca_file)
		cfg->ca_file = strdup(ca_file);
	cfg->max_retries = 2;
	return cfg;
}

static void untrusted_server_fails_without_retry(void **state)
{
	(void)state;
	kft_error err;
	kft_kube_config *cfg = cfg_for(g_srv.port, g_pki.rogue.cert_path);
	double t0 = ks_now();
	assert_int_equal(probe(cfg, &err), KFT_EUNAVAILABLE);
	assert_true(ks_now() - t0 < 1.5); /* a trust failure is not retried */
	assert_non_null(strstr(err.message, "certificate"));
	assert_int_equal(ks_count(&g_srv), 0);
	/* with no CA the system roots do not know our CA either */
	free(cfg->ca_file);
	cfg->ca_file = NULL;
	assert_int_equal(probe(cfg, &err), KFT_EUNAVAILABLE);
	/* insecure-skip-tls-verify connects anyway */
	cfg->insecure = 1;
	ks_push_body(&g_srv, 200, ns_json);
	assert_int_equal(probe(cfg, &err), 0);
	kft_kube_config_free(cfg);
}

static void insecure_from_kubeconfig(void **state)
{
	(void)state;
	const char *path = write_kc("insecure.yaml",
	                            "clusters:\n- name: c\n  cluster:\n"
	                            "    server: https://127.0.0.1:%d\n"
	                            "    insecure-skip-tls-verify: true\n"
	                            "contexts:\n- name: ctx\n  context: {cluster: c}\n"
	                            "current-context: ctx\n",
	                            g_srv.port);
	kft_kube_config *cfg = NULL;
	kft_error err;
	assert_int_equal(kft_kube_config_load(path, NULL, &cfg, &err), 0);
	assert_int_equal(cfg->insecure, 1);
	ks_push_body(&g_srv, 200, ns_json);
	assert_int_equal(probe(cfg, &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->auth, "");
	kft_kube_config_free(cfg);
}

static void tls_server_name(void **state)
{
	(void)state;
	kft_error err;
	kft_kube_config *cfg = cfg_for(g_srv.port, g_pki.ca.cert_path);
	cfg->tls_server_name = strdup("kube.test");
	ks_push_body(&g_srv, 200, ns_json);
	assert_int_equal(probe(cfg, &err), 0);
	free(cfg->tls_server_name);
	cfg->tls_server_name = strdup("wrong.test"); /* not in the certificate */
	assert_int_equal(probe(cfg, &err), KFT_EUNAVAILABLE);
	kft_kube_config_free(cfg);
}

static const char *two_contexts = "clusters:\n"
                                  "- name: c1\n  cluster: {server: 'https://one.example:6443'}\n"
                                  "- name: c2\n  cluster: {server: 'https://two.example:6443'}\n"
                                  "users:\n- name: u\n  user: {token: t}\n"
                                  "- name: plug\n  user:\n    exec:\n      command: aws\n"
                                  "contexts:\n"
                                  "- name: one\n  context: {cluster: c1, user: u}\n"
                                  "- name: two\n  context: {cluster: c2, user: u, namespace: ns2}\n"
                                  "- name: ghostuser\n  context: {cluster: c1, user: ghost}\n"
                                  "- name: ghostcluster\n  context: {cluster: nowhere, user: u}\n"
                                  "- name: plugin\n  context: {cluster: c1, user: plug}\n"
                                  "current-context: one\n";

static void contexts_and_errors(void **state)
{
	(void)state;
	const char *path = write_kc("ctx.yaml", "%s", two_contexts);
	kft_kube_config *cfg = NULL;
	kft_error err;
	assert_int_equal(kft_kube_config_load(path, NULL, &cfg, &err), 0);
	assert_string_equal(cfg->server, "https://one.example:6443");
	assert_string_equal(cfg->token, "t");
	kft_kube_config_free(cfg);
	assert_int_equal(kft_kube_config_load(path, "two", &cfg, &err), 0);
	assert_string_equal(cfg->server, "https://two.example:6443");
	assert_string_equal(cfg->default_namespace, "ns2");
	kft_kube_config_free(cfg);

	assert_int_equal(kft_kube_config_load(path, "nope", &cfg, &err), KFT_ENOTFOUND);
	assert_null(cfg);
	assert_non_null(strstr(err.message, "context \"nope\" not found"));
	assert_int_equal(kft_kube_config_load(path, "ghostuser", &cfg, &err), KFT_ENOTFOUND);
	assert_non_null(strstr(err.message, "user \"ghost\" not found (named by context "
	                                    "\"ghostuser\")"));
	assert_int_equal(kft_kube_config_load(path, "ghostcluster", &cfg, &err), KFT_ENOTFOUND);
	assert_non_null(strstr(err.message, "cluster \"nowhere\" not found"));
	assert_int_equal(kft_kube_config_load(path, "plugin", &cfg, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "user \"plug\": exec credential plugins are not "
	                                    "supported"));
}

static void malformed_configs(void **state)
{
	(void)state;
	kft_kube_config *cfg = NULL;
	kft_error err;
	const char *p = write_kc("nocur.yaml", "clusters: []\n");
	assert_int_equal(kft_kube_config_load(p, NULL, &cfg, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "no current-context"));
	p = write_kc("badb64.yaml", "clusters:\n- name: c\n  cluster:\n    server: https://x\n"
	                            "    certificate-authority-data: '@@@'\n"
	                            "contexts:\n- name: x\n  context: {cluster: c}\n"
	                            "current-context: x\n");
	assert_int_equal(kft_kube_config_load(p, NULL, &cfg, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "clusters[name=\"c\"].cluster.certificate-authority-"
	                                    "data: is not valid base64"));
	p = write_kc("noserver.yaml", "clusters:\n- name: c\n  cluster: {}\n"
	                              "contexts:\n- name: x\n  context: {cluster: c}\n"
	                              "current-context: x\n");
	assert_int_equal(kft_kube_config_load(p, NULL, &cfg, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "cluster.server: is required"));
	p = write_kc("badtype.yaml", "clusters:\n- name: c\n  cluster: {server: [1]}\n"
	                             "contexts:\n- name: x\n  context: {cluster: c}\n"
	                             "current-context: x\n");
	assert_int_equal(kft_kube_config_load(p, NULL, &cfg, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "cluster.server: must be a string"));
	p = write_kc("syntax.yaml", "clusters: [\n");
	assert_int_equal(kft_kube_config_load(p, NULL, &cfg, &err), KFT_EPARSE);
	char missing[600];
	snprintf(missing, sizeof(missing), "%s/does-not-exist", g_pki.dir);
	assert_int_equal(kft_kube_config_load(missing, NULL, &cfg, &err), KFT_ENOTFOUND);
	assert_null(cfg);
}

/* KUBECONFIG=a:missing:b - first definition wins, current-context from a. */
static void kubeconfig_list_merges(void **state)
{
	(void)state;
	char list[2000];
	const char *a = write_kc("a.yaml", "clusters:\n- name: c\n  cluster: {server: "
	                                   "'https://a.example'}\ncurrent-context: x\n");
	char a_copy[600];
	snprintf(a_copy, sizeof(a_copy), "%s", a);
	const char *b = write_kc(
	        "b.yaml", "clusters:\n- name: c\n  cluster: {server: 'https://b.example'}\n"
	                  "contexts:\n- name: x\n  context: {cluster: c, namespace: from-b}\n"
	                  "current-context: y\n");
	snprintf(list, sizeof(list), "%s:%s/missing.yaml:%s", a_copy, g_pki.dir, b);
	setenv("KUBECONFIG", list, 1);
	kft_kube_config *cfg = NULL;
	kft_error err;
	assert_int_equal(kft_kube_config_load(NULL, NULL, &cfg, &err), 0);
	assert_string_equal(cfg->server, "https://a.example");
	assert_string_equal(cfg->default_namespace, "from-b");
	kft_kube_config_free(cfg);
	/* kft_kube_config_default prefers $KUBECONFIG too */
	assert_int_equal(kft_kube_config_default(NULL, NULL, &cfg, &err), 0);
	assert_string_equal(cfg->server, "https://a.example");
	kft_kube_config_free(cfg);
	unsetenv("KUBECONFIG");
}

static void in_cluster(void **state)
{
	(void)state;
	char sa[600], f[700], port[16];
	snprintf(sa, sizeof(sa), "%s/sa", g_pki.dir);
	assert_int_equal(mkdir(sa, 0700), 0);
	snprintf(f, sizeof(f), "%s/token", sa);
	ks_write(f, "sa-token\n");
	snprintf(f, sizeof(f), "%s/namespace", sa);
	ks_write(f, "kubeflow-system");
	snprintf(f, sizeof(f), "%s/ca.crt", sa);
	ks_write(f, g_pki.ca.cert);
	snprintf(port, sizeof(port), "%d", g_srv.port);
	kft_kube_config *cfg = NULL;
	kft_error err;
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(kft_kube_config_in_cluster(&cfg, &err), KFT_ENOTFOUND);
	setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", port, 1);
	setenv("KFT_KUBE_SERVICEACCOUNT_DIR", sa, 1);
	assert_int_equal(kft_kube_config_default(NULL, NULL, &cfg, &err), 0);
	assert_string_equal(cfg->default_namespace, "kubeflow-system");
	kft_kube *k = NULL;
	json_t *out = NULL;
	assert_int_equal(kft_kube_new(cfg, &k, &err), 0);
	ks_push_body(&g_srv, 200, "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"}}");
	assert_int_equal(kft_kube_get(k, kft_gvr_lookup("v1", "Secret"), NULL, "s", &out, &err), 0);
	assert_string_equal(ks_req(&g_srv, -1)->path,
	                    "/api/v1/namespaces/kubeflow-system/secrets/s");
	assert_string_equal(ks_req(&g_srv, -1)->auth, "Bearer sa-token");
	/* the server leaves apiVersion out of some answers; the client fills it */
	assert_string_equal(json_string_value(json_object_get(out, "apiVersion")), "v1");
	json_decref(out);
	kft_kube_free(k);
	kft_kube_config_free(cfg);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	unsetenv("KFT_KUBE_SERVICEACCOUNT_DIR");
}

static void client_rejects_bad_config(void **state)
{
	(void)state;
	kft_kube_config *cfg = cfg_for(g_srv.port, NULL);
	kft_kube *k = NULL;
	kft_error err;
	cfg->cert_file = strdup(g_pki.client.cert_path); /* no key */
	assert_int_equal(kft_kube_new(cfg, &k, &err), KFT_EINVAL);
	assert_null(k);
	free(cfg->cert_file);
	cfg->cert_file = NULL;
	cfg->ca_file = strdup("/nonexistent/ca.crt");
	assert_int_equal(kft_kube_new(cfg, &k, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "/nonexistent/ca.crt"));
	free(cfg->server);
	cfg->server = strdup("ftp://x");
	assert_int_equal(kft_kube_new(cfg, &k, &err), KFT_EINVAL);
	kft_kube_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup(inline_data_and_client_cert, each_setup),
	        cmocka_unit_test_setup(missing_client_cert_is_denied, each_setup),
	        cmocka_unit_test_setup(relative_files_and_token, each_setup),
	        cmocka_unit_test_setup(token_file_reread_on_401, each_setup),
	        cmocka_unit_test_setup(untrusted_server_fails_without_retry, each_setup),
	        cmocka_unit_test_setup(insecure_from_kubeconfig, each_setup),
	        cmocka_unit_test_setup(tls_server_name, each_setup),
	        cmocka_unit_test_setup(contexts_and_errors, each_setup),
	        cmocka_unit_test_setup(malformed_configs, each_setup),
	        cmocka_unit_test_setup(kubeconfig_list_merges, each_setup),
	        cmocka_unit_test_setup(in_cluster, each_setup),
	        cmocka_unit_test_setup(client_rejects_bad_config, each_setup),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
