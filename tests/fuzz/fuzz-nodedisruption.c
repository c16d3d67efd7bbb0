/* libFuzzer target for the NodeDisruption decoder (STYLE.md B12 "Fuzz"): kube/decode.c's
 * spec (type, requestor, priority, nodeNames, nodeSelector, retry), spec.drain (selectors,
 * filters, taint, strategy, timeouts), spec.operation with its jobTemplate, additionalRequestors,
 * startDate, duration, activeDeadlineSeconds, ttlSecondsAfterCompletion, metadata, and the status
 * the gate and the drainer read back (expiresAt among it).
 *
 * The input is parsed as JSON and decoded as a NodeDisruption whatever its kind says
 * (kube_one_decode_as()). Invariants, each abort()ing when broken:
 * - decoding the same tree twice gives equal records;
 * - a refusal is NG_EPARSE, NG_ELIMIT or NG_ENOMEM with a readable message
 *   (ng_fuzz_message_ok()), and so is every problem a record carries (spec.nodeSelector's,
 *   spec's);
 * - decode -> encode -> decode is stable: the record written back as a NodeDisruption
 *   (tests/fuzz/roundtrip.c, through kube_one_parse(), so by kind and apiVersion) decodes to an
 *   equal record, but for what a problem left out (an invalid nodeSelector, the spec fields a
 *   spec problem is about);
 * - a jobTemplate is stored in canonical form: decoded again from its stored text, it is stored
 *   as the same text;
 * - the reason of the first failing budget kept for the gate is "" or the reason of a verdict
 *   that is not ok;
 * - activeDeadlineSeconds and ttlSecondsAfterCompletion are -1 (absent or refused, then with a
 *   spec problem when present) or in 0..KUBE_MAX_LIFECYCLE_S;
 * - the strict field check (kube/strict.h, what `nodegate check` runs on its input) of the same
 *   input, as whatever kind it says and as a NodeDisruption, answers NG_OK or NG_EPARSE with a
 *   readable message. */
#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "kube/one.h"
#include "kube/strict.h"
#include "tests/fuzz/roundtrip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *id_str(const struct kube_one *one, uint32_t id)
{
	return ng_intern_str(kube_one_pool(one), id, NULL);
}

/* Decodes the stored jobTemplate @jt in a NodeDisruption of its own: it must come back as is. */
static void check_job_template(const char *jt)
{
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	ng_fuzz_check(ng_buf_puts(&b, "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":"
				      "\"NodeDisruption\",\"metadata\":{\"name\":\"jt\"},"
				      "\"spec\":{\"operation\":{\"jobTemplate\":") == NG_OK &&
		      ng_buf_puts(&b, jt) == NG_OK && ng_buf_puts(&b, "}}}") == NG_OK);
	struct kube_one *one = NULL;
	struct ng_err err = {0};
	ng_fuzz_check(kube_one_parse(b.data, b.len, &one, &err) == NG_OK);
	const struct kube_nd *nd = kube_one_nd(one);
	ng_fuzz_check(nd && nd->detail->operation.job_template &&
		      strcmp(nd->detail->operation.job_template, jt) == 0);
	kube_one_destroy(one);
	ng_buf_finish(&b);
}

