/*
 * test_jwt.c - the status server's token checks (src/controller/jwt.c)
 * against published and fixed tokens: deterministic, no cluster.
 *
 * Sources:
 *   "RFC 7515"  appendix A.2 (RS256) and A.3 (ES256): the example tokens and
 *               public keys, which every JOSE library verifies
 *   "go-jose"   v4 ParseSigned: three base64url parts, a protected header
 *               object with an allowed "alg", no "crit"; a JWKS key set
 *               refused whole when one key does not decode
 *   "go-oidc"   v3.20 IDTokenVerifier: iss equal to the issuer, the audience
 *               in aud (a string or a list), exp not passed, nbf at most five
 *               minutes ahead; a key with the token's kid, or every key
 *   "upstream"  Kubeflow Trainer v2.3.0 pkg/statusserver/auth.go: the
 *               projected token's kubernetes.io.namespace is the TrainJob's
 *   the tier's cluster: a real projected service-account token (ES256) and
 *               its API server's key set, as tests/fuzz/corpus/fuzz_jwt keeps
 * Tokens with claims of our own are signed here with a fixed RSA key:
 * RSASSA-PKCS1-v1_5 signatures are deterministic, so every run checks the
 * same bytes.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <mbedtls/pk.h>
#include <mbedtls/rsa.h>
#include <mbedtls/sha256.h>

#include "controller/jwt.h"
#include "util/base64.h"

/* RFC 7515 A.2 and A.3: the example claims, signed. */
#define RFC_RS256                                                                                  \
	"eyJhbGciOiJSUzI1NiJ9."                                                                    \
	"eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxl"                     \
	"LmNvbS9pc19yb290Ijp0cnVlfQ.cC4hiUPoj9Eetdgtv3hF80EGrhuB__"                                \
	"dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh"                                                        \
	"7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_"          \
	"nZLgrnbyTy"                                                                               \
	"WzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-"          \
	"eOkHWEsqtFZ"                                                                              \
	"ESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_"    \
	"IoypG"                                                                                    \
	"lUPQGe77Rw"
#define RFC_RS256_N                                                                                \
	"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-"                    \
	"4qPCJrcS2mJPMEzP1Pt0B"                                                                    \
	"m4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-"               \
	"bSf63kpaSHSXndS5"                                                                         \
	"z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_"       \
	"I5IhlJH7"                                                                                 \
	"aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"
#define RFC_ES256                                                                                  \
	"eyJhbGciOiJFUzI1NiJ9."                                                                    \
	"eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxl"                     \
	"LmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-"                              \
	"F4GawxaepmXFCgfTjDxw5djxLa8ISlS"                                                          \
	"ApmWQxfKTUJqPP3-Kg6NU1Q"
#define RFC_ES256_X "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
#define RFC_ES256_Y "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"

/* A projected token the tier's API server signed, and its key set. */
#define PROJECTED                                                                                  \
	"eyJhbGciOiJFUzI1NiIsImtpZCI6ImFLWVM5dFN1WWo0SmxiLXkzYWplQTRGQmpCZlNZMkQ0MUR3cmZBdWRCUkEi" \
	"fQ.eyJhdWQiOlsidHJhaW5lci5rdWJlZmxvdy5vcmcvdjFhbHBoYTEvbmFtZXNwYWNlcy9kZWZhdWx0L3RyYWlua" \
	"m9icy9qb2Ivc3RhdHVzIl0sImV4cCI6MTc5NTY1NjM3MiwiaWF0IjoxNzk1NjUyNzcyLCJpc3MiOiJodHRwczovL" \
	"2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMuY2x1c3Rlci5sb2NhbCIsImp0aSI6ImFkZmFjMzBlLTUyNzAtNDVkMy04O" \
	"DE5LTE3MDc0OTAzNGNkOCIsImt1YmVybmV0ZXMuaW8iOnsibmFtZXNwYWNlIjoiZGVmYXVsdCIsInNlcnZpY2VhY" \
	"2NvdW50Ijp7Im5hbWUiOiJkZWZhdWx0IiwidWlkIjoiMWY3YTliNDMtNmM5Ny00MDJkLWE2NjAtNmJiNzYxZGExY" \
	"TQ4In19LCJuYmYiOjE3OTU2NTI3NzIsInN1YiI6InN5c3RlbTpzZXJ2aWNlYWNjb3VudDpkZWZhdWx0OmRlZmF1b" \
	"HQifQ.gVqruPCpv-H_JXPqdO-7x6Dd6YjyMTu7Gmrb3kwkKj2LRMm3h3FoY4AFDAboXNe3VioOEzLUBYN_N-Sx1-" \
	"TPRA"
