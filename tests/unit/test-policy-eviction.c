/* policy/eviction: the eviction decision of DESIGN.md §5 on fixture F
 * (shared/acceptance/eviction.md E01-E06, E09, E10). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "policy/policy.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fixture F plus: a DaemonSet pod and a mirror pod on node1, an unprotected pod, a pod
 * protected only through a PVC, a finished and a terminating protected pod, an unscheduled
 * one. */
static char *fixture(const char *extra)
{
	static const char more[] =
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"ds\",\"namespace\":"
	    "\"default\",\"labels\":{\"app\":\"db\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\","
	    "\"name\":\"d\",\"controller\":true}]},\"spec\":{\"nodeName\":\"node1\"}},"
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"mirror\","
	    "\"namespace\":\"default\",\"labels\":{\"app\":\"db\"},\"annotations\":{"
	    "\"kubernetes.io/config.mirror\":\"x\"}},\"spec\":{\"nodeName\":\"node1\"}},"
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web\",\"namespace\":"
	    "\"default\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"nodeName\":\"node1\"}},"
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"done\",\"namespace\":"
	    "\"default\",\"labels\":{\"app\":\"db\"}},\"spec\":{\"nodeName\":\"node1\"},\"status\":"
	    "{\"phase\":\"Failed\"}},"
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"going\","
	    "\"namespace\":"
	    "\"default\",\"labels\":{\"app\":\"db\"},\"deletionTimestamp\":\"2026-01-01T00:00:"
	    "00Z\"}"
	    ",\"spec\":{\"nodeName\":\"node1\"}},"
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"nowhere\","
	    "\"namespace\":\"default\",\"labels\":{\"app\":\"db\"}},\"spec\":{}},"
	    "{\"kind\":\"PersistentVolumeClaim\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
	    "\"cache-data\",\"namespace\":\"default\",\"labels\":{\"tier\":\"cache\"}},\"spec\":{"
	    "\"volumeName\":\"node2-pv-local\"},\"status\":{\"phase\":\"Bound\"}},"
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"cache-0\","
	    "\"namespace\":\"default\",\"labels\":{\"app\":\"cache\"}},\"spec\":{\"nodeName\":"
	    "\"node2\",\"volumes\":[{\"name\":\"d\",\"persistentVolumeClaim\":{\"claimName\":"
	    "\"cache-data\"}}]}},"
	    "{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"cache\",\"namespace\":\"default\"},\"spec\":{\"pvcSelector\":"
	    "{\"matchLabels\":{\"tier\":\"cache\"}},\"maxDisruptions\":1}}";
	size_t n = strlen(ng_fixture_f) + sizeof(more) + strlen(extra) + 8;
	char *buf = malloc(n);
	/* Splice before the closing "]}" of fixture F. */
	size_t base = strlen(ng_fixture_f) - 2;
	memcpy(buf, ng_fixture_f, base);
	(void)snprintf(buf + base, n - base, ",%s%s%s]}", more, *extra ? "," : "", extra);
	return buf;
}

static struct kube_snapshot *snap(const char *extra)
{
	char *json = fixture(extra);
	struct kube_snapshot *s = ng_test_snapshot(json);
	free(json);
	return s;
}

static const struct pol_eviction_config enforce = {.mode = POL_EVICTION_ENFORCE,
						   .retry_after_seconds = 10};

static struct pol_decision decide(const struct kube_snapshot *s,
				  const struct pol_eviction_config *cfg, const char *ns,
				  const char *name, const char *user)
{
	struct pol_eviction_request r = {.ns = ns,
					 .ns_len = strlen(ns),
					 .name = name,
					 .name_len = strlen(name),
					 .username = user};
	struct pol_decision d;
	memset(&d, 0xad, sizeof(d));
	pol_decide_eviction(s, cfg, &r, &d);
	return d;
}

