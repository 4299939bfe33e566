/*
 * backoff.c - exponential backoff with jitter, and a sleep that a stop flag
 * can cut short.
 *
 * Jitter spreads out clients that failed together (an API server restart
 * drops every watch at once) so they do not all come back in the same
 * instant. The random source is rand_r on a per-backoff seed: the numbers
 * need to differ between processes and loops, not be unpredictable.
 */
#include "kube/kube.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void kft_backoff_init(kft_backoff *b, long base_ms, long cap_ms, double jitter)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	b->base_ms = base_ms < 1 ? 1 : base_ms;
	b->cap_ms = cap_ms < b->base_ms ? b->base_ms : cap_ms;
	b->jitter = jitter < 0 ? 0 : (jitter > 1 ? 1 : jitter);
	b->current_ms = 0;
	b->seed = (unsigned int)now.tv_nsec ^ (unsigned int)getpid() ^ (unsigned int)(size_t)b;
}

long kft_backoff_next(kft_backoff *b)
{
	if (b->current_ms == 0)
		b->current_ms = b->base_ms;
	else if (b->current_ms > b->cap_ms / 2)
		b->current_ms = b->cap_ms;
	else
		b->current_ms *= 2;
	double extra = b->jitter * (double)b->current_ms * ((double)rand_r(&b->seed) / RAND_MAX);
	return b->current_ms + (long)extra;
}

void kft_backoff_reset(kft_backoff *b)
{
	b->current_ms = 0;
}

int kft_sleep_ms(long ms, const atomic_int *stop)
{
	while (ms > 0) {
		if (stop && atomic_load(stop))
			return 1;
		long step = stop && ms > 50 ? 50 : ms;
		struct timespec ts = {step / 1000, (step % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		ms -= step;
	}
	return stop && atomic_load(stop) ? 1 : 0;
}
