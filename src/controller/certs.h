/*
 * certs.h - the webhook certificate rotator's pure decision (internal to src/controller/ and its
 * tests).
 */
#ifndef KFT_CONTROLLER_CERTS_H
#define KFT_CONTROLLER_CERTS_H

#include <time.h>

/* ---- webhook certificates (src/controller/certs.c) ------------------------- */

typedef enum kft_cm_cert_action {
	KFT_CM_CERT_KEEP,        /* the Secret's certificates serve on */
	KFT_CM_CERT_NEW_SERVING, /* a new serving certificate from the same CA */
	KFT_CM_CERT_NEW_CA,      /* a new CA and a serving certificate from it */
} kft_cm_cert_action;

/*
 * The rotator's decision over a Secret's four PEM values (any may be NULL):
 * a new CA unless ca.crt/ca.key are a matching CA pair for
 * kubeflow-trainer-ca valid from now until now + lookahead_s; else a new
 * serving certificate unless tls.crt/tls.key are a matching pair the CA
 * signed for dns_name, valid as long; else keep.
 */
kft_cm_cert_action kft_cm_cert_plan(const char *ca_crt, const char *ca_key, const char *tls_crt,
                                    const char *tls_key, const char *dns_name, time_t now,
                                    long long lookahead_s);

#endif
