/* libFuzzer target for the budget admission webhook (POST /validate/budget, STYLE.md B12
 * "Fuzz"): AdmissionReview decoding, then the object through the cache's decoder (selectors,
 * IntOrString limits, healthHook with its base64 caBundle and service reference, NodeGateConfig
 * healthHooks with CIDRs) and the hook policy (URL parsing, host globs).
 *
 * Invariants: nothing crashes or leaks; a decoded review always gets an answer; a denial
 * carries 403 or 422 and a non-empty printable ASCII message; the same input decides the same way
 * twice. The cluster it is checked against has a NodeGateConfig with an allowedHosts glob, so
 * the policy path runs. Any broken invariant calls abort() so libFuzzer keeps the input. */
#include "common/arena.h"
#include "common/buf.h"
#include "common/limits.h"
#include "kube/kube.h"
#include "server/admission.h"

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

static void decide(const uint8_t *data, size_t size, struct srv_budget_admission *ret,
		   ng_status *ret_st)
{
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	check(arena != NULL);
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	struct ng_err err = {0};
	*ret_st = srv_admit_budget((const char *)data, size, arena, cluster(), &out, ret, &err);
	if (*ret_st == NG_OK)
		check(out.len > 0 && strstr(out.data, "\"response\"") != NULL);
	else
		check(err.msg[0] != '\0');
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > NG_MAX_BODY_BYTES)
		return 0;
	struct srv_budget_admission a, b;
	ng_status st, st2;
	decide(data, size, &a, &st);
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
	decide(data, size, &b, &st2);
	check(st2 == NG_OK && a.allowed == b.allowed && a.code == b.code &&
	      strcmp(a.message, b.message) == 0);
	return 0;
}
