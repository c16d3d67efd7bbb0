/* nodegate plan: the what-if planner (docs/planner.md) over snapshot files or a live cluster:
 * exit 0 when every chosen node gets a wave, 1 when some never would, 2 on an error, 3 when the
 * plan stopped at one of its limits (waves, --max-rounds, --max-decisions, --max-seconds). */
#include "cmd/cmd.h"
#include "cmd/live.h"
#include "cmd/out.h"
#include "cmd/plan_svg.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/intern.h"
#include "common/parse.h"
#include "common/yaml.h"
#include "kube/kube.h"
#include "policy/plan.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A --node-file: a name per line, POL_PLAN_MAX_NODES of them at most (a node name is at most
 * 253 bytes). */
#define NODE_FILE_MAX_BYTES ((size_t)POL_PLAN_MAX_NODES * 256)
/* A plan's own memory: node lists, reasons, a few hundred bytes per wave. */
#define PLAN_ARENA_BYTES (256u << 20)

/* The names in --node-file's @body: one per line; blank lines and lines starting with # are
 * skipped; surrounding spaces trimmed. Names point into @body, which is changed. */
static ng_status node_file_names(char *body, size_t len, const char ***ret, size_t *ret_n,
				 struct ng_err *reterr)
{
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += body[i] == '\n';
	const char **v = malloc(lines * sizeof(*v));
	if (!v)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	size_t n = 0;
	char *p = body, *end = body + len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *e = nl ? nl : end;
		while (p < e && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		char *q = e;
		while (q > p && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r'))
			q--;
		if (q > p && *p != '#') {
			*q = '\0';
			v[n++] = p;
		}
		p = e + 1;
	}
	if (n > POL_PLAN_MAX_NODES) {
		free(v);
		return ng_err_set(reterr, NG_ELIMIT, 0, "--node-file names %zu nodes; at most %d",
				  n, POL_PLAN_MAX_NODES);
	}
	*ret = v;
	*ret_n = n;
	return NG_OK;
}

/* Wave @n (from 1) of a text plan: when, its nodes, and what held back those waiting. */
static void print_wave(FILE *f, const struct ng_intern *pool, const struct pol_plan_input *in,
		       const struct pol_plan_wave *w, size_t n)
{
	(void)fprintf(f, "\nwave %zu at +", n);
	cmd_out_duration(f, w->start_wall_ms - in->start_wall_ms);
	(void)fprintf(f, " (");
	cmd_out_time(f, w->start_wall_ms);
	(void)fprintf(f, "): %zu node%s:", w->nnodes, w->nnodes == 1 ? "" : "s");
	for (size_t k = 0; k < w->nnodes; k++)
		(void)fprintf(f, " %s", ng_intern_str(pool, w->nodes[k], NULL));
	(void)fputc('\n', f);
	if (w->waiting)
		(void)fprintf(f, "  %zu waiting, held back by:\n", w->waiting);
	for (size_t k = 0; k < w->nlimits; k++) {
		const struct pol_plan_limit *l = &w->limits[k];
		if (l->budget && l->ns != NG_INTERN_NONE)
			(void)fprintf(f, "    %s %s/%s",
				      l->kind == KUBE_RES_ADBS ? "ApplicationDisruptionBudget"
							       : "PodDisruptionBudget",
				      ng_intern_str(pool, l->ns, NULL),
				      ng_intern_str(pool, l->name, NULL));
		else if (l->budget)
			(void)fprintf(f, "    NodeDisruptionBudget %s",
				      ng_intern_str(pool, l->name, NULL));
		else
			(void)fprintf(f, "    another rule");
		(void)fprintf(f, " (%zu): %s\n", l->waiting, l->reason);
	}
	if (w->more_limits)
		(void)fprintf(f, "    and %zu more budgets\n", w->more_limits);
}

/* The nodes a truncated plan did not reach, and the limit that stopped it. */
static void print_unplanned(FILE *f, const struct pol_plan_input *in, const struct pol_plan *p)
{
	(void)fprintf(f, "\nnot planned (%zu): the plan stopped at its limit of ", p->nunplanned);
	switch (p->stopped) {
	case POL_PLAN_STOP_ROUNDS:
		(void)fprintf(f, "%zu rounds (--max-rounds)", in->max_rounds);
		break;
	case POL_PLAN_STOP_DECISIONS:
		(void)fprintf(f, "%zu decisions (--max-decisions)", in->max_decisions);
		break;
	case POL_PLAN_STOP_TIME:
		(void)fprintf(f, "%lld s of computing (--max-seconds)",
			      (long long)(in->max_mono_us / 1000000));
		break;
	default:
		(void)fprintf(f, "%zu waves",
			      in->max_waves ? in->max_waves : (size_t)POL_PLAN_MAX_WAVES);
		break;
	}
	(void)fprintf(f, ", at +");
	cmd_out_duration(f, p->stopped_wall_ms - in->start_wall_ms);
	(void)fprintf(f, " (");
	cmd_out_time(f, p->stopped_wall_ms);
	(void)fprintf(f, ") on the simulated clock\n");
	for (size_t i = 0; i < p->nunplanned; i++)
		(void)fprintf(f, "%s%s", i % 10 ? " " : i ? "\n  " : "  ", p->unplanned[i]);
	if (p->nunplanned)
		(void)fputc('\n', f);
}

static void print_text(FILE *f, const struct kube_snapshot *s, const struct pol_plan_input *in,
		       const struct pol_plan *p)
{
	const struct ng_intern *pool = kube_snapshot_pool(s);
	size_t total = p->nplanned + p->nnever + p->nunplanned;
	(void)fprintf(f, "Plan for %zu nodes from ", total);
	cmd_out_time(f, in->start_wall_ms);
	(void)fprintf(f, ", each held ");
	cmd_out_duration(f, in->drain_ms);
	(void)fprintf(f, " (type %s, requestor %s).\n", in->type, in->requestor);
	(void)fprintf(f, "Assumes health hooks answer healthy, multistep hooks are ready at once "
			 "and the alert gate lets grants through; Pending requests already in the "
			 "cluster are not simulated.\n");
	if (p->held_at_start)
		(void)fprintf(f, "Granted requests holding nodes at the start: %zu.\n",
			      p->held_at_start);
	for (size_t i = 0; i < p->nwaves; i++)
		print_wave(f, pool, in, &p->waves[i], i + 1);
	if (p->nnever)
		(void)fprintf(f, "\nnever granted (%zu):\n", p->nnever);
	for (size_t i = 0; i < p->nnever; i++)
		(void)fprintf(f, "  %s: %s%s\n", p->never[i].name,
			      p->never[i].rejected ? "rejected: " : "", p->never[i].reason);
	if (p->truncated)
		print_unplanned(f, in, p);
	(void)fprintf(f, "\ntotal: %zu wave%s, %zu of %zu nodes, ", p->nwaves,
		      p->nwaves == 1 ? "" : "s", p->nplanned, total);
	cmd_out_duration(f, p->end_wall_ms - in->start_wall_ms);
	(void)fprintf(f, ", ending ");
	cmd_out_time(f, p->end_wall_ms);
	(void)fprintf(f, "%s\n", p->truncated ? " (truncated)" : "");
}

/* What --output writes: a row per format. */
enum plan_format { PLAN_TEXT, PLAN_JSON, PLAN_YAML, PLAN_SVG, PLAN_HTML };
static const struct {
	const char *name;
	enum plan_format format;
} PLAN_FORMATS[] = {
    {"text", PLAN_TEXT}, {"json", PLAN_JSON}, {"yaml", PLAN_YAML},
    {"svg", PLAN_SVG},   {"html", PLAN_HTML},
};
#define NFORMATS (sizeof(PLAN_FORMATS) / sizeof(PLAN_FORMATS[0]))

/* @output as a format, or false after saying on stderr which ones there are. */
static bool output_format(const char *output, enum plan_format *ret)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (strcmp(output, PLAN_FORMATS[i].name) == 0) {
			*ret = PLAN_FORMATS[i].format;
			return true;
		}
	(void)fprintf(stderr, "nodegate plan: --output \"%s\": expected", output);
	for (size_t i = 0; i < NFORMATS; i++)
		(void)fprintf(stderr, "%s%s",
			      i == 0             ? " "
			      : i + 1 < NFORMATS ? ", "
						 : " or ",
			      PLAN_FORMATS[i].name);
	(void)fputc('\n', stderr);
	return false;
}

