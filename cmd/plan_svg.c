/* The picture of a plan: SVG, or an HTML page holding it (cmd/plan_svg.h). */
#include "cmd/plan_svg.h"

#include "cmd/out.h"

#include "common/buf.h"
#include "common/intern.h"
#include "kube/kube.h"
#include "policy/plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Geometry, in px: a 1,200 px wide page, names in the left column, the timeline right of it. */
#define PAGE_W 1200
#define CHART_X 190
#define CHART_W 990
#define ROW_H 12
#define BAR_H 9
#define LANE_H 16
/* A name shown in the left column is cut to this many bytes (the whole name is in the row's
 * title): 30 characters of 11 px text fill the column. */
#define LABEL_BYTES 30
/* Ticks on the time axis: at most this many, at the smallest step of steps_ms[] that fits. */
#define MAX_TICKS 10
/* A reason shown in a line of text is cut here (its whole text is in the line's title). */
#define REASON_BYTES 150
/* Names of nodes a truncated plan did not reach that the picture shows. */
#define UNPLANNED_SHOWN 20

/* The document being written: errors are sticky, as in common/jw.h. */
struct out {
	struct ng_buf *b;
	ng_status st;
	const struct ng_intern *pool;
	const struct pol_plan_input *in;
	const struct pol_plan *p;
	int64_t span_ms; /* the time the chart spans, > 0 */
	int y;           /* the next free row's top */
};

static void put(struct out *o, const char *fmt, ...) NG_PRINTF(2, 3);
static void put(struct out *o, const char *fmt, ...)
{
	if (o->st != NG_OK)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		o->st = NG_ELIMIT; /* every format here is short: a bug, not input */
	else
		o->st = ng_buf_append(o->b, line, (size_t)n);
}

