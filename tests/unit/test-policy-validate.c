/* policy/validate: what the object admission webhooks say of NodeDisruptions, budgets and the
 * NodeGateConfig (shared/acceptance V01-V10, H09), on objects decoded by kube_one_parse() as the
 * webhooks decode them. Cluster: node1, node2 (testselect=test1), node3 (test2), pod1 on node1. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/regex.h"
#include "kube/records.h"
#include "kube/one.h"
#include "kube/snapshot.h"
#include "policy/disruption.h"
#include "policy/validate.h"
#include "tests/support/objects.h"
#include "tests/support/selector-cases.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRANTED_ND(name, spec)                                                                     \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\"},\"spec\":" spec ",\"status\":{\"state\":\"Granted\"}}"

static struct kube_snapshot *cluster(const char *extra)
{
	return ng_test_cluster_f(extra);
}

/* @text decoded as the webhooks decode a review's object. */
static struct kube_one *one_of(const char *text)
{
	struct kube_one *one = NULL;
	struct ng_err err = {0};
	if (kube_one_parse(text, strlen(text), &one, &err) != NG_OK)
		fail_msg("%s: %s", text, err.msg);
	return one;
}

static void expect_budget(const struct kube_snapshot *cluster, const char *text, ng_status want,
			  const char *why_part)
{
	struct ng_err why = {0};
	struct kube_one *obj = one_of(text);
	ng_status got = pol_check_budget(cluster, obj, &why);
	kube_one_destroy(obj);
	if (got != want || (why_part && !strstr(why.msg, why_part)))
		fail_msg("%s: got %s \"%s\", expected %s containing \"%s\"", text,
			 ng_status_str(got), why.msg, ng_status_str(want),
			 why_part ? why_part : "");
}

static void test_V07_V08_H09_budget_admission_checks(void **state)
{
	struct kube_snapshot *none = cluster("");
	struct kube_snapshot *strict =
	    cluster(NGC("{\"healthHooks\":{\"allowedHosts\":[\"hooks.example.com\"]}}"));
	/* V07: field-specific messages. */
	expect_budget(none, ADB("a", "{\"podSelector\":{},\"maxDisruptions\":-1}"), NG_EPARSE,
		      "spec.maxDisruptions: must be >= 0");
	expect_budget(none, NDB("p", "{\"nodeSelector\":{},\"maxDisruptedNodes\":\"150%\"}"),
		      NG_ELIMIT, "spec.maxDisruptedNodes: \"150%\" is out of range");
	expect_budget(none, NDB("p", "{\"nodeSelector\":{}}"), NG_EPARSE,
		      "one of maxDisruptedNodes and minUndisruptedNodes is required");
	expect_budget(none, ADB("a", "{\"maxDisruptions\":1}"), NG_EPARSE,
		      "at least one of podSelector and pvcSelector");
	/* Topology limits: the key and a limit go together; a limit alone is enough. */
	expect_budget(none,
		      NDB("p", "{\"nodeSelector\":{},\"topologyKey\":\"topology.kubernetes.io/"
			       "zone\",\"maxDisruptedDomains\":1}"),
		      NG_OK, NULL);
	expect_budget(none, NDB("p", "{\"nodeSelector\":{},\"maxDisruptedDomains\":1}"), NG_EPARSE,
		      "spec.topologyKey: required with maxDisruptedDomains");
	expect_budget(none, NDB("p", "{\"nodeSelector\":{},\"topologyKey\":\"zone\"}"), NG_EPARSE,
		      "spec.topologyKey: needs maxDisruptedDomains or");
	expect_budget(none,
		      NDB("p", "{\"nodeSelector\":{},\"topologyKey\":\"bad key!\","
			       "\"maxDisruptedDomains\":1}"),
		      NG_EPARSE, "spec.topologyKey:");
	expect_budget(none,
		      NDB("p", "{\"nodeSelector\":{},\"topologyKey\":\"zone\","
			       "\"maxDisruptedNodesPerDomain\":\"150%\"}"),
		      NG_ELIMIT, "spec.maxDisruptedNodesPerDomain");
	expect_budget(none,
		      ADB("a",
			  "{\"podSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":"
			  "\"Foo\"}]},\"maxDisruptions\":1}"),
		      NG_EPARSE, "spec.podSelector");
	expect_budget(none, ADB("a", "{\"podSelector\":{},\"maxDisruptions\":\"25%\"}"), NG_OK,
		      NULL);
	/* V08: http while allowHTTP is false (the default): forbidden, not malformed. */
	expect_budget(none, ADB("a", DB_HOOK("{\"url\":\"http://hooks.example.com/\"}")),
		      NG_EFORBIDDEN, "spec.healthHook: hook not allowed: scheme \"http\"");
	expect_budget(none, ADB("a", DB_HOOK("{\"url\":\"https://h/\",\"timeoutSeconds\":26}")),
		      NG_EPARSE, "timeoutSeconds: must be 1..25");
	expect_budget(none, ADB("a", DB_HOOK("{\"url\":\"not a url\"}")), NG_EPARSE,
		      "spec.healthHook.url: \"not a url\" is not a URL");
	/* H09: a host the policy does not list. */
	expect_budget(strict, ADB("a", DB_HOOK("{\"url\":\"https://127.0.0.1:8443/\"}")),
		      NG_EFORBIDDEN, "host \"127.0.0.1\" matches no");
	expect_budget(strict, ADB("a", DB_HOOK("{\"url\":\"https://hooks.example.com/\"}")), NG_OK,
		      NULL);
	/* Multistep hooks, on both kinds, under the same policy. */
	expect_budget(strict,
		      NDB("p", "{\"nodeSelector\":{},\"maxDisruptedNodes\":1,\"hookV2BasePath\":"
			       "{\"url\":\"https://127.0.0.1/\"}}"),
		      NG_EFORBIDDEN, "spec.hookV2BasePath: hook not allowed: host \"127.0.0.1\"");
	expect_budget(none,
		      ADB("a", "{\"podSelector\":{},\"maxDisruptions\":1,\"hookV2BasePath\":"
			       "{\"url\":\"https://m/\",\"timeoutSeconds\":61}}"),
		      NG_EPARSE, "spec.hookV2BasePath.timeoutSeconds: must be 1..60");
	expect_budget(strict,
		      ADB("a", "{\"podSelector\":{},\"maxDisruptions\":1,\"hookV2BasePath\":"
			       "{\"url\":\"https://hooks.example.com/v2\"}}"),
		      NG_OK, NULL);
	/* A NodeGateConfig is checked as the gate reads it; other kinds pass. */
	expect_budget(none, NGC("{\"healthHooks\":{\"maxResponseBytes\":0}}"), NG_EPARSE,
		      "maxResponseBytes: must be 1..16777216");
	expect_budget(none, NGC("{\"healthHooks\":{\"terminateDeadlineSeconds\":0}}"), NG_EPARSE,
		      "spec.healthHooks.terminateDeadlineSeconds: must be 1..86400");
	expect_budget(none,
		      NGC("{\"drain\":{\"rules\":[{\"behavior\":\"Skip\"},{\"behavior\":"
			  "\"Drain\",\"order\":\"first\"}]}}"),
		      NG_EPARSE,
		      "spec.drain.rules[1].order: expected an integer in -2147483648..2147483647");
	expect_budget(none, NGC("{\"drain\":{\"rules\":[{\"behavior\":\"WaitCompleted\"}]}}"),
		      NG_OK, NULL);
	expect_budget(none, ND("x", "{\"nodeSelector\":{}}"), NG_OK, NULL);
	/* O50: only the NodeGateConfig named default is read; another is refused, not ignored. */
	expect_budget(none,
		      "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		      "\"metadata\":{\"name\":\"other\"},\"spec\":{\"paused\":true}}",
		      NG_EPARSE,
		      "reads only the NodeGateConfig named \"default\"; name it default");
	kube_snapshot_release(none);
	kube_snapshot_release(strict);
}

