/*
 * test_runtime_patches.c - spec.runtimePatches merged into a runtime's
 * JobSet template (src/framework/runtime_patches.c).
 *
 * Cases named "trainingruntime_test.go: ..." port the runtime-patch cases
 * of upstream v2.3.0's pkg/runtime/core/trainingruntime_test.go
 * (TestTrainingRuntimeNewObjects): the same runtime template and patches,
 * and the merged template upstream's JobSet shows. Upstream compares env,
 * volumes, mounts and tolerations as sorted sets; these tests pin the order
 * too, the one apimachinery's strategic merge patch (v0.36.2) produces.
 * Cases named "runtime-patches.md: ..." are the examples of upstream's
 * docs/operator-guides/runtime-patches.md. Cases marked "ours" pin
 * strategic-merge and typed-decoding behaviour upstream has but does not
 * test; their expected results were checked against apimachinery's
 * strategicpatch itself.
 *
 * Inputs are YAML in flow style, decoded with kft_decode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "framework/runtime_patches.h"
#include "kftrainer/decode.h"

/* ---- helpers -------------------------------------------------------------------- */

/* Flow-style YAML; the document marker keeps kft_decode from taking a
 * leading '{' for JSON. */
static json_t *yaml(const char *text)
{
	kft_doc_list docs;
	kft_error err = {0};
	size_t n = strlen(text) + 5;
	char *doc = malloc(n);
	assert_non_null(doc);
	snprintf(doc, n, "--- %s", text);
	int rc = kft_decode(doc, strlen(doc), "test", &docs, &err);
	free(doc);
	if (rc != 0)
		fail_msg("bad test YAML: %s", err.message);
	json_t *v = json_incref(docs.items[0].root);
	kft_doc_list_free(&docs);
	return v;
}

static void assert_json_equal(const json_t *got, const json_t *want)
{
	if (!json_equal((json_t *)got, (json_t *)want)) {
		char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
		char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
		fprintf(stderr, " got: %s\nwant: %s\n", g ? g : "(null)", w ? w : "(null)");
		free(g);
		free(w);
		fail();
	}
}

/* Merges `patches` into `tmpl` and expects `want` (all YAML). */
static void check_merge(const char *tmpl, const char *patches, const char *want)
{
	json_t *t = yaml(tmpl), *p = patches ? yaml(patches) : NULL, *w = yaml(want);
	kft_error err = {0};
	if (kft_runtime_patches_merge(t, p, &err) != 0)
		fail_msg("merge failed: %s", err.message);
	assert_json_equal(t, w);
	json_decref(t);
	json_decref(p);
	json_decref(w);
}

/* Expects the merge to fail with `code` and a message containing `needle`. */
static void check_error(const char *tmpl, const char *patches, int code, const char *needle)
{
	json_t *t = yaml(tmpl), *p = yaml(patches);
	kft_error err = {0};
	assert_int_equal(kft_runtime_patches_merge(t, p, &err), code);
	assert_int_equal(err.code, code);
	if (!strstr(err.message, needle))
		fail_msg("message %s lacks %s", err.message, needle);
	json_decref(t);
	json_decref(p);
}

/* A patch of one replicated job's pod template: "{metadata: ..., spec: ...}". */
#define POD_PATCH(manager, rjob, pod)                                                              \
	"{manager: " manager ", trainingRuntimeSpec: {template: {spec: {replicatedJobs: "          \
	"[{name: " rjob ", template: {spec: {template: " pod "}}}]}}}}"

/* ---- upstream's runtime-patch cases ---------------------------------------------- */

/* The runtime of upstream's patch cases: initializers and a trainer node
 * with an extra container, an init container on two jobs. */