/* @s escaped, at most @max bytes of it (0: all), cut on a character boundary with "…". */
static void esc(struct out *o, const char *s, size_t max)
{
	size_t len = strlen(s);
	bool cut = max && len > max;
	if (cut) {
		len = max;
		while (len && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
	}
	if (o->st == NG_OK)
		o->st = ng_buf_xml_str(o->b, s, len);
	if (cut)
		put(o, "\xe2\x80\xa6");
}

/* @wall_ms as strftime(@fmt) in UTC into @out. */
static void clock_str(char *out, size_t cap, const char *fmt, int64_t wall_ms)
{
	time_t t = (time_t)(wall_ms / 1000);
	struct tm tm;
	out[0] = '\0';
	if (!gmtime_r(&t, &tm) || !strftime(out, cap, fmt, &tm))
		out[0] = '\0';
}

/* The x of simulated time @wall_ms. */
static int x_of(const struct out *o, int64_t wall_ms)
{
	int64_t d = wall_ms - o->in->start_wall_ms;
	if (d < 0)
		d = 0;
	if (d > o->span_ms)
		d = o->span_ms;
	return CHART_X + (int)(d * CHART_W / o->span_ms);
}

/* A budget as the text plan names it: "NodeDisruptionBudget name" or "Kind ns/name". */
static void budget_name(struct out *o, enum kube_resource kind, uint32_t ns, uint32_t name)
{
	if (ns == NG_INTERN_NONE) {
		put(o, "NodeDisruptionBudget ");
	} else {
		put(o, "%s ",
		    kind == KUBE_RES_ADBS ? "ApplicationDisruptionBudget" : "PodDisruptionBudget");
		esc(o, ng_intern_str(o->pool, ns, NULL), 0);
		put(o, "/");
	}
	esc(o, ng_intern_str(o->pool, name, NULL), 0);
}

static const char STYLE[] =
    "<style>text{font:11px sans-serif;fill:#222}.h{font-size:14px;font-weight:bold}"
    ".bar{fill:#2b6cb0}.alt{fill:#63a4e0}.never{fill:#c53030}.win{fill:#38a169}"
    ".shade{fill:#38a169;fill-opacity:.12}.tick{stroke:#ddd}.wait{stroke:#bbb;fill:none}"
    ".lim{fill:#744210}</style>\n";

/* The document's head: its size, style and the title lines. */
static void head(struct out *o, int height)
{
	char start[32], each[32], total[32], end[32];
	clock_str(start, sizeof(start), "%Y-%m-%dT%H:%M:%SZ", o->in->start_wall_ms);
	clock_str(end, sizeof(end), "%Y-%m-%dT%H:%M:%SZ", o->p->end_wall_ms);
	cmd_out_duration_str(each, sizeof(each), o->in->drain_ms);
	cmd_out_duration_str(total, sizeof(total), o->p->end_wall_ms - o->in->start_wall_ms);
	const struct pol_plan *p = o->p;
	size_t nodes = p->nplanned + p->nnever + p->nunplanned;
	put(o,
	    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	    "viewBox=\"0 0 %d %d\" class=\"plan\">\n",
	    PAGE_W, height, PAGE_W, height);
	put(o, "%s", STYLE);
	put(o,
	    "<text class=\"h\" x=\"4\" y=\"18\">Plan for %zu nodes from %s, each held %s: %zu "
	    "wave%s, %zu of %zu nodes, %s, ending %s%s</text>\n",
	    nodes, start, each, p->nwaves, p->nwaves == 1 ? "" : "s", p->nplanned, nodes, total,
	    end, p->truncated ? " (truncated)" : "");
	put(o, "<text x=\"4\" y=\"34\">Type ");
	esc(o, o->in->type ? o->in->type : "", 0);
	put(o, ", requestor ");
	esc(o, o->in->requestor ? o->in->requestor : "", 0);
	put(o, ". Assumes health hooks answer healthy and the alert gate lets grants through; "
	       "Pending requests already in the cluster are not simulated.</text>\n");
}

/* A lane per budget with windows: its name and its open spans. The rows' shading follows
 * with shade(). */
static void lanes(struct out *o, const struct pol_plan_windows *w, size_t nw, size_t more)
{
	for (size_t i = 0; i < nw; i++, o->y += LANE_H) {
		put(o, "<g class=\"lane\"><title>Maintenance windows of ");
		budget_name(o, w[i].kind, w[i].ns, w[i].name);
		put(o, "%s</title><text x=\"4\" y=\"%d\">",
		    w[i].outside_use_default ? " (outside them: its own limits)"
					     : " (outside them: no disruption)",
		    o->y + 11);
		esc(o, ng_intern_str(o->pool, w[i].name, NULL), LABEL_BYTES - 8);
		put(o, " windows</text>");
		for (size_t k = 0; k < w[i].nspans; k++) {
			int x0 = x_of(o, w[i].spans[k].from_wall_ms);
			int x1 = x_of(o, w[i].spans[k].to_wall_ms);
			put(o, "<rect class=\"win\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>",
			    x0, o->y + 2, x1 > x0 ? x1 - x0 : 1, LANE_H - 4);
		}
		if (w[i].more_spans)
			put(o, "<text x=\"%d\" y=\"%d\">\xe2\x80\xa6</text>", CHART_X + CHART_W + 4,
			    o->y + 11);
		put(o, "</g>\n");
	}
	if (more) {
		put(o, "<text x=\"4\" y=\"%d\">and %zu more budgets with windows</text>\n",
		    o->y + 11, more);
		o->y += LANE_H;
	}
}

/* The windows' spans shaded over the rows from @top to @bottom. */
static void shade(struct out *o, const struct pol_plan_windows *w, size_t nw, int top, int bottom)
{
	for (size_t i = 0; i < nw; i++)
		for (size_t k = 0; k < w[i].nspans; k++) {
			int x0 = x_of(o, w[i].spans[k].from_wall_ms);
			int x1 = x_of(o, w[i].spans[k].to_wall_ms);
			put(o,
			    "<rect class=\"shade\" x=\"%d\" y=\"%d\" width=\"%d\" "
			    "height=\"%d\"/>\n",
			    x0, top, x1 > x0 ? x1 - x0 : 1, bottom - top);
		}
}

/* The time axis at o->y, with tick lines down to @bottom. */
static void axis(struct out *o, int bottom)
{
	static const int64_t steps_ms[] = {
	    1000,      5000,       10000,      30000,      60000,      300000,   600000,
	    1800000,   3600000,    10800000,   21600000,   43200000,   86400000, 172800000,
	    604800000, 1209600000, 2592000000, 7776000000, 31536000000};
	size_t k = 0;
	while (k + 1 < sizeof(steps_ms) / sizeof(steps_ms[0]) &&
	       o->span_ms / steps_ms[k] > MAX_TICKS)
		k++;
	const char *fmt = o->span_ms > 86400000 ? "%m-%d %H:%M" : "%H:%M:%S";
	put(o, "<g class=\"axis\">");
	for (int64_t t = 0; t <= o->span_ms; t += steps_ms[k]) {
		int x = x_of(o, o->in->start_wall_ms + t);
		char off[32], at[32];
		cmd_out_duration_str(off, sizeof(off), t);
		clock_str(at, sizeof(at), fmt, o->in->start_wall_ms + t);
		/* Labels near the right edge end at their tick instead of starting there. */
		bool end = x > CHART_X + CHART_W - 80;
		int tx = end ? x - 2 : x + 2;
		const char *anchor = end ? " text-anchor=\"end\"" : "";
		put(o,
		    "<line class=\"tick\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/><text x=\"%d\" "
		    "y=\"%d\"%s>+%s</text><text x=\"%d\" y=\"%d\"%s>%s</text>\n",
		    x, o->y + 24, x, bottom, tx, o->y + 10, anchor, off, tx, o->y + 22, anchor, at);
	}
	put(o, "<text x=\"4\" y=\"%d\">time after the start (UTC)</text></g>\n", o->y + 16);
	o->y += 28;
}

/* The row of node @name of wave @n (from 1) @w: its name, its wait and its bar. */
static void node_row(struct out *o, const char *name, size_t n, const struct pol_plan_wave *w)
{
	char at[32], held[32];
	cmd_out_duration_str(at, sizeof(at), w->start_wall_ms - o->in->start_wall_ms);
	cmd_out_duration_str(held, sizeof(held), o->in->drain_ms);
	int x0 = x_of(o, w->start_wall_ms), x1 = x_of(o, w->start_wall_ms + o->in->drain_ms);
	put(o, "<g class=\"row\"><title>");
	esc(o, name, 0);
	put(o, ": wave %zu, granted at +%s, held %s</title><text x=\"4\" y=\"%d\">", n, at, held,
	    o->y + 10);
	esc(o, name, LABEL_BYTES);
	if (x0 > CHART_X)
		put(o, "</text><path class=\"wait\" d=\"M%d %dH%d\"/>", CHART_X, o->y + 6, x0);
	else
		put(o, "</text>");
	put(o, "<rect class=\"bar%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/></g>\n",
	    n % 2 ? "" : " alt", x0, o->y + 1, x1 > x0 + 2 ? x1 - x0 : 2, BAR_H);
	o->y += ROW_H;
}

/* The row of wave @n (from 1) @w, naming its nodes on hover. */
static void wave_row(struct out *o, size_t n, const struct pol_plan_wave *w)
{
	char at[32];
	cmd_out_duration_str(at, sizeof(at), w->start_wall_ms - o->in->start_wall_ms);
	int x0 = x_of(o, w->start_wall_ms), x1 = x_of(o, w->start_wall_ms + o->in->drain_ms);
	put(o, "<g class=\"row\"><title>wave %zu at +%s, %zu node%s:", n, at, w->nnodes,
	    w->nnodes == 1 ? "" : "s");
	for (size_t k = 0; k < w->nnodes; k++) {
		put(o, " ");
		esc(o, ng_intern_str(o->pool, w->nodes[k], NULL), 0);
	}
	if (w->nnodes == 1) { /* one node at a time: name it */
		put(o, "</title><text x=\"4\" y=\"%d\">wave %zu: ", o->y + 10, n);
		esc(o, ng_intern_str(o->pool, w->nodes[0], NULL), LABEL_BYTES - 12);
		put(o, "</text>");
	} else {
		put(o, "</title><text x=\"4\" y=\"%d\">wave %zu (%zu nodes)</text>", o->y + 10, n,
		    w->nnodes);
	}
	if (x0 > CHART_X)
		put(o, "<path class=\"wait\" d=\"M%d %dH%d\"/>", CHART_X, o->y + 6, x0);
	put(o, "<rect class=\"bar%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/></g>\n",
	    n % 2 ? "" : " alt", x0, o->y + 1, x1 > x0 + 2 ? x1 - x0 : 2, BAR_H);
	o->y += ROW_H;
}

/* A row per node never granted: its name and the gate's reason where its bar would be. */
static void never_rows(struct out *o)
{
	for (size_t i = 0; i < o->p->nnever; i++, o->y += ROW_H) {
		const struct pol_plan_never *nv = &o->p->never[i];
		put(o, "<g class=\"row never\"><title>");
		esc(o, nv->name, 0);
		put(o, ": never granted: %s", nv->rejected ? "rejected: " : "");
		esc(o, nv->reason, 0);
		put(o, "</title><text x=\"4\" y=\"%d\">", o->y + 10);
		esc(o, nv->name, LABEL_BYTES);
		put(o, "</text><text class=\"never\" x=\"%d\" y=\"%d\">never granted: %s", CHART_X,
		    o->y + 10, nv->rejected ? "rejected: " : "");
		esc(o, nv->reason, REASON_BYTES);
		put(o, "</text></g>\n");
	}
}

/* Whether waves @a and @b were held back by the same limits, in the same order. */
static bool same_limits(const struct pol_plan_wave *a, const struct pol_plan_wave *b)
{
	if (a->nlimits != b->nlimits || !!a->waiting != !!b->waiting)
		return false;
	for (size_t k = 0; k < a->nlimits; k++) {
		const struct pol_plan_limit *x = &a->limits[k], *y = &b->limits[k];
		if (x->budget != y->budget || x->kind != y->kind || x->ns != y->ns ||
		    x->name != y->name)
			return false;
	}
	return true;
}

/* One line for waves @from to @to (indexes) that the same limits held back. */
static void limits_line(struct out *o, size_t from, size_t to)
{
	const struct pol_plan_wave *w = &o->p->waves[from];
	put(o, "<g class=\"held\"><title>");
	for (size_t k = 0; k < w->nlimits; k++) {
		put(o, "%s", k ? "\n" : "");
		esc(o, w->limits[k].reason, 0);
	}
	if (from == to)
		put(o, "</title><text x=\"4\" y=\"%d\">wave %zu: ", o->y + 10, from + 1);
	else
		put(o, "</title><text x=\"4\" y=\"%d\">waves %zu\xe2\x80\x93%zu: ", o->y + 10,
		    from + 1, to + 1);
	if (!w->nlimits)
		put(o, "%s", w->waiting ? "others waited" : "nothing waited");
	else
		put(o, "others held back by ");
	for (size_t k = 0; k < w->nlimits; k++) {
		const struct pol_plan_limit *l = &w->limits[k];
		put(o, "<tspan class=\"lim\">%s", k ? ", " : "");
		if (l->budget)
			budget_name(o, l->kind, l->ns, l->name);
		else
			put(o, "another rule");
		put(o, "</tspan>");
		if (from == to) /* a run of waves: the counts differ from wave to wave */
			put(o, " (%zu)", l->waiting);
	}
	if (w->more_limits)
		put(o, " and %zu more budgets", w->more_limits);
	put(o, "</text></g>\n");
	o->y += ROW_H + 2;
}

/* What held each wave back: a line per run of waves held back by the same limits. */
static void held_lines(struct out *o)
{
	const struct pol_plan *p = o->p;
	if (!p->nwaves)
		return;
	put(o, "<text class=\"h\" x=\"4\" y=\"%d\">What held each wave back</text>\n", o->y + 12);
	o->y += ROW_H + 8;
	size_t from = 0;
	for (size_t i = 1; i <= p->nwaves; i++)
		if (i == p->nwaves || !same_limits(&p->waves[from], &p->waves[i])) {
			limits_line(o, from, i - 1);
			from = i;
		}
}

/* The nodes a truncated plan did not reach, the first few named. */
static void unplanned_line(struct out *o)
{
	const struct pol_plan *p = o->p;
	if (!p->truncated)
		return;
	put(o, "<text x=\"4\" y=\"%d\">not planned (%zu), the plan stopped at its limit of %s:",
	    o->y + 10, p->nunplanned, pol_plan_stop_str(p->stopped));
	for (size_t i = 0; i < p->nunplanned && i < UNPLANNED_SHOWN; i++) {
		put(o, " ");
		esc(o, p->unplanned[i], LABEL_BYTES);
	}
	put(o, "%s</text>\n", p->nunplanned > UNPLANNED_SHOWN ? " \xe2\x80\xa6" : "");
	o->y += ROW_H + 2;
}

/* Rows of the chart: planned nodes (or waves), then the nodes never granted. */
static size_t chart_rows(const struct pol_plan *p)
{
	return (p->nplanned > CMD_PLAN_SVG_NODE_ROWS ? p->nwaves : p->nplanned) + p->nnever;
}

/* The height of the held-back lines held_lines() writes. */
static int held_height(const struct pol_plan *p)
{
	if (!p->nwaves)
		return 0;
	int h = ROW_H + 8;
	for (size_t i = 1; i <= p->nwaves; i++)
		if (i == p->nwaves || !same_limits(&p->waves[i - 1], &p->waves[i]))
			h += ROW_H + 2;
	return h;
}

/* The SVG document. */
static void svg(struct out *o, const struct pol_plan_windows *w, size_t nw, size_t more)
{
	const struct pol_plan *p = o->p;
	int rows_top = 44 + (int)(nw + (more ? 1 : 0)) * LANE_H + 28;
	int rows_bottom = rows_top + (int)chart_rows(p) * ROW_H;
	int height = rows_bottom + 8 + held_height(p) + (p->truncated ? ROW_H + 2 : 0) + 8;
	head(o, height);
	o->y = 44;
	lanes(o, w, nw, more);
	shade(o, w, nw, o->y + 24, rows_bottom);
	axis(o, rows_bottom);
	for (size_t i = 0; i < p->nwaves; i++) {
		const struct pol_plan_wave *wv = &p->waves[i];
		if (p->nplanned > CMD_PLAN_SVG_NODE_ROWS)
			wave_row(o, i + 1, wv);
		else
			for (size_t k = 0; k < wv->nnodes; k++)
				node_row(o, ng_intern_str(o->pool, wv->nodes[k], NULL), i + 1, wv);
	}
	never_rows(o);
	o->y += 8;
	held_lines(o);
	unplanned_line(o);
	put(o, "</svg>\n");
}

/* The page's script: a row's title shown below the picture on hover, and any script error
 * written into the page (a test reads both). The picture reads the same without it. */
static const char SCRIPT[] =
    "<script>\n"
    "window.onerror=function(m){document.body.setAttribute('data-errors',String(m));};\n"
    "document.addEventListener('mouseover',function(e){\n"
    " var g=e.target.closest&&e.target.closest('g.row,g.held,g.lane');\n"
    " var t=g&&g.querySelector('title');\n"
    " if(t)document.getElementById('info').textContent=t.textContent;\n"
    "});\n"
    "document.body.setAttribute('data-ready','1');\n"
    "</script>\n";

ng_status cmd_plan_svg(const struct kube_snapshot *s, const struct pol_plan_input *in,
		       const struct pol_plan *p, bool html, struct ng_arena *arena,
		       struct ng_buf *b)
{
	struct pol_plan_windows *w = NULL;
	size_t nw = 0, more = 0;
	ng_status st = pol_plan_windows(s, in, p, arena, &w, &nw, &more);
	if (st != NG_OK)
		return st;
	struct out o = {.b = b, .pool = kube_snapshot_pool(s), .in = in, .p = p};
	o.span_ms = p->end_wall_ms - in->start_wall_ms;
	if (o.span_ms < in->drain_ms)
		o.span_ms = in->drain_ms > 0 ? in->drain_ms : 1;
	if (html) {
		put(&o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
			"<title>nodegate plan</title><style>body{margin:8px;font:13px sans-serif}"
			"#info{min-height:2em;white-space:pre-wrap}</style></head><body>\n"
			"<p id=\"info\">Point at a row for its details.</p>\n");
	}
	svg(&o, w, nw, more);
	if (html)
		put(&o, "%s</body></html>\n", SCRIPT);
	return o.st;
}