#define WIN_NDB(windows)                                                                           \
	NDB("p", "{\"nodeSelector\":{},\"maxDisruptedNodes\":1,\"windows\":[" windows "]}")

/* S05: maintenance windows that do not read are refused, naming the window and the field. */
static void test_S05_budget_windows_admission(void **state)
{
	(void)state;
	struct kube_snapshot *none = cluster("");
	expect_budget(none,
		      WIN_NDB("{\"schedule\":\"0 22 * * 1-5\",\"duration\":\"8h\","
			      "\"timeZone\":\"Europe/Paris\",\"maxDisruptedNodes\":\"10%\"}"),
		      NG_OK, NULL);
	expect_budget(none, WIN_NDB("{\"schedule\":\"@daily\",\"duration\":\"90m\"}"), NG_OK, NULL);
	expect_budget(none, WIN_NDB("{\"schedule\":\"0 25 * * *\",\"duration\":\"8h\"}"), NG_EPARSE,
		      "spec.windows[0].schedule: hour field \"25\"");
	expect_budget(none, WIN_NDB("{\"schedule\":\"0 0 30 2 *\",\"duration\":\"8h\"}"), NG_EPARSE,
		      "spec.windows[0].schedule: never fires");
	/* A weekday's rank in the month: the first Saturday night, and a rank that is none. */
	expect_budget(none, WIN_NDB("{\"schedule\":\"0 22 * * sat#1\",\"duration\":\"8h\"}"), NG_OK,
		      NULL);
	expect_budget(
	    none, WIN_NDB("{\"schedule\":\"0 22 * * sat#6\",\"duration\":\"8h\"}"), NG_EPARSE,
	    "spec.windows[0].schedule: day-of-week field \"sat#6\": rank after '#' must be "
	    "1-5 or L (the last)");
	expect_budget(none, WIN_NDB("{\"duration\":\"8h\"}"), NG_EPARSE,
		      "spec.windows[0].schedule: required");
	expect_budget(none,
		      WIN_NDB("{\"schedule\":\"@daily\",\"duration\":\"1h\"},{\"schedule\":"
			      "\"@daily\",\"duration\":\"2d\"}"),
		      NG_EPARSE, "spec.windows[1].duration: expected a duration from 1m to 744h");
	expect_budget(none,
		      WIN_NDB("{\"schedule\":\"@daily\",\"duration\":\"1h\",\"timeZone\":"
			      "\"Mars/Olympus_Mons\"}"),
		      NG_EPARSE,
		      "spec.windows[0].timeZone: unknown time zone \"Mars/Olympus_Mons\"");
	expect_budget(none,
		      WIN_NDB("{\"schedule\":\"@daily\",\"duration\":\"1h\",\"timeZone\":"
			      "\"../../etc/passwd\"}"),
		      NG_EPARSE, "spec.windows[0].timeZone:");
	expect_budget(none,
		      WIN_NDB("{\"schedule\":\"@daily\",\"duration\":\"1h\","
			      "\"maxDisruptedNodes\":\"150%\"}"),
		      NG_ELIMIT, "spec.windows[0].maxDisruptedNodes: \"150%\" is out of range");
	expect_budget(none,
		      NDB("p", "{\"nodeSelector\":{},\"maxDisruptedNodes\":1,\"outsideWindows\":"
			       "\"deny\"}"),
		      NG_EPARSE, "spec.outsideWindows: must be Deny or UseDefault");
	expect_budget(none,
		      ADB("a", "{\"podSelector\":{},\"maxDisruptions\":1,\"windows\":[{"
			       "\"schedule\":\"0 2 * * sun\",\"duration\":\"3h\","
			       "\"maxDisruptions\":-1}]}"),
		      NG_EPARSE, "spec.windows[0].maxDisruptions: must be >= 0");
	/* At most 16 windows, on both kinds (the CRDs' maxItems, for a webhook-less path). */
#define W "{\"schedule\":\"* * * * *\",\"duration\":\"744h\"}"
#define W4 W "," W "," W "," W
	expect_budget(none, WIN_NDB(W4 "," W4 "," W4 "," W4), NG_OK, NULL);
	expect_budget(none, WIN_NDB(W4 "," W4 "," W4 "," W4 "," W), NG_EPARSE,
		      "spec.windows: at most 16 windows (17 given)");
	expect_budget(none,
		      ADB("a", "{\"podSelector\":{},\"maxDisruptions\":1,\"windows\":[" W4 "," W4
			       "," W4 "," W4 "," W "]}"),
		      NG_EPARSE, "spec.windows: at most 16 windows (17 given)");
	/* An ApplicationDisruptionBudget's window that does not read is named as an NDB's. */
	expect_budget(none,
		      ADB("a", "{\"podSelector\":{},\"maxDisruptions\":1,\"windows\":[{"
			       "\"schedule\":\"0 25 * * *\",\"duration\":\"1h\"}]}"),
		      NG_EPARSE, "spec.windows[0].schedule: hour field \"25\"");
#undef W4
#undef W
	kube_snapshot_release(none);
}