#define RUNTIME_TEMPLATE                                                                           \
	"{spec: {replicatedJobs: ["                                                                \
	"{name: dataset-initializer, template: {metadata: {labels: "                               \
	"{trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}, spec: {template: "   \
	"{spec: {initContainers: [{name: override-init-container, image: 'test:runtime', env: "    \
	"[{name: INIT_ENV, value: original_init}, {name: DATASET_PATH, value: runtime}]}], "       \
	"containers: [{name: dataset-initializer, volumeMounts: [{name: initializer, mountPath: "  \
	"/workspace/dataset}]}], volumes: [{name: initializer, persistentVolumeClaim: "            \
	"{claimName: initializer}}]}}}}},"                                                         \
	"{name: model-initializer, template: {spec: {template: {spec: {containers: [{name: "       \
	"model-initializer}]}}}}},"                                                                \
	"{name: node, template: {metadata: {labels: "                                              \
	"{trainer.kubeflow.org/trainjob-ancestor-step: "                                           \
	"trainer}}, spec: {template: {spec: {initContainers: [{name: override-init-container, "    \
	"image: 'test:runtime', env: [{name: INIT_ENV, value: original_init}]}], containers: ["    \
	"{name: node, image: 'test:runtime', env: [{name: TRAIN_JOB, value: original}]}, "         \
	"{name: override-container, image: 'test:runtime', env: [{name: CONTAINER_ENV, value: "    \
	"original_container}]}]}}}}}]}}"

#define ZONE_AFFINITY                                                                              \
	"{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "     \
	"[{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: "           \
	"[antarctica-east1, antarctica-west1]}]}]}}}"

#define GPU_TOLERATION "{key: example.com/gpu, operator: Exists, effect: NoSchedule}"

/* trainingruntime_test.go: "succeeded to build JobSet with TrainJob's
 * RuntimePatches." */
