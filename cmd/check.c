/* nodegate check: the dry run of POST /v1/evaluate, against snapshot files or the live cluster
 * (cmd/live.h): exit 0 when the request would be Granted (for a NodeRemediation: when some
 * request it would create would be), 1 when not, 2 on an error or a refused object. The answer
 * is the evaluate endpoint's JSON (-o json, the default when stdout is not a terminal, so
 * scripts keep reading it), that JSON as YAML, or a short verdict for people (-o text, the
 * default on a terminal); errors are one sentence on stderr. */
#include "cmd/cmd.h"
#include "cmd/live.h"
#include "cmd/out.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/parse.h"
#include "common/yaml.h"
#include "kube/kube.h"
#include "kube/strict.h"
#include "server/admission.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The --nd file @path's content (*@body, *@len) as JSON: JSON as it is, YAML (what kubectl
 * users write) converted, bounded by the same limit as the JSON. On failure *@body is freed. */
static ng_status read_yaml(const char *path, char **body, size_t *len, struct ng_err *reterr)
{
	if (ng_yaml_is_json(*body, *len))
		return NG_OK;
	struct ng_buf json;
	struct ng_err e = {0};
	ng_buf_init(&json, NG_MAX_BODY_BYTES);
	ng_status st = ng_yaml_to_json(*body, *len, "YAML", &json, &e);
	free(*body);
	*body = ng_buf_take(&json, len);
	if (st != NG_OK) {
		free(*body);
		*body = NULL;
		return ng_err_set(reterr, st, e.offset, "--nd %s: %s", path, e.msg);
	}
	return NG_OK;
}

/* The --nd file @path's JSON (@body, @len) has no field its kind's CRD lacks (kube/strict.h); a
 * body without kind is a NodeDisruption, as the evaluation reads it. JSON that does not parse is
 * left to the evaluation to refuse. */
static ng_status strict_nd(const char *path, const char *body, size_t len, struct ng_err *reterr)
{
	cJSON *root = NULL;
	struct ng_err e = {0};
	if (ng_json_parse(body, len, NULL, &root, &e) != NG_OK)
		return NG_OK;
	ng_status st = NG_OK;
	if (cJSON_IsObject(root) && !ng_json_get(root, "kind") &&
	    (!cJSON_AddStringToObject(root, "kind", "NodeDisruption") ||
	     (!ng_json_get(root, "apiVersion") &&
	      !cJSON_AddStringToObject(root, "apiVersion", "nodegate.io/v1alpha1"))))
		st = NG_ENOMEM;
	struct kube_strict *s = st == NG_OK ? kube_strict_create() : NULL;
	st = s ? kube_strict_check(s, root, NULL, &e) : NG_ENOMEM;
	if (st != NG_OK)
		(void)ng_err_set(reterr, st, 0, "--nd %s: %s", path,
				 st == NG_ENOMEM ? "out of memory" : e.msg);
	kube_strict_destroy(s);
	cJSON_Delete(root);
	return st;
}

/* One line per budget of a decision @d: whether it allows the request, and why. */
static void print_budgets(FILE *f, const cJSON *d, const char *indent)
{
	const cJSON *v;
	cJSON_ArrayForEach(v, ng_json_get(d, "disruptedDisruptionBudgets"))
	{
		const char *reason = ng_json_str(v, "reason");
		(void)fprintf(f, "%s%s %s\n", indent,
			      cJSON_IsTrue(ng_json_get(v, "ok")) ? "ok  " : "FAIL",
			      reason ? reason : "");
	}
}

