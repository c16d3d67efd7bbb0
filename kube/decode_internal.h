/* Decoding internals shared by kube/decode*.c (one file per family of kinds): the decoding
 * context and the helpers every family uses. Not for use outside those files.
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

/* One object being decoded. */
struct ctx {
	struct kube_object *obj;
	struct ng_intern *pool;
	struct ng_arena *arena;
	const char *where; /* "items[3] (Pod default/web-1)" */
	struct ng_err *err;
};

/* decode.c */
ng_status kd_fail(struct ctx *c, ng_status st, const char *field, const char *what);
ng_status kd_intern(struct ctx *c, const char *s, uint32_t *ret);
void *kd_alloc(struct ctx *c, size_t n);
const char *kd_dup_or_empty(struct ctx *c, const char *s);
ng_status kd_opt_str(struct ctx *c, const cJSON *obj, const char *key, const char *field,
		     uint32_t *ret);
ng_status kd_decode_labels(struct ctx *c, const cJSON *j, const char *field,
			   const struct kube_label **ret, uint16_t *ret_n);
ng_status kd_decode_str_array(struct ctx *c, const cJSON *j, const char *field, size_t max,
			      const uint32_t **ret, uint16_t *ret_n);
void *kd_record(struct ctx *c, enum kube_resource r);
uint8_t kd_cond_status(const char *s);
void *kd_items_room(struct ctx *c, const cJSON *arr, size_t max, size_t size, size_t *ret_n);
void kd_problem(struct ng_err *verr, const char *fmt, ...) NG_PRINTF(2, 3);
int64_t kd_opt_seconds(const cJSON *obj, const char *key, const char *field, struct ng_err *verr);
ng_status kd_opt_text(struct ctx *c, const cJSON *obj, const char *key, const char *field,
		      const char *what, size_t max, const char **ret, struct ng_err *verr);
ng_status kd_canonical_json(struct ctx *c, const cJSON *v, struct ng_buf *b);
bool kd_parse_duration_ms(const char *s, int64_t *ret_ms);
int64_t kd_opt_time_ms(const cJSON *obj, const char *key);
ng_status kd_decode_int_or_string(struct ctx *c, const cJSON *j, const char *field,
				  struct kube_int_or_string *ret, struct ng_err *verr);

/* decode_labels.c */
bool kd_dns_subdomain_ok(const char *s, size_t len);
ng_status kd_decode_node_selector(struct ctx *c, const cJSON *j, struct kube_node_selector *ret);

/* decode_core.c */
ng_status kd_decode_node(struct ctx *c, const cJSON *o, uint32_t name, const cJSON *meta);
ng_status kd_decode_pod(struct ctx *c, const cJSON *o, uint32_t ns, const char *name,
			const cJSON *meta);
ng_status kd_decode_pvc(struct ctx *c, const cJSON *o, uint32_t ns, uint32_t name,
			const cJSON *meta);
ng_status kd_decode_pv(struct ctx *c, const cJSON *o, uint32_t name);
ng_status kd_decode_pdb(struct ctx *c, const cJSON *o, uint32_t ns, uint32_t name);

/* decode_nd.c */
ng_status kd_nd_drain(struct ctx *c, const cJSON *j, struct kube_nd_drain *dr, struct ng_err *verr);
ng_status kd_nd_operation(struct ctx *c, const cJSON *j, struct kube_nd_operation *op,
			  struct ng_err *verr);
ng_status kd_decode_nd(struct ctx *c, const cJSON *o, uint32_t name);

/* decode_budget.c */
ng_status kd_hook_parts(struct ctx *c, const char *url, const char *field, struct kube_hook *h,
			char *why, size_t cap);
ng_status kd_hook_ca(struct ctx *c, const cJSON *ca, const char *field, struct kube_hook *h,
		     char *why, size_t cap);
ng_status kd_decode_adb(struct ctx *c, const cJSON *o, uint32_t ns, uint32_t name);
ng_status kd_decode_ndb(struct ctx *c, const cJSON *o, uint32_t name);

/* decode_config.c */
ng_status kd_decode_ngc(struct ctx *c, const cJSON *o, uint32_t name);
ng_status kd_decode_ndt(struct ctx *c, const cJSON *o, uint32_t name);
ng_status kd_decode_nrem(struct ctx *c, const cJSON *o, uint32_t name);

#endif
