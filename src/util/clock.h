/*
 * clock.h - the monotonic clock (internal): deadlines, timeouts and rate
 * limits, never affected by the wall clock being set.
 */
#ifndef KFT_UTIL_CLOCK_H
#define KFT_UTIL_CLOCK_H

/* CLOCK_MONOTONIC in milliseconds. */
long long kft_clock_mono_ms(void);

/* CLOCK_MONOTONIC in seconds, to the nanosecond. */
double kft_clock_mono_s(void);

#endif
