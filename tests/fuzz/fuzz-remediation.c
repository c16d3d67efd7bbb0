/* libFuzzer target for remediation (STYLE.md B12 "Fuzz", docs/remediation.md): kube/decode.c's
 * NodeRemediation (metadata with deletion and finalizers, spec.nodeSelector, rule.conditions,
 * templateName, maxConcurrent, stormGuard, cooldownSeconds, and the status read back:
 * lastRemediated, storm) and NodeDisruptionTemplate (its spec kept as canonical JSON, drain and
 * operation checked as a request's); policy/remediation.c's plan through the dry run
 * pol_explain_remediation(); POST /v1/evaluate (srv_evaluate()); and the requests' names.
 *
 * The input is parsed as JSON and decoded both as a NodeRemediation and as a
 * NodeDisruptionTemplate whatever its kind says (kube_one_decode_as()). Invariants, each
 * abort()ing when broken:
 * - decoding the same tree twice gives equal records (a template's compared through
 *   kube_decode_as(), which kube_one_decode_as() wraps: kube_one gives no template out);
 * - a refusal is NG_EPARSE, NG_ELIMIT or NG_ENOMEM with a readable message
 *   (ng_fuzz_message_ok()); so is the reason an invalid remediation or a broken template
 *   carries;
 * - a valid remediation has a name of at most 63 characters, a nodeSelector, 1..16 rule
 *   conditions each with a type, status True, False or Unknown and forSeconds of 0..1 year, a
 *   template name, maxConcurrent set, maxUnhealthy set exactly with stormGuard, and
 *   cooldown_ms >= 0;
 * - decode -> encode -> decode is stable for a valid remediation: written back (this file's
 *   encoder, through kube_one_parse()) it decodes to an equal record;
 * - a template's spec is stored as a canonical JSON object: decoded again as the spec of a
 *   template of its own, it is stored as the same text with the same type, requestor,
 *   priority, retry and problem (but for "spec: expected an object", which the text "{}" no
 *   longer has);
 * - explained with pol_explain_remediation() against a fixed cluster (built once: pool nodes
 *   with example.com/Sick True, False and Unknown, with and without lastTransitionTime, one
 *   not due yet, KernelDeadlock; a node outside the pool; templates reboot and broken; a
 *   NodeDisruptionBudget; requests labelled nodegate.io/remediation Granted and Operating,
 *   Pending, Completed and Rejected; a NodeRemediation "fix" whose status remembers a repair),
 *   a valid remediation is explained (NG_OK) and an invalid one refused with NG_EPARSE and the
 *   record's message. The plan: unhealthy <= matched <= the cluster's nodes; the entries
 *   marked unhealthy count to unhealthy and those in cooldown to loops; storm exactly when
 *   stormGuard holds and unhealthy > maxUnhealthy; maxConcurrent >= 0; creations at most
 *   maxConcurrent, and with any, open <= maxConcurrent; no creation in a storm, with a
 *   problem, or while the remediation is being deleted; each node created is unhealthy, due by
 *   now, without a request, and decided (Granted, Rejected or Pending) with a readable
 *   reason; every entry has a readable reason;
 * - srv_evaluate() of the raw bytes (whatever kind they say) answers NG_OK with 200 or 422
 *   (403 too for a body that is not a NodeRemediation: the NodeDisruption webhook's refusal)
 *   and a body that parses back as a JSON object, granted only with 200; or refuses with
 *   NG_EPARSE or NG_ELIMIT and a readable message. A body of kind NodeRemediation that decodes
 *   (named) is answered 200 exactly when pol_explain_remediation() explains it;
 * - the input's first line, when a short string, as a remediation name (its first 63 bytes)
 *   and a node name: pol_remediation_request_name() and pol_request_name() give the same name
 *   twice, of at most 253 bytes, starting with the prefix; the prefix and node as they are
 *   when that fits, else the prefix, a part of the node not ending on '.' or '-', "-" and 8 hex
 *   digits. */
#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/jw.h"
#include "common/limits.h"
#include "kube/internal.h"
#include "kube/one.h"
#include "kube/snapshot.h"
#include "policy/disruption.h"
#include "policy/remediation.h"
#include "policy/validate.h"
#include "server/admission.h"
#include "tests/fuzz/roundtrip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The dry runs' now: 2026-11-27T12:00:00Z, which the cluster's times are around. */
#define NOW_MS 1795780800000LL

