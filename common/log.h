/* Structured logging: one JSON object per line on stderr, written with a single write(2)
 * (STYLE.md B10). The level is checked before anything is formatted. Any thread. */
#ifndef NG_COMMON_LOG_H
#define NG_COMMON_LOG_H

#include "common/limits.h"
#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ng_log_level {
	NG_LOG_DEBUG = 0,
	NG_LOG_INFO = 1,
	NG_LOG_WARN = 2,
	NG_LOG_ERROR = 3,
};

struct ng_logline {
	char buf[NG_LOG_LINE_BYTES];
	size_t len;
	bool trunc;
};

/** Sets the minimum level that is written (atomic; any thread). */
void ng_log_set_level(enum ng_log_level level);
/** Current minimum level. */
enum ng_log_level ng_log_get_level(void);
/** Parses "debug", "info", "warn" or "error": NG_OK and writes @ret, or NG_EPARSE. */
NG_NODISCARD ng_status ng_log_parse_level(const char *s, enum ng_log_level *ret);
/** Redirects output to @fd (default 2). For tests. */
void ng_log_set_fd(int fd);

/**
 * Starts a line when @level is enabled and returns true; otherwise returns false and nothing
 * else must be called. @component and @msg are constant strings (variable data goes in fields).
 */
bool ng_log_begin(struct ng_logline *l, enum ng_log_level level, const char *component,
		  const char *msg);
/** Adds a string field (escaped; NULL is written as null). */
void ng_log_str(struct ng_logline *l, const char *key, const char *val);
/** Adds a string field of @len bytes. */
void ng_log_strn(struct ng_logline *l, const char *key, const char *val, size_t len);
void ng_log_i64(struct ng_logline *l, const char *key, int64_t val);
void ng_log_bool(struct ng_logline *l, const char *key, bool val);
/** Closes the object, adds "trunc":true when a field did not fit, and writes the line. */
void ng_log_end(struct ng_logline *l);

#endif
