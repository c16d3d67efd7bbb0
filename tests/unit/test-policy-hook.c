/* policy/hook: where a health hook may connect (the refused ranges, v4, v6 and IPv4 embedded in
 * IPv6; the API server's and nodegate's own addresses; how allowedCIDRs lists and opens) and
 * which hosts allowedHosts globs match (one DNS label per '*'). */
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

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fixture F plus @extra objects ("" for none). */
static struct kube_snapshot *cluster(const char *extra)
{
	return ng_test_cluster_f(extra);
}

/* @text parsed as an IPv4 or IPv6 address into @addr; returns the family. */
static int parse(const char *text, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, text, addr) == 1)
		return 4;
	if (inet_pton(AF_INET6, text, addr) == 1)
		return 6;
	fail_msg("not an address: %s", text);
	return 0;
}

/* The policy of a cluster whose NodeGateConfig lists @cidrs (a JSON array; NULL: no config). */
struct pol {
	struct kube_snapshot *s;
	struct kube_hook_policy p;
};

static struct pol policy(const char *cidrs)
{
	struct pol r;
	char json[1024];
	if (cidrs)
		ng_fmt(json, sizeof(json), NGC("{\"healthHooks\":{\"allowedCIDRs\":%s}}"), cidrs);
	r.s = cluster(cidrs ? json : "");
	pol_hook_policy_from(r.s, &r.p);
	return r;
}

struct addr_case {
	const char *addr;
	bool ok;
};

static void expect_addrs(const struct pol *p, const struct kube_cidr *deny, size_t ndeny,
			 const struct addr_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t a[16];
		int family = parse(cases[i].addr, a);
		if (pol_hook_addr_allowed(&p->p, deny, ndeny, family, a) != cases[i].ok)
			fail_msg("%s: expected %s", cases[i].addr,
				 cases[i].ok ? "allowed" : "refused");
	}
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_embedded_ipv4_is_normalized(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"::ffff:127.0.0.1", "127.0.0.1"}, /* mapped */
	    {"::127.0.0.1", "127.0.0.1"},      /* compatible */
	    {"::a9fe:a9fe", "169.254.169.254"},
	    {"64:ff9b::a9fe:a9fe", "169.254.169.254"}, /* NAT64 */
	    {"::2", "0.0.0.2"},
	    {"::", "::"}, /* IPv6's own, not 0.0.0.0 or 0.0.0.1 */
	    {"::1", "::1"},
	    {"::ffff:0:7f00:1", "::ffff:0:7f00:1"}, /* not a mapped prefix */
	    {"10.1.2.3", "10.1.2.3"},
	    {"2001:db8::1", "2001:db8::1"},
	};
	for (size_t i = 0; i < N(cases); i++) {
		uint8_t in[16], want[16], got[16];
		int fin = parse(cases[i].in, in), fwant = parse(cases[i].out, want);
		int fgot = pol_hook_addr_normalize(fin, in, got);
		if (fgot != fwant || memcmp(got, want, 16) != 0)
			fail_msg("%s: expected %s", cases[i].in, cases[i].out);
	}
}

static void test_special_ranges_are_refused_without_any_policy(void **state)
{
	static const struct addr_case cases[] = {
	    /* loopback */
	    {"127.0.0.1", false},
	    {"127.255.255.254", false},
	    {"::1", false},
	    {"::ffff:127.0.0.1", false},
	    {"::127.0.0.1", false},
	    {"64:ff9b::7f00:1", false},
	    /* unspecified: 0.0.0.0 connects to the local host */
	    {"0.0.0.0", false},
	    {"0.1.2.3", false},
	    {"::", false},
	    {"::ffff:0.0.0.0", false},
	    /* link-local and cloud metadata */
	    {"169.254.169.254", false},
	    {"169.254.0.1", false},
	    {"::ffff:169.254.169.254", false},
	    {"fe80::1", false},
	    {"febf:ffff::1", false},
	    {"fd00:ec2::254", false},
	    {"100.100.100.200", false},
	    /* multicast, broadcast */
	    {"224.0.0.1", false},
	    {"239.255.255.255", false},
	    {"ff02::1", false},
	    {"255.255.255.255", false},
	    {"::ffff:255.255.255.255", false},
	    /* their neighbours, and ordinary cluster and public addresses */
	    {"126.255.255.255", true},
	    {"128.0.0.0", true},
	    {"1.0.0.0", true},
	    {"169.253.255.255", true},
	    {"169.255.0.0", true},
	    {"223.255.255.255", true},
	    {"255.255.255.254", true},
	    {"100.100.100.201", true},
	    {"10.1.2.3", true},
	    {"::ffff:10.1.2.3", true},
	    {"fec0::1", true},
	    {"fe7f::1", true},
	    {"fd00:ec2::253", true},
	    {"fd00::1", true},
	    {"2001:db8::1", true},
	};
	struct pol p = policy(NULL);
	expect_addrs(&p, NULL, 0, cases, N(cases));
	kube_snapshot_release(p.s);
	/* A NodeGateConfig without allowedCIDRs changes nothing. */
	p = policy("[]");
	expect_addrs(&p, NULL, 0, cases, N(cases));
	kube_snapshot_release(p.s);
}

