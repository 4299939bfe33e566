/*
 * cel_rules.c - the CEL rules of our CRDs, decided in C. See cel_rules.h.
 *
 * Each function answers what the API server's CEL evaluation answers for the
 * same self/oldSelf. Where CEL would raise a runtime error (a missing field,
 * a wrong type), the API server reports the rule as failed, except inside
 * `||`, where CEL's error-absorbing logic lets the other side decide; the
 * comments on the individual rules say where that matters.
 */
#include "api/cel_rules.h"

#include "kftrainer/validation.h"
#include "util/utf8.h"

#include <stdlib.h>
#include <string.h>

static int rule_immutable(const json_t *self, const json_t *old)
{
	return old == NULL || json_equal((json_t *)self, (json_t *)old);
}

/* ^[a-z]([-a-z0-9]*[a-z0-9])?$ */
static int is_rfc1035_label(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || !(s[0] >= 'a' && s[0] <= 'z'))
		return 0;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
		if (!ok || (i == n - 1 && c == '-'))
			return 0;
	}
	return 1;
}

static const char *metadata_name(const json_t *self)
{
	return json_string_value(json_object_get(json_object_get(self, "metadata"), "name"));
}

/* A missing name is reported by metadata validation ("name or generateName
 * is required"); the API server generates one before these rules run. */
static int rule_name_rfc1035(const json_t *self, const json_t *old)
{
	const char *name = metadata_name(self);
	return !name || is_rfc1035_label(name);
}

static int rule_name_max63(const json_t *self, const json_t *old)
{
	const char *name = metadata_name(self);
	return !name || kft_utf8_length(name) <= 63;
}

static int rule_managed_by(const json_t *self, const json_t *old)
{
	const char *v = json_string_value(self);
	return v && (strcmp(v, "trainer.kubeflow.org/trainjob-controller") == 0 ||
	             strcmp(v, "kueue.x-k8s.io/multikueue") == 0);
}

/* self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$'): RE2's `.`
 * does not match a newline and `$` is the end of the text. */
static int rule_storage_uri(const json_t *self, const json_t *old)
{
	const char *s = json_string_value(self);
	if (!s)
		return 0;
	if (*s == '\0')
		return 1;
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
		return 0;
	const char *p = s + 1;
	while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
	       *p == '+' || *p == '.' || *p == '-')
		p++;
	if (strncmp(p, "://", 3) != 0)
		return 0;
	p += 3;
	return *p != '\0' && strchr(p, '\n') == NULL;
}

static int rule_has_last_updated(const json_t *self, const json_t *old)
{
	return json_object_get(self, "lastUpdatedTime") != NULL;
}

static int rule_one_policy(const json_t *self, const json_t *old)
{
	static const char *const sources[] = {"torch", "mpi", "jax", "xgboost", "flux"};
	int n = 0;
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		n += json_object_get(self, sources[i]) != NULL;
	return n <= 1;
}

static int rule_no_node_container(const json_t *self, const json_t *old)
{
	size_t i;
	const json_t *c;
	json_array_foreach(self, i, c)
	{
		const char *name = json_string_value(c);
		if (name && strcmp(name, "node") == 0)
			return 0;
	}
	return 1;
}

static int rule_at_least_one(const json_t *self, const json_t *old)
{
	return json_is_number(self) && json_number_value(self) >= 1;
}

/* v2.0-era torch numProcPerNode: `self > 0` errors for a string, and CEL's
 * `||` then lets the membership test decide; for an int the membership
 * test errors and `self > 0` decides. */
static int rule_num_proc_per_node(const json_t *self, const json_t *old)
{
	if (json_is_integer(self))
		return json_integer_value(self) > 0;
	const char *s = json_string_value(self);
	if (s && (strcmp(s, "auto") == 0 || strcmp(s, "cpu") == 0 || strcmp(s, "gpu") == 0))
		return 1;
	return KFT_CEL_NO_OVERLOAD; /* the error from `self > 0` survives a false `in` */
}

/* v2.0-era: the node count comes from elasticPolicy when it is set. */
static int rule_elastic_excludes_num_nodes(const json_t *self, const json_t *old)
{
	const json_t *torch = json_object_get(self, "torch");
	return !(json_object_get(self, "numNodes") && torch &&
	         json_object_get(torch, "elasticPolicy"));
}

static int rule_startup_vs_depends_on(const json_t *self, const json_t *old)
{
	const json_t *sp = json_object_get(self, "startupPolicy");
	const char *order = json_string_value(json_object_get(sp, "startupPolicyOrder"));
	if (!sp || !order || strcmp(order, "InOrder") != 0)
		return 1;
	size_t i;
	const json_t *rj;
	json_array_foreach(json_object_get(self, "replicatedJobs"), i, rj)
	{
		if (json_object_get(rj, "dependsOn"))
			return 0;
	}
	return 1;
}

