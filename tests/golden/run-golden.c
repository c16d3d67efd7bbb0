/* Golden decision cases: tests/golden/<area>/<case>.json holds a cluster, a config, an
 * AdmissionReview and what the answer must be. The case runs the same decode -> decide -> encode
 * pipeline the HTTPS server runs, in-process. Usage: run-golden CASE.json */
#include "common/arena.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/limits.h"
#include "server/admission.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(bool ok, const char *what, const char *detail)
{
	if (!ok) {
		failures++;
		(void)fprintf(stderr, "FAIL: %s%s%s\n", what, detail ? ": " : "",
			      detail ? detail : "");
	}
}

static bool contains_all(const cJSON *list, const char *text)
{
	bool ok = true;
	for (const cJSON *e = cJSON_IsArray(list) ? list->child : NULL; e; e = e->next) {
		if (!cJSON_IsString(e) || !strstr(text, e->valuestring)) {
			(void)fprintf(stderr, "  missing \"%s\" in \"%s\"\n",
				      cJSON_IsString(e) ? e->valuestring : "?", text);
			ok = false;
		}
	}
	return ok;
}

int main(int argc, char **argv)
{
	cJSON *c = ng_test_case(argc, argv);
	struct ng_err err = {0};
	const cJSON *cluster = ng_json_get(c, "cluster");
	const cJSON *config = ng_json_get(c, "config");
	const cJSON *review = ng_json_get(c, "review");
	const cJSON *expect = ng_json_get(c, "expect");
	if (!cluster || !review || !cJSON_IsObject(expect)) {
		(void)fprintf(stderr, "%s: needs cluster, review and expect\n", argv[1]);
		return 2;
	}
	char *cluster_json = cJSON_PrintUnformatted(cluster);
	struct kube_snapshot *snap = ng_test_snapshot(cluster_json);
	const char *exempt[16];
	struct pol_eviction_config cfg = {
	    .mode = POL_EVICTION_ENFORCE, .exempt_users = exempt, .retry_after_seconds = 10};
	const char *mode = ng_json_str(config, "mode");
	if (mode && pol_eviction_mode_parse(mode, &cfg.mode) != NG_OK) {
		(void)fprintf(stderr, "%s: config.mode %s\n", argv[1], mode);
		return 2;
	}
	int64_t retry;
	if (ng_json_int64(ng_json_get(config, "retryAfterSeconds"), &retry))
		cfg.retry_after_seconds = (int32_t)retry;
	const cJSON *ex = ng_json_get(config, "exemptUsers");
	for (const cJSON *e = cJSON_IsArray(ex) ? ex->child : NULL; e && cfg.nexempt < 16;
	     e = e->next)
		exempt[cfg.nexempt++] = e->valuestring;
	/* The review is run from its own bytes: either a JSON value or a raw string body. */
	char *body = cJSON_IsString(review) ? NULL : cJSON_PrintUnformatted(review);
	const char *bytes = body ? body : review->valuestring;
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	struct ng_buf out;
	ng_buf_init(&out, 65536);
	struct srv_admission adm;
	ng_status st =
	    srv_admit_eviction(bytes, strlen(bytes), arena, snap, &cfg, &out, &adm, &err);
	const cJSON *want_err = ng_json_get(expect, "badRequestContains");
	if (want_err) {
		check(st != NG_OK, "expected the body to be rejected (HTTP 400)", NULL);
		check(st == NG_OK ||
			  (cJSON_IsString(want_err) && strstr(err.msg, want_err->valuestring)),
		      "400 message", err.msg);
		goto done;
	}
	check(st == NG_OK, "pipeline failed", err.msg);
	if (st != NG_OK)
		goto done;
	cJSON *resp_root = NULL;
	check(ng_json_parse(out.data, out.len, arena, &resp_root, &err) == NG_OK,
	      "response is not JSON", err.msg);
	const cJSON *resp = ng_json_get(resp_root, "response");
	const char *want_uid = ng_json_str(ng_json_get(review, "request"), "uid");
	check(want_uid && ng_json_str(resp, "uid") &&
		  strcmp(ng_json_str(resp, "uid"), want_uid) == 0,
	      "response.uid must echo request.uid", NULL);
	const cJSON *allowed = ng_json_get(expect, "allowed");
	check(cJSON_IsBool(allowed) &&
		  cJSON_IsTrue(ng_json_get(resp, "allowed")) == cJSON_IsTrue(allowed),
	      "allowed", out.data);
	const char *reason = ng_json_str(expect, "reason");
	check(!reason || strcmp(reason, pol_reason_str(adm.decision.reason)) == 0, "reason",
	      pol_reason_str(adm.decision.reason));
	const cJSON *status = ng_json_get(resp, "status");
	int64_t code;
	if (ng_json_int64(ng_json_get(expect, "code"), &code)) {
		int64_t got = -1;
		(void)ng_json_int64(ng_json_get(status, "code"), &got);
		check(got == code, "status.code", out.data);
		const char *sreason = ng_json_str(status, "reason");
		check(code != 429 || (sreason && strcmp(sreason, "TooManyRequests") == 0),
		      "status.reason must be TooManyRequests", out.data);
	}
	if (ng_json_int64(ng_json_get(expect, "retryAfterSeconds"), &code)) {
		int64_t got = -1;
		(void)ng_json_int64(
		    ng_json_get(ng_json_get(status, "details"), "retryAfterSeconds"), &got);
		check(got == code, "status.details.retryAfterSeconds", out.data);
	}
	const char *msg = ng_json_str(status, "message");
	check(contains_all(ng_json_get(expect, "messageContains"), msg ? msg : ""),
	      "status.message", NULL);
	const cJSON *warnings = ng_json_get(resp, "warnings");
	const char *warn = cJSON_IsArray(warnings) && cJSON_IsString(warnings->child)
			       ? warnings->child->valuestring
			       : "";
	check(contains_all(ng_json_get(expect, "warningContains"), warn), "warnings", NULL);
	if (cJSON_IsFalse(ng_json_get(expect, "warning")))
		check(!warnings, "no warning expected", warn);
done:
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
	kube_snapshot_release(snap);
	cJSON_free(cluster_json);
	cJSON_free(body);
	cJSON_Delete(c);
	if (failures) {
		(void)fprintf(stderr, "%s: %d check(s) failed\n", argv[1], failures);
		return 1;
	}
	(void)printf("%s: ok\n", argv[1]);
	return 0;
}