/* 2026-11-27T12:00:00Z, and a pod started @min minutes before it on node2 with @annotation. */
#define DND_NOW 1795780800000LL
#define DND_POD(name, annotation, started)                                                         \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "\","             \
	"\"namespace\":\"default\",\"annotations\":{\"nodegate.io/do-not-disrupt\":\"" annotation  \
	"\"}},\"spec\":{\"nodeName\":\"node2\"},\"status\":{\"phase\":\"Running\","                \
	"\"startTime\":\"" started "\"}}"

static struct pol_decision decide_at(const struct kube_snapshot *s, const char *name,
				     int64_t now_wall_ms)
{
	struct pol_eviction_request r = {.ns = "default",
					 .ns_len = 7,
					 .name = name,
					 .name_len = strlen(name),
					 .username = "alice",
					 .now_wall_ms = now_wall_ms};
	struct pol_decision d;
	pol_decide_eviction(s, &enforce, &r, &d);
	return d;
}

/* N01: a pod annotated nodegate.io/do-not-disrupt is not evicted, budget or not; a duration
 * counts from the pod's start; "false" is no annotation; an unreadable value protects. */
static void test_N01_do_not_disrupt_pod_is_not_evicted_for_its_duration(void **state)
{
	(void)state;
	struct kube_snapshot *s = snap(
	    DND_POD("always", "true", "2026-11-27T08:00:00Z") "," DND_POD("fresh", "30m", "2026-11-27T11:45:00Z") "," DND_POD(
		"stale", "30m",
		"2026-11-27T11:15:00Z") "," DND_POD("off", "false",
						    "2026-11-27T11:59:00Z") "," DND_POD("typo",
											"30 "
											"minutes",
											"2026-11-"
											"27T08:00:"
											"00Z"));
	struct pol_decision d = decide_at(s, "always", DND_NOW);
	assert_false(d.allowed);
	assert_int_equal(d.code, 429);
	assert_int_equal(d.reason, POL_R_DO_NOT_DISRUPT);
	assert_string_equal(pol_reason_str(d.reason), "do-not-disrupt");
	assert_non_null(
	    strstr(d.message, "pod default/always: the pod has nodegate.io/do-not-disrupt"));
	/* Started 15 minutes ago: protected until 12:15, and not after. */
	d = decide_at(s, "fresh", DND_NOW);
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "until 2026-11-27T12:15:00.000Z"));
	d = decide_at(s, "fresh", DND_NOW + 15 * 60000);
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_UNPROTECTED);
	assert_true(decide_at(s, "stale", DND_NOW).allowed);
	assert_true(decide_at(s, "off", DND_NOW).allowed);
	d = decide_at(s, "typo", DND_NOW);
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "protects until fixed"));
	kube_snapshot_release(s);
}

/* N02: a node annotated do-not-disrupt protects every pod on it; only a grant of a
 * doNotDisruptOverrideTypes type lets them go. */
static void test_N02_only_an_override_type_grant_lets_them_go(void **state)
{
	(void)state;
	static const char node_dnd[] =
	    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node3\","
	    "\"annotations\":{\"nodegate.io/do-not-disrupt\":\"true\"}}},"
	    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"plain\","
	    "\"namespace\":\"default\"},\"spec\":{\"nodeName\":\"node3\"}},"
	    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"default\"},\"spec\":{\"doNotDisruptOverrideTypes\":[\"emergency\"]}}";
	static const char routine[] =
	    ",{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"r\"},\"spec\":{\"nodeNames\":[\"node3\",\"node2\"],\"type\":"
	    "\"routine\"},\"status\":{\"state\":\"Granted\",\"disruptedNodes\":[\"node2\","
	    "\"node3\"]}}";
	static const char emergency[] =
	    ",{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"e\"},\"spec\":{\"nodeNames\":[\"node3\",\"node2\"],\"type\":"
	    "\"emergency\"},\"status\":{\"state\":\"Granted\",\"disruptedNodes\":[\"node2\","
	    "\"node3\"]}}";
	char buf[4096];
	(void)snprintf(buf, sizeof(buf), "%s,%s%s", node_dnd,
		       DND_POD("always", "true", "2026-11-27T08:00:00Z"), routine);
	struct kube_snapshot *s = snap(buf);
	struct pol_decision d = decide_at(s, "plain", DND_NOW);
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "node node3 has nodegate.io/do-not-disrupt"));
	assert_false(decide_at(s, "always", DND_NOW).allowed); /* granted, but routine */
	kube_snapshot_release(s);
	(void)snprintf(buf, sizeof(buf), "%s,%s%s", node_dnd,
		       DND_POD("always", "true", "2026-11-27T08:00:00Z"), emergency);
	s = snap(buf);
	d = decide_at(s, "plain", DND_NOW);
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_GRANTED);
	assert_true(decide_at(s, "always", DND_NOW).allowed);
	kube_snapshot_release(s);
}

