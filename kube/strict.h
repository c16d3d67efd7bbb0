/* Unknown fields in nodegate's own objects, refused as kube-apiserver's strict field validation
 * refuses them (`kubectl apply --validate=strict`), for the files `nodegate check` and `nodegate
 * plan` read: a misspelled `priorty` would otherwise be dropped in silence and the request
 * decided as if it had no priority. The schemas are the CRDs' own, built into the binary
 * (scripts/gen-crd-schemas.py writes them from the CRDs in manifests/crds at build time), so a
 * field is known exactly when the API server would keep it.
 *
 * What is checked: every key of an object against its schema's properties; a schema with
 * additionalProperties checks each value against that; x-kubernetes-preserve-unknown-fields
 * takes anything below it; list items against items. At the top, apiVersion, kind and metadata
 * are the API server's and are not looked into. Core kinds (Node, Pod: kubectl's own output)
 * and kinds of other groups are not checked.
 *
 * Threads: a struct kube_strict is used by one thread at a time; the tables are constant.
 * Errors: NG_EPARSE naming the field's path and, when one is close, the field meant
 * ("spec.priorty: unknown field (did you mean priority?)"); NG_ENOMEM. */
#ifndef NG_KUBE_STRICT_H
#define NG_KUBE_STRICT_H

#include "common/status.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* One CRD's schema shape: compact JSON of {properties, items, additionalProperties,
 * x-kubernetes-preserve-unknown-fields} nested as in its openAPIV3Schema. */
struct kube_crd_schema {
	const char *group, *kind;
	const char *json; /* not NUL-terminated */
	size_t len;
};

/* Generated (crd_schemas.c): nodegate's kinds, sorted by kind. */
extern const struct kube_crd_schema kube_crd_schemas[];
extern const size_t kube_ncrd_schemas;

struct kube_strict;

/** A checker; parses each kind's schema the first time an object of that kind comes. NULL on
 * OOM. Free with kube_strict_destroy(). */
struct kube_strict *kube_strict_create(void);
/** Accepts NULL. */
void kube_strict_destroy(struct kube_strict *s);

/**
 * Checks object @obj (borrowed): NG_OK when it is not one of nodegate's kinds or has no unknown
 * field; else NG_EPARSE with @reterr's message "@where: PATH: unknown field" (@where, e.g.
 * "items[3]", may be NULL or "": the message then starts with the path).
 */
NG_NODISCARD ng_status kube_strict_check(struct kube_strict *s, const cJSON *obj, const char *where,
					 struct ng_err *reterr);

/**
 * As kube_strict_check() on the JSON object in @buf (@len bytes): the fuzz target's entry point.
 * NG_EPARSE also for malformed JSON.
 */
NG_NODISCARD ng_status kube_strict_check_json(const char *buf, size_t len, struct ng_err *reterr);

#endif
