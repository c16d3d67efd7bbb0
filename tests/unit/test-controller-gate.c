/* controller/gate: the gate's rounds driven by hand against snapshots, writing through an
 * in-memory API server (tests/support/fake-api): what is written for each decision, with which
 * precondition, when nothing is written, how a 409 or a lost write is handled, finalizers,
 * budget status; and the health-hook calls themselves. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "controller/gate_internal.h"
#include "kube/client.h"
#include "kube/config.h"
#include "tests/support/fake-api.h"
#include "tests/support/support.h"
#include "tests/unit/controller-gate-fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* 2025-11-24T16:00:00Z */
#define NOW 1764000000000

#define NODE(name, pool)                                                                           \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"labels\":{\"pool\":\"" pool "\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","  \
	"\"status\":\"True\"}]}}"
#define ND(name, rv, nodes, extra)                                                                 \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"resourceVersion\":\"" rv "\",\"creationTimestamp\":\"2025-11-24T" \
	"15:00:00Z\"" extra "},\"spec\":{\"nodeNames\":" nodes ",\"retry\":{\"enabled\":true}}}"
#define NDB_MAX1                                                                                   \
	"{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":" \
	"{\"name\":\"pool-a\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"a\"}},"     \
	"\"maxDisruptedNodes\":1}}"
#define CLUSTER(...)                                                                               \
	"{\"kind\":\"List\",\"items\":[" NODE("n1", "a") "," NODE("n2", "a") "," NODE(             \
	    "n3", "b") "," NDB_MAX1 "," __VA_ARGS__ "]}"

static const char *status_body(struct fx *fx, const char *nd, size_t i)
{
	char path[128];
	ng_fmt(path, sizeof(path), "/nodedisruptions/%s/status", nd);
	const struct fake_api_request *q = fake_api_find(&fx->api, "PATCH", path, i);
	return q ? q->body : NULL;
}

static void test_grant_is_written_with_its_precondition(void **state)
{
	struct fx *fx = *state;
	round_on(fx, CLUSTER(ND("m1", "17", "[\"n1\"]", "")), true, NOW);
	const char *b = status_body(fx, "m1", 0);
	assert_non_null(b);
	assert_non_null(strstr(b, "{\"metadata\":{\"resourceVersion\":\"17\"},\"status\":{"
				  "\"state\":\"Granted\",\"disruptedNodes\":[\"n1\"]"));
	/* Dated when known: a grant that passed the budgets is dated after its hooks step. */
	assert_non_null(strstr(b, "\"grantedAt\":\"20"));
	assert_non_null(strstr(b, "\"conditions\":[{\"type\":\"Granted\",\"status\":\"True\""));
	/* An Event says so, and budget status follows in the same round. */
	const struct fake_api_request *ev = fake_api_find(&fx->api, "POST", "/events", 0);
	assert_non_null(ev);
	assert_non_null(strstr(ev->body, "\"reason\":\"Granted\""));
	const struct fake_api_request *bs =
	    fake_api_find(&fx->api, "PATCH", "/nodedisruptionbudgets/pool-a/status", 0);
	assert_non_null(bs);
	assert_non_null(strstr(bs->body, "\"currentDisruptions\":1,\"disruptionsAllowed\":0"));
	struct gate_stats st;
	gate_get_stats(fx->g, &st);
	assert_int_equal(st.decisions[POL_GATE_GRANT], 1);
	assert_int_equal(st.conflicts + st.errors, 0);
	/* The decision histogram counts what it timed: its buckets never exceed its count. */
	uint64_t in_buckets = 0;
	for (int i = 0; i < GATE_DECISION_BUCKETS; i++)
		in_buckets += st.decision_buckets[i];
	assert_int_equal(st.decision_count, 1);
	assert_true(in_buckets <= st.decision_count);
}

static void test_ledger_holds_a_grant_the_cache_does_not_show_yet(void **state)
{
	struct fx *fx = *state;
	/* Two requests for a budget that allows one: the first granted, the second kept Pending
	 * in the same round, retrying after 10 s ± 20 % (5 s doubled once). */
	const char *both = CLUSTER(ND("m1", "1", "[\"n1\"]", "") "," ND("m2", "2", "[\"n2\"]", ""));
	round_on(fx, both, true, NOW);
	assert_non_null(strstr(status_body(fx, "m1", 0), "\"state\":\"Granted\""));
	const char *b2 = status_body(fx, "m2", 0);
	assert_non_null(strstr(b2, "\"state\":\"Pending\""));
	assert_non_null(strstr(b2, "\"retryCount\":1,\"nextRetryDate\":\"2025-11-24T16:00:"));
	/* The cache is behind (it still shows m1 undecided) and m2 is due again (after 12 s at
	 * most): m1's grant, written 15 s ago, still holds n1, so m2 cannot take the budget's only
	 * place. */
	fake_api_clear(&fx->api);
	round_on(fx, both, true, NOW + 15 * 1000);
	b2 = status_body(fx, "m2", 0);
	assert_non_null(b2);
	assert_non_null(strstr(b2, "\"state\":\"Pending\",\"disruptedNodes\":[\"n2\"]"));
}

#define PENDING_M2                                                                                 \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"m2\",\"resourceVersion\":\"3\",\"creationTimestamp\":\"2025-11-24T15:00:"      \
	"00Z\"},"                                                                                  \
	"\"spec\":{\"nodeNames\":[\"n2\"],\"retry\":{\"enabled\":true}},\"status\":{\"state\":"    \
	"\"Pending\",\"retryCount\":1}}"

static void test_nothing_new_is_not_written_again(void **state)
{
	struct fx *fx = *state;
	/* m2 waits on the budget (n1 is granted to m1). Once the cache shows its Pending answer,
	 * the same answer is not written again, on a new snapshot or without one, until its retry
	 * falls due. */
	round_on(fx, CLUSTER(ND("m1", "1", "[\"n1\"]", "") "," ND("m2", "2", "[\"n2\"]", "")), true,
		 NOW);
	assert_non_null(status_body(fx, "m2", 0));
	const char *json = CLUSTER(ND("m1", "1", "[\"n1\"]", "") "," PENDING_M2);
	fake_api_clear(&fx->api);
	round_on(fx, json, true, NOW + 100);
	round_on(fx, json, false, NOW + 200);
	assert_null(status_body(fx, "m2", 0));
	/* Due (10 s ± 20 %): decided and written again, retryCount 2. */
	round_on(fx, json, false, NOW + 13000);
	assert_non_null(status_body(fx, "m2", 0));
	assert_non_null(strstr(status_body(fx, "m2", 0), "\"retryCount\":2"));
}

static void test_a_pending_request_is_not_rewritten_for_a_count(void **state)
{
	struct fx *fx = *state;
	/* m2 waits on pool-a. A count in its reason moves (another node of the pool goes
	 * NotReady: "2 of 1 in use"), but the budget holding it back is the same: nothing is
	 * written until its retry. A second budget holding it back is news: written at once. */
#define M1_GRANTED                                                                                 \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"m1\",\"resourceVersion\":\"4\",\"creationTimestamp\":\"2025-11-24T15:00:"      \
	"00Z\"},"                                                                                  \
	"\"spec\":{\"nodeNames\":[\"n1\"]},\"status\":{\"state\":\"Granted\",\"disruptedNodes\":[" \
	"\"n1\"]}}"
#define N4_NOT_READY                                                                               \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n4\",\"labels\":{"      \
	"\"pool\":\"a\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}" \
	"}"
	round_on(fx, CLUSTER(ND("m1", "1", "[\"n1\"]", "") "," ND("m2", "2", "[\"n2\"]", "")), true,
		 NOW);
	assert_non_null(strstr(status_body(fx, "m2", 0), "pool-a: 1 of 1 in use"));
	fake_api_clear(&fx->api);
	/* (New objects go last: the test's snapshots intern names in order, and the gate knows
	 * a request by its id, as it does across snapshots of one cache.) */
	round_on(fx, CLUSTER(M1_GRANTED "," PENDING_M2 "," N4_NOT_READY), true, NOW + 100);
	assert_null(status_body(fx, "m2", 0));
	round_on(fx,
		 CLUSTER(M1_GRANTED
			 "," PENDING_M2 "," N4_NOT_READY
			 ",{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/"
			 "v1alpha1\",\"metadata\":{\"name\":\"every\"},\"spec\":{"
			 "\"nodeSelector\":{},\"maxDisruptedNodes\":1}}"),
		 true, NOW + 200);
	const char *b = status_body(fx, "m2", 0);
	assert_non_null(b);
	assert_non_null(strstr(b, "2 budgets fail: "));
	assert_non_null(strstr(b, "pool-a: 2 of 1 in use"));
#undef N4_NOT_READY
#undef M1_GRANTED
}

/* A Pending request's condition (and its Event) names every failing budget, not the first. */
static void test_pending_condition_names_each_failing_budget(void **state)
{
	struct fx *fx = *state;
	round_on(fx,
		 CLUSTER("{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/"
			 "v1alpha1\",\"metadata\":{\"name\":\"every\"},\"spec\":{"
			 "\"nodeSelector\":{},\"maxDisruptedNodes\":1}}," ND(
			     "m1", "1", "[\"n1\"]", "") "," ND("m2", "2", "[\"n2\"]", "")),
		 true, NOW);
	const char *b = status_body(fx, "m2", 0);
	assert_non_null(b);
	const char *cond = strstr(b, "\"reason\":\"Pending\",\"message\":\"2 budgets fail: ");
	assert_non_null(cond);
	const char *end = strchr(cond + strlen("\"reason\":\"Pending\",\"message\":\""), '"');
	assert_non_null(end);
	char msg[1024];
	ng_fmt(msg, sizeof(msg), "%.*s", (int)(end - cond), cond);
	assert_non_null(strstr(msg, "NodeDisruptionBudget pool-a: 1 of 1 in use"));
	assert_non_null(strstr(msg, " | NodeDisruptionBudget every: 1 of 1 in use"));
	const struct fake_api_request *ev = NULL;
	for (size_t i = 0; (ev = fake_api_find(&fx->api, "POST", "/events", i)); i++)
		if (strstr(ev->body, "\"reason\":\"Retrying\""))
			break;
	assert_non_null(ev);
	/* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): asserted just above */
	assert_non_null(strstr(ev->body, "2 budgets fail: "));
	assert_non_null(strstr(ev->body, "NodeDisruptionBudget every"));
}

static void test_conflict_ends_the_round_and_decides_again(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api, &(struct fake_api_reply){.path_contains = "/m1/status",
							  .http = 409,
							  .body = "{\"reason\":\"Conflict\"}",
							  .times = 1});
	const char *json = CLUSTER(ND("m1", "1", "[\"n1\"]", "") "," ND("m3", "3", "[\"n3\"]", ""));
	round_on(fx, json, true, NOW);
	struct gate_stats st;
	gate_get_stats(fx->g, &st);
	assert_int_equal(st.conflicts, 1);
	/* The round stopped at the conflict: m3 (ranked after m1 by creation time, then name) was
	 * not decided, and nothing was recorded for m1. */
	assert_null(status_body(fx, "m3", 0));
	assert_null(fake_api_find(&fx->api, "POST", "/events", 0));
	/* The next snapshot: both are decided. */
	fake_api_clear(&fx->api);
	round_on(fx, json, true, NOW + 1000);
	assert_non_null(strstr(status_body(fx, "m1", 0), "Granted"));
	assert_non_null(strstr(status_body(fx, "m3", 0), "Granted"));
}

