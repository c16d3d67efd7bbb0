/* libFuzzer target for the AdmissionReview decoder (STYLE.md B12 "Fuzz").
 *
 * Every input goes through srv_review_decode(). When it decodes, the review must be one the
 * rest of the server can use: a non-empty uid, an operation it knows, no NULL strings, and
 * nodegate's objects either decoded by kube/ or with a reason they are not. Then the
 * response path must hold: srv_review_encode() succeeds for that uid, and its output parses (with
 * our own strict parser) as an admission.k8s.io/v1 AdmissionReview whose response.uid is the
 * decoded uid byte for byte, because the API server rejects a response whose uid differs from
 * the request's. Any broken invariant calls abort() so libFuzzer keeps the input. */
#include "common/arena.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/status.h"
#include "server/review.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

/* Every string field of a decoded review is borrowed and never NULL ("" when absent). */
static void check_strings(const struct srv_review *r)
{
	const char *const fields[] = {
	    r->uid,       r->kind_group,     r->kind_version,
	    r->kind_kind, r->resource_group, r->resource_version,
	    r->resource,  r->sub_resource,   r->name,
	    r->ns,        r->operation,      r->username,
	};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		check(fields[i] != NULL);
	check(r->object_ns != NULL && r->object_name != NULL);
	check(r->uid[0] != '\0');
	/* A nodegate object is decoded, or says why not; never both, never silently neither. */
	check(!r->object || (r->has_object && r->object_err.status == NG_OK));
	check(!r->old_object || (r->has_old_object && r->old_object_err.status == NG_OK));
	check(r->object || r->object_err.status == NG_OK || r->object_err.msg[0] != '\0');
	check(r->old_object || r->old_object_err.status == NG_OK ||
	      r->old_object_err.msg[0] != '\0');
	check(strcmp(r->operation, "CREATE") == 0 || strcmp(r->operation, "UPDATE") == 0 ||
	      strcmp(r->operation, "DELETE") == 0 || strcmp(r->operation, "CONNECT") == 0);
}

/* Encodes a response for @r's uid, parses it back and checks it echoes the uid. */
static void check_response(const struct srv_review *r, const struct srv_review_response *resp)
{
	struct ng_buf out;
	ng_buf_init(&out, NG_MAX_BODY_BYTES);
	check(srv_review_encode(r->uid, resp, &out) == NG_OK);
	check(out.data != NULL && out.len == strlen(out.data));

	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	check(arena != NULL);
	cJSON *root = NULL;
	struct ng_err err = {0};
	check(ng_json_parse(out.data, out.len, arena, &root, &err) == NG_OK);
	check(cJSON_IsObject(root));

	const char *api = ng_json_str(root, "apiVersion");
	const char *kind = ng_json_str(root, "kind");
	check(api != NULL && strcmp(api, "admission.k8s.io/v1") == 0);
	check(kind != NULL && strcmp(kind, "AdmissionReview") == 0);

	const cJSON *response = ng_json_get(root, "response");
	check(cJSON_IsObject(response));
	const char *uid = ng_json_str(response, "uid");
	check(uid != NULL);
	size_t want = strlen(r->uid);
	check(strlen(uid) == want && memcmp(uid, r->uid, want) == 0);

	const cJSON *allowed = ng_json_get(response, "allowed");
	check(cJSON_IsBool(allowed));
	check(cJSON_IsTrue(allowed) == resp->allowed);
	if (!resp->allowed) {
		const cJSON *status = ng_json_get(response, "status");
		int64_t code = 0;
		check(cJSON_IsObject(status));
		check(ng_json_int64(ng_json_get(status, "code"), &code) && code == resp->code);
	}

	ng_arena_destroy(arena);
	ng_buf_finish(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	check(arena != NULL);

	struct srv_review r;
	struct ng_err err = {0};
	ng_status st = srv_review_decode((const char *)data, size, arena, &r, &err);
	if (st == NG_OK) {
		check_strings(&r);

		const struct srv_review_response allow = {.allowed = true};
		/* A denial echoes the review's own strings: they are the input-derived text a
		 * real deny message would quote. */
		const struct srv_review_response deny = {
		    .allowed = false,
		    .code = 429,
		    .message = r.name,
		    .retry_after_seconds = 10,
		    .warning = r.username,
		};
		check_response(&r, &allow);
		check_response(&r, &deny);
		srv_review_finish(&r);
	} else {
		check(st == NG_EPARSE || st == NG_ELIMIT || st == NG_ENOMEM);
		check(err.status == st);
	}

	ng_arena_destroy(arena);
	return 0;
}