/* A NodeDisruption's decision @d for people: the verdict and its message, then each budget. */
static void print_decision(FILE *f, const cJSON *d)
{
	const char *state = ng_json_str(d, "state"), *reason = ng_json_str(d, "reason");
	(void)fprintf(f, "%s: %s\n", state ? state : "?", reason ? reason : "");
	const cJSON *n;
	size_t i = 0;
	cJSON_ArrayForEach(n, ng_json_get(d, "disruptedNodes"))
	{
		(void)fprintf(f, "%s%s",
			      i++ ? ", " : "  nodes: ", cJSON_IsString(n) ? n->valuestring : "");
	}
	if (i)
		(void)fputs("\n", f);
	if (cJSON_IsTrue(ng_json_get(d, "unsatisfiable")))
		(void)fputs("  no budget change short of the one above lets it through\n", f);
	if (ng_json_str(d, "windowOpensAt"))
		(void)fprintf(
		    f, "  decided again at %s, when a window, an exclusion or pacing changes\n",
		    ng_json_str(d, "windowOpensAt"));
	if (ng_json_str(d, "expiresAt"))
		(void)fprintf(f, "  granted now, it would expire at %s\n",
			      ng_json_str(d, "expiresAt"));
	print_budgets(f, d, "  ");
	cJSON_ArrayForEach(n, ng_json_get(d, "healthHooks"))
	{
		(void)fprintf(
		    f,
		    "  a grant still waits on the health hook of ApplicationDisruptionBudget "
		    "%s/%s (not called by a dry run)\n",
		    ng_json_str(n, "namespace"), ng_json_str(n, "name"));
	}
	cJSON_ArrayForEach(n, ng_json_get(d, "multistepHooks"))
	{
		const char *ns = ng_json_str(n, "namespace");
		(void)fprintf(
		    f,
		    "  a grant still waits on the multistep hooks of %s %s%s%s (/prepare, "
		    "then /ready; not called by a dry run)\n",
		    ng_json_str(n, "kind"), ns ? ns : "", ns ? "/" : "", ng_json_str(n, "name"));
	}
	if (ng_json_str(d, "alertGate"))
		(void)fputs("  a grant still waits on the alert gate (not asked by a dry run)\n",
			    f);
}

/* A NodeRemediation's dry run @x for people: the pool, then each node and its request's fate. */
static void print_remediation(FILE *f, const cJSON *x)
{
	int64_t matched = 0, unhealthy = 0, conc = 0;
	(void)ng_json_int64(ng_json_get(x, "matchedNodes"), &matched);
	(void)ng_json_int64(ng_json_get(x, "unhealthyNodes"), &unhealthy);
	(void)ng_json_int64(ng_json_get(x, "maxConcurrent"), &conc);
	(void)fprintf(f, "NodeRemediation: %lld of %lld nodes unhealthy, at most %lld at once%s\n",
		      (long long)unhealthy, (long long)matched, (long long)conc,
		      cJSON_IsTrue(ng_json_get(x, "storm")) ? "; a storm: nothing starts" : "");
	const char *problem = ng_json_str(x, "problem");
	if (problem && *problem)
		(void)fprintf(f, "  problem: %s\n", problem);
	const cJSON *n;
	cJSON_ArrayForEach(n, ng_json_get(x, "nodes"))
	{
		const cJSON *d = ng_json_get(n, "decision");
		const char *reason = ng_json_str(n, "reason");
		(void)fprintf(f, "%s: %s%s%s\n", ng_json_str(n, "node"), ng_json_str(n, "action"),
			      reason && *reason ? ", " : "", reason ? reason : "");
		if (d) {
			(void)fprintf(f, "  %s: %s\n", ng_json_str(d, "state"),
				      ng_json_str(d, "reason"));
			print_budgets(f, d, "    ");
		}
	}
}

/* Writes the evaluate answer @json (@len bytes) as @o asks; false when it cannot (said on
 * stderr). */
static bool print_answer(const struct cmd_out *o, const char *json, size_t len)
{
	struct ng_err err = {0};
	if (o->format != CMD_OUT_TEXT) {
		if (cmd_out_print(stdout, o, json, len, &err) == NG_OK)
			return true;
		(void)fprintf(stderr, "nodegate check: writing the answer: %s\n", err.msg);
		return false;
	}
	cJSON *root = NULL;
	if (ng_json_parse(json, len, NULL, &root, &err) != NG_OK) {
		(void)fprintf(stderr, "nodegate check: writing the answer: %s\n", err.msg);
		return false;
	}
	if (ng_json_str(root, "kind") && strcmp(ng_json_str(root, "kind"), "NodeRemediation") == 0)
		print_remediation(stdout, root);
	else
		print_decision(stdout, root);
	cJSON_Delete(root);
	return true;
}