struct input {
	const uint8_t *data;
	size_t size;
};

/* ---- the cluster, built once ---- */

/* The cluster's objects, a string each (C11 promises string literals of 4095 bytes only). */
static const char *const cluster_items[] = {
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruptionTemplate\",\"metadata\":"
    "{\"name\":\"reboot\"},\"spec\":{\"type\":\"reboot\",\"retry\":{\"enabled\":true},"
    "\"drain\":{\"timeoutSeconds\":600}}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruptionTemplate\",\"metadata\":"
    "{\"name\":\"broken\"},\"spec\":{\"type\":\"reboot\",\"drain\":{\"evictionStrategy\":"
    "\"Sideways\"}}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruptionBudget\",\"metadata\":"
    "{\"name\":\"workers\"},\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"pool\":"
    "\"workers\"}},\"maxDisruptedNodes\":1}}",
    /* due, and KernelDeadlock False */
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"w1\",\"labels\":"
    "{\"pool\":\"workers\",\"zone\":\"a\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"True\"},{\"type\":\"example.com/Sick\",\"status\":\"True\","
    "\"lastTransitionTime\":\"2026-11-27T11:00:00Z\"},{\"type\":\"KernelDeadlock\",\"status\":"
    "\"False\"}]}}",
    /* due, but repaired 40 minutes ago by "fix" */
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"w2\",\"labels\":"
    "{\"pool\":\"workers\",\"zone\":\"a\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"True\"},{\"type\":\"example.com/Sick\",\"status\":\"True\","
    "\"lastTransitionTime\":\"2026-11-27T11:30:00Z\"}]}}",
    /* sick for 2 minutes: not due yet */
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"w3\",\"labels\":"
    "{\"pool\":\"workers\",\"zone\":\"b\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"True\"},{\"type\":\"example.com/Sick\",\"status\":\"True\","
    "\"lastTransitionTime\":\"2026-11-27T11:58:00Z\"}]}}",
    /* sick since ever, with a request of "fix" Granted and Operating */
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"w4\",\"labels\":"
    "{\"pool\":\"workers\",\"zone\":\"b\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"True\"},{\"type\":\"example.com/Sick\",\"status\":\"True\"}]}}",
    /* healthy again, its request of "fix" Completed */
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"w5\",\"labels\":"
    "{\"pool\":\"workers\",\"zone\":\"c\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"True\"},{\"type\":\"example.com/Sick\",\"status\":\"False\","
    "\"lastTransitionTime\":\"2026-11-27T10:00:00Z\"}]}}",
    /* not reporting: Unknown, with a request of "fix" Pending */
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"w6\",\"labels\":"
    "{\"pool\":\"workers\",\"zone\":\"c\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"Unknown\",\"lastTransitionTime\":\"2026-11-27T11:40:00Z\"},{\"type\":"
    "\"example.com/Sick\",\"status\":\"Unknown\",\"lastTransitionTime\":\"2026-11-27T11:40:"
    "00Z\"}]}}",
    /* due, with a fraction, and KernelDeadlock True for hours */
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"w7\",\"labels\":"
    "{\"pool\":\"workers\",\"zone\":\"a\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"True\"},{\"type\":\"example.com/Sick\",\"status\":\"True\","
    "\"lastTransitionTime\":\"2026-11-27T11:50:00.500Z\"},{\"type\":\"KernelDeadlock\","
    "\"status\":\"True\",\"lastTransitionTime\":\"2026-11-27T09:00:00Z\"}]}}",
    /* no conditions at all */
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"w8\",\"labels\":"
    "{\"pool\":\"workers\",\"zone\":\"b\"}}}",
    /* outside the pool, sick, with a Rejected request of "kernel-deadlock" */
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"i1\",\"labels\":"
    "{\"pool\":\"infra\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
    "\"True\"},{\"type\":\"example.com/Sick\",\"status\":\"True\",\"lastTransitionTime\":"
    "\"2026-11-26T00:00:00Z\"},{\"type\":\"KernelDeadlock\",\"status\":\"True\","
    "\"lastTransitionTime\":\"2026-11-26T00:00:00Z\"}]}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\",\"metadata\":"
    "{\"name\":\"fix-w4\",\"uid\":\"uid-fix-w4\",\"labels\":{\"nodegate.io/remediation\":"
    "\"fix\"}},\"spec\":{\"nodeNames\":[\"w4\"],\"type\":\"reboot\"},\"status\":{\"state\":"
    "\"Granted\",\"disruptedNodes\":[\"w4\"],\"conditions\":[{\"type\":\"Ready\",\"status\":"
    "\"True\",\"reason\":\"Operating\"}]}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\",\"metadata\":"
    "{\"name\":\"fix-w6\",\"uid\":\"uid-fix-w6\",\"labels\":{\"nodegate.io/remediation\":"
    "\"fix\"}},\"spec\":{\"nodeNames\":[\"w6\"],\"type\":\"reboot\"},\"status\":{\"state\":"
    "\"Pending\"}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\",\"metadata\":"
    "{\"name\":\"fix-w5\",\"uid\":\"uid-fix-w5\",\"labels\":{\"nodegate.io/remediation\":"
    "\"fix\"}},\"spec\":{\"nodeNames\":[\"w5\"],\"type\":\"reboot\"},\"status\":{\"state\":"
    "\"Granted\",\"disruptedNodes\":[\"w5\"],\"conditions\":[{\"type\":\"Ready\",\"status\":"
    "\"True\",\"reason\":\"Completed\"}]}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeDisruption\",\"metadata\":"
    "{\"name\":\"kernel-deadlock-i1\",\"uid\":\"uid-kd-i1\",\"labels\":"
    "{\"nodegate.io/remediation\":\"kernel-deadlock\"}},\"spec\":{\"nodeNames\":[\"i1\"],"
    "\"type\":\"reboot\"},\"status\":{\"state\":\"Rejected\"}}",
    "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":\"NodeRemediation\",\"metadata\":"
    "{\"name\":\"fix\",\"uid\":\"uid-fix\",\"finalizers\":[\"nodegate.io/remediation\"]},"
    "\"spec\":{\"nodeSelector\":{\"matchLabels\":{\"pool\":\"workers\"}},\"rule\":"
    "{\"conditions\":[{\"type\":\"example.com/Sick\",\"status\":\"True\",\"forSeconds\":300}]},"
    "\"templateName\":\"reboot\"},\"status\":{\"lastRemediated\":[{\"node\":\"w2\",\"time\":"
    "\"2026-11-27T11:20:00Z\",\"request\":\"fix-w2\",\"uid\":\"u-w2\"}]}}",
};

