/*
 * certs.c - the webhooks' certificates, managed as upstream v2.3.0 manages
 * them (pkg/util/cert with open-policy-agent/cert-controller's rotator):
 *
 *   - a CA (CN kubeflow-trainer-ca, O kubeflow-trainer, 10 years) and a
 *     serving certificate it signs for <webhookServiceName>.<namespace>.svc
 *     (1 year), RSA 2048, kept in the Secret certManagement.webhookSecretName
 *     of the controller's namespace under ca.crt, ca.key, tls.crt, tls.key;
 *   - the pair written to the cert directory the webhook server reads;
 *   - the CA injected as caBundle into every webhook of the configurations
 *     validator.trainer.kubeflow.org and defaulter.trainer.kubeflow.org;
 *   - renewed when it would expire within 90 days (the CA too, then the
 *     serving certificate with it), checked every minute, so the Secret and
 *     the configurations also heal when someone edits them.
 *
 * Replicas share the Secret without fighting: a replica creates it only
 * when absent (AlreadyExists: someone else won, read theirs) and updates it
 * only with the resourceVersion it read (Conflict: read again and judge the
 * new one, which is normally valid). Every replica serves what the Secret
 * holds. The decision itself is kft_cm_cert_plan, a pure function.
 *
 * Test hooks (environment, never needed in production): KFTRAINER_CERT_VALIDITY
 * and KFTRAINER_CERT_LOOKAHEAD (serving certificate validity and renewal
 * margin, seconds), KFTRAINER_CERT_CHECK_INTERVAL (seconds), and
 * KFTRAINER_CERT_LOOPBACK=1 (127.0.0.1 in the serving certificate, for an
 * API server that calls the webhooks by a loopback URL).
 */
#include <errno.h>
#include <fcntl.h>
#include <mbedtls/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "controller/cm_internal.h"
#include "util/cert.h"
#include "util/envnum.h"
#include "util/secret.h"

#define CA_NAME         "kubeflow-trainer-ca"
#define CA_ORGANIZATION "kubeflow-trainer"
#define DEFAULT_NS      "kubeflow-system"
#define SA_NS_FILE      "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
#define CA_SECONDS      (10LL * 365 * 24 * 3600)
#define SERVING_SECONDS (365LL * 24 * 3600)
#define LOOKAHEAD_SECS  (90LL * 24 * 3600)
#define CHECK_SECONDS   60
#define VALIDATING_NAME "validator.trainer.kubeflow.org"
#define MUTATING_NAME   "defaulter.trainer.kubeflow.org"
#define PEM_MAX         (64 * 1024)

static const kft_gvr secrets = {"", "v1", "secrets", "Secret", 1};
static const kft_gvr validating = {"admissionregistration.k8s.io", "v1",
                                   "validatingwebhookconfigurations",
                                   "ValidatingWebhookConfiguration", 0};
static const kft_gvr mutating = {"admissionregistration.k8s.io", "v1",
                                 "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
                                 0};

struct kft_cm_certs {
	kft_cm *cm;
	char ns[256], dns[512], dir[512];
	long long serving_s, lookahead_s;
	int check_s, loopback;
	time_t next_check;
	atomic_int ready;
	int missing;  /* a webhook configuration was absent at the last check */
	char *ca_pem; /* the CA last injected, to tell what changed */
};

/* ---- the decision ------------------------------------------------------------------------ */

kft_cm_cert_action kft_cm_cert_plan(const char *ca_crt, const char *ca_key, const char *tls_crt,
                                    const char *tls_key, const char *dns_name, time_t now,
                                    long long lookahead_s)
{
	time_t until = now + (time_t)lookahead_s;
	if (!kft_cert_pair_valid(ca_crt, ca_crt, ca_key, CA_NAME, now, until))
		return KFT_CM_CERT_NEW_CA;
	if (!kft_cert_pair_valid(ca_crt, tls_crt, tls_key, dns_name, now, until))
		return KFT_CM_CERT_NEW_SERVING;
	return KFT_CM_CERT_KEEP;
}

