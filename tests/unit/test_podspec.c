/*
 * test_podspec.c - one pod of a rendered JobSet as an exec spec
 * (src/local/podspec.c).
 *
 * The JobSet, Secret and ConfigMap literals below are small hand-written
 * stand-ins for `kftrainer render` output. The $(VAR) cases are the facts
 * listed in Kubernetes' own expansion tests (third_party/forked/golang/
 * expansion), restated here as input/expected pairs. Each test that touches
 * the disk gets a fresh mkdtemp directory, removed in teardown.
 */
#define _XOPEN_SOURCE 700

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local/podspec.h"

static json_t *parse(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	if (!v)
		fprintf(stderr, "bad test JSON line %d: %s\n", e.line, e.text);
	assert_non_null(v);
	return v;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	char *dir = strdup("/tmp/kft-podspec-XXXXXX");
	if (!dir || !mkdtemp(dir))
		return -1;
	*state = dir;
	return 0;
}

static int teardown(void **state)
{
	nftw(*state, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(*state);
	return 0;
}

/* ---- expansion: Kubernetes' table -------------------------------------- */

static const char *lookup_fixed(const char *name, void *ctx)
{
	static const char *vars[][2] = {{"VAR_A", "A"},
	                                {"VAR_B", "B"},
	                                {"VAR_C", "C"},
	                                {"VAR_REF", "$(VAR_A)"},
	                                {"VAR_EMPTY", ""}};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (strcmp(vars[i][0], name) == 0)
			return vars[i][1];
	return NULL;
}

static void test_expand_table(void **state)
{
	static const char *cases[][2] = {
	        {"$(VAR_A)", "A"},
	        {"$(VAR_A)-$(VAR_A)", "A-A"},
	        {"___$(VAR_B)___", "___B___"},
	        {"$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"},
	        {"$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"},
	        {"$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"},
	        {"f000-$$VAR_A", "f000-$VAR_A"},
	        {"foo\\$(VAR_C)bar", "foo\\Cbar"},
	        {"$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"},
	        {"$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"},
	        {"$(VAR_REF)", "$(VAR_A)"}, /* values are not expanded twice */
	        {"foo$(VAR_EMPTY)bar", "foobar"},
	        {"foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"},
	        {"$?_boo_$!", "$?_boo_$!"},
	        {"$VAR_A", "$VAR_A"},
	        {"$(VAR_DNE)", "$(VAR_DNE)"},
	        {"$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"},
	        {"$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"},
	        {"$$$$$$$(VAR_A)", "$$$A"},
	        {"${VAR_A}", "${VAR_A}"},
	        {"$(VAR_B)_______$(A", "B_______$(A"},
	        {"$(VAR_C)_______$(", "C_______$("},
	        {"$(VAR_A)foobarzab$", "Afoobarzab$"},
	        {"--$($($($($--", "--$($($($($--"},
	        {"$(foo$$var)", "$(foo$$var)"},
	        {"$\xc2\xa3"
	         "FOO",
	         "$\xc2\xa3"
	         "FOO"},
	        {"", ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = kft_expand_vars(cases[i][0], lookup_fixed, NULL);
		assert_non_null(got);
		if (strcmp(got, cases[i][1]) != 0)
			fprintf(stderr, "case %zu: %s -> %s\n", i, cases[i][0], got);
		assert_string_equal(got, cases[i][1]);
		free(got);
	}
}

/* ---- the fixtures ----------------------------------------------------------- */

static const char *JOBSET =
        "{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
        " \"metadata\":{\"name\":\"train\",\"namespace\":\"ns1\"},"
        " \"spec\":{\"replicatedJobs\":["
        "  {\"name\":\"init\",\"replicas\":1,\"template\":{\"spec\":{\"template\":{\"spec\":{"
        "    \"containers\":[{\"name\":\"i\",\"image\":\"x\",\"command\":[\"true\"]}]}}}}},"
        "  {\"name\":\"node\",\"replicas\":2,\"groupName\":\"g\",\"template\":{\"spec\":{"
        "   \"template\":{\"metadata\":{\"labels\":{\"team\":\"ml\"}},\"spec\":{"
        "    \"volumes\":["
        "      {\"name\":\"scratch\",\"emptyDir\":{}},"
        "      {\"name\":\"initializer\",\"persistentVolumeClaim\":{\"claimName\":\"ws\"}},"
        "      {\"name\":\"cfg\",\"configMap\":{\"name\":\"cm\",\"items\":["
        "         {\"key\":\"a\",\"path\":\"sub/a.txt\"},{\"key\":\"b\",\"path\":\"b\","
        "          \"mode\":384}]}},"
        "      {\"name\":\"ssh\",\"secret\":{\"secretName\":\"sec\"}},"
        "      {\"name\":\"ssh2\",\"secret\":{\"secretName\":\"sec\",\"defaultMode\":420}}],"
        "    \"containers\":[{\"name\":\"node\",\"image\":\"img:1\","
        "     \"command\":[\"python3\",\"/workspace/train.py\",\"$(EPOCHS)\"],"
        "     \"args\":[\"--out=/workspace/o\",\"$$(EPOCHS)\",\"$(NOPE)\","
        "               \"/workspacex\",\"/workspace/model/x\"],"
        "     \"workingDir\":\"/workspace\","
        "     \"volumeMounts\":["
        "      {\"name\":\"initializer\",\"mountPath\":\"/workspace\"},"
        "      {\"name\":\"initializer\",\"mountPath\":\"/workspace/model/\",\"subPath\":\"m\"},"
        "      {\"name\":\"scratch\",\"mountPath\":\"/tmp/s\"},"
        "      {\"name\":\"cfg\",\"mountPath\":\"/etc/cfg\"},"
        "      {\"name\":\"ssh\",\"mountPath\":\"/root/.ssh\"},"
        "      {\"name\":\"ssh2\",\"mountPath\":\"/etc/ssh2\"}],"
        "     \"envFrom\":[{\"configMapRef\":{\"name\":\"cm\"},\"prefix\":\"CM_\"},"
        "                  {\"secretRef\":{\"name\":\"sec\"}},"
        "                  {\"configMapRef\":{\"name\":\"gone\",\"optional\":true}}],"
        "     \"env\":["
        "      {\"name\":\"EPOCHS\",\"value\":\"3\"},"
        "      {\"name\":\"CMD\",\"value\":\"$(EPOCHS)x$$(EPOCHS)$(LATER)\"},"
        "      {\"name\":\"LATER\",\"value\":\"l\"},"
        "      {\"name\":\"CM_a\",\"value\":\"override\"},"
        "      {\"name\":\"POD\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
        "      "
        "{\"name\":\"NS\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.namespace\"}}},"
        "      {\"name\":\"RANK\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
        "        \"metadata.annotations['batch.kubernetes.io/job-completion-index']\"}}},"
        "      {\"name\":\"JIDX\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
        "        \"metadata.labels['jobset.sigs.k8s.io/job-index']\"}}},"
        "      {\"name\":\"GIDX\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
        "        \"metadata.labels['jobset.sigs.k8s.io/job-global-index']\"}}},"
        "      {\"name\":\"KEY\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
        "        \"metadata.labels['jobset.sigs.k8s.io/job-key']\"}}},"
        "      {\"name\":\"TEAM\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
        "        \"metadata.labels['team']\"}}},"
        "      {\"name\":\"IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}},"
        "      "
        "{\"name\":\"PW\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"sec\",\"key\":\"pw\"}}},"
        "      {\"name\":\"OPT\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"sec\",\"key\":\"no\","
        "        \"optional\":true}}},"
        "      "
        "{\"name\":\"B\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"b\"}}},"
        "      {\"name\":\"DATA\",\"value\":\"/workspace/dataset\"}"
        "     ]}]}}}}}]}}";

static const char *OBJECTS =
        "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\","
        "   \"namespace\":\"ns1\"},\"data\":{\"a\":\"alpha\",\"b\":\"beta\"}},"
        " {\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"sec\","
        "   \"namespace\":\"ns1\"},\"data\":{\"pw\":\"czNjcjN0\",\"id_rsa\":\"aWRfcnNhX2JvZHk=\"}},"
        " {\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"sec\","
        "   \"namespace\":\"other\"},\"data\":{\"pw\":\"dG9r\"}}]";

static const char *env_of(const kft_podspec *s, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; s->envp[i]; i++)
		if (strncmp(s->envp[i], name, n) == 0 && s->envp[i][n] == '=')
			return s->envp[i] + n + 1;
	return NULL;
}

static size_t env_pos(const kft_podspec *s, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; s->envp[i]; i++)
		if (strncmp(s->envp[i], name, n) == 0 && s->envp[i][n] == '=')
			return i;
	return (size_t)-1;
}

