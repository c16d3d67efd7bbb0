/* Test checks on JSON parsers: an independent RFC 8259 validator (the judge of "ng_json_parse()
 * may be stricter than the reference only on input that is not JSON"), a tree comparator, and
 * the differential oracle built from them, shared by the unit test and the fuzz target. */
#ifndef NG_TESTS_SUPPORT_JSON_CHECK_H
#define NG_TESTS_SUPPORT_JSON_CHECK_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/**
 * True when @len bytes at @buf are a JSON text by RFC 8259's grammar (§2-§7: whitespace is
 * space, tab, LF and CR only, no byte order mark, numbers without leading zeros, '+', or bare
 * '.', strings without raw control characters, escapes from the eight of §7 and \uXXXX) encoded
 * in well-formed UTF-8 (§8.1). It does not judge what RFC 8259 leaves to implementations:
 * \u0000, lone surrogate escapes, duplicate names and number range are all valid here. Texts
 * nested deeper than 2048 levels are reported as not valid (the checker recurses).
 */
bool ng_test_json_rfc8259(const char *buf, size_t len);

/**
 * Compares two parsed trees: node type, object key, string value byte for byte, valuedouble
 * bit for bit (or both NaN), valueint, children in order, and the links cJSON leaves (a first
 * child's prev is the last child, every later child's prev is its predecessor, the last's next
 * is NULL, the root has neither). Returns true when equal; otherwise false, with a path to the
 * first difference in @why (@why_size bytes, may be NULL).
 */
bool ng_test_json_tree_equal(const cJSON *a, const cJSON *b, char *why, size_t why_size);

/**
 * Parses @len bytes at @buf with ng_json_parse() and ng_json_parse_ref(), each into an arena of
 * its own when @use_arena, with malloc otherwise, and judges the pair:
 *  - both accept: the trees must be equal (ng_test_json_tree_equal());
 *  - ng_json_parse() accepts what the reference rejects: never allowed;
 *  - the reference accepts what ng_json_parse() rejects: allowed only when the text is not
 *    RFC 8259 JSON (ng_test_json_rfc8259()): ng_json_parse() may be stricter, nothing else;
 *  - both reject: ng_json_parse() must say NG_ELIMIT when the text is JSON the reference would
 *    take but for its depth, and must not say NG_ELIMIT when the reference's depth count never
 *    passed the limit (unless its arena ran out).
 * Either parser failing must leave its output untouched, set reterr's status, and return
 * NG_EPARSE, NG_ELIMIT or NG_ENOMEM. Returns true when the pair agrees; otherwise false and
 * the reason in @why (@why_size bytes, may be NULL). *@ret_lax (may be NULL) is set when the
 * reference accepted and ng_json_parse() rejected.
 */
bool ng_test_json_diff(const char *buf, size_t len, bool use_arena, bool *ret_lax, char *why,
		       size_t why_size);

#endif
