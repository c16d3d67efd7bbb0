/* libFuzzer target for label selectors in both their forms (STYLE.md B12 "Fuzz"): the string
 * form bud_selector_parse() reads ("a in (b),!c"), and the JSON form, a metav1.LabelSelector
 * with matchLabels and matchExpressions, kube_decode_selector() reads.
 *
 * Every input goes through bud_selector_parse(). A failure must leave the output untouched
 * (STYLE.md B6) and report an offset inside the input. A success holds only what the API server
 * would: keys and values of label syntax, no NUL in the input. It must survive a round trip:
 * bud_selector_format() then bud_selector_parse() gives an equivalent selector (same
 * requirements in the same order, same operators, keys and value sets), and both selectors
 * answer the same for a few fixed label sets and for one built from the selector itself.
 *
 * When the input is JSON, it also goes through kube_decode_selector(): a failure is NG_EPARSE,
 * NG_ELIMIT or NG_ENOMEM with a readable message and leaves the output untouched; JSON null is
 * the null selector; a success holds keys and values of label syntax, In and NotIn with values,
 * Exists and DoesNotExist without, and decodes the same twice. Both round trips must hold: JSON
 * -> JSON (the selector written back as matchExpressions decodes to the same requirements, in
 * order) and JSON -> string (its string form parses to an equivalent selector, value sets
 * compared as sets, that matches the same label sets).
 * Any broken invariant calls abort() so libFuzzer keeps the input. */
#include "budgets/selector.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/jw.h"
#include "common/limits.h"
#include "common/status.h"
#include "kube/internal.h"
#include "kube/one.h"
#include "kube/records.h"
#include "tests/fuzz/roundtrip.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Room for one arena chunk's worth of parser state and arrays: a selector string is capped at
 * NG_MAX_SELECTOR_STRING_BYTES, so 1 MiB is far more than two parses need. */
#define FUZZ_ARENA_CAP (1024u * 1024u)

static void check(int ok)
{
	if (!ok)
		abort();
}

static bool same_string(const struct ng_intern *pool, uint32_t a, uint32_t b)
{
	size_t alen, blen;
	const char *as = ng_intern_str(pool, a, &alen);
	const char *bs = ng_intern_str(pool, b, &blen);
	return alen == blen && memcmp(as, bs, alen) == 0;
}

/* True when every value of @a is (by string) a value of @b. */
static bool values_subset(const struct ng_intern *pool, const struct kube_requirement *a,
			  const struct kube_requirement *b)
{
	for (uint16_t i = 0; i < a->nvalues; i++) {
		bool found = false;
		for (uint16_t k = 0; k < b->nvalues && !found; k++)
			found = same_string(pool, a->values[i], b->values[k]);
		if (!found)
			return false;
	}
	return true;
}

/* With @same_count, value lists must also be as long: true between string forms, where repeats
 * collapse at parse time, not from the JSON form, where they stay. */
static void check_equivalent(const struct ng_intern *pool, const struct kube_selector *a,
			     const struct kube_selector *b, bool same_count)
{
	check(a->present && b->present);
	check(a->nreqs == b->nreqs);
	for (uint16_t i = 0; i < a->nreqs; i++) {
		const struct kube_requirement *ra = &a->reqs[i], *rb = &b->reqs[i];
		check(ra->op == rb->op);
		check(same_string(pool, ra->key, rb->key));
		if (ra->op == KUBE_OP_GT || ra->op == KUBE_OP_LT) {
			/* The bound is what matters: "a>007" formats as "a>7", so the value
			 * strings may differ while the numbers may not. */
			check(ra->num == rb->num);
			continue;
		}
		/* Values are sets: duplicates collapse at parse time. */
		check(!same_count || ra->nvalues == rb->nvalues);
		check(values_subset(pool, ra, rb) && values_subset(pool, rb, ra));
	}
}

static bool label_syntax(const struct ng_intern *pool, uint32_t id, bool key)
{
	size_t len;
	const char *s = ng_intern_str(pool, id, &len);
	return (key ? kube_label_key_problem(s, len) : kube_label_value_problem(s, len)) == NULL;
}

/* Kubernetes refuses a selector whose keys or values (those of > and < included) are not of
 * label syntax, so nodegate may never accept one. */