/* ---- the Secret ---------------------------------------------------------------------------- */

/* data[key] decoded from base64 into a new string, or NULL. */
static char *secret_value(const json_t *secret, const char *key)
{
	const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), key));
	if (!b64)
		return NULL;
	size_t n = strlen(b64), olen = 0;
	if (n > PEM_MAX)
		return NULL;
	unsigned char *out = malloc(n + 1);
	if (!out || mbedtls_base64_decode(out, n + 1, &olen, (const unsigned char *)b64, n) != 0 ||
	    memchr(out, '\0', olen)) {
		free(out);
		return NULL;
	}
	out[olen] = '\0';
	return (char *)out;
}

static json_t *b64(const char *s)
{
	size_t n = strlen(s), olen = 0, cap = 4 * ((n + 2) / 3) + 1;
	unsigned char *out = malloc(cap);
	json_t *v = NULL;
	if (out && mbedtls_base64_encode(out, cap, &olen, (const unsigned char *)s, n) == 0)
		v = json_stringn((char *)out, olen);
	kft_secret_wipe(out, cap);
	free(out);
	return v;
}

typedef struct pems {
	char *ca_crt, *ca_key, *tls_crt, *tls_key;
} pems;

static void pems_free(pems *p)
{
	free(p->ca_crt);
	kft_secret_free(p->ca_key);
	free(p->tls_crt);
	kft_secret_free(p->tls_key);
	memset(p, 0, sizeof(*p));
}

static void pems_of(const json_t *secret, pems *p)
{
	p->ca_crt = secret_value(secret, "ca.crt");
	p->ca_key = secret_value(secret, "ca.key");
	p->tls_crt = secret_value(secret, "tls.crt");
	p->tls_key = secret_value(secret, "tls.key");
}

/* New certificates as `action` says, into p (the CA kept when only the
 * serving certificate is renewed). */
static int renew(kft_cm_certs *c, kft_cm_cert_action action, pems *p, kft_error *err)
{
	kft_cert ca = {p->ca_crt, p->ca_key}, srv = {0};
	int rc = 0;
	if (action == KFT_CM_CERT_NEW_CA) {
		kft_cert_opts o = {.key_type = KFT_CERT_RSA2048,
		                   .is_ca = true,
		                   .subject = "CN=" CA_NAME ",O=" CA_ORGANIZATION,
		                   .valid_seconds = CA_SECONDS};
		kft_cert fresh = {0};
		if ((rc = kft_cert_make(&o, "making the webhook CA", &fresh, err)))
			return rc;
		free(p->ca_crt);
		kft_secret_free(p->ca_key);
		p->ca_crt = fresh.cert_pem;
		p->ca_key = fresh.key_pem;
		ca = fresh;
	}
	char subject[600];
	snprintf(subject, sizeof(subject), "CN=%s", c->dns);
	kft_cert_opts o = {.key_type = KFT_CERT_RSA2048,
	                   .issuer = &ca,
	                   .subject = subject,
	                   .dns_name = c->dns,
	                   .loopback_too = c->loopback,
	                   .valid_seconds = c->serving_s};
	if ((rc = kft_cert_make(&o, "making the webhook serving certificate", &srv, err)))
		return rc;
	free(p->tls_crt);
	kft_secret_free(p->tls_key);
	p->tls_crt = srv.cert_pem;
	p->tls_key = srv.key_pem;
	return 0;
}

static int put_data(json_t *secret, const pems *p)
{
	json_t *data =
	        json_pack("{s:o?, s:o?, s:o?, s:o?}", "ca.crt", b64(p->ca_crt), "ca.key",
	                  b64(p->ca_key), "tls.crt", b64(p->tls_crt), "tls.key", b64(p->tls_key));
	if (!data || json_object_size(data) != 4) {
		json_decref(data);
		return KFT_ENOMEM;
	}
	return json_object_set_new(secret, "data", data) == 0 ? 0 : KFT_ENOMEM;
}

