/* libFuzzer target for the NodeGateConfig decoder (STYLE.md B12 "Fuzz"): kube/decode.c's
 * paused, rejectEmptyDisruptions, rejectOverlappingDisruptions, controlPlane (serial, selector),
 * retry intervals, allowedTypes, eviction (mode, autoRequest, exemptUsers), healthHooks
 * (allowedHosts, allowedCIDRs, allowServiceRefs, allowHTTP, maxResponseBytes), drain
 * (protectedNamespaces, protectedJobPods, backoff), alertGate and lifecycle.
 *
 * The input is parsed as JSON and decoded as a NodeGateConfig whatever its kind says
 * (kube_one_decode_as()). Invariants, each abort()ing when broken:
 * - decoding the same tree twice gives equal records;
 * - a config is malformed or not, never unreadable: it decodes (as invalid, saying why, when a
 *   field is wrong) and is refused only without a name or without memory, with a readable
 *   message;
 * - an invalid config never loosens the eviction guard: mode Enforce, no autoRequest, no
 *   exempt users, and ends no request by its lifecycle defaults; its reason is a readable
 *   message;
 * - the values a valid config holds are in their documented ranges (retry 1..86400 s, backoff
 *   0..86400 s, maxResponseBytes 1..16 MiB, CIDR prefixes within their family, an alertGate
 *   https without credentials, query or fragment, timeout 1..30 s, cache 1..300 s, lifecycle
 *   defaults 0..KUBE_MAX_LIFECYCLE_S);
 * - decode -> encode -> decode is stable for a valid config: written back (tests/fuzz/
 *   roundtrip.c, through kube_one_parse()) it decodes to an equal record. */
#include "common/arena.h"
#include "common/buf.h"
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

static bool in_range(int64_t ms, int64_t min_s, int64_t max_s)
{
	return ms % 1000 == 0 && ms / 1000 >= min_s && ms / 1000 <= max_s;
}

static void check_valid(const struct kube_ngc *g)
{
	ng_fuzz_check(g->retry_initial_ms == 0 || in_range(g->retry_initial_ms, 1, 86400));
	ng_fuzz_check(g->retry_max_ms == 0 || in_range(g->retry_max_ms, 1, 86400));
	const int64_t backoff[3] = {g->drain_backoff_base_ms, g->drain_backoff_max_ms,
				    g->drain_backoff_jitter_ms};
	for (int k = 0; k < 3; k++)
		ng_fuzz_check(backoff[k] == -1 || in_range(backoff[k], 0, 86400));
	ng_fuzz_check(g->hooks.max_response_bytes >= 1 &&
		      g->hooks.max_response_bytes <= 16 * 1024 * 1024);
	for (uint16_t i = 0; i < g->hooks.ncidrs; i++) {
		const struct kube_cidr *c = &g->hooks.cidrs[i];
		ng_fuzz_check((c->family == 4 && c->bits <= 32) ||
			      (c->family == 6 && c->bits <= 128));
	}
	ng_fuzz_check(g->has_exempt_users || g->nexempt == 0);
	ng_fuzz_check(!g->has_default_deadline || (g->default_deadline_s >= 0 &&
						   g->default_deadline_s <= KUBE_MAX_LIFECYCLE_S));
	ng_fuzz_check(!g->has_default_ttl ||
		      (g->default_ttl_s >= 0 && g->default_ttl_s <= KUBE_MAX_LIFECYCLE_S));
	/* autoRequestIdleSeconds is always in its bounds (the default when absent or invalid). */
	ng_fuzz_check(g->auto_request_idle_s >= KUBE_MIN_AUTO_IDLE_S &&
		      g->auto_request_idle_s <= KUBE_MAX_AUTO_IDLE_S);
	/* alertGate: a valid one is https with a URL and a question, in its ranges. */
	const struct kube_alert_gate *a = &g->alert;
	ng_fuzz_check(a->mode <= KUBE_ALERT_REGEX);
	if (a->mode != KUBE_ALERT_NONE) {
		ng_fuzz_check(a->target.url && a->target.scheme && a->expr && *a->expr);
		ng_fuzz_check(strcmp(a->target.scheme, "https") == 0 && !a->target.userinfo);
		ng_fuzz_check(!strpbrk(a->target.url, "?#"));
		ng_fuzz_check(a->target.timeout_s >= 1 && a->target.timeout_s <= 30);
		ng_fuzz_check(a->cache_s >= 1 && a->cache_s <= 300);
	}
}

static void roundtrip(const struct kube_one *one)
{
	const struct kube_ngc *g = kube_one_ngc(one);
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	ng_fuzz_check(ng_fuzz_encode_ngc(g, kube_one_pool(one), &out) == NG_OK);
	struct kube_one *again = ng_fuzz_reparse(&out, KUBE_RES_NGCS);
	if (!ng_fuzz_same_ngc(g, kube_one_pool(one), kube_one_ngc(again), kube_one_pool(again)))
		ng_fuzz_differs(&out);
	kube_one_destroy(again);
	ng_buf_finish(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	ng_fuzz_check(arena != NULL);
	cJSON *root = NULL;
	if (ng_json_parse((const char *)data, size, arena, &root, NULL) != NG_OK)
		goto out;

	struct kube_one *a = NULL, *b = NULL;
	struct ng_err err = {0};
	ng_status st = ng_fuzz_decode_twice(KUBE_RES_NGCS, root, data, size, &a, &b, &err);
	if (st != NG_OK) {
		/* Only an object without a usable name, or no memory, is not a config at all. */
		ng_fuzz_check(st == NG_EPARSE || st == NG_ENOMEM);
		ng_fuzz_check(st == NG_ENOMEM || strstr(err.msg, "metadata.name") != NULL ||
			      strstr(err.msg, "expected an object") != NULL);
		goto out;
	}
	const struct kube_ngc *g = kube_one_ngc(a);
	ng_fuzz_check(ng_fuzz_same_ngc(g, kube_one_pool(a), kube_one_ngc(b), kube_one_pool(b)));
	if (g->invalid) {
		ng_fuzz_check(g->eviction_mode == KUBE_EVICTION_ENFORCE && !g->auto_request &&
			      !g->has_exempt_users && g->nexempt == 0 && !g->has_default_deadline &&
			      !g->has_default_ttl);
		ng_fuzz_check(ng_fuzz_message_ok(ng_intern_str(kube_one_pool(a), g->error, NULL),
						 data, size));
	} else {
		check_valid(g);
		roundtrip(a);
	}
	kube_one_destroy(a);
	kube_one_destroy(b);
out:
	ng_arena_destroy(arena);
	return 0;
}