static void test_E01_denied_without_grant(void **state)
{
	struct kube_snapshot *s = snap("");
	struct pol_decision d = decide(s, &enforce, "default", "pod1", "alice");
	assert_false(d.allowed);
	assert_int_equal(d.code, 429);
	assert_int_equal(d.reason, POL_R_PROTECTED);
	assert_int_equal(d.retry_after_seconds, 10);
	assert_non_null(strstr(d.message, "node1"));
	assert_non_null(strstr(d.message, "default/db"));
	assert_non_null(strstr(d.message, "NodeDisruption"));
	assert_string_equal(d.node, "node1");
	assert_string_equal(d.warning, "");
	kube_snapshot_release(s);
}

static void test_E02_allowed_when_node_granted(void **state)
{
	struct kube_snapshot *s = snap(
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"nd1\"},\"spec\":{\"nodeNames\":[\"node1\"]},\"status\":{\"state\":"
	    "\"Granted\",\"disruptedNodes\":[\"node1\"]}}");
	struct pol_decision d = decide(s, &enforce, "default", "pod1", "alice");
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_GRANTED);
	kube_snapshot_release(s);
}

static void test_E02_pending_or_rejected_request_does_not_allow(void **state)
{
	struct kube_snapshot *s = snap(
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"nd1\"},\"spec\":{\"nodeNames\":[\"node1\"]},\"status\":{\"state\":"
	    "\"Pending\",\"disruptedNodes\":[\"node1\"]}},"
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"nd2\"},\"spec\":{\"nodeNames\":[\"node1\"]},\"status\":{\"state\":"
	    "\"Rejected\",\"disruptedNodes\":[\"node1\"]}},"
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"nd3\"},\"spec\":{\"nodeNames\":[\"node2\"]},\"status\":{\"state\":"
	    "\"Granted\",\"disruptedNodes\":[\"node2\"]}}");
	struct pol_decision d = decide(s, &enforce, "default", "pod1", "alice");
	assert_false(d.allowed);
	assert_int_equal(d.code, 429);
	kube_snapshot_release(s);
}

static void test_E03_unprotected_pod_allowed(void **state)
{
	struct kube_snapshot *s = snap("");
	struct pol_decision d = decide(s, &enforce, "default", "web", "alice");
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_UNPROTECTED);
	assert_string_equal(d.message, "");
	kube_snapshot_release(s);
}

static void test_E04_daemonset_and_mirror_pods_allowed(void **state)
{
	struct kube_snapshot *s = snap("");
	struct pol_decision d = decide(s, &enforce, "default", "ds", "alice");
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_DAEMONSET);
	d = decide(s, &enforce, "default", "mirror", "alice");
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_MIRROR);
	kube_snapshot_release(s);
}

static void test_E05_unknown_pod_allowed(void **state)
{
	struct kube_snapshot *s = snap("");
	struct pol_decision d = decide(s, &enforce, "default", "ghost", "alice");
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_UNKNOWN_POD);
	d = decide(s, &enforce, "elsewhere", "pod1", "alice");
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_UNKNOWN_POD);
	kube_snapshot_release(s);
}