static void test_runtime_patches_both_managers(void **state)
{
	check_merge(
	        RUNTIME_TEMPLATE,
	        "[" POD_PATCH(
	                "manager-1", "dataset-initializer",
	                "{spec: {initContainers: [{name: override-init-container, env: "
	                "[{name: INIT_ENV, value: override_init}, {name: NEW_VALUE, value: "
	                "from_overrides}]}], containers: [{name: dataset-initializer, "
	                "volumeMounts: [{name: initializer_secret, mountPath: "
	                "initializer_secret_mount_path}, {name: initializer_claim, mountPath: "
	                "initializer_claim_mount_path}]}], affinity: " ZONE_AFFINITY
	                ", nodeSelector: {node.kubernetes.io/instance-type: p5.48xlarge}, "
	                "schedulingGates: [{name: kueue.x-k8s.io/admission}], tolerations: "
	                "[" GPU_TOLERATION "], volumes: [{name: initializer_secret, secret: "
	                "{secretName: initializer_secret_name}}, {name: initializer_claim, "
	                "persistentVolumeClaim: {claimName: initializer_claim_name}}]}}") "," POD_PATCH("manager-2",
	                                                                                                "node",
	                                                                                                "{spec: {serviceAccountName: override-sa, initContainers: [{name: "
	                                                                                                "override-init-container, env: [{name: INIT_ENV, value: override_init}]}], "
	                                                                                                "containers: [{name: node, volumeMounts: [{name: node_secret, mountPath: "
	                                                                                                "node_secret_mount_path}, {name: node_claim, mountPath: "
	                                                                                                "node_claim_mount_path}]}, {name: override-container, env: [{name: "
	                                                                                                "CONTAINER_ENV, value: override_container}]}], affinity: " ZONE_AFFINITY
	                                                                                                ", imagePullSecrets: [{name: registry-credential}], nodeSelector: "
	                                                                                                "{node.kubernetes.io/instance-type: p5.48xlarge}, schedulingGates: [{name: "
	                                                                                                "kueue.x-k8s.io/admission}], tolerations: [" GPU_TOLERATION
	                                                                                                "], "
	                                                                                                "terminationGracePeriodSeconds: 300, volumes: [{name: node_secret, secret: "
	                                                                                                "{secretName: node_secret_name}}, {name: node_claim, persistentVolumeClaim: "
	                                                                                                "{claimName: node_claim_name}}]}}") "]",
	        /* New list items come first when no original item precedes them. */
	        "{spec: {replicatedJobs: ["
	        "{name: dataset-initializer, template: {metadata: {labels: "
	        "{trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}, spec: "
	        "{template: "
	        "{spec: {initContainers: [{name: override-init-container, image: 'test:runtime', "
	        "env: "
	        "[{name: INIT_ENV, value: override_init}, {name: NEW_VALUE, value: "
	        "from_overrides}, "
	        "{name: DATASET_PATH, value: runtime}]}], containers: [{name: dataset-initializer, "
	        "volumeMounts: [{name: initializer_secret, mountPath: "
	        "initializer_secret_mount_path}, "
	        "{name: initializer_claim, mountPath: initializer_claim_mount_path}, {name: "
	        "initializer, mountPath: /workspace/dataset}]}], volumes: [{name: "
	        "initializer_secret, "
	        "secret: {secretName: initializer_secret_name}}, {name: initializer_claim, "
	        "persistentVolumeClaim: {claimName: initializer_claim_name}}, {name: initializer, "
	        "persistentVolumeClaim: {claimName: initializer}}], affinity: " ZONE_AFFINITY
	        ", nodeSelector: {node.kubernetes.io/instance-type: p5.48xlarge}, schedulingGates: "
	        "[{name: kueue.x-k8s.io/admission}], tolerations: [" GPU_TOLERATION "]}}}}},"
	        "{name: model-initializer, template: {spec: {template: {spec: {containers: [{name: "
	        "model-initializer}]}}}}},"
	        "{name: node, template: {metadata: {labels: "
	        "{trainer.kubeflow.org/trainjob-ancestor-step: "
	        "trainer}}, spec: {template: {spec: {initContainers: [{name: "
	        "override-init-container, "
	        "image: 'test:runtime', env: [{name: INIT_ENV, value: override_init}]}], "
	        "containers: ["
	        "{name: node, image: 'test:runtime', env: [{name: TRAIN_JOB, value: original}], "
	        "volumeMounts: [{name: node_secret, mountPath: node_secret_mount_path}, {name: "
	        "node_claim, mountPath: node_claim_mount_path}]}, {name: override-container, "
	        "image: "
	        "'test:runtime', env: [{name: CONTAINER_ENV, value: override_container}]}], "
	        "serviceAccountName: override-sa, affinity: " ZONE_AFFINITY ", imagePullSecrets: "
	        "[{name: registry-credential}], nodeSelector: {node.kubernetes.io/instance-type: "
	        "p5.48xlarge}, schedulingGates: [{name: kueue.x-k8s.io/admission}], tolerations: "
	        "[" GPU_TOLERATION "], terminationGracePeriodSeconds: 300, volumes: [{name: "
	        "node_secret, secret: {secretName: node_secret_name}}, {name: node_claim, "
	        "persistentVolumeClaim: {claimName: node_claim_name}}]}}}}}]}}");
}

/* trainingruntime_test.go: "succeeded to build JobSet with nil affinity
 * overrides from the TrainJob's RuntimePatches." */
static void test_nil_affinity(void **state)
{
	check_merge(RUNTIME_TEMPLATE,
	            "[" POD_PATCH("manager-1", "node", "{spec: {affinity: null}}") "]",
	            RUNTIME_TEMPLATE);
}

/* trainingruntime_test.go: "succeeded to build JobSet with securityContext
 * overrides from the TrainJob's RuntimePatches." */
static void test_security_context(void **state)
{
	check_merge(
	        "{spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: "
	        "{containers: [{name: node}, {name: sidecar}]}}}}}]}}",
	        "[" POD_PATCH("security-manager", "node",
	                      "{spec: {securityContext: {fsGroup: 2000, runAsUser: 1000, "
	                      "runAsGroup: 3000, runAsNonRoot: true}, containers: [{name: sidecar, "
	                      "securityContext: {allowPrivilegeEscalation: false, "
	                      "readOnlyRootFilesystem: true}}]}}") "]",
	        "{spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: "
	        "{containers: [{name: node}, {name: sidecar, securityContext: "
	        "{allowPrivilegeEscalation: false, readOnlyRootFilesystem: true}}], "
	        "securityContext: {fsGroup: 2000, runAsUser: 1000, runAsGroup: 3000, "
	        "runAsNonRoot: true}}}}}}]}}");
}

