/* nodegate check: the dry run of POST /v1/evaluate, against snapshot files or the live cluster
 * (cmd/live.h): exit 0 when the request would be Granted (for a NodeRemediation: when some
 * request it would create would be), 1 when not, 2 on an error or a refused object. */
#include "cmd/cmd.h"
#include "cmd/live.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/limits.h"
#include "common/parse.h"
#include "common/yaml.h"
#include "kube/kube.h"
#include "server/admission.h"

#include <stdbool.h>
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

int cmd_check(int argc, char **argv)
{
	struct cmd_multi snaps = {0};
	struct cmd_cluster cl = {0};
	const char *nd = NULL, *now_s = NULL;
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
	};
	int rc = cmd_opts_parse("check", opts, sizeof(opts) / sizeof(opts[0]), argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	if (!nd || (snaps.n && (cl.kubeconfig || cl.context))) {
		(void)fprintf(stderr, "nodegate check: --nd FILE is required, with --snapshot FILE "
				      "or the cluster (--kubeconfig, --context), not both\n");
		return 2;
	}
	int64_t now_wall_ms = ng_now_wall_ms();
	if (now_s && ng_parse_rfc3339_ms(now_s, strlen(now_s), &now_wall_ms) != NG_OK) {
		(void)fprintf(stderr,
			      "nodegate check: --now \"%s\": expected an RFC 3339 time, e.g. "
			      "2026-11-22T00:00:00Z\n",
			      now_s);
		return 2;
	}
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
	    read_yaml(nd, &body, &len, &err) != NG_OK ||
	    (snaps.n ? kube_snapshot_load_files(snaps.v, snaps.n, &snap, &err)
		     : cmd_live_load(&cl, &snap, &err)) != NG_OK ||
	    !arena ||
	    srv_evaluate(body, len, arena, snap, now_wall_ms, &out, &code, &granted, &err) !=
		NG_OK) {
		(void)fprintf(stderr, "nodegate check: %s\n",
			      err.msg[0] ? err.msg : "out of memory");
		goto out;
	}
	(void)fputs(out.data, code == 200 ? stdout : stderr);
	rc = code != 200 ? 2 : granted ? 0 : 1;
out:
	ng_buf_finish(&out);
	ng_arena_destroy(arena);
	free(body);
	kube_snapshot_release(snap);
	return rc;
}
