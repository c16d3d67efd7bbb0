/* The walk over a subcommand's controller table (cmd/controllers.h). */
#include "cmd/controllers.h"

#include <assert.h>

int cmd_wiring_start(struct cmd_wiring *w)
{
	assert(w->n <= CMD_WIRING_MAX);
	for (size_t i = 0; i < w->n; i++) {
		const struct cmd_controller *r = &w->rows[i];
		if (r->enabled && !r->enabled(w->ctx))
			continue;
		w->started |= UINT32_C(1) << i;
		if (r->start(w->ctx) != 0) {
			cmd_wiring_stop(w);
			return -1;
		}
	}
	return 0;
}

void cmd_wiring_stop(struct cmd_wiring *w)
{
	for (size_t i = w->n; i-- > 0;) {
		if (!(w->started & (UINT32_C(1) << i)))
			continue;
		w->started &= ~(UINT32_C(1) << i);
		if (w->rows[i].stop)
			w->rows[i].stop(w->ctx);
	}
}

ng_status cmd_wiring_render(const struct cmd_wiring *w, const uint8_t *order, size_t norder,
			    struct ng_buf *out, bool objects)
{
	size_t n = order ? norder : w->n;
	ng_status st = NG_OK;
	for (size_t k = 0; k < n && st == NG_OK; k++) {
		size_t i = order ? order[k] : k;
		if (i < w->n && w->rows[i].render)
			st = w->rows[i].render(out, objects, w->ctx);
	}
	return st;
}
