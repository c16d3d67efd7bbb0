/* policy/capi: Cluster API gating's decisions for one Machine (docs/integrations/cluster-api.md):
 * when nodegate's pre-drain hook belongs on it, when a deleted Machine's request is asked for,
 * that the hook goes from a Machine being deleted only with a Granted request (or no node left),
 * which requests are stale, and the names. tests/e2e/test_cluster_api.py runs the same rules
 * against the API server with a Cluster API stand-in. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/buf.h"
#include "common/intern.h"
#include "kube/kube.h"
#include "policy/capi.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <string.h>

struct cluster {
	char json[32 * 1024];
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

/* Nodes w1 (pool=web) and b1 (pool=batch), and an NDB over pool=web. */
static void begin(struct cluster *c)
{
	c->len = 0;
	add(c,
	    "{\"kind\":\"List\",\"items\":["
	    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"w1\",\"labels\":{"
	    "\"pool\":\"web\"}}},"
	    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"b1\",\"labels\":{"
	    "\"pool\":\"batch\"}}},"
	    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruptionBudget\","
	    "\"metadata\":{\"name\":\"web\"},\"spec\":{\"maxDisruptedNodes\":1,\"nodeSelector\":{"
	    "\"matchLabels\":{\"pool\":\"web\"}}}}");
}

/* Machine @name in namespace capi on @node ("" none), @hook: ours on it; @deleting. */
static void machine(struct cluster *c, const char *name, const char *node, bool hook, bool deleting)
{
	add(c,
	    ",{\"apiVersion\":\"cluster.x-k8s.io/v1beta1\",\"kind\":\"Machine\",\"metadata\":{"
	    "\"name\":\"%s\",\"namespace\":\"capi\",\"uid\":\"u-%s\",\"resourceVersion\":\"7\","
	    "\"ownerReferences\":[{\"kind\":\"MachineSet\",\"name\":\"md-0-x\"}],"
	    "\"annotations\":{\"other\":\"1\"%s}%s},\"spec\":{\"clusterName\":\"prod\"},"
	    "\"status\":{%s%s%s}}",
	    name, name,
	    hook ? ",\"pre-drain.delete.hook.machine.cluster.x-k8s.io/nodegate\":\"nodegate\"" : "",
	    deleting ? ",\"deletionTimestamp\":\"2026-11-27T12:00:00Z\"" : "",
	    *node ? "\"nodeRef\":{\"kind\":\"Node\",\"name\":\"" : "", node, *node ? "\"}" : "");
}

/* The request gating asks for Machine capi/@machine, in @phase ("" none) holding @node. */
static void request(struct cluster *c, const char *machine, const char *node, const char *phase,
		    const char *annotation)
{
	char name[POL_CAPI_NAME_CAP];
	pol_capi_request_name("capi", machine, name, sizeof(name));
	add(c,
	    ",{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\",\"metadata\":{"
	    "\"name\":\"%s\",\"uid\":\"nd-%s\",\"labels\":{\"nodegate.io/cluster-api\":\"true\"},"
	    "\"annotations\":{\"nodegate.io/cluster-api-machine\":\"%s\"}},\"spec\":{"
	    "\"nodeNames\":[\"%s\"],\"type\":\"cluster-api\",\"retry\":{\"enabled\":true}}",
	    name, machine, annotation, node);
	/* The node is listed whatever the state: only the state may decide. */
	if (*phase)
		add(c, ",\"status\":{\"state\":\"%s\",\"disruptedNodes\":[\"%s\"]}", phase, node);
	add(c, "}");
}

static struct kube_snapshot *finish(struct cluster *c)
{
	add(c, "]}");
	struct kube_snapshot *s = ng_test_snapshot(c->json);
	assert_non_null(s);
	return s;
}

static const struct kube_machine *find_machine(const struct kube_snapshot *s, const char *name)
{
	size_t n;
	const struct kube_machine *ms = kube_snapshot_machines(s, &n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(ng_intern_str(kube_snapshot_pool(s), ms[i].name, NULL), name) == 0)
			return &ms[i];
	fail_msg("no machine %s", name);
	return NULL;
}

static struct pol_capi_decision decide(const struct kube_snapshot *s, const char *name)
{
	struct pol_capi_decision d;
	pol_capi_decide(s, find_machine(s, name), &d);
	return d;
}