static const struct kube_snapshot *cluster(void)
{
	static struct kube_snapshot *s;
	if (s)
		return s;
	s = ng_fuzz_snapshot(cluster_items, sizeof(cluster_items) / sizeof(cluster_items[0]));
	ng_fuzz_check(kube_snapshot_count(s, KUBE_RES_NODES) == 9 &&
		      kube_snapshot_count(s, KUBE_RES_NDTS) == 2 &&
		      kube_snapshot_count(s, KUBE_RES_NREMS) == 1);
	return s;
}

/* ---- comparing ---- */

static const char *id_str(const struct ng_intern *pool, uint32_t id)
{
	return ng_intern_str(pool, id, NULL);
}

/* Both absent, or the same string. */
static bool same_id(const struct ng_intern *pa, uint32_t a, const struct ng_intern *pb, uint32_t b)
{
	return (a == NG_INTERN_NONE) == (b == NG_INTERN_NONE) &&
	       strcmp(id_str(pa, a), id_str(pb, b)) == 0;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_ios(const struct kube_int_or_string *a, const struct ng_intern *pa,
		     const struct kube_int_or_string *b, const struct ng_intern *pb)
{
	if (a->set != b->set || a->is_str != b->is_str)
		return false;
	if (!a->set)
		return true;
	return a->is_str ? same_id(pa, a->str, pb, b->str) : a->i == b->i;
}

static bool same_nrem(const struct kube_nrem *a, const struct ng_intern *pa,
		      const struct kube_nrem *b, const struct ng_intern *pb)
{
	bool same = same_id(pa, a->name, pb, b->name) && same_str(a->uid, b->uid) &&
		    same_str(a->rv, b->rv) && a->deleting == b->deleting &&
		    a->has_finalizer == b->has_finalizer && a->nfinalizers == b->nfinalizers &&
		    a->invalid == b->invalid && same_id(pa, a->error, pb, b->error) &&
		    ng_fuzz_same_selector(&a->node_selector, pa, &b->node_selector, pb) &&
		    a->nconds == b->nconds && same_id(pa, a->template_name, pb, b->template_name) &&
		    same_ios(&a->max_concurrent, pa, &b->max_concurrent, pb) &&
		    a->storm_guard == b->storm_guard &&
		    same_ios(&a->max_unhealthy, pa, &b->max_unhealthy, pb) &&
		    a->cooldown_ms == b->cooldown_ms && a->storm == b->storm &&
		    a->storm_since_ms == b->storm_since_ms && a->nlast == b->nlast;
	for (uint16_t i = 0; same && i < a->nfinalizers; i++)
		same = same_id(pa, a->finalizers[i], pb, b->finalizers[i]);
	for (uint16_t i = 0; same && i < a->nconds; i++)
		same = same_id(pa, a->conds[i].type, pb, b->conds[i].type) &&
		       a->conds[i].status == b->conds[i].status &&
		       a->conds[i].for_ms == b->conds[i].for_ms;
	for (uint16_t i = 0; same && i < a->nlast; i++)
		same = same_id(pa, a->last[i].node, pb, b->last[i].node) &&
		       same_id(pa, a->last[i].request, pb, b->last[i].request) &&
		       a->last[i].at_ms == b->last[i].at_ms &&
		       same_str(a->last[i].uid, b->last[i].uid);
	if (!same)
		(void)fprintf(stderr, "remediation: the two NodeRemediation records differ\n");
	return same;
}

/* @err_too: compare the problems as well. */
static bool same_ndt(const struct kube_ndt *a, const struct ng_intern *pa, const struct kube_ndt *b,
		     const struct ng_intern *pb, bool err_too)
{
	bool same = same_id(pa, a->name, pb, b->name) && same_str(a->spec_json, b->spec_json) &&
		    same_id(pa, a->type, pb, b->type) &&
		    same_id(pa, a->requestor, pb, b->requestor) && a->priority == b->priority &&
		    a->retry == b->retry && (!err_too || same_id(pa, a->error, pb, b->error));
	if (!same)
		(void)fprintf(stderr,
			      "remediation: the two NodeDisruptionTemplate records differ\n");
	return same;
}

/* ---- NodeRemediation ---- */

static void jid(struct ng_jw *w, const struct ng_intern *pool, uint32_t id)
{
	size_t len;
	const char *s = ng_intern_str(pool, id, &len);
	ng_jw_strn(w, s, len);
}

static void kios(struct ng_jw *w, const char *key, const struct kube_int_or_string *v,
		 const struct ng_intern *pool)
{
	if (!v->set)
		return;
	ng_jw_key(w, key);
	if (v->is_str)
		jid(w, pool, v->str);
	else
		ng_jw_i64(w, v->i);
}

/* @r written back as the NodeRemediation it came from. */
static ng_status encode_nrem(const struct kube_nrem *r, const struct ng_intern *pool,
			     struct ng_buf *out)
{
	static const char *const statuses[] = {"Unknown", "True", "False"};
	struct ng_jw w;
	ng_jw_init(&w, out);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "apiVersion", "nodegate.io/v1alpha1");
	ng_jw_kstr(&w, "kind", "NodeRemediation");
	ng_jw_key(&w, "metadata");
	ng_jw_obj(&w);
	ng_jw_key(&w, "name");
	jid(&w, pool, r->name);
	ng_jw_kstr(&w, "uid", r->uid);
	ng_jw_kstr(&w, "resourceVersion", r->rv);
	if (r->deleting)
		ng_jw_kstr(&w, "deletionTimestamp", "2026-11-27T11:59:00Z");
	ng_jw_key(&w, "finalizers");
	ng_jw_arr(&w);
	for (uint16_t i = 0; i < r->nfinalizers; i++)
		jid(&w, pool, r->finalizers[i]);
	ng_jw_arr_end(&w);
	ng_jw_obj_end(&w);

	ng_jw_key(&w, "spec");
	ng_jw_obj(&w);
	ng_jw_key(&w, "nodeSelector");
	ng_fuzz_write_selector(&w, &r->node_selector, pool);
	ng_jw_key(&w, "rule");
	ng_jw_obj(&w);
	ng_jw_key(&w, "conditions");
	ng_jw_arr(&w);
	for (uint16_t i = 0; i < r->nconds; i++) {
		ng_jw_obj(&w);
		ng_jw_key(&w, "type");
		jid(&w, pool, r->conds[i].type);
		ng_jw_kstr(&w, "status", statuses[r->conds[i].status < 3 ? r->conds[i].status : 0]);
		ng_jw_ki64(&w, "forSeconds", r->conds[i].for_ms / 1000);
		ng_jw_obj_end(&w);
	}
	ng_jw_arr_end(&w);
	ng_jw_obj_end(&w);
	ng_jw_key(&w, "templateName");
	jid(&w, pool, r->template_name);
	kios(&w, "maxConcurrent", &r->max_concurrent, pool);
	if (r->storm_guard) {
		ng_jw_key(&w, "stormGuard");
		ng_jw_obj(&w);
		kios(&w, "maxUnhealthy", &r->max_unhealthy, pool);
		ng_jw_obj_end(&w);
	}
	ng_jw_ki64(&w, "cooldownSeconds", r->cooldown_ms / 1000);
	ng_jw_obj_end(&w);

	ng_jw_key(&w, "status");
	ng_jw_obj(&w);
	if (r->storm) {
		ng_jw_key(&w, "storm");
		ng_jw_obj(&w);
		ng_jw_kbool(&w, "active", true);
		if (r->storm_since_ms != 0) {
			ng_jw_key(&w, "since");
			ng_jw_time_ms(&w, r->storm_since_ms);
		}
		ng_jw_obj_end(&w);
	}
	ng_jw_key(&w, "lastRemediated");
	ng_jw_arr(&w);
	for (uint16_t i = 0; i < r->nlast; i++) {
		ng_jw_obj(&w);
		ng_jw_key(&w, "node");
		jid(&w, pool, r->last[i].node);
		ng_jw_key(&w, "request");
		jid(&w, pool, r->last[i].request);
		ng_jw_key(&w, "time");
		ng_jw_time_ms(&w, r->last[i].at_ms);
		ng_jw_kstr(&w, "uid", r->last[i].uid);
		ng_jw_obj_end(&w);
	}
	ng_jw_arr_end(&w);
	ng_jw_obj_end(&w);
	ng_jw_obj_end(&w);
	return ng_jw_finish(&w);
}

