/*
 * jwt.c - projected service-account tokens verified as go-oidc v3.20 and
 * go-jose v4 verify them for upstream's status server. See jwt.h.
 *
 * Three steps, in go-oidc's order: take the compact JWS apart (parse),
 * find a key of the issuer's set that verifies the signature (signed_by;
 * the caller fetches the set again once when none does, as go-oidc's
 * RemoteKeySet does), then read the claims with encoding/json's rules:
 * struct fields match keys ignoring case (a later duplicate wins), a value
 * of the wrong type fails the whole decode. JOSE headers are a Go map, so
 * their keys match exactly.
 *
 * Signatures are checked with mbedTLS: RSA PKCS#1 v1.5 and PSS (any salt
 * length, as Go's PSSSaltLengthAuto), ECDSA with r || s of the curve's
 * size. The signing input is recomputed from the decoded parts, as go-jose
 * does, so a part encoded in a non-canonical way does not verify.
 */
#include "controller/jwt.h"

#include <mbedtls/bignum.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/ecp.h>
#include <mbedtls/md.h>
#include <mbedtls/rsa.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/base64.h"

#define NBF_LEEWAY_S 300
#define RSA_MIN_BITS 1024

enum { KEY_UNUSABLE, KEY_RSA, KEY_EC };

typedef struct jwk {
	int kty;
	char kid[256];
	mbedtls_rsa_context rsa;
	mbedtls_ecp_group grp;
	mbedtls_ecp_point q;
	mbedtls_ecp_group_id curve;
} jwk;

struct kft_jwks {
	jwk *keys;
	size_t n;
};

static const struct {
	const char *name;
	unsigned bit;
} algs[] = {
        {"RS256", KFT_JWT_RS256}, {"RS384", KFT_JWT_RS384}, {"RS512", KFT_JWT_RS512},
        {"ES256", KFT_JWT_ES256}, {"ES384", KFT_JWT_ES384}, {"ES512", KFT_JWT_ES512},
        {"PS256", KFT_JWT_PS256}, {"PS384", KFT_JWT_PS384}, {"PS512", KFT_JWT_PS512},
};

static unsigned alg_bit(const char *name)
{
	for (size_t i = 0; name && i < sizeof(algs) / sizeof(algs[0]); i++)
		if (strcmp(algs[i].name, name) == 0)
			return algs[i].bit;
	return 0;
}

unsigned kft_jwt_algs_from_discovery(const json_t *values)
{
	unsigned mask = 0;
	size_t i;
	const json_t *v;
	if (json_is_array(values))
		json_array_foreach(values, i, v) mask |= alg_bit(json_string_value(v));
	return mask ? mask : KFT_JWT_RS256;
}

/* The value of the last member of obj whose key equals name ignoring case,
 * as encoding/json fills a struct field. */
static const json_t *field(const json_t *obj, const char *name)
{
	const char *k;
	json_t *v;
	const json_t *found = NULL;
	json_object_foreach((json_t *)obj, k, v)
	{
		if (strcasecmp(k, name) == 0)
			found = v;
	}
	return found;
}

/* A string field: absent or null is "" (*out NULL), a string is itself,
 * anything else fails the decode (-1). */
static int string_field(const json_t *obj, const char *name, const char **out)
{
	const json_t *v = field(obj, name);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -1;
	*out = json_string_value(v);
	return 0;
}

/* go-jose's base64URLDecode: trailing '=' dropped, then RawURLEncoding. */
static unsigned char *b64(const char *s, size_t len, size_t *out_len)
{
	while (len > 0 && s[len - 1] == '=')
		len--;
	return kft_base64url_decode(s, len, out_len);
}

/* ---- key sets ------------------------------------------------------------------ */

static void jwk_init(jwk *k)
{
	memset(k, 0, sizeof(*k));
	mbedtls_rsa_init(&k->rsa, MBEDTLS_RSA_PKCS_V15, 0);
	mbedtls_ecp_group_init(&k->grp);
	mbedtls_ecp_point_init(&k->q);
}

