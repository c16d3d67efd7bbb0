/* How the CLI prints: the output format every subcommand with output takes (-o text|json|yaml),
 * colour only on a terminal, and times and durations as people read them.
 *
 * Ownership: a struct cmd_out is the caller's, filled by cmd_out_parse(); the strings its
 * functions return are static. Threads: the main thread. Errors: cmd_out_parse() says on stderr
 * what is wrong; cmd_out_print() returns ng_status with @err. */
#ifndef NG_CMD_OUT_H
#define NG_CMD_OUT_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cmd_out_format {
	CMD_OUT_TEXT,
	CMD_OUT_JSON,
	CMD_OUT_YAML,
};

struct cmd_out {
	enum cmd_out_format format;
	bool colour; /* text to a terminal, NO_COLOR unset, TERM not dumb */
	bool tty;
};

/**
 * --output @value (NULL: text when @f is a terminal, json otherwise) into @ret. 0, or -1 after
 * printing "@prefix: --output "x": expected text, json or yaml" to stderr.
 */
int cmd_out_parse(const char *prefix, const char *value, FILE *f, struct cmd_out *ret);

/** Prints the JSON document @json (@len bytes) to @f as @o's format asks: JSON or YAML. */
NG_NODISCARD ng_status cmd_out_print(FILE *f, const struct cmd_out *o, const char *json, size_t len,
				     struct ng_err *err);

/* ANSI colours when @o->colour, else "". */
const char *cmd_out_bold(const struct cmd_out *o);
const char *cmd_out_good(const struct cmd_out *o);
const char *cmd_out_bad(const struct cmd_out *o);
const char *cmd_out_end(const struct cmd_out *o);

/** Before a redraw: clears a terminal, or separates two prints with a blank line. */
void cmd_out_clear(FILE *f, const struct cmd_out *o);

/** @wall_ms as RFC 3339 in UTC, to the second: "2026-11-22T00:00:00Z". */
void cmd_out_time(FILE *f, int64_t wall_ms);

/** @ms as "45s", "3m05s" or "2h03m05s" (negative: "0s"). */
void cmd_out_duration(FILE *f, int64_t ms);

/** As cmd_out_duration(), into @out (@cap bytes, NUL-terminated, cut short if need be). */
void cmd_out_duration_str(char *out, size_t cap, int64_t ms);

#endif