static void test_a_lost_grant_write_still_holds_its_nodes(void **state)
{
	struct fx *fx = *state;
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){.path_contains = "/m1/status", .fail = true});
	const char *json = CLUSTER(ND("m1", "1", "[\"n1\"]", "") "," ND("m2", "2", "[\"n2\"]", ""));
	round_on(fx, json, true, NOW);
	struct gate_stats st;
	gate_get_stats(fx->g, &st);
	assert_int_equal(st.errors, 1);
	/* The grant may have been written: until the cache says, n1 counts as disrupted, so
	 * m2 (same budget, max 1) is not granted in the next round. */
	fake_api_clear(&fx->api);
	round_on(fx, json, true, NOW + 1000);
	const char *b2 = status_body(fx, "m2", 0);
	assert_true(!b2 || !strstr(b2, "Granted"));
}

#define ND_STATUS(name, rv, nodes, extra, status)                                                  \
	"{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"" extra                               \
	"},\"spec\":{\"nodeNames\":" nodes "},\"status\":" status "}"

static bool sent(struct fx *fx, const char *method, const char *path, const char *body_part)
{
	for (size_t i = 0; fake_api_find(&fx->api, method, path, i); i++) {
		const struct fake_api_request *q = fake_api_find(&fx->api, method, path, i);
		if (strstr(q->body, body_part))
			return true;
	}
	return false;
}

