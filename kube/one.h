/* One object, decoded on its own.
 *
 * An object that is not in the cache (an admission request's object and oldObject, a dry run's
 * request) decoded by the same decoder the cache uses, into a holder with a string pool and side
 * data of its own. Ownership: the holder is the caller's (free with kube_one_destroy()); every
 * record, array and string it gives out is borrowed from it and valid until that destroy. Its
 * intern ids are ids of kube_one_pool() only: compare them with a snapshot's, or another
 * holder's, by string. Threads: a holder is not shared; any thread may make one. */
#ifndef NG_KUBE_ONE_H
#define NG_KUBE_ONE_H

#include "common/status.h"
#include "kube/records.h"

struct cJSON;
struct ng_arena;
struct ng_intern;

struct kube_one;

enum kube_one_flag {
	/* A missing metadata.name decodes as NG_INTERN_NONE instead of failing (a dry run's
	 * request need not be named); an empty one still fails. */
	KUBE_ONE_NAME_OPTIONAL = 1u << 0,
};

/**
 * Decodes @obj (a JSON object already parsed, e.g. the subtree of an AdmissionReview; borrowed
 * for the call, nothing of it is kept) as the kind its kind and apiVersion name. Writes
 * *@ret_one only on success. NG_ENOTFOUND for a kind the cache does not keep; NG_EPARSE or
 * NG_ELIMIT with @reterr naming the field ("spec.priority: expected an integer", no object
 * prefix) when a field the gate reads is malformed; NG_ENOMEM. A malformed budget or config
 * decodes as invalid (its record says why), as in the cache.
 */
NG_NODISCARD ng_status kube_one_decode(const struct cJSON *obj, struct kube_one **ret_one,
				       struct ng_err *reterr);

/**
 * As kube_one_decode(), but as a @res object whatever kind and apiVersion say (or whether they
 * are there); @flags is a mask of enum kube_one_flag. NG_EINVAL for @res out of range.
 */
NG_NODISCARD ng_status kube_one_decode_as(enum kube_resource res, const struct cJSON *obj,
					  unsigned flags, struct kube_one **ret_one,
					  struct ng_err *reterr);

/**
 * Parses @len bytes of JSON at @buf (borrowed, no NUL needed) and decodes the object as
 * kube_one_decode(); the tree is freed before returning. Errors of ng_json_parse() (NG_EPARSE
 * with the offset, NG_ELIMIT) and of kube_one_decode().
 */
NG_NODISCARD ng_status kube_one_parse(const char *buf, size_t len, struct kube_one **ret_one,
				      struct ng_err *reterr);

/** Frees the holder and everything it gave out. Accepts NULL. */
void kube_one_destroy(struct kube_one *one);

/** The kind of the object held. */
enum kube_resource kube_one_resource(const struct kube_one *one);
/** The pool that resolves the record's intern ids (borrowed from @one). */
const struct ng_intern *kube_one_pool(const struct kube_one *one);
/** The record (borrowed from @one) when @one holds that kind, else NULL; NULL for @one NULL. */
const struct kube_nd *kube_one_nd(const struct kube_one *one);
const struct kube_adb *kube_one_adb(const struct kube_one *one);
const struct kube_ndb *kube_one_ndb(const struct kube_one *one);
const struct kube_ngc *kube_one_ngc(const struct kube_one *one);
const struct kube_nrem *kube_one_nrem(const struct kube_one *one);
const struct kube_ndt *kube_one_ndt(const struct kube_one *one);

/**
 * Decodes a metav1.LabelSelector @j (JSON null or absent: a null selector) into *@ret_sel, its
 * keys and values interned in @pool and its arrays from @arena (both the caller's), exactly as
 * every kind's decoder reads one: operators, value counts and label syntax are checked, and
 * @field names it in messages ("spec.nodeSelector.matchLabels: ..."). NG_EPARSE/NG_ELIMIT with
 * @reterr, NG_ENOMEM. *@ret_sel is written only on success.
 */
NG_NODISCARD ng_status kube_decode_selector(struct ng_intern *pool, struct ng_arena *arena,
					    const struct cJSON *j, const char *field,
					    struct kube_selector *ret_sel, struct ng_err *reterr);

#endif
