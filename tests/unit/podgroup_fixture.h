/*
 * podgroup_fixture.h - what the CoScheduling and Volcano tests share beyond
 * backend_fixture.h: running the plugin's
 * EnforcePodGroupPolicy and ComponentBuilder. Define PLUGIN_UNDER_TEST (the
 * plugin table) before including it, after <cmocka.h>; the functions are
 * static inline.
 */
#ifndef KFT_TESTS_PODGROUP_FIXTURE_H
#define KFT_TESTS_PODGROUP_FIXTURE_H

#include "backend_fixture.h"

/* Runs EnforcePodGroupPolicy and then ComponentBuilder, both expected to
 * succeed. info may be NULL (the "nil info" case). */
static inline void run(fixture *f, kft_runtime_info *info)
{
	kft_error err = {0};
	const kft_plugin *p = &PLUGIN_UNDER_TEST;
	if (p->enforce_pod_group_policy(&f->ctx, info, job_of(f), &err) != 0)
		fail_msg("EnforcePodGroupPolicy: %s", err.message);
	if (p->component_builder(&f->ctx, info, job_of(f), f->objects, &err) != 0)
		fail_msg("ComponentBuilder: %s", err.message);
}

#endif