static char *slurp(const char *dir, const char *rel, mode_t *mode)
{
	char path[512];
	static char buf[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_int_equal(stat(path, &st), 0);
	*mode = st.st_mode & 07777;
	return buf;
}

struct built {
	json_t *js, *objs;
	kft_podspec s;
};

static void build_node_with(const char *dir, const kft_podspec_defaults *d, struct built *b)
{
	kft_error err;
	b->js = parse(JOBSET);
	b->objs = parse(OBJECTS);
	int rc = kft_podspec_build_with(b->js, b->objs, "node", 1, 3, "node", dir, d, &b->s, &err);
	if (rc != 0)
		fprintf(stderr, "build: %s\n", err.message);
	assert_int_equal(rc, 0);
}

static void build_node(const char *dir, struct built *b)
{
	build_node_with(dir, NULL, b);
}

static void built_free(struct built *b)
{
	kft_podspec_free(&b->s);
	json_decref(b->js);
	json_decref(b->objs);
}

/* ---- env forms -------------------------------------------------------------- */

static void test_env_forms(void **state)
{
	struct built b;
	build_node(*state, &b);
	assert_string_equal(b.s.pod_name, "train-node-1-3-local");
	assert_string_equal(env_of(&b.s, "POD"), "train-node-1-3-local");
	assert_string_equal(env_of(&b.s, "NS"), "ns1");
	assert_string_equal(env_of(&b.s, "RANK"), "3");
	assert_string_equal(env_of(&b.s, "JIDX"), "1");
	assert_string_equal(env_of(&b.s, "GIDX"), "2"); /* init has 1 replica before node */
	assert_string_equal(env_of(&b.s, "KEY"), "2fba2fa8b3a528eeb7437cec47afc7ebb17e474c");
	assert_string_equal(env_of(&b.s, "TEAM"), "ml");
	assert_string_equal(env_of(&b.s, "IP"), "127.0.0.1");
	assert_string_equal(env_of(&b.s, "PW"), "s3cr3t"); /* base64-decoded, namespace ns1 */
	assert_null(env_of(&b.s, "OPT"));
	assert_string_equal(env_of(&b.s, "B"), "beta");
	/* envFrom: prefix, secret keys unprefixed, optional missing source skipped */
	assert_string_equal(env_of(&b.s, "CM_b"), "beta");
	assert_string_equal(env_of(&b.s, "id_rsa"), "id_rsa_body");
	/* a later env entry overrides the value but keeps the first position */
	assert_string_equal(env_of(&b.s, "CM_a"), "override");
	assert_true(env_pos(&b.s, "CM_a") < env_pos(&b.s, "EPOCHS"));
	/* expansion sees only earlier variables */
	assert_string_equal(env_of(&b.s, "CMD"), "3x$(EPOCHS)$(LATER)");
	assert_string_equal(b.s.image, "img:1");
	built_free(&b);
}

/* ---- command/args, mounts and rewriting -------------------------------- */

static void test_argv_and_mounts(void **state)
{
	const char *dir = *state;
	char ws[256], model[256], want[512];
	struct built b;
	build_node(dir, &b);
	snprintf(ws, sizeof(ws), "%s/volumes/ws", dir);
	snprintf(model, sizeof(model), "%s/volumes/ws/m", dir);
	assert_string_equal(b.s.argv[0], "python3");
	snprintf(want, sizeof(want), "%s/train.py", ws);
	assert_string_equal(b.s.argv[1], want);
	assert_string_equal(b.s.argv[2], "3");
	snprintf(want, sizeof(want), "--out=%s/o", ws); /* after the first '=' */
	assert_string_equal(b.s.argv[3], want);
	assert_string_equal(b.s.argv[4], "$(EPOCHS)");
	assert_string_equal(b.s.argv[5], "$(NOPE)");
	assert_string_equal(b.s.argv[6], "/workspacex"); /* not a path boundary */
	snprintf(want, sizeof(want), "%s/x", model);     /* the longest mount wins */
	assert_string_equal(b.s.argv[7], want);
	assert_null(b.s.argv[8]);
	assert_string_equal(b.s.workdir, ws);
	snprintf(want, sizeof(want), "%s/dataset", ws);
	assert_string_equal(env_of(&b.s, "DATA"), want);

	assert_int_equal(b.s.n_mounts, 6);
	assert_string_equal(b.s.mounts[1].mount_path, "/workspace/model");
	assert_string_equal(b.s.mounts[1].host_path, model);
	assert_false(b.s.mounts[0].read_only);
	assert_true(b.s.mounts[3].read_only);

	json_t *m = parse(env_of(&b.s, KFT_MOUNTS_ENV));
	assert_string_equal(json_string_value(json_object_get(m, "/workspace")), ws);
	snprintf(want, sizeof(want), "%s/volumes/ssh", dir);
	assert_string_equal(json_string_value(json_object_get(m, "/root/.ssh")), want);
	json_decref(m);
	struct stat st;
	assert_int_equal(stat(model, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	built_free(&b);
}

/* In a view (mountns.h) the process sees each volume at its mountPath, as a
 * container does, so nothing is rewritten; the mount table and
 * KFTRAINER_MOUNTS are the same. */
static void test_view_keeps_paths(void **state)
{
	const char *dir = *state;
	const kft_podspec_defaults d = {.view = 1};
	struct built b;
	build_node_with(dir, &d, &b);
	assert_string_equal(b.s.argv[1], "/workspace/train.py");
	assert_string_equal(b.s.argv[3], "--out=/workspace/o");
	assert_string_equal(b.s.argv[7], "/workspace/model/x");
	assert_string_equal(b.s.workdir, "/workspace");
	assert_string_equal(env_of(&b.s, "DATA"), "/workspace/dataset");
	assert_int_equal(b.s.n_mounts, 6);
	json_t *m = parse(env_of(&b.s, KFT_MOUNTS_ENV));
	char ws[256];
	snprintf(ws, sizeof(ws), "%s/volumes/ws", dir);
	assert_string_equal(json_string_value(json_object_get(m, "/workspace")), ws);
	json_decref(m);
	built_free(&b);
}

static void test_volume_files(void **state)
{
	const char *dir = *state;
	char vol[256];
	mode_t mode;
	struct built b;
	build_node(dir, &b);
	snprintf(vol, sizeof(vol), "%s/volumes/cfg", dir);
	assert_string_equal(slurp(vol, "sub/a.txt", &mode), "alpha");
	assert_int_equal(mode, 0644);
	assert_string_equal(slurp(vol, "b", &mode), "beta");
	assert_int_equal(mode, 0600);
	snprintf(vol, sizeof(vol), "%s/volumes/ssh", dir);
	assert_string_equal(slurp(vol, "id_rsa", &mode), "id_rsa_body");
	assert_int_equal(mode, 0600);
	assert_string_equal(slurp(vol, "pw", &mode), "s3cr3t");
	snprintf(vol, sizeof(vol), "%s/volumes/ssh2", dir);
	assert_string_equal(slurp(vol, "id_rsa", &mode), "id_rsa_body");
	assert_int_equal(mode, 0644);
	built_free(&b);
}

/* ---- errors ------------------------------------------------------------------ */

/* Replaces the `env` of the node container, builds, returns rc and err. */
static int build_with_env(const char *dir, const char *env_json, const char *objs_json,
                          kft_error *err)
{
	json_t *js = parse(JOBSET), *objs = parse(objs_json);
	json_t *c = json_array_get(
	        json_object_get(
	                json_object_get(
	                        json_object_get(
	                                json_object_get(
	                                        json_object_get(
	                                                json_array_get(
	                                                        json_object_get(
	                                                                json_object_get(js, "spec"),
	                                                                "replicatedJobs"),
	                                                        1),
	                                                "template"),
	                                        "spec"),
	                                "template"),
	                        "spec"),
	                "containers"),
	        0);
	kft_podspec s;
	json_object_set_new(c, "env", parse(env_json));
	int rc = kft_podspec_build(js, objs, "node", 0, 0, "node", dir, &s, err);
	assert_null(s.argv);
	kft_podspec_free(&s);
	json_decref(js);
	json_decref(objs);
	return rc;
}

static void test_missing_keys(void **state)
{
	kft_error err;
	int rc = build_with_env(*state,
	                        "[{\"name\":\"X\",\"valueFrom\":{\"secretKeyRef\":{\"name\":"
	                        "\"sec\",\"key\":\"nokey\"}}}]",
	                        OBJECTS, &err);
	assert_int_equal(rc, KFT_ENOTFOUND);
	assert_string_equal(err.message, "couldn't find key nokey in Secret ns1/sec");
	rc = build_with_env(*state,
	                    "[{\"name\":\"X\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\","
	                    "\"key\":\"z\"}}}]",
	                    OBJECTS, &err);
	assert_int_equal(rc, KFT_ENOTFOUND);
	assert_string_equal(err.message, "couldn't find key z in ConfigMap ns1/cm");
	rc = build_with_env(
	        *state,
	        "[{\"name\":\"X\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.uid\"}}}]",
	        OBJECTS, &err);
	assert_int_equal(rc, KFT_EINVAL);
	assert_non_null(strstr(err.message, "metadata.uid"));
	/* envFrom of a Secret that is missing (wrong namespace only) is an error */
	rc = build_with_env(
	        *state, "[]",
	        "[{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\"},"
	        "  \"data\":{\"a\":\"1\",\"b\":\"2\"}},"
	        " {\"kind\":\"Secret\",\"metadata\":{\"name\":\"sec\",\"namespace\":\"x\"}}]",
	        &err);
	assert_int_equal(rc, KFT_ENOTFOUND);
	assert_string_equal(err.message, "secrets \"sec\" not found");
	/* bad base64 */
	rc = build_with_env(
	        *state, "[]",
	        "[{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\"},"
	        "  \"data\":{\"a\":\"1\",\"b\":\"2\"}},"
	        " {\"kind\":\"Secret\",\"metadata\":{\"name\":\"sec\"},\"data\":{\"k\":\"@@\"}}]",
	        &err);
	assert_int_equal(rc, KFT_EINVAL);
}

static void test_bad_inputs(void **state)
{
	kft_error err;
	kft_podspec s;
	json_t *js = parse(JOBSET), *objs = parse(OBJECTS);
	assert_int_equal(kft_podspec_build(js, objs, "nope", 0, 0, "node", *state, &s, &err),
	                 KFT_EINVAL);
	assert_int_equal(kft_podspec_build(js, objs, "node", 2, 0, "node", *state, &s, &err),
	                 KFT_EINVAL);
	assert_int_equal(kft_podspec_build(js, objs, "node", 0, 0, "x", *state, &s, &err),
	                 KFT_EINVAL);
	assert_int_equal(kft_podspec_build(js, objs, "node", 0, 0, "node", "rel", &s, &err),
	                 KFT_EINVAL);
	/* init's container has no volumes and a plain command */
	assert_int_equal(kft_podspec_build(js, NULL, "init", 0, 0, "i", *state, &s, &err), 0);
	assert_string_equal(s.argv[0], "true");
	assert_string_equal(s.workdir, *state);
	assert_string_equal(env_of(&s, KFT_MOUNTS_ENV), "{}");
	kft_podspec_free(&s);
	/* an item path escaping the volume is refused */
	json_t *items = json_object_get(
	        json_object_get(
	                json_array_get(
	                        json_object_get(
	                                json_object_get(
	                                        json_object_get(
	                                                json_object_get(
	                                                        json_object_get(
	                                                                json_array_get(
	                                                                        json_object_get(
	                                                                                json_object_get(
	                                                                                        js,
	                                                                                        "sp"
	                                                                                        "e"
	                                                                                        "c"),
	                                                                                "replicated"
	                                                                                "Jobs"),
	                                                                        1),
	                                                                "template"),
	                                                        "spec"),
	                                                "template"),
	                                        "spec"),
	                                "volumes"),
	                        2),
	                "configMap"),
	        "items");
	json_object_set_new(json_array_get(items, 0), "path", json_string("../../evil"));
	assert_int_equal(kft_podspec_build(js, objs, "node", 0, 0, "node", *state, &s, &err),
	                 KFT_EINVAL);
	json_decref(js);
	json_decref(objs);
}

/* ---- defaults: what the machine adds -------------------------------------- */

/* The base environment goes under the pod's env (a name the pod defines keeps
 * the pod's value and position) and is invisible to $(VAR) expansion, as an
 * image's env is; extra entries win over everything; a container without
 * workingDir gets the default. */
static void test_defaults(void **state)
{
	const char *dir = *state;
	kft_error err;
	kft_podspec s;
	json_t *js = parse(JOBSET), *objs = parse(OBJECTS);
	char *base[] = {"PATH=/usr/bin", "EPOCHS=99", "FROM_BASE=$(EPOCHS)", NULL};
	char *extra[] = {"KFTRAINER_STATUS_FILE=/x/status.json", "LATER=extra", NULL};
	kft_podspec_defaults d = {.base_env = base, .extra_env = extra, .workdir = "/home/me"};
	assert_int_equal(kft_podspec_build_with(js, objs, "init", 0, 0, "i", dir, &d, &s, &err), 0);
	assert_string_equal(s.workdir, "/home/me"); /* "i" has no workingDir */
	assert_string_equal(env_of(&s, "PATH"), "/usr/bin");
	assert_string_equal(env_of(&s, "KFTRAINER_STATUS_FILE"), "/x/status.json");
	kft_podspec_free(&s);
	assert_int_equal(kft_podspec_build_with(js, objs, "node", 1, 3, "node", dir, &d, &s, &err),
	                 0);
	assert_string_equal(env_of(&s, "EPOCHS"), "3"); /* the pod's value wins */
	assert_string_equal(env_of(&s, "FROM_BASE"), "$(EPOCHS)");
	assert_string_equal(env_of(&s, "LATER"), "extra");
	/* expansion sees the pod's env only, never the extra entries */
	assert_string_equal(env_of(&s, "CMD"), "3x$(EPOCHS)$(LATER)");
	assert_true(env_pos(&s, "PATH") < env_pos(&s, "EPOCHS"));
	int epochs = 0;
	for (size_t i = 0; s.envp[i]; i++)
		epochs += strncmp(s.envp[i], "EPOCHS=", 7) == 0;
	assert_int_equal(epochs, 1); /* the base's EPOCHS is dropped, not duplicated */
	char ws[256];
	snprintf(ws, sizeof(ws), "%s/volumes/ws", dir);
	assert_string_equal(s.workdir, ws); /* workingDir given: kept */
	kft_podspec_free(&s);
	char *bad[] = {"NOEQUALS", NULL};
	kft_podspec_defaults dbad = {.base_env = bad};
	assert_int_equal(kft_podspec_build_with(js, objs, "init", 0, 0, "i", dir, &dbad, &s, &err),
	                 KFT_EINVAL);
	kft_podspec_free(&s);
	json_decref(js);
	json_decref(objs);
}

/* A mount naming a JobSet volumeClaimPolicies template (jobset v0.12 adds
 * that claim's volume to the pod) resolves to the template's directory; a
 * container with no command is accepted only when the caller runs it
 * natively; the restart-attempt label counts the JobSet's restarts. */
static void test_claim_template_and_native(void **state)
{
	const char *dir = *state;
	kft_error err;
	kft_podspec s;
	json_t *js = parse(
	        "{\"kind\":\"JobSet\",\"metadata\":{\"name\":\"j\"},\"spec\":{"
	        "\"volumeClaimPolicies\":[{\"templates\":[{\"metadata\":{\"name\":\"initializer\"}}"
	        "]}],"
	        "\"replicatedJobs\":[{\"name\":\"dataset-initializer\",\"template\":{\"spec\":{"
	        "\"template\":{\"spec\":{\"containers\":[{\"name\":\"dataset-initializer\","
	        "\"image\":\"x\",\"env\":[{\"name\":\"RA\",\"valueFrom\":{\"fieldRef\":"
	        "{\"fieldPath\":\"metadata.labels['jobset.sigs.k8s.io/restart-attempt']\"}}}],"
	        "\"volumeMounts\":[{\"name\":\"initializer\","
	        "\"mountPath\":\"/workspace\"}]}]}}}}}]}}");
	kft_podspec_defaults native = {.native = 1, .restart_attempt = 2};
	assert_int_equal(kft_podspec_build(js, NULL, "dataset-initializer", 0, 0,
	                                   "dataset-initializer", dir, &s, &err),
	                 KFT_EINVAL);
	assert_non_null(strstr(err.message, "has no command"));
	kft_podspec_free(&s);
	assert_int_equal(kft_podspec_build_with(js, NULL, "dataset-initializer", 0, 0,
	                                        "dataset-initializer", dir, &native, &s, &err),
	                 0);
	assert_null(s.argv[0]);
	assert_string_equal(env_of(&s, "RA"), "2"); /* the JobSet's restarts so far */
	char want[256];
	snprintf(want, sizeof(want), "%s/volumes/initializer", dir);
	assert_int_equal(s.n_mounts, 1);
	assert_string_equal(s.mounts[0].host_path, want);
	kft_podspec_free(&s);
	json_decref(js);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_expand_table),
	        cmocka_unit_test_setup_teardown(test_env_forms, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_argv_and_mounts, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_view_keeps_paths, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_volume_files, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_missing_keys, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bad_inputs, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_claim_template_and_native, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