static void check_nrem_valid(const struct kube_nrem *r, const struct ng_intern *pool)
{
	ng_fuzz_check(r->error == NG_INTERN_NONE);
	ng_fuzz_check(r->name != NG_INTERN_NONE &&
		      strlen(id_str(pool, r->name)) <= NG_MAX_LABEL_VALUE_BYTES);
	ng_fuzz_check(r->node_selector.present);
	ng_fuzz_check(r->nconds >= 1 && r->nconds <= KUBE_MAX_REM_CONDITIONS && r->conds);
	for (uint16_t i = 0; i < r->nconds; i++) {
		const struct kube_rem_condition *c = &r->conds[i];
		ng_fuzz_check(c->type != NG_INTERN_NONE && id_str(pool, c->type)[0] != '\0');
		ng_fuzz_check(c->status == KUBE_COND_TRUE || c->status == KUBE_COND_FALSE ||
			      c->status == KUBE_COND_UNKNOWN);
		ng_fuzz_check(c->for_ms >= 0 && c->for_ms <= 31536000LL * 1000 &&
			      c->for_ms % 1000 == 0);
	}
	ng_fuzz_check(r->template_name != NG_INTERN_NONE &&
		      id_str(pool, r->template_name)[0] != '\0');
	ng_fuzz_check(r->max_concurrent.set);
	ng_fuzz_check(r->max_unhealthy.set == r->storm_guard);
	ng_fuzz_check(r->cooldown_ms >= 0 && r->cooldown_ms % 1000 == 0);
	ng_fuzz_check(r->nlast <= KUBE_MAX_REM_LAST && (r->nlast == 0) == (r->last == NULL));
	for (uint16_t i = 0; i < r->nlast; i++)
		ng_fuzz_check(r->last[i].at_ms > 0 && id_str(pool, r->last[i].node)[0] != '\0');
}