/* A Secret can be missing on create only with its namespace: out of a
 * cluster, on one where the controller was never installed. Upstream's
 * rotator stops with the API server's words; ours says what to do. */
static int no_namespace(const kft_cm_certs *c, kft_error *err)
{
	char why[KFT_ERROR_MESSAGE_MAX];
	snprintf(why, sizeof(why), "%s", err->message);
	return kft_error_set(
	        err, KFT_ENOTFOUND,
	        "%s: certificate management keeps the webhook certificate in the Secret %s/%s "
	        "(the controller's namespace: its service account's, else %s, as upstream's "
	        "rotator does), and namespace %s does not exist. Create it (kubectl create "
	        "namespace %s, or install manifests/controller), or set certManagement.enable: "
	        "false in the Configuration (--config) and provide tls.crt and tls.key",
	        why, c->ns, c->cm->cfg->cert_webhook_secret, DEFAULT_NS, c->ns, c->ns);
}

/* Makes the Secret hold valid certificates and leaves them in p: reads it,
 * creates it when absent, renews and updates it when the plan says so.
 * Another replica's concurrent write (AlreadyExists, Conflict) means read
 * again: what it wrote is normally valid. */
static int ensure_secret(kft_cm_certs *c, pems *p, int *changed, kft_error *err)
{
	kft_kube *kube = c->cm->kube;
	const char *name = c->cm->cfg->cert_webhook_secret;
	for (int attempt = 0; attempt < 5; attempt++) {
		json_t *secret = NULL;
		pems_free(p);
		int rc = kft_kube_get(kube, &secrets, c->ns, name, &secret, err);
		int absent = rc == KFT_ENOTFOUND;
		if (rc && !absent)
			return rc;
		if (!absent)
			pems_of(secret, p);
		kft_cm_cert_action action =
		        kft_cm_cert_plan(p->ca_crt, p->ca_key, p->tls_crt, p->tls_key, c->dns,
		                         time(NULL), c->lookahead_s);
		if (action == KFT_CM_CERT_KEEP) {
			json_decref(secret);
			return 0;
		}
		KFT_LOG(c->cm->lg, KFT_LOG_INFO, "cert-rotation",
		        action == KFT_CM_CERT_NEW_CA ? "refreshing CA and server certs"
		                                     : "refreshing server certs",
		        json_pack("{s:s, s:s, s:b}", "secret", name, "namespace", c->ns, "create",
		                  absent));
		if ((rc = renew(c, action, p, err))) {
			json_decref(secret);
			return rc;
		}
		if (absent)
			secret = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s}", "apiVersion", "v1",
			                   "kind", "Secret", "metadata", "name", name, "namespace",
			                   c->ns, "type", "Opaque");
		if (!secret || put_data(secret, p) != 0) {
			json_decref(secret);
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		}
		rc = absent ? kft_kube_create(kube, &secrets, secret, NULL, err)
		            : kft_kube_update(kube, &secrets, secret, NULL, err);
		json_decref(secret);
		if (rc == KFT_ENOTFOUND && absent)
			return no_namespace(c, err);
		if (rc == 0) {
			*changed = 1;
			return 0;
		}
		if (rc != KFT_EEXIST && rc != KFT_ECONFLICT)
			return rc;
		KFT_LOG(c->cm->lg, -1, "cert-rotation",
		        "Secret written by another replica; reading it", NULL);
	}
	return kft_error_set(err, KFT_ECONFLICT, "secret %s/%s: kept changing under us", c->ns,
	                     name);
}

/* ---- files and injection --------------------------------------------------------------- */

static int same_content(const char *path, const char *want)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = strlen(want);
	char *buf = malloc(n + 2);
	size_t got = buf ? fread(buf, 1, n + 1, f) : 0;
	fclose(f);
	int same = buf && got == n && memcmp(buf, want, n) == 0;
	free(buf);
	return same;
}

