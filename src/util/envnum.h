/*
 * envnum.h - a whole number from the environment (internal).
 *
 * Knobs such as KFTRAINER_TRACKING_DRAIN, KFTRAINER_TRACKING_MAX_REPORTS and
 * KFTRAINER_EXPORT_PART_SIZE are numbers a user types: one reader, so each
 * refuses the same things ("", "12abc", "-1", a number past its bound) and
 * its caller can name the variable instead of quietly taking 0.
 */
#ifndef KFT_UTIL_ENVNUM_H
#define KFT_UTIL_ENVNUM_H

#include <stdbool.h>

/* The decimal whole number in environment variable name, at most max, into
 * *out. Returns false, *out untouched, when it is unset or empty (the
 * caller's default applies) and when it is not such a number: then *bad is
 * set, else cleared. */
bool kft_env_whole(const char *name, unsigned long long max, unsigned long long *out, bool *bad);

#endif