/* The flags that go together or exclude each other, --output and --start read: false (said
 * on stderr) when they do not agree. */
static bool flags_agree(size_t nsnaps, const struct cmd_cluster *cl, const char *selector,
			const char *node_file, const char *output, const char *start_s,
			enum plan_format *ret_format, int64_t *ret_start_wall_ms)
{
	if ((nsnaps && (cl->kubeconfig || cl->context)) || !!selector == !!node_file) {
		(void)fprintf(
		    stderr, "nodegate plan: give --snapshot FILE or the cluster (--kubeconfig, "
			    "--context, $KUBECONFIG), and --nodes SELECTOR or --node-file FILE\n");
		return false;
	}
	if (!output_format(output, ret_format))
		return false;
	return cmd_parse_time_flag("nodegate plan", "start", start_s, ret_start_wall_ms) == 0;
}

/* nodegate plan's command line, read. */
struct plan_args {
	struct cmd_multi snaps;
	struct cmd_cluster cluster;
	const char *selector, *node_file, *start_s, *output, *type, *requestor;
	int64_t drain_s, max_rounds, max_decisions, max_seconds;
	enum plan_format format;
	int64_t start_wall_ms;
};

/* Fills @a from @argv: 0, 1 after --help, or -1 after saying on stderr what is wrong. */
static int parse_args(int argc, char **argv, struct plan_args *a)
{
	*a = (struct plan_args){.output = "text",
				.type = "maintenance",
				.requestor = "nodegate-plan",
				.drain_s = 300,
				.max_rounds = POL_PLAN_DEFAULT_MAX_ROUNDS,
				.max_decisions = POL_PLAN_DEFAULT_MAX_DECISIONS,
				.max_seconds = POL_PLAN_DEFAULT_MAX_SECONDS};
	const struct cmd_opt opts[] = {
	    {"snapshot", CMD_OPT_MULTI, &a->snaps, "FILE",
	     "Cluster state: `kubectl get ... -o json` or `-o yaml` output, as for `nodegate "
	     "check`. Without it, the plan is made on the live cluster (listed once, read only).",
	     0, 0, NULL, NULL},
	    CMD_CLUSTER_OPTS(&a->cluster),
	    {"nodes", CMD_OPT_STR, &a->selector, "SELECTOR",
	     "The nodes to maintain: a label selector (kubectl -l syntax; \"\" selects every "
	     "node). This or --node-file.",
	     0, 0, NULL, NULL},
	    {"node-file", CMD_OPT_STR, &a->node_file, "FILE",
	     "The nodes to maintain: one name per line (# starts a comment line). This or --nodes.",
	     0, 0, NULL, NULL},
	    {"drain-seconds", CMD_OPT_INT, &a->drain_s, "N",
	     "How long each granted request holds its node before it is deleted.", 1, 2592000, NULL,
	     NULL},
	    {"start", CMD_OPT_STR, &a->start_s, "TIME",
	     "When the requests are created, RFC 3339 (e.g. 2026-11-22T00:00:00Z); default now.", 0,
	     0, NULL, NULL},
	    {"type", CMD_OPT_STR, &a->type, "TYPE",
	     "The requests' spec.type (allowedTypes and budgets' supportedNodeDisruptionTypes "
	     "apply).",
	     0, 0, NULL, NULL},
	    {"requestor", CMD_OPT_STR, &a->requestor, "NAME", "The requests' spec.requestor.", 0, 0,
	     NULL, NULL},
	    {"output", CMD_OPT_STR, &a->output, "FORMAT",
	     "`text` for people, `json` for tools (docs/planner.md gives its shape), `yaml` (the "
	     "same as YAML), `svg` a timeline picture, `html` a page holding it.",
	     0, 0, NULL, NULL},
	    {"max-rounds", CMD_OPT_INT, &a->max_rounds, "N",
	     "Stop after this many simulated gate rounds and answer a truncated plan (exit 3); 0 = "
	     "no limit.",
	     0, 1000000000, NULL, NULL},
	    {"max-decisions", CMD_OPT_INT, &a->max_decisions, "N",
	     "Stop after this many decisions and answer a truncated plan (exit 3); 0 = no limit.",
	     0, 10000000000, NULL, NULL},
	    {"max-seconds", CMD_OPT_INT, &a->max_seconds, "N",
	     "Stop after computing this long and answer a truncated plan (exit 3); 0 = no limit.",
	     0, 86400, NULL, NULL},
	};
	int rc = cmd_opts_parse("plan", opts, sizeof(opts) / sizeof(opts[0]), argc, argv);
	if (rc != 0)
		return rc;
	return flags_agree(a->snaps.n, &a->cluster, a->selector, a->node_file, a->output,
			   a->start_s, &a->format, &a->start_wall_ms)
		   ? 0
		   : -1;
}