static void jwk_free(jwk *k)
{
	mbedtls_rsa_free(&k->rsa);
	mbedtls_ecp_group_free(&k->grp);
	mbedtls_ecp_point_free(&k->q);
}

/* A base64url member of a key: 0 with bytes (freed by the caller), 1 when
 * absent or null, -1 when malformed. */
static int key_bytes(const json_t *key, const char *name, unsigned char **out, size_t *len)
{
	const char *s;
	*out = NULL;
	if (string_field(key, name, &s) != 0)
		return -1;
	if (!s)
		return 1;
	*out = b64(s, strlen(s), len);
	return *out ? 0 : -1;
}

static const char *rsa_key(jwk *k, const json_t *key)
{
	unsigned char *n = NULL, *e = NULL;
	size_t nl = 0, el = 0;
	int rn = key_bytes(key, "n", &n, &nl), re = key_bytes(key, "e", &e, &el);
	const char *why = NULL;
	if (rn < 0 || re < 0)
		why = "invalid RSA key: n or e is not base64url";
	else if (rn || re)
		why = "invalid RSA key, missing n/e values";
	else if (el > 0 && el <= 4 && nl > 0 &&
	         mbedtls_rsa_import_raw(&k->rsa, n, nl, NULL, 0, NULL, 0, NULL, 0, e, el) == 0 &&
	         mbedtls_rsa_complete(&k->rsa) == 0 && mbedtls_rsa_check_pubkey(&k->rsa) == 0 &&
	         mbedtls_rsa_get_len(&k->rsa) * 8 >= RSA_MIN_BITS) {
		/* Go's crypto/rsa verifies with e in [2, 2^31) only */
		unsigned long ev = 0;
		for (size_t i = 0; i < el; i++)
			ev = ev << 8 | e[i];
		k->kty = ev >= 2 && ev < (1ul << 31) ? KEY_RSA : KEY_UNUSABLE;
	}
	free(n);
	free(e);
	return why;
}

static const char *ec_key(jwk *k, const json_t *key)
{
	const char *crv;
	if (string_field(key, "crv", &crv) != 0 || !crv)
		return "unsupported elliptic curve";
	size_t size;
	if (strcmp(crv, "P-256") == 0)
		k->curve = MBEDTLS_ECP_DP_SECP256R1, size = 32;
	else if (strcmp(crv, "P-384") == 0)
		k->curve = MBEDTLS_ECP_DP_SECP384R1, size = 48;
	else if (strcmp(crv, "P-521") == 0)
		k->curve = MBEDTLS_ECP_DP_SECP521R1, size = 66;
	else
		return "unsupported elliptic curve";
	unsigned char *x = NULL, *y = NULL, point[1 + 2 * 66];
	size_t xl = 0, yl = 0;
	int rx = key_bytes(key, "x", &x, &xl), ry = key_bytes(key, "y", &y, &yl);
	const char *why = NULL;
	if (rx || ry)
		why = "invalid EC key, missing x/y values";
	else if (xl != size || yl != size)
		why = "invalid EC public key, wrong length for x or y";
	if (!why) {
		point[0] = 0x04;
		memcpy(point + 1, x, size);
		memcpy(point + 1 + size, y, size);
		if (mbedtls_ecp_group_load(&k->grp, k->curve) != 0 ||
		    mbedtls_ecp_point_read_binary(&k->grp, &k->q, point, 1 + 2 * size) != 0 ||
		    mbedtls_ecp_check_pubkey(&k->grp, &k->q) != 0)
			why = "invalid EC key, X/Y are not on declared curve";
		else
			k->kty = KEY_EC;
	}
	free(x);
	free(y);
	return why;
}