#define PROJECTED_KEYS                                                                             \
	"{\"keys\":[{\"use\":\"sig\",\"kty\":\"EC\",\"kid\":\"aKYS9tSuYj4Jlb-"                     \
	"y3ajeA4FBjBfSY2D41DwrfAudBRA\",\"crv\":\"P-256\",\"alg\":\"ES256\",\"x\":"                \
	"\"DskURFWlj9CqEcTd_4THZ3_nqTymchls4dnragUSSp0\",\"y\":"                                   \
	"\"InwetVB4nSdAQjelpFKF73CtFeq7X6EaCObzxeubDTA\"}]}"
#define ISSUER   "https://kubernetes.default.svc.cluster.local"
#define AUDIENCE "trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/job/status"
#define NOW      1795653000 /* between the projected token's iat and exp */

/* The fixed key tokens of our own are signed with (a throwaway made for this
 * test; it signs nothing else). */
static const char signing_key[] =
        "-----BEGIN RSA PRIVATE KEY-----\n"
        "MIIEpAIBAAKCAQEA1Bi5/xk+UaZevaL9Tb3TCxkHVyaP3xm0PMOvY3w1gPM7mcr4\n"
        "tuKn/pUrgyE9CUCZmYnDLnlMhXXd12xCQKyLxhSstNiIUdtXEjgK6cuOE0mXedPv\n"
        "azMo9TZdv/L3oFXvIKR6w7jp4rZo6fhjIbBBHesAFTAvmMCcKAMNU7wJvohOmDPt\n"
        "BB/ceadpOVSiMmb7ooEB5fBI8z3vSB/yAFj2oa9s+yYJT7fxch2SYtOb3n3i26o3\n"
        "jLd5cbhy5r4E9x1Ljx9FTBFuPqAXNkbIz4NmhXU5QMBvcRvtLG+ZabqEaNrUCVNo\n"
        "DWPDhYiuOAbsmWFehfBkuGd7tRd09oUCIshnEQIDAQABAoIBAB2AGPLB9JiPvvK6\n"
        "hmf3RLDw+MPm8bDy1s5y22THhHucmUghYqmxafNvlR9GksJEMXkZH8RJi9quU75g\n"
        "aPCs7z4MZx86VO+pxfkbQW1WajsFi+Oellj/Qy2kM7L8nPO4sCuGpSqvAB0QCRSt\n"
        "/z/Sz6PVKWxJCP3CoJWyIvroFyTgeNeQmVPXhOOmKJXhph+zIyQCd0I1pHee8e3a\n"
        "+Jswf2lwnY7brUCN22B4CoocjTmvZ09wIkxIry74qFXoRoczBoZnby7n/Pn2cgg0\n"
        "S/nhktm7qpSvZW+t4xZV0PJ3e5hpKgyYohrCm7w4sIJK+uMnBEYEdSGi8Wffdda4\n"
        "/VJnUQkCgYEA6ltH2ApGUToQ1uX86GGYEtU79EeDphS6Fhnnovt8JG2B/gHsRN5L\n"
        "PKBY110/uA7Xfwhrawi5qxumdJZDGuZCbKWbfw7/Zb9SnWLxsi2hZ8UqfOP4iLOn\n"
        "Yyh1Vvd7zezzfsQ1m8AY71dp5tlzGvRNIqdO/P+0eol0LRfF+KGlO4UCgYEA568r\n"
        "cUoz13a3PaMUqTjk9bdjqEI2lWGn6CeqRlYmHhpIga2hgbV7tIPvlig+sADkRfK+\n"
        "PNNxEFROMmwnYVNM3x/xV35gAwWzcvucFGw6Ev25rEZCE9dE+KkO6E14jNafL7NF\n"
        "WUlpJUqn3VFO2oBrA/7ZtZ+6/khxFrCYTtjP1R0CgYEArcXfgNclisdGg0JoBJuR\n"
        "Gq3YVerNOFH4JbkxpA1b4Nr+X61nVy2JljvDhHXVcJI4wi4pEGWY3sKS67Ibsg94\n"
        "w30Mzur8/6IdDSy30Qm6u+pb9d1IhXzJKmJul3zM5UXEy4OLyKBpHNexZAZrLlpl\n"
        "88Mhc8HbPl07stAE8LZTgc0CgYAvhCSTwpUpToa8VHMLVcjXgDonKxVIw9OM8H2i\n"
        "mU6OA/P07KhgEtmBJ0H++NgKftRSaDuN/AuHPtMe0kGtW0k7xbBYsml8lTG9lk7n\n"
        "fV7XwEPRSkOJEDBsEzgkeqcLs4TIYqsJad3vsQUGhgN3GrlYA2+hKVZPionvDl7e\n"
        "ZOcTHQKBgQDC0awhLIkRgD4NLJhCwOT7nE80ETTSm3HqN55Hq7YHAkyj6HGyN2u/\n"
        "N7+BeQSkY2h6vmBqophdfnN32cUMdpy4b5cF74INqgQvEmR1URgvPN2f8a82uGbV\n"
        "LScFfslVyS6U+kOXWeKQWrh8E3Ti+GDnURzLx57TrD5TGoXjMdhikg==\n"
        "-----END RSA PRIVATE KEY-----\n";

