/*
 * rfc3339.h - times as Kubernetes writes them (internal): metav1.Time
 * ("2006-01-02T15:04:05Z", whole seconds, UTC) and metav1.MicroTime
 * ("2006-01-02T15:04:05.000000Z"). The one place a time is formatted for an
 * object, an event, a lease or a status, or parsed.
 */
#ifndef KFT_UTIL_RFC3339_H
#define KFT_UTIL_RFC3339_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "kftrainer/error.h"

/* Room for either form and its NUL. */
#define KFT_RFC3339_MAX 32

/* Unix time sec (and microseconds usec, 0..999999) in UTC: metav1.Time when
 * usec < 0, metav1.MicroTime otherwise. Returns 0, or KFT_EINVAL (buf "")
 * for a year outside 0000..9999, which RFC 3339 cannot write. */
int kft_rfc3339_format(int64_t sec, long usec, char buf[KFT_RFC3339_MAX]);

/* Unix time t in seconds (fractions kept to the microsecond) as
 * metav1.MicroTime into buf (size bytes): 0, KFT_EINVAL outside years
 * 1970..9999, KFT_ELIMIT when it does not fit. (Leases and events.) */
int kft_rfc3339_micro(double t, char *buf, size_t size);

/* The wall clock now, as metav1.Time / metav1.MicroTime. */
void kft_rfc3339_now(char buf[KFT_RFC3339_MAX]);
void kft_rfc3339_now_micro(char buf[KFT_RFC3339_MAX]);

/* Both forms of one instant (an Event's timestamps agree). */
void kft_rfc3339_from_timespec(const struct timespec *ts, char seconds[KFT_RFC3339_MAX],
                               char micro[KFT_RFC3339_MAX]);

/* Parses an RFC 3339 time ("2006-01-02T15:04:05Z", optional fraction and
 * numeric offset) into milliseconds since the Unix epoch. Returns 0 or
 * KFT_EPARSE. */
int kft_rfc3339_parse_ms(const char *s, int64_t *ms, kft_error *err);

#endif
