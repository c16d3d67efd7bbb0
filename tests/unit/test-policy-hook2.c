/* policy/hook: multistep hooks (hookV2BasePath) — the spec as decoded, which step a decision
 * asks, how each answer changes the decision, the body a hook server gets, and the status that
 * keeps what a budget is owed (docs/health-hooks.md). The calls themselves are I/O (controller);
 * the e2e test test_hooks_v2.py drives them against a hook server. */
#include "tests/unit/policy-gate-fixture.h"

#include "common/clock.h"
#include "common/json.h"

/* An ADB over app=db (pod1 on node1) with @hook as its hookV2BasePath. */
#define V2_ADB(name, hook)                                                                         \
	ADB(name, "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},\"maxDisruptions\":1,"      \
		  "\"hookV2BasePath\":" hook "}")
#define V2_NDB(name, hook)                                                                         \
	NDB(name, "{\"nodeSelector\":{\"matchLabels\":{\"testselect\":\"test1\"}},"                \
		  "\"maxDisruptedNodes\":2,\"hookV2BasePath\":" hook "}")
/* A Pending request on node1 whose status says ADB default/db prepared for it. */
#define PREPARED(name)                                                                             \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"uid\":\"u-1\"},\"spec\":{\"nodeNames\":[\"node1\"]},\"status\":{" \
	"\"state\":\"Pending\",\"disruptedNodes\":[\"node1\"],\"disruptedDisruptionBudgets\":[{"   \
	"\"reference\":{\"kind\":\"ApplicationDisruptionBudget\",\"namespace\":\"default\","       \
	"\"name\":\"db\"},\"ok\":false,\"reason\":\"\",\"preparing\":true},{\"reference\":{"       \
	"\"kind\":\"ApplicationDisruptionBudget\",\"namespace\":\"default\",\"name\":\"old\"},"    \
	"\"ok\":true,\"reason\":\"\",\"preparing\":true}]}}"

static const struct kube_ndb *find_ndb(const struct kube_snapshot *s, const char *name)
{
	size_t n;
	const struct kube_ndb *b = kube_snapshot_ndbs(s, &n);
	for (size_t i = 0; i < n; i++)
		if (b[i].b.name == ng_test_id(s, name))
			return &b[i];
	fail_msg("no NodeDisruptionBudget %s", name);
	return NULL;
}

static void test_spec_decodes_on_both_kinds_with_its_bounds(void **state)
{
	/* clang-format off */
	struct kube_snapshot *s = cluster(
	    V2_ADB("app", "{\"url\":\"https://mgr.example.com/disruption\"}") ","
	    V2_ADB("tok", "{\"url\":\"https://mgr/\",\"timeoutSeconds\":60,\"tokenSecretRef\":"
			  "{\"namespace\":\"team\",\"name\":\"mgr-token\",\"key\":\"token\"}}") ","
	    V2_ADB("slow", "{\"url\":\"https://mgr/\",\"timeoutSeconds\":61}") ","
	    V2_ADB("badkey", "{\"url\":\"https://mgr/\",\"tokenSecretRef\":"
			     "{\"namespace\":\"team\",\"name\":\"t\",\"key\":\"a/b\"}}") ","
	    V2_NDB("pool", "{\"service\":{\"namespace\":\"ops\",\"name\":\"mgr\"}}"));
	/* clang-format on */
	const struct kube_adb *a = ng_test_adb(s, "app");
	assert_true(a->b.hook2.present);
	assert_false(a->hook.present);
	assert_string_equal(a->b.hook2.url, "https://mgr.example.com/disruption");
	assert_int_equal(a->b.hook2.timeout_s, 30); /* Criteo's 30 s */
	assert_int_equal(a->b.hook2.token_name, NG_INTERN_NONE);
	a = ng_test_adb(s, "tok");
	assert_int_equal(a->b.hook2.error, NG_INTERN_NONE);
	assert_int_equal(a->b.hook2.timeout_s, 60);
	assert_int_equal(a->b.hook2.token_ns, ng_test_id(s, "team"));
	assert_int_equal(a->b.hook2.token_name, ng_test_id(s, "mgr-token"));
	assert_int_equal(a->b.hook2.token_key, ng_test_id(s, "token"));
	static const struct {
		const char *adb, *why;
	} bad[] = {{"slow", "spec.hookV2BasePath.timeoutSeconds: must be 1..60"},
		   {"badkey", "spec.hookV2BasePath.tokenSecretRef.key"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = ng_test_adb(s, bad[i].adb);
		const char *why = ng_intern_str(kube_snapshot_pool(s), a->b.hook2.error, NULL);
		if (!why || !strstr(why, bad[i].why))
			fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].adb, why ? why : "", bad[i].why);
		assert_false(a->b.invalid); /* the budget counts; only its hook fails closed */
	}
	const struct kube_ndb *n = find_ndb(s, "pool");
	assert_true(n->b.hook2.present);
	assert_string_equal(n->b.hook2.url, "https://mgr.ops.svc:443/");
	kube_snapshot_release(s);
}

