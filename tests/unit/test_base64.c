/*
 * test_base64.c - src/util/base64.c against RFC 4648's test vectors and Go's
 * encoding/base64.StdEncoding and RawURLEncoding decisions (what the API server accepts in a
 * Secret's data, a ConfigMap's binaryData or a kubeconfig's *-data), and
 * against OpenSSL's encoder as an independent oracle for arbitrary bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "util/base64.h"

/* RFC 4648 section 10. */
static const char *const vectors[][2] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
};

static void test_rfc4648_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		char *enc = kft_base64_encode(vectors[i][0], strlen(vectors[i][0]));
		assert_non_null(enc);
		assert_string_equal(enc, vectors[i][1]);
		free(enc);
		size_t n = 99;
		char *dec = kft_base64_decode(vectors[i][1], &n);
		assert_non_null(dec);
		assert_int_equal(n, strlen(vectors[i][0]));
		assert_string_equal(dec, vectors[i][0]);
		free(dec);
	}
}

/* Every byte value and every length 0..64 round-trip, and the encoding is
 * OpenSSL's. */
static void test_round_trip_against_openssl(void **state)
{
	(void)state;
	unsigned char data[64], want[128];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 37 + 255);
	for (size_t len = 0; len <= sizeof(data); len++) {
		char *enc = kft_base64_encode(data, len);
		assert_non_null(enc);
		EVP_EncodeBlock(want, data, (int)len);
		assert_string_equal(enc, (const char *)want);
		size_t n = 0;
		char *dec = kft_base64_decode(enc, &n);
		assert_non_null(dec);
		assert_int_equal(n, len);
		assert_memory_equal(dec, data, len);
		assert_int_equal(dec[n], '\0');
		free(dec);
		free(enc);
	}
}

/* StdEncoding skips \r and \n anywhere (kubeconfigs wrap long data). */
static void test_line_breaks_skipped(void **state)
{
	(void)state;
	size_t n = 0;
	char *dec = kft_base64_decode("Zm9v\r\nYmFy\n", &n);
	assert_non_null(dec);
	assert_string_equal(dec, "foobar");
	free(dec);
	dec = kft_base64_decode("Zg=\n=", &n);
	assert_non_null(dec);
	assert_string_equal(dec, "f");
	free(dec);
}

/* What Go's StdEncoding.DecodeString refuses (illegal base64 data at input
 * byte N), so the engine refuses it too. */
static void test_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
	        "Zg",                 /* padding missing */
	        "Zm8",                /* padding missing */
	        "Z",                  /* a group cut short */
	        "Zg=",                /* half the padding */
	        "Z===",               /* '=' second */
	        "====",               /* only padding */
	        "Zg==Zm8=",           /* data after a padded group */
	        "Zg==\n=",            /* too much padding */
	        "Zm9v YmFy",          /* a space (Go skips only \r and \n) */
	        "Zm9v\tYmFy", "Zm9-", /* the URL alphabet */
	        "Zm9_",       "Zm9v!",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = 0;
		char *dec = kft_base64_decode(bad[i], &n);
		if (dec)
			fail_msg("\"%s\" decoded", bad[i]);
	}
}

/* Decoded data may hold NULs: the length says where it ends. */
static void test_nul_bytes(void **state)
{
	(void)state;
	size_t n = 0;
	char *dec = kft_base64_decode("AGEA", &n);
	assert_non_null(dec);
	assert_int_equal(n, 3);
	assert_memory_equal(dec, "\0a\0", 3);
	free(dec);
}

/* RawURLEncoding (JWT parts, JWK members): RFC 4648 section 10's vectors
 * unpadded, the URL alphabet, and Go's refusals ('=', the standard
 * alphabet's "+/", a length of 1 mod 4). */
static void test_raw_url(void **state)
{
	(void)state;
	static const char *const raw[][2] = {
	        {"", ""},
	        {"f", "Zg"},
	        {"fo", "Zm8"},
	        {"foo", "Zm9v"},
	        {"foob", "Zm9vYg"},
	        {"fooba", "Zm9vYmE"},
	        {"foobar", "Zm9vYmFy"},
	        {"\xfb\xff", "-_8"},
	};
	for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++) {
		size_t n = 99;
		char *enc = kft_base64url_encode((const unsigned char *)raw[i][0],
		                                 strlen(raw[i][0]), &n);
		assert_non_null(enc);
		assert_string_equal(enc, raw[i][1]);
		assert_int_equal(n, strlen(raw[i][1]));
		free(enc);
		unsigned char *dec = kft_base64url_decode(raw[i][1], strlen(raw[i][1]), &n);
		assert_non_null(dec);
		assert_int_equal(n, strlen(raw[i][0]));
		assert_memory_equal(dec, raw[i][0], n);
		free(dec);
	}
	size_t n;
	unsigned char *dec = kft_base64url_decode("Zm9v\r\nYg", 8, &n);
	assert_non_null(dec);
	assert_memory_equal(dec, "foob", 4);
	free(dec);
	static const char *const bad[] = {"Zg==", "Z", "Zm9vY", "+/8", "Zm 9v", "Zm9v!"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if ((dec = kft_base64url_decode(bad[i], strlen(bad[i]), &n)) != NULL)
			fail_msg("\"%s\" decoded", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_rfc4648_vectors),
	        cmocka_unit_test(test_round_trip_against_openssl),
	        cmocka_unit_test(test_line_breaks_skipped),
	        cmocka_unit_test(test_refused),
	        cmocka_unit_test(test_nul_bytes),
	        cmocka_unit_test(test_raw_url),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
