/*
 * sshkey.h - fresh SSH key pairs for MPI's launcher-to-node logins (internal).
 *
 * The MPI plugin gives every TrainJob its own key pair in a Secret of type
 * kubernetes.io/ssh-auth; every pod of the job mounts it as its identity and
 * as its authorized_keys, so the launcher can ssh into each node and nobody
 * outside the job can. The key is what upstream Kubeflow Trainer (and the
 * MPI Operator before it) generates, so a job moved between the two
 * controllers mounts the same kind of file:
 *
 *   - an ECDSA key on NIST P-521, generated from the kernel's CSPRNG;
 *   - the private key as PEM "EC PRIVATE KEY" (SEC 1 / RFC 5915, with the
 *     curve's name and the public point), which OpenSSH reads as id_rsa;
 *   - the public key as one authorized_keys line, "ecdsa-sha2-nistp521
 *     <base64 of the RFC 5656 blob>\n", with no comment.
 *
 * Key material is a secret: nothing here logs it or puts it in an error
 * message, and kft_sshkey_free() wipes it before freeing.
 */
#ifndef KFT_UTIL_SSHKEY_H
#define KFT_UTIL_SSHKEY_H

#include "kftrainer/error.h"

/* Both strings are NUL-terminated and owned by the struct. */
typedef struct kft_sshkey {
	char *private_pem;    /* "-----BEGIN EC PRIVATE KEY-----\n...-----END ...-----\n" */
	char *authorized_key; /* "ecdsa-sha2-nistp521 AAAA...\n" */
} kft_sshkey;

/* The SSH key type name of the keys generated here. */
#define KFT_SSHKEY_TYPE "ecdsa-sha2-nistp521"

/*
 * Generates a new key pair into *out. Returns 0, or KFT_ENOMEM, or KFT_EIO
 * when mbedTLS fails (err says which step, never any key bytes); on failure
 * *out is left empty (both pointers NULL). Free with kft_sshkey_free.
 */
int kft_sshkey_generate(kft_sshkey *out, kft_error *err);

/* Wipes and frees both strings and sets them to NULL. key may be NULL. */
void kft_sshkey_free(kft_sshkey *key);

#endif
