/* How serve and drain wire what they run: each subcommand has one table of rows, one per
 * controller (and its listener), in start order. cmd_wiring_start() walks it, skipping the rows
 * not enabled by the configuration; a row that fails has reported why itself, is stopped (its
 * stop undoes a partial start) and so is every row started before it, in reverse.
 * cmd_wiring_stop() stops the started rows in reverse. cmd_wiring_render() appends every row's
 * /metrics series, enabled or not (a renderer is given the handle it may find NULL).
 *
 * Ownership: the table and the context (the subcommand's state) are borrowed; struct
 * cmd_wiring is the caller's and holds only which rows started.
 * Threads: start and stop on the main thread; render from the server's threads, which start
 * after the handles they read are set and stop before those are cleared. */
#ifndef NG_CMD_CONTROLLERS_H
#define NG_CMD_CONTROLLERS_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_buf;

/* A table has at most this many rows. */
#define CMD_WIRING_MAX 32

struct cmd_controller {
	const char *name;                 /* what the row runs, for readers of the table */
	bool (*enabled)(const void *ctx); /* NULL: always */
	int (*start)(void *ctx);          /* 0, or -1 after printing or logging why */
	void (*stop)(void *ctx);          /* NULL-safe: also runs after a failed start */
	/* NULL: no series. @objects as srv_config's metrics_extra. */
	ng_status (*render)(struct ng_buf *out, bool objects, const void *ctx);
};

struct cmd_wiring {
	const struct cmd_controller *rows;
	size_t n; /* at most CMD_WIRING_MAX */
	void *ctx;
	uint32_t started; /* bit i: rows[i] started and not yet stopped */
};

/* Starts the enabled rows in order. 0, or -1 with everything it started stopped again. */
int cmd_wiring_start(struct cmd_wiring *w);

/* Stops the started rows in reverse order. Safe to call again. */
void cmd_wiring_stop(struct cmd_wiring *w);

/* Every row's series, in the order given by @order (@norder row indexes), or in row order
 * when @order is NULL. The first error stops the walk. */
NG_NODISCARD ng_status cmd_wiring_render(const struct cmd_wiring *w, const uint8_t *order,
					 size_t norder, struct ng_buf *out, bool objects);

#endif
