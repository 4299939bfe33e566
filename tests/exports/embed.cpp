/*
 * embed.cpp - a C++ program embedding libkftrainer through its installed
 * headers alone: every header of include/kftrainer/ is included (the list is
 * generated from the directory, so a new header is covered), compiled as
 * C++11 with -Wall -Wextra -pedantic-errors -Werror, and linked against
 * libkftrainer.so. It then does what an embedding program is for:
 *
 *   decode   a TrainJob (YAML text) and a runtime (a file), and a broken
 *            document, which is refused with the line it breaks at;
 *   validate both with the built-in schema (kft_object_check), then run the
 *            framework's CustomValidation with an out-of-tree plugin written
 *            in C++ (cxx_plugin.cpp), whose field error must come back;
 *   render   the JobSet (kft_framework_build) and print it as YAML.
 *
 *   embed RUNTIME.yaml PLUGIN.so
 */
#include "public_headers.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace
{

int failures = 0;

void check(bool ok, const std::string &what)
{
	std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
	if (!ok)
		failures++;
}

json_t *first_doc(const char *text, const char *source)
{
	kft_doc_list docs = {};
	kft_error err;
	if (kft_decode(text, std::strlen(text), source, &docs, &err) != 0 || docs.count == 0) {
		std::printf("FAIL: %s: %s\n", source, err.message);
		return nullptr;
	}
	json_t *root = json_incref(docs.items[0].root);
	kft_doc_list_free(&docs);
	return root;
}

json_t *runtime_of(const char *path)
{
	kft_doc_list docs = {};
	kft_error err;
	if (kft_decode_file(path, &docs, &err) != 0) {
		std::printf("FAIL: %s\n", err.message);
		return nullptr;
	}
	json_t *found = nullptr;
	for (size_t i = 0; i < docs.count && !found; i++) {
		const char *kind = json_string_value(json_object_get(docs.items[i].root, "kind"));
		if (kind && std::strcmp(kind, "ClusterTrainingRuntime") == 0)
			found = json_incref(docs.items[i].root);
	}
	kft_doc_list_free(&docs);
	return found;
}

/* Checked against the built-in schema: "" when valid, else the first error
 * as kubectl prints it. */
std::string schema_check(json_t *obj)
{
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	kft_object_check(kft_schema_builtin(nullptr), obj, nullptr, &errs, nullptr);
	std::string first;
	if (errs.count) {
		char *line = kft_field_error_format(&errs.items[0]);
		first = line ? line : "?";
		std::free(line);
	}
	kft_field_errors_free(&errs);
	return first;
}

const char job_yaml[] = "apiVersion: trainer.kubeflow.org/v1alpha1\n"
                        "kind: TrainJob\n"
                        "metadata:\n"
                        "  name: embedded\n"
                        "  namespace: default\n"
                        "spec:\n"
                        "  runtimeRef:\n"
                        "    name: torch-distributed\n"
                        "  trainer:\n"
                        "    numNodes: 2\n"
                        "    command: [python, train.py]\n";

void decode_refuses_broken_yaml()
{
	kft_doc_list docs = {};
	kft_error err;
	const char broken[] = "kind: TrainJob\nspec: [1, 2\n";
	int rc = kft_decode(broken, sizeof(broken) - 1, "broken.yaml", &docs, &err);
	check(rc == KFT_EPARSE && std::strstr(err.message, "broken.yaml") != nullptr,
	      std::string("a broken document is refused with its source named: ") + err.message);
	kft_doc_list_free(&docs);
}

void validate_with_cxx_plugin(const json_t *runtime, const json_t *job, const char *plugin)
{
	kft_framework *fw = nullptr;
	kft_error err;
	if (kft_framework_new(0, &fw, &err) != 0 ||
	    kft_framework_load_plugin(fw, plugin, &err) != 0) {
		check(false, std::string("framework with the C++ plugin: ") + err.message);
		kft_framework_free(fw);
		return;
	}
	kft_field_errors errs;
	kft_field_errors_init(&errs);
	int rc = kft_framework_validate(fw, nullptr, runtime, nullptr, job, &errs, &err);
	bool named = false;
	for (size_t i = 0; i < errs.count; i++)
		named = named ||
		        std::strcmp(errs.items[i].field, "metadata.labels[cost-center]") == 0;
	check(rc == 0 && named,
	      "the C++ plugin's CustomValidation names metadata.labels[cost-center]");
	kft_field_errors_free(&errs);

	json_t *objects = nullptr;
	rc = kft_framework_build(fw, nullptr, job, runtime, &objects, &err);
	const json_t *jobset = rc == 0 ? json_array_get(objects, 0) : nullptr;
	const char *kind = json_string_value(json_object_get(jobset, "kind"));
	check(kind && std::strcmp(kind, "JobSet") == 0,
	      std::string("render builds a JobSet: ") +
	              (rc == 0 ? (kind ? kind : "none") : err.message));
	char *yaml = jobset ? kft_yaml_emit(jobset, &err) : nullptr;
	check(yaml && std::strstr(yaml, "name: embedded\n") != nullptr,
	      "the JobSet prints as YAML");
	std::free(yaml);
	json_decref(objects);
	kft_framework_free(fw);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: embed RUNTIME.yaml PLUGIN.so\n");
		return 2;
	}
	json_t *runtime = runtime_of(argv[1]);
	json_t *job = first_doc(job_yaml, "job.yaml");
	check(runtime && job, "decode a TrainJob and a ClusterTrainingRuntime");
	if (!runtime || !job)
		return 1;
	std::string problem = schema_check(runtime);
	check(problem.empty(), "the runtime is valid " + problem);
	problem = schema_check(job);
	check(problem.empty(), "the TrainJob is valid " + problem);
	decode_refuses_broken_yaml();

	kft_quantity q;
	kft_error err;
	check(kft_quantity_parse("1500m", &q, &err) == 0 && kft_quantity_milli_value(&q) == 1500,
	      "1500m is 1500 milli");

	validate_with_cxx_plugin(runtime, job, argv[2]);
	json_decref(job);
	json_decref(runtime);
	return failures ? 1 : 0;
}