/* trainingruntime_test.go: "succeeded to build JobSet with labels and
 * annotations overrides from the TrainJob's RuntimePatches." */
static void test_job_and_pod_metadata(void **state)
{
	check_merge(
	        "{spec: {replicatedJobs: [{name: dataset-initializer, template: {metadata: "
	        "{labels: "
	        "{trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}}}, {name: "
	        "node}]}}",
	        "[{manager: manager-1, trainingRuntimeSpec: {template: {spec: {replicatedJobs: "
	        "[{name: "
	        "dataset-initializer, template: {metadata: {labels: {job-k1: job-v1}}, spec: "
	        "{template: {metadata: {labels: {k1: v1}, annotations: {a1: v1}}}}}}]}}}},"
	        "{manager: manager-2, trainingRuntimeSpec: {template: {spec: {replicatedJobs: "
	        "[{name: "
	        "node, template: {metadata: {labels: {job-k2: job-v2}}, spec: {template: "
	        "{metadata: "
	        "{labels: {k2: v2}, annotations: {a2: v2}}}}}}]}}}}]",
	        "{spec: {replicatedJobs: [{name: dataset-initializer, template: {metadata: "
	        "{labels: "
	        "{trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer, job-k1: "
	        "job-v1}}, "
	        "spec: {template: {metadata: {labels: {k1: v1}, annotations: {a1: v1}}}}}}, {name: "
	        "node, template: {metadata: {labels: {job-k2: job-v2}}, spec: {template: "
	        "{metadata: "
	        "{labels: {k2: v2}, annotations: {a2: v2}}}}}}]}}");
}

#define NODE_ONLY                                                                                  \
	"{spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: "   \
	"[{name: node, image: 'test:runtime'}]}}}}}]}}"

/* trainingruntime_test.go: "succeeded to build JobSet with TrainJob's
 * RuntimePatches containing duplicate patches for same job" */
static void test_two_patches_same_job(void **state)
{
	check_merge(NODE_ONLY,
	            "[" POD_PATCH("manager-1", "node",
	                          "{spec: {nodeSelector: {node.kubernetes.io/instance-type: "
	                          "p5.48xlarge}}}") "," POD_PATCH("manager-1-dup", "node",
	                                                          "{spec: {serviceAccountName: "
	                                                          "test-sa}}") "]",
	            "{spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: "
	            "{containers: [{name: node, image: 'test:runtime'}], nodeSelector: "
	            "{node.kubernetes.io/instance-type: p5.48xlarge}, serviceAccountName: "
	            "test-sa}}}}}]}}");
}

/* trainingruntime_test.go: "succeeded to build JobSet with TrainJob's
 * RuntimePatches targeting the same job with different values": the later
 * patch wins. */
static void test_later_patch_wins(void **state)
{
	check_merge(
	        NODE_ONLY,
	        "[" POD_PATCH("manager-1", "node",
	                      "{spec: {nodeSelector: {node.kubernetes.io/instance-type: "
	                      "p5.48xlarge}}}") "," POD_PATCH("manager-2", "node",
	                                                      "{spec: {nodeSelector: "
	                                                      "{node.kubernetes.io/instance-type: "
	                                                      "p5en.48xlarge}}}") "]",
	        "{spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: "
	        "{containers: [{name: node, image: 'test:runtime'}], nodeSelector: "
	        "{node.kubernetes.io/instance-type: p5en.48xlarge}}}}}}]}}");
}

/* trainingruntime_test.go: "succeeded to build PodGroup and JobSet with
 * NumNodes from the TrainJob and container from the Runtime.": the JobSet
 * level labels and annotations of a patch override the runtime's. */