static void roundtrip_nrem(const struct kube_one *one)
{
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	ng_fuzz_check(encode_nrem(kube_one_nrem(one), kube_one_pool(one), &out) == NG_OK);
	struct kube_one *again = ng_fuzz_reparse(&out, KUBE_RES_NREMS);
	if (!same_nrem(kube_one_nrem(one), kube_one_pool(one), kube_one_nrem(again),
		       kube_one_pool(again)))
		ng_fuzz_differs(&out);
	kube_one_destroy(again);
	ng_buf_finish(&out);
}

/* The plan of @r (as the dry run remapped it, so not read here) against the cluster. */
static void check_plan(const struct kube_nrem *r, const struct pol_rem_explain *x,
		       const struct input *in)
{
	const struct pol_rem_plan *p = &x->plan;
	size_t nnodes = kube_snapshot_count(cluster(), KUBE_RES_NODES);
	size_t nreqs = kube_snapshot_count(cluster(), KUBE_RES_NDS);
	ng_fuzz_check(p->unhealthy <= p->matched && p->matched <= nnodes);
	ng_fuzz_check(p->n <= nnodes + nreqs && (p->n == 0 || p->nodes != NULL));
	ng_fuzz_check(p->max_concurrent >= 0);
	ng_fuzz_check(r->storm_guard ? p->max_unhealthy >= 0 : p->max_unhealthy == -1);
	ng_fuzz_check(p->storm == (r->storm_guard && (int64_t)p->unhealthy > p->max_unhealthy));
	ng_fuzz_check(!p->problem[0] || ng_fuzz_message_ok(p->problem, in->data, in->size));
	size_t unhealthy = 0, loops = 0, creates = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct pol_rem_node *e = &p->nodes[i];
		unhealthy += e->unhealthy;
		loops += e->action == POL_REM_COOLDOWN;
		ng_fuzz_check(!(e->unhealthy && e->unknown));
		ng_fuzz_check(ng_fuzz_message_ok(e->reason, in->data, in->size));
		ng_fuzz_check((unsigned)e->action <= (unsigned)POL_REM_UNKNOWN);
		if (e->action != POL_REM_CREATE)
			continue;
		creates++;
		ng_fuzz_check(e->unhealthy && !e->request && e->due_ms <= NOW_MS);
		const struct pol_gate_decision *d = &x->decisions[i];
		ng_fuzz_check(d->outcome == POL_GATE_GRANT || d->outcome == POL_GATE_REJECT ||
			      d->outcome == POL_GATE_PENDING);
		ng_fuzz_check(ng_fuzz_message_ok(d->reason, in->data, in->size));
	}
	ng_fuzz_check(unhealthy == p->unhealthy && loops == p->loops);
	ng_fuzz_check((int64_t)creates <= p->max_concurrent);
	ng_fuzz_check(creates == 0 || (int64_t)p->open <= p->max_concurrent);
	ng_fuzz_check(creates == 0 || (!p->storm && !p->problem[0] && !r->deleting));
	ng_fuzz_check(creates == 0 || p->tmpl != NULL);
}