static void test_allowed_cidrs_list_and_open_refused_ranges_only_from_inside(void **state)
{
	/* A list: only what it holds; 127.0.0.0/8 lies inside loopback, so it opens it. */
	static const struct addr_case loopback[] = {
	    {"127.0.0.1", true}, {"::ffff:127.0.0.1", true}, {"127.1.2.3", true}, {"::1", false},
	    {"10.1.2.3", false}, {"169.254.169.254", false}, {"0.0.0.0", false},
	};
	struct pol p = policy("[\"127.0.0.0/8\"]");
	expect_addrs(&p, NULL, 0, loopback, N(loopback));
	kube_snapshot_release(p.s);
	/* "Everything" opens nothing refused. */
	static const struct addr_case everything[] = {
	    {"8.8.8.8", true},           {"10.1.2.3", true}, {"2001:db8::1", true},
	    {"127.0.0.1", false},        {"::1", false},     {"169.254.169.254", false},
	    {"::ffff:127.0.0.1", false}, {"fe80::1", false}, {"224.0.0.1", false},
	};
	p = policy("[\"0.0.0.0/0\",\"::/0\"]");
	expect_addrs(&p, NULL, 0, everything, N(everything));
	kube_snapshot_release(p.s);
	/* One address inside a range opens that address only; a wider entry that holds a narrower
	 * refused range (0.0.0.0/1 holds 127.0.0.0/8) opens nothing. */
	static const struct addr_case narrow[] = {
	    {"169.254.169.254", true}, {"169.254.169.253", false}, {"::1", true},
	    {"fe80::1", true},         {"fe80:0:0:1::1", false},   {"127.0.0.1", false},
	    {"10.1.2.3", true},
	};
	p = policy("[\"169.254.169.254/32\",\"::1\",\"fe80::/64\",\"0.0.0.0/1\"]");
	expect_addrs(&p, NULL, 0, narrow, N(narrow));
	kube_snapshot_release(p.s);
}

static void test_listed_addresses_outside_the_special_ranges(void **state)
{
	static const struct addr_case cases[] = {
	    {"10.200.3.4", true},        {"11.0.0.1", false},  {"192.168.1.200", true},
	    {"192.168.1.127", false},    {"172.16.0.1", true}, {"172.16.0.2", false},
	    {"fd01::1", true},           {"fe80::1", false},   {"::ffff:10.1.2.3", true},
	    {"::ffff:127.0.0.1", false},
	};
	struct pol p = policy("[\"10.0.0.0/8\",\"192.168.1.128/25\",\"fd00::/8\",\"172.16.0.1\"]");
	assert_int_equal(p.p.ncidrs, 4);
	assert_int_equal(p.p.max_response_bytes, 65536);
	expect_addrs(&p, NULL, 0, cases, N(cases));
	kube_snapshot_release(p.s);
	/* A CIDR that does not parse makes the whole config invalid (the gate pauses). */
	struct kube_snapshot *s =
	    cluster(NGC("{\"healthHooks\":{\"allowedCIDRs\":[\"10.0.0.0/33\"]}}"));
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	assert_true(ngc->invalid);
	assert_non_null(
	    strstr(ng_intern_str(kube_snapshot_pool(s), ngc->error, NULL), "allowedCIDRs[0]"));
	kube_snapshot_release(s);
}

static struct kube_cidr host_cidr(const char *text)
{
	struct kube_cidr c = {0};
	uint8_t a[16];
	c.family = (uint8_t)pol_hook_addr_normalize(parse(text, a), a, c.addr);
	c.bits = c.family == 4 ? 32 : 128;
	return c;
}

static void test_api_server_and_own_addresses_are_refused_unless_named(void **state)
{
	/* What the controller passes: the API server (10.96.0.1), this pod (10.1.2.3, fd00::5)
	 * and its loopback address. */
	const struct kube_cidr deny[] = {host_cidr("10.96.0.1"), host_cidr("10.1.2.3"),
					 host_cidr("fd00::5"), host_cidr("127.0.0.1")};
	static const struct addr_case none[] = {
	    {"10.96.0.1", false}, {"::ffff:10.96.0.1", false}, {"10.1.2.3", false},
	    {"fd00::5", false},   {"10.96.0.2", true},         {"fd00::6", true},
	};
	struct pol p = policy(NULL);
	expect_addrs(&p, deny, N(deny), none, N(none));
	kube_snapshot_release(p.s);
	/* The cluster's networks in allowedCIDRs do not open them... */
	static const struct addr_case wide[] = {
	    {"10.96.0.1", false}, {"10.1.2.3", false}, {"fd00::5", false},
	    {"10.96.0.2", true},  {"fd00::6", true},   {"127.0.0.1", false},
	};
	p = policy("[\"10.0.0.0/8\",\"fd00::/8\"]");
	expect_addrs(&p, deny, N(deny), wide, N(wide));
	kube_snapshot_release(p.s);
	/* ...naming one does; and opening loopback opens this process's loopback address too. */
	static const struct addr_case named[] = {
	    {"10.96.0.1", true},
	    {"10.1.2.3", false},
	    {"127.0.0.1", true},
	    {"10.96.0.2", true},
	};
	p = policy("[\"10.0.0.0/8\",\"10.96.0.1/32\",\"127.0.0.0/8\"]");
	expect_addrs(&p, deny, N(deny), named, N(named));
	kube_snapshot_release(p.s);
}

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
	    cmocka_unit_test(test_embedded_ipv4_is_normalized),
	    cmocka_unit_test(test_special_ranges_are_refused_without_any_policy),
	    cmocka_unit_test(test_allowed_cidrs_list_and_open_refused_ranges_only_from_inside),
	    cmocka_unit_test(test_listed_addresses_outside_the_special_ranges),
	    cmocka_unit_test(test_api_server_and_own_addresses_are_refused_unless_named),
	    cmocka_unit_test(test_host_globs_match_one_label_per_star),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
