/*
 * values.c - what the files of src/hpo/ share (hpo_internal.h): the
 * random stream, numbers written and read as Katib's services write and
 * read them, a trial's assignments and metrics.
 *
 * Randomness is a counter-based stream: SplitMix64 seeded by (seed, trial
 * index, purpose), so trial k's draw depends on nothing but the seed and k.
 * A seeded search is then reproducible however its trials interleave, and
 * a driver that restarts between choosing a trial and recording it draws
 * the same trial again. SplitMix64 (Steele, Lea and Flood, 2014) passes
 * BigCrush; nothing here needs unpredictability.
 */
#include "hpo/hpo_internal.h"
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN 0x9e3779b97f4a7c15ULL

uint64_t kft_hpo_rng_next(kft_hpo_rng *r)
{
	uint64_t z = (r->state += GOLDEN);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void kft_hpo_rng_init(kft_hpo_rng *r, int64_t seed, uint64_t index, uint64_t purpose)
{
	kft_hpo_rng mix = {.state = (uint64_t)seed};
	r->state = kft_hpo_rng_next(&mix) ^ (index * 0xd1b54a32d192ed03ULL);
	r->state = kft_hpo_rng_next(r) ^ (purpose * 0xaef17502108ef2d9ULL);
}

double kft_hpo_rng_unit(kft_hpo_rng *r)
{
	return (double)(kft_hpo_rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- numbers ------------------------------------------------------------------ */

/* Python's repr of a float, which is what Katib's suggestion services
 * hand over: the fewest significant digits that read back to v, in fixed
 * notation for decimal exponents -4..15 (with ".0" when whole), else in
 * exponent notation ("1e-05"). */
char *kft_hpo_format_double(double v, char buf[32])
{
	int p = 1;
	for (; p < 17; p++) {
		snprintf(buf, 32, "%.*e", p - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	snprintf(buf, 32, "%.*e", p - 1, v);
	int e = atoi(strchr(buf, 'e') + 1);
	if (e < -4 || e >= 16 || !isfinite(v))
		return buf;
	int decimals = p - 1 - e;
	snprintf(buf, 32, "%.*f", decimals > 0 ? decimals : 0, v);
	if (!strchr(buf, '.') && strlen(buf) + 2 < 32)
		strcat(buf, ".0");
	return buf;
}

bool kft_hpo_go_space(unsigned char c)
{
	return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ';
}

int kft_hpo_parse_number(const char *s, double *out)
{
	char *end;
	if (!s || !*s || kft_hpo_go_space((unsigned char)s[0]))
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (*end || end == s || (errno == ERANGE && isinf(v))) /* overflow; underflow reads */
		return -1;
	*out = v;
	return 0;
}

/* ---- a trial's JSON ------------------------------------------------------------ */

int kft_hpo_assign_add(json_t *arr, const char *name, const char *value)
{
	return json_array_append_new(arr, json_pack("{s:s, s:s}", "name", name, "value", value));
}

json_t *kft_hpo_trial_metric(const json_t *trial, const char *name)
{
	return kft_json_find(json_object_get(trial, "metrics"), "name", name);
}