static void test_jobset_metadata(void **state)
{
	check_merge(
	        "{metadata: {labels: {conflictLabel: overridden, keep: me}, annotations: "
	        "{conflictAnnotation: overridden}}, spec: {replicatedJobs: [{name: node}]}}",
	        "[{manager: test.io/manager, trainingRuntimeSpec: {template: {metadata: {labels: "
	        "{conflictLabel: override}, annotations: {conflictAnnotation: override}}}}}]",
	        "{metadata: {labels: {conflictLabel: override, keep: me}, annotations: "
	        "{conflictAnnotation: override}}, spec: {replicatedJobs: [{name: node}]}}");
}

/* ---- the operator guide's examples ---------------------------------------------------- */

/* runtime-patches.md: "Custom Service Account and Node Selection" */
static void test_doc_service_account(void **state)
{
	check_merge(
	        NODE_ONLY,
	        "[" POD_PATCH("trainer.kubeflow.org/kubeflow-sdk", "node",
	                      "{spec: {serviceAccountName: ml-training-sa, nodeSelector: "
	                      "{accelerator: nvidia-tesla-v100, node-pool: gpu-training}}}") "]",
	        "{spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: "
	        "{containers: [{name: node, image: 'test:runtime'}], serviceAccountName: "
	        "ml-training-sa, nodeSelector: {accelerator: nvidia-tesla-v100, node-pool: "
	        "gpu-training}}}}}}]}}");
}

/* runtime-patches.md: "Adding Persistent Storage" (the trainer container is
 * `node` in upstream's runtimes). */
static void test_doc_storage(void **state)
{
	check_merge(
	        "{spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: "
	        "{containers: [{name: node, volumeMounts: [{name: initializer, mountPath: "
	        "/workspace}]}], volumes: [{name: initializer, persistentVolumeClaim: "
	        "{claimName: initializer}}]}}}}}]}}",
	        "[" POD_PATCH("trainer.kubeflow.org/kubeflow-sdk", "node",
	                      "{spec: {volumes: [{name: training-data, persistentVolumeClaim: "
	                      "{claimName: ml-team-training-pvc}}], containers: [{name: node, "
	                      "volumeMounts: [{name: training-data, mountPath: "
	                      "/workspace/data}]}]}}") "]",
	        "{spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: "
	        "{containers: [{name: node, volumeMounts: [{name: training-data, mountPath: "
	        "/workspace/data}, {name: initializer, mountPath: /workspace}]}], volumes: "
	        "[{name: training-data, persistentVolumeClaim: {claimName: ml-team-training-pvc}}, "
	        "{name: initializer, persistentVolumeClaim: {claimName: initializer}}]}}}}}]}}");
}

/* runtime-patches.md: "Tolerations for Specialized Hardware": tolerations
 * are not merged; the patch's list replaces the runtime's. */
static void test_doc_tolerations(void **state)
{
	check_merge("{spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: "
	            "{tolerations: [{key: runtime, operator: Exists}]}}}}}]}}",
	            "[" POD_PATCH("trainer.kubeflow.org/kubeflow-sdk", "node",
	                          "{spec: {tolerations: [{key: nvidia.com/gpu, operator: Exists, "
	                          "effect: NoSchedule}, {key: training-workload, operator: Equal, "
	                          "value: high-priority, effect: NoSchedule}]}}") "]",
	            "{spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: "
	            "{tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}, "
	            "{key: training-workload, operator: Equal, value: high-priority, effect: "
	            "NoSchedule}]}}}}}]}}");
}

/* ---- strategic merge, as apimachinery does it (ours) ------------------------------------ */

/* ours: patched items take the patch's order and untouched ones are woven
 * back before the first patched item they preceded: containers c1 c2 c3
 * patched as c3 c1 become c2 c3 c1; env A B C D patched with C D A keeps
 * B first; a repeated key merges into its first occurrence. */
