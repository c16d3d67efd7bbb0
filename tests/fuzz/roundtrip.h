/* Decoded records written back as the Kubernetes objects they came from, and records compared:
 * the "decode, encode, decode" invariant of the fuzz targets (STYLE.md B12 "Fuzz").
 *
 * An encoder writes each field a record holds in the form the decoder reads, so decoding what
 * it wrote must give an equal record. Parts a record holds in a form that cannot be written back
 * (an invalid selector, a health hook that cannot be called, NodeDisruption fields with a
 * problem) are left out and named in a mask of enum ng_fuzz_skip, which the comparison then
 * ignores. Intern ids are compared by their strings, since every decode has a pool of its own.
 * A comparison that fails names the first field that differs on stderr.
 *
 * Ownership: everything is borrowed for the call. Threads: one fuzz input at a time. */
#ifndef NG_TESTS_FUZZ_ROUNDTRIP_H
#define NG_TESTS_FUZZ_ROUNDTRIP_H

#include "common/status.h"
#include "kube/records.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct kube_one;
struct ng_buf;
struct ng_intern;
struct ng_jw;

/* Parts of a record an encoder left out (see above). */
enum ng_fuzz_skip {
	NG_FUZZ_SKIP_SELECTOR = 1u << 0, /* a NodeDisruption's invalid spec.nodeSelector */
	NG_FUZZ_SKIP_DETAIL = 1u << 1,   /* its drain, operation, startDate, duration, requestors */
	NG_FUZZ_SKIP_HOOK = 1u << 2,     /* an ADB's health hook with an error */
};

/** Aborts the fuzz target (libFuzzer keeps the input): an invariant did not hold. */
_Noreturn void ng_fuzz_fail(void);

/** Aborts the fuzz target unless @ok. A macro over a _Noreturn call, so that the static
 * analyzers know nothing after a failed check runs (a pointer checked non-NULL stays so). */
#define ng_fuzz_check(ok) ((ok) ? (void)0 : ng_fuzz_fail())

/**
 * True when @msg is a message a person can read: not empty, starting with printable ASCII, and,
 * when the input it is about (@input, @len bytes) holds neither a control byte nor a backslash
 * (so no decoded string can hold a control character), without a control character either.
 */
bool ng_fuzz_message_ok(const char *msg, const uint8_t *input, size_t len);

/** The instant a time of @ms reads back as once written with ng_jw_time_ms(). */
int64_t ng_fuzz_time_written(int64_t ms);

/**
 * Decodes @root as @res twice (@data, @size: the fuzz input, for ng_fuzz_message_ok()): both
 * decodes must give the same status and, on a refusal, the same readable message. NG_OK with
 * the two records in *@ret_a and *@ret_b (the caller compares and frees them), or the refusal's
 * status with its message in @err and nothing to free.
 */
ng_status ng_fuzz_decode_twice(enum kube_resource res, const struct cJSON *root,
			       const uint8_t *data, size_t size, struct kube_one **ret_a,
			       struct kube_one **ret_b, struct ng_err *err);

struct kube_snapshot;
/** A snapshot of the @n JSON objects @items (a target's fixed cluster), or the target aborts.
 * The caller keeps it for the process's life. */
struct kube_snapshot *ng_fuzz_snapshot(const char *const *items, size_t n);

/** Decodes @out, an object an encoder wrote, as the next step of the invariant: it must decode,
 * as a @res object, or the target aborts with the reason and the object on stderr. The caller
 * compares the record returned and frees it. */
struct kube_one *ng_fuzz_reparse(const struct ng_buf *out, enum kube_resource res);

/** Aborts with @out on stderr: written back, a record did not decode to an equal one. */
_Noreturn void ng_fuzz_differs(const struct ng_buf *out);

/* ---- encoders: each writes one whole object to @out, NG_OK or the buffer's error ---- */

NG_NODISCARD ng_status ng_fuzz_encode_nd(const struct kube_nd *nd, const struct ng_intern *pool,
					 unsigned skip, struct ng_buf *out);
NG_NODISCARD ng_status ng_fuzz_encode_adb(const struct kube_adb *adb, const struct ng_intern *pool,
					  unsigned skip, struct ng_buf *out);
NG_NODISCARD ng_status ng_fuzz_encode_ndb(const struct kube_ndb *ndb, const struct ng_intern *pool,
					  struct ng_buf *out);
NG_NODISCARD ng_status ng_fuzz_encode_ngc(const struct kube_ngc *ngc, const struct ng_intern *pool,
					  struct ng_buf *out);
NG_NODISCARD ng_status ng_fuzz_encode_pv(const struct kube_pv *pv, const struct ng_intern *pool,
					 struct ng_buf *out);

/** A metav1.LabelSelector (requirements as matchExpressions, in order); null when not present. */
void ng_fuzz_write_selector(struct ng_jw *w, const struct kube_selector *sel,
			    const struct ng_intern *pool);

/* ---- comparisons: true when equal but for the parts in @skip ---- */

bool ng_fuzz_same_nd(const struct kube_nd *a, const struct ng_intern *pa, const struct kube_nd *b,
		     const struct ng_intern *pb, unsigned skip);
bool ng_fuzz_same_adb(const struct kube_adb *a, const struct ng_intern *pa,
		      const struct kube_adb *b, const struct ng_intern *pb, unsigned skip);
bool ng_fuzz_same_ndb(const struct kube_ndb *a, const struct ng_intern *pa,
		      const struct kube_ndb *b, const struct ng_intern *pb);
bool ng_fuzz_same_ngc(const struct kube_ngc *a, const struct ng_intern *pa,
		      const struct kube_ngc *b, const struct ng_intern *pb);
bool ng_fuzz_same_pv(const struct kube_pv *a, const struct ng_intern *pa, const struct kube_pv *b,
		     const struct ng_intern *pb);
/** Same requirements in the same order; values compared as written (order and repeats). */
bool ng_fuzz_same_selector(const struct kube_selector *a, const struct ng_intern *pa,
			   const struct kube_selector *b, const struct ng_intern *pb);

#endif
