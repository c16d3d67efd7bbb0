/* YAML, read with libyaml's event API, for the two places nodegate takes it: a kubeconfig, as a
 * small tree (kube/config.c), and what kubectl users write or `kubectl get -o yaml` prints
 * (`nodegate check --nd`, `--snapshot` files), converted to JSON for the decoders that already
 * read kubectl's JSON. One reader serves both, so both refuse the same things the same way:
 * aliases (refused before anything is expanded: billion laughs), nesting past a depth limit, and
 * a second document that is not empty.
 *
 * The writer, ng_yaml_from_json(), turns JSON back into such YAML, for `-o yaml` outputs.
 *
 * Threads: any; nothing global. Errors: NG_EPARSE (malformed YAML, an alias, a second document,
 * something JSON cannot hold), NG_ELIMIT (deeper than allowed, over a memory or output cap),
 * NG_ENOMEM; the ng_err message starts with the caller's @what and names the line. */
#ifndef NG_COMMON_YAML_H
#define NG_COMMON_YAML_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>

struct ng_arena;
struct ng_buf;

/* Deepest nesting either reader accepts: the JSON depth limit (common/limits.h), so a YAML
 * document converts into JSON that ng_json_parse() takes. Callers may ask for less. */
#define NG_YAML_MAX_DEPTH 64

enum ng_yaml_kind {
	NG_YAML_SCALAR,
	NG_YAML_MAP,
	NG_YAML_SEQ,
};

/* A node of the tree ng_yaml_load() builds. A mapping's children alternate key, value (libyaml
 * always emits both). */
struct ng_yaml_node {
	enum ng_yaml_kind kind;
	bool plain; /* an untagged plain scalar: may be null or a boolean */
	size_t off; /* byte offset in the input, for ng_err */
	const char *s;
	size_t len;
	struct ng_yaml_node *first, *last, *next;
};

/**
 * Reads the YAML in @buf (@len bytes, no NUL needed) into a tree allocated in @arena (borrowed;
 * the tree lives as long as it, and its cap bounds the tree: NG_ELIMIT "more than N bytes of
 * YAML"). Nesting deeper than @max_depth (at most NG_YAML_MAX_DEPTH) is NG_ELIMIT. *@ret_root is
 * NULL when there is no document, or only empty ones. Messages start with @what ("kubeconfig").
 */
NG_NODISCARD ng_status ng_yaml_load(const char *buf, size_t len, const char *what, size_t max_depth,
				    struct ng_arena *arena, struct ng_yaml_node **ret_root,
				    struct ng_err *reterr);

/**
 * Converts the YAML document in @buf (@len bytes) to JSON appended to @out (borrowed), as
 * kubectl's sigs.k8s.io/yaml does: plain scalars resolve as YAML 1.1 (null and ~; true/false,
 * yes/no, on/off, y/n; decimal, 0x, 0o, 0b and leading-0 octal integers, with '_' separators;
 * decimal floats), anything quoted or tagged !!str stays a string, keys are strings as written.
 * Refused: merge keys (<<), keys that are not scalars, .inf and .nan (no JSON for them), NUL
 * characters, tags other than YAML's own, and those of the generic reader above; nesting as
 * NG_YAML_MAX_DEPTH. Output beyond @out's cap is NG_ELIMIT ("more than N bytes as JSON"): the
 * caller sets it to the limit of the JSON it would have read. No document at all is NG_EPARSE.
 * On failure @out is as it was. Also the fuzz target's entry point.
 */
NG_NODISCARD ng_status ng_yaml_to_json(const char *buf, size_t len, const char *what,
				       struct ng_buf *out, struct ng_err *reterr);

/**
 * Whether @buf (@len bytes) is JSON rather than YAML for the readers that take both: its first
 * byte after whitespace is '{' or '['. JSON keeps its own, faster parser and messages; a YAML
 * flow mapping at the top level (`{a: 1}`) is rare and is read as JSON.
 */
bool ng_yaml_is_json(const char *buf, size_t len);

/**
 * Writes the JSON document in @json (@len bytes, borrowed) as YAML appended to @out (borrowed),
 * in block style as kubectl prints (`kubectl get -o yaml`): members in their JSON order, lists
 * under a key at the key's indentation, empty containers as {} and [], a string with line breaks
 * as a literal block. A string YAML would read as something else (true, no, null, ~, 123, 0x1F,
 * 1e3, .inf, "" and the like) is double-quoted, so ng_yaml_to_json() gives back the same JSON.
 * Integers print as integers, other numbers in their shortest exact form. Lines are never
 * folded. Output beyond @out's cap is NG_ELIMIT; malformed JSON is NG_EPARSE (the JSON parser's
 * message), nesting as NG_MAX_JSON_DEPTH; on failure @out is as it was. Any thread.
 */
NG_NODISCARD ng_status ng_yaml_from_json(const char *json, size_t len, struct ng_buf *out,
					 struct ng_err *reterr);

#endif
