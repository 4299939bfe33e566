/*
 * test_digest.c - the hashes of util/digest.h (over mbedTLS) against the
 * published examples and against OpenSSL as an independent implementation.
 *
 * The local backend labels every pod with jobset.sigs.k8s.io/job-key, which
 * JobSet's controller sets to the SHA-1 hex digest of "namespace/job-name"
 * (sigs.k8s.io/jobset pkg/controllers, the JobKey label), so the digest must
 * be exactly SHA-1. The published examples (FIPS 180-2 appendix A and the
 * NIST CSRC examples) pin it, including the one- and two-block padding cases
 * and a long message; then random messages of every length around the block
 * boundaries, and some long ones, are compared with OpenSSL's SHA1() (the
 * random seed is printed when a comparison fails). SHA-256 (initializers'
 * checksums) against FIPS 180-2's examples, of memory and of a file;
 * HMAC-SHA256 (SigV4's key chain) against RFC 4231's test cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/sha.h>

#include "util/digest.h"

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
	unsigned char theirs[SHA_DIGEST_LENGTH];
	char ours[2 * KFT_SHA1_LEN + 1], want[2 * KFT_SHA1_LEN + 1];
	kft_sha1_hex(m, len, ours);
	SHA1(m, len, theirs);
	kft_hex(theirs, sizeof(theirs), want);
	if (strcmp(ours, want) != 0)
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

/* FIPS 180-2 appendix B, of memory and of a file read from its start. */
static void test_sha256(void **state)
{
	(void)state;
	char hex[2 * KFT_SHA256_LEN + 1];
	kft_sha256_hex("abc", 3, hex);
	assert_string_equal(hex,
	                    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	kft_sha256_hex(NULL, 0, hex);
	assert_string_equal(hex,
	                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	char path[] = "/tmp/kft-digest-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	assert_int_equal(write(fd, two, strlen(two)), (ssize_t)strlen(two));
	assert_int_equal(kft_sha256_fd(fd, hex), 0);
	assert_string_equal(hex,
	                    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	close(fd);
	assert_int_equal(kft_sha256_fd(fd, hex), -1); /* a closed descriptor */
}

/* RFC 4231 test cases 1, 2 and 6 (a key longer than a block). */
static void test_hmac_sha256(void **state)
{
	(void)state;
	unsigned char key[131], out[KFT_SHA256_LEN];
	char hex[2 * KFT_SHA256_LEN + 1];
	memset(key, 0x0b, 20);
	assert_int_equal(kft_hmac_sha256(key, 20, "Hi There", 8, out), 0);
	kft_hex(out, sizeof(out), hex);
	assert_string_equal(hex,
	                    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	assert_int_equal(kft_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, out), 0);
	kft_hex(out, sizeof(out), hex);
	assert_string_equal(hex,
	                    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(key, 0xaa, sizeof(key));
	const char *msg = "Test Using Larger Than Block-Size Key - Hash Key First";
	assert_int_equal(kft_hmac_sha256(key, sizeof(key), msg, strlen(msg), out), 0);
	kft_hex(out, sizeof(out), hex);
	assert_string_equal(hex,
	                    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fips_examples), cmocka_unit_test(test_million_a),
	        cmocka_unit_test(test_job_key),       cmocka_unit_test(test_random_against_openssl),
	        cmocka_unit_test(test_sha256),        cmocka_unit_test(test_hmac_sha256),
	};
	return cmocka_run_group_tests_name("digest", tests, NULL, NULL);
}