static void check_label_syntax(const struct ng_intern *pool, const struct kube_selector *sel)
{
	for (uint16_t i = 0; i < sel->nreqs; i++) {
		const struct kube_requirement *r = &sel->reqs[i];
		check(label_syntax(pool, r->key, true));
		check((r->op == KUBE_OP_EXISTS || r->op == KUBE_OP_DOES_NOT_EXIST) ==
		      (r->nvalues == 0));
		check((r->op != KUBE_OP_GT && r->op != KUBE_OP_LT) || r->nvalues == 1);
		for (uint16_t k = 0; k < r->nvalues; k++)
			check(label_syntax(pool, r->values[k], false));
	}
}

static int cmp_label(const void *x, const void *y)
{
	const struct kube_label *a = x, *b = y;
	return a->key < b->key ? -1 : a->key > b->key;
}

/* Interns @n key/value pairs into @labels and sorts them by key id as kube_labels_get wants.
 * Keys must be distinct. */
static size_t make_labels(struct ng_intern *pool, const char *const (*kv)[2], size_t n,
			  struct kube_label *labels)
{
	for (size_t i = 0; i < n; i++) {
		check(ng_intern_add(pool, kv[i][0], strlen(kv[i][0]), &labels[i].key) == NG_OK);
		check(ng_intern_add(pool, kv[i][1], strlen(kv[i][1]), &labels[i].val) == NG_OK);
	}
	qsort(labels, n, sizeof(*labels), cmp_label);
	return n;
}

/* A label set built from the selector: each key (first occurrence) set to its first value, so
 * In, NotIn, Gt and Lt see a present key and compare values. */
static size_t labels_from(const struct kube_selector *sel, struct kube_label *labels)
{
	size_t n = 0;
	for (uint16_t i = 0; i < sel->nreqs; i++) {
		const struct kube_requirement *r = &sel->reqs[i];
		bool dup = false;
		for (size_t k = 0; k < n && !dup; k++)
			dup = labels[k].key == r->key;
		if (dup || r->op == KUBE_OP_DOES_NOT_EXIST)
			continue;
		labels[n].key = r->key;
		labels[n].val = r->nvalues ? r->values[0] : r->key;
		n++;
	}
	qsort(labels, n, sizeof(*labels), cmp_label);
	return n;
}

static void check_same_matches(struct ng_intern *pool, const struct kube_selector *a,
			       const struct kube_selector *b)
{
	static const char *const set1[][2] = {
	    {"a", "b"}, {"app", "web"}, {"tier", "3"},   {"example.com/a", "b"},
	    {"x", ""},  {"n", "-2"},    {"in", "notin"},
	};
	static const char *const set2[][2] = {
	    {"a", "c"},
	    {"app", "db"},
	    {"tier", "frontend"},
	    {"n", "5"},
	};
	struct kube_label labels[NG_MAX_SELECTOR_TERMS + 8] = {0};
	size_t n;

	check(bud_selector_matches(a, NULL, 0, pool) == bud_selector_matches(b, NULL, 0, pool));
	n = make_labels(pool, set1, sizeof(set1) / sizeof(set1[0]), labels);
	check(bud_selector_matches(a, labels, n, pool) == bud_selector_matches(b, labels, n, pool));
	n = make_labels(pool, set2, sizeof(set2) / sizeof(set2[0]), labels);
	check(bud_selector_matches(a, labels, n, pool) == bud_selector_matches(b, labels, n, pool));
	n = labels_from(a, labels);
	check(bud_selector_matches(a, labels, n, pool) == bud_selector_matches(b, labels, n, pool));
}

/* Formats @sel and parses the text back: an equivalent selector, with the same matches. */
static void check_string_roundtrip(struct ng_intern *pool, struct ng_arena *arena,
				   const struct kube_selector *sel, bool same_count)
{
	/* First ask for the length, then format for real: the two must agree. */
	size_t len = bud_selector_format(sel, pool, NULL, 0);
	char *text = malloc(len + 1);
	check(text != NULL);
	check(bud_selector_format(sel, pool, text, len + 1) == len);
	check(strlen(text) == len);

	/* The empty selector formats as "<all>" for messages; its string form is "". */
	size_t reparse_len = len;
	if (sel->nreqs == 0) {
		check(strcmp(text, "<all>") == 0);
		reparse_len = 0;
	}
	struct kube_selector again = {0};
	struct ng_err err = {0};
	ng_status st = bud_selector_parse(text, reparse_len, pool, arena, &again, &err);
	free(text);
	/* Canonical spacing can make the text longer than the input ("a in(x)" is formatted
	 * "a in (x)"); past the string limit only NG_ELIMIT is acceptable. */
	if (st == NG_ELIMIT && reparse_len > NG_MAX_SELECTOR_STRING_BYTES)
		return;
	check(st == NG_OK);
	check_equivalent(pool, sel, &again, same_count);
	check_same_matches(pool, sel, &again);
}

