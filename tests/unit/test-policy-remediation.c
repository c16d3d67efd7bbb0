/* policy/remediation: the plan of a NodeRemediation over a snapshot (docs/remediation.md), one
 * rule at a time: forSeconds, maxConcurrent, the storm guard, the cooldown, the requests'
 * lifecycle, deletion, a missing template; and the requests' names. The end-to-end scenarios
 * R201-R210 (tests/e2e/test_remediation.py) run the same rules against the API server. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/intern.h"
#include "policy/remediation.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 2026-11-27T12:00:00Z */
#define NOW 1795780800000LL
#define MIN 60000LL

/* The test's cluster, as JSON built item by item. */
struct cluster {
	char json[64 * 1024];
	size_t len;
};

static void add(struct cluster *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	c->len += (size_t)vsnprintf(c->json + c->len, sizeof(c->json) - c->len, fmt, ap);
	va_end(ap);
	assert_true(c->len < sizeof(c->json));
}

static void begin(struct cluster *c)
{
	c->len = 0;
	add(c, "{\"kind\":\"List\",\"items\":[{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":"
	       "\"NodeDisruptionTemplate\",\"metadata\":{\"name\":\"reboot\"},\"spec\":{\"type\":"
	       "\"reboot\",\"retry\":{\"enabled\":true}}}");
}

/* A pool node; @since_min_ago >= 0 gives it example.com/Sick=True since then, < 0 healthy. */
static void node(struct cluster *c, const char *name, int since_min_ago)
{
	add(c,
	    ",{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
	    "\"pool\":\"w\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}",
	    name);
	if (since_min_ago >= 0) {
		time_t t = (time_t)((NOW - since_min_ago * MIN) / 1000);
		struct tm tm;
		char iso[32];
		(void)gmtime_r(&t, &tm);
		(void)strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
		add(c,
		    ",{\"type\":\"example.com/"
		    "Sick\",\"status\":\"True\",\"lastTransitionTime\":\"%s\"}",
		    iso);
	}
	add(c, "]}}");
}

/* A request of remediation "fix" for @node: @state "" for none yet, @phase the drainer's
 * Ready reason or NULL. */
static void request(struct cluster *c, const char *node, const char *state, const char *phase)
{
	add(c,
	    ",{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\",\"metadata\":"
	    "{\"name\":\"fix-%s\",\"uid\":\"uid-%s\",\"labels\":{\"nodegate.io/remediation\":"
	    "\"fix\"}},\"spec\":{\"nodeNames\":[\"%s\"],\"type\":\"reboot\"},\"status\":{",
	    node, node, node);
	if (*state)
		add(c, "\"state\":\"%s\"", state);
	if (phase)
		add(c,
		    "%s\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"%s\"}]",
		    *state ? "," : "", phase);
	add(c, "}}");
}

/* The NodeRemediation "fix": forSeconds 300 on example.com/Sick=True; @extra_spec and
 * @extra_top (",\"status\":{...}" or metadata) spliced in. */
static void remediation(struct cluster *c, const char *extra_spec, const char *extra_meta,
			const char *status)
{
	add(c,
	    ",{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeRemediation\",\"metadata\":"
	    "{\"name\":\"fix\",\"uid\":\"uid-fix\"%s},\"spec\":{\"nodeSelector\":{\"matchLabels\":"
	    "{\"pool\":\"w\"}},\"rule\":{\"conditions\":[{\"type\":\"example.com/Sick\",\"status\":"
	    "\"True\",\"forSeconds\":300}]},\"templateName\":\"reboot\"%s}%s}",
	    extra_meta, extra_spec, status);
}

struct fixture {
	struct kube_snapshot *s;
	struct ng_arena *a;
	struct pol_rem_plan p;
};

static void plan(struct fixture *f, struct cluster *c)
{
	add(c, "]}");
	f->s = ng_test_snapshot(c->json);
	assert_non_null(f->s);
	f->a = ng_arena_create(1u << 20);
	size_t n;
	const struct kube_nrem *r = kube_snapshot_nrems(f->s, &n);
	assert_int_equal(n, 1);
	if (r->invalid)
		fail_msg("invalid: %s", ng_intern_str(kube_snapshot_pool(f->s), r->error, NULL));
	assert_int_equal(pol_remediation_plan(f->s, r, NOW, f->a, &f->p), NG_OK);
}

static void done(struct fixture *f)
{
	ng_arena_destroy(f->a);
	kube_snapshot_release(f->s);
}