/* The calls decision @r needs, the request @nd's. */
static struct pol_hook_call *calls_of(struct result *r, const char *nd, size_t *ret_n)
{
	struct kube_hook_policy p;
	pol_hook_policy_from(r->s, &p);
	struct pol_hook_call *calls;
	assert_int_equal(
	    pol_hooks_prepare(r->s, find_nd(r->s, nd), &r->d, &p, r->arena, &calls, ret_n), NG_OK);
	return calls;
}

static void answer(struct pol_hook_call *c, enum pol_hook_result res, long code, int64_t after)
{
	c->result = res;
	c->code = code;
	c->retry_after_s = after;
	ng_fmt(c->message, sizeof(c->message), "HTTP status %ld", code);
}

static void test_prepare_answers(void **state)
{
	const char *objs = V2_ADB("db", "{\"url\":\"https://mgr/\"}") "," ND(
	    "nr", "{\"nodeNames\":[\"node1\"]}") "," ND("nd", "{\"nodeNames\":[\"node1\"],"
							      "\"retry\":{\"enabled\":true}}");
	/* A budget not preparing gets /prepare, and /ready right after it when it answers 200. */
	struct result r = decide(cluster(objs), "nr", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	size_t n;
	struct pol_hook_call *c = calls_of(&r, "nr", &n);
	assert_int_equal(n, 2);
	assert_int_equal(c[0].phase, POL_HOOK_PREPARE);
	assert_int_equal(c[1].phase, POL_HOOK_READY);
	assert_int_equal(c[0].kind, KUBE_RES_ADBS);
	answer(&c[0], POL_HOOK_OK, 200, -1);
	answer(&c[1], POL_HOOK_OK, 200, -1);
	assert_false(pol_hooks_apply(r.s, find_nd(r.s, "nr"), c, n, &r.d, NOW_WALL_MS));
	expect(&r, POL_GATE_GRANT, NULL);
	assert_true(r.d.verdicts[0].preparing);
	assert_non_null(strstr(r.d.verdicts[0].reason, "ready (POST /ready: HTTP status 200)"));
	done(&r);
	/* Prepared, not ready yet: Pending without retry too, asked again at Retry-After. */
	r = decide(cluster(objs), "nr", NULL, NOW_WALL_MS);
	c = calls_of(&r, "nr", &n);
	answer(&c[0], POL_HOOK_OK, 200, -1);
	answer(&c[1], POL_HOOK_LATER, 425, 3);
	assert_true(pol_hooks_apply(r.s, find_nd(r.s, "nr"), c, n, &r.d, NOW_WALL_MS));
	expect(&r, POL_GATE_PENDING, "not ready yet (POST /ready: HTTP status 425)");
	assert_true(r.d.verdicts[0].preparing);
	assert_true(r.d.only_windows); /* waits for the clock, retry or not */
	assert_int_equal(r.d.wake_wall_ms, NOW_WALL_MS + 3000);
	done(&r);
	/* Prepared, /ready not asked (the job stopped): preparing, /ready asked next. */
	r = decide(cluster(objs), "nr", NULL, NOW_WALL_MS);
	c = calls_of(&r, "nr", &n);
	answer(&c[0], POL_HOOK_OK, 200, -1);
	c[1].result = POL_HOOK_CANCELLED;
	assert_true(pol_hooks_apply(r.s, find_nd(r.s, "nr"), c, n, &r.d, NOW_WALL_MS));
	expect(
	    &r, POL_GATE_PENDING,
	    "ApplicationDisruptionBudget default/db: preparing (POST /prepare: HTTP status 200); "
	    "asking /ready next");
	assert_true(r.d.verdicts[0].preparing);
	assert_int_equal(r.d.wake_wall_ms, NOW_WALL_MS + POL_HOOK_NEXT_STEP_MS);
	done(&r);
	/* 424: refused; Rejected without retry, Pending with it; nothing prepared. */
	for (int retry = 0; retry < 2; retry++) {
		r = decide(cluster(objs), retry ? "nd" : "nr", NULL, NOW_WALL_MS);
		c = calls_of(&r, retry ? "nd" : "nr", &n);
		answer(&c[0], POL_HOOK_FAILED, 424, -1);
		c[1].result = POL_HOOK_CANCELLED; /* /ready follows only a 200 */
		assert_true(pol_hooks_apply(r.s, find_nd(r.s, retry ? "nd" : "nr"), c, n, &r.d,
					    NOW_WALL_MS));
		expect(&r, retry ? POL_GATE_PENDING : POL_GATE_REJECT,
		       "refused the disruption: POST /prepare: HTTP status 424");
		assert_false(r.d.verdicts[0].preparing);
		done(&r);
	}
	/* 425 + Retry-After: asked again then, retry or not; beyond an hour, in an hour. */
	static const int64_t after[][2] = {{7, 7000}, {-1, POL_HOOK_AGAIN_MS}, {86400, 3600000}};
	for (size_t i = 0; i < 3; i++) {
		r = decide(cluster(objs), "nr", NULL, NOW_WALL_MS);
		c = calls_of(&r, "nr", &n);
		answer(&c[0], POL_HOOK_LATER, 425, after[i][0]);
		c[1].result = POL_HOOK_CANCELLED;
		assert_true(pol_hooks_apply(r.s, find_nd(r.s, "nr"), c, n, &r.d, NOW_WALL_MS));
		expect(&r, POL_GATE_PENDING,
		       "asks to be asked later (POST /prepare: HTTP status 425)");
		assert_int_equal(r.d.wake_wall_ms, NOW_WALL_MS + after[i][1]);
		assert_false(r.d.verdicts[0].preparing);
		done(&r);
	}
	/* A timeout fails the budget like a failed health hook. */
	r = decide(cluster(objs), "nr", NULL, NOW_WALL_MS);
	c = calls_of(&r, "nr", &n);
	c[0].result = POL_HOOK_TIMEOUT;
	ng_fmt(c[0].message, sizeof(c[0].message), "timeout");
	c[1].result = POL_HOOK_CANCELLED;
	assert_true(pol_hooks_apply(r.s, find_nd(r.s, "nr"), c, n, &r.d, NOW_WALL_MS));
	expect(&r, POL_GATE_REJECT, "cannot prepare the disruption: POST /prepare: timeout");
	done(&r);
}

static void test_ready_answers_after_prepare(void **state)
{
	const char *objs = V2_ADB("db", "{\"url\":\"https://mgr/\"}") "," PREPARED("p");
	struct result r = decide(cluster(objs), "p", NULL, NOW_WALL_MS);
	expect(&r, POL_GATE_GRANT, NULL);
	size_t n;
	struct pol_hook_call *c = calls_of(&r, "p", &n);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].phase, POL_HOOK_READY); /* never /prepare twice */
	answer(&c[0], POL_HOOK_OK, 200, -1);
	assert_false(pol_hooks_apply(r.s, find_nd(r.s, "p"), c, n, &r.d, NOW_WALL_MS));
	expect(&r, POL_GATE_GRANT, NULL);
	assert_non_null(strstr(r.d.verdicts[0].reason, "ready (POST /ready: HTTP status 200)"));
	done(&r);
	/* Not ready (425, or any failure): Pending although the request has no retry. */
	r = decide(cluster(objs), "p", NULL, NOW_WALL_MS);
	c = calls_of(&r, "p", &n);
	answer(&c[0], POL_HOOK_LATER, 425, 2);
	assert_true(pol_hooks_apply(r.s, find_nd(r.s, "p"), c, n, &r.d, NOW_WALL_MS));
	char at[32];
	ng_format_rfc3339_ms(NOW_WALL_MS + 2000, at);
	expect(&r, POL_GATE_PENDING,
	       "not ready yet (POST /ready: HTTP status 425); asked again at");
	assert_non_null(strstr(r.d.reason, at));
	done(&r);
	r = decide(cluster(objs), "p", NULL, NOW_WALL_MS);
	c = calls_of(&r, "p", &n);
	answer(&c[0], POL_HOOK_FAILED, 500, -1);
	assert_true(pol_hooks_apply(r.s, find_nd(r.s, "p"), c, n, &r.d, NOW_WALL_MS));
	expect(&r, POL_GATE_PENDING, "not ready: POST /ready: HTTP status 500");
	assert_int_equal(r.d.wake_wall_ms, NOW_WALL_MS + POL_HOOK_AGAIN_MS);
	done(&r);
}

