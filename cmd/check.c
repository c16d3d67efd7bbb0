/* nodegate check: the dry run of POST /v1/evaluate, offline. */
#include "cmd/cmd.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/limits.h"
#include "common/parse.h"
#include "kube/kube.h"
#include "server/admission.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int cmd_check(int argc, char **argv)
{
	const char *snaps[CMD_MAX_MULTI];
	size_t nsnaps = 0;
	const char *nd = NULL, *now_s = NULL;
	for (int i = 0; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--snapshot") == 0 && val && nsnaps < CMD_MAX_MULTI)
			snaps[nsnaps++] = argv[++i];
		else if (strcmp(argv[i], "--nd") == 0 && val)
			nd = argv[++i];
		else if (strcmp(argv[i], "--now") == 0 && val)
			now_s = argv[++i];
		else {
			(void)fprintf(stderr,
				      "nodegate check: unexpected \"%s\" (see nodegate --help)\n",
				      argv[i]);
			return 2;
		}
	}
	int64_t now_wall_ms = ng_now_wall_ms();
	if (!nsnaps || !nd ||
	    (now_s && ng_parse_rfc3339_ms(now_s, strlen(now_s), &now_wall_ms) != NG_OK)) {
		(void)fprintf(stderr, "nodegate check: --snapshot FILE and --nd FILE are required; "
				      "--now takes an RFC 3339 time\n");
		return 2;
	}
	struct ng_err err = {0};
	struct kube_snapshot *snap = NULL;
	char *body = NULL;
	size_t len = 0;
	struct ng_arena *arena = ng_arena_create(NG_REQUEST_ARENA_CAP_BYTES * 8);
	struct ng_buf out;
	ng_buf_init(&out, 16u << 20);
	int rc = 2, code = 0;
	bool granted = false;
	if (kube_snapshot_load_files(snaps, nsnaps, &snap, &err) != NG_OK ||
	    ng_read_file(nd, NG_MAX_BODY_BYTES, "--nd", false, &body, &len, &err) != NG_OK ||
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
