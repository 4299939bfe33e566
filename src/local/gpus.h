/*
 * gpus.h - GPU placement of the local backend (internal to src/local).
 *
 * A pod's GPUs are its node container's (kft_resources_gpus over the
 * container's resources in the rendered JobSet: the TrainJob's
 * resourcesPerNode, else the runtime's). When a job asks for any, submit
 * takes the machine's inventory, removes what the jobs that have not
 * finished hold, and gives every such pod its own slice, in order: replicated
 * jobs as the JobSet lists them, pods by index. Asking for more than is free
 * (or for any on a machine without GPUs) refuses the submit.
 *
 * The placement is stored with the job's objects as
 *   {"apiVersion": "local.kftrainer.dev/v1", "kind": "GPUAllocation",
 *    "devices": {"<replicated job>": ["<slice of pod 0>", ...]}}
 * where a slice is CUDA_VISIBLE_DEVICES's value ("GPU-uuid,GPU-uuid" or
 * "0,1") and a pod's position is replica * completions + index (the pod
 * record's index). The supervisor sets CUDA_VISIBLE_DEVICES from it.
 *
 * On a machine with no GPU at all, a job that asks for some runs on CPU
 * instead (the local backend answers has_gpus 0, backend.h, so the job is
 * built without GPU requests); its allocation then holds no devices but
 *   "cpu": {"gpusPerNode": N, "message": "..."}
 * whose message the supervisor writes into the trainer's first log, as the
 * submit recorded it in an event.
 */
#ifndef KFT_LOCAL_GPUS_H
#define KFT_LOCAL_GPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kftrainer/error.h"

/* The inventory's override (docs/local.md): unset, NVML decides; "" or "0",
 * none; "N", devices 0..N-1; "a,b,c", those devices (indices or UUIDs). */
#define KFT_LOCAL_GPUS_ENV         "KFTRAINER_GPUS"
#define KFT_LOCAL_GPUS_MAX         256
#define KFT_LOCAL_GPU_ID_MAX       96
#define KFT_LOCAL_GPUS_TEXT_MAX    (KFT_LOCAL_GPUS_MAX * (KFT_LOCAL_GPU_ID_MAX + 1))
#define KFT_LOCAL_GPUS_CUDA_ENV    "CUDA_VISIBLE_DEVICES"
#define KFT_LOCAL_NPROC_ENV        "PET_NPROC_PER_NODE"
#define KFT_LOCAL_GPUS_KIND        "GPUAllocation"
#define KFT_LOCAL_GPUS_API_VERSION "local.kftrainer.dev/v1"

/* A list of device names (each malloc'd). */
typedef struct kft_local_gpus {
	char **ids;
	size_t n;
} kft_local_gpus;

void kft_local_gpus_free(kft_local_gpus *g);
bool kft_local_gpus_has(const kft_local_gpus *g, const char *id);

/* The devices of all not in held, in all's order, into *out. */
int kft_local_gpus_minus(const kft_local_gpus *all, const kft_local_gpus *held, kft_local_gpus *out,
                         kft_error *err);

/* $KFTRAINER_GPUS's value as a device list (format above). Errors name the
 * variable and the entry: KFT_EINVAL (empty or duplicate entry, a character
 * outside [A-Za-z0-9-_:./], over 96 bytes, over 256 devices), KFT_ENOMEM.
 * *out is empty on error. */
int kft_local_gpus_parse(const char *text, kft_local_gpus *out, kft_error *err);

/* This machine's GPUs: $KFTRAINER_GPUS when set, else NVML (dlopen'd at run
 * time; no library, driver or device is an empty list, not an error).
 * *source (static) says which answered, for messages. Errors of
 * kft_local_gpus_parse. */
int kft_local_gpus_inventory(kft_local_gpus *out, const char **source, kft_error *err);

/* GPUs the pods of a rendered JobSet ask for in all (capped well above any
 * machine). Errors of kft_resources_gpus. */
int kft_local_gpus_request(const json_t *jobset, int64_t *total, kft_error *err);

/* The GPUAllocation object (new reference) giving each pod of jobset that
 * asks for GPUs a slice of free_ids, taken in order. The caller has checked
 * that enough are free; KFT_EINVAL otherwise. */
int kft_local_gpus_place(const json_t *jobset, const kft_local_gpus *free_ids, json_t **out,
                         kft_error *err);

/* The GPUAllocation among a job's stored objects (borrowed), or NULL. */
const json_t *kft_local_gpus_find(const json_t *objects);

/* The GPUAllocation of a job run on CPU (above): asked_per_node GPUs per
 * trainer node left out, message (copied) saying so. New reference; NULL on
 * ENOMEM. */
json_t *kft_local_gpus_cpu_allocation(int64_t asked_per_node, const char *message);

/* The message of an allocation made by kft_local_gpus_cpu_allocation, or
 * NULL (no allocation, or one with devices). Borrowed from allocation. */
const char *kft_local_gpus_cpu_message(const json_t *allocation);

/* Appends the devices an allocation holds to *held (once each); *count gets
 * how many were new. */
int kft_local_gpus_held_by(const json_t *allocation, kft_local_gpus *held, size_t *count,
                           kft_error *err);

/* The slice of pod rec_index of replicated job rjob (borrowed), or NULL when
 * that pod has none. */
const char *kft_local_gpus_slice(const json_t *allocation, const char *rjob, int rec_index);

/* In a pod's environment (malloc'd "K=V" strings, NULL-terminated), a
 * PET_NPROC_PER_NODE of "auto" or "gpu" becomes the slice's device count.
 * Errors: KFT_ENOMEM. */
int kft_local_gpus_resolve_nproc(char **envp, const char *slice, kft_error *err);

#endif
