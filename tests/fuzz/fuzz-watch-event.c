/* libFuzzer target for the watch-event and object decoder (STYLE.md B12 "Fuzz").
 *
 * The input is one watch event line ({"type": ..., "object": {...}}) or any object. It is applied
 * to a fresh cache the way the watch applies it, then the cache is published and the snapshot
 * read back. Invariants: a decoded object lands in the snapshot under its identity (an added pod
 * is found by namespace and name; a deleted one is absent), and nothing leaks. */
#include "common/arena.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "kube/internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES);
	struct kube_cache *c = kube_cache_create();
	if (!arena || !c)
		abort();
	cJSON *root = NULL;
	if (ng_json_parse((const char *)data, size, arena, &root, NULL) != NG_OK)
		goto out;
	const char *type = ng_json_str(root, "type");
	const cJSON *obj = type ? ng_json_get(root, "object") : root;
	bool del = type && strcmp(type, "DELETED") == 0;
	struct kube_object o;
	struct ng_err err = {0};
	ng_status st =
	    kube_decode_object(kube_cache_pool(c), kube_cache_scratch(c), obj, "fuzz", &o, &err);
	if (st == NG_OK) {
		bool pod = o.res == KUBE_RES_PODS;
		char ns[64], name[256];
		if (pod) {
			size_t len;
			const char *n = ng_intern_str(kube_cache_pool(c), o.rec.pod.ns, &len);
			if (len >= sizeof(ns) || strlen(o.rec.pod.name) >= sizeof(name))
				pod = false;
			else {
				memcpy(ns, n, len + 1);
				memcpy(name, o.rec.pod.name, strlen(o.rec.pod.name) + 1);
			}
		}
		if ((del ? kube_cache_delete(c, &o) : kube_cache_upsert(c, &o)) != NG_OK)
			goto out;
		struct kube_snapshot *s = NULL;
		if (kube_cache_publish(c, &s) != NG_OK)
			goto out;
		if (pod) {
			const struct kube_pod *p =
			    kube_snapshot_find_pod_str(s, ns, strlen(ns), name, strlen(name));
			if (del ? p != NULL : p == NULL)
				abort();
		}
		kube_snapshot_release(s);
	} else if (st != NG_ENOTFOUND && st != NG_EPARSE && st != NG_ELIMIT) {
		abort();
	}
out:
	kube_cache_destroy(c);
	ng_arena_destroy(arena);
	return 0;
}