static void test_E06_warn_mode_allows_with_warning(void **state)
{
	struct kube_snapshot *s = snap("");
	struct pol_eviction_config warn = {.mode = POL_EVICTION_WARN, .retry_after_seconds = 10};
	struct pol_decision d = decide(s, &warn, "default", "pod1", "alice");
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_PROTECTED);
	assert_non_null(strstr(d.warning, "default/db"));
	assert_non_null(strstr(d.warning, "node1"));
	kube_snapshot_release(s);
}

static void test_E09_exempt_user_allowed(void **state)
{
	struct kube_snapshot *s = snap("");
	const char *users[] = {"system:serviceaccount:kube-system:cluster-autoscaler"};
	struct pol_eviction_config cfg = {.mode = POL_EVICTION_ENFORCE,
					  .exempt_users = users,
					  .nexempt = 1,
					  .retry_after_seconds = 10};
	struct pol_decision d = decide(s, &cfg, "default", "pod1",
				       "system:serviceaccount:kube-system:cluster-autoscaler");
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_EXEMPT);
	/* An exact entry: a prefix of it is not an exemption. */
	d = decide(s, &cfg, "default", "pod1", "system:serviceaccount:kube-system:cluster");
	assert_false(d.allowed);
	d = decide(s, &cfg, "default", "pod1", NULL);
	assert_false(d.allowed);
	kube_snapshot_release(s);
}

/* exemptUsers entries against a requester's username and groups: exact names, a trailing '*'
 * as a prefix, '*' elsewhere an ordinary character, "*" alone and "" matching no one. */
