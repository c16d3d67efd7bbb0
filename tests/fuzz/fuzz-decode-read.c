/* libFuzzer target for pods read straight from their text (kube/decode_read.c) and the token
 * reader under it (common/json.h) (STYLE.md B12 "Fuzz").
 *
 * The input is a pod object, or any text. It is read both ways: parsed into a tree and decoded
 * by the tree decoder, and read token by token by kube_decode_read_as(). Invariants: the text
 * is JSON for both or for neither, failing at the same byte with the same message; a JSON
 * object gives both the same record, or both the same error; nothing leaks. */
#include "common/arena.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "kube/internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
	if (!ok)
		abort();
}

static bool same_ids(const uint32_t *a, const uint32_t *b, size_t n)
{
	return n == 0 || memcmp(a, b, n * sizeof(*a)) == 0;
}

static bool same_pod(const struct kube_pod *a, const struct kube_pod *b)
{
	return strcmp(a->name, b->name) == 0 && a->ns == b->ns && a->node == b->node &&
	       a->owner_kind == b->owner_kind && a->phase == b->phase && a->flags == b->flags &&
	       a->finalizer == b->finalizer && a->dnd_until_ms == b->dnd_until_ms &&
	       a->nlabels == b->nlabels && a->nclaims == b->nclaims &&
	       a->nrequests == b->nrequests &&
	       (a->nlabels == 0 ||
		memcmp(a->labels, b->labels, a->nlabels * sizeof(*a->labels)) == 0) &&
	       same_ids(a->claims, b->claims, a->nclaims) &&
	       same_ids(a->requests, b->requests, a->nrequests);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct ng_intern *pool = ng_intern_create();
	struct ng_arena *tree = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	struct ng_arena *reader = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	struct ng_arena *scratch = ng_arena_create(SIZE_MAX);
	if (!pool || !tree || !reader || !scratch)
		abort();
	cJSON *root = NULL;
	struct ng_err perr = {0}, rerr = {0}, terr = {0}, derr = {0};
	ng_status pst = ng_json_parse(text, size, tree, &root, &perr);

	struct ng_json_reader r;
	ng_json_reader_init(&r, text, size, reader, &rerr);
	struct kube_object b = {.side = NULL};
	struct kube_read_meta meta;
	ng_status bst = NG_OK;
	bool object = ng_json_peek(&r) == NG_JSON_OBJECT;
	if (object)
		bst =
		    kube_decode_read_as(pool, scratch, KUBE_RES_PODS, &r, "fuzz", &b, &meta, &derr);
	else
		(void)ng_json_skip(&r);
	bool ended = ng_json_reader_end(&r);
	/* The tree's arena may run out where the reader, which builds nothing, goes on: only a
	 * tree too large for it is not compared. */
	bool tree_cap = pst == NG_ELIMIT && ng_arena_exhausted(tree);
	if (!tree_cap) {
		check(ng_json_reader_status(&r) == pst && ended == (pst == NG_OK));
		check(pst == NG_OK ||
		      (rerr.offset == perr.offset && strcmp(rerr.msg, perr.msg) == 0));
	}
	if (pst == NG_OK && object) {
		struct kube_object a = {.side = NULL};
		ng_status ast =
		    kube_decode_as(pool, scratch, KUBE_RES_PODS, root, "fuzz", &a, &terr);
		check(ast == bst);
		if (ast == NG_OK) {
			check(same_pod(&a.rec.pod, &b.rec.pod));
			kube_side_free(a.side);
		} else {
			check(strcmp(terr.msg, derr.msg) == 0);
		}
	}
	if (object && bst == NG_OK)
		kube_side_free(b.side);
	ng_arena_destroy(scratch);
	ng_arena_destroy(reader);
	ng_arena_destroy(tree);
	ng_intern_destroy(pool);
	return 0;
}