/* The dry run of @one: 1 explained, 0 refused (invalid). */
static int explain(const struct kube_one *one, struct ng_arena *arena, const struct input *in)
{
	const struct kube_nrem *r = kube_one_nrem(one);
	struct pol_rem_explain x;
	struct ng_err why = {0};
	ng_status st = pol_explain_remediation(cluster(), one, NOW_MS, arena, &x, &why);
	if (r->invalid) {
		const char *msg = id_str(kube_one_pool(one), r->error);
		ng_fuzz_check(st == NG_EPARSE && why.status == NG_EPARSE &&
			      strncmp(why.msg, msg, sizeof(why.msg) - 1) == 0);
		ng_fuzz_check(ng_fuzz_message_ok(why.msg, in->data, in->size));
		return 0;
	}
	ng_fuzz_check(st == NG_OK);
	check_plan(r, &x, in);
	return 1;
}

/* Decodes as a NodeRemediation: -1 refused, else what explain() says. */
static int decode_nrem(const cJSON *root, struct ng_arena *arena, const struct input *in)
{
	struct kube_one *a = NULL, *b = NULL;
	struct ng_err err = {0};
	ng_status st = ng_fuzz_decode_twice(KUBE_RES_NREMS, root, in->data, in->size, &a, &b, &err);
	if (st != NG_OK) {
		ng_fuzz_check(st == NG_EPARSE || st == NG_ELIMIT || st == NG_ENOMEM);
		return -1;
	}
	const struct kube_nrem *r = kube_one_nrem(a);
	const struct ng_intern *pool = kube_one_pool(a);
	ng_fuzz_check(r != NULL && kube_one_nrem(b) != NULL);
	ng_fuzz_check(same_nrem(r, pool, kube_one_nrem(b), kube_one_pool(b)));
	if (r->invalid) {
		ng_fuzz_check(r->error != NG_INTERN_NONE &&
			      ng_fuzz_message_ok(id_str(pool, r->error), in->data, in->size));
	} else {
		check_nrem_valid(r, pool);
		roundtrip_nrem(a);
	}
	int explained = explain(a, arena, in);
	kube_one_destroy(a);
	kube_one_destroy(b);
	return explained;
}