static const struct exempt_case {
	const char *entry, *user, *groups[3];
	bool exempt;
} exempt_cases[] = {
    {"system:serviceaccount:kube-system:descheduler",
     "system:serviceaccount:kube-system:descheduler",
     {NULL},
     true},
    {"system:serviceaccounts:kube-system",
     "system:serviceaccount:kube-system:descheduler",
     {"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
     true},
    {"system:serviceaccounts:kube-system",
     "system:serviceaccount:default:app",
     {"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"},
     false},
    {"system:serviceaccount:kube-system:*",
     "system:serviceaccount:kube-system:vpa-updater",
     {"system:authenticated"},
     true},
    /* The prefix is what precedes the '*', whole: no namespace "kube-system-2". */
    {"system:serviceaccount:kube-system:*", "system:serviceaccount:kube-system-2:x", {NULL}, false},
    {"system:serviceaccount:kube-system:*", "system:serviceaccount:kube-system:", {NULL}, true},
    {"vpa-*", "alice", {"vpa-updaters"}, true},
    {"vpa-*", "alice", {"vp"}, false},
    /* Exact entries stay exact: neither a prefix nor an extension of the name matches. */
    {"system:serviceaccount:kube-system:cluster-autoscaler",
     "system:serviceaccount:kube-system:cluster",
     {NULL},
     false},
    {"system:serviceaccount:kube-system:cluster",
     "system:serviceaccount:kube-system:cluster-autoscaler",
     {NULL},
     false},
    /* A '*' not at the end is an ordinary character. */
    {"ops*admin", "ops-admin", {NULL}, false},
    {"ops*admin", "ops*admin", {NULL}, true},
    {"*", "alice", {"system:authenticated"}, false},
    {"", "", {""}, false},
    {"alice", NULL, {"alice"}, true},
    {"alice", NULL, {NULL}, false},
};

static size_t ngroups(const struct exempt_case *c)
{
	size_t n = 0;
	while (n < 3 && c->groups[n])
		n++;
	return n;
}

static void test_E09_exempt_entries_match_user_or_group(void **state)
{
	(void)state;
	struct kube_snapshot *s = snap("");
	for (size_t i = 0; i < sizeof(exempt_cases) / sizeof(exempt_cases[0]); i++) {
		const struct exempt_case *c = &exempt_cases[i];
		const char *users[] = {c->entry};
		struct pol_eviction_config cfg = {.mode = POL_EVICTION_ENFORCE,
						  .exempt_users = users,
						  .nexempt = 1,
						  .retry_after_seconds = 10};
		struct pol_eviction_request r = {.ns = "default",
						 .ns_len = 7,
						 .name = "pod1",
						 .name_len = 4,
						 .username = c->user,
						 .groups = c->groups,
						 .ngroups = ngroups(c)};
		struct pol_decision d;
		pol_decide_eviction(s, &cfg, &r, &d);
		if (d.allowed != c->exempt)
			fail_msg("case %zu: entry \"%s\", user \"%s\": exempt %d, want %d", i,
				 c->entry, c->user ? c->user : "(none)", d.allowed, c->exempt);
		if (c->exempt)
			assert_int_equal(d.reason, POL_R_EXEMPT);
	}
	kube_snapshot_release(s);
}

#define NGC_EXEMPT(list)                                                                           \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"default\"},\"spec\":{\"eviction\":{\"exemptUsers\":[" list "]}}}"

/* The same matching through NodeGateConfig spec.eviction.exemptUsers (interned entries). */
static void test_E09_nodegateconfig_exempts_groups_and_prefixes(void **state)
{
	(void)state;
	struct kube_snapshot *s =
	    snap(NGC_EXEMPT("\"system:serviceaccounts:kube-system\",\"descheduler-*\""));
	const char *ks[] = {"system:serviceaccounts", "system:serviceaccounts:kube-system"};
	const char *other[] = {"system:serviceaccounts", "system:serviceaccounts:default"};
	struct pol_eviction_request r = {.ns = "default",
					 .ns_len = 7,
					 .name = "pod1",
					 .name_len = 4,
					 .username =
					     "system:serviceaccount:kube-system:vpa-updater",
					 .groups = ks,
					 .ngroups = 2};
	struct pol_decision d;
	pol_decide_eviction(s, &enforce, &r, &d);
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_EXEMPT);
	r.username = "descheduler-7";
	r.groups = other;
	pol_decide_eviction(s, &enforce, &r, &d);
	assert_true(d.allowed);
	r.username = "system:serviceaccount:default:app";
	pol_decide_eviction(s, &enforce, &r, &d);
	assert_false(d.allowed);
	assert_int_equal(d.code, 429);
	kube_snapshot_release(s);
}

/* "*" alone in NodeGateConfig is refused: the config is invalid and enforces, exempting no one
 * (not even the flag's users, which it would otherwise replace). */
static void test_E09_nodegateconfig_star_alone_is_invalid(void **state)
{
	(void)state;
	assert_non_null(kube_exempt_entry_problem("*"));
	assert_null(kube_exempt_entry_problem("system:serviceaccount:kube-system:*"));
	assert_null(kube_exempt_entry_problem("ops*"));
	struct kube_snapshot *s = snap(NGC_EXEMPT("\"ops\",\"*\""));
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	assert_non_null(ngc);
	assert_true(ngc->invalid);
	const char *users[] = {"alice"};
	struct pol_eviction_config cfg = {.mode = POL_EVICTION_WARN,
					  .exempt_users = users,
					  .nexempt = 1,
					  .retry_after_seconds = 10};
	struct pol_decision d = decide(s, &cfg, "default", "pod1", "ops");
	assert_false(d.allowed);
	assert_int_equal(d.code, 429);
	kube_snapshot_release(s);
}

static void test_E10_protected_through_pvc_denied(void **state)
{
	struct kube_snapshot *s = snap("");
	struct pol_decision d = decide(s, &enforce, "default", "cache-0", "alice");
	assert_false(d.allowed);
	assert_int_equal(d.code, 429);
	assert_non_null(strstr(d.message, "default/cache"));
	assert_non_null(strstr(d.message, "node2"));
	kube_snapshot_release(s);
}

