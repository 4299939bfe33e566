/*
 * test_torchtune_env.c - the check that a torchtune job's `tune` has the
 * tested versions behind it, against real scripts standing in for `tune`
 * and for its interpreter (a shell script answering as importlib.metadata
 * would). Pins the two forms of console script pip writes ("#!python" and,
 * for long paths, "#!/bin/sh" with "'''exec' "python"") and the versions
 * upstream v2.3.0's torchtune-trainer image installs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local/torchtune_env.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/kft-tt-env-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_exe(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
}

/* An interpreter that reports `versions` ("name version" lines) for any
 * question, and a `tune` script that names it in the given form. */
static void fake_tune(const char *versions, int long_form)
{
	char py[512], tune[512];
	/* "$3" is the config asked about ("-": none); only llama3_2/1B_lora is shipped */
	snprintf(py, sizeof(py),
	         "#!/bin/sh\ncat <<'EOF'\n%sEOF\n"
	         "case \"$3\" in -) ;; llama3_2/1B_lora) echo config yes ;; *) echo config no ;; "
	         "esac\n",
	         versions);
	write_exe("python", py);
	if (long_form)
		snprintf(tune, sizeof(tune),
		         "#!/bin/sh\n'''exec' \"%s/python\" \"$0\" \"$@\"\n' '''\nimport sys\n",
		         dir);
	else
		snprintf(tune, sizeof(tune), "#!%s/python\nimport sys\n", dir);
	write_exe("tune", tune);
}

static const char *const PINNED = "torch 2.9.1+cu128\ntorchao 0.15.0\ntorchtune 0.6.1\n"
                                  "torchdata 0.11.0\nbitsandbytes 0.49.2\n";

static int check_config(const char *config, kft_error *err)
{
	char path[128];
	snprintf(path, sizeof(path), "PATH=%s:/usr/bin:/bin", dir);
	char *env[] = {path, NULL};
	return kft_torchtune_env_check(env, config, err);
}

static int check(kft_error *err)
{
	return check_config(NULL, err);
}

static void test_pinned_set_passes(void **state)
{
	(void)state;
	kft_error err = {0};
	fake_tune(PINNED, 0);
	assert_int_equal(check(&err), 0);
	fake_tune(PINNED, 1); /* pip's form for an interpreter path too long for #! */
	assert_int_equal(check(&err), 0);
}

/* A config the pinned torchtune does not ship (upstream's Torch plugin picks
 * llama3_3/70B_full_single_device for a 70B job on one device) is said
 * before anything starts. */
static void test_config_not_shipped(void **state)
{
	(void)state;
	kft_error err = {0};
	fake_tune(PINNED, 0);
	assert_int_equal(check_config("llama3_2/1B_lora", &err), 0);
	assert_int_equal(check_config("llama3_3/70B_full_single_device", &err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "picked torchtune's config "
	                                    "llama3_3/70B_full_single_device"));
	assert_non_null(strstr(err.message, "torchtune 0.6.1 does not ship it"));
}

static void test_other_versions_named(void **state)
{
	(void)state;
	kft_error err = {0};
	fake_tune("torch 2.15.0\ntorchao 0.18.0\ntorchtune 0.6.1\ntorchdata 0.11.0\n"
	          "bitsandbytes -\n",
	          0);
	assert_int_equal(check(&err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "torch 2.15.0 (wants 2.9.1), torchao 0.18.0 (wants "
	                                    "0.15.0), bitsandbytes missing (wants 0.49.2)"));
	assert_non_null(strstr(err.message, "pip install torch==2.9.1 torchao==0.15.0 "
	                                    "torchtune==0.6.1 torchdata==0.11.0 "
	                                    "bitsandbytes==0.49.2"));
	setenv(KFT_TORCHTUNE_CHECK_ENV, "off", 1);
	assert_int_equal(check(&err), 0);
	unsetenv(KFT_TORCHTUNE_CHECK_ENV);
}

static void test_no_tune_or_no_interpreter(void **state)
{
	(void)state;
	kft_error err = {0};
	assert_int_equal(check(&err), KFT_EINVAL); /* nothing in dir yet */
	assert_non_null(strstr(err.message, "no `tune` on the job's PATH"));
	write_exe("tune", "#!/bin/sh\necho not python\n");
	assert_int_equal(check(&err), KFT_EINVAL);
	assert_non_null(strstr(err.message, "is not a Python console script"));
	write_exe("tune", "#!/nonexistent/python\n");
	assert_int_equal(check(&err), KFT_EINVAL);
}

static void test_pins_parse(void **state)
{
	(void)state;
	kft_pin pins[4];
	kft_error err = {0};
	assert_int_equal(kft_torchtune_pins_parse("# c\n\na==1.0  # why\r\nb==2\n", pins, 4, &err),
	                 2);
	assert_string_equal(pins[0].name, "a");
	assert_string_equal(pins[0].version, "1.0");
	assert_string_equal(pins[1].version, "2");
	assert_int_equal(kft_torchtune_pins_parse("a>=1\n", pins, 4, &err), KFT_EPARSE);
	assert_string_equal(err.message, "torchtune pins: line 1: want name==version");
	assert_int_equal(kft_torchtune_pins_parse("a==\n", pins, 4, &err), KFT_EPARSE);
	assert_int_equal(kft_torchtune_pins_parse("a==1+cpu\n", pins, 4, &err), KFT_EPARSE);
	assert_int_equal(kft_torchtune_pins_parse("a==1\na==2\n", pins, 4, &err), KFT_EPARSE);
	assert_string_equal(err.message, "torchtune pins: line 2: a pinned twice");
	assert_int_equal(kft_torchtune_pins_parse("a==1\nb==1\n", pins, 1, &err), KFT_ELIMIT);
	/* the embedded pins parse, and say the stack upstream's image installs */
	assert_non_null(strstr(kft_torchtune_install_command(), "torchtune==0.6.1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_pinned_set_passes, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_other_versions_named, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_config_not_shipped, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_no_tune_or_no_interpreter, setup, teardown),
	        cmocka_unit_test(test_pins_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
