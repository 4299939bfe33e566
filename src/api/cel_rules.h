/*
 * cel_rules.h - C implementations of the CEL validation rules our CRDs carry
 * (internal).
 *
 * We do not embed a CEL interpreter: the CRDs carry a small, fixed set of
 * rules, so each rule's exact text maps to a function that decides it the
 * way CEL would. The schema engine looks rules up by text; the unit tests
 * prove every rule in api/ has an entry here, so a rule cannot be added to
 * the CRDs without teaching the validator.
 */
#ifndef KFT_API_CEL_RULES_H
#define KFT_API_CEL_RULES_H

#include <jansson.h>

/* Returns 1 when the rule holds for self (and old_self, NULL on create), 0
 * when it does not, and KFT_CEL_NO_OVERLOAD when CEL would fail to evaluate
 * it for self's type ("no such overload"). */
#define KFT_CEL_NO_OVERLOAD (-1)
typedef int (*kft_cel_fn)(const json_t *self, const json_t *old_self);

typedef struct kft_cel_rule {
	const char *rule; /* the exact CEL text, as it appears in the CRD */
	kft_cel_fn check;
	int transition; /* refers to oldSelf: evaluated only on update */
} kft_cel_rule;

/* The implementation of a rule text, or NULL when there is none. */
const kft_cel_rule *kft_cel_rule_find(const char *rule);

#endif
