/* Test fixtures shared by the unit and golden tests. */
#ifndef NG_TESTS_SUPPORT_H
#define NG_TESTS_SUPPORT_H

#include "kube/kube.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Builds a snapshot from JSON text (a List or one object); aborts the test run on error. */
struct kube_snapshot *ng_test_snapshot(const char *json);

struct kube_cache;
/**
 * Decodes the object @json and adds it to live cache @c (with @del, its deletion), as a watch
 * event would; aborts the test run on error.
 */
void ng_test_cache_put(struct kube_cache *c, const char *json, bool del);

/** Interned id of @s in @snap's pool (NG_INTERN_NONE when absent). */
uint32_t ng_test_id(const struct kube_snapshot *snap, const char *s);

/** The ApplicationDisruptionBudget named @name in @snap (any namespace); aborts when absent. */
const struct kube_adb *ng_test_adb(const struct kube_snapshot *snap, const char *name);

struct cJSON;
/**
 * A golden case: with exactly one argument, the file argv[1] parsed as JSON (caller frees with
 * cJSON_Delete()). Otherwise, or when the file is not JSON, says why on stderr and exits 2.
 */
struct cJSON *ng_test_case(int argc, char **argv);

/** Reads a whole file into a NUL-terminated malloc'd buffer; aborts on error. */
char *ng_test_read_file(const char *path, size_t *ret_len);

/** The JSON of Fixture F (shared/acceptance/README.md) as a List, plus ADB default/db. */
extern const char ng_fixture_f[];

#endif
