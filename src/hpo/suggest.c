/*
 * suggest.c - a trial's parameters by the search's algorithm (see hpo.h):
 * above sample.c (random, grid) and tpe.c (which starts from random draws).
 */
#include "hpo/hpo.h"

int kft_hpo_suggest(const kft_hpo_spec *spec, const json_t *trials, int64_t seed, uint64_t index,
                    json_t **out, kft_error *err)
{
	uint64_t count = 0;
	*out = NULL;
	if (spec->algorithm == KFT_HPO_GRID) {
		int rc = kft_hpo_grid_count(spec, &count, err);
		if (rc == 0 && index >= count)
			rc = kft_error_set(err, KFT_EINVAL,
			                   "grid search: all %llu points were tried",
			                   (unsigned long long)count);
		if (rc)
			return rc;
		*out = kft_hpo_grid(spec, index);
	} else if (spec->algorithm == KFT_HPO_TPE) {
		*out = kft_hpo_tpe(spec, trials, seed, index);
	} else {
		*out = kft_hpo_random(spec, seed, index);
	}
	return *out ? 0 : kft_error_set(err, KFT_ENOMEM, "out of memory");
}