/* ---- NodeDisruptionTemplate ---- */

struct ndt_holder {
	struct ng_intern *pool;
	struct kube_object obj;
};

static ng_status ndt_decode(const cJSON *obj, struct ndt_holder *h, struct ng_err *err)
{
	h->pool = ng_intern_create();
	ng_fuzz_check(h->pool != NULL);
	ng_status st = kube_decode_as(h->pool, NULL, KUBE_RES_NDTS, obj, NULL, &h->obj, err);
	if (st != NG_OK) {
		ng_intern_destroy(h->pool);
		h->pool = NULL;
	}
	return st;
}

static void ndt_free(struct ndt_holder *h)
{
	if (!h->pool)
		return;
	kube_side_free(h->obj.side);
	ng_intern_destroy(h->pool);
	h->pool = NULL;
}

/* The stored spec decoded again as a template's spec: the same text and fields. */
static void check_canonical(const struct kube_ndt *t, const struct ng_intern *pool,
			    bool spec_object)
{
	const char *name = id_str(pool, t->name);
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	ng_status st = ng_buf_puts(&b, "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":"
				       "\"NodeDisruptionTemplate\",\"metadata\":{\"name\":");
	st = st ? st : ng_buf_json_str(&b, name, strlen(name));
	st = st ? st : ng_buf_puts(&b, "},\"spec\":");
	st = st ? st : ng_buf_puts(&b, t->spec_json);
	st = st ? st : ng_buf_puts(&b, "}");
	ng_fuzz_check(st == NG_OK);
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	ng_fuzz_check(arena != NULL);
	cJSON *root = NULL;
	struct ng_err err = {0};
	st = ng_json_parse(b.data, b.len, arena, &root, &err);
	if (st != NG_OK)
		(void)fprintf(stderr, "remediation: stored spec does not parse: %s\n%s\n", err.msg,
			      b.data);
	ng_fuzz_check(st == NG_OK && cJSON_IsObject(ng_json_get(root, "spec")));
	struct ndt_holder again = {0};
	ng_fuzz_check(ndt_decode(root, &again, &err) == NG_OK);
	const struct kube_ndt *u = &again.obj.rec.ndt;
	bool same = same_ndt(t, pool, u, again.pool, spec_object) &&
		    (spec_object || u->error == NG_INTERN_NONE);
	if (!same)
		ng_fuzz_differs(&b);
	ndt_free(&again);
	ng_arena_destroy(arena);
	ng_buf_finish(&b);
}

static void decode_ndt(const cJSON *root, const struct input *in)
{
	struct kube_one *a = NULL, *b = NULL;
	struct ng_err err = {0};
	ng_status st = ng_fuzz_decode_twice(KUBE_RES_NDTS, root, in->data, in->size, &a, &b, &err);
	if (st != NG_OK) {
		ng_fuzz_check(st == NG_EPARSE || st == NG_ELIMIT || st == NG_ENOMEM);
		return;
	}
	ng_fuzz_check(kube_one_resource(a) == KUBE_RES_NDTS);
	kube_one_destroy(a);
	kube_one_destroy(b);

	struct ndt_holder x = {0}, y = {0};
	struct ng_err ex = {0}, ey = {0};
	ng_fuzz_check(ndt_decode(root, &x, &ex) == NG_OK && ndt_decode(root, &y, &ey) == NG_OK);
	const struct kube_ndt *t = &x.obj.rec.ndt;
	ng_fuzz_check(same_ndt(t, x.pool, &y.obj.rec.ndt, y.pool, true));
	ng_fuzz_check(t->name != NG_INTERN_NONE && t->spec_json != NULL);
	if (t->error != NG_INTERN_NONE)
		ng_fuzz_check(ng_fuzz_message_ok(id_str(x.pool, t->error), in->data, in->size));
	const cJSON *spec = ng_json_get(root, "spec");
	check_canonical(t, x.pool, !spec || cJSON_IsNull(spec) || cJSON_IsObject(spec));
	ndt_free(&x);
	ndt_free(&y);
}

