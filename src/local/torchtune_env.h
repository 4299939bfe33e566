/*
 * torchtune_env.h - does this machine have the torchtune a job needs? (internal)
 *
 * A TrainJob whose trainer runs `tune run` (a torchtune runtime) runs the
 * `tune` it finds on the job's PATH. torchtune 0.6.1 imports only with the
 * torch, torchao and torchdata it was released with (the newest torchao
 * lacks torchao.dtypes.nf4tensor), so before anything is stored or started
 * the local engine asks the interpreter behind that `tune` which versions it
 * has and compares them with the tested set: the pins of
 * python/kftrainer/torchtune-requirements.txt, embedded in the library. A
 * missing `tune`, an interpreter that cannot answer, or a version that is not
 * the pinned one is an error naming what to install (one pip command).
 * KFTRAINER_TORCHTUNE_CHECK=off in the caller's environment skips the check,
 * for those who run a set of their own.
 */
#ifndef KFT_LOCAL_TORCHTUNE_ENV_H
#define KFT_LOCAL_TORCHTUNE_ENV_H

#include <stddef.h>

#include "kftrainer/error.h"

#define KFT_TORCHTUNE_CHECK_ENV "KFTRAINER_TORCHTUNE_CHECK"

/* One pinned package: name and version (both point into a caller's buffer). */
typedef struct kft_pin {
	char name[64];
	char version[64];
} kft_pin;

/* The pins of a requirements text ("name==version" lines; '#' comments and
 * blank lines skipped) into pins[0..cap). Returns how many, or KFT_EPARSE
 * naming the line that is not of that form (a version with a local label
 * "+..." included) or pins a name again, KFT_ELIMIT past cap. */
int kft_torchtune_pins_parse(const char *text, kft_pin *pins, size_t cap, kft_error *err);

/* The embedded pins as one pip command ("pip install torch==2.9.1 ..."). */
const char *kft_torchtune_install_command(void);

/* Compares what an interpreter reported (lines "name version", "-" for a
 * package it does not have) with pins[0..n): 0 when every pin is met (a
 * local version label such as "+cu126" is ignored), else KFT_EINVAL with the
 * differences ("torchao 0.18.0 (wants 0.15.0), torchtune missing (wants
 * 0.6.1)") in err. */
int kft_torchtune_versions_check(const char *report, const kft_pin *pins, size_t n, kft_error *err);

/* The whole check for a job with environment env ("K=V", NULL-terminated;
 * NULL: this process's) whose `tune run` names torchtune config `config`
 * (NULL: none known): finds `tune` on its PATH, asks its interpreter for the
 * versions and whether its torchtune ships the config, and compares.
 * Returns 0 (also when KFTRAINER_TORCHTUNE_CHECK=off), else KFT_EINVAL with
 * a message that says what is wrong and, for versions, the pip command. */
int kft_torchtune_env_check(char *const *env, const char *config, kft_error *err);

#endif