static int parse_key(jwk *k, const json_t *key, size_t i, kft_error *err)
{
	const char *kty, *kid, *why = NULL;
	if (!json_is_object(key) && !json_is_null(key))
		return kft_error_set(err, KFT_EINVAL, "keys[%zu]: not a JSON object", i);
	if (string_field(key, "kty", &kty) != 0 || string_field(key, "kid", &kid) != 0 ||
	    (kid && strlen(kid) >= sizeof(k->kid)))
		return kft_error_set(err, KFT_EINVAL, "keys[%zu]: kty and kid must be strings", i);
	snprintf(k->kid, sizeof(k->kid), "%s", kid ? kid : "");
	if (kty && strcmp(kty, "RSA") == 0)
		why = rsa_key(k, key);
	else if (kty && strcmp(kty, "EC") == 0)
		why = ec_key(k, key);
	else if (!kty || (strcmp(kty, "OKP") != 0 && strcmp(kty, "oct") != 0))
		why = "unknown json web key type";
	return why ? kft_error_set(err, KFT_EINVAL, "keys[%zu]: %s", i, why) : 0;
}

int kft_jwks_parse(const json_t *doc, kft_jwks **out, kft_error *err)
{
	*out = NULL;
	const json_t *keys = json_is_object(doc) ? field(doc, "keys") : NULL;
	if (!json_is_object(doc) || (keys && !json_is_array(keys) && !json_is_null(keys)))
		return kft_error_set(err, KFT_EINVAL,
		                     "a JSON Web Key Set must be an object "
		                     "with a keys array");
	kft_jwks *set = calloc(1, sizeof(*set));
	size_t n = json_is_array(keys) ? json_array_size(keys) : 0;
	if (!set || (n && !(set->keys = calloc(n, sizeof(jwk))))) {
		free(set);
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		jwk_init(&set->keys[i]);
		set->n = i + 1;
		int rc = parse_key(&set->keys[i], json_array_get(keys, i), i, err);
		if (rc) {
			kft_jwks_free(set);
			return rc;
		}
	}
	*out = set;
	return 0;
}

size_t kft_jwks_count(const kft_jwks *keys)
{
	return keys ? keys->n : 0;
}

void kft_jwks_free(kft_jwks *keys)
{
	if (!keys)
		return;
	for (size_t i = 0; i < keys->n; i++)
		jwk_free(&keys->keys[i]);
	free(keys->keys);
	free(keys);
}

/* ---- the token ----------------------------------------------------------------- */

static int denied(kft_error *err, const char *why)
{
	return kft_error_set(err, KFT_EDENIED, "%s", why);
}

void kft_jwt_free(kft_jwt *t)
{
	free(t->input);
	free(t->signature);
	json_decref(t->claims);
	memset(t, 0, sizeof(*t));
}

/* The protected header's alg and kid (exact keys; a value that is not a
 * string reads as "", as go-jose's getString). */
static int read_header(kft_jwt *t, const json_t *hdr, unsigned allowed, kft_error *err)
{
	if (!json_is_object(hdr))
		return denied(err,
		              "oidc: malformed jwt: the protected header is not a JSON object");
	if (json_object_get(hdr, "crit") || json_object_get(hdr, "b64"))
		return denied(err, "oidc: malformed jwt: unsupported crit header");
	t->alg = alg_bit(json_string_value(json_object_get(hdr, "alg")));
	if (!(t->alg & allowed))
		return denied(err, "oidc: malformed jwt: unexpected signature algorithm");
	const char *kid = json_string_value(json_object_get(hdr, "kid"));
	if (kid && strlen(kid) >= sizeof(t->kid))
		return denied(err, "oidc: malformed jwt: kid too long");
	snprintf(t->kid, sizeof(t->kid), "%s", kid ? kid : "");
	return 0;
}

/* The signing input go-jose recomputes: the decoded parts encoded again. */
static unsigned char *signing_input(const unsigned char *h, size_t hl, const unsigned char *p,
                                    size_t pl, size_t *len)
{
	size_t el = 0, ql = 0;
	char *eh = kft_base64url_encode(h, hl, &el), *ep = kft_base64url_encode(p, pl, &ql);
	unsigned char *in = eh && ep ? malloc(el + ql + 2) : NULL;
	if (in) {
		memcpy(in, eh, el);
		in[el] = '.';
		memcpy(in + el + 1, ep, ql + 1);
		*len = el + 1 + ql;
	}
	free(eh);
	free(ep);
	return in;
}