/* The action planned for @name; fails when the node is not in the plan. */
static enum pol_rem_action action(const struct fixture *f, const char *name)
{
	const struct ng_intern *pool = kube_snapshot_pool(f->s);
	for (size_t i = 0; i < f->p.n; i++)
		if (strcmp(ng_intern_str(pool, f->p.nodes[i].node, NULL), name) == 0)
			return f->p.nodes[i].action;
	fail_msg("node %s is not in the plan", name);
	return POL_REM_ACTIVE;
}

static const char *reason(const struct fixture *f, const char *name)
{
	const struct ng_intern *pool = kube_snapshot_pool(f->s);
	for (size_t i = 0; i < f->p.n; i++)
		if (strcmp(ng_intern_str(pool, f->p.nodes[i].node, NULL), name) == 0)
			return f->p.nodes[i].reason;
	return "";
}

static bool in_plan(const struct fixture *f, const char *name)
{
	const struct ng_intern *pool = kube_snapshot_pool(f->s);
	for (size_t i = 0; i < f->p.n; i++)
		if (strcmp(ng_intern_str(pool, f->p.nodes[i].node, NULL), name) == 0)
			return true;
	return false;
}

/* R201: held for less than forSeconds starts nothing and says when; long enough, one request. */
static void test_for_seconds(void **state)
{
	(void)state;
	struct cluster c;
	struct fixture f;
	begin(&c);
	node(&c, "young", 2); /* 2 of 5 minutes */
	node(&c, "old", 6);
	node(&c, "well", -1);
	remediation(&c, "", "", "");
	plan(&f, &c);
	assert_int_equal(f.p.matched, 3);
	assert_int_equal(f.p.unhealthy, 2);
	assert_int_equal(action(&f, "young"), POL_REM_WAIT_FOR);
	assert_non_null(strstr(reason(&f, "young"), "due at 2026-11-27T12:03:00.000Z"));
	assert_int_equal(f.p.next_ms, NOW + 3 * MIN);
	assert_int_equal(action(&f, "old"), POL_REM_CREATE);
	assert_false(in_plan(&f, "well"));
	done(&f);
}

/* A node without the condition, or with another status, is healthy; every condition of the
 * rule must hold. */
static void test_every_condition_must_hold(void **state)
{
	(void)state;
	struct cluster c;
	struct fixture f;
	begin(&c);
	node(&c, "sick", 10);
	remediation(&c, "", "", "");
	/* A second condition the node does not have. */
	char *at = strstr(c.json, "\"forSeconds\":300}");
	assert_non_null(at);
	char tail[4096];
	(void)snprintf(tail, sizeof(tail), "%s", at + strlen("\"forSeconds\":300}"));
	c.len = (size_t)(at - c.json);
	add(&c, "\"forSeconds\":300},{\"type\":\"Ready\",\"status\":\"Unknown\"}%s", tail);
	plan(&f, &c);
	assert_int_equal(f.p.unhealthy, 0);
	assert_int_equal(f.p.n, 0);
	done(&f);
}

/* R202: three due nodes and maxConcurrent 1: the earliest first, the others wait. */
static void test_max_concurrent(void **state)
{
	(void)state;
	struct cluster c;
	struct fixture f;
	begin(&c);
	node(&c, "b", 20);
	node(&c, "a", 30);
	node(&c, "c", 10);
	remediation(&c, ",\"maxConcurrent\":1", "", "");
	plan(&f, &c);
	assert_int_equal(action(&f, "a"), POL_REM_CREATE);
	assert_int_equal(action(&f, "b"), POL_REM_MAX);
	assert_int_equal(action(&f, "c"), POL_REM_MAX);
	assert_non_null(strstr(reason(&f, "b"), "maxConcurrent 1 reached"));
	done(&f);

	/* a's request is open (Granted, draining): nothing new. */
	begin(&c);
	node(&c, "b", 20);
	node(&c, "a", 30);
	node(&c, "c", 10);
	request(&c, "a", "Granted", "Draining");
	remediation(&c, ",\"maxConcurrent\":1", "", "");
	plan(&f, &c);
	assert_int_equal(action(&f, "a"), POL_REM_ACTIVE);
	assert_int_equal(action(&f, "b"), POL_REM_MAX);
	assert_int_equal(action(&f, "c"), POL_REM_MAX);
	assert_int_equal(f.p.open, 1);
	done(&f);

	/* A Rejected request does not count: the next node goes. */
	begin(&c);
	node(&c, "b", 20);
	node(&c, "a", 30);
	request(&c, "a", "Rejected", NULL);
	remediation(&c, ",\"maxConcurrent\":\"50%\"", "", "");
	plan(&f, &c);
	assert_int_equal(f.p.max_concurrent, 1);
	assert_int_equal(action(&f, "a"), POL_REM_REJECTED);
	assert_int_equal(action(&f, "b"), POL_REM_CREATE);
	done(&f);
}

