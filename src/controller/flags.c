/*
 * flags.c - the controller manager's command line, parsed with Go's `flag`
 * rules because that is what upstream's binary (and every Deployment
 * written for it) uses: one or two leading dashes, "-name=value" or
 * "-name value" for values, booleans only as "-name" or "-name=bool",
 * parsing stops at "--" or the first non-flag argument.
 *
 * Upstream registers --config, --feature-gates, controller-runtime's
 * --kubeconfig and the zap flags; --metrics-bind-address,
 * --health-probe-bind-address and --leader-elect are conveniences of ours
 * (kubebuilder's usual names) that override the file.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controller/controller.h"

enum flag_kind { F_STRING, F_BOOL };

enum flag_id {
	FL_CONFIG,
	FL_FEATURES,
	FL_KUBECONFIG,
	FL_METRICS,
	FL_HEALTH,
	FL_LEADER,
	FL_DEVEL,
	FL_ENCODER,
	FL_LEVEL,
	FL_STACK,
	FL_TIME,
	FL_HELP,
	FL_VERSION,
	FL_PLUGIN,
};

static const struct {
	const char *name;
	enum flag_kind kind;
	enum flag_id id;
} flag_table[] = {
        {"config", F_STRING, FL_CONFIG},
        {"feature-gates", F_STRING, FL_FEATURES},
        {"kubeconfig", F_STRING, FL_KUBECONFIG},
        {"metrics-bind-address", F_STRING, FL_METRICS},
        {"health-probe-bind-address", F_STRING, FL_HEALTH},
        {"leader-elect", F_BOOL, FL_LEADER},
        {"zap-devel", F_BOOL, FL_DEVEL},
        {"zap-encoder", F_STRING, FL_ENCODER},
        {"zap-log-level", F_STRING, FL_LEVEL},
        {"zap-stacktrace-level", F_STRING, FL_STACK},
        {"zap-time-encoding", F_STRING, FL_TIME},
        {"help", F_BOOL, FL_HELP},
        {"h", F_BOOL, FL_HELP},
        {"version", F_BOOL, FL_VERSION},
        {"plugin", F_STRING, FL_PLUGIN},
};

static const char usage_text[] =
        "Usage: kftrainer-controller-manager [flags]\n"
        "\n"
        "Reconciles Kubeflow Trainer TrainJobs (trainer.kubeflow.org/v1alpha1) into JobSets.\n"
        "\n"
        "  --config FILE                    a Configuration "
        "(config.trainer.kubeflow.org/v1alpha1);\n"
        "                                   flags below override it\n"
        "  --feature-gates LIST             Name=true|false,... (the gates are listed below)\n"
        "  --kubeconfig FILE                kubeconfig; default $KUBECONFIG, in-cluster,\n"
        "                                   then ~/.kube/config\n"
        "  --metrics-bind-address ADDR      serve /metrics here (\"0\" disables)\n"
        "  --health-probe-bind-address ADDR serve /healthz and /readyz here (\"0\" disables)\n"
        "  --leader-elect[=BOOL]            run reconcilers only while holding the Lease\n"
        "  --plugin PATH                    load an out-of-tree plugin (repeatable; replaces\n"
        "                                   the Configuration's plugins list)\n"
        "  --zap-devel                      console encoder, debug level, stacktraces from "
        "warn\n"
        "  --zap-encoder json|console\n"
        "  --zap-log-level debug|info|error|panic|N (N > 0: verbosity V(N))\n"
        "  --zap-stacktrace-level info|error|panic\n"
        "  --zap-time-encoding epoch|millis|nanos|iso8601|rfc3339|rfc3339nano\n"
        "  --version                        print the version and exit\n"
        "  --help                           print this text and exit\n"
        "\n"
        "Feature gates (--feature-gates, or the Configuration's featureGates):\n"
#define GATE_HELP(name, bit, stage, def, what)                                                     \
	"  " name "=true|false (" stage " - default=" def ")\n      " what "\n"
        KFT_CM_FEATURE_GATES(GATE_HELP)
#undef GATE_HELP
                "  AllAlpha=true|false (ALPHA - default=false)\n      every ALPHA gate above\n"
                "  AllBeta=true|false (BETA - default=false)\n      every BETA gate above (none)\n";

const char *kft_cm_usage(void)
{
	return usage_text;
}

static int parse_bool(const char *v, int *out)
{
	static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
	static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};
	for (size_t i = 0; i < 6; i++) {
		if (strcmp(v, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcmp(v, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

static int bad_value(kft_error *err, const char *value, const char *name, const char *why)
{
	return kft_error_set(err, KFT_EINVAL, "invalid value \"%s\" for flag -%s: %s", value, name,
	                     why);
}

static int set_level(kft_log_options *lo, const char *v, kft_error *err)
{
	static const struct {
		const char *name;
		int level;
	} names[] = {{"debug", KFT_LOG_DEBUG},
	             {"info", KFT_LOG_INFO},
	             {"error", KFT_LOG_ERROR},
	             {"panic", KFT_LOG_PANIC}};
	for (size_t i = 0; i < 4; i++)
		if (strcasecmp(v, names[i].name) == 0) {
			lo->level_set = 1;
			lo->level = names[i].level;
			return 0;
		}
	char *end;
	long n = strtol(v, &end, 10);
	if (*v && !*end && n > 0 && n <= 127) {
		lo->level_set = 1;
		lo->level = (int)-n;
		return 0;
	}
	char why[128];
	snprintf(why, sizeof(why), "invalid log level \"%s\"", v);
	return bad_value(err, v, "zap-log-level", why);
}

static int set_stack(kft_log_options *lo, const char *v, kft_error *err)
{
	static const struct {
		const char *name;
		int level;
	} names[] = {{"info", KFT_LOG_INFO}, {"error", KFT_LOG_ERROR}, {"panic", KFT_LOG_PANIC}};
	for (size_t i = 0; i < 3; i++)
		if (strcasecmp(v, names[i].name) == 0) {
			lo->stack_set = 1;
			lo->stack_level = names[i].level;
			return 0;
		}
	char why[128];
	snprintf(why, sizeof(why), "invalid stacktrace level \"%s\"", v);
	return bad_value(err, v, "zap-stacktrace-level", why);
}

static int set_time(kft_log_options *lo, const char *v, kft_error *err)
{
	static const char *const names[] = {"epoch",   "millis",  "nanos",
	                                    "iso8601", "rfc3339", "rfc3339nano"};
	for (int i = 0; i < 6; i++)
		if (strcasecmp(v, names[i]) == 0) {
			lo->time_encoding = i;
			return 0;
		}
	char why[128];
	snprintf(why, sizeof(why), "invalid time-encoding value \"%s\"", v);
	return bad_value(err, v, "zap-time-encoding", why);
}

static int set_flag(kft_cm_flags *f, enum flag_id id, const char *name, const char *v, int bv,
                    kft_error *err)
{
	switch (id) {
	case FL_CONFIG: f->config_file = v; return 0;
	case FL_FEATURES: f->feature_gates = v; return 0;
	case FL_KUBECONFIG: f->kubeconfig = v; return 0;
	case FL_METRICS: f->metrics_addr = v; return 0;
	case FL_HEALTH: f->health_addr = v; return 0;
	case FL_LEADER: f->leader_elect = bv; return 0;
	case FL_DEVEL: f->log.devel = bv; return 0;
	case FL_HELP: f->help = bv; return 0;
	case FL_VERSION: f->version = bv; return 0;
	case FL_PLUGIN:
		if (f->nplugins == KFT_CM_MAX_PLUGINS)
			return bad_value(err, v, name, "too many plugins");
		f->plugins[f->nplugins++] = v;
		return 0;
	case FL_ENCODER:
		if (strcasecmp(v, "json") != 0 && strcasecmp(v, "console") != 0)
			return bad_value(err, v, name, "invalid encoder value");
		f->log.console_set = 1;
		f->log.console = strcasecmp(v, "console") == 0;
		return 0;
	case FL_LEVEL: return set_level(&f->log, v, err);
	case FL_STACK: return set_stack(&f->log, v, err);
	case FL_TIME: return set_time(&f->log, v, err);
	}
	return 0;
}

/* One argument starting with '-': finds the flag, takes its value (from
 * "=v" or the next argument) and sets it. *i moves past what was used. */