static void test_hook_follows_budget_coverage(void **state)
{
	(void)state;
	struct cluster c;
	begin(&c);
	machine(&c, "web-a", "w1", false, false);   /* covered, no hook: add */
	machine(&c, "web-b", "w1", true, false);    /* covered, hook: keep */
	machine(&c, "batch-a", "b1", false, false); /* not covered: never gets one */
	machine(&c, "batch-b", "b1", true, false);  /* not covered, hook: remove */
	machine(&c, "new", "", false, false);       /* no node yet: nothing */
	struct kube_snapshot *s = finish(&c);
	assert_int_equal(decide(s, "web-a").action, POL_CAPI_ADD_HOOK);
	assert_int_equal(decide(s, "web-b").action, POL_CAPI_NONE);
	assert_int_equal(decide(s, "batch-a").action, POL_CAPI_NONE);
	struct pol_capi_decision d = decide(s, "batch-b");
	assert_int_equal(d.action, POL_CAPI_REMOVE_HOOK);
	assert_false(d.release);
	assert_int_equal(decide(s, "new").action, POL_CAPI_NONE);
	kube_snapshot_release(s);
}

/* An ApplicationDisruptionBudget covers a node by the pods it selects there; an invalid one
 * covers every pod of its namespace. */
static void test_application_budget_covers_the_nodes_of_its_pods(void **state)
{
	(void)state;
	struct cluster c;
	begin(&c);
	add(&c,
	    ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"db-0\","
	    "\"namespace\":\"shop\",\"labels\":{\"app\":\"db\"}},\"spec\":{\"nodeName\":\"b1\"},"
	    "\"status\":{\"phase\":\"Running\"}}");
	machine(&c, "batch-a", "b1", false, false);
	struct kube_snapshot *s = finish(&c);
	assert_int_equal(decide(s, "batch-a").action, POL_CAPI_NONE);
	kube_snapshot_release(s);
	c.len -= 2; /* reopen the list: finish() closed it */
	add(&c,
	    ",{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"ApplicationDisruptionBudget\","
	    "\"metadata\":{\"name\":\"db\",\"namespace\":\"shop\"},\"spec\":{\"maxDisruptions\":1,"
	    "\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}}}}");
	s = finish(&c);
	assert_int_equal(decide(s, "batch-a").action, POL_CAPI_ADD_HOOK);
	kube_snapshot_release(s);
}

/* Being deleted: the request is asked for; the hook stays while it is not Granted, whatever
 * its state, and goes once it is. */
static void test_hook_goes_only_with_a_grant(void **state)
{
	(void)state;
	static const char *const not_granted[] = {"", "Pending", "Rejected"};
	struct cluster c;
	begin(&c);
	machine(&c, "web-a", "w1", true, true);
	struct kube_snapshot *s = finish(&c);
	struct pol_capi_decision d = decide(s, "web-a");
	assert_int_equal(d.action, POL_CAPI_REQUEST);
	assert_string_equal(d.name, "capi-capi.web-a");
	assert_null(d.request);
	kube_snapshot_release(s);
	for (size_t i = 0; i < 3; i++) {
		begin(&c);
		machine(&c, "web-a", "w1", true, true);
		request(&c, "web-a", "w1", not_granted[i], "capi/web-a");
		s = finish(&c);
		d = decide(s, "web-a");
		assert_int_equal(d.action, POL_CAPI_WAIT);
		assert_non_null(d.request);
		kube_snapshot_release(s);
	}
	begin(&c);
	machine(&c, "web-a", "w1", true, true);
	request(&c, "web-a", "w1", "Granted", "capi/web-a");
	s = finish(&c);
	d = decide(s, "web-a");
	assert_int_equal(d.action, POL_CAPI_REMOVE_HOOK);
	assert_true(d.release);
	kube_snapshot_release(s);
}

/* A Machine being deleted never gets the hook, even on a covered node, and one without our hook
 * is left alone; a request of the right name made for another Machine is never read as its. */
static void test_deleted_machines_are_never_hooked_or_misread(void **state)
{
	(void)state;
	struct cluster c;
	begin(&c);
	machine(&c, "web-a", "w1", false, true);
	machine(&c, "web-b", "w1", true, true);
	request(&c, "web-b", "w1", "Granted", "capi/someone-else");
	struct kube_snapshot *s = finish(&c);
	assert_int_equal(decide(s, "web-a").action, POL_CAPI_NONE);
	assert_int_equal(decide(s, "web-b").action, POL_CAPI_WAIT);
	kube_snapshot_release(s);
}