/* What one run of nodegate plan holds until it returns. */
struct plan_run {
	struct ng_arena *arena;
	struct kube_snapshot *snap;
	char *body;
	const char **file_names;
	const char **names;
	size_t nnames;
};

/* A plan of nothing answers nothing: refused (exit 2) when @a's --nodes selects no node, or
 * when --node-file names nodes @r's cluster does not have (counted, the first three named). */
static ng_status nodes_exist(const struct plan_args *a, const struct plan_run *r,
			     struct ng_err *err)
{
	if (r->nnames == 0)
		return a->selector ? ng_err_set(err, NG_EPARSE, 0, "--nodes \"%s\" selects no node",
						a->selector)
				   : ng_err_set(err, NG_EPARSE, 0, "--node-file %s names no node",
						a->node_file);
	const struct ng_intern *pool = kube_snapshot_pool(r->snap);
	char names[120] = "";
	size_t missing = 0;
	for (size_t i = 0; i < r->nnames; i++) {
		uint32_t id = ng_intern_find(pool, r->names[i], strlen(r->names[i]));
		if (id != NG_INTERN_NONE && kube_snapshot_find_node(r->snap, id))
			continue;
		size_t at = strlen(names);
		if (missing++ < 3)
			ng_fmt(names + at, sizeof(names) - at, "%s%.30s", at ? ", " : "",
			       r->names[i]);
	}
	if (missing == 0)
		return NG_OK;
	char more[40] = "";
	if (missing > 3)
		ng_fmt(more, sizeof(more), " and %zu more", missing - 3);
	return ng_err_set(err, NG_EPARSE, 0,
			  "--node-file %s: %zu of %zu nodes are not in the cluster: %s%s",
			  a->node_file, missing, r->nnames, names, more);
}