static void test_finalizers_added_and_released(void **state)
{
	struct fx *fx = *state;
	/* A request already Pending in the cache gets the finalizer, next to the ones it has; a
	 * Granted one being deleted is released: an Event, then the finalizer removed, each
	 * write carrying the resourceVersion it was decided on. */
	round_on(
	    fx,
	    CLUSTER(ND_STATUS(
		"p1", "5", "[\"n3\"]", ",\"finalizers\":[\"other.io/x\"]",
		"{\"state\":\"Pending\"}") "," ND_STATUS("gone", "9", "[\"n1\"]",
							 ",\"deletionTimestamp\":\"2025-11-24T15:"
							 "59:00Z\",\"finalizers\":[\"nodegate.io/"
							 "gate\"]",
							 "{\"state\":\"Granted\","
							 "\"disruptedNodes\":[\"n1\"]}")),
	    true, NOW);
	assert_true(sent(fx, "PATCH", "/nodedisruptions/p1",
			 "{\"metadata\":{\"resourceVersion\":\"5\",\"finalizers\":[\"other.io/x\","
			 "\"nodegate.io/gate\"]}}"));
	assert_true(sent(fx, "PATCH", "/nodedisruptions/gone",
			 "{\"metadata\":{\"resourceVersion\":\"9\",\"finalizers\":[]}}"));
	assert_true(sent(fx, "POST", "/events", "\"reason\":\"Released\""));
	/* The released request's node is free again: not counted against the budget. */
	assert_true(
	    sent(fx, "PATCH", "/nodedisruptionbudgets/pool-a/status", "\"currentDisruptions\":0"));
}

static void test_budget_status_only_when_it_changes(void **state)
{
	struct fx *fx = *state;
	const char *json = CLUSTER(ND("m3", "3", "[\"n3\"]", ""));
	round_on(fx, json, true, NOW);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", "/nodedisruptionbudgets/"), 1);
	/* Same budget state a second later: not written again. */
	fake_api_clear(&fx->api);
	round_on(fx, json, true, NOW + 1000);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", "/nodedisruptionbudgets/"), 0);
	/* A budget deleted meanwhile (404) is not an error. */
	gate_destroy(fx->g);
	struct gate_config gc = {.identity = "replica-a"};
	fx->g = gate_create(&gc, fx->c);
	fake_api_reply(&fx->api,
		       &(struct fake_api_reply){.path_contains = "budgets/", .http = 404});
	round_on(fx, json, true, NOW);
	struct gate_stats st;
	gate_get_stats(fx->g, &st);
	assert_int_equal(st.errors, 0);
}

/* A budget status pass waits while something new is to be decided (here a hook's answer), so
 * a request that arrived during a round's writes is decided first; never longer than 2 s after
 * the last pass, however busy the gate. */
static void test_budget_status_waits_for_news_but_not_for_long(void **state)
{
	struct fx *fx = *state;
	const char *quiet = CLUSTER(ND("m3", "3", "[\"n3\"]", ""));
	const char *busy = CLUSTER(ND("m1", "1", "[\"n1\"]", ""));
	const char *const path = "/nodedisruptionbudgets/";
	round_on(fx, quiet, true, NOW);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", path), 1);
	fake_api_clear(&fx->api);
	atomic_store(&fx->g->hooks_answered, true);
	round_on(fx, busy, true, NOW + 600); /* pool-a's status changed: m1 */
	assert_int_equal(fake_api_count(&fx->api, "PATCH", path), 0);
	atomic_store(&fx->g->hooks_answered, false);
	round_on(fx, busy, true, NOW + 700);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", path), 1);
	fake_api_clear(&fx->api);
	atomic_store(&fx->g->hooks_answered, true);
	round_on(fx, quiet, true, NOW + 1300);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", path), 0);
	round_on(fx, quiet, true, NOW + 2600);
	assert_int_equal(fake_api_count(&fx->api, "PATCH", path), 0);
	round_on(fx, quiet, true, NOW + 2700); /* 2 s since the last pass: written anyway */
	assert_int_equal(fake_api_count(&fx->api, "PATCH", path), 1);
	atomic_store(&fx->g->hooks_answered, false);
}

/* Events queued by a round's decisions wait likewise while something new is to be decided,
 * and are written once queued for a second, news or not. */
static void test_events_wait_for_news_but_not_for_long(void **state)
{
	struct fx *fx = *state;
	const char *json = CLUSTER(ND("m3", "3", "[\"n3\"]", ""));
	atomic_store(&fx->g->hooks_answered, true);
	round_on(fx, json, true, NOW); /* m3 granted: its Event is queued */
	assert_non_null(strstr(status_body(fx, "m3", 0), "\"state\":\"Granted\""));
	assert_int_equal(fake_api_count(&fx->api, "POST", "/events"), 0);
	round_on(fx, json, true, NOW + 900);
	assert_int_equal(fake_api_count(&fx->api, "POST", "/events"), 0);
	round_on(fx, json, true, NOW + 1000);
	const struct fake_api_request *ev = fake_api_find(&fx->api, "POST", "/events", 0);
	assert_non_null(ev);
	assert_non_null(strstr(ev->body, "\"reason\":\"Granted\""));
	atomic_store(&fx->g->hooks_answered, false);
}

/* ---- the hook calls ---- */

#define ADB_HOOK(hook)                                                                             \
	"{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","       \
	"\"metadata\":{\"name\":\"db\",\"namespace\":\"default\"},\"spec\":{\"podSelector\":{"     \
	"\"matchLabels\":{\"app\":\"db\"}},\"maxDisruptions\":1,\"healthHook\":" hook "}}"