int kft_jwt_parse(const char *token, size_t len, unsigned allowed, kft_jwt *t, kft_error *err)
{
	memset(t, 0, sizeof(*t));
	if (len > KFT_JWT_MAX)
		return denied(err, "oidc: malformed jwt: token too long");
	const char *d1 = memchr(token, '.', len);
	const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token)) : NULL;
	if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token)))
		return denied(err, "oidc: malformed jwt: compact JWS format must have three parts");
	size_t hl = 0, pl = 0;
	unsigned char *h = b64(token, (size_t)(d1 - token), &hl);
	unsigned char *p = b64(d1 + 1, (size_t)(d2 - d1 - 1), &pl);
	t->signature = b64(d2 + 1, len - (size_t)(d2 + 1 - token), &t->signature_len);
	int rc = 0;
	if (!h || !p || !t->signature) {
		rc = denied(err, "oidc: malformed jwt: illegal base64 data");
		goto out;
	}
	json_t *hdr = json_loadb((const char *)h, hl, 0, NULL);
	rc = read_header(t, hdr, allowed, err);
	json_decref(hdr);
	if (rc)
		goto out;
	t->claims = json_loadb((const char *)p, pl, JSON_DECODE_ANY, NULL);
	if (!json_is_object(t->claims)) {
		rc = denied(err, "oidc: failed to unmarshal claims: not a JSON object");
		goto out;
	}
	if (!(t->input = signing_input(h, hl, p, pl, &t->input_len)))
		rc = kft_error_set(err, KFT_ENOMEM, "out of memory");
out:
	free(h);
	free(p);
	if (rc)
		kft_jwt_free(t);
	return rc;
}

/* ---- signatures ------------------------------------------------------------------ */

static mbedtls_md_type_t alg_md(unsigned alg)
{
	if (alg & (KFT_JWT_RS256 | KFT_JWT_ES256 | KFT_JWT_PS256))
		return MBEDTLS_MD_SHA256;
	if (alg & (KFT_JWT_RS384 | KFT_JWT_ES384 | KFT_JWT_PS384))
		return MBEDTLS_MD_SHA384;
	return MBEDTLS_MD_SHA512;
}

static int ec_verifies(jwk *k, const kft_jwt *t, const unsigned char *hash, size_t hl)
{
	mbedtls_ecp_group_id want = t->alg == KFT_JWT_ES256   ? MBEDTLS_ECP_DP_SECP256R1
	                            : t->alg == KFT_JWT_ES384 ? MBEDTLS_ECP_DP_SECP384R1
	                                                      : MBEDTLS_ECP_DP_SECP521R1;
	size_t size = t->alg == KFT_JWT_ES256 ? 32 : t->alg == KFT_JWT_ES384 ? 48 : 66;
	if (k->curve != want || t->signature_len != 2 * size)
		return 0;
	mbedtls_mpi r, s;
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	int ok = mbedtls_mpi_read_binary(&r, t->signature, size) == 0 &&
	         mbedtls_mpi_read_binary(&s, t->signature + size, size) == 0 &&
	         mbedtls_ecdsa_verify(&k->grp, hash, hl, &k->q, &r, &s) == 0;
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
	return ok;
}

static int rsa_verifies(jwk *k, const kft_jwt *t, mbedtls_md_type_t md, const unsigned char *hash,
                        size_t hl)
{
	if (t->signature_len != mbedtls_rsa_get_len(&k->rsa))
		return 0;
	if (t->alg & (KFT_JWT_PS256 | KFT_JWT_PS384 | KFT_JWT_PS512))
		return mbedtls_rsa_rsassa_pss_verify_ext(
		               &k->rsa, NULL, NULL, MBEDTLS_RSA_PUBLIC, md, (unsigned)hl, hash, md,
		               MBEDTLS_RSA_SALT_LEN_ANY, t->signature) == 0;
	return mbedtls_rsa_rsassa_pkcs1_v15_verify(&k->rsa, NULL, NULL, MBEDTLS_RSA_PUBLIC, md,
	                                           (unsigned)hl, hash, t->signature) == 0;
}