/* R203: more unhealthy pool nodes than stormGuard.maxUnhealthy start nothing. */
static void test_storm_guard(void **state)
{
	(void)state;
	struct cluster c;
	struct fixture f;
	begin(&c);
	node(&c, "n1", 10);
	node(&c, "n2", 10);
	node(&c, "n3", 10);
	node(&c, "n4", 1); /* unhealthy, though not due: it counts */
	node(&c, "n5", -1);
	remediation(&c, ",\"maxConcurrent\":5,\"stormGuard\":{\"maxUnhealthy\":\"40%\"}", "", "");
	plan(&f, &c);
	assert_int_equal(f.p.max_unhealthy, 2);
	assert_int_equal(f.p.unhealthy, 4);
	assert_true(f.p.storm);
	assert_int_equal(action(&f, "n1"), POL_REM_STORM);
	assert_int_equal(action(&f, "n4"), POL_REM_WAIT_FOR);
	assert_non_null(strstr(reason(&f, "n2"), "storm: 4 pool nodes unhealthy"));
	done(&f);

	/* At the limit, not above it: repairs start. */
	begin(&c);
	node(&c, "n1", 10);
	node(&c, "n2", 10);
	node(&c, "n3", -1);
	remediation(&c, ",\"maxConcurrent\":5,\"stormGuard\":{\"maxUnhealthy\":2}", "", "");
	plan(&f, &c);
	assert_false(f.p.storm);
	assert_int_equal(action(&f, "n1"), POL_REM_CREATE);
	assert_int_equal(action(&f, "n2"), POL_REM_CREATE);
	done(&f);
}

/* R204: unhealthy again within cooldownSeconds of its repair is a loop, reported. */
static void test_cooldown(void **state)
{
	(void)state;
	struct cluster c;
	struct fixture f;
	static const char status[] =
	    ",\"status\":{\"lastRemediated\":[{\"node\":\"again\",\"time\":\"2026-11-27T11:50:"
	    "00Z\","
	    "\"request\":\"fix-again\",\"uid\":\"u1\"},{\"node\":\"later\",\"time\":"
	    "\"2026-11-27T10:00:00Z\",\"request\":\"fix-later\",\"uid\":\"u2\"}]}";
	begin(&c);
	node(&c, "again", 6);
	node(&c, "later", 6);
	remediation(&c, ",\"maxConcurrent\":5,\"cooldownSeconds\":3600", "", status);
	plan(&f, &c);
	assert_int_equal(action(&f, "again"), POL_REM_COOLDOWN);
	assert_int_equal(f.p.loops, 1);
	assert_non_null(strstr(reason(&f, "again"), "a loop"));
	assert_int_equal(f.p.next_ms, NOW + 50 * MIN);
	assert_int_equal(action(&f, "later"), POL_REM_CREATE); /* repaired 2 h ago */
	done(&f);
}

/* A request's life: Completed on a healthy node is done; Completed while still sick stays;
 * not yet granted on a node healthy again is dropped. */