static void test_finished_terminating_unscheduled_allowed(void **state)
{
	struct kube_snapshot *s = snap("");
	assert_int_equal(decide(s, &enforce, "default", "done", "a").reason, POL_R_FINISHED);
	assert_int_equal(decide(s, &enforce, "default", "going", "a").reason, POL_R_TERMINATING);
	assert_int_equal(decide(s, &enforce, "default", "nowhere", "a").reason, POL_R_UNSCHEDULED);
	kube_snapshot_release(s);
}

static void test_mode_off_allows_everything(void **state)
{
	struct kube_snapshot *s = snap("");
	struct pol_eviction_config off = {.mode = POL_EVICTION_OFF, .retry_after_seconds = 10};
	struct pol_decision d = decide(s, &off, "default", "pod1", "alice");
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_MODE_OFF);
	kube_snapshot_release(s);
}

static void test_invalid_budget_fails_closed(void **state)
{
	struct kube_snapshot *s = snap(
	    "{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","
	    "\"metadata\":{\"name\":\"broken\",\"namespace\":\"default\"},\"spec\":{"
	    "\"podSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Foo\"}]}}}");
	/* web was unprotected; an unreadable budget in its namespace now holds it. */
	struct pol_decision d = decide(s, &enforce, "default", "web", "alice");
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "default/broken (invalid"));
	kube_snapshot_release(s);
}

static void test_many_budgets_are_summarised(void **state)
{
	char extra[4096];
	size_t off = 0;
	for (int i = 0; i < 5; i++)
		off += (size_t)snprintf(
		    extra + off, sizeof(extra) - off,
		    "%s{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":"
		    "\"nodegate.io/v1alpha1\",\"metadata\":{\"name\":\"db-%d\",\"namespace\":"
		    "\"default\"},\"spec\":{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}}}}",
		    i ? "," : "", i);
	struct kube_snapshot *s = snap(extra);
	struct pol_decision d = decide(s, &enforce, "default", "pod1", "alice");
	assert_false(d.allowed);
	assert_non_null(strstr(d.message, "and 3 more"));
	kube_snapshot_release(s);
}

static void test_E07_E08_auto_request_only_for_enforced_denials(void **state)
{
#define AUTO_NGC(mode)                                                                             \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"default\"},\"spec\":{\"eviction\":{\"autoRequest\":true,\"mode\":\"" mode      \
	"\"}}}"
	struct kube_snapshot *s = snap(AUTO_NGC("Enforce"));
	/* Where nothing would create the request (snapshot mode), no denial promises one. */
	struct pol_decision d = decide(s, &enforce, "default", "pod1", "alice");
	assert_false(d.allowed);
	assert_false(d.auto_request);
	assert_non_null(strstr(d.message, "Request a disruption of the node"));
	struct pol_eviction_config served = enforce;
	served.auto_request_served = true;
	d = decide(s, &served, "default", "pod1", "alice");
	assert_false(d.allowed);
	assert_true(d.auto_request);
	assert_string_equal(d.node, "node1");
	assert_non_null(strstr(d.message, "nodegate requests the disruption for you "
					  "(NodeDisruption auto-node1)"));
	/* Allowed evictions ask for nothing. */
	d = decide(s, &served, "default", "web", "alice");
	assert_true(d.allowed);
	assert_false(d.auto_request);
	kube_snapshot_release(s);
	s = snap(AUTO_NGC("Warn"));
	d = decide(s, &served, "default", "pod1", "alice");
	assert_true(d.allowed);
	assert_false(d.auto_request);
	kube_snapshot_release(s);
	/* Without autoRequest the message says how to ask. */
	s = snap("");
	d = decide(s, &enforce, "default", "pod1", "alice");
	assert_false(d.auto_request);
	assert_non_null(strstr(d.message, "Request a disruption of the node"));
	kube_snapshot_release(s);
#undef AUTO_NGC
	/* One name per node, always a valid object name. */
	char name[254], longnode[254];
	pol_auto_request_name("node1", name, sizeof(name));
	assert_string_equal(name, "auto-node1");
	memset(longnode, 'a', 253);
	longnode[229] = '.';
	longnode[253] = '\0';
	pol_auto_request_name(longnode, name, sizeof(name));
	assert_true(strlen(name) <= 253);
	assert_null(strstr(name, ".-"));
	assert_memory_equal(name, "auto-aaa", 8);
}

