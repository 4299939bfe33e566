/*
 * test_sshkey.c - the MPI SSH key pair: structure, not bytes.
 *
 * Keys are random, so nothing here pins key material. Instead every check
 * re-derives facts with OpenSSL directly (not through sshkey.c): the PEM
 * parses as an EC key on P-521 with the "EC PRIVATE KEY" label upstream
 * writes (Go's x509.MarshalECPrivateKey), the authorized_keys line is
 * "ecdsa-sha2-nistp521 <base64>\n" like golang.org/x/crypto/ssh's
 * MarshalAuthorizedKey, its blob is RFC 5656's three strings, and the point
 * in it is the public half of the private key. When ssh-keygen is installed
 * we also ask OpenSSH itself to derive the public key from the PEM.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "util/sshkey.h"

#define PEM_BEGIN "-----BEGIN EC PRIVATE KEY-----\n"
#define PEM_END   "-----END EC PRIVATE KEY-----\n"

static EVP_PKEY *parse_pem(const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	assert_non_null(bio);
	EVP_PKEY *pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	return pkey;
}

/* Reads one SSH wire string at *p (bounded by end); returns its length. */
static size_t read_string(const unsigned char **p, const unsigned char *end,
                          const unsigned char **s)
{
	assert_true(end - *p >= 4);
	size_t n = ((size_t)(*p)[0] << 24) | ((size_t)(*p)[1] << 16) | ((size_t)(*p)[2] << 8) |
	           (size_t)(*p)[3];
	*p += 4;
	assert_true((size_t)(end - *p) >= n);
	*s = *p;
	*p += n;
	return n;
}

/* The base64 part of "TYPE BASE64\n", decoded; *len receives its length. */
static unsigned char *decode_blob(const char *line, size_t *len)
{
	const char *b64 = strchr(line, ' ');
	assert_non_null(b64);
	b64++;
	size_t n = strcspn(b64, "\n");
	assert_int_equal(n % 4, 0);
	unsigned char *out = malloc(n);
	assert_non_null(out);
	int got = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n);
	assert_true(got > 0);
	/* EVP_DecodeBlock counts '=' padding as zero bytes. */
	size_t pad = (n >= 1 && b64[n - 1] == '=') + (n >= 2 && b64[n - 2] == '=');
	*len = (size_t)got - pad;
	return out;
}

/* sshkey.h: "ECDSA on NIST P-521, PEM 'EC PRIVATE KEY'" (upstream mpi.go
 * buildSSHAuthSecret: ecdsa.GenerateKey(elliptic.P521()), pem type
 * "EC PRIVATE KEY"). */
static void test_private_key_is_p521_sec1_pem(void **state)
{
	(void)state;
	kft_sshkey key;
	kft_error err;
	assert_int_equal(kft_sshkey_generate(&key, &err), 0);
	assert_non_null(key.private_pem);
	size_t len = strlen(key.private_pem);
	assert_true(len > strlen(PEM_BEGIN) + strlen(PEM_END));
	assert_memory_equal(key.private_pem, PEM_BEGIN, strlen(PEM_BEGIN));
	assert_string_equal(key.private_pem + len - strlen(PEM_END), PEM_END);
	/* Traditional SEC 1 PEM is not encrypted: no Proc-Type header. */
	assert_null(strstr(key.private_pem, "Proc-Type"));

	EVP_PKEY *pkey = parse_pem(key.private_pem);
	assert_non_null(pkey);
	assert_true(EVP_PKEY_is_a(pkey, "EC"));
	char group[64];
	size_t glen = 0;
	assert_true(EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group,
	                                           sizeof(group), &glen));
	assert_string_equal(group, "secp521r1");
	assert_int_equal(EVP_PKEY_get_bits(pkey), 521);
	EVP_PKEY_free(pkey);
	kft_sshkey_free(&key);
	assert_null(key.private_pem);
	assert_null(key.authorized_key);
}

/* ssh.MarshalAuthorizedKey: "ecdsa-sha2-nistp521 <base64 blob>\n", blob =
 * string(type) string("nistp521") string(uncompressed point), and the
 * point is the private key's public half. */