static void test_merge_order(void **state)
{
	check_merge("{spec: {replicatedJobs: [{name: a, template: {spec: {template: {spec: "
	            "{containers: [{name: c1, env: [{name: A, value: '1'}, {name: B, value: '2'}, "
	            "{name: C, value: '3'}]}, {name: c2}, {name: c3}]}}}}}]}}",
	            "[" POD_PATCH("m", "a",
	                          "{spec: {containers: [{name: c3, env: [{name: Z, value: z}]}, "
	                          "{name: c1, env: [{name: C, value: '30'}, {name: D, value: '4'}, "
	                          "{name: A, value: '10'}, {name: D, value: '5'}]}]}}") "]",
	            "{spec: {replicatedJobs: [{name: a, template: {spec: {template: {spec: "
	            "{containers: [{name: c2}, {name: c3, env: [{name: Z, value: z}]}, {name: c1, "
	            "env: [{name: B, value: '2'}, {name: C, value: '30'}, {name: D, value: '5'}, "
	            "{name: A, value: '10'}]}]}}}}}]}}");
}

/* ours: replicated jobs return to the runtime's order; a name the runtime
 * lacks is added (the JobSet plugin's validation refuses it) and sorts as
 * position 0. The merge left c zz a after b, so zz, which the stable sort
 * sees before a, ends up first. */
static void test_rjob_order_and_unknown_name(void **state)
{
	check_merge(
	        "{spec: {replicatedJobs: [{name: a}, {name: b}, {name: c}]}}",
	        "[{manager: m, trainingRuntimeSpec: {template: {spec: {replicatedJobs: [{name: c, "
	        "template: {metadata: {labels: {x: z}}}}, {name: zz}, {name: a}]}}}}]",
	        "{spec: {replicatedJobs: [{name: zz}, {name: a}, {name: b}, {name: c, template: "
	        "{metadata: {labels: {x: z}}}}]}}");
}

/* ours: objects merge key by key at any depth (a volume of the same name
 * gains the patch's source; affinity keeps what the patch does not name),
 * scalar lists are replaced, finalizers merge as a set, and mounts merge by
 * mountPath, not by name. */
static void test_merge_semantics(void **state)
{
	check_merge(
	        "{spec: {replicatedJobs: [{name: a, template: {spec: {template: {metadata: "
	        "{finalizers: [f1, f2, f1]}, spec: {securityContext: {runAsUser: 5, "
	        "supplementalGroups: [1, 2]}, affinity: {podAffinity: {x: z}}, volumes: [{name: "
	        "data, "
	        "emptyDir: {}}], containers: [{name: c, volumeMounts: [{name: data, mountPath: /d, "
	        "readOnly: true}], securityContext: {capabilities: {add: [NET_ADMIN], drop: "
	        "[ALL]}}}]}}}}}]}}",
	        "[{manager: m, trainingRuntimeSpec: {template: {spec: {replicatedJobs: [{name: a, "
	        "template: {spec: {template: {metadata: {finalizers: [f3, f1]}, spec: "
	        "{securityContext: "
	        "{fsGroup: 9, supplementalGroups: [3]}, affinity: " ZONE_AFFINITY
	        ", volumes: [{name: "
	        "data, persistentVolumeClaim: {claimName: pvc}}], containers: [{name: c, "
	        "volumeMounts: "
	        "[{name: other, mountPath: /d}], securityContext: {capabilities: {add: "
	        "[SYS_TIME]}}}]}}}}}]}}}}]",
	        "{spec: {replicatedJobs: [{name: a, template: {spec: {template: {metadata: "
	        "{finalizers: [f3, f1, f2]}, spec: {securityContext: {runAsUser: 5, "
	        "supplementalGroups: [3], fsGroup: 9}, affinity: {podAffinity: {x: z}, "
	        "nodeAffinity: "
	        "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
	        "[{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: "
	        "[antarctica-east1, antarctica-west1]}]}]}}}, volumes: [{name: data, emptyDir: {}, "
	        "persistentVolumeClaim: {claimName: pvc}}], containers: [{name: c, volumeMounts: "
	        "[{name: other, mountPath: /d, readOnly: true}], securityContext: {capabilities: "
	        "{add: [SYS_TIME], drop: [ALL]}}}]}}}}}]}}");
}