static kft_jwks *keys_of(const char *text)
{
	json_error_t jerr;
	json_t *doc = json_loads(text, 0, &jerr);
	kft_jwks *k = NULL;
	kft_error err = {0};
	assert_non_null(doc);
	int rc = kft_jwks_parse(doc, &k, &err);
	json_decref(doc);
	if (rc)
		fail_msg("jwks: %s", err.message);
	return k;
}

static int parse(const char *token, unsigned algs, kft_jwt *t, kft_error *err)
{
	return kft_jwt_parse(token, strlen(token), algs, t, err);
}

/* ---- the published examples ----------------------------------------------------- */

static void test_rfc7515_rs256(void **state)
{
	(void)state;
	kft_jwks *keys =
	        keys_of("{\"keys\":[{\"kty\":\"RSA\",\"n\":\"" RFC_RS256_N "\",\"e\":\"AQAB\"}]}");
	kft_jwt t;
	kft_error err = {0};
	assert_int_equal(parse(RFC_RS256, KFT_JWT_RS256, &t, &err), 0);
	assert_int_equal(t.alg, KFT_JWT_RS256);
	assert_string_equal(json_string_value(json_object_get(t.claims, "iss")), "joe");
	assert_int_equal(kft_jwt_signed_by(&t, keys), 1);
	t.signature[10] ^= 1; /* one bit of the signature */
	assert_int_equal(kft_jwt_signed_by(&t, keys), 0);
	kft_jwt_free(&t);
	/* an algorithm the issuer does not list: refused before any key */
	assert_int_equal(parse(RFC_RS256, KFT_JWT_ES256, &t, &err), KFT_EDENIED);
	kft_jwks_free(keys);
}

static void test_rfc7515_es256(void **state)
{
	(void)state;
	kft_jwks *keys = keys_of("{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" RFC_ES256_X
	                         "\",\"y\":\"" RFC_ES256_Y "\"}]}");
	kft_jwt t;
	kft_error err = {0};
	assert_int_equal(parse(RFC_ES256, KFT_JWT_ES256 | KFT_JWT_RS256, &t, &err), 0);
	assert_int_equal(t.alg, KFT_JWT_ES256);
	assert_int_equal(kft_jwt_signed_by(&t, keys), 1);
	t.input[t.input_len - 1] ^= 1; /* the payload changed */
	assert_int_equal(kft_jwt_signed_by(&t, keys), 0);
	kft_jwt_free(&t);
	kft_jwks_free(keys);
}

/* ---- a real projected token ---------------------------------------------------------- */