static void test_request_lifecycle(void **state)
{
	(void)state;
	struct cluster c;
	struct fixture f;
	begin(&c);
	node(&c, "fixed", -1);
	node(&c, "stuck", 30);
	node(&c, "recovered", -1);
	node(&c, "running", 30);
	node(&c, "drained", -1);
	request(&c, "fixed", "Granted", "Completed");
	request(&c, "drained", "Granted", "Drained"); /* no operation: Drained is its end */
	request(&c, "stuck", "Granted", "Completed");
	request(&c, "recovered", "Pending", NULL);
	request(&c, "running", "Granted", "Operating");
	remediation(&c, ",\"maxConcurrent\":10", "", "");
	plan(&f, &c);
	assert_int_equal(action(&f, "fixed"), POL_REM_DONE);
	assert_int_equal(action(&f, "stuck"), POL_REM_ACTIVE);
	assert_non_null(strstr(reason(&f, "stuck"), "conditions still hold"));
	assert_int_equal(action(&f, "recovered"), POL_REM_DELETE);
	assert_int_equal(action(&f, "running"), POL_REM_ACTIVE);
	assert_int_equal(action(&f, "drained"), POL_REM_DONE);
	done(&f);

	/* A rule condition Unknown (a rebooting node's problem detector not reporting yet) ends
	 * nothing and starts nothing. */
	begin(&c);
	node(&c, "rebooted", -1);
	node(&c, "quiet", -1);
	request(&c, "rebooted", "Granted", "Completed");
	remediation(&c, ",\"maxConcurrent\":10", "", "");
	add(&c, "]}");
	char *json = strdup(c.json);
	c.len = 0;
	/* Both nodes report example.com/Sick=Unknown. */
	static const char ready[] = "{\"type\":\"Ready\",\"status\":\"True\"}]";
	for (char *p = json; *p; p++) {
		if (strncmp(p, ready, strlen(ready)) == 0) {
			add(&c, "{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":"
				"\"example.com/Sick\",\"status\":\"Unknown\"}]");
			p += strlen(ready) - 1;
		} else {
			add(&c, "%c", *p);
		}
	}
	free(json);
	c.len -= 2; /* plan() closes the list */
	plan(&f, &c);
	assert_int_equal(action(&f, "rebooted"), POL_REM_ACTIVE);
	assert_non_null(strstr(reason(&f, "rebooted"), "Unknown"));
	assert_false(in_plan(&f, "quiet") && action(&f, "quiet") == POL_REM_CREATE);
	assert_int_equal(f.p.unhealthy, 0);
	done(&f);
}

/* R205: a remediation being deleted starts nothing, drops what is not running and lets the
 * running request finish. */
static void test_deletion(void **state)
{
	(void)state;
	struct cluster c;
	struct fixture f;
	begin(&c);
	node(&c, "running", 30);
	node(&c, "waiting", 30);
	node(&c, "pending", 30);
	node(&c, "finished", 30);
	request(&c, "running", "Granted", "Operating");
	request(&c, "pending", "Pending", NULL);
	request(&c, "finished", "Granted", "Completed");
	remediation(&c, ",\"maxConcurrent\":10",
		    ",\"deletionTimestamp\":\"2026-11-27T11:59:00Z\",\"finalizers\":["
		    "\"nodegate.io/remediation\"]",
		    "");
	plan(&f, &c);
	assert_int_equal(action(&f, "running"), POL_REM_ACTIVE);
	assert_int_equal(action(&f, "waiting"), POL_REM_DELETING);
	assert_int_equal(action(&f, "pending"), POL_REM_DELETE);
	assert_int_equal(action(&f, "finished"), POL_REM_DELETE);
	done(&f);
}

/* R206: without its template nothing starts, and the plan says which template is missing. */
static void test_missing_template(void **state)
{
	(void)state;
	struct cluster c;
	struct fixture f;
	begin(&c);
	node(&c, "sick", 30);
	remediation(&c, "", "", "");
	char *t = strstr(c.json, "\"templateName\":\"reboot\"");
	assert_non_null(t);
	memcpy(t, "\"templateName\":\"reboo2\"", strlen("\"templateName\":\"reboo2\""));
	plan(&f, &c);
	assert_null(f.p.tmpl);
	assert_string_equal(f.p.problem, "NodeDisruptionTemplate reboo2 not found");
	assert_int_equal(action(&f, "sick"), POL_REM_NO_TEMPLATE);
	done(&f);
}

/* Names are DNS subdomains of at most 253 characters, distinct per remediation and node. */
static void test_request_names(void **state)
{
	(void)state;
	char a[254], b[254], node[260];
	pol_remediation_request_name("fix", "node-1", a, sizeof(a));
	assert_string_equal(a, "fix-node-1");
	memset(node, 'n', 250);
	node[250] = '\0';
	node[200] = '.';
	pol_remediation_request_name("fix", node, a, sizeof(a));
	node[10] = 'm';
	pol_remediation_request_name("fix", node, b, sizeof(b));
	assert_true(strlen(a) <= 253 && strlen(b) <= 253);
	assert_string_not_equal(a, b);
	assert_memory_equal(a, "fix-nnnn", 8);
	pol_request_name("auto-", node, a, sizeof(a));
	assert_true(strlen(a) <= 253);
	assert_memory_equal(a, "auto-", 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_for_seconds),    cmocka_unit_test(test_every_condition_must_hold),
	    cmocka_unit_test(test_max_concurrent), cmocka_unit_test(test_storm_guard),
	    cmocka_unit_test(test_cooldown),       cmocka_unit_test(test_request_lifecycle),
	    cmocka_unit_test(test_deletion),       cmocka_unit_test(test_missing_template),
	    cmocka_unit_test(test_request_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
