/* A small JSON writer over a capped ng_buf: commas, quoting and escaping are done here once, so
 * no caller concatenates JSON by hand. Errors are sticky: after the first failed append every
 * call is a no-op and ng_jw_finish() returns that error, so a body is written as a straight
 * sequence of calls with one check at the end.
 *
 * Threads: a writer is used by one thread. It borrows its buffer for its whole life. */
#ifndef NG_COMMON_JW_H
#define NG_COMMON_JW_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_buf;

/* Containers nest at most this deep: Kubernetes bodies nodegate writes nest about 6 deep. */
#define NG_JW_MAX_DEPTH 32

struct ng_jw {
	struct ng_buf *b;  /* borrowed */
	ng_status st;      /* first error, NG_OK so far */
	uint32_t depth;    /* open containers */
	uint64_t nonempty; /* bit d: the container at depth d already has a member */
	bool after_key;    /* a key was written: the value follows without a comma */
};

/** Starts writing at the end of @b (borrowed for the writer's life). */
void ng_jw_init(struct ng_jw *w, struct ng_buf *b);

/**
 * Resumes a document written in pieces (each piece into @b, which may differ): as ng_jw_init()
 * with @depth containers open, those whose bit is set in @nonempty (bit d: the container at
 * depth d + 1) holding a member already, so the next member starts with a comma. A piece that
 * leaves containers open reads its error from @w->st, not ng_jw_finish().
 */
void ng_jw_resume(struct ng_jw *w, struct ng_buf *b, uint32_t depth, uint64_t nonempty);

/** `{` / `}` and `[` / `]`. Nesting deeper than NG_JW_MAX_DEPTH fails with NG_ELIMIT. */
void ng_jw_obj(struct ng_jw *w);
void ng_jw_obj_end(struct ng_jw *w);
void ng_jw_arr(struct ng_jw *w);
void ng_jw_arr_end(struct ng_jw *w);

/** An object member's key (NUL-terminated, borrowed); the value call follows. */
void ng_jw_key(struct ng_jw *w, const char *key);

/** Values. Strings are escaped (invalid UTF-8 becomes U+FFFD); NULL writes null. */
void ng_jw_str(struct ng_jw *w, const char *s);
void ng_jw_strn(struct ng_jw *w, const char *s, size_t len);
void ng_jw_i64(struct ng_jw *w, int64_t v);
void ng_jw_bool(struct ng_jw *w, bool v);
void ng_jw_null(struct ng_jw *w);
/** A Kubernetes Time (RFC 3339 UTC, whole seconds) from @wall_ms since the epoch. */
void ng_jw_time(struct ng_jw *w, int64_t wall_ms);
/**
 * The same time with milliseconds ("…T05:00:00.250Z"), for the instants nodegate itself waits
 * for or times from (grantedAt, nextRetryDate, backoffUntil): whole seconds would end a wait up
 * to a second early once read back.
 */
void ng_jw_time_ms(struct ng_jw *w, int64_t wall_ms);
/** @len bytes at @data (borrowed) as a base64 string (a JSON patch in an AdmissionReview). */
void ng_jw_base64(struct ng_jw *w, const void *data, size_t len);
/**
 * Opens an object whose first members are those of @obj_json (@len bytes, borrowed, unchecked:
 * compact JSON of an object, "{}" included; anything not between braces is NG_EINVAL); the caller
 * adds members and closes it with ng_jw_obj_end(). For a canonical object nodegate extends (a
 * template's spec).
 */
void ng_jw_obj_extend(struct ng_jw *w, const char *obj_json, size_t len);
/** @json (borrowed) inserted as one value, unchecked: it must be valid JSON. */
void ng_jw_raw(struct ng_jw *w, const char *json, size_t len);

/**
 * For a value that another encoder appends to the writer's buffer itself (one that writes into
 * an ng_buf): writes the separator the value needs and returns the buffer, or NULL after an
 * earlier error (then skip the encoder). Hand its result to ng_jw_fail().
 */
struct ng_buf *ng_jw_value_buf(struct ng_jw *w);
/** Records @st as the writer's error unless one is recorded already; NG_OK records nothing. */
void ng_jw_fail(struct ng_jw *w, ng_status st);

/** Key and value in one call. */
void ng_jw_kstr(struct ng_jw *w, const char *key, const char *s);
void ng_jw_ki64(struct ng_jw *w, const char *key, int64_t v);
void ng_jw_kbool(struct ng_jw *w, const char *key, bool v);

/**
 * The first error (NG_ELIMIT over the buffer's cap, NG_ENOMEM), NG_EINVAL when containers are
 * still open, else NG_OK.
 */
NG_NODISCARD ng_status ng_jw_finish(struct ng_jw *w);

#endif
