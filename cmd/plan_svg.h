/* A picture of a plan (docs/planner.md "The picture"): `nodegate plan -o svg` and `-o html`.
 * A timeline: a row per node (a row per wave above CMD_PLAN_SVG_NODE_ROWS planned nodes), a
 * bar from each grant to its release, the maintenance windows of the budgets that bear on the
 * plan shaded, a time axis, what held each wave back, and the nodes never granted. Every name
 * and reason is escaped; the document loads nothing from elsewhere. The HTML page holds the
 * same SVG and a little inline script that shows a row's details on hover; the SVG's own
 * titles say the same without it.
 *
 * Ownership: every pointer argument is borrowed for the call.
 * Threads: any thread; the plan's snapshot must be held by the caller.
 * Errors: NG_ELIMIT over the buffer's cap and NG_ENOMEM, from the buffer or @arena; the
 * buffer may then hold part of the document. */
#ifndef NG_CMD_PLAN_SVG_H
#define NG_CMD_PLAN_SVG_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_arena;
struct ng_buf;
struct kube_snapshot;
struct pol_plan;
struct pol_plan_input;

/* Planned nodes up to which the picture has a row per node; above, a row per wave (each
 * naming its nodes on hover). 500 rows of 12 px are a few screens to scroll; past that, rows
 * per node are a texture, not something a person reads. */
#define CMD_PLAN_SVG_NODE_ROWS 500

/**
 * Appends to @b the picture of @p (a plan of @s for @in): an SVG document, or with @html an
 * HTML page holding it. The windows come from pol_plan_windows() into @arena.
 */
NG_NODISCARD ng_status cmd_plan_svg(const struct kube_snapshot *s, const struct pol_plan_input *in,
				    const struct pol_plan *p, bool html, struct ng_arena *arena,
				    struct ng_buf *b);

#endif