static void string_form(const uint8_t *data, size_t size, struct ng_intern *pool,
			struct ng_arena *arena)
{
	/* Pre-filled so a parser that writes its output on failure is caught. */
	struct kube_selector sel = {.present = false, .nreqs = 0xadad, .reqs = NULL};
	struct ng_err err = {0};
	ng_status st = bud_selector_parse((const char *)data, size, pool, arena, &sel, &err);
	if (st != NG_OK) {
		check(st == NG_EPARSE || st == NG_ELIMIT || st == NG_ENOMEM);
		check(err.status == st && err.offset <= size);
		check(!sel.present && sel.nreqs == 0xadad && sel.reqs == NULL);
		return;
	}
	check(sel.present && sel.nreqs <= NG_MAX_SELECTOR_TERMS);
	check((sel.nreqs == 0) == (sel.reqs == NULL));
	check(size == 0 || memchr(data, '\0', size) == NULL);
	check_label_syntax(pool, &sel);
	check_string_roundtrip(pool, arena, &sel, true);
}

/* The JSON form written back as JSON decodes to the same requirements. */
static void check_json_roundtrip(struct ng_intern *pool, struct ng_arena *arena,
				 const struct kube_selector *sel)
{
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_fuzz_write_selector(&w, sel, pool);
	check(ng_jw_finish(&w) == NG_OK);
	cJSON *root = NULL;
	check(ng_json_parse(b.data, b.len, NULL, &root, NULL) == NG_OK);
	struct kube_selector again = {0};
	check(kube_decode_selector(pool, arena, root, "selector", &again, NULL) == NG_OK);
	check(ng_fuzz_same_selector(sel, pool, &again, pool));
	cJSON_Delete(root);
	ng_buf_finish(&b);
}

static void json_form(const uint8_t *data, size_t size, struct ng_intern *pool,
		      struct ng_arena *arena)
{
	cJSON *root = NULL;
	if (ng_json_parse((const char *)data, size, NULL, &root, NULL) != NG_OK)
		return;
	struct kube_selector sel = {.present = true, .nreqs = 0xadad, .reqs = NULL}, twice;
	struct ng_err err = {0}, err2 = {0};
	ng_status st = kube_decode_selector(pool, arena, root, "selector", &sel, &err);
	ng_status st2 = kube_decode_selector(pool, arena, root, "selector", &twice, &err2);
	check(st == st2);
	if (st != NG_OK) {
		check(st == NG_EPARSE || st == NG_ELIMIT || st == NG_ENOMEM);
		check(err.status == st && strcmp(err.msg, err2.msg) == 0);
		check(ng_fuzz_message_ok(err.msg, data, size));
		check(sel.present && sel.nreqs == 0xadad && sel.reqs == NULL);
		goto out;
	}
	check(ng_fuzz_same_selector(&sel, pool, &twice, pool));
	check(sel.present == !cJSON_IsNull(root));
	check(sel.nreqs <= NG_MAX_SELECTOR_TERMS && (sel.nreqs == 0) == (sel.reqs == NULL));
	for (uint16_t i = 0; i < sel.nreqs; i++) {
		const struct kube_requirement *r = &sel.reqs[i];
		check(r->op <= KUBE_OP_DOES_NOT_EXIST && r->nvalues <= NG_MAX_SELECTOR_VALUES);
		check((r->op == KUBE_OP_IN || r->op == KUBE_OP_NOTIN) == (r->nvalues > 0));
	}
	check_label_syntax(pool, &sel);
	check_json_roundtrip(pool, arena, &sel);
	if (sel.present)
		check_string_roundtrip(pool, arena, &sel, false);
out:
	cJSON_Delete(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ng_intern *pool = ng_intern_create();
	struct ng_arena *arena = ng_arena_create(FUZZ_ARENA_CAP);
	check(pool != NULL && arena != NULL);
	string_form(data, size, pool, arena);
	ng_arena_reset(arena);
	json_form(data, size, pool, arena);
	ng_arena_destroy(arena);
	ng_intern_destroy(pool);
	return 0;
}
