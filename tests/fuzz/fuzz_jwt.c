/*
 * fuzz_jwt.c - libFuzzer target for the status server's token checks
 * (src/controller/jwt.c): a key set as the API server would serve it and a
 * bearer token as any pod may send it.
 *
 * The input is "<JWKS JSON>\n\n<token>" (no blank line: all of it is the
 * token, checked against an empty set). kft_jwks_parse reads the set,
 * kft_jwt_parse, kft_jwt_signed_by and kft_jwt_check_claims the token
 * (the claims with a fixed clock, issuer, audience and namespace), and
 * kft_jwt_unverified_issuer the token again as the controller's own.
 * Promises checked, each an abort() when broken:
 *   - every call returns one of its documented codes;
 *   - a parsed set holds one key per element of its keys array;
 *   - a parsed token has exactly one allowed algorithm and object claims;
 *   - nothing but the API server's signature verifies under the API
 *     server's key set (KEYS below, from the tier's cluster): a token that
 *     does carries the claims that server signed (SEED_AUD, SEED_JTI);
 *   - accepted claims name the issuer, the audience and the namespace.
 * Leaks are LeakSanitizer's.
 *
 * `make fuzz-run FUZZER=fuzz_jwt SECONDS=300` runs it over
 * tests/fuzz/corpus/fuzz_jwt (projected-es256 is a real token of that set).
 */
#define FUZZ_NAME "fuzz_jwt"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controller/jwt.h"
#include "fuzz_common.h"

#define KEYS                                                                                       \
	"{\"keys\":[{\"use\":\"sig\",\"kty\":\"EC\",\"kid\":\"aKYS9tSuYj4Jlb-"                     \
	"y3ajeA4FBjBfSY2D41DwrfAudBRA\",\"crv\":\"P-256\",\"alg\":\"ES256\",\"x\":"                \
	"\"DskURFWlj9CqEcTd_4THZ3_nqTymchls4dnragUSSp0\",\"y\":"                                   \
	"\"InwetVB4nSdAQjelpFKF73CtFeq7X6EaCObzxeubDTA\"}]}"
#define ISSUER   "https://kubernetes.default.svc.cluster.local"
#define AUDIENCE "trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/job/status"
#define SEED_JTI "adfac30e-5270-45d3-8819-170749034cd8"
#define NOW      1795652800
#define ALLOWED  (KFT_JWT_ES256 | KFT_JWT_RS256 | KFT_JWT_PS384 | KFT_JWT_ES512)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_set(const char *text, size_t len, kft_jwks **out)
{
	json_t *doc = json_loadb(text, len, JSON_DECODE_ANY, NULL);
	kft_error err = {0};
	int rc = doc ? kft_jwks_parse(doc, out, &err) : KFT_EINVAL;
	if (rc != 0 && rc != KFT_EINVAL && rc != KFT_ENOMEM)
		fail("kft_jwks_parse returned an undocumented code", err.message);
	if (rc == 0 && kft_jwks_count(*out) != json_array_size(json_object_get(doc, "keys")) &&
	    json_is_array(json_object_get(doc, "keys")))
		fail("a parsed set lost or gained keys", NULL);
	json_decref(doc);
}

static void check_token(const char *tok, size_t len, const kft_jwks *keys, int server_keys)
{
	kft_jwt t;
	kft_error err = {0};
	int rc = kft_jwt_parse(tok, len, ALLOWED, &t, &err);
	if (rc != 0 && rc != KFT_EDENIED && rc != KFT_ENOMEM)
		fail("kft_jwt_parse returned an undocumented code", err.message);
	if (rc != 0)
		return;
	if (!t.alg || (t.alg & (t.alg - 1)) || !(t.alg & ALLOWED) || !json_is_object(t.claims))
		fail("a parsed token has no single allowed algorithm or no object claims", NULL);
	int signed_ok = kft_jwt_signed_by(&t, keys);
	const char *jti = json_string_value(json_object_get(t.claims, "jti"));
	if (signed_ok && server_keys && (!jti || strcmp(jti, SEED_JTI) != 0))
		fail("a token the API server did not sign verifies with its keys", NULL);
	rc = kft_jwt_check_claims(&t, ISSUER, AUDIENCE, "default", NOW, &err);
	if (rc != 0 && rc != KFT_EDENIED)
		fail("kft_jwt_check_claims returned an undocumented code", err.message);
	if (rc == 0) {
		const char *iss = NULL;
		const char *k;
		json_t *v;
		json_object_foreach(t.claims, k, v)
		{
			if (strcasecmp(k, "iss") == 0)
				iss = json_string_value(v);
		}
		if (!iss || strcmp(iss, ISSUER) != 0)
			fail("claims accepted with another issuer", NULL);
	}
	kft_jwt_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *sep = size >= 2 ? memmem(text, size, "\n\n", 2) : NULL;
	kft_jwks *keys = NULL, *server = NULL;
	kft_error err = {0};
	json_t *doc = json_loads(KEYS, 0, NULL);
	if (!doc || kft_jwks_parse(doc, &server, &err) != 0)
		fail("the API server's key set does not parse", err.message);
	json_decref(doc);
	if (sep)
		check_set(text, (size_t)(sep - text), &keys);
	const char *tok = sep ? sep + 2 : text;
	size_t tl = size - (size_t)(tok - text);
	check_token(tok, tl, keys, 0);
	check_token(tok, tl, server, 1);
	char *z = strndup(tok, tl);
	if (z) {
		char *iss = kft_jwt_unverified_issuer(z, &err);
		if (iss && !*iss)
			fail("an empty issuer was returned", NULL);
		free(iss);
		free(z);
	}
	kft_jwks_free(keys);
	kft_jwks_free(server);
	return 0;
}