/* An ND check against @cluster: create (@old NULL) or update. */
static void expect_nd(const struct kube_snapshot *cluster, const char *text, const char *old,
		      ng_status want, const char *why_part, const char *warning_part)
{
	char warning[400] = "";
	struct ng_err why = {0};
	struct kube_one *obj = one_of(text), *was = old ? one_of(old) : NULL;
	ng_status got = pol_check_nd(cluster, obj, was, warning, sizeof(warning), &why);
	kube_one_destroy(obj);
	kube_one_destroy(was);
	if (got != want || (why_part && !strstr(why.msg, why_part)) ||
	    (warning_part && !strstr(warning, warning_part)) || (!warning_part && warning[0]))
		fail_msg("%s: got %s \"%s\" (warning \"%s\"), expected %s containing \"%s\"", text,
			 ng_status_str(got), why.msg, warning, ng_status_str(want),
			 why_part ? why_part : "");
}

/* NodeGateConfig spec.alertGate: what the webhook refuses, each with a message naming the
 * field (docs/gate.md "Alert gate"). */
static void test_alert_gate_admission_checks(void **state)
{
	struct kube_snapshot *none = cluster("");
#define AG(x) NGC("{\"alertGate\":" x "}")
#define PROM "\"prometheusURL\":\"https://prometheus.monitoring.svc:9090\""
	expect_budget(none, AG("{" PROM ",\"query\":\"ALERTS{severity=\\\"critical\\\"}\"}"), NG_OK,
		      NULL);
	expect_budget(none,
		      AG("{" PROM ",\"alertNameRegex\":\"Node.*|Etcd.*\",\"timeoutSeconds\":30,"
			 "\"cacheSeconds\":300,\"failurePolicy\":\"Ignore\"}"),
		      NG_OK, NULL);
	expect_budget(none, AG("{" PROM "}"), NG_EPARSE,
		      "spec.alertGate: exactly one of query and alertNameRegex is required");
	expect_budget(none, AG("{" PROM ",\"query\":\"up\",\"alertNameRegex\":\"x\"}"), NG_EPARSE,
		      "spec.alertGate: exactly one of query and alertNameRegex");
	expect_budget(none, AG("{\"prometheusURL\":\"http://prom:9090\",\"query\":\"up\"}"),
		      NG_EPARSE, "spec.alertGate.prometheusURL: must be an https URL");
	expect_budget(none, AG("{\"prometheusURL\":\"not a url\",\"query\":\"up\"}"), NG_EPARSE,
		      "spec.alertGate.prometheusURL: must hold no query, fragment or spaces");
	expect_budget(none, AG("{\"prometheusURL\":\"https://\",\"query\":\"up\"}"), NG_EPARSE,
		      "spec.alertGate.prometheusURL: \"https://\" is not a URL");
	expect_budget(none, AG("{\"prometheusURL\":\"https://u:p@prom:9090\",\"query\":\"up\"}"),
		      NG_EPARSE, "spec.alertGate.prometheusURL: must carry no credentials");
	expect_budget(none, AG("{\"prometheusURL\":\"https://prom/?x=1\",\"query\":\"up\"}"),
		      NG_EPARSE, "must hold no query, fragment or spaces");
	expect_budget(none, AG("{" PROM ",\"alertNameRegex\":\"(Node\"}"), NG_EPARSE,
		      "spec.alertGate.alertNameRegex: does not compile");
	expect_budget(none, AG("{" PROM ",\"alertNameRegex\":\"(a)\\\\1\"}"), NG_EPARSE,
		      "spec.alertGate.alertNameRegex:");
	expect_budget(none, AG("{" PROM ",\"query\":\"up\",\"timeoutSeconds\":31}"), NG_EPARSE,
		      "spec.alertGate.timeoutSeconds: must be 1..30");
	expect_budget(none, AG("{" PROM ",\"query\":\"up\",\"cacheSeconds\":0}"), NG_EPARSE,
		      "spec.alertGate.cacheSeconds: must be 1..300");
	expect_budget(none, AG("{" PROM ",\"query\":\"up\",\"failurePolicy\":\"Fail\"}"), NG_EPARSE,
		      "spec.alertGate.failurePolicy: must be Deny or Ignore");
	expect_budget(none, AG("{" PROM ",\"query\":\"up\",\"caBundle\":\"bm90IGEgUEVN\"}"),
		      NG_EPARSE, "spec.alertGate.caBundle: must be base64 of PEM certificates");
	expect_budget(none, AG("{" PROM ",\"query\":\"\"}"), NG_EPARSE,
		      "spec.alertGate.query: expected a non-empty string");
	/* Called under the same object's healthHooks: a host it does not list is refused. */
	expect_budget(
	    none,
	    NGC("{\"healthHooks\":{\"allowedHosts\":[\"*.example.com\"]},\"alertGate\":{" PROM
		",\"query\":\"up\"}}"),
	    NG_EPARSE,
	    "spec.alertGate.prometheusURL: host \"prometheus.monitoring.svc\" matches no "
	    "NodeGateConfig healthHooks.allowedHosts");
#undef AG
#undef PROM
	kube_snapshot_release(none);
}

