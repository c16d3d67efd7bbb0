/* Label selectors and node selectors with Kubernetes' exact semantics (apimachinery labels and
 * component-helpers nodeaffinity).
 *
 * Ownership: every pointer argument is borrowed for the call and not kept. A parsed selector's
 * arrays live in the caller's arena and its keys and values are ids of the caller's pool: it is
 * valid while both are. Threads: matching and formatting only read the pool and may run on any
 * thread; parsing adds to the pool, so it runs on the pool's writer thread (or on a private
 * pool). */
#ifndef NG_BUDGETS_SELECTOR_H
#define NG_BUDGETS_SELECTOR_H

#include "common/status.h"
#include "kube/kube.h"

#include <stdbool.h>
#include <stddef.h>

struct ng_arena;
struct ng_intern;

/**
 * Parses the string form of a label selector in @buf (@len bytes, no NUL needed: "a=b,c!=d,e in
 * (x,y),f notin (z),g,!h,n>3") exactly as Kubernetes does for `kubectl -l` and
 * `labelSelector=`: the same tokens (whitespace is space, tab, CR and LF), "in" and "notin" as
 * keys and values wherever an operator is not expected, empty entries of a value set as the
 * value "", keys and values checked as the API server checks label keys and values (the value
 * of > and < also as a decimal int64). "" and whitespace alone are the empty selector, which
 * matches everything. Beyond Kubernetes: a NUL byte is refused, and so is a selector over the
 * limits below. Strings are interned into @pool (writer side); arrays, and the parser's state,
 * come from @arena. Writes @ret_sel only on success; on failure @reterr (may be NULL) gets the
 * byte offset and a message, and @pool and @arena may have grown. NG_EPARSE, NG_ELIMIT (over
 * NG_MAX_SELECTOR_TERMS, NG_MAX_SELECTOR_VALUES or NG_MAX_SELECTOR_STRING_BYTES, or the pool's
 * limit), NG_ENOMEM.
 */
NG_NODISCARD ng_status bud_selector_parse(const char *buf, size_t len, struct ng_intern *pool,
					  struct ng_arena *arena, struct kube_selector *ret_sel,
					  struct ng_err *reterr);

/** True when one requirement holds for @labels (sorted by key). @pool resolves Gt/Lt values. */
bool bud_requirement_matches(const struct kube_requirement *r, const struct kube_label *labels,
			     size_t n, const struct ng_intern *pool);

/**
 * True when @sel matches @labels: a null selector matches nothing, `{}` everything, otherwise
 * every requirement must hold (In/= need the key; NotIn/!= hold when the key is absent).
 */
bool bud_selector_matches(const struct kube_selector *sel, const struct kube_label *labels,
			  size_t n, const struct ng_intern *pool);

/**
 * True when @node satisfies the node selector: some valid, non-empty term whose expressions
 * (on labels) and fields (metadata.name) all hold. No terms, or only empty/invalid ones: false.
 */
bool bud_node_selector_matches(const struct kube_node_selector *sel, const struct kube_node *node,
			       const struct ng_intern *pool);

/**
 * Writes @sel in string form into @out (caller storage, at most @cap bytes incl. NUL; cut short
 * when it does not fit), for messages. Returns the length that was needed, without the NUL, as
 * snprintf does. With @cap 0, @out is not touched and may be NULL.
 */
size_t bud_selector_format(const struct kube_selector *sel, const struct ng_intern *pool, char *out,
			   size_t cap);

#endif
