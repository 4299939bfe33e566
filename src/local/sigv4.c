/*
 * sigv4.c - AWS Signature Version 4 for S3 GET requests.
 *
 * SigV4 turns a request into a fixed text form (the canonical request),
 * hashes it, wraps the hash with the date and "scope"
 * (DATE/REGION/SERVICE/aws4_request) into a string to sign, and signs that
 * with a key derived by chaining HMAC-SHA256 over the date, region, service
 * and the literal "aws4_request", starting from "AWS4" + secret key.
 *
 * We only ever send a small, known set of headers, so the canonical header
 * block is built from them in their fixed alphabetical order instead of
 * sorting arbitrary header lists. The clock is an input (amz_date) so the
 * published AWS examples can be reproduced exactly in tests.
 */
#include <stdio.h>
#include <string.h>

#include "local/fetch.h"
#include "util/digest.h"
#include "util/secret.h"

#define CANON_MAX 8192

static int hmac(const unsigned char *key, size_t keylen, const char *msg, unsigned char out[32])
{
	return kft_hmac_sha256(key, keylen, msg, strlen(msg), out);
}

/* A header value goes into the canonical text verbatim, so a CR or LF in it
 * would let a value forge extra canonical lines. */
static int value_ok(const char *v)
{
	return v && *v && !strpbrk(v, "\r\n");
}

static int check_request(const kft_sigv4_request *req, const kft_aws_credentials *cred,
                         kft_error *err)
{
	if (!req || !cred || !value_ok(req->method) || !value_ok(req->host) ||
	    !value_ok(req->payload_hash) || !value_ok(req->service))
		return kft_error_set(err, KFT_EINVAL,
		                     "sigv4: method, host, payload hash and "
		                     "service are required");
	if (!value_ok(cred->access_key_id) || !value_ok(cred->secret_access_key) ||
	    !value_ok(cred->region))
		return kft_error_set(err, KFT_EINVAL,
		                     "sigv4: access key, secret key and "
		                     "region are required");
	if (!req->path || req->path[0] != '/' || strpbrk(req->path, "\r\n \t"))
		return kft_error_set(err, KFT_EINVAL, "sigv4: path must start with \"/\"");
	if (!req->amz_date || strlen(req->amz_date) != 16 || req->amz_date[8] != 'T' ||
	    req->amz_date[15] != 'Z')
		return kft_error_set(err, KFT_EINVAL,
		                     "sigv4: x-amz-date must look like "
		                     "YYYYMMDDTHHMMSSZ");
	if ((req->range && !value_ok(req->range)) || (req->query && strpbrk(req->query, "\r\n")) ||
	    (cred->session_token && *cred->session_token && !value_ok(cred->session_token)))
		return kft_error_set(err, KFT_EINVAL, "sigv4: header value contains a newline");
	return 0;
}

static int has_token(const kft_aws_credentials *cred)
{
	return cred->session_token && *cred->session_token;
}

static int build_canonical(const kft_sigv4_request *req, const kft_aws_credentials *cred, char *buf,
                           size_t size, char *signed_hdrs, size_t sh_size)
{
	char range_line[512] = "", token_line[4096] = "";
	if (req->range)
		snprintf(range_line, sizeof(range_line), "range:%s\n", req->range);
	if (has_token(cred) &&
	    (size_t)snprintf(token_line, sizeof(token_line), "x-amz-security-token:%s\n",
	                     cred->session_token) >= sizeof(token_line))
		return -1;
	int n = snprintf(signed_hdrs, sh_size, "host;%sx-amz-content-sha256;x-amz-date%s",
	                 req->range ? "range;" : "",
	                 has_token(cred) ? ";x-amz-security-token" : "");
	if (n < 0 || (size_t)n >= sh_size || (req->range && strlen(req->range) > 480))
		return -1;
	n = snprintf(buf, size,
	             "%s\n%s\n%s\nhost:%s\n%sx-amz-content-sha256:%s\nx-amz-date:%s\n%s\n%s\n%s",
	             req->method, req->path, req->query ? req->query : "", req->host, range_line,
	             req->payload_hash, req->amz_date, token_line, signed_hdrs, req->payload_hash);
	return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

static int derive_key(const kft_aws_credentials *cred, const char *date8, const char *service,
                      unsigned char key[32])
{
	char seed[256];
	if ((size_t)snprintf(seed, sizeof(seed), "AWS4%s", cred->secret_access_key) >= sizeof(seed))
		return -1;
	unsigned char k1[32], k2[32], k3[32];
	int rc = hmac((const unsigned char *)seed, strlen(seed), date8, k1) ||
	         hmac(k1, 32, cred->region, k2) || hmac(k2, 32, service, k3) ||
	         hmac(k3, 32, "aws4_request", key);
	kft_secret_wipe(seed, sizeof(seed));
	return rc ? -1 : 0;
}

int kft_sigv4_sign(const kft_sigv4_request *req, const kft_aws_credentials *cred,
                   kft_sigv4_result *out, kft_error *err)
{
	int rc = check_request(req, cred, err);
	if (rc)
		return rc;
	if (!out)
		return kft_error_set(err, KFT_EINVAL, "sigv4: no result buffer");
	char canon[CANON_MAX];
	if (build_canonical(req, cred, canon, sizeof(canon), out->signed_headers,
	                    sizeof(out->signed_headers)))
		return kft_error_set(err, KFT_ELIMIT, "sigv4: request too large to sign");
	kft_sha256_hex(canon, strlen(canon), out->canonical_request_sha256);

	char date8[9], scope[256], to_sign[512];
	memcpy(date8, req->amz_date, 8);
	date8[8] = '\0';
	if ((size_t)snprintf(scope, sizeof(scope), "%s/%s/%s/aws4_request", date8, cred->region,
	                     req->service) >= sizeof(scope))
		return kft_error_set(err, KFT_ELIMIT, "sigv4: region or service too long");
	snprintf(to_sign, sizeof(to_sign), "AWS4-HMAC-SHA256\n%s\n%s\n%s", req->amz_date, scope,
	         out->canonical_request_sha256);

	unsigned char key[32], sig[32];
	rc = derive_key(cred, date8, req->service, key) || hmac(key, 32, to_sign, sig);
	kft_secret_wipe(key, sizeof(key));
	if (rc)
		return kft_error_set(err, KFT_ELIMIT, "sigv4: secret key too long or HMAC failed");
	kft_hex(sig, 32, out->signature);
	int n = snprintf(out->authorization, sizeof(out->authorization),
	                 "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
	                 cred->access_key_id, scope, out->signed_headers, out->signature);
	if (n < 0 || (size_t)n >= sizeof(out->authorization))
		return kft_error_set(err, KFT_ELIMIT, "sigv4: access key id too long");
	return 0;
}

static int unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

int kft_s3_encode_key(const char *key, char *out, size_t out_size, kft_error *err)
{
	static const char digits[] = "0123456789ABCDEF";
	size_t o = 0;
	if (!key || !out || out_size == 0)
		return kft_error_set(err, KFT_EINVAL, "s3: no key to encode");
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		size_t need = (unreserved(*p) || *p == '/') ? 1 : 3;
		if (o + need >= out_size)
			return kft_error_set(err, KFT_ELIMIT, "s3: object key too long");
		if (need == 1) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = digits[*p >> 4];
			out[o++] = digits[*p & 15];
		}
	}
	out[o] = '\0';
	return 0;
}