static void test_V01_V02_V03_V05_V09_V10_nodedisruption_admission(void **state)
{
	struct kube_snapshot *c = cluster(GRANTED("held", "[\"node2\"]"));
	/* V01 */
	expect_nd(c,
		  ND("x", "{\"nodeNames\":[\"node1\"],\"nodeSelector\":{\"matchLabels\":{\"a\":"
			  "\"b\"}}}"),
		  NULL, NG_EPARSE, "exactly one of nodeSelector and nodeNames", NULL);
	expect_nd(c, ND("x", "{\"type\":\"reboot\"}"), NULL, NG_EPARSE,
		  "exactly one of nodeSelector and nodeNames", NULL);
	/* V02 */
	expect_nd(c,
		  ND("x", "{\"nodeSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":"
			  "\"Foo\"}]}}"),
		  NULL, NG_EPARSE, "spec.nodeSelector.matchExpressions[0].operator", NULL);
	expect_nd(c,
		  ND("x", "{\"nodeSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":"
			  "\"In\"}]}}"),
		  NULL, NG_EPARSE, "spec.nodeSelector.matchExpressions[0]", NULL);
	/* V03 */
	expect_nd(c,
		  ND("x", "{\"nodeNames\":[\"node1\"],\"drain\":{\"podEvictionFilters\":[{"
			  "\"byResourceNameRegex\":\"nvidia.com/gpu-(\"}]}}"),
		  NULL, NG_EPARSE,
		  "spec.drain.podEvictionFilters[0].byResourceNameRegex: \"nvidia.com/gpu-(\" "
		  "does not compile: missing closing parenthesis at offset 16",
		  NULL);
	/* A 26-byte pattern that took glibc's regcomp seconds and a GiB: refused at once. */
	expect_nd(c,
		  ND("x", "{\"nodeNames\":[\"node1\"],\"drain\":{\"podEvictionFilters\":[{"
			  "\"byResourceNameRegex\":\"nvidia.com/gpu\"},{\"byResourceNameRegex\":"
			  "\"((a{1,100}){1,100}){1,100}\"}]}}"),
		  NULL, NG_ELIMIT,
		  "spec.drain.podEvictionFilters[1].byResourceNameRegex: "
		  "\"((a{1,100}){1,100}){1,100}\" is too complex (",
		  NULL);
	expect_nd(c,
		  ND("x", "{\"nodeNames\":[\"node1\"],\"drain\":{\"podEvictionFilters\":[{"
			  "\"byResourceNameRegex\":\"^example\\\\.com/(gpu|fpga)$\"}]}}"),
		  NULL, NG_OK, NULL, NULL);
	expect_nd(c, ND("x", "{\"nodeNames\":[\"node1\"],\"drain\":{\"podSelector\":\"a in (\"}}"),
		  NULL, NG_EPARSE, "spec.drain.podSelector", NULL);
	expect_nd(c,
		  ND("x", "{\"nodeNames\":[\"node1\"],\"drain\":{\"waitForPodCompletion\":{"
			  "\"podSelector\":\"!\"}}}"),
		  NULL, NG_EPARSE, "spec.drain.waitForPodCompletion.podSelector", NULL);
	/* V10 */
	expect_nd(c, ND("x", "{\"nodeSelector\":{}}"), NULL, NG_EPARSE, "would select every node",
		  NULL);
	/* V09: allowed, with warnings naming the nodes. */
	expect_nd(c, ND("x", "{\"nodeNames\":[\"ghost\",\"node1\"]}"), NULL, NG_OK, NULL,
		  "1 of 2 nodes are not in the cluster: ghost");
	/* O52: every unknown node counted, the first few named. */
	expect_nd(c, ND("x", "{\"nodeNames\":[\"g0\",\"g1\",\"node1\",\"g2\",\"g3\",\"g4\"]}"),
		  NULL, NG_OK, NULL, "5 of 6 nodes are not in the cluster: g0, g1, g2 and 2 more");
	expect_nd(c, ND("x", "{\"nodeNames\":[\"ghost\",\"node2\"]}"), NULL, NG_OK, NULL,
		  "1 of 2 nodes are not in the cluster: ghost\nnode node2 is already granted");
	/* O51: an empty list names no node; refused rather than Rejected later. */
	expect_nd(c, ND("x", "{\"nodeNames\":[]}"), NULL, NG_EPARSE,
		  "spec.nodeNames: empty: name at least one node", NULL);
	expect_nd(c, ND("x", "{\"nodeNames\":[\"node2\"]}"), NULL, NG_OK, NULL,
		  "node node2 is already granted to NodeDisruption held");
	expect_nd(c, ND("x", ON_TEST1 "}"), NULL, NG_OK, NULL, NULL);
	/* V05: once Granted, only retry.deadline and additionalRequestors change. */
	const char *was = GRANTED_ND("g", "{\"nodeNames\":[\"node3\"],\"retry\":{\"enabled\":true,"
					  "\"deadline\":\"2026-12-01T00:00:00Z\"}}");
	expect_nd(c,
		  GRANTED_ND("g", "{\"nodeNames\":[\"node1\"],\"retry\":{\"enabled\":true,"
				  "\"deadline\":\"2026-12-01T00:00:00Z\"}}"),
		  was, NG_EPARSE, "spec: immutable once Granted", NULL);
	expect_nd(c,
		  GRANTED_ND("g", "{\"nodeNames\":[\"node3\"],\"retry\":{\"enabled\":true,"
				  "\"deadline\":\"2026-12-02T00:00:00Z\"},"
				  "\"additionalRequestors\":[\"drainer\"]}"),
		  was, NG_OK, NULL, NULL);
	/* Pending: the spec may change. */
	expect_nd(c, ND("p", "{\"nodeNames\":[\"node1\"]}"), ND("p", "{\"nodeNames\":[\"node3\"]}"),
		  NG_OK, NULL, NULL);
	kube_snapshot_release(c);
}