static void test_health_hooks_come_first_and_both_kinds_are_asked(void **state)
{
	/* clang-format off */
	struct result r = decide(cluster(
	    ADB("db", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},\"maxDisruptions\":1,"
		      "\"healthHook\":{\"url\":\"https://h/\"},\"hookV2BasePath\":{\"url\":\"https://m/\"}}") ","
	    V2_NDB("pool", "{\"url\":\"https://p/\"}") ","
	    ND("nd", ON_TEST1 "}")), "nd", NULL, NOW_WALL_MS);
	/* clang-format on */
	expect(&r, POL_GATE_GRANT, NULL);
	size_t n;
	struct pol_hook_call *c = calls_of(&r, "nd", &n);
	assert_int_equal(n, 5); /* the health hook, then /prepare and /ready of each budget */
	assert_int_equal(c[0].phase, POL_HOOK_HEALTH);
	int kinds = 0;
	for (size_t i = 1; i < 5; i += 2) {
		assert_int_equal(c[i].phase, POL_HOOK_PREPARE);
		assert_int_equal(c[i + 1].phase, POL_HOOK_READY);
		assert_int_equal(c[i + 1].verdict, c[i].verdict);
		kinds |= c[i].kind == KUBE_RES_NDBS ? 1 : 2;
	}
	assert_int_equal(kinds, 3);
	done(&r);
}

