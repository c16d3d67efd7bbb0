/* libFuzzer target for the budget decoders (STYLE.md B12 "Fuzz"): kube/decode.c's
 * ApplicationDisruptionBudget (podSelector, pvcSelector, maxDisruptions, healthHook with its URL
 * or service reference, timeout and base64 caBundle) and NodeDisruptionBudget (nodeSelector,
 * maxDisruptedNodes, minUndisruptedNodes, countUnavailableNodes, taintTargets), and what both
 * share (supportedNodeDisruptionTypes, freeze).
 *
 * The input is parsed as JSON and decoded both as an ADB and as an NDB whatever its kind says
 * (kube_one_decode_as()). Invariants, each abort()ing when broken:
 * - decoding the same tree twice gives equal records;
 * - a refusal is NG_EPARSE, NG_ELIMIT or NG_ENOMEM with a readable message
 *   (ng_fuzz_message_ok()); so is the reason an invalid budget, or a hook that cannot be
 *   called, carries;
 * - an invalid budget selects nothing: its selectors are null;
 * - a hook without an error has a URL with its scheme and host (a service reference's is
 *   https), a timeout in 1..25 s, and a CA bundle only with a PEM certificate in it; a hook
 *   with an error has none of those;
 * - decode -> encode -> decode is stable for a valid budget: written back (tests/fuzz/
 *   roundtrip.c, through kube_one_parse()) it decodes to an equal record, the hook included
 *   unless it has an error;
 * - the IntOrString limits of a valid budget convert (bud_int_or_percent_from()) or are refused
 *   with a readable message, the same way twice, its windows' limits too;
 * - a valid budget's maintenance windows have a zone, a duration from 1 minute to 31 days, and
 *   a schedule that fires: at a fixed instant each window is either open (opened at or before
 *   it, closing after it) or opens later. */
#include "budgets/budgets.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/cron.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "kube/one.h"
#include "tests/fuzz/roundtrip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
	const uint8_t *data;
	size_t size;
};

static const char *id_str(const struct kube_one *one, uint32_t id)
{
	return ng_intern_str(kube_one_pool(one), id, NULL);
}

static void check_limit(const struct kube_one *one, const struct kube_int_or_string *v,
			const struct input *in)
{
	struct bud_int_or_percent a, b;
	struct ng_err ea = {0}, eb = {0};
	if (!v->set)
		return;
	ng_status sa = bud_int_or_percent_from(v, kube_one_pool(one), "limit", &a, &ea);
	ng_status sb = bud_int_or_percent_from(v, kube_one_pool(one), "limit", &b, &eb);
	ng_fuzz_check(sa == sb);
	if (sa != NG_OK) {
		ng_fuzz_check((sa == NG_EPARSE || sa == NG_ELIMIT) && ea.status == sa);
		ng_fuzz_check(ng_fuzz_message_ok(ea.msg, in->data, in->size));
		return;
	}
	ng_fuzz_check(a.is_percent == b.is_percent && a.value == b.value && a.value >= 0 &&
		      a.value <= (a.is_percent ? 100 : 1000000) && a.is_percent == v->is_str);
}

static void check_hook(const struct kube_one *one, const struct kube_hook *h,
		       const struct input *in)
{
	if (!h->present) {
		ng_fuzz_check(h->error == NG_INTERN_NONE && !h->url && !h->ca);
		return;
	}
	if (h->error != NG_INTERN_NONE) {
		ng_fuzz_check(!h->url && !h->ca && h->nca == 0 && !h->scheme && !h->host);
		ng_fuzz_check(ng_fuzz_message_ok(id_str(one, h->error), in->data, in->size));
		return;
	}
	ng_fuzz_check(h->url != NULL && h->scheme != NULL && h->host != NULL);
	ng_fuzz_check(h->timeout_s >= 1 && h->timeout_s <= 25);
	ng_fuzz_check(!h->service || strncmp(h->url, "https://", 8) == 0);
	ng_fuzz_check(!h->ca == !h->nca);
	if (h->ca)
		ng_fuzz_check(h->nca <= 64u * 1024u &&
			      strstr(h->ca, "-----BEGIN CERTIFICATE-----") != NULL);
}