static void test_projected(void **state)
{
	(void)state;
	kft_jwks *keys = keys_of(PROJECTED_KEYS);
	kft_jwt t;
	kft_error err = {0};
	assert_int_equal(parse(PROJECTED, KFT_JWT_ES256, &t, &err), 0);
	assert_string_equal(t.kid, "aKYS9tSuYj4Jlb-y3ajeA4FBjBfSY2D41DwrfAudBRA");
	assert_int_equal(kft_jwt_signed_by(&t, keys), 1);
	assert_int_equal(kft_jwt_check_claims(&t, ISSUER, AUDIENCE, "default", NOW, &err), 0);
	/* upstream's checks, one at a time */
	assert_int_equal(kft_jwt_check_claims(&t, ISSUER, AUDIENCE, "team-a", NOW, &err),
	                 KFT_EDENIED);
	assert_string_equal(err.message, "the token is bound to a pod of another namespace");
	assert_int_equal(kft_jwt_check_claims(&t, "https://other", AUDIENCE, "default", NOW, &err),
	                 KFT_EDENIED);
	assert_string_equal(err.message, "oidc: id token issued by a different provider");
	assert_int_equal(kft_jwt_check_claims(&t, ISSUER,
	                                      "trainer.kubeflow.org/v1alpha1/namespaces/default/"
	                                      "trainjobs/other/status",
	                                      "default", NOW, &err),
	                 KFT_EDENIED);
	assert_string_equal(err.message, "oidc: expected audience not in the token's audience");
	assert_int_equal(kft_jwt_check_claims(&t, ISSUER, AUDIENCE, "default", 1795656372, &err),
	                 KFT_EDENIED); /* exp is not after now */
	assert_string_equal(err.message, "oidc: token is expired");
	kft_jwt_free(&t);
	char *iss = kft_jwt_unverified_issuer(PROJECTED "\n", &err);
	assert_string_equal(iss, ISSUER);
	free(iss);
	kft_jwks_free(keys);
}

/* ---- tokens of our own ------------------------------------------------------------------ */

static char *b64url(const void *data, size_t len)
{
	size_t n = 0;
	char *s = kft_base64url_encode(data, len, &n);
	assert_non_null(s);
	return s;
}

/* header and claims (JSON texts) signed RS256 with signing_key. */
static char *sign(const char *header, const char *claims)
{
	mbedtls_pk_context pk;
	mbedtls_pk_init(&pk);
	assert_int_equal(mbedtls_pk_parse_key(&pk, (const unsigned char *)signing_key,
	                                      sizeof(signing_key), NULL, 0),
	                 0);
	char *h = b64url(header, strlen(header)), *c = b64url(claims, strlen(claims)), *input;
	assert_true(asprintf(&input, "%s.%s", h, c) > 0);
	unsigned char hash[32], sig[512];
	mbedtls_sha256_ret((const unsigned char *)input, strlen(input), hash, 0);
	mbedtls_rsa_context *rsa = mbedtls_pk_rsa(pk);
	assert_int_equal(mbedtls_rsa_pkcs1_sign(rsa, NULL, NULL, MBEDTLS_RSA_PRIVATE,
	                                        MBEDTLS_MD_SHA256, 32, hash, sig),
	                 0);
	char *s = b64url(sig, mbedtls_rsa_get_len(rsa)), *token;
	assert_true(asprintf(&token, "%s.%s", input, s) > 0);
	free(h);
	free(c);
	free(input);
	free(s);
	mbedtls_pk_free(&pk);
	return token;
}