#define POD_DB                                                                                     \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"db-0\",\"namespace\":"   \
	"\"default\",\"labels\":{\"app\":\"db\"}},\"spec\":{\"nodeName\":\"n1\"}}"

/* Calls the one hook of ADB "db" for a request on n1 under NodeGateConfig @ngc ("" = none),
 * with @deny (@ndeny) as the addresses the gate found it must refuse. */
static struct pol_hook_call call_deny(const char *hook, const char *ngc,
				      const struct kube_cidr *deny, size_t ndeny)
{
	char json[4096];
	ng_fmt(json, sizeof(json), CLUSTER("%s,%s,%s%s%s"), ADB_HOOK("%s"), POD_DB,
	       ND("m1", "1", "[\"n1\"]", ""), *ngc ? "," : "", ngc);
	char full[4096];
	ng_fmt(full, sizeof(full), json, hook);
	struct kube_snapshot *s = ng_test_snapshot(full);
	struct pol_gate_config cfg;
	pol_gate_config_from(s, &cfg);
	struct pol_ledger *l = pol_ledger_create(s);
	struct ng_arena *arena = ng_arena_create(1u << 20);
	size_t n;
	const struct kube_nd *nds = kube_snapshot_nds(s, &n);
	struct pol_gate_decision d;
	assert_int_equal(pol_evaluate_disruption(s, &cfg, l, &nds[0], NOW, arena, &d), NG_OK);
	struct kube_hook_policy p;
	pol_hook_policy_from(s, &p);
	struct pol_hook_call *calls;
	assert_int_equal(pol_hooks_prepare(s, NULL, &d, &p, arena, &calls, &n), NG_OK);
	assert_int_equal(n, 1);
	_Atomic bool stop = false;
	assert_int_equal(gate_hooks_call(calls, n, &p, deny, ndeny, "{}", 2, &stop), NG_OK);
	struct pol_hook_call c = calls[0];
	ng_arena_destroy(arena);
	pol_ledger_destroy(l);
	kube_snapshot_release(s);
	return c;
}

static struct pol_hook_call call_one(const char *hook, const char *ngc)
{
	return call_deny(hook, ngc, NULL, 0);
}

#define NGC_HOOKS(spec)                                                                            \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"default\"},\"spec\":{\"healthHooks\":" spec "}}"
#define NGC_CIDRS NGC_HOOKS("{\"allowedCIDRs\":[\"10.0.0.0/8\"]}")
#define NGC_LOOPBACK NGC_HOOKS("{\"allowedCIDRs\":[\"127.0.0.0/8\"]}")

/* A TCP listener on 127.0.0.1 (an ephemeral port into @ret_port). */
static int listen_loopback(int *ret_port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 8), 0);
	socklen_t len = sizeof(a);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*ret_port = (int)ntohs(a.sin_port);
	return fd;
}

/* No connection is waiting on listener @fd. */
static void assert_never_connected(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 0);
}

static void test_loopback_hook_without_policy_is_refused_with_a_fixed_word(void **state)
{
	/* Something listens: a connection would be seen. Every form of the loopback address is
	 * refused before connecting, and the message says so in fixed words only: no address,
	 * no port, no curl text. */
	int port;
	int fd = listen_loopback(&port);
	static const char *const hosts[] = {
	    "127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "0", "0.0.0.0", "2130706433", "0x7f.1"};
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		char hook[128];
		ng_fmt(hook, sizeof(hook), "{\"url\":\"https://%s:%d/\"}", hosts[i], port);
		struct pol_hook_call c = call_one(hook, "");
		if (c.result != POL_HOOK_DENIED || strcmp(c.message, "address not allowed") != 0)
			fail_msg("%s: result %s, message \"%s\"", hosts[i],
				 pol_hook_result_str(c.result), c.message);
		assert_int_equal(c.code, 0);
		/* The address is checked where curl connects: nothing is opened. */
		assert_never_connected(fd);
	}
	/* An allowedCIDRs list that does not name loopback does not open it. */
	struct pol_hook_call c = call_one("{\"url\":\"https://127.0.0.1:1/\"}", NGC_CIDRS);
	assert_int_equal(c.result, POL_HOOK_DENIED);
	assert_string_equal(c.message, "address not allowed");
	c = call_one("{\"url\":\"https://[::1]:1/\"}", NGC_LOOPBACK);
	assert_int_equal(c.result, POL_HOOK_DENIED);
	assert_string_equal(c.message, "address not allowed");
	close(fd);
}

static void test_loopback_hook_is_called_once_allowed_cidrs_names_it(void **state)
{
	/* Nothing listens on port 1: the call was made, and failed in fixed words. */
	struct pol_hook_call c = call_one("{\"url\":\"https://127.0.0.1:1/\"}", NGC_LOOPBACK);
	assert_int_equal(c.result, POL_HOOK_ERROR);
	assert_string_equal(c.message, "connection refused");
	assert_int_equal(c.code, 0);
}

static void test_metadata_address_is_refused_before_connecting(void **state)
{
	/* Refused before any connection: no timeout to wait for. */
	struct pol_hook_call c =
	    call_one("{\"url\":\"https://169.254.169.254/\",\"timeoutSeconds\":25}", "");
	assert_int_equal(c.result, POL_HOOK_DENIED);
	assert_string_equal(c.message, "address not allowed");
	assert_true(c.duration_ms < 5000);
}

