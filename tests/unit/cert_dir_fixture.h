/*
 * cert_dir_fixture.h - a certificate directory as the unit tests of TLS
 * servers use it: tls.crt and tls.key written as a kubelet or cert-manager
 * would (each file replaced whole by a rename, the key first), and the
 * directory removed again. Include after <cmocka.h> and "util/cert.h"; the
 * functions are static inline so a test may use either one.
 */
#ifndef KFT_TESTS_CERT_DIR_FIXTURE_H
#define KFT_TESTS_CERT_DIR_FIXTURE_H

#include <stdio.h>
#include <unistd.h>

/* dir/name holds text; a reader sees the old file or the new, never half. */
static inline void cert_dir_write(const char *dir, const char *name, const char *text)
{
	char path[4096], tmp[4104];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(rename(tmp, path), 0);
}

/* dir's tls.key, then tls.crt, become pair's. */
static inline void cert_dir_put(const char *dir, const kft_cert *pair)
{
	cert_dir_write(dir, "tls.key", pair->key_pem);
	cert_dir_write(dir, "tls.crt", pair->cert_pem);
}

/* Removes dir's tls.crt and tls.key, then dir. */
static inline void cert_dir_remove(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/tls.crt", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/tls.key", dir);
	unlink(path);
	rmdir(dir);
}

#endif