/* ---- POST /v1/evaluate ---- */

/* @explained: what decode_nrem() said when the body is a NodeRemediation, else -1. */
static void evaluate(const struct input *in, bool is_nrem, int explained)
{
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	ng_fuzz_check(arena != NULL);
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	struct ng_err err = {0};
	int code = 0;
	bool granted = false;
	ng_status st = srv_evaluate((const char *)in->data, in->size, arena, cluster(), NOW_MS,
				    &out, &code, &granted, &err);
	if (st != NG_OK) {
		ng_fuzz_check((st == NG_EPARSE || st == NG_ELIMIT) && err.status == st);
		ng_fuzz_check(ng_fuzz_message_ok(err.msg, in->data, in->size));
		goto out;
	}
	ng_fuzz_check(code == 200 || code == 422 || (code == 403 && !is_nrem));
	ng_fuzz_check(!granted || code == 200);
	if (is_nrem && explained >= 0)
		ng_fuzz_check((code == 200) == (explained == 1));
	ng_arena_reset(arena);
	cJSON *answer = NULL;
	struct ng_err perr = {0};
	st = ng_json_parse(out.data, out.len, arena, &answer, &perr);
	if (st != NG_OK)
		(void)fprintf(stderr, "remediation: the answer does not parse: %s\n%s\n", perr.msg,
			      out.data);
	ng_fuzz_check(st == NG_OK && cJSON_IsObject(answer));
	if (is_nrem && code == 200)
		ng_fuzz_check(strcmp(ng_json_str(answer, "kind") ? ng_json_str(answer, "kind") : "",
				     "NodeRemediation") == 0);
out:
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
}

/* ---- names ---- */

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* @out is the name of prefix @prefix and node @node (pol_request_name()). */
static void check_name(const char *prefix, const char *node, const char *out)
{
	size_t p = strlen(prefix), n = strlen(node), len = strlen(out);
	ng_fuzz_check(len <= 253 && strncmp(out, prefix, p) == 0);
	if (p + n <= 253) {
		ng_fuzz_check(len == p + n && strcmp(out + p, node) == 0);
		return;
	}
	ng_fuzz_check(len >= p + 9 && len <= 244 && out[len - 9] == '-');
	for (size_t i = len - 8; i < len; i++)
		ng_fuzz_check(is_hex(out[i]));
	size_t keep = len - 9 - p;
	ng_fuzz_check(keep <= n && strncmp(out + p, node, keep) == 0);
	ng_fuzz_check(keep == 0 || (node[keep - 1] != '.' && node[keep - 1] != '-'));
}

static void check_names(const struct input *in)
{
	const uint8_t *nl = memchr(in->data, '\n', in->size);
	size_t n = nl ? (size_t)(nl - in->data) : in->size;
	char node[513], rem[64], prefix[72], a[254], b[254];
	if (n >= sizeof(node) || memchr(in->data, '\0', n))
		return;
	memcpy(node, in->data, n);
	node[n] = '\0';
	size_t r = n < sizeof(rem) - 1 ? n : sizeof(rem) - 1;
	memcpy(rem, node, r);
	rem[r] = '\0';
	pol_remediation_request_name(rem, node, a, sizeof(a));
	pol_remediation_request_name(rem, node, b, sizeof(b));
	ng_fuzz_check(strcmp(a, b) == 0);
	(void)snprintf(prefix, sizeof(prefix), "%s-", rem);
	check_name(prefix, node, a);
	pol_request_name("auto-", node, a, sizeof(a));
	check_name("auto-", node, a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > NG_MAX_BODY_BYTES)
		return 0;
	const struct input in = {data, size};
	check_names(&in);
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	ng_fuzz_check(arena != NULL);
	cJSON *root = NULL;
	bool is_nrem = false;
	int explained = -1;
	if (ng_json_parse((const char *)data, size, arena, &root, NULL) == NG_OK) {
		const char *kind = ng_json_str(root, "kind");
		is_nrem = cJSON_IsObject(root) && kind && strcmp(kind, "NodeRemediation") == 0;
		explained = decode_nrem(root, arena, &in);
		decode_ndt(root, &in);
	}
	evaluate(&in, is_nrem, explained);
	ng_arena_destroy(arena);
	return 0;
}
