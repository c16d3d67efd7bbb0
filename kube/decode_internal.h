/* Decoding internals shared by kube/decode*.c (one file per family of kinds): the decoding
 * context and the helpers every family uses (prefix kd_, each described where it is defined).
 * Not for use outside those files.
 * Threads: whoever decodes; a context belongs to one decode call. */
#ifndef NG_KUBE_DECODE_INTERNAL_H
#define NG_KUBE_DECODE_INTERNAL_H

#include "kube/internal.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/status.h"

#include <stdbool.h>
#include <stdint.h>

/* Bounds of a hook (spec.healthHook, hook policies): a URL (or service path) and a CA bundle. */
#define HOOK_URL_MAX 2048
#define HOOK_CA_MAX (64u * 1024u)

/* The identity of the object being decoded, read before its kind's decoder runs. */
struct kd_id {
	const char *name; /* metadata.name as given ("" when optional and missing) */
	uint32_t name_id; /* interned name; NG_INTERN_NONE for kinds keeping it as a string */
	uint32_t ns_id;   /* interned namespace of a namespaced kind, else NG_INTERN_NONE */
};

/* An object decoded on its own (kube/one.h). */
struct kube_one {
	struct ng_intern *pool;
	struct kube_object obj;
};

/* One object being decoded. */
struct kd_ctx {
	struct kube_object *obj;
	struct ng_intern *pool;
	struct ng_arena *arena;
	const char *where; /* "items[3]": where the object came from ("" for one on its own) */
	/* The object's identity for messages, "(Pod default/web-1)" after where; formatted only
	 * when something fails (kd_fail()). No name: none is shown. */
	const char *kind, *ns, *name;
	struct ng_err *err;
};

/* decode.c: errors, interning, arenas, common field shapes and the record being decoded. */
ng_status kd_fail(struct kd_ctx *c, ng_status st, const char *field, const char *what);
ng_status kd_intern(struct kd_ctx *c, const char *s, uint32_t *ret);
void *kd_alloc(struct kd_ctx *c, size_t n);
const char *kd_dup_or_empty(struct kd_ctx *c, const char *s);
ng_status kd_opt_str(struct kd_ctx *c, const cJSON *obj, const char *key, const char *field,
		     uint32_t *ret);
ng_status kd_decode_labels(struct kd_ctx *c, const cJSON *j, const char *field,
			   const struct kube_label **ret, uint16_t *ret_n);
ng_status kd_decode_str_array(struct kd_ctx *c, const cJSON *j, const char *field, size_t max,
			      const uint32_t **ret, uint16_t *ret_n);
void *kd_record(struct kd_ctx *c, enum kube_resource r);
uint8_t kd_cond_status(const char *s);
void *kd_items_room(struct kd_ctx *c, const cJSON *arr, size_t max, size_t size, size_t *ret_n);
void kd_problem(struct ng_err *verr, const char *fmt, ...) NG_PRINTF(2, 3);
/* spec.exclusions of a budget or a NodeGateConfig into *@ret (sorted by start) and *@ret_n;
 * problems go to @verr, only OOM fails (kube/decode_budget.c). */
ng_status kd_decode_exclusions(struct kd_ctx *c, const cJSON *spec,
			       const struct kube_exclusion **ret, uint16_t *ret_n,
			       struct ng_err *verr);
int64_t kd_opt_seconds(const cJSON *obj, const char *key, const char *field, struct ng_err *verr);
ng_status kd_opt_text(struct kd_ctx *c, const cJSON *obj, const char *key, const char *field,
		      const char *what, size_t max, const char **ret, struct ng_err *verr);
ng_status kd_canonical_json(struct kd_ctx *c, const cJSON *v, struct ng_buf *b);
bool kd_parse_duration_ms(const char *s, int64_t *ret_ms);
int64_t kd_opt_time_ms(const cJSON *obj, const char *key);
ng_status kd_decode_int_or_string(struct kd_ctx *c, const cJSON *j, const char *field,
				  struct kube_int_or_string *ret, struct ng_err *verr);

/* decode_labels.c: used by the budgets (hook hosts) and the core kinds (PV affinity). */
bool kd_dns_subdomain_ok(const char *s, size_t len);
ng_status kd_decode_node_selector(struct kd_ctx *c, const cJSON *j, struct kube_node_selector *ret);

/* Each kind's decoder, its row's decode (kube/kinds.c): fills the record kd_record() gives,
 * with the object's identity in @id. */

/* decode_core.c */
int64_t kd_dnd_until(const char *v, int64_t since_ms, bool *ret_invalid);
uint8_t kd_pod_phase(const char *s);
ng_status kd_decode_node(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);
ng_status kd_decode_pod(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);
ng_status kd_decode_pvc(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);
ng_status kd_decode_pv(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);
ng_status kd_decode_pdb(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);
ng_status kd_decode_lease(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);

/* decode_nd.c */
ng_status kd_nd_drain(struct kd_ctx *c, const cJSON *j, struct kube_nd_drain *dr,
		      struct ng_err *verr);
/* spec.drain.rules @j (absent or null: none) of a NodeDisruption or a NodeGateConfig into *@ret
 * and *@ret_n; problems go to @verr naming the field, only OOM fails. */
ng_status kd_drain_rules(struct kd_ctx *c, const cJSON *j, const struct kube_drain_rule **ret,
			 uint16_t *ret_n, struct ng_err *verr);
ng_status kd_nd_operation(struct kd_ctx *c, const cJSON *j, struct kube_nd_operation *op,
			  struct ng_err *verr);
ng_status kd_decode_nd(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);

/* decode_budget.c */
ng_status kd_hook_parts(struct kd_ctx *c, const char *url, const char *field, struct kube_hook *h,
			char *why, size_t cap);
ng_status kd_hook_ca(struct kd_ctx *c, const cJSON *ca, const char *field, struct kube_hook *h,
		     char *why, size_t cap);
ng_status kd_decode_adb(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);
ng_status kd_decode_ndb(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);

/* decode_config.c */
ng_status kd_decode_ngc(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);
ng_status kd_decode_ndt(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);
ng_status kd_decode_nrem(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);

/* decode_capi.c */
ng_status kd_decode_machine(struct kd_ctx *c, const cJSON *o, const struct kd_id *id);

/** The record of @one when it is of kind @res (for its kind's kube_one_* accessor), else NULL. */
const void *kd_one_record(const struct kube_one *one, enum kube_resource res);
/** Pods: a record decoded in scratch copied into one exactly sized block (a row's compact). */
void *kd_compact_pod(void *rec);

/* Appends @id to @v (*@n of them) unless it is there already: a pod's resource names, each
 * once (a handful: a scan). */
static inline void kd_put_once(uint32_t *v, size_t *n, uint32_t id)
{
	for (size_t j = 0; j < *n; j++)
		if (v[j] == id)
			return;
	v[(*n)++] = id;
}

#endif