static int one_flag(int argc, char **argv, int *i, kft_cm_flags *f, kft_error *err)
{
	const char *arg = argv[*i] + 1;
	if (*arg == '-')
		arg++;
	char name[64];
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
	if (n == 0 || *arg == '-' || *arg == '=' || n >= sizeof(name))
		return kft_error_set(err, KFT_EINVAL, "bad flag syntax: %s", argv[*i]);
	memcpy(name, arg, n);
	name[n] = '\0';
	size_t k = 0;
	while (k < sizeof(flag_table) / sizeof(flag_table[0]) && strcmp(flag_table[k].name, name))
		k++;
	if (k == sizeof(flag_table) / sizeof(flag_table[0]))
		return kft_error_set(err, KFT_EINVAL, "flag provided but not defined: -%s", name);
	if (flag_table[k].kind == F_BOOL) {
		int bv = 1;
		if (eq && parse_bool(eq + 1, &bv) != 0)
			return bad_value(err, eq + 1, name, "parse error");
		return set_flag(f, flag_table[k].id, name, NULL, bv, err);
	}
	const char *v = eq ? eq + 1 : NULL;
	if (!v) {
		if (*i + 1 >= argc)
			return kft_error_set(err, KFT_EINVAL, "flag needs an argument: -%s", name);
		v = argv[++*i];
	}
	return set_flag(f, flag_table[k].id, name, v, 0, err);
}