/* Writes path atomically (a temporary file renamed over it), mode 0600. */
static int write_file(const char *dir, const char *name, const char *content, kft_error *err)
{
	char path[600], tmp[640];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (same_content(path, content))
		return 0;
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EROFS || errno == EACCES))
		/* the Secret mounted read-only (upstream's manifests): the
		 * kubelet brings its new content, as cert-controller waits */
		return kft_error_set(err, KFT_EUNAVAILABLE,
		                     "waiting for the mounted Secret to update %s", path);
	if (fd < 0)
		return kft_error_set(err, KFT_EIO, "open %s: %s", tmp, strerror(errno));
	size_t n = strlen(content), off = 0;
	while (off < n) {
		ssize_t w = write(fd, content + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			unlink(tmp);
			return kft_error_set(err, KFT_EIO, "write %s: %s", tmp, strerror(errno));
		}
		off += (size_t)w;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return kft_error_set(err, KFT_EIO, "write %s: %s", path, strerror(errno));
	}
	return 0;
}

static int mkdirs(const char *dir)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

static int write_files(kft_cm_certs *c, const pems *p, kft_error *err)
{
	if (mkdirs(c->dir) != 0 && errno != EROFS && errno != EACCES)
		return kft_error_set(err, KFT_EIO, "mkdir %s: %s", c->dir, strerror(errno));
	int rc;
	/* the key first: the watcher reloads when tls.crt changes */
	if ((rc = write_file(c->dir, "ca.crt", p->ca_crt, err)) ||
	    (rc = write_file(c->dir, "tls.key", p->tls_key, err)) ||
	    (rc = write_file(c->dir, "tls.crt", p->tls_crt, err)))
		return rc;
	return 0;
}

/* Sets caBundle in every webhook of one configuration; absent is no error
 * (it may be installed after us; the next check injects it). */
static int inject(kft_cm_certs *c, const kft_gvr *gvr, const char *name, const char *bundle,
                  kft_error *err)
{
	for (int attempt = 0; attempt < 5; attempt++) {
		json_t *cfg = NULL;
		int rc = kft_kube_get(c->cm->kube, gvr, NULL, name, &cfg, err);
		if (rc == KFT_ENOTFOUND) {
			c->missing = 1;
			return 0;
		}
		if (rc)
			return rc;
		int dirty = 0;
		size_t i;
		json_t *wh;
		json_array_foreach(json_object_get(cfg, "webhooks"), i, wh)
		{
			json_t *cc = json_object_get(wh, "clientConfig");
			if (!json_is_object(cc))
				continue;
			const char *have = json_string_value(json_object_get(cc, "caBundle"));
			if (have && strcmp(have, bundle) == 0)
				continue;
			json_object_set_new(cc, "caBundle", json_string(bundle));
			dirty = 1;
		}
		if (dirty) {
			rc = kft_kube_update(c->cm->kube, gvr, cfg, NULL, err);
			if (rc == 0)
				KFT_LOG(c->cm->lg, KFT_LOG_INFO, "cert-rotation",
				        "Ensured CA bundle in webhook configuration",
				        json_pack("{s:s, s:s}", "kind", gvr->kind, "name", name));
		}
		json_decref(cfg);
		if (rc != KFT_ECONFLICT)
			return rc;
	}
	return kft_error_set(err, KFT_ECONFLICT, "%s %s: kept changing under us", gvr->kind, name);
}