/* Every selector string of tests/support/selector-cases.c (apimachinery's label tests and more)
 * as spec.drain.podSelector and as spec.drain.waitForPodCompletion.podSelector: admitted when
 * Kubernetes accepts it, else 422 naming the field and saying where and why. */
static void test_drain_pod_selectors_are_read_as_kubernetes_reads_them(void **state)
{
	struct kube_snapshot *c = cluster("");
	static const char *const fields[][3] = {
	    {"spec.drain.podSelector: at byte ", "\"drain\":{\"podSelector\":", "}"},
	    {"spec.drain.waitForPodCompletion.podSelector: at byte ",
	     "\"drain\":{\"waitForPodCompletion\":{\"podSelector\":", "}}"},
	};
	for (size_t i = 0; i < ng_nselector_cases; i++) {
		const struct ng_selector_case *k = &ng_selector_cases[i];
		for (size_t f = 0; f < 2; f++) {
			struct ng_buf b;
			ng_buf_init(&b, 1u << 16);
			ng_status st =
			    ng_buf_puts(&b, "{\"kind\":\"NodeDisruption\",\"apiVersion\":"
					    "\"nodegate.io/v1alpha1\",\"metadata\":{"
					    "\"name\":\"x\"},\"spec\":{\"nodeNames\":["
					    "\"node1\"],");
			st = st ? st : ng_buf_puts(&b, fields[f][1]);
			st = st ? st : ng_buf_json_str(&b, k->text, strlen(k->text));
			st = st ? st : ng_buf_puts(&b, fields[f][2]);
			st = st ? st : ng_buf_puts(&b, "}}");
			assert_int_equal(st, NG_OK);
			expect_nd(c, b.data, NULL, k->parsed ? NG_OK : NG_EPARSE,
				  k->parsed ? NULL : fields[f][0], NULL);
			ng_buf_finish(&b);
		}
	}
	/* Past nodegate's own limits (Kubernetes has none): 422 as well, saying which. */
	char sel[1024];
	size_t at = 0;
	for (int i = 0; i < 65; i++)
		at += (size_t)snprintf(sel + at, sizeof(sel) - at, "%sk%d", i ? "," : "", i);
	char json[2048];
	(void)snprintf(json, sizeof(json),
		       ND("x", "{\"nodeNames\":[\"node1\"],\"drain\":{"
			       "\"podSelector\":\"%s\"}}"),
		       sel);
	expect_nd(c, json, NULL, NG_ELIMIT, "spec.drain.podSelector: more than 64 requirements",
		  NULL);
	kube_snapshot_release(c);
}