static void test_authorized_key_matches_private_key(void **state)
{
	(void)state;
	kft_sshkey key;
	assert_int_equal(kft_sshkey_generate(&key, NULL), 0);
	const char *line = key.authorized_key;
	assert_non_null(line);
	assert_memory_equal(line, "ecdsa-sha2-nistp521 AAAA", 24);
	size_t len = strlen(line);
	assert_int_equal(line[len - 1], '\n');
	assert_null(strchr(line, '\r'));
	assert_int_equal(strchr(line, '\n') - line, (ptrdiff_t)len - 1); /* one line */
	assert_int_equal(strchr(line, ' ') - line, 19);                  /* no comment field */
	assert_null(strchr(line + 20, ' '));

	size_t blob_len;
	unsigned char *blob = decode_blob(line, &blob_len);
	const unsigned char *p = blob, *end = blob + blob_len, *s;
	size_t n = read_string(&p, end, &s);
	assert_int_equal(n, 19);
	assert_memory_equal(s, "ecdsa-sha2-nistp521", 19);
	n = read_string(&p, end, &s);
	assert_int_equal(n, 8);
	assert_memory_equal(s, "nistp521", 8);
	const unsigned char *point;
	size_t point_len = read_string(&p, end, &point);
	assert_true(p == end);
	assert_int_equal(point_len, 133);
	assert_int_equal(point[0], 0x04);

	EVP_PKEY *pkey = parse_pem(key.private_pem);
	assert_non_null(pkey);
	unsigned char pub[200];
	size_t pub_len = 0;
	assert_true(EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, pub,
	                                            sizeof(pub), &pub_len));
	assert_int_equal(pub_len, point_len);
	assert_memory_equal(pub, point, point_len);

	EVP_PKEY_free(pkey);
	free(blob);
	kft_sshkey_free(&key);
}

/* "generated fresh per job": two calls never share a key. */
static void test_keys_are_fresh(void **state)
{
	(void)state;
	kft_sshkey a, b;
	assert_int_equal(kft_sshkey_generate(&a, NULL), 0);
	assert_int_equal(kft_sshkey_generate(&b, NULL), 0);
	assert_string_not_equal(a.private_pem, b.private_pem);
	assert_string_not_equal(a.authorized_key, b.authorized_key);
	kft_sshkey_free(&a);
	kft_sshkey_free(&b);
}

/* OpenSSH itself agrees: `ssh-keygen -y` of the PEM prints our public key.
 * Skipped (with a message) when ssh-keygen is not installed. */
static void test_openssh_derives_the_same_public_key(void **state)
{
	(void)state;
	if (access("/usr/bin/ssh-keygen", X_OK) != 0) {
		print_message("ssh-keygen not installed; skipping the OpenSSH cross-check\n");
		skip();
	}
	kft_sshkey key;
	assert_int_equal(kft_sshkey_generate(&key, NULL), 0);
	char path[] = "/tmp/kft-sshkey-XXXXXX";
	int fd = mkstemp(path); /* mode 0600, as ssh-keygen insists */
	assert_true(fd >= 0);
	size_t len = strlen(key.private_pem);
	assert_int_equal(write(fd, key.private_pem, len), (ssize_t)len);
	close(fd);

	char cmd[128], out[512] = "";
	snprintf(cmd, sizeof(cmd), "/usr/bin/ssh-keygen -y -f %s 2>/dev/null", path);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	size_t got = fread(out, 1, sizeof(out) - 1, f);
	out[got] = '\0';
	int status = pclose(f);
	unlink(path);
	assert_int_equal(status, 0);
	/* ssh-keygen may append a comment; compare type and key. */
	size_t keylen = strlen(key.authorized_key) - 1;
	assert_memory_equal(out, key.authorized_key, keylen);
	assert_true(out[keylen] == '\n' || out[keylen] == ' ');
	kft_sshkey_free(&key);
}

static void test_null_out_is_refused(void **state)
{
	(void)state;
	kft_error err;
	assert_int_equal(kft_sshkey_generate(NULL, &err), KFT_EINVAL);
	assert_int_equal(err.code, KFT_EINVAL);
	kft_sshkey_free(NULL); /* no crash */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_private_key_is_p521_sec1_pem),
	        cmocka_unit_test(test_authorized_key_matches_private_key),
	        cmocka_unit_test(test_keys_are_fresh),
	        cmocka_unit_test(test_openssh_derives_the_same_public_key),
	        cmocka_unit_test(test_null_out_is_refused),
	};
	return cmocka_run_group_tests_name("sshkey", tests, NULL, NULL);
}