/* The message of a refusal @json ({"message": ...}), or @json itself. */
static void print_refusal(const char *json, size_t len)
{
	cJSON *root = NULL;
	struct ng_err err = {0};
	const char *msg = NULL;
	if (ng_json_parse(json, len, NULL, &root, &err) == NG_OK)
		msg = ng_json_str(root, "message");
	(void)fprintf(stderr, "nodegate check: %s%s", msg ? msg : json, msg ? "\n" : "");
	cJSON_Delete(root);
}

int cmd_check(int argc, char **argv)
{
	struct cmd_multi snaps = {0};
	struct cmd_cluster cl = {0};
	const char *nd = NULL, *now_s = NULL, *format = NULL;
	const struct cmd_opt opts[] = {
	    {"snapshot", CMD_OPT_MULTI, &snaps, "FILE",
	     "Cluster state: `kubectl get ... -o json` or `-o yaml` output (a List of mixed kinds, "
	     "a ...List, or one object). Later files replace objects of the same identity. "
	     "Without it: the live cluster (--kubeconfig, --context).",
	     0, 0, NULL, NULL},
	    CMD_CLUSTER_OPTS(&cl),
	    {"nd", CMD_OPT_STR, &nd, "FILE",
	     "The NodeDisruption to decide, or a NodeRemediation to explain (which pool nodes "
	     "are unhealthy, which would get a request, and the decision on each), as JSON or "
	     "YAML. Required.",
	     0, 0, NULL, NULL},
	    {"now", CMD_OPT_STR, &now_s, "TIME",
	     "Decide as of this RFC 3339 time (e.g. 2026-11-22T00:00:00Z) instead of now, for "
	     "retry.deadline.",
	     0, 0, NULL, NULL},
	    {"output", CMD_OPT_STR, &format, "FORMAT",
	     "`text` for people (the default on a terminal), `json` for tools (the default "
	     "otherwise: the evaluate endpoint's answer), or `yaml` (that answer as YAML).",
	     0, 0, NULL, NULL},
	};
	int rc = cmd_opts_parse("check", opts, sizeof(opts) / sizeof(opts[0]), argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	if (!nd || (snaps.n && (cl.kubeconfig || cl.context))) {
		(void)fprintf(stderr, "nodegate check: --nd FILE is required, with --snapshot FILE "
				      "or the cluster (--kubeconfig, --context), not both\n");
		return 2;
	}
	struct cmd_out o;
	if (cmd_out_parse("nodegate check", format, stdout, &o) != 0)
		return 2;
	int64_t now_wall_ms;
	if (cmd_parse_time_flag("nodegate check", "now", now_s, &now_wall_ms) != 0)
		return 2;
	struct ng_err err = {0};
	struct kube_snapshot *snap = NULL;
	char *body = NULL;
	size_t len = 0;
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES * 8);
	struct ng_buf out;
	ng_buf_init(&out, 16u << 20);
	int code = 0;
	rc = 2;
	bool granted = false;
	/* The request first: a wrong --nd is reported before the cluster is listed. */
	if (ng_read_file(nd, NG_MAX_BODY_BYTES, "--nd", false, &body, &len, &err) != NG_OK ||
	    read_yaml(nd, &body, &len, &err) != NG_OK || strict_nd(nd, body, len, &err) != NG_OK ||
	    (snaps.n ? kube_snapshot_load_files_strict(snaps.v, snaps.n, &snap, &err)
		     : cmd_live_load(&cl, &snap, &err)) != NG_OK ||
	    !arena ||
	    srv_evaluate(body, len, arena, snap, now_wall_ms, &out, &code, &granted, &err) !=
		NG_OK) {
		(void)fprintf(stderr, "nodegate check: %s\n",
			      err.msg[0] ? err.msg : "out of memory");
		goto out;
	}
	if (code != 200)
		print_refusal(out.data, out.len);
	else if (!print_answer(&o, out.data, out.len))
		goto out;
	rc = code != 200 ? 2 : granted ? 0 : 1;
out:
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
	free(body);
	kube_snapshot_release(snap);
	return rc;
}
