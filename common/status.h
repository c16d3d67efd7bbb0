/* Status codes shared by every module, and the optional error detail. */
#ifndef NG_COMMON_STATUS_H
#define NG_COMMON_STATUS_H

#include <stddef.h>

typedef enum ng_status {
	NG_OK = 0,
	NG_ENOMEM,     /* allocation failed or an arena cap was reached */
	NG_EINVAL,     /* caller bug: an argument the API does not accept */
	NG_EPARSE,     /* malformed input */
	NG_ELIMIT,     /* well-formed input over a configured limit */
	NG_ENOTFOUND,  /* a named thing does not exist */
	NG_EIO,        /* an operating-system call failed */
	NG_ETIMEDOUT,  /* an external call ran out of time */
	NG_EKUBE,      /* API server answered non-2xx (detail in ng_err) */
	NG_ESTALE,     /* watch 410 Gone: relist */
	NG_EFORBIDDEN, /* allowed in form, but not to this user or under this policy */
} ng_status;

/* Optional detail for a failure: where in the input and a message a person can act on.
 *
 * 256 bytes: admission refusals carry this message, naming the field and quoting the offending
 * value — a health hook's host (up to 100 bytes: "spec.healthHook: hook not allowed: host ...
 * matches no NodeGateConfig healthHooks.allowedHosts (a * ...)" is up to 224), a drain filter's
 * regex (80) with PCRE2's explanation and the offset. 160 cut those short; 256 holds them and still
 * fits the 256-byte buffers log lines copy it into. */
struct ng_err {
	ng_status status;
	size_t offset;
	char msg[256];
};

#define NG_NODISCARD __attribute__((warn_unused_result))
#define NG_PRINTF(a, b) __attribute__((format(printf, a, b)))

/** Returns a constant, lower-case name for @st ("ok", "parse error", ...). Never NULL. */
const char *ng_status_str(ng_status st);

/**
 * strerror() for any thread: POSIX does not promise that strerror() is thread-safe, and
 * nodegate's threads report system errors concurrently. Returns @errnum's message in a
 * buffer of the calling thread, valid until that thread's next call. Never NULL.
 */
const char *ng_strerror(int errnum);

/**
 * Fills @err (may be NULL) with @st, @offset and a formatted message, truncating the message to
 * fit. Returns @st so callers can write `return ng_err_set(err, NG_EPARSE, off, "...")`.
 */
ng_status ng_err_set(struct ng_err *err, ng_status st, size_t offset, const char *fmt, ...)
    NG_PRINTF(4, 5);

/* For clang's static analyzer only (clang-tidy defines __clang_analyzer__): it cannot see into
 * status.c, so it would take a failure path where ng_err_set() returned NG_OK and report the
 * reads that follow. This says what the function does: it returns @st. */
#if defined(__clang_analyzer__) && !defined(NG_COMMON_STATUS_C)
#define ng_err_set(err, st, ...) (ng_err_set((err), (st), __VA_ARGS__), (st))
#endif

#endif
