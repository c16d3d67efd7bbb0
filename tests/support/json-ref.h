/* The reference JSON parser for tests: ng_json_parse() as it was when it wrapped cJSON (a
 * prescan for depth, control characters, NUL and UTF-8, then cJSON, then a duplicate-key check),
 * kept so the purpose-built parser can be proven equivalent to it (tests/unit/
 * test-common-json-diff.c, tests/fuzz/fuzz-json-diff.c). Not linked into nodegate. */
#ifndef NG_TESTS_SUPPORT_JSON_REF_H
#define NG_TESTS_SUPPORT_JSON_REF_H

#include "common/status.h"

#include <cjson/cJSON.h>
#include <stddef.h>

struct ng_arena;

/**
 * Same contract as ng_json_parse(): parses @len bytes at @buf; with @arena the tree lives in
 * the arena (never cJSON_Delete() it), without it the caller frees with cJSON_Delete(). On
 * failure *@ret_root is untouched and @reterr (may be NULL) gets NG_EPARSE (malformed) or
 * NG_ELIMIT (nested deeper than NG_MAX_JSON_DEPTH, or the arena cap reached). Any thread.
 *
 * Unlike the old ng_json_parse() it installs no cJSON hooks: cJSON allocates through whatever
 * hooks the process has (malloc, or json.c's, which fall back to malloc), and an arena tree is
 * a copy of the malloc'd one, so this never competes with json.c for cJSON's global hooks.
 */
NG_NODISCARD ng_status ng_json_parse_ref(const char *buf, size_t len, struct ng_arena *arena,
					 cJSON **ret_root, struct ng_err *reterr);

/**
 * As ng_json_parse_ref() with @max_depth in place of NG_MAX_JSON_DEPTH (cJSON still stops at its
 * own 1000): tells "rejected only for its depth" from "rejected for something else".
 */
NG_NODISCARD ng_status ng_json_parse_ref_depth(const char *buf, size_t len, struct ng_arena *arena,
					       int max_depth, cJSON **ret_root,
					       struct ng_err *reterr);

#endif