/* An eviction denied, or allowed because of the grant, uses the request autoRequest made for
 * its node when that is there (labelled); only where autoRequest is served. */
static void test_L07_an_eviction_uses_the_auto_request_of_its_node(void **state)
{
	(void)state;
#define AUTO_ND(label, status)                                                                     \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"auto-node1\",\"labels\":{\"nodegate.io/auto-request\":\"" label "\"}},"        \
	"\"spec\":{\"nodeNames\":[\"node1\"]},\"status\":" status "}"
	struct pol_eviction_config served = enforce;
	served.auto_request_served = true;
	struct kube_snapshot *s = snap(AUTO_ND("true", "{\"state\":\"Pending\"}"));
	struct pol_decision d = decide(s, &served, "default", "pod1", "alice");
	assert_false(d.allowed);
	assert_true(d.auto_request_used);
	d = decide(s, &served, "default", "web", "alice"); /* allowed, not because of a grant */
	assert_false(d.auto_request_used);
	d = decide(s, &enforce, "default", "pod1", "alice");
	assert_false(d.auto_request_used);
	kube_snapshot_release(s);
	s = snap(AUTO_ND("true", "{\"state\":\"Granted\",\"disruptedNodes\":[\"node1\"]}"));
	d = decide(s, &served, "default", "pod1", "alice");
	assert_true(d.allowed);
	assert_int_equal(d.reason, POL_R_GRANTED);
	assert_true(d.auto_request_used);
	kube_snapshot_release(s);
	s = snap(AUTO_ND("false", "{\"state\":\"Granted\",\"disruptedNodes\":[\"node1\"]}"));
	d = decide(s, &served, "default", "pod1", "alice");
	assert_true(d.allowed);
	assert_false(d.auto_request_used);
	kube_snapshot_release(s);
#undef AUTO_ND
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_E01_denied_without_grant),
	    cmocka_unit_test(test_L07_an_eviction_uses_the_auto_request_of_its_node),
	    cmocka_unit_test(test_E02_allowed_when_node_granted),
	    cmocka_unit_test(test_E02_pending_or_rejected_request_does_not_allow),
	    cmocka_unit_test(test_E03_unprotected_pod_allowed),
	    cmocka_unit_test(test_E04_daemonset_and_mirror_pods_allowed),
	    cmocka_unit_test(test_E05_unknown_pod_allowed),
	    cmocka_unit_test(test_E06_warn_mode_allows_with_warning),
	    cmocka_unit_test(test_E09_exempt_user_allowed),
	    cmocka_unit_test(test_E09_exempt_entries_match_user_or_group),
	    cmocka_unit_test(test_E09_nodegateconfig_exempts_groups_and_prefixes),
	    cmocka_unit_test(test_E09_nodegateconfig_star_alone_is_invalid),
	    cmocka_unit_test(test_E07_E08_auto_request_only_for_enforced_denials),
	    cmocka_unit_test(test_E10_protected_through_pvc_denied),
	    cmocka_unit_test(test_finished_terminating_unscheduled_allowed),
	    cmocka_unit_test(test_mode_off_allows_everything),
	    cmocka_unit_test(test_invalid_budget_fails_closed),
	    cmocka_unit_test(test_many_budgets_are_summarised),
	    cmocka_unit_test(test_N01_do_not_disrupt_pod_is_not_evicted_for_its_duration),
	    cmocka_unit_test(test_N02_only_an_override_type_grant_lets_them_go),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
