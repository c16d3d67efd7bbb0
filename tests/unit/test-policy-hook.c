/* policy/hook: which hosts allowedHosts globs match (one DNS label per '*'). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/buf.h"
#include "common/intern.h"
#include "kube/records.h"
#include "kube/snapshot.h"
#include "policy/hook.h"
#include "tests/support/objects.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fixture F plus @extra objects ("" for none). */
static struct kube_snapshot *cluster(const char *extra)
{
	return ng_test_cluster_f(extra);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Whether a hook at @url (a JSON string's contents) may be called when allowedHosts is
 * [@glob]. */
static bool host_allowed(const char *glob, const char *hook)
{
	char json[1024];
	ng_fmt(json, sizeof(json),
	       ADB("db", DB_HOOK("%s")) "," NGC("{\"healthHooks\":{\"allowedHosts\":[\"%s\"]}}"),
	       hook, glob);
	struct kube_snapshot *s = cluster(json);
	struct kube_hook_policy p;
	pol_hook_policy_from(s, &p);
	assert_int_equal(p.nhosts, 1);
	struct ng_err err = {0};
	ng_status st =
	    pol_hook_allowed(&ng_test_adb(s, "db")->hook, &p, kube_snapshot_pool(s), &err);
	if (st != NG_OK && !strstr(err.msg, "(a * stands for one DNS label)"))
		fail_msg("%s, %s: %s", glob, hook, err.msg);
	kube_snapshot_release(s);
	return st == NG_OK;
}

static void test_host_globs_match_one_label_per_star(void **state)
{
	static const struct {
		const char *glob, *host;
		bool ok;
	} cases[] = {
	    {"*.svc", "a.svc", true},
	    {"*.svc", "A.SVC", true},
	    {"*.svc", "kubernetes.default.svc", false},
	    {"*.svc", "svc", false},
	    {"*.default.svc", "kubernetes.default.svc", true},
	    {"*.default.svc", "a.b.default.svc", false},
	    {"*.*.svc", "kubernetes.default.svc", true},
	    {"hooks.*.example.com", "hooks.a.example.com", true},
	    {"hooks.*.example.com", "hooks.a.b.example.com", false},
	    {"hooks.*.example.com", "hooks.example.com", false},
	    {"Hooks.Example.COM", "hooks.example.com", true},
	    {"hooks.example.com", "hooks.example.com.evil.net", false},
	    {"hooks.example.com", "xhooks.example.com", false},
	    {"db-*.team.svc", "db-0.team.svc", true},
	    {"db-*.team.svc", "db-0.x.team.svc", false},
	    {"db-?.team.svc", "db-1.team.svc", true},
	    {"db-?.team.svc", "db-12.team.svc", false},
	    {"*", "localhost", true},
	    {"*", "a.b", false},
	    {"a*b*c.x", "aXbYc.x", true},
	    {"a*b*c.x", "a.b.c.x", false},
	    {"*b.example.com", "ab.ab.example.com", false},
	    {"*.*.*.*", "127.0.0.1", true},
	};
	for (size_t i = 0; i < N(cases); i++) {
		char hook[256];
		ng_fmt(hook, sizeof(hook), "{\"url\":\"https://%s/h\"}", cases[i].host);
		if (host_allowed(cases[i].glob, hook) != cases[i].ok)
			fail_msg("%s vs %s: expected %s", cases[i].glob, cases[i].host,
				 cases[i].ok ? "a match" : "none");
	}
	/* A service reference's host is <name>.<namespace>.svc. */
	static const char svc[] = "{\"service\":{\"namespace\":\"team\",\"name\":\"db\"}}";
	assert_true(host_allowed("*.team.svc", svc));
	assert_false(host_allowed("*.svc", svc));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host_globs_match_one_label_per_star),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