/* A deleted Machine whose node is gone has nothing left to drain: its hook goes (it would keep
 * the Machine forever), and its request is stale. */
static void test_node_gone_releases_and_ends_the_request(void **state)
{
	(void)state;
	struct cluster c;
	begin(&c);
	machine(&c, "gone", "w9", true, true);
	request(&c, "gone", "w9", "Pending", "capi/gone");
	machine(&c, "web-a", "w1", true, true);
	request(&c, "web-a", "w1", "Granted", "capi/web-a");
	request(&c, "vanished", "w1", "Granted", "capi/vanished"); /* its Machine is gone */
	struct kube_snapshot *s = finish(&c);
	struct pol_capi_decision d = decide(s, "gone");
	assert_int_equal(d.action, POL_CAPI_REMOVE_HOOK);
	assert_true(d.release);
	size_t n, stale = 0;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	char names[4][POL_CAPI_NAME_CAP];
	for (size_t i = 0; i < n; i++)
		if (pol_capi_request_stale(s, &nds[i]))
			ng_fmt(names[stale++], POL_CAPI_NAME_CAP, "%s",
			       ng_intern_str(kube_snapshot_pool(s), nds[i].name, NULL));
	assert_int_equal(stale, 2);
	assert_string_equal(names[0], "capi-capi.gone");
	assert_string_equal(names[1], "capi-capi.vanished");
	kube_snapshot_release(s);
}

/* A request that is not gating's (no label, or a name its annotation does not give) is never
 * stale, whatever its annotation says. */
static void test_only_gatings_requests_are_cleaned_up(void **state)
{
	(void)state;
	struct cluster c;
	begin(&c);
	add(&c, ",{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\","
		"\"metadata\":{\"name\":\"maintenance\",\"labels\":{\"nodegate.io/cluster-api\":"
		"\"true\"},\"annotations\":{\"nodegate.io/cluster-api-machine\":\"capi/gone\"}},"
		"\"spec\":{\"nodeNames\":[\"w1\"]}}");
	add(&c, ",{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\","
		"\"metadata\":{\"name\":\"capi-capi.gone\",\"annotations\":{"
		"\"nodegate.io/cluster-api-machine\":\"capi/"
		"gone\"}},\"spec\":{\"nodeNames\":[\"w1\"]}}");
	struct kube_snapshot *s = finish(&c);
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++)
		assert_false(pol_capi_request_stale(s, &nds[i]));
	kube_snapshot_release(s);
}

static void test_names_and_requestor(void **state)
{
	(void)state;
	char first[POL_CAPI_NAME_CAP], second[POL_CAPI_NAME_CAP], longest[300];
	pol_capi_request_name("default", "md-0-abc", first, sizeof(first));
	assert_string_equal(first, "capi-default.md-0-abc");
	memset(longest, 'a', 252);
	longest[252] = '\0';
	pol_capi_request_name("default", longest, first, sizeof(first));
	longest[251] = 'b';
	pol_capi_request_name("default", longest, second, sizeof(second));
	assert_true(strlen(first) <= 253);
	assert_string_not_equal(first, second);
	struct cluster c;
	begin(&c);
	machine(&c, "web-a", "w1", false, false);
	add(&c, ",{\"apiVersion\":\"cluster.x-k8s.io/v1beta1\",\"kind\":\"Machine\",\"metadata\":{"
		"\"name\":\"Orphan_1\",\"namespace\":\"capi\"}}");
	struct kube_snapshot *s = finish(&c);
	char r[254];
	pol_capi_requestor(s, find_machine(s, "web-a"), r, sizeof(r));
	assert_string_equal(r, "machineset.capi.md-0-x");
	pol_capi_requestor(s, find_machine(s, "Orphan_1"), r, sizeof(r));
	assert_string_equal(r, "machine.capi.orphan-1");
	kube_snapshot_release(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hook_follows_budget_coverage),
	    cmocka_unit_test(test_application_budget_covers_the_nodes_of_its_pods),
	    cmocka_unit_test(test_hook_goes_only_with_a_grant),
	    cmocka_unit_test(test_deleted_machines_are_never_hooked_or_misread),
	    cmocka_unit_test(test_node_gone_releases_and_ends_the_request),
	    cmocka_unit_test(test_only_gatings_requests_are_cleaned_up),
	    cmocka_unit_test(test_names_and_requestor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