static void test_gate_refuses_the_api_server_and_its_own_addresses(void **state)
{
	/* What a gate finds when it is created: the kubeconfig server's host,
	 * KUBERNETES_SERVICE_HOST and this host's interface addresses (loopback at least). */
	assert_int_equal(setenv("KUBERNETES_SERVICE_HOST", "fd00::a", 1), 0);
	struct kube_config kc = {.server = (char *)"https://10.96.0.1:443/prefix"};
	struct gate_config gc = {.kube = &kc, .identity = "replica-a"};
	struct gate *g = gate_create(&gc, NULL);
	(void)unsetenv("KUBERNETES_SERVICE_HOST");
	assert_non_null(g);
	static const struct kube_cidr want[] = {
	    {4, 32, {10, 96, 0, 1}}, {6, 128, {0xfd, [15] = 0x0a}}, {4, 32, {127, 0, 0, 1}}};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		bool found = false;
		for (size_t j = 0; j < g->ndeny && !found; j++)
			found = memcmp(&g->deny[j], &want[i], sizeof(want[i])) == 0;
		if (!found)
			fail_msg("address %zu not in the gate's list of %zu", i, g->ndeny);
	}
	/* 10.0.0.0/8 lists the API server's address but does not open it: refused before any
	 * connection is tried. */
	struct pol_hook_call c =
	    call_deny("{\"url\":\"https://10.96.0.1:1/\",\"timeoutSeconds\":25}", NGC_CIDRS,
		      g->deny, g->ndeny);
	assert_int_equal(c.result, POL_HOOK_DENIED);
	assert_string_equal(c.message, "address not allowed");
	assert_true(c.duration_ms < 5000);
	gate_destroy(g);
}

/* Answers one HTTP request on listener @fd with @answer (the whole response), then closes. */
struct http_once {
	int fd;
	const char *answer;
};

static void *serve_once(void *arg)
{
	const struct http_once *h = arg;
	struct pollfd p = {.fd = h->fd, .events = POLLIN};
	int c = poll(&p, 1, 10000) == 1 ? accept(h->fd, NULL, NULL) : -1; /* never hang the test */
	if (c < 0)
		return NULL;
	char buf[4096];
	size_t got = 0;
	while (got < sizeof(buf) - 1) { /* the headers, then the 2-byte body "{}" */
		ssize_t n = read(c, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
		const char *end = strstr(buf, "\r\n\r\n");
		if (end && buf + got - (end + 4) >= 2)
			break;
	}
	ssize_t w = write(c, h->answer, strlen(h->answer));
	(void)w;
	close(c);
	return NULL;
}

/* Calls an http:// hook on a server that answers @answer, under a policy allowing it. */
static struct pol_hook_call call_answering(const char *answer, const char *policy)
{
	int port;
	struct http_once h = {listen_loopback(&port), answer};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, serve_once, &h), 0);
	char hook[128], ngc[512];
	ng_fmt(hook, sizeof(hook), "{\"url\":\"http://127.0.0.1:%d/ready\"}", port);
	ng_fmt(ngc, sizeof(ngc), NGC_HOOKS("%s"), policy);
	struct pol_hook_call c = call_one(hook, ngc);
	pthread_join(t, NULL);
	close(h.fd);
	return c;
}

static void test_H02_an_answer_is_counted_never_quoted(void **state)
{
	static const char lagging[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 22\r\n"
				      "Connection: close\r\n\r\nreplica lagging SECRET";
	struct pol_hook_call c =
	    call_answering(lagging, "{\"allowedCIDRs\":[\"127.0.0.0/8\"],\"allowHTTP\":true}");
	assert_int_equal(c.result, POL_HOOK_FAILED);
	assert_int_equal(c.code, 503);
	assert_int_equal(c.bytes, 22);
	assert_string_equal(c.message, "HTTP status 503");
	/* H08: past maxResponseBytes reading stops; the status line decides. */
	static const char huge[] = "HTTP/1.1 200 OK\r\nContent-Length: 20\r\nConnection: close\r\n"
				   "\r\n01234567890123456789";
	c = call_answering(huge, "{\"allowedCIDRs\":[\"127.0.0.0/8\"],\"allowHTTP\":true,"
				 "\"maxResponseBytes\":4}");
	assert_int_equal(c.result, POL_HOOK_OK);
	assert_int_equal(c.code, 200);
	assert_true(c.truncated);
	assert_string_equal(c.message, "HTTP status 200; body too large");
}

static void test_H03_a_silent_hook_times_out(void **state)
{
	/* A listener that never answers: the TCP handshake completes from the backlog, TLS never
	 * does. */
	int port;
	int fd = listen_loopback(&port);
	char hook[128];
	ng_fmt(hook, sizeof(hook), "{\"url\":\"https://127.0.0.1:%d/\",\"timeoutSeconds\":1}",
	       port);
	struct pol_hook_call c = call_one(hook, NGC_LOOPBACK);
	close(fd);
	assert_int_equal(c.result, POL_HOOK_TIMEOUT);
	assert_string_equal(c.message, "timeout");
}

/* A hook server that answers 200 to one request, but only once the test lets it. */
struct held_hook {
	int fd;
	int release[2]; /* a byte on release[1] lets the answer go */
	_Atomic bool asked;
};

static void *serve_when_released(void *arg)
{
	struct held_hook *h = arg;
	struct pollfd p = {.fd = h->fd, .events = POLLIN};
	int c = poll(&p, 1, 10000) == 1 ? accept(h->fd, NULL, NULL) : -1; /* never hang the test */
	if (c < 0)
		return NULL;
	char buf[4096];
	ssize_t n = read(c, buf, sizeof(buf));
	(void)n;
	atomic_store(&h->asked, true);
	struct pollfd r = {.fd = h->release[0], .events = POLLIN};
	(void)poll(&r, 1, 10000);
	static const char ok[] =
	    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
	ssize_t w = write(c, ok, sizeof(ok) - 1);
	(void)w;
	close(c);
	return NULL;
}

static void test_a_request_waiting_on_its_hook_holds_its_share_and_holds_up_no_one(void **state)
{
	struct fx *fx = *state;
	int port;
	struct held_hook h = {.fd = listen_loopback(&port)};
	assert_int_equal(pipe(h.release), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, serve_when_released, &h), 0);
	char hook[128], tmpl[4096], json[4096];
	ng_fmt(hook, sizeof(hook), "{\"url\":\"http://127.0.0.1:%d/ready\"}", port);
	/* m1 (n1, the db pod's node) needs the db hook; m2 (n2) shares pool-a's one place with it;
	 * m3 (n3, pool b) depends on no hook. */
	ng_fmt(tmpl, sizeof(tmpl), CLUSTER("%s,%s,%s,%s,%s,%s"), ADB_HOOK("%s"), POD_DB,
	       ND("m1", "1", "[\"n1\"]", ""), ND("m2", "2", "[\"n2\"]", ""),
	       ND("m3", "3", "[\"n3\"]", ""),
	       NGC_HOOKS("{\"allowedCIDRs\":[\"127.0.0.0/8\"],\"allowHTTP\":true}"));
	ng_fmt(json, sizeof(json), tmpl, hook);

	/* The round returns while the hook has not answered: m3 is granted, m2 waits behind the
	 * share m1 holds, and nothing is written for m1 yet. */
	round_on(fx, json, true, NOW);
	assert_non_null(strstr(status_body(fx, "m3", 0), "\"state\":\"Granted\""));
	const char *b2 = status_body(fx, "m2", 0);
	assert_non_null(b2);
	assert_non_null(strstr(b2, "\"state\":\"Pending\""));
	assert_non_null(strstr(b2, "NodeDisruptionBudget pool-a: 1 of 1 in use"));
	assert_null(status_body(fx, "m1", 0));
	assert_int_equal(atomic_load(&fx->g->hooks_waiting), 1);
	/* Another round meanwhile decides nothing for m1 and asks its hook nothing more. */
	round_on(fx, json, true, NOW + 1000);
	assert_null(status_body(fx, "m1", 0));

	/* The hook answers: the next round grants m1 first, with its hook's answer. */
	assert_int_equal(write(h.release[1], "x", 1), 1);
	for (int i = 0; i < 10000 && !atomic_load(&fx->g->hooks_answered); i++)
		usleep(1000);
	assert_true(atomic_load(&fx->g->hooks_answered));
	atomic_store(&fx->g->hooks_answered, false);
	round_on(fx, json, true, NOW + 2000);
	assert_non_null(strstr(status_body(fx, "m1", 0), "\"state\":\"Granted\""));
	assert_int_equal(atomic_load(&fx->g->hooks_waiting), 0);
	assert_non_null(
	    fake_api_find(&fx->api, "PATCH", "/applicationdisruptionbudgets/db/status", 0));
	pthread_join(t, NULL);
	close(h.fd);
	close(h.release[0]);
	close(h.release[1]);
}

