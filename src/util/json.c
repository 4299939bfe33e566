/*
 * json.c - small lookups over jansson trees; see json.h.
 */
#include "util/json.h"

#include <string.h>

json_t *kft_json_find(const json_t *array, const char *key, const char *value)
{
	size_t i;
	json_t *e;
	json_array_foreach(array, i, e)
	{
		const char *v = json_string_value(json_object_get(e, key));
		if (v && strcmp(v, value) == 0)
			return e;
	}
	return NULL;
}