/* The JWKS of signing_key's public half, with kid. */
static kft_jwks *our_keys(const char *kid, bool also_rfc)
{
	mbedtls_pk_context pk;
	mbedtls_pk_init(&pk);
	assert_int_equal(mbedtls_pk_parse_key(&pk, (const unsigned char *)signing_key,
	                                      sizeof(signing_key), NULL, 0),
	                 0);
	unsigned char n[256], e[4];
	mbedtls_rsa_context *rsa = mbedtls_pk_rsa(pk);
	assert_int_equal(
	        mbedtls_rsa_export_raw(rsa, n, sizeof(n), NULL, 0, NULL, 0, NULL, 0, e, sizeof(e)),
	        0);
	size_t skip = 0;
	while (skip < sizeof(e) - 1 && e[skip] == 0)
		skip++;
	char *nb = b64url(n, sizeof(n)), *eb = b64url(e + skip, sizeof(e) - skip), *text;
	assert_true(
	        asprintf(
	                &text,
	                "{\"keys\":[%s{\"kty\":\"RSA\",\"kid\":\"%s\",\"n\":\"%s\",\"e\":\"%s\"}]}",
	                also_rfc ? "{\"kty\":\"RSA\",\"kid\":\"rfc\",\"n\":\"" RFC_RS256_N
	                           "\",\"e\":\"AQAB\"},"
	                         : "",
	                kid, nb, eb) > 0);
	kft_jwks *keys = keys_of(text);
	free(nb);
	free(eb);
	free(text);
	mbedtls_pk_free(&pk);
	return keys;
}

#define CLAIMS(extra)                                                                              \
	"{\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE "\",\"exp\":1800000000,\"iat\":1790000000,"  \
	"\"kubernetes.io\":{\"namespace\":\"default\"}" extra "}"

static int check(const char *claims, kft_error *err)
{
	char *token = sign("{\"alg\":\"RS256\",\"kid\":\"ours\"}", claims);
	kft_jwks *keys = our_keys("ours", false);
	kft_jwt t;
	int rc = parse(token, KFT_JWT_RS256, &t, err);
	if (rc == 0) {
		assert_int_equal(kft_jwt_signed_by(&t, keys), 1);
		rc = kft_jwt_check_claims(&t, ISSUER, AUDIENCE, "default", NOW, err);
		kft_jwt_free(&t);
	}
	free(token);
	kft_jwks_free(keys);
	return rc;
}

/* go-oidc's claims rules over tokens that differ in one claim. */
static void test_claims(void **state)
{
	(void)state;
	kft_error err = {0};
	assert_int_equal(check(CLAIMS(""), &err), 0);                    /* aud as a string */
	assert_int_equal(check(CLAIMS(",\"nbf\":1795653200"), &err), 0); /* 200 s ahead: leeway */
	assert_int_equal(check(CLAIMS(",\"nbf\":1795653301"), &err), KFT_EDENIED);
	assert_string_equal(err.message, "oidc: current time before the nbf (not before) time");
	assert_int_equal(check("{\"iss\":\"" ISSUER "\",\"aud\":[\"x\",\"" AUDIENCE
	                       "\"],\"exp\":1800000000,\"kubernetes.io\":{\"namespace\":"
	                       "\"default\"}}",
	                       &err),
	                 0);
	assert_int_equal(check("{\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE
	                       "\",\"kubernetes.io\":{\"namespace\":\"default\"}}",
	                       &err),
	                 KFT_EDENIED); /* no exp */
	assert_int_equal(check(CLAIMS(",\"sub\":7"), &err), KFT_EDENIED);
	assert_string_equal(err.message, "oidc: failed to unmarshal claims");
	assert_int_equal(
	        check("{\"iss\":\"" ISSUER "\",\"aud\":\"" AUDIENCE "\",\"exp\":1800000000}", &err),
	        KFT_EDENIED); /* no kubernetes.io: no namespace */
	assert_string_equal(err.message, "the token is bound to a pod of another namespace");
}

