/*
 * test_sigv4.c - SigV4 signing checked against AWS's published S3 examples
 * (the "Signature Calculations for the Authorization Header" worked
 * examples: access key AKIAIOSFODNN7EXAMPLE, date 20130524T000000Z,
 * us-east-1), plus the parts we add on top: session tokens, key encoding,
 * and refusing malformed input.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "local/fetch.h"

static const kft_aws_credentials example_creds = {
        .access_key_id = "AKIAIOSFODNN7EXAMPLE",
        .secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        .region = "us-east-1",
};

static kft_sigv4_request example_request(void)
{
	kft_sigv4_request r = {
	        .method = "GET",
	        .host = "examplebucket.s3.amazonaws.com",
	        .path = "/",
	        .payload_hash = KFT_SIGV4_EMPTY_SHA256,
	        .amz_date = "20130524T000000Z",
	        .service = "s3",
	};
	return r;
}

static void test_get_object_example(void **state)
{
	(void)state;
	kft_sigv4_request r = example_request();
	r.path = "/test.txt";
	r.range = "bytes=0-9";
	kft_sigv4_result out;
	kft_error err;
	assert_int_equal(kft_sigv4_sign(&r, &example_creds, &out, &err), 0);
	assert_string_equal(out.canonical_request_sha256,
	                    "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
	assert_string_equal(out.signed_headers, "host;range;x-amz-content-sha256;x-amz-date");
	assert_string_equal(out.signature,
	                    "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	assert_string_equal(
	        out.authorization,
	        "AWS4-HMAC-SHA256 "
	        "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
	        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
	        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void test_lifecycle_example(void **state)
{
	(void)state;
	kft_sigv4_request r = example_request();
	r.query = "lifecycle=";
	kft_sigv4_result out;
	assert_int_equal(kft_sigv4_sign(&r, &example_creds, &out, NULL), 0);
	assert_string_equal(out.canonical_request_sha256,
	                    "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca");
	assert_string_equal(out.signature,
	                    "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

static void test_list_objects_example(void **state)
{
	(void)state;
	kft_sigv4_request r = example_request();
	r.query = "max-keys=2&prefix=J";
	kft_sigv4_result out;
	assert_int_equal(kft_sigv4_sign(&r, &example_creds, &out, NULL), 0);
	assert_string_equal(out.canonical_request_sha256,
	                    "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7");
	assert_string_equal(out.signature,
	                    "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

/* A session token must be signed (it is last alphabetically) and so change
 * the signature; without it the same request signs as in the example. */
static void test_session_token_is_signed(void **state)
{
	(void)state;
	kft_aws_credentials c = example_creds;
	c.session_token = "FQoGZXIvYXdzEXAMPLETOKEN";
	kft_sigv4_request r = example_request();
	r.path = "/test.txt";
	r.range = "bytes=0-9";
	kft_sigv4_result with, without;
	assert_int_equal(kft_sigv4_sign(&r, &c, &with, NULL), 0);
	assert_string_equal(with.signed_headers,
	                    "host;range;x-amz-content-sha256;x-amz-date;x-amz-security-token");
	assert_non_null(strstr(with.authorization, "x-amz-security-token, Signature="));
	c.session_token = "";
	assert_int_equal(kft_sigv4_sign(&r, &c, &without, NULL), 0);
	assert_string_equal(without.signature,
	                    "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	assert_string_not_equal(with.signature, without.signature);
}

static void test_unsigned_payload_changes_signature(void **state)
{
	(void)state;
	kft_sigv4_request r = example_request();
	r.path = "/test.txt";
	r.payload_hash = KFT_SIGV4_UNSIGNED_PAYLOAD;
	kft_sigv4_result out;
	assert_int_equal(kft_sigv4_sign(&r, &example_creds, &out, NULL), 0);
	assert_string_equal(out.signed_headers, "host;x-amz-content-sha256;x-amz-date");
	assert_int_equal(strlen(out.signature), 64);
}

static void test_rejects_bad_input(void **state)
{
	(void)state;
	kft_sigv4_result out;
	kft_error err;
	kft_sigv4_request r = example_request();
	r.amz_date = "2013-05-24";
	assert_int_equal(kft_sigv4_sign(&r, &example_creds, &out, &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "YYYYMMDDTHHMMSSZ"));
	r = example_request();
	r.range = "bytes=0-9\r\nx-evil: 1";
	assert_int_equal(kft_sigv4_sign(&r, &example_creds, &out, &err), KFT_EINVAL);
	r = example_request();
	r.path = "test.txt";
	assert_int_equal(kft_sigv4_sign(&r, &example_creds, &out, &err), KFT_EINVAL);
	kft_aws_credentials c = example_creds;
	c.region = NULL;
	r = example_request();
	assert_int_equal(kft_sigv4_sign(&r, &c, &out, &err), KFT_EINVAL);
}

static void test_encode_key(void **state)
{
	(void)state;
	char buf[64];
	assert_int_equal(kft_s3_encode_key("a b/test$file.text~", buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, "a%20b/test%24file.text~");
	assert_int_equal(kft_s3_encode_key("\xc3\xa9", buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, "%C3%A9");
	char tiny[4];
	assert_int_equal(kft_s3_encode_key("a b", tiny, sizeof(tiny), NULL), KFT_ELIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_get_object_example),
	        cmocka_unit_test(test_lifecycle_example),
	        cmocka_unit_test(test_list_objects_example),
	        cmocka_unit_test(test_session_token_is_signed),
	        cmocka_unit_test(test_unsigned_payload_changes_signature),
	        cmocka_unit_test(test_rejects_bad_input),
	        cmocka_unit_test(test_encode_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
