/*
 * constants.h - names upstream Kubeflow Trainer v2.3.0 defines and users
 * depend on: labels, annotations, step and container names. Kept identical
 * to upstream's (pkg/constants); each is a fact, not a choice.
 */
#ifndef KFTRAINER_CONSTANTS_H
#define KFTRAINER_CONSTANTS_H

#define KFT_GROUP                "trainer.kubeflow.org"
#define KFT_VERSION              "v1alpha1"
#define KFT_API_VERSION          KFT_GROUP "/" KFT_VERSION
#define KFT_KIND_TRAINJOB        "TrainJob"
#define KFT_KIND_RUNTIME         "TrainingRuntime"
#define KFT_KIND_CLUSTER_RUNTIME "ClusterTrainingRuntime"

/* Which step of a TrainJob a replicated job runs. */
#define KFT_LABEL_ANCESTOR      "trainer.kubeflow.org/trainjob-ancestor-step"
#define KFT_ANCESTOR_TRAINER    "trainer"
#define KFT_DATASET_INITIALIZER "dataset-initializer"
#define KFT_MODEL_INITIALIZER   "model-initializer"
#define KFT_CONTAINER_NODE      "node"

/* Runtime support status ("deprecated" draws a warning). */
#define KFT_LABEL_SUPPORT      "trainer.kubeflow.org/support"
#define KFT_SUPPORT_DEPRECATED "deprecated"
#define KFT_RUNTIME_DEPRECATION_POLICY_URL                                                         \
	"https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"                      \
	"#runtime-deprecation-policy"

#define KFT_LABEL_FRAMEWORK "trainer.kubeflow.org/framework"

/* The TrainJobStatus plugin's environment (pkg/constants) and the path of
 * the status endpoint (pkg/statusserver StatusUrl), "%s" the namespace
 * then the name. */
#define KFT_ENV_STATUS_SERVER_URL "KUBEFLOW_TRAINER_SERVER_URL"
#define KFT_ENV_STATUS_CA_CERT    "KUBEFLOW_TRAINER_SERVER_CA_CERT"
#define KFT_ENV_STATUS_TOKEN      "KUBEFLOW_TRAINER_SERVER_TOKEN"
#define KFT_STATUS_PATH_FORMAT    "/apis/" KFT_API_VERSION "/namespaces/%s/trainjobs/%s/status"
#define KFT_STATUS_MOUNT_PATH     "/var/run/secrets/kubeflow/trainer"

#endif