/* ours: the patch as upstream's Go types keep it: fields they lack go
 * (a container's image, the pod's priorityClassName, "$patch" directives),
 * so do zero values of plain fields (an env var's empty value, a mount's
 * readOnly: false), while pointer fields keep theirs (serviceAccountName
 * "", terminationGracePeriodSeconds 0). */
static void test_typed_shape(void **state)
{
	check_merge(
	        "{spec: {replicatedJobs: [{name: a, template: {spec: {template: {spec: "
	        "{serviceAccountName: sa, terminationGracePeriodSeconds: 30, containers: [{name: "
	        "c, image: keep, env: [{name: E, value: keep}], volumeMounts: [{name: v, "
	        "mountPath: /v, readOnly: true}]}]}}}}}]}}",
	        "[" POD_PATCH("m", "a",
	                      "{spec: {serviceAccountName: '', terminationGracePeriodSeconds: 0, "
	                      "priorityClassName: high, containers: [{name: c, image: gone, "
	                      "$patch: replace, env: [{name: E, value: ''}], volumeMounts: "
	                      "[{name: v, mountPath: /v, readOnly: false}]}]}}") "]",
	        "{spec: {replicatedJobs: [{name: a, template: {spec: {template: {spec: "
	        "{serviceAccountName: '', terminationGracePeriodSeconds: 0, containers: [{name: "
	        "c, image: keep, env: [{name: E, value: keep}], volumeMounts: [{name: v, "
	        "mountPath: /v, readOnly: true}]}]}}}}}]}}");
}

/* ours: an empty list in the runtime encodes as no list in Go, so the
 * patch's list replaces it and items with one mountPath all stay; a
 * non-empty list merges them into one. */
static void test_empty_list_is_absent(void **state)
{
	const char *patch =
	        "[" POD_PATCH("m", "a",
	                      "{spec: {containers: [{name: c, volumeMounts: [{name: vx, "
	                      "mountPath: /d}, {name: vy, mountPath: /d}]}]}}") "]";
	check_merge("{spec: {replicatedJobs: [{name: a, template: {spec: {template: {spec: "
	            "{containers: [{name: c, volumeMounts: []}]}}}}}]}}",
	            patch,
	            "{spec: {replicatedJobs: [{name: a, template: {spec: {template: {spec: "
	            "{containers: [{name: c, volumeMounts: [{name: vx, mountPath: /d}, {name: vy, "
	            "mountPath: /d}]}]}}}}}]}}");
	check_merge("{spec: {replicatedJobs: [{name: a, template: {spec: {template: {spec: "
	            "{containers: [{name: c, volumeMounts: [{name: z, mountPath: /z}]}]}}}}}]}}",
	            patch,
	            "{spec: {replicatedJobs: [{name: a, template: {spec: {template: {spec: "
	            "{containers: [{name: c, volumeMounts: [{name: vy, mountPath: /d}, {name: z, "
	            "mountPath: /z}]}]}}}}}]}}");
}

/* ours: no patches, patches without a template spec, and an empty spec
 * leave the template as it is. */
static void test_nothing_to_merge(void **state)
{
	check_merge(NODE_ONLY, NULL, NODE_ONLY);
	check_merge(NODE_ONLY, "[]", NODE_ONLY);
	check_merge(
	        NODE_ONLY,
	        "[{manager: a}, {manager: b, trainingRuntimeSpec: {}}, {manager: c, "
	        "trainingRuntimeSpec: {template: {spec: {}}}}, {manager: d, trainingRuntimeSpec: "
	        "{template: {spec: {replicatedJobs: []}}}}]",
	        NODE_ONLY);
}

/* ---- refusals (ours) -------------------------------------------------------------------- */

/* A container patch without a name: strategicpatch's "does not contain
 * declared merge key", with the path. */
static void test_missing_merge_key(void **state)
{
	check_error(
	        NODE_ONLY,
	        "[" POD_PATCH("m", "node",
	                      "{spec: {containers: [{env: [{name: X, value: '1'}]}]}}") "]",
	        KFT_EINVAL,
	        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
	        ".template.spec.template.spec.containers: an item does not contain declared merge "
	        "key: name");
}