static int refresh(kft_cm_certs *c, kft_error *err)
{
	pems p = {0};
	int changed = 0;
	c->missing = 0;
	int rc = ensure_secret(c, &p, &changed, err);
	if (!rc)
		rc = write_files(c, &p, err);
	json_t *bundle = rc ? NULL : b64(p.ca_crt);
	if (!rc && !bundle)
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
	if (!rc)
		rc = inject(c, &validating, VALIDATING_NAME, json_string_value(bundle), err);
	if (!rc)
		rc = inject(c, &mutating, MUTATING_NAME, json_string_value(bundle), err);
	json_decref(bundle);
	pems_free(&p);
	if (!rc && !atomic_load(&c->ready)) {
		atomic_store(&c->ready, 1);
		KFT_LOG(c->cm->lg, KFT_LOG_INFO, "cert-rotation", "certs are ready",
		        json_pack("{s:s}", "dir", c->dir));
	}
	return rc;
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

/* A test hook's seconds (at most ten years), else dflt. */
static long long env_seconds(const char *name, long long dflt)
{
	unsigned long long n = 0;
	bool bad = false;
	return kft_env_whole(name, 10ULL * 365 * 24 * 3600, &n, &bad) && n > 0 ? (long long)n
	                                                                       : dflt;
}

static void operator_namespace(char *buf, size_t n)
{
	FILE *f = fopen(SA_NS_FILE, "re");
	buf[0] = '\0';
	if (f) {
		size_t got = fread(buf, 1, n - 1, f);
		fclose(f);
		buf[got] = '\0';
		buf[strcspn(buf, " \t\r\n")] = '\0';
	}
	if (!buf[0])
		snprintf(buf, n, "%s", DEFAULT_NS);
}

int kft_cm_certs_start(kft_cm *cm, const char *dir, kft_cm_certs **out, kft_error *err)
{
	*out = NULL;
	kft_cm_certs *c = calloc(1, sizeof(*c));
	if (!c)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	c->cm = cm;
	operator_namespace(c->ns, sizeof(c->ns));
	snprintf(c->dns, sizeof(c->dns), "%s.%s.svc", cm->cfg->cert_webhook_service, c->ns);
	snprintf(c->dir, sizeof(c->dir), "%s", dir);
	c->serving_s = env_seconds("KFTRAINER_CERT_VALIDITY", SERVING_SECONDS);
	c->lookahead_s = env_seconds("KFTRAINER_CERT_LOOKAHEAD", LOOKAHEAD_SECS);
	c->check_s = (int)env_seconds("KFTRAINER_CERT_CHECK_INTERVAL", CHECK_SECONDS);
	const char *lb = getenv("KFTRAINER_CERT_LOOPBACK");
	c->loopback = lb && strcmp(lb, "1") == 0;
	if (c->lookahead_s >= c->serving_s)
		c->lookahead_s = c->serving_s / 2; /* else every check would renew */
	/* The first round is synchronous: the server needs its files. Only a
	 * mounted Secret not yet updated is waited for (each second). */
	int rc = refresh(c, err);
	if (rc && rc != KFT_EUNAVAILABLE) {
		kft_cm_certs_free(c);
		return rc;
	}
	if (rc)
		KFT_LOG(cm->lg, KFT_LOG_INFO, "cert-rotation", err->message, NULL);
	c->next_check = time(NULL) + (rc ? 1 : c->missing && c->check_s > 2 ? 2 : c->check_s);
	*out = c;
	return 0;
}

void kft_cm_certs_tick(kft_cm_certs *c)
{
	if (!c || time(NULL) < c->next_check)
		return;
	kft_error err = {0};
	int rc = refresh(c, &err);
	if (rc)
		KFT_LOG_ERR(c->cm->lg, "cert-rotation", "could not refresh certificates",
		            err.message, NULL);
	/* until ready, look again every second; while a webhook configuration
	 * is missing, every 2 s, so one installed after us gets its CA soon
	 * (cert-controller watches them) */
	int period = rc && !atomic_load(&c->ready)  ? 1
	             : c->missing && c->check_s > 2 ? 2
	                                            : c->check_s;
	c->next_check = time(NULL) + period;
}

int kft_cm_certs_ready(kft_cm_certs *c)
{
	return c && atomic_load(&c->ready);
}

void kft_cm_certs_free(kft_cm_certs *c)
{
	if (!c)
		return;
	free(c->ca_pem);
	free(c);
}