int kft_jwt_signed_by(const kft_jwt *t, const kft_jwks *keys)
{
	unsigned char hash[64];
	mbedtls_md_type_t md = alg_md(t->alg);
	const mbedtls_md_info_t *info = mbedtls_md_info_from_type(md);
	if (!keys || !info || !t->input || mbedtls_md(info, t->input, t->input_len, hash) != 0)
		return 0;
	size_t hl = mbedtls_md_get_size(info);
	int ec = (t->alg & (KFT_JWT_ES256 | KFT_JWT_ES384 | KFT_JWT_ES512)) != 0;
	for (size_t i = 0; i < keys->n; i++) {
		jwk *k = &keys->keys[i];
		if (t->kid[0] && strcmp(k->kid, t->kid) != 0)
			continue;
		if (ec && k->kty == KEY_EC && ec_verifies(k, t, hash, hl))
			return 1;
		if (!ec && k->kty == KEY_RSA && rsa_verifies(k, t, md, hash, hl))
			return 1;
	}
	return 0;
}

/* ---- claims -------------------------------------------------------------------------- */

/* A JSON number's text as Go's json.Number checks it. */
static int valid_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		s += strspn(s, "0123456789");
	else
		return 0;
	if (*s == '.') {
		s++;
		if (!strspn(s, "0123456789"))
			return 0;
		s += strspn(s, "0123456789");
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!strspn(s, "0123456789"))
			return 0;
		s += strspn(s, "0123456789");
	}
	return *s == '\0';
}

/* go-oidc's jsonTime: a number (or a string holding one) of Unix seconds,
 * truncated; floats beyond int64 read as Go's conversion gives them on
 * amd64 (the minimum). 1 absent, 0 set, -1 the decode fails (null too). */
static int unix_time(const json_t *v, int64_t *out)
{
	double f;
	if (!v)
		return 1;
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_real(v))
		f = json_real_value(v);
	else if (json_is_string(v) && valid_number(json_string_value(v))) {
		char *end;
		long long ll = strtoll(json_string_value(v), &end, 10);
		if (*end == '\0') {
			*out = ll;
			return 0;
		}
		f = strtod(json_string_value(v), NULL);
	} else {
		return -1;
	}
	*out = isfinite(f) && f < 9.2233720368547758e18 && f >= -9.2233720368547758e18 ? (int64_t)f
	                                                                               : INT64_MIN;
	return 0;
}

/* go-oidc's audience: a string, or an array of strings (null elements
 * read as ""). 1 when `want` is one of them, 0 when not, -1 on a type
 * error. */
static int audience_has(const json_t *aud, const char *want)
{
	size_t i;
	const json_t *v;
	if (!aud || json_is_null(aud))
		return !aud ? 0 : strcmp(want, "") == 0;
	if (json_is_string(aud))
		return strcmp(json_string_value(aud), want) == 0;
	if (!json_is_array(aud))
		return -1;
	int found = 0;
	json_array_foreach(aud, i, v)
	{
		if (!json_is_string(v) && !json_is_null(v))
			return -1;
		if (strcmp(json_is_string(v) ? json_string_value(v) : "", want) == 0)
			found = 1;
	}
	return found;
}

/* _claim_names (map[string]string) and _claim_sources (map[string]
 * {endpoint, access_token}): types, then every name's source non-empty and
 * present, as go-oidc's Verify requires. 0 or -1. */