static int rule_claim_templates_no_namespace(const json_t *self, const json_t *old)
{
	size_t i;
	const json_t *t;
	json_array_foreach(json_object_get(self, "templates"), i, t)
	{
		const json_t *ns = json_object_get(json_object_get(t, "metadata"), "namespace");
		if (ns && !(json_is_string(ns) && json_string_length(ns) == 0))
			return 0;
	}
	return 1;
}

/* ---- OptimizationJob (upstream master) ----------------------------------------- */

/* self.parallelTrials <= self.numTrials: both are defaulted to 1, so only
 * an object that skipped defaulting misses one (CEL's "no such key"). */
static int rule_parallel_within_num(const json_t *self, const json_t *old)
{
	const json_t *p = json_object_get(self, "parallelTrials");
	const json_t *n = json_object_get(self, "numTrials");
	return json_is_integer(p) && json_is_integer(n) &&
	       json_integer_value(p) <= json_integer_value(n);
}

/* !has(self.searchAlgorithm.grid) || self.parameters.all(p,
 * has(p.searchSpace.categorical)): searchAlgorithm is defaulted; a
 * parameter without searchSpace is refused by `required` already. */
static int rule_grid_categorical(const json_t *self, const json_t *old)
{
	if (!json_object_get(json_object_get(self, "searchAlgorithm"), "grid"))
		return 1;
	size_t i;
	const json_t *p;
	json_array_foreach(json_object_get(self, "parameters"), i, p)
	{
		if (!json_object_get(json_object_get(p, "searchSpace"), "categorical"))
			return 0;
	}
	return 1;
}

static int exactly_one(const json_t *self, const char *const *names, size_t n)
{
	size_t set = 0;
	for (size_t i = 0; i < n; i++)
		set += json_object_get(self, names[i]) != NULL;
	return set == 1;
}

static int rule_one_algorithm(const json_t *self, const json_t *old)
{
	static const char *const names[] = {"random", "grid"};
	return exactly_one(self, names, 2);
}

static int rule_one_space(const json_t *self, const json_t *old)
{
	static const char *const names[] = {"uniform", "logUniform", "categorical"};
	return exactly_one(self, names, 3);
}

/* CEL's double(string): the whole text a number (the Double pattern has
 * already checked its shape). -1 when it is not. */
static int cel_double(const json_t *self, const char *key, double *out)
{
	const char *s = json_string_value(json_object_get(self, key));
	char *end;
	if (!s || !*s)
		return -1;
	*out = strtod(s, &end);
	return *end ? -1 : 0;
}

static int rule_min_positive(const json_t *self, const json_t *old)
{
	double min;
	return cel_double(self, "min", &min) == 0 && min > 0.0;
}

static int rule_min_below_max(const json_t *self, const json_t *old)
{
	double min, max;
	return cel_double(self, "min", &min) == 0 && cel_double(self, "max", &max) == 0 &&
	       min < max;
}

static int rule_template_unnamed(const json_t *self, const json_t *old)
{
	return !json_object_get(self, "name") && !json_object_get(self, "namespace");
}

static const kft_cel_rule rules[] = {
        {"self == oldSelf", rule_immutable, 1},
        {"self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')", rule_name_rfc1035, 0},
        {"size(self.metadata.name) <= 63", rule_name_max63, 0},
        {"self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']",
         rule_managed_by, 0},
        {"self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')", rule_storage_uri, 0},
        {"has(self.lastUpdatedTime)", rule_has_last_updated, 0},
        {"[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)]"
         ".filter(x, x).size() <= 1",
         rule_one_policy, 0},
        {"!self.exists(c, c == 'node')", rule_no_node_container, 0},
        {"self >= 1", rule_at_least_one, 0},
        {"self > 0 || self in ['auto', 'cpu', 'gpu']", rule_num_proc_per_node, 0},
        {"!(has(self.numNodes) && (has(self.torch) && has(self.torch.elasticPolicy)))",
         rule_elastic_excludes_num_nodes, 0},
        {"!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
         "self.replicatedJobs.exists(x, has(x.dependsOn)))",
         rule_startup_vs_depends_on, 0},
        {"self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0)",
         rule_claim_templates_no_namespace, 0},
        {"self.parallelTrials <= self.numTrials", rule_parallel_within_num, 0},
        {"!has(self.searchAlgorithm.grid) || self.parameters.all(p, "
         "has(p.searchSpace.categorical))",
         rule_grid_categorical, 0},
        {"[has(self.random),has(self.grid)].filter(x,x==true).size() == 1", rule_one_algorithm, 0},
        {"[has(self.uniform),has(self.logUniform),has(self.categorical)].filter(x,x==true).size() "
         "== 1",
         rule_one_space, 0},
        {"double(self.min) > 0.0", rule_min_positive, 0},
        {"double(self.min) < double(self.max)", rule_min_below_max, 0},
        {"!has(self.name) && !has(self.namespace)", rule_template_unnamed, 0},
};

const kft_cel_rule *kft_cel_rule_find(const char *rule)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (strcmp(rules[i].rule, rule) == 0)
			return &rules[i];
	return NULL;
}
