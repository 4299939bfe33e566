/*
 * test_local_statuscreds.c - the local status servers' kept credentials
 * (src/local/statusserver.c, kft_statusserver_creds_start with a file) and
 * the check that decides whether a kept chain still holds
 * (src/util/cert.c, kft_cert_chain_holds).
 *
 * Upstream's controller serves every TrainJob's status with the one
 * certificate its cert rotator keeps in a Secret; a local state directory
 * keeps one set the same way, and a set that is damaged, mixed up, ageing,
 * or in a file someone else could have written is made anew, never used.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "local/statusserver.h"
#include "util/cert.h"

#define YEAR_S (365LL * 24 * 3600)

typedef struct fixture {
	char dir[64];
	char path[128];
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/kft-statuscreds-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/status-server.pem", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void get(kft_statusserver_creds *c, const char *keep_at)
{
	kft_statusserver_creds_start(c, keep_at);
	kft_statusserver_creds_wait(c);
	assert_non_null(c->ca_pem);
	assert_non_null(c->cert_pem);
	assert_non_null(c->key_pem);
	assert_true(kft_cert_chain_holds(c->ca_pem, c->cert_pem, c->key_pem, YEAR_S));
	assert_non_null(c->tls); /* the serving pair parsed on the thread too */
}

static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return NULL;
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

static void put(const char *path, const char *text, mode_t mode)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	assert_int_equal(chmod(path, mode), 0);
}

/* Puts three PEM blocks, in that order, at path with mode; the text (freed
 * by the caller). */
static char *put_blocks(const char *path, const char *a, const char *b, const char *c, mode_t mode)
{
	char *text = NULL;
	assert_true(asprintf(&text, "%s%s%s", a, b, c) > 0);
	put(path, text, mode);
	return text;
}

/* The file holds what was made, 0600, and the next start uses it. */
static void test_kept_and_reused(void **state)
{
	fixture *f = *state;
	kft_statusserver_creds a, b;
	get(&a, f->path);
	struct stat st;
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	char *text = slurp(f->path);
	assert_non_null(strstr(text, a.ca_pem));
	assert_non_null(strstr(text, a.key_pem));
	get(&b, f->path);
	assert_string_equal(a.ca_pem, b.ca_pem);
	assert_string_equal(a.cert_pem, b.cert_pem);
	assert_string_equal(a.key_pem, b.key_pem);
	free(text);
	kft_statusserver_creds_free(&a);
	kft_statusserver_creds_free(&b);
}

/* Without a file to keep them in, each start makes its own. */
static void test_not_kept(void **state)
{
	(void)state;
	kft_statusserver_creds a, b;
	get(&a, NULL);
	get(&b, NULL);
	assert_string_not_equal(a.ca_pem, b.ca_pem);
	kft_statusserver_creds_free(&a);
	kft_statusserver_creds_free(&b);
}

/* Made anew, and written over, when what is kept does not hold: each case
 * gets a CA that is not the one the file held. */