static void test_status_keeps_what_budgets_are_owed(void **state)
{
	/* The budget "old" prepared but no longer decides the request: its entry is carried, so
	 * its /terminate is not lost; "db" stays preparing whatever this decision says. */
	struct result r =
	    decide(cluster(V2_ADB("db", "{\"url\":\"https://mgr/\"}") "," PREPARED("p")), "p", NULL,
		   NOW_WALL_MS);
	const struct kube_nd *nd = find_nd(r.s, "p");
	assert_true(pol_hooks_preparing(nd));
	struct ng_buf b;
	ng_buf_init(&b, 1u << 20);
	assert_int_equal(pol_verdicts_json(r.s, r.d.verdicts, r.d.nverdicts, nd, &b), NG_OK);
	cJSON *j = cJSON_ParseWithLength(b.data, b.len);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(j), 2);
	for (int i = 0; i < 2; i++) {
		const cJSON *e = cJSON_GetArrayItem(j, i);
		assert_true(cJSON_IsTrue(ng_json_get(e, "preparing")));
	}
	assert_string_equal(ng_json_str(ng_json_get(cJSON_GetArrayItem(j, 1), "reference"), "name"),
			    "old");
	cJSON_Delete(j);
	ng_buf_finish(&b);
	/* Without the request, nothing is carried and nothing says preparing. */
	ng_buf_init(&b, 1u << 20);
	assert_int_equal(pol_verdicts_json(r.s, r.d.verdicts, r.d.nverdicts, NULL, &b), NG_OK);
	assert_null(strstr(b.data, "preparing"));
	ng_buf_finish(&b);
	done(&r);
}

static void test_body_is_criteos_disruption(void **state)
{
	/* clang-format off */
	struct kube_snapshot *s = cluster(
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"maint\",\"uid\":\"u-42\",\"creationTimestamp\":\"2026-11-18T10:00:00Z\","
	    "\"annotations\":{\"nodegate.io/created-by\":\"bot\"}},\"spec\":{\"nodeNames\":"
	    "[\"node2\",\"node1\"],\"type\":\"reboot\",\"duration\":\"1h30m\",\"retry\":{\"enabled\":"
	    "true,\"deadline\":\"2026-11-18T12:00:00Z\"}}}");
	/* clang-format on */
	const struct kube_nd *nd = find_nd(s, "maint");
	uint32_t nodes[2] = {ng_test_id(s, "node2"), ng_test_id(s, "node1")};
	struct ng_buf b;
	ng_buf_init(&b, 1u << 20);
	assert_int_equal(pol_hook2_body(s, nd, nodes, 2, &b), NG_OK);
	assert_string_equal(b.data,
			    "{\"uid\":\"u-42\",\"name\":\"maint\",\"type\":\"reboot\","
			    "\"nodes\":[\"node1\",\"node2\"],\"createdBy\":\"bot\","
			    "\"creationDate\":\"2026-11-18T10:00:00.000Z\","
			    "\"startDate\":\"0001-01-01T00:00:00.000Z\","
			    "\"deadlineDate\":\"2026-11-18T12:00:00.000Z\",\"duration\":5400}");
	ng_buf_finish(&b);
	kube_snapshot_release(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_spec_decodes_on_both_kinds_with_its_bounds),
	    cmocka_unit_test(test_prepare_answers),
	    cmocka_unit_test(test_ready_answers_after_prepare),
	    cmocka_unit_test(test_health_hooks_come_first_and_both_kinds_are_asked),
	    cmocka_unit_test(test_status_keeps_what_budgets_are_owed),
	    cmocka_unit_test(test_body_is_criteos_disruption),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
