/* libFuzzer target for common/yaml.c (STYLE.md B12 "Fuzz"): YAML to JSON (check --nd,
 * --snapshot files) and the tree reader (kubeconfigs).
 *
 * Invariants: a conversion that succeeds writes JSON nodegate's own parser takes, unless the YAML
 * repeated a key (which the JSON parser refuses on purpose); one that fails leaves the buffer as
 * it was and says why. The tree reader must not crash within its arena cap. Any broken invariant
 * calls abort() so libFuzzer keeps the input. */
#include "common/arena.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/yaml.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct ng_buf out;
	ng_buf_init(&out, 256 * 1024);
	check(ng_buf_puts(&out, "x") == NG_OK);
	struct ng_err err = {0};
	ng_status st = ng_yaml_to_json(buf, size, "fuzz", &out, &err);
	if (st == NG_OK) {
		cJSON *root = NULL;
		struct ng_err jerr = {0};
		ng_status js = ng_json_parse(out.data + 1, out.len - 1, NULL, &root, &jerr);
		check(js == NG_OK || strstr(jerr.msg, "duplicate JSON key") != NULL);
		cJSON_Delete(root);
	} else {
		check(out.len == 1 && strcmp(out.data, "x") == 0);
		check(err.status == st && err.msg[0] != '\0');
	}
	ng_buf_finish(&out);
	struct ng_arena *a = ng_arena_create(1u << 20);
	struct ng_yaml_node *tree = NULL;
	struct ng_err terr = {0};
	if (a) {
		ng_status ts = ng_yaml_load(buf, size, "fuzz", 32, a, &tree, &terr);
		check(ts == NG_OK ? terr.msg[0] == '\0' : terr.msg[0] != '\0');
	}
	ng_arena_destroy(a);
	return 0;
}
