/* libFuzzer target for the object admission webhooks (STYLE.md B12 "Fuzz"): every input goes
 * to each of /validate/budget, /validate/nodedisruption, /validate/nodedisruption-status and
 * /mutate/nodedisruption. AdmissionReview decoding, then the object and oldObject decoded once,
 * from the same tree, by the cache's decoder (kube_one_decode(): selectors, IntOrString limits,
 * healthHook with its base64 caBundle and service reference, NodeGateConfig healthHooks with
 * CIDRs, a NodeDisruption's drain, operation with its jobTemplate, dates and durations), the hook
 * policy (URL parsing, host globs), drain selectors and regexes, the typed spec comparison
 * against oldObject, the typed status decision fields. The same bytes also go to POST
 * /v1/evaluate as a NodeDisruption to decide (parsed once, decoded as a NodeDisruption), and to
 * kube_one_parse() on their own.
 *
 * Invariants: nothing crashes or leaks; a decoded review always gets an answer; a denial
 * carries 403 or 422 and a non-empty printable ASCII message; only the mutating webhook
 * patches, and only allowed requests; the same input decides the same way twice. The cluster
 * it is checked against has a NodeGateConfig with an allowedHosts glob, so the policy path
 * runs. Any broken invariant calls abort() so libFuzzer keeps the input. */
#include "common/arena.h"
#include "common/buf.h"
#include "common/limits.h"
#include "kube/records.h"
#include "kube/one.h"
#include "kube/snapshot.h"
#include "server/admission.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static struct kube_snapshot *cluster(void)
{
	static struct kube_snapshot *s;
	if (s)
		return s;
	static const char json[] =
	    "{\"kind\":\"NodeGateConfig\",\"apiVersion\":\"nodegate.io/v1alpha1\",\"metadata\":{"
	    "\"name\":\"default\"},\"spec\":{\"healthHooks\":{\"allowedHosts\":[\"*.svc\","
	    "\"hooks.example.com\"],\"allowedCIDRs\":[\"10.0.0.0/8\"]}}}";
	struct kube_builder *b = kube_builder_create();
	check(b != NULL);
	check(kube_builder_add_json(b, json, strlen(json), NULL) == NG_OK);
	check(kube_builder_finish(b, &s) == NG_OK);
	return s;
}

static const char *const deciders[] = {"system:serviceaccount:nodegate:nodegate"};

static void decide(enum srv_object_webhook wh, const uint8_t *data, size_t size,
		   struct srv_object_admission *ret, ng_status *ret_st)
{
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	check(arena != NULL);
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	struct ng_err err = {0};
	struct srv_object_config cfg = {deciders, 1, NULL};
	*ret_st =
	    srv_admit_object(wh, (const char *)data, size, arena, cluster(), &cfg, &out, ret, &err);
	if (*ret_st == NG_OK) {
		check(out.len > 0 && strstr(out.data, "\"response\"") != NULL);
		check(!ret->patched ||
		      ((wh == SRV_OBJ_ND_MUTATE || wh == SRV_OBJ_AUTHOR_MUTATE) && ret->allowed));
		check(ret->patched == (strstr(out.data, "\"patchType\":\"JSONPatch\"") != NULL));
	} else
		check(err.msg[0] != '\0');
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
}

/* POST /v1/evaluate reads the same bytes as a NodeDisruption: an answer, or an error. */
static void evaluate(const uint8_t *data, size_t size)
{
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	check(arena != NULL);
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	struct ng_err err = {0};
	int code = 0;
	bool granted = false;
	ng_status st = srv_evaluate((const char *)data, size, arena, cluster(), 1795000000000, &out,
				    &code, &granted, &err);
	if (st == NG_OK)
		check((code == 200 || code == 403 || code == 422) && out.len > 0 &&
		      (!granted || code == 200));
	else
		check(err.msg[0] != '\0');
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
}

/* The bytes as one object on their own: decoded, or refused with a message. */
static void one_object(const uint8_t *data, size_t size)
{
	struct kube_one *one = NULL;
	struct ng_err err = {0};
	ng_status st = kube_one_parse((const char *)data, size, &one, &err);
	if (st == NG_OK) {
		check(kube_one_pool(one) != NULL);
		const struct kube_nd *nd = kube_one_nd(one);
		check(!nd || nd->detail != NULL);
	} else {
		check(err.msg[0] != '\0');
	}
	kube_one_destroy(one);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > NG_MAX_BODY_BYTES)
		return 0;
	evaluate(data, size);
	one_object(data, size);
	static const enum srv_object_webhook whs[] = {SRV_OBJ_BUDGET,    SRV_OBJ_ND,
						      SRV_OBJ_ND_STATUS, SRV_OBJ_ND_MUTATE,
						      SRV_OBJ_AUTHORED,  SRV_OBJ_AUTHOR_MUTATE};
	for (size_t w = 0; w < sizeof(whs) / sizeof(whs[0]); w++) {
		struct srv_object_admission a, b;
		ng_status st, st2;
		decide(whs[w], data, size, &a, &st);
		if (st != NG_OK)
			return 0;
		if (!a.allowed) {
			check(a.code == 403 || a.code == 422);
			size_t n = strlen(a.message);
			check(n > 0);
			for (size_t i = 0; i < n; i++)
				check((unsigned char)a.message[i] >= 0x20 &&
				      (unsigned char)a.message[i] < 0x7f);
		}
		decide(whs[w], data, size, &b, &st2);
		check(st2 == NG_OK && a.allowed == b.allowed && a.code == b.code &&
		      a.patched == b.patched && strcmp(a.message, b.message) == 0 &&
		      strcmp(a.warning, b.warning) == 0);
	}
	return 0;
}
