/*
 * clock.h - the monotonic clock in milliseconds (internal): deadlines,
 * timeouts and rate limits, never affected by the wall clock being set.
 */
#ifndef KFT_UTIL_CLOCK_H
#define KFT_UTIL_CLOCK_H

/* CLOCK_MONOTONIC in milliseconds. */
long long kft_clock_mono_ms(void);

#endif
