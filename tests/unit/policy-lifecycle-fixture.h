/* What the unit tests of policy/lifecycle (test-policy-lifecycle.c, -lifecycle-auto.c) share:
 * the instant they decide at, times before it, and one look at fixture F plus some objects, with
 * the end of a request found by name. Included by each. */
#ifndef NG_TESTS_UNIT_POLICY_LIFECYCLE_FIXTURE_H
#define NG_TESTS_UNIT_POLICY_LIFECYCLE_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "kube/kube.h"
#include "policy/lifecycle.h"
#include "tests/support/objects.h"
#include "tests/support/support.h"

static const int64_t NOW = 1795000000000; /* 2026-11-18T11:06:40Z */
#define AGO_5 "\"2026-11-18T11:06:35Z\""  /* NOW - 5 s */
#define AGO_60 "\"2026-11-18T11:05:40Z\"" /* NOW - 60 s */

struct run {
	struct kube_snapshot *s;
	struct ng_arena *a;
	struct pol_lifecycle l;
};

static struct run run(const char *objects)
{
	struct run r = {ng_test_cluster_f(objects), ng_arena_create(1u << 16), {0}};
	assert_int_equal(pol_lifecycle_ends(r.s, NOW, r.a, &r.l), NG_OK);
	return r;
}

static void finish(struct run *r)
{
	ng_arena_destroy(r->a);
	kube_snapshot_release(r->s);
}

/* The end of request @name, or NULL. */
static const struct pol_end *end_of(const struct run *r, const char *name)
{
	for (size_t i = 0; i < r->l.nends; i++)
		if (r->l.ends[i].nd->name == ng_test_id(r->s, name))
			return &r->l.ends[i];
	return NULL;
}

#endif