/* The kid picks the key; without one every key is tried. */
static void test_kid(void **state)
{
	(void)state;
	kft_jwks *keys = our_keys("ours", true);
	kft_error err = {0};
	kft_jwt t;
	static const struct {
		const char *header;
		int signed_by;
	} cases[] = {
	        {"{\"alg\":\"RS256\",\"kid\":\"ours\"}", 1},
	        {"{\"alg\":\"RS256\",\"kid\":\"rfc\"}", 0}, /* the other key's kid */
	        {"{\"alg\":\"RS256\"}", 1},
	        {"{\"alg\":\"RS256\",\"kid\":\"gone\"}", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *token = sign(cases[i].header, CLAIMS(""));
		assert_int_equal(parse(token, KFT_JWT_RS256, &t, &err), 0);
		if (kft_jwt_signed_by(&t, keys) != cases[i].signed_by)
			fail_msg("header %s", cases[i].header);
		kft_jwt_free(&t);
		free(token);
	}
	assert_int_equal(kft_jwks_count(keys), 2);
	kft_jwks_free(keys);
}

/* go-jose's ParseSigned refusals. */
static void test_parse_refusals(void **state)
{
	(void)state;
	kft_error err = {0};
	kft_jwt t;
	static const char *const headers[] = {
	        "{\"alg\":\"none\"}",
	        "{\"alg\":\"HS256\"}",
	        "{\"alg\":\"RS256\",\"crit\":[\"exp\"]}",
	        "[\"alg\",\"RS256\"]",
	};
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		char *token = sign(headers[i], CLAIMS(""));
		if (parse(token, KFT_JWT_RS256 | KFT_JWT_ES256, &t, &err) != KFT_EDENIED)
			fail_msg("header %s was taken", headers[i]);
		free(token);
	}
	char *token = sign("{\"alg\":\"RS256\"}", "[1,2]");
	assert_int_equal(parse(token, KFT_JWT_RS256, &t, &err), KFT_EDENIED); /* not an object */
	free(token);
	static const char *const shapes[] = {"", "a.b", "a.b.c.d", "!!.e30.e30", "e30.e30"};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (parse(shapes[i], KFT_JWT_RS256, &t, &err) != KFT_EDENIED)
			fail_msg("token %s was taken", shapes[i]);
}

/* go-jose refuses a whole key set for one key that does not decode. */
static void test_jwks(void **state)
{
	(void)state;
	static const char *const bad[] = {
	        "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" RFC_ES256_X
	        "\",\"y\":\"" RFC_ES256_X "\"}]}", /* not on the curve */
	        "{\"keys\":[{\"kty\":\"XYZ\"}]}",
	        "{\"keys\":{}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *doc = json_loads(bad[i], 0, NULL);
		kft_jwks *k = NULL;
		kft_error err = {0};
		if (kft_jwks_parse(doc, &k, &err) != KFT_EINVAL)
			fail_msg("key set %s was taken", bad[i]);
		json_decref(doc);
	}
	/* a symmetric key and an RSA key of 17 bits are kept, as go-jose keeps
	 * them, and verify nothing (Go's crypto/rsa wants 1024 bits) */
	kft_jwks *k = keys_of("{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"},{\"kty\":"
	                      "\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}");
	assert_int_equal(kft_jwks_count(k), 2);
	kft_jwt t;
	kft_error err = {0};
	assert_int_equal(parse(RFC_RS256, KFT_JWT_RS256, &t, &err), 0);
	assert_int_equal(kft_jwt_signed_by(&t, k), 0);
	kft_jwt_free(&t);
	kft_jwks_free(k);
}

/* The discovery document's algorithms, and the controller's own token. */
static void test_discovery_and_issuer(void **state)
{
	(void)state;
	json_t *algs = json_pack("[s, s, s]", "ES256", "EdDSA", "PS512");
	assert_int_equal(kft_jwt_algs_from_discovery(algs), KFT_JWT_ES256 | KFT_JWT_PS512);
	json_decref(algs);
	assert_int_equal(kft_jwt_algs_from_discovery(NULL), KFT_JWT_RS256);
	kft_error err = {0};
	assert_null(kft_jwt_unverified_issuer("not-a-jwt", &err));
	assert_string_equal(err.message, "serviceaccount token is not a jwt");
	char *token = sign("{\"alg\":\"RS256\"}", "{\"sub\":\"x\"}");
	assert_null(kft_jwt_unverified_issuer(token, &err));
	assert_string_equal(err.message, "serviceaccount token missing issuer claim");
	free(token);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_rfc7515_rs256), cmocka_unit_test(test_rfc7515_es256),
	        cmocka_unit_test(test_projected),     cmocka_unit_test(test_claims),
	        cmocka_unit_test(test_kid),           cmocka_unit_test(test_parse_refusals),
	        cmocka_unit_test(test_jwks),          cmocka_unit_test(test_discovery_and_issuer),
	};
	return cmocka_run_group_tests_name("jwt", tests, NULL, NULL);
}
