/* What the unit tests of the gate controller (test-controller-gate.c, -lifecycle.c,
 * -unsatisfiable.c) share: a gate writing to an in-memory API server, made before each test and
 * destroyed after it, and one round of it over a snapshot given as JSON. Included by each. */
#ifndef NG_TESTS_UNIT_CONTROLLER_GATE_FIXTURE_H
#define NG_TESTS_UNIT_CONTROLLER_GATE_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "controller/gate_internal.h"
#include "kube/client.h"
#include "tests/support/fake-api.h"
#include "tests/support/support.h"

#include <stdbool.h>
#include <stdint.h>

struct fx {
	struct fake_api api;
	struct kube_client *c;
	struct gate *g;
};

static int setup(void **state)
{
	static struct fx fx;
	fake_api_init(&fx.api);
	fx.c = fake_api_client(&fx.api);
	struct gate_config gc = {.identity = "replica-a"};
	fx.g = gate_create(&gc, fx.c);
	assert_non_null(fx.g);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;
	gate_destroy(fx->g);
	kube_client_destroy(fx->c);
	fake_api_finish(&fx->api);
	return 0;
}

static inline void round_on(struct fx *fx, const char *json, bool changed, int64_t now_wall_ms)
{
	struct kube_snapshot *s = ng_test_snapshot(json);
	gate_round(fx->g, s, changed, now_wall_ms);
	kube_snapshot_release(s);
}

#endif