/* The cluster and the chosen nodes of @a into @r. */
static ng_status load_input(const struct plan_args *a, struct plan_run *r, struct ng_err *err)
{
	ng_status st = r->arena ? NG_OK : ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	if (st == NG_OK && a->node_file) {
		size_t len = 0;
		st = ng_read_file(a->node_file, NODE_FILE_MAX_BYTES, "--node-file", false, &r->body,
				  &len, err);
		st = st ? st : node_file_names(r->body, len, &r->file_names, &r->nnames, err);
		r->names = r->file_names;
	}
	if (st == NG_OK)
		st = a->snaps.n
			 ? kube_snapshot_load_files_strict(a->snaps.v, a->snaps.n, &r->snap, err)
			 : cmd_live_load(&a->cluster, &r->snap, err);
	if (st == NG_OK && a->selector) {
		struct ng_err e = {0};
		st = pol_plan_select(r->snap, a->selector, r->arena, &r->names, &r->nnames, &e);
		if (st != NG_OK)
			(void)ng_err_set(err, st, e.offset, "--nodes \"%s\": %s", a->selector,
					 e.msg);
	}
	return st ? st : nodes_exist(a, r, err);
}

/* Plans @in on @r's cluster into @plan, and writes it into @out unless @a asks for text. */
static ng_status compute(const struct plan_args *a, struct plan_run *r, struct pol_plan_input *in,
			 struct pol_plan *plan, struct ng_buf *out, struct ng_err *err)
{
	in->nodes = r->names;
	in->nnodes = r->nnames;
	ng_status st = pol_plan_run(r->snap, in, r->arena, plan);
	if (st != NG_OK)
		return ng_err_set(err, st, 0, "%s",
				  st == NG_ELIMIT ? "too many nodes" : "out of memory");
	if (a->format != PLAN_TEXT) {
		st = a->format == PLAN_JSON || a->format == PLAN_YAML
			 ? pol_plan_json(r->snap, in, plan, out)
			 : cmd_plan_svg(r->snap, in, plan, a->format == PLAN_HTML, r->arena, out);
		if (st != NG_OK)
			(void)ng_err_set(err, st, 0, "the plan does not fit in memory");
	}
	if (st == NG_OK && a->format == PLAN_YAML) {
		struct ng_buf yaml;
		ng_buf_init(&yaml, out->cap);
		st = ng_yaml_from_json(out->data, out->len, &yaml, err);
		ng_buf_finish(out);
		*out = yaml;
	}
	return st;
}

int cmd_plan(int argc, char **argv)
{
	struct plan_args a;
	int rc = parse_args(argc, argv, &a);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	struct ng_err err = {0};
	struct plan_run r = {.arena = ng_arena_create(PLAN_ARENA_BYTES)};
	struct ng_buf out;
	ng_buf_init(&out, 256u << 20);
	struct pol_plan plan;
	struct pol_plan_input in = {.start_wall_ms = a.start_wall_ms,
				    .drain_ms = a.drain_s * 1000,
				    .type = a.type,
				    .requestor = a.requestor,
				    .max_rounds = (size_t)a.max_rounds,
				    .max_decisions = (size_t)a.max_decisions,
				    .max_mono_us = a.max_seconds * 1000000};
	ng_status st = load_input(&a, &r, &err);
	if (st == NG_OK)
		st = compute(&a, &r, &in, &plan, &out, &err);
	rc = 2;
	if (st != NG_OK)
		(void)fprintf(stderr, "nodegate plan: %s\n",
			      err.msg[0] ? err.msg : "out of memory");
	else if (a.format != PLAN_TEXT)
		(void)fputs(out.data, stdout);
	else
		print_text(stdout, r.snap, &in, &plan);
	if (st == NG_OK)
		rc = plan.truncated ? 3 : plan.nnever ? 1 : 0;
	ng_buf_finish(&out);
	ng_arena_destroy(r.arena);
	free(r.file_names);
	free(r.body);
	kube_snapshot_release(r.snap);
	return rc;
}