static int distributed_claims(const json_t *claims)
{
	const json_t *names = field(claims, "_claim_names");
	const json_t *sources = field(claims, "_claim_sources");
	const char *k, *s;
	json_t *v;
	if ((names && !json_is_null(names) && !json_is_object(names)) ||
	    (sources && !json_is_null(sources) && !json_is_object(sources)))
		return -1;
	json_object_foreach((json_t *)sources, k, v)
	{
		if (!json_is_null(v) && (!json_is_object(v) || string_field(v, "endpoint", &s) ||
		                         string_field(v, "access_token", &s)))
			return -1;
	}
	json_object_foreach((json_t *)names, k, v)
	{
		if (!json_is_string(v) && !json_is_null(v))
			return -1;
	}
	json_object_foreach((json_t *)names, k, v)
	{
		const char *src = json_is_string(v) ? json_string_value(v) : "";
		if (!*src || !json_object_get(sources, src))
			return -1;
	}
	return 0;
}

int kft_jwt_check_claims(const kft_jwt *t, const char *issuer, const char *audience, const char *ns,
                         int64_t now, kft_error *err)
{
	const json_t *c = t->claims;
	const char *iss, *s;
	int64_t exp = 0, iat = 0, nbf = 0;
	if (!json_is_object(c))
		return denied(err, "oidc: failed to unmarshal claims");
	int has_exp = unix_time(field(c, "exp"), &exp), has_iat = unix_time(field(c, "iat"), &iat);
	const json_t *nbf_v = field(c, "nbf");
	int has_nbf = json_is_null(nbf_v) ? 1 : unix_time(nbf_v, &nbf);
	int aud = audience_has(field(c, "aud"), audience);
	if (string_field(c, "iss", &iss) || string_field(c, "sub", &s) ||
	    string_field(c, "nonce", &s) || string_field(c, "at_hash", &s) || has_exp < 0 ||
	    has_iat < 0 || has_nbf < 0 || aud < 0 || distributed_claims(c) != 0)
		return denied(err, "oidc: failed to unmarshal claims");
	if (strcmp(iss ? iss : "", issuer) != 0)
		return denied(err, "oidc: id token issued by a different provider");
	if (aud != 1)
		return denied(err, "oidc: expected audience not in the token's audience");
	/* time.Unix(exp, 0).Before(now): now has a fraction of a second */
	if (has_exp || exp <= now)
		return kft_error_set(err, KFT_EDENIED, "oidc: token is expired");
	if (has_nbf == 0 && nbf > now + NBF_LEEWAY_S)
		return denied(err, "oidc: current time before the nbf (not before) time");
	/* upstream's projectedToken: {"kubernetes.io": {"namespace": ...}} */
	const json_t *k8s = field(c, "kubernetes.io");
	const char *token_ns = NULL;
	if (k8s && !json_is_null(k8s) &&
	    (!json_is_object(k8s) || string_field(k8s, "namespace", &token_ns)))
		return denied(err, "the token's kubernetes.io claim does not decode");
	if (strcmp(token_ns ? token_ns : "", ns) != 0)
		return denied(err, "the token is bound to a pod of another namespace");
	return 0;
}

char *kft_jwt_unverified_issuer(const char *token, kft_error *err)
{
	size_t len = strlen(token);
	while (len > 0 && strchr(" \t\r\n", token[len - 1]))
		len--;
	while (len > 0 && strchr(" \t\r\n", *token))
		token++, len--;
	const char *d1 = memchr(token, '.', len);
	const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token)) : NULL;
	if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token))) {
		kft_error_set(err, KFT_EINVAL, "serviceaccount token is not a jwt");
		return NULL;
	}
	size_t pl = 0;
	unsigned char *p = kft_base64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &pl);
	json_t *claims = p ? json_loadb((const char *)p, pl, JSON_DECODE_ANY, NULL) : NULL;
	free(p);
	const char *iss = NULL;
	char *out = NULL;
	if (!json_is_object(claims) || string_field(claims, "iss", &iss) != 0)
		kft_error_set(err, KFT_EINVAL, "serviceaccount token is not a jwt");
	else if (!iss || !*iss)
		kft_error_set(err, KFT_EINVAL, "serviceaccount token missing issuer claim");
	else if (!(out = strdup(iss)))
		kft_error_set(err, KFT_ENOMEM, "out of memory");
	json_decref(claims);
	return out;
}
