/*
 * test_controller_config.c - the controller manager's Configuration file and
 * command line (src/controller/config.c, src/controller/flags.c).
 *
 * Sources, at kubeflow/trainer v2.3.0 unless said otherwise:
 *   "defaults.go"     pkg/apis/config/v1alpha1/defaults.go (SetDefaults_Configuration)
 *   "validation.go"   pkg/config/validation.go (validate) and its wording
 *   "config.go"       pkg/config/config.go (strict decoding, addTo)
 *   "manifest"        manifests/base/manager/controller_manager_config.yaml
 *   "zap flags"       controller-runtime v0.24.1 pkg/log/zap/flags.go
 *   "feature gates"   k8s.io/component-base v0.36.2 featuregate.Set wording
 *   "ours"            our documented choices (docs/controller.md)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "controller/controller.h"
#include "kftrainer/decode.h"
#include "kftrainer/framework.h"

/* Decodes YAML text and runs it through kft_cm_config_from_json. */
static int load_text(kft_cm_config *cfg, const char *yaml, kft_error *err)
{
	kft_doc_list docs = {0};
	assert_int_equal(kft_cm_config_defaults(cfg, err), 0);
	assert_int_equal(kft_decode(yaml, strlen(yaml), "cfg.yaml", &docs, err), 0);
	int rc = kft_cm_config_from_json(cfg, docs.items[0].root, "cfg.yaml", err);
	kft_doc_list_free(&docs);
	return rc;
}

#define HEAD "apiVersion: config.trainer.kubeflow.org/v1alpha1\nkind: Configuration\n"

/* defaults.go: the values with no file at all. */
static void test_defaults(void **state)
{
	(void)state;
	kft_cm_config cfg;
	assert_int_equal(kft_cm_config_defaults(&cfg, NULL), 0);
	assert_string_equal(cfg.metrics_bind_address, ":8443");
	assert_int_equal(cfg.metrics_secure_serving, 1);
	assert_string_equal(cfg.health_bind_address, ":8081");
	assert_string_equal(cfg.readiness_endpoint, "readyz");
	assert_string_equal(cfg.liveness_endpoint, "healthz");
	assert_int_equal(cfg.webhook_port, 9443);
	assert_int_equal(cfg.leader_elect, 0);
	assert_int_equal(cfg.cert_management_enable, 1);
	assert_string_equal(cfg.cert_webhook_service, "kubeflow-trainer-controller-manager");
	assert_string_equal(cfg.cert_webhook_secret, "kubeflow-trainer-webhook-cert");
	assert_true(cfg.qps == 50);
	assert_int_equal(cfg.burst, 100);
	assert_int_equal(cfg.status_port, 10443);
	assert_true(cfg.status_qps == 5);
	assert_int_equal(cfg.status_burst, 10);
	/* controller-runtime: one worker per controller unless configured */
	assert_int_equal(cfg.trainjob_workers, 1);
	/* controller-runtime's leader election timings */
	assert_int_equal(cfg.le_lease_ms, 15000);
	assert_int_equal(cfg.le_renew_ms, 10000);
	assert_int_equal(cfg.le_retry_ms, 2000);
	assert_string_equal(cfg.le_resource_name, "trainer.kubeflow.org");
	kft_cm_config_free(&cfg);
}

