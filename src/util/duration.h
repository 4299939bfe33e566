/*
 * duration.h - Go's time.ParseDuration, in milliseconds (internal).
 *
 * Durations reach kftrainer as Go writes them: the controller's
 * Configuration (metav1.Duration fields such as leaderElection.leaseDuration)
 * and the CLI's kubectl-style flags (`wait --timeout 90s`). One parser for
 * both, so "1m30s", "1.5h", "500ms", "10µs" and "-0" mean the same
 * everywhere, and what Go refuses is refused.
 */
#ifndef KFT_UTIL_DURATION_H
#define KFT_UTIL_DURATION_H

#include <stdint.h>

/* Parses s as Go's time.ParseDuration does - an optional sign, then one or
 * more DECIMAL UNIT pairs (units ns, us, µs (U+00B5 or U+03BC), ms, s, m,
 * h), or a bare "0" - into *ms, truncated toward zero. Returns 0, or
 * KFT_EINVAL (*ms untouched) when s is NULL, empty, malformed, or beyond
 * Go's range (about 292 years). */
int kft_duration_parse_ms(const char *s, int64_t *ms);

#endif
