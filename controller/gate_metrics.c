/* The gate's /metrics series, from its public counters (gate_get_stats) and renderers: the
 * server that serves /metrics does not know the controller layer, and cmd only wires them. */
#include "controller/gate.h"

#include "common/prom.h"
#include "controller/leader.h"
#include "policy/lifecycle.h"

/* Labels of gate_stats.decisions, indexed by enum pol_gate_outcome. */
static const char *const outcome_names[3] = {"Granted", "Rejected", "Pending"};

static ng_status render_counters(const struct gate_stats *gs, bool leading, struct ng_buf *out)
{
	ng_status st = ng_prom_header(out, "nodegate_leader", NG_PROM_GAUGE,
				      "1 while this replica holds the gate's lease.");
	st = st ? st : ng_prom_u64(out, "nodegate_leader", NULL, 0, leading ? 1 : 0);
	st = st ? st
		: ng_prom_header(out, "nodegate_gate_decisions_total", NG_PROM_COUNTER,
				 "Decisions made, by outcome.");
	for (int i = 0; st == NG_OK && i < 3; i++) {
		const struct ng_prom_label l[] = {{"outcome", outcome_names[i]}};
		st = ng_prom_u64(out, "nodegate_gate_decisions_total", l, 1, gs->decisions[i]);
	}
	static const char *const results[3] = {"ok", "conflict", "error"};
	const uint64_t writes[3] = {gs->writes, gs->conflicts, gs->errors};
	st = st ? st
		: ng_prom_header(out, "nodegate_gate_status_writes_total", NG_PROM_COUNTER,
				 "Status writes, by result.");
	for (int i = 0; st == NG_OK && i < 3; i++) {
		const struct ng_prom_label l[] = {{"result", results[i]}};
		st = ng_prom_u64(out, "nodegate_gate_status_writes_total", l, 1, writes[i]);
	}
	st = st ? st
		: ng_prom_header(out, "nodegate_requests_ended_total", NG_PROM_COUNTER,
				 "NodeDisruptions the gate deleted because their grant ended, by "
				 "reason.");
	for (int i = 0; st == NG_OK && i < POL_END_COUNT; i++) {
		/* Labelled by the Events' reasons (policy/lifecycle.h). */
		const struct ng_prom_label l[] = {
		    {"reason", pol_end_reason_str((enum pol_end_reason)i)}};
		st = ng_prom_u64(out, "nodegate_requests_ended_total", l, 1, gs->ended[i]);
	}
	return st;
}

ng_status gate_render_metrics(const struct gate *g, const struct leader *leader, bool objects,
			      struct ng_buf *out)
{
	if (!g)
		return NG_OK;
	struct gate_stats gs;
	gate_get_stats(g, &gs);
	ng_status st = render_counters(&gs, leader && leader_is_leader(leader), out);
	/* Every evaluation is timed, also those above the last bound. */
	struct ng_prom_hist_data h = {
	    .bounds = gate_decision_buckets_s,
	    .buckets = gs.decision_buckets,
	    .nbounds = sizeof(gate_decision_buckets_s) / sizeof(gate_decision_buckets_s[0]),
	    .count = gs.decision_count,
	    .sum = (double)gs.decision_us_sum / 1e6,
	};
	st = st ? st
		: ng_prom_header(out, "nodegate_decision_duration_seconds", NG_PROM_HISTOGRAM,
				 "Time to decide one NodeDisruption (budgets, no I/O).");
	st = st ? st : ng_prom_histogram(out, "nodegate_decision_duration_seconds", NULL, 0, &h);
	st = st ? st : gate_render_latency_metrics(g, out);
	if (objects)
		st = st ? st : gate_render_budget_metrics(g, out);
	st = st ? st : gate_render_hook_metrics(g, objects, out);
	return st ? st : gate_render_alert_metrics(g, out);
}