/* manifest: upstream's shipped configuration file loads as written. */
static void test_upstream_manifest(void **state)
{
	(void)state;
	static const char yaml[] =
	        HEAD "health:\n  healthProbeBindAddress: :8081\n  readinessEndpointName: readyz\n"
	             "  livenessEndpointName: healthz\n"
	             "metrics:\n  bindAddress: :8443\n  secureServing: true\n"
	             "webhook:\n  port: 9443\n  host: \"\"\n"
	             "leaderElection:\n  leaderElect: true\n  resourceName: trainer.kubeflow.org\n"
	             "  resourceNamespace: \"\"\n  leaseDuration: 15s\n  renewDeadline: 10s\n"
	             "  retryPeriod: 2s\n"
	             "controller:\n  groupKindConcurrency:\n    TrainJob.trainer.kubeflow.org: 5\n"
	             "    TrainingRuntime.trainer.kubeflow.org: 1\n"
	             "    ClusterTrainingRuntime.trainer.kubeflow.org: 1\n"
	             "certManagement:\n  enable: true\n"
	             "  webhookServiceName: kubeflow-trainer-controller-manager\n"
	             "  webhookSecretName: kubeflow-trainer-webhook-cert\n"
	             "clientConnection:\n  qps: 50\n  burst: 100\n"
	             "statusServer:\n  port: 10443\n  qps: 5\n  burst: 10\n";
	kft_cm_config cfg;
	kft_error err = {0};
	assert_int_equal(load_text(&cfg, yaml, &err), 0);
	assert_int_equal(cfg.leader_elect, 1);
	assert_null(cfg.le_resource_namespace); /* "" = the pod's namespace */
	assert_int_equal(cfg.trainjob_workers, 5);
	assert_int_equal(cfg.runtime_workers, 1);
	/* webhook and certManagement are served: no warning names them */
	size_t i;
	json_t *w;
	json_array_foreach(cfg.warnings, i, w)
	{
		assert_null(strstr(json_string_value(w), "webhook"));
		assert_null(strstr(json_string_value(w), "certManagement"));
	}
	kft_cm_config_free(&cfg);
}

/* config.go: partial files get the remaining defaults; durations parse. */
static void test_partial_and_durations(void **state)
{
	(void)state;
	kft_cm_config cfg;
	kft_error err = {0};
	assert_int_equal(load_text(&cfg,
	                           HEAD "metrics:\n  bindAddress: \"127.0.0.1:9090\"\n"
	                                "leaderElection:\n  leaseDuration: 1m30s\n"
	                                "  renewDeadline: 1.5s\n  retryPeriod: 500ms\n",
	                           &err),
	                 0);
	assert_string_equal(cfg.metrics_bind_address, "127.0.0.1:9090");
	assert_string_equal(cfg.health_bind_address, ":8081");
	assert_int_equal(cfg.le_lease_ms, 90000);
	assert_int_equal(cfg.le_renew_ms, 1500);
	assert_int_equal(cfg.le_retry_ms, 500);
	assert_int_equal(json_array_size(cfg.warnings), 0);
	kft_cm_config_free(&cfg);
}

static void expect_error(const char *yaml, const char *want)
{
	kft_cm_config cfg;
	kft_error err = {0};
	assert_int_not_equal(load_text(&cfg, yaml, &err), 0);
	if (!strstr(err.message, want))
		fail_msg("error \"%s\" does not contain \"%s\"", err.message, want);
	kft_cm_config_free(&cfg);
}