static void check_windows(const struct kube_one *one, const struct kube_budget_common *b,
			  const struct input *in)
{
	const int64_t now_ms = 1796036400000; /* 2026-11-30T11:00:00Z */
	for (size_t i = 0; i < b->nwindows; i++) {
		const struct kube_window *w = &b->windows[i];
		ng_fuzz_check(w->tz != NULL && w->duration_ms >= 60000 &&
			      w->duration_ms <= 31LL * 24 * 3600 * 1000);
		check_limit(one, &w->limit, in);
		struct ng_window_at at;
		ng_window_at(&w->cron, w->tz, w->duration_ms, now_ms, &at);
		if (at.open)
			ng_fuzz_check(at.opened_ms <= now_ms &&
				      (at.closes_ms > now_ms || at.closes_ms == -1));
		else
			ng_fuzz_check(at.next_open_ms > now_ms);
	}
}

/* Writes @one's record back, decodes it and compares. */
static void roundtrip(const struct kube_one *one, enum kube_resource res, unsigned skip)
{
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	const struct ng_intern *pool = kube_one_pool(one);
	ng_status st = res == KUBE_RES_ADBS
			   ? ng_fuzz_encode_adb(kube_one_adb(one), pool, skip, &out)
			   : ng_fuzz_encode_ndb(kube_one_ndb(one), pool, &out);
	ng_fuzz_check(st == NG_OK);
	struct kube_one *again = ng_fuzz_reparse(&out, res);
	const struct ng_intern *pool2 = kube_one_pool(again);
	bool same =
	    res == KUBE_RES_ADBS
		? ng_fuzz_same_adb(kube_one_adb(one), pool, kube_one_adb(again), pool2, skip)
		: ng_fuzz_same_ndb(kube_one_ndb(one), pool, kube_one_ndb(again), pool2);
	if (!same)
		ng_fuzz_differs(&out);
	kube_one_destroy(again);
	ng_buf_finish(&out);
}

static void check_adb(const struct kube_one *one, const struct input *in)
{
	const struct kube_adb *adb = kube_one_adb(one);
	check_hook(one, &adb->hook, in);
	if (adb->b.invalid) {
		ng_fuzz_check(!adb->pod_selector.present && !adb->pvc_selector.present);
		ng_fuzz_check(ng_fuzz_message_ok(id_str(one, adb->b.error), in->data, in->size));
		return;
	}
	ng_fuzz_check(adb->pod_selector.present || adb->pvc_selector.present);
	check_limit(one, &adb->max_disruptions, in);
	check_windows(one, &adb->b, in);
	roundtrip(one, KUBE_RES_ADBS, adb->hook.error != NG_INTERN_NONE ? NG_FUZZ_SKIP_HOOK : 0);
}

static void check_ndb(const struct kube_one *one, const struct input *in)
{
	const struct kube_ndb *ndb = kube_one_ndb(one);
	if (ndb->b.invalid) {
		ng_fuzz_check(!ndb->node_selector.present);
		ng_fuzz_check(ng_fuzz_message_ok(id_str(one, ndb->b.error), in->data, in->size));
		return;
	}
	check_limit(one, &ndb->max_disrupted, in);
	check_limit(one, &ndb->min_undisrupted, in);
	check_windows(one, &ndb->b, in);
	roundtrip(one, KUBE_RES_NDBS, 0);
}

static void decode(const cJSON *root, enum kube_resource res, const struct input *in)
{
	struct kube_one *a = NULL, *b = NULL;
	struct ng_err err = {0};
	ng_status st = ng_fuzz_decode_twice(res, root, in->data, in->size, &a, &b, &err);
	if (st != NG_OK) {
		ng_fuzz_check(st == NG_EPARSE || st == NG_ELIMIT || st == NG_ENOMEM);
		return;
	}
	const struct ng_intern *pa = kube_one_pool(a), *pb = kube_one_pool(b);
	if (res == KUBE_RES_ADBS) {
		ng_fuzz_check(ng_fuzz_same_adb(kube_one_adb(a), pa, kube_one_adb(b), pb, 0));
		check_adb(a, in);
	} else {
		ng_fuzz_check(ng_fuzz_same_ndb(kube_one_ndb(a), pa, kube_one_ndb(b), pb));
		check_ndb(a, in);
	}
	kube_one_destroy(a);
	kube_one_destroy(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	ng_fuzz_check(arena != NULL);
	cJSON *root = NULL;
	const struct input in = {data, size};
	if (ng_json_parse((const char *)data, size, arena, &root, NULL) == NG_OK) {
		decode(root, KUBE_RES_ADBS, &in);
		decode(root, KUBE_RES_NDBS, &in);
	}
	ng_arena_destroy(arena);
	return 0;
}