#define ADB_HOOK_NAMED(name, hook)                                                                 \
	"{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","       \
	"\"metadata\":{\"name\":\"" name                                                           \
	"\",\"namespace\":\"default\"},\"spec\":{\"podSelector\":{"                                \
	"\"matchLabels\":{\"app\":\"" name "\"}},\"maxDisruptions\":1,\"healthHook\":" hook "}}"
#define POD_NAMED(name)                                                                            \
	"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name "-0\","           \
	"\"namespace\":\"default\",\"labels\":{\"app\":\"" name                                    \
	"\"}},\"spec\":{\"nodeName\":\"n1\"}}"

static void test_hook_answers_stand_when_the_budgets_come_in_another_order(void **state)
{
	/* Every snapshot may list the budgets in another order (a budget whose status the gate
	 * just wrote moves to the end). The answers of a request's hooks are matched to its
	 * budgets by identity: when they come back, the request is decided with them, and no
	 * hook is asked twice (each server below answers one request only). */
	struct fx *fx = *state;
	int pa, pb;
	struct held_hook ha = {.fd = listen_loopback(&pa)}, hb = {.fd = listen_loopback(&pb)};
	assert_int_equal(pipe(ha.release), 0);
	assert_int_equal(pipe(hb.release), 0);
	pthread_t ta, tb;
	assert_int_equal(pthread_create(&ta, NULL, serve_when_released, &ha), 0);
	assert_int_equal(pthread_create(&tb, NULL, serve_when_released, &hb), 0);
	char tmpl[4096], before[4096], after[4096];
	const char *ngc = NGC_HOOKS("{\"allowedCIDRs\":[\"127.0.0.0/8\"],\"allowHTTP\":true}");
	ng_fmt(tmpl, sizeof(tmpl), CLUSTER("%s,%s,%s,%s,%s,%s"),
	       ADB_HOOK_NAMED("alpha", "{\"url\":\"http://127.0.0.1:%d/a\"}"),
	       ADB_HOOK_NAMED("beta", "{\"url\":\"http://127.0.0.1:%d/b\"}"), POD_NAMED("alpha"),
	       POD_NAMED("beta"), ND("m1", "1", "[\"n1\"]", ""), ngc);
	ng_fmt(before, sizeof(before), tmpl, pa, pb);
	ng_fmt(tmpl, sizeof(tmpl), CLUSTER("%s,%s,%s,%s,%s,%s"),
	       ADB_HOOK_NAMED("beta", "{\"url\":\"http://127.0.0.1:%d/b\"}"),
	       ADB_HOOK_NAMED("alpha", "{\"url\":\"http://127.0.0.1:%d/a\"}"), POD_NAMED("alpha"),
	       POD_NAMED("beta"), ND("m1", "1", "[\"n1\"]", ""), ngc);
	ng_fmt(after, sizeof(after), tmpl, pb, pa);

	round_on(fx, before, true, NOW);
	assert_null(status_body(fx, "m1", 0));
	for (int i = 0; i < 10000 && !(atomic_load(&ha.asked) && atomic_load(&hb.asked)); i++)
		usleep(1000);
	assert_true(atomic_load(&ha.asked) && atomic_load(&hb.asked));
	assert_int_equal(write(ha.release[1], "x", 1), 1);
	assert_int_equal(write(hb.release[1], "x", 1), 1);
	for (int i = 0; i < 10000 && !atomic_load(&fx->g->hooks_answered); i++)
		usleep(1000);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_true(atomic_load(&fx->g->hooks_answered));
	atomic_store(&fx->g->hooks_answered, false);
	round_on(fx, after, true, NOW + 1000);
	const char *b = status_body(fx, "m1", 0);
	assert_non_null(b);
	assert_non_null(strstr(b, "\"state\":\"Granted\""));
	assert_int_equal(atomic_load(&fx->g->hooks_waiting), 0);
	close(ha.fd);
	close(hb.fd);
	for (int i = 0; i < 2; i++) {
		close(ha.release[i]);
		close(hb.release[i]);
	}
}

/* ---- the alert gate ---- */

