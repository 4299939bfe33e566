/*
 * jwt.h - projected service-account tokens checked as upstream v2.3.0's
 * status server checks them (internal to the controller).
 *
 * Upstream (pkg/statusserver/auth.go) verifies a token with go-oidc v3.20's
 * IDTokenVerifier over go-jose v4: a compact JWS whose "alg" is one the
 * issuer's discovery document lists (RS256 when it lists none), signed by a
 * key of the issuer's JWKS (the header's "kid" picks it; none tries every
 * key), whose claims decode as go-oidc's idToken, then iss equal to the
 * issuer, aud holding the expected audience, exp not passed, nbf not more
 * than five minutes ahead; upstream then wants kubernetes.io.namespace to
 * be the TrainJob's namespace.
 *
 * Everything here is pure (no I/O, the time is an argument) and fuzzed
 * (tests/fuzz/fuzz_jwt.c): the token comes from any pod, the key set from
 * the API server.
 */
#ifndef KFT_CONTROLLER_JWT_H
#define KFT_CONTROLLER_JWT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kftrainer/error.h"

/* Signature algorithms (bits): go-oidc's supported list without EdDSA, which
 * mbedTLS 2.28 cannot verify (no Kubernetes issuer signs with it). */
enum {
	KFT_JWT_RS256 = 1u << 0,
	KFT_JWT_RS384 = 1u << 1,
	KFT_JWT_RS512 = 1u << 2,
	KFT_JWT_ES256 = 1u << 3,
	KFT_JWT_ES384 = 1u << 4,
	KFT_JWT_ES512 = 1u << 5,
	KFT_JWT_PS256 = 1u << 6,
	KFT_JWT_PS384 = 1u << 7,
	KFT_JWT_PS512 = 1u << 8,
};

/* Longest token looked at (a projected token is about 1 KiB). */
#define KFT_JWT_MAX 16384

/* The algorithms of a discovery document's id_token_signing_alg_values_supported
 * (borrowed; anything not an array of strings counts as empty) that we
 * verify; RS256 when none, as go-oidc defaults. */
unsigned kft_jwt_algs_from_discovery(const json_t *values);

typedef struct kft_jwks kft_jwks;

/* A JSON Web Key Set ({"keys": [...]}, borrowed) as go-jose unmarshals one:
 * every key must decode or the set is refused. RSA keys need n and e
 * (1024 bits at least, as Go's crypto/rsa), EC keys crv P-256/P-384/P-521
 * with x and y of the curve's exact size naming a point on it; OKP and oct
 * keys are kept as unusable, any other kty refused. KFT_EINVAL naming the
 * key (keys[i]), KFT_ENOMEM. *out is freed with kft_jwks_free. */
int kft_jwks_parse(const json_t *doc, kft_jwks **out, kft_error *err);

/* How many keys the set holds (unusable ones included). */
size_t kft_jwks_count(const kft_jwks *keys);

void kft_jwks_free(kft_jwks *keys);

/* A compact JWS taken apart. */
typedef struct kft_jwt {
	unsigned alg;         /* one KFT_JWT_* bit */
	char kid[256];        /* "" when absent */
	unsigned char *input; /* the signing input, as go-jose recomputes it */
	size_t input_len;
	unsigned char *signature;
	size_t signature_len;
	json_t *claims; /* the decoded payload (an object) */
} kft_jwt;

/* Takes a token apart as go-jose's ParseSigned does: three base64url parts
 * (trailing '=' tolerated), a protected header that is a JSON object with
 * an "alg" in `algs` and no "crit", a payload that is one JSON object.
 * KFT_EDENIED with the reason, KFT_ENOMEM. On success free t with
 * kft_jwt_free; on failure there is nothing to free. */
int kft_jwt_parse(const char *token, size_t len, unsigned algs, kft_jwt *t, kft_error *err);

/* 1 when a key of `keys` whose kid matches (or any key, when the token has
 * no kid) verifies t's signature, else 0. */
int kft_jwt_signed_by(const kft_jwt *t, const kft_jwks *keys);

/* The claims checks after the signature: the claims decode as go-oidc's
 * idToken, then iss == issuer, audience in aud, exp >= now, nbf <= now +
 * 300 s, and kubernetes.io.namespace == ns (upstream's projectedToken).
 * now is Unix seconds. 0, or KFT_EDENIED with the reason. */
int kft_jwt_check_claims(const kft_jwt *t, const char *issuer, const char *audience, const char *ns,
                         int64_t now, kft_error *err);

void kft_jwt_free(kft_jwt *t);

/* The issuer (iss) of a token read without verification, as upstream's
 * getClusterOIDCIssuerURL reads the controller's own service-account
 * token: three dot-separated parts, the second base64url JSON with a
 * non-empty iss. A new string, or NULL with KFT_EINVAL ("serviceaccount
 * token is not a jwt", "serviceaccount token missing issuer claim"). */
char *kft_jwt_unverified_issuer(const char *token, kft_error *err);

#endif