static void test_malformed_drain_fields_are_refused_naming_the_field(void **state)
{
	struct kube_snapshot *c = cluster("");
	static const struct {
		const char *spec, *why;
	} cases[] = {
	    {"\"drain\":{\"evictionStrategy\":\"Shred\"}", "spec.drain.evictionStrategy"},
	    {"\"drain\":{\"force\":\"yes\"}", "spec.drain.force: expected true or false"},
	    {"\"drain\":{\"timeoutSeconds\":-5}", "spec.drain.timeoutSeconds"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\",\"effect\":\"Sometimes\"}}",
	     "spec.drain.taint.effect"},
	    {"\"drain\":{\"podEvictionFilters\":[{\"byResourceNameRegex\":7}]}",
	     "spec.drain.podEvictionFilters[0].byResourceNameRegex: expected a regular "
	     "expression of at most 1024 bytes"},
	    {"\"drain\":{\"podSelector\":false}", "spec.drain.podSelector: expected a label "
						  "selector string"},
	    {"\"drain\":{\"rules\":[{\"behavior\":\"Drain\"},{\"behavior\":\"Skip\"},"
	     "{\"behavior\":\"Evict\"}]}",
	     "spec.drain.rules[2].behavior: must be Drain, Skip or WaitCompleted"},
	    {"\"drain\":{\"rules\":[{\"behavior\":\"Skip\",\"order\":5}]}",
	     "spec.drain.rules[0].order: only allowed with behavior Drain"},
	    {"\"operation\":{\"jobTemplate\":[]}", "spec.operation.jobTemplate"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"serviceAccountName\":\"nodegate\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]"
	     "}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.serviceAccountName: not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"serviceAccount\":\"nodegate\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}"
	     "}",
	     "spec.operation.jobTemplate.spec.template.spec.serviceAccount: not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"volumes\":[{\"name\":\"ca\",\"secret\":{\"secretName\":\"nodegate-ca\"}}],"
	     "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.volumes[0].secret: not allowed: an "
	     "operation may not read Secrets"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"volumes\":[{\"name\":\"e\",\"emptyDir\":{}},{\"name\":\"p\",\"projected\":{"
	     "\"sources\":[{\"configMap\":{\"name\":\"m\"}},{\"secret\":{\"name\":\"s\"}}]}}],"
	     "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.volumes[1].projected.sources[1].secret:"
	     " "
	     "not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"volumes\":[{\"name\":\"t\",\"projected\":{\"sources\":[{\"serviceAccountToken\":"
	     "{\"path\":\"t\"}}]}}],\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.volumes[0].projected.sources[0]."
	     "serviceAccountToken: not allowed: an operation gets no service account token"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"automountServiceAccountToken\":true,\"containers\":[{\"name\":\"c\",\"image\":"
	     "\"x\"}]"
	     "}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.automountServiceAccountToken: not "
	     "allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"env\":[{\"name\":\"K\","
	     "\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0].env[0].valueFrom."
	     "secretKeyRef: not allowed"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"initContainers\":[{\"name\":\"i\",\"image\":\"x\",\"envFrom\":[{\"secretRef\":{"
	     "\"name\":\"s\"}}]}],\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.initContainers[0].envFrom[0].secretRef:"
	     " "
	     "not allowed"},
	    {"\"operation\":{\"jobTemplate\":{}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"c\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[0].image: required"},
	    {"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
	     "\"containers\":[{\"name\":\"c\",\"image\":\"x\"},{\"image\":\"busybox\"}]}}}}}",
	     "spec.operation.jobTemplate.spec.template.spec.containers[1].name: required"},
	    {"\"drain\":{\"taint\":{\"key\":\"a/b/c\",\"effect\":\"NoSchedule\"}}",
	     "spec.drain.taint.key: invalid 'a/b/c': a qualified name"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\",\"value\":\"v v\",\"effect\":"
	     "\"NoExecute\"}}",
	     "spec.drain.taint.value: invalid 'v v'"},
	    {"\"drain\":{\"taint\":{\"key\":\"k\",\"effect\":\"\"}}",
	     "spec.drain.taint.effect: must be one of NoSchedule, PreferNoSchedule, NoExecute"},
	    {"\"additionalRequestors\":{}", "spec.additionalRequestors"},
	    {"\"duration\":\"soon\"", "spec.duration"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[1024];
		(void)snprintf(json, sizeof(json), ND("x", "{\"nodeNames\":[\"node1\"],%s}"),
			       cases[i].spec);
		expect_nd(c, json, NULL, NG_EPARSE, cases[i].why, NULL);
	}
	/* What the Node and Job APIs take is admitted. */
	expect_nd(c,
		  ND("x", "{\"nodeNames\":[\"node1\"],\"drain\":{\"taint\":{\"key\":"
			  "\"node.example.com/maint\",\"value\":\"v1.2_x\",\"effect\":"
			  "\"PreferNoSchedule\"}},\"operation\":{\"jobTemplate\":{\"spec\":{"
			  "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{"
			  "\"name\":\"fw-1\",\"image\":\"registry.example.com/fw:1\"},{\"name\":"
			  "\"log\",\"image\":\"busybox\"}]}}}}}}"),
		  NULL, NG_OK, NULL, NULL);
	kube_snapshot_release(c);
}

/* A Granted request setting every field of the CRD's spec (but nodeSelector: nodeNames and it
 * exclude each other; the selector has its own base below). */
#define FULL_SPEC                                                                                  \
	"\"type\":\"reboot\",\"requestor\":\"team-a\",\"priority\":5,"                             \
	"\"retry\":{\"enabled\":true,\"deadline\":\"2026-12-01T00:00:00Z\"},"                      \
	"\"startDate\":\"2026-11-30T00:00:00Z\",\"duration\":\"2h\","                              \
	"\"drain\":{\"cordon\":true,\"taint\":{\"key\":\"maint\",\"value\":\"v\",\"effect\":"      \
	"\"NoSchedule\"},\"waitForPodCompletion\":{\"podSelector\":\"job=x\",\"timeoutSeconds\":"  \
	"60},\"evictionStrategy\":\"Evict\",\"podSelector\":\"app=db\",\"podEvictionFilters\":[{"  \
	"\"byResourceNameRegex\":\"gpu\"}],\"force\":false,\"deleteEmptyDir\":false,"              \
	"\"timeoutSeconds\":30,\"skipWaitingForEviction\":false,\"waitForVolumeDetach\":true},"    \
	"\"operation\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[{"      \
	"\"name\":\"c\",\"image\":\"busybox\"}]}}}},\"waitForReboot\":true},"                      \
	"\"additionalRequestors\":[\"drainer\"]"

/* @base with the first occurrence of @from replaced by @to, as a Granted ND named "g". */
static char *edited(const char *base, const char *from, const char *to)
{
	const char *at = strstr(base, from);
	if (!at)
		fail_msg("\"%s\" is not in the base spec", from);
	size_t n = strlen(base) + strlen(to) + 256;
	char *spec = malloc(n), *json = malloc(n);
	(void)snprintf(spec, n, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
	(void)snprintf(json, n, GRANTED_ND("g", "{%s}"), spec);
	free(spec);
	return json;
}

static void test_every_spec_field_is_immutable_once_granted(void **state)
{
	struct kube_snapshot *c = cluster("");
	static const char base[] = "\"nodeNames\":[\"node1\",\"node2\"]," FULL_SPEC;
	/* One edit per field of the schema's spec: each must be refused. */
	static const char *const changes[][2] = {
	    {"\"node1\",\"node2\"", "\"node2\",\"node1\""},
	    {"\"reboot\"", "\"maintenance\""},
	    {"\"team-a\"", "\"team-b\""},
	    {"\"priority\":5", "\"priority\":6"},
	    {"\"enabled\":true", "\"enabled\":false"},
	    {"\"startDate\":\"2026-11-30T00:00:00Z\"", "\"startDate\":\"2026-11-30T01:00:00Z\""},
	    {"\"duration\":\"2h\"", "\"duration\":\"3h\""},
	    {"\"cordon\":true", "\"cordon\":false"},
	    {"\"key\":\"maint\"", "\"key\":\"other\""},
	    {"\"value\":\"v\"", "\"value\":\"w\""},
	    {"\"effect\":\"NoSchedule\"", "\"effect\":\"NoExecute\""},
	    {"\"podSelector\":\"job=x\"", "\"podSelector\":\"job=y\""},
	    {"\"timeoutSeconds\":60", "\"timeoutSeconds\":61"},
	    {"\"evictionStrategy\":\"Evict\"", "\"evictionStrategy\":\"Delete\""},
	    {"\"podSelector\":\"app=db\"", "\"podSelector\":\"app=web\""},
	    {"\"byResourceNameRegex\":\"gpu\"", "\"byResourceNameRegex\":\"tpu\""},
	    {"\"force\":false", "\"force\":true"},
	    {"\"deleteEmptyDir\":false", "\"deleteEmptyDir\":true"},
	    {"\"timeoutSeconds\":30", "\"timeoutSeconds\":31"},
	    {"\"skipWaitingForEviction\":false", "\"skipWaitingForEviction\":true"},
	    {"\"waitForVolumeDetach\":true", "\"waitForVolumeDetach\":false"},
	    {"\"image\":\"busybox\"", "\"image\":\"alpine\""},
	    {"\"waitForReboot\":true", "\"waitForReboot\":false"},
	    /* Fields removed, or added where absent, count as changes too. */
	    {"\"startDate\":\"2026-11-30T00:00:00Z\",", ""},
	    {"\"taint\":{\"key\":\"maint\",\"value\":\"v\",\"effect\":\"NoSchedule\"},", ""},
	    {"\"nodeNames\":[\"node1\",\"node2\"],", "\"nodeSelector\":{\"matchLabels\":{\"a\":"
						     "\"b\"}},"},
	};
	char *was = edited(base, "\"priority\"", "\"priority\"");
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		char *is = edited(base, changes[i][0], changes[i][1]);
		expect_nd(c, is, was, NG_EPARSE, "spec: immutable once Granted", NULL);
		free(is);
	}
	/* The two exceptions, and the same spec with its keys in another order. */
	char *is = edited(base, "\"deadline\":\"2026-12-01T00:00:00Z\"",
			  "\"deadline\":\"2027-01-01T00:00:00Z\"");
	expect_nd(c, is, was, NG_OK, NULL, NULL);
	free(is);
	is = edited(base, "\"additionalRequestors\":[\"drainer\"]", "\"additionalRequestors\":[]");
	expect_nd(c, is, was, NG_OK, NULL, NULL);
	free(is);
	is = edited(base, "\"name\":\"c\",\"image\":\"busybox\"",
		    "\"image\":\"busybox\",\"name\":\"c\"");
	expect_nd(c, is, was, NG_OK, NULL, NULL);
	free(is);
	free(was);
	/* The selector: another value or operator is refused; the same selection is not. */
	static const char sel[] = "\"nodeSelector\":{\"matchLabels\":{\"testselect\":\"test1\"},"
				  "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
				  "\"values\":[\"a\",\"b\"]}]}";
	was = edited(sel, "\"In\"", "\"In\"");
	is = edited(sel, "\"test1\"", "\"test2\"");
	expect_nd(c, is, was, NG_EPARSE, "spec: immutable once Granted", NULL);
	free(is);
	is = edited(sel, "\"In\"", "\"NotIn\"");
	expect_nd(c, is, was, NG_EPARSE, "spec: immutable once Granted", NULL);
	free(is);
	is = edited(sel, "[\"a\",\"b\"]", "[\"b\",\"a\"]");
	expect_nd(c, is, was, NG_OK, NULL, NULL);
	free(is);
	free(was);
	kube_snapshot_release(c);
}

static void test_V04_creator_annotation_cannot_change(void **state)
{
	struct kube_snapshot *c = cluster("");
	expect_nd(c,
		  "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		  "\"metadata\":{\"name\":\"a\",\"annotations\":{\"nodegate.io/created-by\":"
		  "\"mallory\"}},\"spec\":{\"nodeNames\":[\"node1\"]}}",
		  "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		  "\"metadata\":{\"name\":\"a\",\"annotations\":{\"nodegate.io/created-by\":"
		  "\"alice\"}},\"spec\":{\"nodeNames\":[\"node1\"]}}",
		  NG_EPARSE, "nodegate.io/created-by", NULL);
	expect_nd(c, ND("a", "{\"nodeNames\":[\"node1\"]}"),
		  "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\","
		  "\"metadata\":{\"name\":\"a\",\"annotations\":{\"nodegate.io/created-by\":"
		  "\"alice\"}},\"spec\":{\"nodeNames\":[\"node1\"]}}",
		  NG_EPARSE, "nodegate.io/created-by", NULL);
	kube_snapshot_release(c);
}

#define WITH_STATUS(status)                                                                        \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"a\"},\"spec\":{\"nodeNames\":[\"node1\"]},\"status\":{" status "}}"
#define DECIDED                                                                                    \
	"\"state\":\"Granted\",\"disruptedNodes\":[\"node1\"],\"grantedAt\":"                      \
	"\"2026-11-22T00:00:00Z\",\"disruptedDisruptionBudgets\":[{\"reference\":{\"kind\":"       \
	"\"NodeDisruptionBudget\",\"name\":\"pool\"},\"ok\":true,\"reason\":\"fits\"}]"

static ng_status status_check(const char *is, const char *was, const char *user, struct ng_err *why)
{
	static const char *const deciders[] = {"system:serviceaccount:nodegate:nodegate"};
	struct kube_one *obj = one_of(is), *old = was ? one_of(was) : NULL;
	ng_status st = pol_check_nd_status(obj, old, user, deciders, 1, why);
	kube_one_destroy(obj);
	kube_one_destroy(old);
	return st;
}

static void test_V06_decision_fields_belong_to_nodegate(void **state)
{
	struct ng_err why = {0};
	const char *pending = ND("a", "{\"nodeNames\":[\"node1\"]}");
	const char *granted = WITH_STATUS(DECIDED);
	assert_int_equal(status_check(granted, pending, "alice", &why), NG_EFORBIDDEN);
	assert_non_null(strstr(why.msg, "status.state: only nodegate "
					"(system:serviceaccount:nodegate:nodegate) decides"));
	/* Nor take a decision back. */
	assert_int_equal(status_check(pending, granted, "alice", &why), NG_EFORBIDDEN);
	assert_int_equal(
	    status_check(granted, pending, "system:serviceaccount:nodegate:nodegate", &why), NG_OK);
	/* Each decision field on its own. */
	static const char *const edits[][2] = {
	    {"\"state\":\"Granted\"", "\"state\":\"Rejected\""},
	    {"\"disruptedNodes\":[\"node1\"]", "\"disruptedNodes\":[\"node2\"]"},
	    {"\"grantedAt\":\"2026-11-22T00:00:00Z\"", "\"grantedAt\":\"2026-11-23T00:00:00Z\""},
	    {"\"ok\":true", "\"ok\":false"},
	    {"\"reason\":\"fits\"", "\"reason\":\"full\""},
	    {"\"name\":\"pool\"", "\"name\":\"other\""},
	};
	static const char *const fields[] = {"status.state",
					     "status.disruptedNodes",
					     "status.grantedAt",
					     "status.disruptedDisruptionBudgets",
					     "status.disruptedDisruptionBudgets",
					     "status.disruptedDisruptionBudgets"};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		char status[512], json[1024];
		const char *at = strstr(DECIDED, edits[i][0]);
		assert_non_null(at);
		(void)snprintf(status, sizeof(status), "%.*s%s%s", (int)(at - DECIDED), DECIDED,
			       edits[i][1], at + strlen(edits[i][0]));
		(void)snprintf(json, sizeof(json), WITH_STATUS("%s"), status);
		assert_int_equal(status_check(json, granted, "alice", &why), NG_EFORBIDDEN);
		if (!strstr(why.msg, fields[i]))
			fail_msg("%s: \"%s\" lacks %s", edits[i][1], why.msg, fields[i]);
	}
	/* A requestor's own condition, the drainer's progress: open. */
	assert_int_equal(
	    status_check(WITH_STATUS(DECIDED ",\"conditions\":[{\"type\":"
					     "\"RequestorFailed\",\"status\":\"True\"}],"
					     "\"drain\":{\"evictedPods\":3}"),
			 granted, "alice", &why),
	    NG_OK);
	assert_int_equal(status_check(pending, NULL, "alice", &why), NG_OK);
}

static void test_evaluate_decides_a_typed_request(void **state)
{
	struct kube_snapshot *c = cluster(NDB("pool", ON_TEST1 ",\"maxDisruptedNodes\":1}"));
	struct ng_arena *arena = ng_arena_create(1u << 20);
	struct pol_gate_decision d;
	struct ng_err why = {0};
	struct kube_one *one = one_of(ND("x", "{\"nodeNames\":[\"node1\"]}"));
	assert_int_equal(pol_evaluate_object(c, one, 1795000000000, arena, &d, &why), NG_OK);
	assert_int_equal(d.outcome, POL_GATE_GRANT);
	kube_one_destroy(one);
	one = one_of(ND("x", "{\"nodeSelector\":{}}"));
	assert_int_equal(pol_evaluate_object(c, one, 1795000000000, arena, &d, &why), NG_EPARSE);
	assert_non_null(strstr(why.msg, "would select every node"));
	kube_one_destroy(one);
	ng_arena_destroy(arena);
	kube_snapshot_release(c);
}

/* The drain filters checked stay in common/regex.h's process-wide cache: empty it. */
static int free_regex_cache(void **state)
{
	ng_regex_teardown();
	return 0;
}

/* Runs pol_warn_budget() on @text and checks the warning holds @part ("" when NULL). */
static void expect_budget_warning(const struct kube_snapshot *cluster, const char *text,
				  const char *part)
{
	char warning[400];
	struct kube_one *obj = one_of(text);
	pol_warn_budget(cluster, obj, warning, sizeof(warning));
	kube_one_destroy(obj);
	if ((part && !strstr(warning, part)) || (!part && warning[0]))
		fail_msg("%s: warning \"%s\", expected \"%s\"", text, warning, part ? part : "");
}

/* O53, O54: a budget that selects nothing now is admitted with a warning saying so. */
static void test_O53_O54_budgets_selecting_nothing_are_warned(void **state)
{
	(void)state;
	struct kube_snapshot *c = cluster(POD("db-0", "node1", "db"));
	expect_budget_warning(c,
			      ADB("a", "{\"podSelector\":{\"matchLabels\":{\"app\":\"db\"}},"
				       "\"maxDisruptions\":1}"),
			      NULL);
	expect_budget_warning(c,
			      ADB("a", "{\"podSelector\":{\"matchLabels\":{\"app\":\"dbb\"}},"
				       "\"maxDisruptions\":1}"),
			      "no pod in namespace default matches spec.podSelector now");
	expect_budget_warning(c,
			      NDB("n", "{\"nodeSelector\":{\"matchLabels\":{\"testselect\":"
				       "\"test1\"}},\"maxDisruptedNodes\":1}"),
			      NULL);
	expect_budget_warning(c,
			      NDB("n", "{\"nodeSelector\":{\"matchLabels\":{\"pool\":"
				       "\"nothing\"}},\"maxDisruptedNodes\":1}"),
			      "no node matches spec.nodeSelector now");
	expect_budget_warning(c, NGC("{}"), NULL);
	kube_snapshot_release(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_O53_O54_budgets_selecting_nothing_are_warned),
	    cmocka_unit_test(test_V07_V08_H09_budget_admission_checks),
	    cmocka_unit_test(test_S05_budget_windows_admission),
	    cmocka_unit_test(test_alert_gate_admission_checks),
	    cmocka_unit_test(test_V01_V02_V03_V05_V09_V10_nodedisruption_admission),
	    cmocka_unit_test(test_drain_pod_selectors_are_read_as_kubernetes_reads_them),
	    cmocka_unit_test(test_malformed_drain_fields_are_refused_naming_the_field),
	    cmocka_unit_test(test_every_spec_field_is_immutable_once_granted),
	    cmocka_unit_test(test_V04_creator_annotation_cannot_change),
	    cmocka_unit_test(test_V06_decision_fields_belong_to_nodegate),
	    cmocka_unit_test(test_evaluate_decides_a_typed_request),
	};
	return cmocka_run_group_tests(tests, NULL, free_regex_cache);
}