#define NGC_ALERT(hooks, alert)                                                                    \
	"{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"      \
	"\"name\":\"default\"},\"spec\":{\"healthHooks\":" hooks ",\"alertGate\":" alert "}}"

/* Waits (bounded) until the alert gate's question has ended. */
static void wait_alert_answer(struct fx *fx)
{
	for (int i = 0; i < 10000 && !atomic_load(&fx->g->alert_answered); i++)
		usleep(1000);
	assert_true(atomic_load(&fx->g->alert_answered));
	atomic_store(&fx->g->alert_answered, false);
}

static void test_alert_gate_failure_under_deny_holds_every_grant_until_the_cache_ends(void **state)
{
	struct fx *fx = *state;
	/* Prometheus's host is not among healthHooks.allowedHosts: never asked, an error at once.
	 * m1 and m3 would be granted (pool-a allows one, pool b has no budget); both stay Pending,
	 * each naming the gate, retrying when the 2 s answer expires (before their 4..6 s backoff).
	 */
	const char *json =
	    CLUSTER(ND("m1", "1", "[\"n1\"]", "") "," ND("m3", "3", "[\"n3\"]", "") "," NGC_ALERT(
		"{\"allowedHosts\":[\"*.example.com\"]}",
		"{\"prometheusURL\":\"https://prometheus.monitoring.svc\",\"query\":\"ALERTS\","
		"\"cacheSeconds\":2}"));
	round_on(fx, json, true, NOW);
	for (int i = 0; i < 2; i++) {
		const char *b = status_body(fx, i ? "m3" : "m1", 0);
		assert_non_null(b);
		assert_non_null(strstr(b, "\"state\":\"Pending\""));
		assert_non_null(
		    strstr(b, "alert gate: query failed (URL not allowed by NodeGateConfig "
			      "healthHooks); failurePolicy Deny"));
		assert_non_null(strstr(b, "\"nextRetryDate\":\"2025-11-24T16:00:02"));
	}
	assert_null(fx->g->alert_job);
	assert_int_equal(fx->g->alert_evals[2], 1); /* one answer for both */
	struct gate_stats st;
	gate_get_stats(fx->g, &st);
	assert_int_equal(st.decisions[POL_GATE_GRANT], 0);
}

static void test_alert_gate_failure_under_ignore_lets_grants_through(void **state)
{
	struct fx *fx = *state;
	const char *json = CLUSTER(ND("m1", "1", "[\"n1\"]", "") "," NGC_ALERT(
	    "{\"allowedHosts\":[\"*.example.com\"]}",
	    "{\"prometheusURL\":\"https://prometheus.monitoring.svc\",\"alertNameRegex\":\".*\","
	    "\"failurePolicy\":\"Ignore\"}"));
	round_on(fx, json, true, NOW);
	assert_non_null(strstr(status_body(fx, "m1", 0), "\"state\":\"Granted\""));
	assert_int_equal(fx->g->alert_evals[2], 1);
	assert_int_equal(fx->g->alert_ignored, 1);
	struct ng_buf out;
	ng_buf_init(&out, 1u << 16);
	assert_int_equal(gate_render_alert_metrics(fx->g, &out), NG_OK);
	assert_non_null(
	    strstr(out.data, "nodegate_alert_gate_evaluations_total{result=\"error\"} 1"));
	assert_non_null(strstr(out.data, "nodegate_alert_gate_errors_ignored_total 1"));
	assert_non_null(strstr(out.data, "nodegate_alert_gate_firing 0"));
	ng_buf_finish(&out);
}

static void
test_alert_gate_is_asked_on_its_own_thread_only_when_something_would_be_granted(void **state)
{
	struct fx *fx = *state;
	/* Loopback opened to hooks, nothing listening on port 1: the question is asked, and
	 * fails with a fixed word. */
#define ALERT_LOOPBACK                                                                             \
	NGC_ALERT("{\"allowedCIDRs\":[\"127.0.0.0/8\"]}",                                          \
		  "{\"prometheusURL\":\"https://127.0.0.1:1\",\"query\":\"up == 0\"}")
	/* Nothing would be granted (pool-a's one place is taken by granted m0): not asked. */
	const char *held = CLUSTER(
	    "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"m0\",\"resourceVersion\":\"5\"},\"spec\":{\"nodeNames\":[\"n2\"]},"
	    "\"status\":{\"state\":\"Granted\",\"disruptedNodes\":[\"n2\"]}}," ND(
		"m1", "1", "[\"n1\"]", "") "," ALERT_LOOPBACK);
	round_on(fx, held, true, NOW);
	assert_non_null(strstr(status_body(fx, "m1", 0), "NodeDisruptionBudget pool-a"));
	assert_null(fx->g->alert_job);
	assert_int_equal(fx->g->alert_evals[0] + fx->g->alert_evals[1] + fx->g->alert_evals[2], 0);

	/* m1 and m3 would be granted: the round asks once and returns without deciding them. */
	fake_api_clear(&fx->api);
	const char *json = CLUSTER(
	    ND("m1", "1", "[\"n1\"]", "") "," ND("m3", "3", "[\"n3\"]", "") "," ALERT_LOOPBACK);
	round_on(fx, json, true, NOW);
	assert_null(status_body(fx, "m1", 0));
	/* m3 waits too, unless the answer (a refused connection, at once) came back before the
	 * round reached it: then m3 was held with it. */
	if (fx->g->alert_job)
		assert_null(status_body(fx, "m3", 0));
	/* The answer starts a round: both held, naming what failed in a fixed word. */
	wait_alert_answer(fx);
	round_on(fx, json, true, NOW + 100);
	for (int i = 0; i < 2; i++) {
		const char *b = status_body(fx, i ? "m3" : "m1", 0);
		assert_non_null(b);
		assert_non_null(strstr(b, "\"state\":\"Pending\""));
		assert_non_null(strstr(b, "alert gate: query failed (connection refused); "
					  "failurePolicy Deny"));
	}
	assert_int_equal(fx->g->alert_evals[2], 1);
	/* Within cacheSeconds (10 s) the answer is used again: no new question. */
	round_on(fx, json, true, NOW + 200);
	assert_null(fx->g->alert_job);
	assert_int_equal(fx->g->alert_evals[2], 1);
	/* Without alertGate (and the cache showing what was written), the answer is forgotten
	 * and grants go through. */
	fake_api_clear(&fx->api);
	round_on(fx, CLUSTER(ND("m1", "11", "[\"n1\"]", "") "," ND("m3", "13", "[\"n3\"]", "")),
		 true, NOW + 300);
	assert_non_null(strstr(status_body(fx, "m1", 0), "\"state\":\"Granted\""));
	assert_false(fx->g->alert.have);
#undef ALERT_LOOPBACK
}