/* validation.go: each check, with upstream's field paths and wording. */
static void test_validation(void **state)
{
	(void)state;
	expect_error(HEAD "webhook:\n  port: 0\n",
	             "webhook.port: Invalid value: 0: must be between 1 and 65535");
	expect_error(HEAD "webhook:\n  port: 70000\n", "webhook.port");
	expect_error(HEAD "clientConnection:\n  qps: -1\n",
	             "clientConnection.qps: Invalid value: -1: must be greater than or equal to 0");
	expect_error(HEAD "clientConnection:\n  burst: -1\n", "clientConnection.burst");
	expect_error(HEAD
	             "controller:\n  groupKindConcurrency:\n    TrainJob.trainer.kubeflow.org: 0\n",
	             "controller.groupKindConcurrency[TrainJob.trainer.kubeflow.org]: Invalid "
	             "value: 0: must be greater than 0");
	expect_error(HEAD "statusServer:\n  port: 0\n", "statusServer.port");
	expect_error(HEAD "statusServer:\n  qps: -2\n", "statusServer.qps");
	expect_error(HEAD "statusServer:\n  burst: -2\n", "statusServer.burst");
	expect_error(HEAD "tls:\n  minVersion: \"1.4\"\n", "tls.minVersion: Unsupported value");
	/* tls.cipherSuites takes Go's crypto/tls names; one it does not know is
	 * refused at start-up, naming the field */
	expect_error(HEAD "tls:\n  cipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "
	                  "ECDHE-RSA-AES128-GCM-SHA256]\n",
	             "invalid configuration: tls.cipherSuites[1]: Unsupported value: "
	             "\"ECDHE-RSA-AES128-GCM-SHA256\"");
	kft_cm_config cfg;
	kft_error err = {0};
	assert_int_equal(
	        load_text(&cfg,
	                  HEAD "tls:\n  cipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n",
	                  &err),
	        0);
	assert_string_equal(json_string_value(json_array_get(cfg.tls_cipher_suites, 0)),
	                    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
	assert_int_equal(json_array_size(cfg.warnings), 0);
	kft_cm_config_free(&cfg);
}

/* config.go: the strict decoder refuses unknown fields and wrong types;
 * apiVersion and kind must be the registered ones. */
static void test_strict_decoding(void **state)
{
	(void)state;
	expect_error(HEAD "metrics:\n  bindAdress: :1\n",
	             "strict decoding error: unknown field \"metrics.bindAdress\"");
	expect_error(HEAD "bogus: 1\n", "unknown field \"bogus\"");
	expect_error(HEAD "webhook:\n  port: \"9443\"\n", "cannot unmarshal string");
	expect_error(HEAD "metrics:\n  secureServing: maybe\n", "cannot unmarshal string");
	expect_error(HEAD "leaderElection:\n  leaseDuration: 15\n", "cannot unmarshal number");
	expect_error(HEAD "leaderElection:\n  leaseDuration: 15x\n", "invalid duration");
	expect_error("apiVersion: config.trainer.kubeflow.org/v1alpha1\n",
	             "Object 'Kind' is missing");
	expect_error("apiVersion: v1\nkind: Configuration\n", "no kind \"Configuration\"");
	/* ours: a lease shorter than the renew deadline cannot work */
	expect_error(HEAD "leaderElection:\n  leaseDuration: 5s\n  renewDeadline: 10s\n",
	             "leaseDuration");
}

/* feature gates: names, values and errors. */
static void test_feature_gates(void **state)
{
	(void)state;
	unsigned f = 0;
	kft_error err = {0};
	assert_int_equal(kft_cm_feature_gates_set(&f, "TrainJobStatus=true", &err), 0);
	assert_int_equal(f, KFT_FEATURE_TRAINJOB_STATUS);
	assert_int_equal(kft_cm_feature_gates_set(&f, "TrainJobStatus=false", &err), 0);
	assert_int_equal(f, 0);
	assert_int_not_equal(kft_cm_feature_gates_set(&f, "Nope=true", &err), 0);
	assert_string_equal(err.message, "unrecognized feature gate: Nope");
	assert_int_not_equal(kft_cm_feature_gates_set(&f, "TrainJobStatus", &err), 0);
	assert_string_equal(err.message, "missing bool value for TrainJobStatus");
	assert_int_not_equal(kft_cm_feature_gates_set(&f, "TrainJobStatus=yes", &err), 0);
	assert_non_null(strstr(err.message, "invalid value of TrainJobStatus=yes"));

	kft_cm_config cfg;
	assert_int_equal(load_text(&cfg, HEAD "featureGates:\n  TrainJobStatus: true\n", &err), 0);
	assert_int_equal(cfg.features, KFT_FEATURE_TRAINJOB_STATUS);
	kft_cm_config_free(&cfg);
	expect_error(HEAD "featureGates:\n  Other: true\n", "unrecognized feature gate: Other");
}

/* Inputs the fuzzer (tests/fuzz/fuzz_controller_config.c) found: a huge or
 * NaN number must be a clean error, a duration takes only what Go's
 * time.ParseDuration takes, and a featureGates key is one gate name, as
 * upstream's featuregate SetFromMap reads the map (never split or trimmed). */
static void test_fuzz_findings(void **state)
{
	(void)state;
	expect_error(HEAD "webhook:\n  port: 1e300\n", "webhook.port");
	expect_error(HEAD "leaderElection:\n  retryPeriod: nanms\n", "invalid duration");
	expect_error(HEAD "leaderElection:\n  retryPeriod: 1e3s\n", "invalid duration");
	expect_error(HEAD "leaderElection:\n  retryPeriod: \" 0x5s\"\n", "invalid duration");
	expect_error(HEAD "featureGates:\n  \"AllBeta=true,TrainJobStatus\": true\n",
	             "unrecognized feature gate");
	expect_error(HEAD "featureGates:\n  \" TrainJobStatus\": true\n",
	             "unrecognized feature gate");
	kft_cm_config cfg;
	kft_error err = {0};
	assert_int_equal(load_text(&cfg, HEAD "leaderElection:\n  retryPeriod: .5s\n", &err), 0);
	assert_int_equal(cfg.le_retry_ms, 500);
	kft_cm_config_free(&cfg);
}

static int parse(kft_cm_flags *f, kft_error *err, ...)
{
	char *argv[32] = {"kftrainer-controller-manager"};
	int argc = 1;
	va_list ap;
	va_start(ap, err);
	for (char *a; (a = va_arg(ap, char *)) != NULL && argc < 31;)
		argv[argc++] = a;
	va_end(ap);
	return kft_cm_flags_parse(argc, argv, f, err);
}

/* Go's flag syntax and the zap flags' values. */
static void test_flags(void **state)
{
	(void)state;
	kft_cm_flags f;
	kft_error err = {0};
	assert_int_equal(parse(&f, &err, "--config=/c.yaml", "-kubeconfig", "/k", "--leader-elect",
	                       "--metrics-bind-address", "127.0.0.1:1", "--zap-log-level=2",
	                       "--zap-encoder", "console", "--zap-time-encoding=epoch", NULL),
	                 0);
	assert_string_equal(f.config_file, "/c.yaml");
	assert_string_equal(f.kubeconfig, "/k");
	assert_int_equal(f.leader_elect, 1);
	assert_string_equal(f.metrics_addr, "127.0.0.1:1");
	assert_null(f.health_addr);
	assert_int_equal(f.log.level, -2); /* zap flags: N > 0 is level -N */
	assert_int_equal(f.log.console, 1);
	assert_int_equal(f.log.time_encoding, KFT_LOG_TIME_EPOCH);

	assert_int_equal(parse(&f, &err, "--leader-elect=false", "--zap-log-level", "debug", NULL),
	                 0);
	assert_int_equal(f.leader_elect, 0);
	assert_int_equal(f.log.level, KFT_LOG_DEBUG);
	assert_int_equal(parse(&f, &err, NULL), 0);
	assert_int_equal(f.leader_elect, -1);
	assert_int_equal(f.log.time_encoding, KFT_LOG_TIME_RFC3339NANO); /* upstream main.go */

	assert_int_not_equal(parse(&f, &err, "--nope", NULL), 0);
	assert_string_equal(err.message, "flag provided but not defined: -nope");
	assert_int_not_equal(parse(&f, &err, "--zap-log-level=loud", NULL), 0);
	assert_non_null(strstr(err.message, "invalid log level \"loud\""));
	assert_int_not_equal(parse(&f, &err, "--zap-log-level=0", NULL), 0);
	assert_int_not_equal(parse(&f, &err, "--zap-stacktrace-level=debug", NULL), 0);
	assert_int_not_equal(parse(&f, &err, "--zap-time-encoding=nano", NULL), 0);
	assert_int_not_equal(parse(&f, &err, "--zap-encoder=xml", NULL), 0);
	assert_int_not_equal(parse(&f, &err, "--config", NULL), 0);
	assert_string_equal(err.message, "flag needs an argument: -config");
	assert_int_not_equal(parse(&f, &err, "--leader-elect=maybe", NULL), 0);
	/* parsing stops at the first non-flag argument, as Go's */
	assert_int_equal(parse(&f, &err, "extra", "--nope", NULL), 0);
}

/* --help lists every feature gate with its stage and default (upstream's
 * manager lists none, which left RuntimeInUseFinalizer, AllAlpha and
 * AllBeta undiscoverable), and every gate it lists is accepted. */
static void test_help_lists_every_gate(void **state)
{
	(void)state;
	static const char *const gates[] = {"TrainJobStatus", "RuntimeInUseFinalizer", "AllAlpha",
	                                    "AllBeta"};
	const char *help = kft_cm_usage();
	size_t listed = 0;
	for (const char *p = help; (p = strstr(p, "=true|false (")) != NULL; p++)
		listed++;
	assert_int_equal(listed, sizeof(gates) / sizeof(gates[0]));
	for (size_t i = 0; i < sizeof(gates) / sizeof(gates[0]); i++) {
		char line[96], spec[96];
		snprintf(line, sizeof(line), "\n  %s=true|false (", gates[i]);
		assert_non_null(strstr(help, line));
		snprintf(spec, sizeof(spec), "%s=true", gates[i]);
		unsigned f = 0;
		kft_error err = {0};
		assert_int_equal(kft_cm_feature_gates_set(&f, spec, &err), 0);
	}
	assert_non_null(strstr(help, "TrainJobStatus=true|false (ALPHA - default=false)"));
	assert_non_null(
	        strstr(help, "RuntimeInUseFinalizer=true|false (kftrainer - default=false)"));
	/* AllAlpha reaches upstream's alpha gates only */
	unsigned f = 0;
	kft_error err = {0};
	assert_int_equal(kft_cm_feature_gates_set(&f, "AllAlpha=true", &err), 0);
	assert_int_equal(f, KFT_FEATURE_TRAINJOB_STATUS);
}

/* ours: flags override the file; --feature-gates after featureGates. */
static void test_flags_override_file(void **state)
{
	(void)state;
	kft_cm_config cfg;
	kft_cm_flags f;
	kft_error err = {0};
	assert_int_equal(load_text(&cfg,
	                           HEAD
	                           "metrics:\n  bindAddress: :1\nhealth:\n"
	                           "  healthProbeBindAddress: :2\nleaderElection:\n"
	                           "  leaderElect: true\nfeatureGates:\n  TrainJobStatus: true\n",
	                           &err),
	                 0);
	assert_int_equal(parse(&f, &err, "--metrics-bind-address=127.0.0.1:3",
	                       "--leader-elect=false", "--feature-gates=TrainJobStatus=false",
	                       NULL),
	                 0);
	assert_int_equal(kft_cm_flags_apply(&f, &cfg, &err), 0);
	assert_string_equal(cfg.metrics_bind_address, "127.0.0.1:3");
	assert_string_equal(cfg.health_bind_address, ":2"); /* not given: the file's */
	assert_int_equal(cfg.leader_elect, 0);
	assert_int_equal(cfg.features, 0);
	assert_int_equal(parse(&f, &err, "--feature-gates=Bad=true", NULL), 0);
	assert_int_not_equal(kft_cm_flags_apply(&f, &cfg, &err), 0);
	kft_cm_config_free(&cfg);
}

/* ours: the top-level `plugins` list (docs/plugins.md) is read, checked as
 * a list of non-empty strings, still strict about unknown fields, and
 * --plugin (repeatable) replaces it. */
static void test_plugins(void **state)
{
	(void)state;
	kft_cm_config cfg;
	kft_cm_flags f;
	kft_error err = {0};
	assert_int_equal(load_text(&cfg, HEAD "plugins: [/opt/a.so, /opt/b.so]\n", &err), 0);
	assert_int_equal(json_array_size(cfg.plugins), 2);
	assert_string_equal(json_string_value(json_array_get(cfg.plugins, 1)), "/opt/b.so");
	assert_int_equal(parse(&f, &err, "--plugin", "/x/c.so", "-plugin=/x/d.so", NULL), 0);
	assert_int_equal(kft_cm_flags_apply(&f, &cfg, &err), 0);
	assert_int_equal(json_array_size(cfg.plugins), 2);
	assert_string_equal(json_string_value(json_array_get(cfg.plugins, 0)), "/x/c.so");
	assert_string_equal(json_string_value(json_array_get(cfg.plugins, 1)), "/x/d.so");
	kft_cm_config_free(&cfg);
	assert_int_equal(load_text(&cfg, HEAD "plugins: /opt/a.so\n", &err), KFT_EINVAL);
	assert_non_null(
	        strstr(err.message, "cannot unmarshal string into Go struct field plugins"));
	kft_cm_config_free(&cfg);
	assert_int_equal(load_text(&cfg, HEAD "plugins: [\"\"]\n", &err), KFT_EINVAL);
	assert_string_equal(
	        err.message,
	        "invalid configuration: plugins[0]: Required value: a plugin file path");
	kft_cm_config_free(&cfg);
	assert_int_equal(load_text(&cfg, HEAD "plugin: [/opt/a.so]\n", &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "unknown field \"plugin\""));
	kft_cm_config_free(&cfg);
	assert_int_equal(load_text(&cfg, HEAD, &err), 0);
	assert_null(cfg.plugins);
	kft_cm_config_free(&cfg);
}

/* config_load: a file that is missing, empty or holds two documents. */
static void test_load_file(void **state)
{
	(void)state;
	kft_cm_config cfg;
	kft_error err = {0};
	char path[] = "/tmp/kft-cm-config-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *fp = fdopen(fd, "w");
	fputs(HEAD "metrics:\n  bindAddress: \"0\"\n", fp);
	fclose(fp);
	assert_int_equal(kft_cm_config_defaults(&cfg, &err), 0);
	assert_int_equal(kft_cm_config_load(&cfg, path, &err), 0);
	assert_string_equal(cfg.metrics_bind_address, "0");
	kft_cm_config_free(&cfg);

	fp = fopen(path, "w");
	fputs(HEAD "---\n" HEAD, fp);
	fclose(fp);
	assert_int_equal(kft_cm_config_defaults(&cfg, &err), 0);
	assert_int_not_equal(kft_cm_config_load(&cfg, path, &err), 0);
	assert_non_null(strstr(err.message, "want one document"));
	kft_cm_config_free(&cfg);
	unlink(path);

	assert_int_equal(kft_cm_config_defaults(&cfg, &err), 0);
	assert_int_equal(kft_cm_config_load(&cfg, path, &err), KFT_EIO);
	assert_non_null(strstr(err.message, "failed to read config file"));
	kft_cm_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_defaults),
	        cmocka_unit_test(test_upstream_manifest),
	        cmocka_unit_test(test_partial_and_durations),
	        cmocka_unit_test(test_validation),
	        cmocka_unit_test(test_strict_decoding),
	        cmocka_unit_test(test_feature_gates),
	        cmocka_unit_test(test_fuzz_findings),
	        cmocka_unit_test(test_flags),
	        cmocka_unit_test(test_help_lists_every_gate),
	        cmocka_unit_test(test_flags_override_file),
	        cmocka_unit_test(test_load_file),
	        cmocka_unit_test(test_plugins),
	};
	return cmocka_run_group_tests_name("controller_config", tests, NULL, NULL);
}