int kft_cm_flags_parse(int argc, char **argv, kft_cm_flags *out, kft_error *err)
{
	memset(out, 0, sizeof(*out));
	out->leader_elect = -1;
	out->log.time_encoding = KFT_LOG_TIME_RFC3339NANO;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || a[1] == '\0')
			break;
		if (strcmp(a, "--") == 0)
			break;
		int rc = one_flag(argc, argv, &i, out, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int dup_into(char **dst, const char *v, kft_error *err)
{
	char *c = strdup(v);
	if (!c)
		return kft_error_set(err, KFT_ENOMEM, "out of memory");
	free(*dst);
	*dst = c;
	return 0;
}

int kft_cm_flags_apply(const kft_cm_flags *flags, kft_cm_config *cfg, kft_error *err)
{
	int rc = 0;
	if (flags->metrics_addr &&
	    (rc = dup_into(&cfg->metrics_bind_address, flags->metrics_addr, err)))
		return rc;
	if (flags->health_addr &&
	    (rc = dup_into(&cfg->health_bind_address, flags->health_addr, err)))
		return rc;
	if (flags->leader_elect >= 0)
		cfg->leader_elect = flags->leader_elect;
	if (flags->nplugins) {
		json_t *list = json_array();
		for (int i = 0; list && i < flags->nplugins; i++)
			if (json_array_append_new(list, json_string(flags->plugins[i])) != 0) {
				json_decref(list);
				list = NULL;
			}
		if (!list)
			return kft_error_set(err, KFT_ENOMEM, "out of memory");
		json_decref(cfg->plugins);
		cfg->plugins = list;
	}
	if (flags->feature_gates && *flags->feature_gates)
		rc = kft_cm_feature_gates_set(&cfg->features, flags->feature_gates, err);
	return rc;
}