static void check_record(const struct kube_one *one, const uint8_t *data, size_t size)
{
	const struct kube_nd *nd = kube_one_nd(one);
	const struct kube_nd_detail *x = nd->detail;
	ng_fuzz_check(x != NULL);
	if (nd->selector_invalid)
		ng_fuzz_check(!nd->node_selector.present &&
			      ng_fuzz_message_ok(id_str(one, nd->selector_error), data, size));
	if (x->spec_error != NG_INTERN_NONE)
		ng_fuzz_check(ng_fuzz_message_ok(id_str(one, x->spec_error), data, size));
	ng_fuzz_check(nd->additional_requestors == (x->nmore_requestors > 0) ||
		      x->spec_error != NG_INTERN_NONE);
	bool reason_found = nd->status_reason[0] == '\0';
	for (uint16_t i = 0; !reason_found && i < x->nverdicts; i++)
		reason_found =
		    !x->verdicts[i].ok && strcmp(x->verdicts[i].reason, nd->status_reason) == 0;
	ng_fuzz_check(reason_found);
	ng_fuzz_check(x->active_deadline_s >= -1 && x->active_deadline_s <= KUBE_MAX_LIFECYCLE_S);
	ng_fuzz_check(x->ttl_after_completion_s >= -1 &&
		      x->ttl_after_completion_s <= KUBE_MAX_LIFECYCLE_S);
	ng_fuzz_check(x->last_used_ms >= 0);
	if (x->operation.job_template)
		check_job_template(x->operation.job_template);
}

static void roundtrip(const struct kube_one *one)
{
	const struct kube_nd *nd = kube_one_nd(one);
	unsigned skip = (nd->selector_invalid ? NG_FUZZ_SKIP_SELECTOR : 0) |
			(nd->detail->spec_error != NG_INTERN_NONE ? NG_FUZZ_SKIP_DETAIL : 0);
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	ng_fuzz_check(ng_fuzz_encode_nd(nd, kube_one_pool(one), skip, &out) == NG_OK);
	struct kube_one *again = ng_fuzz_reparse(&out, KUBE_RES_NDS);
	if (!ng_fuzz_same_nd(nd, kube_one_pool(one), kube_one_nd(again), kube_one_pool(again),
			     skip))
		ng_fuzz_differs(&out);
	kube_one_destroy(again);
	ng_buf_finish(&out);
}

/* The strict field check of @root, as its own kind and as a NodeDisruption. */
static void check_strict(cJSON *root, const uint8_t *data, size_t size)
{
	struct kube_strict *s = kube_strict_create();
	ng_fuzz_check(s != NULL);
	for (int pass = 0; pass < 2; pass++) {
		struct ng_err err = {0};
		ng_status st = kube_strict_check(s, root, pass ? "items[0]" : NULL, &err);
		ng_fuzz_check(st == NG_OK ||
			      (st == NG_EPARSE && ng_fuzz_message_ok(err.msg, data, size)));
		if (!cJSON_IsObject(root))
			break;
		cJSON_DeleteItemFromObjectCaseSensitive(root, "kind");
		cJSON_DeleteItemFromObjectCaseSensitive(root, "apiVersion");
		if (!cJSON_AddStringToObject(root, "kind", "NodeDisruption") ||
		    !cJSON_AddStringToObject(root, "apiVersion", "nodegate.io/v1alpha1"))
			break;
	}
	kube_strict_destroy(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	ng_fuzz_check(arena != NULL);
	cJSON *root = NULL;
	if (ng_json_parse((const char *)data, size, arena, &root, NULL) != NG_OK)
		goto out;
	{
		/* A tree of its own: the check below changes kind and apiVersion. */
		cJSON *copy = NULL;
		if (ng_json_parse((const char *)data, size, NULL, &copy, NULL) == NG_OK)
			check_strict(copy, data, size);
		cJSON_Delete(copy);
	}

	struct kube_one *a = NULL, *b = NULL;
	struct ng_err err = {0};
	ng_status st = ng_fuzz_decode_twice(KUBE_RES_NDS, root, data, size, &a, &b, &err);
	if (st != NG_OK) {
		ng_fuzz_check(st == NG_EPARSE || st == NG_ELIMIT || st == NG_ENOMEM);
		goto out;
	}
	ng_fuzz_check(
	    ng_fuzz_same_nd(kube_one_nd(a), kube_one_pool(a), kube_one_nd(b), kube_one_pool(b), 0));
	check_record(a, data, size);
	roundtrip(a);
	kube_one_destroy(a);
	kube_one_destroy(b);
out:
	ng_arena_destroy(arena);
	return 0;
}