static void assert_replaced(const fixture *f, const char *old_ca)
{
	kft_statusserver_creds c;
	get(&c, f->path);
	if (old_ca)
		assert_string_not_equal(c.ca_pem, old_ca);
	char *text = slurp(f->path);
	assert_non_null(text);
	assert_non_null(strstr(text, c.ca_pem));
	struct stat st;
	assert_int_equal(lstat(f->path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	free(text);
	kft_statusserver_creds_free(&c);
}

static void test_damaged_replaced(void **state)
{
	fixture *f = *state;
	put(f->path, "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", 0600);
	assert_replaced(f, NULL);
	put(f->path, "", 0600);
	assert_replaced(f, NULL);
}

static void test_mixed_up_replaced(void **state)
{
	fixture *f = *state;
	kft_statusserver_creds a, b;
	get(&a, NULL);
	get(&b, NULL);
	free(put_blocks(f->path, a.ca_pem, a.cert_pem, b.key_pem, 0600));
	assert_replaced(f, a.ca_pem);
	/* the serving certificate first, the CA second */
	free(put_blocks(f->path, a.cert_pem, a.ca_pem, a.key_pem, 0600));
	assert_replaced(f, a.ca_pem);
	kft_statusserver_creds_free(&a);
	kft_statusserver_creds_free(&b);
}

/* A file others could have written (or read) is never trusted. */
static void test_loose_file_replaced(void **state)
{
	fixture *f = *state;
	kft_statusserver_creds a;
	get(&a, NULL);
	char *text = put_blocks(f->path, a.ca_pem, a.cert_pem, a.key_pem, 0644);
	assert_replaced(f, a.ca_pem);
	/* nor one reached through a symbolic link */
	char target[160];
	snprintf(target, sizeof(target), "%s/elsewhere.pem", f->dir);
	put(target, text, 0600);
	assert_int_equal(unlink(f->path), 0);
	assert_int_equal(symlink(target, f->path), 0);
	assert_replaced(f, a.ca_pem);
	char *still = slurp(target);
	assert_string_equal(still, text); /* the link was replaced, not followed */
	free(still);
	free(text);
	kft_statusserver_creds_free(&a);
}

/* A chain within a year of its end is made anew. */
static void test_ageing_replaced(void **state)
{
	fixture *f = *state;
	kft_cert ca = {0}, leaf = {0};
	kft_error err = {0};
	kft_cert_opts ca_opts = {.is_ca = true, .subject = "CN=ageing CA", .valid_days = 300};
	kft_cert_opts leaf_opts = {.subject = "CN=localhost", .valid_days = 300};
	assert_int_equal(kft_cert_make_chain(&ca_opts, &leaf_opts, "test", &ca, &leaf, &err), 0);
	assert_true(kft_cert_chain_holds(ca.cert_pem, leaf.cert_pem, leaf.key_pem, 299LL * 86400));
	assert_false(kft_cert_chain_holds(ca.cert_pem, leaf.cert_pem, leaf.key_pem, YEAR_S));
	free(put_blocks(f->path, ca.cert_pem, leaf.cert_pem, leaf.key_pem, 0600));
	assert_replaced(f, ca.cert_pem);
	kft_cert_free(&ca);
	kft_cert_free(&leaf);
}

/* Where the file cannot be written, the credentials are used all the same. */
static void test_unwritable_still_made(void **state)
{
	fixture *f = *state;
	char path[160];
	snprintf(path, sizeof(path), "%s/missing/status-server.pem", f->dir);
	kft_statusserver_creds c;
	get(&c, path);
	assert_int_equal(access(path, F_OK), -1);
	kft_statusserver_creds_free(&c);
}

static void test_chain_holds_refuses(void **state)
{
	(void)state;
	kft_statusserver_creds a;
	get(&a, NULL);
	assert_false(kft_cert_chain_holds(NULL, a.cert_pem, a.key_pem, 0));
	assert_false(kft_cert_chain_holds(a.ca_pem, NULL, a.key_pem, 0));
	assert_false(kft_cert_chain_holds(a.ca_pem, a.cert_pem, NULL, 0));
	assert_false(kft_cert_chain_holds(a.ca_pem, a.ca_pem, a.key_pem, 0));
	assert_false(
	        kft_cert_chain_holds(a.ca_pem, a.cert_pem, "-----BEGIN EC PRIVATE KEY-----\n", 0));
	/* two certificates in one argument are not one certificate */
	char *two = NULL;
	assert_true(asprintf(&two, "%s%s", a.ca_pem, a.cert_pem) > 0);
	assert_false(kft_cert_chain_holds(two, a.cert_pem, a.key_pem, 0));
	free(two);
	kft_statusserver_creds_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_kept_and_reused, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_not_kept, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_damaged_replaced, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_mixed_up_replaced, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_loose_file_replaced, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_ageing_replaced, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_unwritable_still_made, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_chain_holds_refuses, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