static void test_wrong_types(void **state)
{
	check_error(NODE_ONLY, "[{manager: m, trainingRuntimeSpec: [1]}]", KFT_EINVAL,
	            "spec.runtimePatches[0].trainingRuntimeSpec: must be an object");
	check_error(NODE_ONLY, "[7]", KFT_EINVAL, "spec.runtimePatches[0]: must be an object");
	check_error(NODE_ONLY, "[" POD_PATCH("m", "node", "{spec: {nodeSelector: {a: [1]}}}") "]",
	            KFT_EINVAL, "template.spec.nodeSelector: must be an object of strings");
	check_error(NODE_ONLY,
	            "[" POD_PATCH("m", "node", "{spec: {terminationGracePeriodSeconds: soon}}") "]",
	            KFT_EINVAL, "terminationGracePeriodSeconds: must be an integer");
	check_error(NODE_ONLY,
	            "[{manager: m, trainingRuntimeSpec: {template: {metadata: {labels: {a: {b: "
	            "c}}}}}}]",
	            KFT_EINVAL, "template.metadata.labels: must be an object of strings");
	json_t *t = yaml(NODE_ONLY), *p = yaml("{not: a list}");
	assert_int_equal(kft_runtime_patches_merge(t, p, NULL), KFT_EINVAL);
	json_decref(t);
	json_decref(p);
}

static void test_too_many_patches(void **state)
{
	json_t *t = yaml(NODE_ONLY), *p = json_array();
	for (int i = 0; i <= KFT_RUNTIME_PATCHES_MAX; i++)
		json_array_append_new(p, json_pack("{s:s}", "manager", "m"));
	kft_error err = {0};
	assert_int_equal(kft_runtime_patches_merge(t, p, &err), KFT_ELIMIT);
	json_array_remove(p, 0);
	assert_int_equal(kft_runtime_patches_merge(t, p, &err), 0);
	json_decref(t);
	json_decref(p);
}

/* Nesting beyond the decoder's depth is refused, not recursed into. */
static void test_too_deep(void **state)
{
	json_t *deep = json_object(), *cur = deep;
	for (int i = 0; i < KFT_DECODE_MAX_DEPTH + 10; i++) {
		json_t *next = json_object();
		json_object_set_new(cur, "x", next);
		cur = next;
	}
	json_t *t = yaml(NODE_ONLY);
	json_t *p = json_pack("[{s:s, s:{s:{s:{s:[{s:s, s:{s:{s:{s:{s:o}}}}}]}}}}]", "manager", "m",
	                      "trainingRuntimeSpec", "template", "spec", "replicatedJobs", "name",
	                      "node", "template", "spec", "template", "spec", "affinity", deep);
	kft_error err = {0};
	assert_int_equal(kft_runtime_patches_merge(t, p, &err), KFT_ELIMIT);
	assert_non_null(strstr(err.message, "nested too deeply"));
	json_decref(t);
	json_decref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_runtime_patches_both_managers),
	        cmocka_unit_test(test_nil_affinity),
	        cmocka_unit_test(test_security_context),
	        cmocka_unit_test(test_job_and_pod_metadata),
	        cmocka_unit_test(test_two_patches_same_job),
	        cmocka_unit_test(test_later_patch_wins),
	        cmocka_unit_test(test_jobset_metadata),
	        cmocka_unit_test(test_doc_service_account),
	        cmocka_unit_test(test_doc_storage),
	        cmocka_unit_test(test_doc_tolerations),
	        cmocka_unit_test(test_merge_order),
	        cmocka_unit_test(test_rjob_order_and_unknown_name),
	        cmocka_unit_test(test_merge_semantics),
	        cmocka_unit_test(test_typed_shape),
	        cmocka_unit_test(test_empty_list_is_absent),
	        cmocka_unit_test(test_nothing_to_merge),
	        cmocka_unit_test(test_missing_merge_key),
	        cmocka_unit_test(test_wrong_types),
	        cmocka_unit_test(test_too_many_patches),
	        cmocka_unit_test(test_too_deep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
