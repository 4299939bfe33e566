/*
 * test_sha1.c - our SHA-1 against the FIPS 180 examples and against OpenSSL.
 *
 * The local backend labels every pod with jobset.sigs.k8s.io/job-key, which
 * JobSet's controller sets to the SHA-1 hex digest of "namespace/job-name"
 * (sigs.k8s.io/jobset pkg/controllers, the JobKey label), so the digest must
 * be exactly SHA-1. The published examples (FIPS 180-2 appendix A and the
 * NIST CSRC examples) pin the algorithm, including the one- and two-block
 * padding cases and a long message; then random messages of every length
 * around the block boundaries, and some long ones, are compared with
 * OpenSSL's SHA1(). The random seed is printed when a comparison fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <cmocka.h>

#include <openssl/sha.h>

#include "util/sha1.h"

static void assert_hex(const char *msg, size_t len, const char *want)
{
	char hex[2 * KFT_SHA1_LEN + 1];
	kft_sha1_hex(msg, len, hex);
	assert_string_equal(hex, want);
}

static void test_fips_examples(void **state)
{
	(void)state;
	assert_hex("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
	/* 56 bytes: the length no longer fits in the first block */
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	assert_hex(two, strlen(two), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	const char *four = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
	                   "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	assert_hex(four, strlen(four), "a49b2446a02c645bf419f995b67091253a04a259");
	assert_hex("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	assert_hex(NULL, 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

static void test_million_a(void **state)
{
	(void)state;
	size_t n = 1000000;
	char *m = malloc(n);
	assert_non_null(m);
	memset(m, 'a', n);
	assert_hex(m, n, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	free(m);
}

/* The job-key of a pod in test_podspec: the digest of "ns1/train-node-1". */
static void test_job_key(void **state)
{
	(void)state;
	assert_hex("ns1/train-node-1", 16, "2fba2fa8b3a528eeb7437cec47afc7ebb17e474c");
}

/* xorshift64*: reproducible from the printed seed. */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void compare_with_openssl(const unsigned char *m, size_t len, uint64_t seed)
{
	unsigned char ours[KFT_SHA1_LEN], theirs[SHA_DIGEST_LENGTH];
	kft_sha1(m, len, ours);
	SHA1(m, len, theirs);
	if (memcmp(ours, theirs, sizeof(ours)) != 0)
		fail_msg("digest differs from OpenSSL for length %zu (seed %llu)", len,
		         (unsigned long long)seed);
}

static void test_random_against_openssl(void **state)
{
	(void)state;
	uint64_t seed = 0;
	assert_int_equal(getrandom(&seed, sizeof(seed), 0), (ssize_t)sizeof(seed));
	seed |= 1; /* xorshift never leaves 0 */
	uint64_t s = seed;
	enum { MAX = 70000 };
	unsigned char *m = malloc(MAX);
	assert_non_null(m);
	for (size_t i = 0; i < MAX; i++)
		m[i] = (unsigned char)next(&s);
	/* every length over the first three blocks, each padding case */
	for (size_t len = 0; len <= 3 * 64 + 1; len++)
		compare_with_openssl(m + next(&s) % 64, len, seed);
	for (int k = 0; k < 200; k++)
		compare_with_openssl(m, (size_t)(next(&s) % MAX), seed);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fips_examples),
	        cmocka_unit_test(test_million_a),
	        cmocka_unit_test(test_job_key),
	        cmocka_unit_test(test_random_against_openssl),
	};
	return cmocka_run_group_tests_name("sha1", tests, NULL, NULL);
}
