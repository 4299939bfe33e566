/*
 * error.h - how every kftrainer function reports failure.
 *
 * Functions that can fail return an int: 0 on success, a negative kft_status
 * on failure. When the caller passes a non-NULL kft_error, the function also
 * fills it with the status and a human-readable message. The message is for
 * people (CLI output, logs); programs should branch on the status.
 *
 * A kft_error is a plain value with no heap memory: it never needs freeing
 * and may live on the stack.
 */
#ifndef KFTRAINER_ERROR_H
#define KFTRAINER_ERROR_H

#include "kftrainer/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kft_status {
	KFT_OK = 0,
	KFT_EINVAL = -1,    /* the input is well-formed but not acceptable */
	KFT_ENOMEM = -2,    /* an allocation failed */
	KFT_EIO = -3,       /* reading or writing a file or socket failed */
	KFT_EPARSE = -4,    /* the input is not well-formed (syntax) */
	KFT_ELIMIT = -5,    /* the input exceeds a size, depth or count bound */
	KFT_ENOTFOUND = -6, /* a named thing does not exist */
	KFT_EVERSION = -7,  /* an ABI or format version does not match */
	/* What a remote API (the Kubernetes API server) answers. */
	KFT_ECONFLICT = -8,     /* 409 Conflict: a stale resourceVersion; re-read, retry */
	KFT_EEXIST = -9,        /* 409 AlreadyExists */
	KFT_EGONE = -10,        /* 410 Gone: a watch's resourceVersion expired; relist */
	KFT_EUNAVAILABLE = -11, /* cannot connect, timed out, 429 or 5xx after retries */
	KFT_EDENIED = -12,      /* 401 Unauthorized or 403 Forbidden */
} kft_status;

#define KFT_ERROR_MESSAGE_MAX 1024

typedef struct kft_error {
	kft_status code;
	char message[KFT_ERROR_MESSAGE_MAX];
} kft_error;

/* Fills err (when non-NULL) and returns code, so callers can write
 * `return kft_error_set(err, KFT_EINVAL, "...", ...);`. */
KFT_EXPORT int kft_error_set(kft_error *err, kft_status code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Resets err to KFT_OK with an empty message. err may be NULL. */
KFT_EXPORT void kft_error_clear(kft_error *err);

/* A short constant name for a status ("invalid input", "out of memory" ...). */
KFT_EXPORT const char *kft_status_string(kft_status code);

#ifdef __cplusplus
}
#endif

#endif