#define ADB_DB                                                                                     \
	"{\"kind\":\"ApplicationDisruptionBudget\",\"apiVersion\":\"nodegate.io/v1alpha1\","       \
	"\"metadata\":{\"name\":\"db\",\"namespace\":\"default\"},\"spec\":{\"podSelector\":{"     \
	"\"matchLabels\":{\"app\":\"db\"}},\"maxDisruptions\":1}}"

/* @g's /metrics series, with or without those that name cluster objects; caller frees. */
static char *render(struct gate *g, bool objects)
{
	struct ng_buf b;
	ng_buf_init(&b, 1u << 20);
	assert_int_equal(gate_render_metrics(g, NULL, objects, &b), NG_OK);
	return ng_buf_take(&b, NULL);
}

/* The budget gauges and hook counts name the budget: only where objects may be named (the admin
 * listener), and only while the budget exists: deleted, its series are gone at the next scrape,
 * before any round (security finding 7). */
static void test_budget_series_name_only_budgets_that_exist_where_names_may_go(void **state)
{
	struct fx *fx = *state;
	struct kube_store *store = kube_store_create();
	assert_non_null(store);
	struct gate_config gc = {.identity = "replica-a", .store = store};
	struct gate *g = gate_create(&gc, fx->c);
	assert_non_null(g);
	kube_store_publish(store, ng_test_snapshot("{\"kind\":\"List\",\"items\":[" NODE(
				      "n1", "a") "," NDB_MAX1 "," ADB_DB "]}"));
	struct kube_snapshot *s = kube_store_acquire(store);
	gate_round(g, s, true, NOW);
	kube_snapshot_release(s);
	static const char allowed[] =
	    "nodegate_budget_disruptions_allowed{kind="
	    "\"NodeDisruptionBudget\",namespace=\"\",name=\"pool-a\"} 1\n";
	static const char current[] =
	    "nodegate_budget_current_disruptions{kind="
	    "\"NodeDisruptionBudget\",namespace=\"\",name=\"pool-a\"} 0\n";
	/* Hook calls counted for ADB db and for a budget gone since. */
	g->hc = calloc(2, sizeof(*g->hc));
	assert_non_null(g->hc);
	g->caphc = g->nhc = 2;
	memcpy(g->hc[0].ns, "default", 8);
	memcpy(g->hc[0].name, "db", 3);
	g->hc[0].result = POL_HOOK_OK;
	g->hc[0].n = 3;
	memcpy(g->hc[1].ns, "default", 8);
	memcpy(g->hc[1].name, "gone", 5);
	g->hc[1].result = POL_HOOK_OK;
	g->hc[1].n = 1;
	char *text = render(g, true);
	assert_non_null(strstr(text, allowed));
	assert_non_null(strstr(text, current));
	assert_non_null(strstr(text, "nodegate_health_hook_requests_total{namespace=\"default\","
				     "name=\"db\",result=\"ok\"} 3\n"));
	assert_null(strstr(text, "gone"));
	free(text);
	/* Counts only: no budget series, no name, but the gate's counters. */
	text = render(g, false);
	assert_null(strstr(text, "pool-a"));
	assert_null(strstr(text, "nodegate_budget_"));
	assert_null(strstr(text, "nodegate_health_hook_requests_total"));
	assert_non_null(strstr(text, "nodegate_gate_decisions_total"));
	assert_non_null(strstr(text, "nodegate_health_hook_requests_waiting"));
	free(text);
	/* Deleted: gone from the next render, no round in between. */
	kube_store_publish(store,
			   ng_test_snapshot("{\"kind\":\"List\",\"items\":[" NODE("n1", "a") "]}"));
	text = render(g, true);
	assert_null(strstr(text, "pool-a"));
	assert_null(strstr(text, "name=\"db\""));
	assert_non_null(strstr(text, "# TYPE nodegate_budget_disruptions_allowed gauge"));
	free(text);
	gate_destroy(g);
	kube_store_destroy(store);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
		test_budget_series_name_only_budgets_that_exist_where_names_may_go, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(test_grant_is_written_with_its_precondition, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_ledger_holds_a_grant_the_cache_does_not_show_yet,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_a_pending_request_is_not_rewritten_for_a_count,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nothing_new_is_not_written_again, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pending_condition_names_each_failing_budget, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_conflict_ends_the_round_and_decides_again, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_a_lost_grant_write_still_holds_its_nodes, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_finalizers_added_and_released, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_budget_status_only_when_it_changes, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_budget_status_waits_for_news_but_not_for_long,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_events_wait_for_news_but_not_for_long, setup,
					    teardown),
	    cmocka_unit_test(test_loopback_hook_without_policy_is_refused_with_a_fixed_word),
	    cmocka_unit_test(test_loopback_hook_is_called_once_allowed_cidrs_names_it),
	    cmocka_unit_test(test_metadata_address_is_refused_before_connecting),
	    cmocka_unit_test(test_gate_refuses_the_api_server_and_its_own_addresses),
	    cmocka_unit_test(test_H02_an_answer_is_counted_never_quoted),
	    cmocka_unit_test(test_H03_a_silent_hook_times_out),
	    cmocka_unit_test_setup_teardown(
		test_a_request_waiting_on_its_hook_holds_its_share_and_holds_up_no_one, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(
		test_hook_answers_stand_when_the_budgets_come_in_another_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_alert_gate_failure_under_deny_holds_every_grant_until_the_cache_ends, setup,
		teardown),
	    cmocka_unit_test_setup_teardown(
		test_alert_gate_failure_under_ignore_lets_grants_through, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_alert_gate_is_asked_on_its_own_thread_only_when_something_would_be_granted,
		setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
