/* budgets/selector: the string grammar, every operator, the absent-key rules, null vs empty
 * selectors, Kubernetes' own parse, match and lexer cases (tests/support/selector-cases.c), and
 * node affinity (terms ORed, expressions ANDed, Gt/Lt, matchFields). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "budgets/budgets.h"
#include "budgets/internal.h"
#include "common/arena.h"
#include "common/intern.h"
#include "common/limits.h"
#include "tests/support/selector-cases.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Label sets the selectors are matched against, by index. */
static const char *const label_sets[][8] = {
    {NULL},                                        /* 0: no labels */
    {"app", "db", NULL},                           /* 1 */
    {"app", "web", "tier", "front", NULL},         /* 2 */
    {"app", "db", "tier", "", NULL},               /* 3: empty value */
    {"example.com/zone", "a", "n", "5", NULL},     /* 4: prefixed key, numeric value */
    {"n", "-3", "app", "db", "env", "prod", NULL}, /* 5 */
    {"n", "x", NULL},                              /* 6: non-numeric */
};
#define NSETS (sizeof(label_sets) / sizeof(label_sets[0]))

static int cmp_label(const void *a, const void *b)
{
	const struct kube_label *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

static size_t labels_of(struct ng_intern *pool, size_t set, struct kube_label *out)
{
	size_t n = 0;
	for (size_t i = 0; label_sets[set][i]; i += 2, n++) {
		assert_int_equal(ng_intern_add(pool, label_sets[set][i], strlen(label_sets[set][i]),
					       &out[n].key),
				 NG_OK);
		assert_int_equal(ng_intern_add(pool, label_sets[set][i + 1],
					       strlen(label_sets[set][i + 1]), &out[n].val),
				 NG_OK);
	}
	/* cppcheck-suppress uninitvar ; the loop above filled out[0..n) */
	qsort(out, n, sizeof(*out), cmp_label);
	return n;
}

/* Each selector and, per label set, whether it matches ('1') or not ('0'). */
static const struct {
	const char *sel;
	const char *expect; /* one char per label set */
} match_cases[] = {
    {"", "1111111"},       /* empty selector: everything */
    {"app=db", "0101010"}, /* = needs the key */
    {"app==db", "0101010"},
    {"app!=db", "1010101"}, /* != holds when the key is absent */
    {"app in (db,web)", "0111010"},
    {"app notin (db)", "1010101"}, /* notin holds when the key is absent */
    {"app notin (db,web)", "1000101"},
    {"app", "0111010"},        /* exists */
    {"!app", "1000101"},       /* does not exist */
    {"tier=", "0001000"},      /* empty value is a value */
    {"tier in ()", "0001000"}, /* () is the empty string */
    {"tier in (,front)", "0011000"},
    {"tier notin (,front)", "1100111"},
    {"app=db,tier", "0001000"}, /* comma is AND */
    {"app=db,!tier", "0100010"},
    {"example.com/zone=a", "0000100"},
    {"n>4", "0000100"},
    {"n<0", "0000010"},
    {"n<6", "0000110"},
    {"n<100", "0000110"},             /* non-numeric value never matches */
    {" app = db , tier ", "0001000"}, /* whitespace is a delimiter */
    {"app in(db)", "0101010"},
    {"app=db,env in (prod,dev),n<0", "0000010"},
};

static void test_string_selector_matching_table(void **state)
{
	for (size_t c = 0; c < sizeof(match_cases) / sizeof(match_cases[0]); c++) {
		struct ng_intern *pool = ng_intern_create();
		struct ng_arena *arena = ng_arena_create(1u << 20);
		struct kube_selector sel;
		struct ng_err err = {0};
		ng_status st = bud_selector_parse(match_cases[c].sel, strlen(match_cases[c].sel),
						  pool, arena, &sel, &err);
		if (st != NG_OK)
			fail_msg("\"%s\" does not parse: %s", match_cases[c].sel, err.msg);
		for (size_t set = 0; set < NSETS; set++) {
			struct kube_label labels[8];
			size_t n = labels_of(pool, set, labels);
			bool want = match_cases[c].expect[set] == '1';
			if (bud_selector_matches(&sel, labels, n, pool) != want)
				fail_msg("\"%s\" on label set %zu: expected %s", match_cases[c].sel,
					 set, want ? "match" : "no match");
		}
		ng_arena_destroy(arena);
		ng_intern_destroy(pool);
	}
}

static void test_null_selector_matches_nothing(void **state)
{
	struct kube_selector null_sel = {.present = false};
	struct kube_selector empty = {.present = true};
	struct kube_label l = {1, 2};
	assert_false(bud_selector_matches(&null_sel, &l, 1, NULL));
	assert_false(bud_selector_matches(&null_sel, NULL, 0, NULL));
	assert_true(bud_selector_matches(&empty, NULL, 0, NULL));
	assert_true(bud_selector_matches(&empty, &l, 1, NULL));
}

static const struct {
	const char *sel;
	size_t offset; /* where the error points */
	const char *msg;
} error_cases[] = {
    {"a=b,", 4, "found end of string, expected '!' or a key"},
    {",a", 0, "found ',', expected '!' or a key"},
    {"a b", 2, "found 'b', expected one of"},
    {"a in b", 5, "expected '('"},
    {"a in (b", 7, "found end of string, expected ',' or ')'"},
    {"a in (b c)", 8, "expected ',' or ')'"},
    {"!a=b", 2, "expected ',' or end of string"},
    {"!", 1, "expected a key after '!'"},
    {"a=b=c", 3, "expected ',' or end of string"},
    {"a>x", 2, "invalid value 'x': the value of > and < must be an integer"},
    {"a>-1", 2, "invalid value '-1': a valid label must be an empty string or consist of"},
    {"a<", 2, "invalid value '': the value of > and < must be an integer"},
    {"bad key=1", 4, "found 'key'"},
    {"-a=b", 0, "invalid key '-a'"},
    {"a=-b", 2, "invalid value '-b'"},
    {"UPPER.example/a=b", 0, "prefix part a lowercase RFC 1123 subdomain must consist of"},
    {"a\f=b", 0, "invalid key 'a\f': name part must consist of alphanumeric characters"},
    {"a/b/c", 0, "a qualified name is a name part with an optional DNS subdomain prefix"},
    {"a=b/c", 2, "invalid value 'b/c': a valid label must be"},
    {"in in", 5, "found end of string, expected '('"},
    {"x="
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     2,
     "invalid value 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...': must be no more than 63 "
     "characters"},
    {"a=(", 2, "expected a value"},
    {"a notin", 7, "expected '('"},
};

static void test_string_selector_errors_point_at_the_problem(void **state)
{
	for (size_t c = 0; c < sizeof(error_cases) / sizeof(error_cases[0]); c++) {
		struct ng_intern *pool = ng_intern_create();
		struct ng_arena *arena = ng_arena_create(1u << 20);
		struct kube_selector sel = {.nreqs = 0xad};
		struct ng_err err = {0};
		ng_status st = bud_selector_parse(error_cases[c].sel, strlen(error_cases[c].sel),
						  pool, arena, &sel, &err);
		if (st != NG_EPARSE)
			fail_msg("\"%s\": expected a parse error, got %s", error_cases[c].sel,
				 ng_status_str(st));
		assert_int_equal(sel.nreqs, 0xad);
		if (!strstr(err.msg, error_cases[c].msg) || err.offset != error_cases[c].offset)
			fail_msg("\"%s\": got \"%s\" at %zu, expected \"%s\" at %zu",
				 error_cases[c].sel, err.msg, err.offset, error_cases[c].msg,
				 error_cases[c].offset);
		ng_arena_destroy(arena);
		ng_intern_destroy(pool);
	}
}

static void test_string_selector_limits(void **state)
{
	struct ng_intern *pool = ng_intern_create();
	struct ng_arena *arena = ng_arena_create(1u << 20);
	char buf[8192];
	size_t off = 0;
	for (int i = 0; i < 65; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%sk%d", i ? "," : "", i);
	struct kube_selector sel;
	struct ng_err err = {0};
	assert_int_equal(bud_selector_parse(buf, off, pool, arena, &sel, &err), NG_ELIMIT);
	assert_non_null(strstr(err.msg, "more than 64 requirements"));
	memset(buf, 'a', sizeof(buf));
	assert_int_equal(bud_selector_parse(buf, sizeof(buf), pool, arena, &sel, &err), NG_ELIMIT);
	/* A 64-requirement selector is fine, and duplicate values collapse into a set. */
	off = 0;
	for (int i = 0; i < 64; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%sk%d", i ? "," : "", i);
	assert_int_equal(bud_selector_parse(buf, off, pool, arena, &sel, &err), NG_OK);
	assert_int_equal(sel.nreqs, 64);
	assert_int_equal(bud_selector_parse("a in (x,x,y)", 12, pool, arena, &sel, &err), NG_OK);
	assert_int_equal(sel.reqs[0].nvalues, 2);
	/* The input need not be NUL-terminated: only len bytes are read. */
	assert_int_equal(bud_selector_parse("a=bXYZ", 3, pool, arena, &sel, &err), NG_OK);
	char out[64];
	bud_selector_format(&sel, pool, out, sizeof(out));
	assert_string_equal(out, "a=b");
	ng_arena_destroy(arena);
	ng_intern_destroy(pool);
}

static void test_format_round_trips(void **state)
{
	const char *in[] = {"a=b,c!=d,e in (x,y),f notin (z),g,!h,n>3,m<2", "a in (,x)",
			    "x=", "in in (in,notin),!notin,notin=in"};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct ng_intern *pool = ng_intern_create();
		struct ng_arena *arena = ng_arena_create(1u << 20);
		struct kube_selector a, b;
		struct ng_err err = {0};
		assert_int_equal(bud_selector_parse(in[i], strlen(in[i]), pool, arena, &a, &err),
				 NG_OK);
		char out[256];
		size_t n = bud_selector_format(&a, pool, out, sizeof(out));
		assert_int_equal(n, strlen(out));
		assert_int_equal(bud_selector_parse(out, n, pool, arena, &b, &err), NG_OK);
		char out2[256];
		bud_selector_format(&b, pool, out2, sizeof(out2));
		assert_string_equal(out, out2);
		assert_int_equal(a.nreqs, b.nreqs);
		ng_arena_destroy(arena);
		ng_intern_destroy(pool);
	}
}

/* ---- against Kubernetes' own cases (tests/support/selector-cases.c) ---- */

static const char *op_name(uint8_t op)
{
	static const char *const names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
	return op < 6 ? names[op] : "?";
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* @sel in the canonical form of tests/support/selector-cases.h. Keys hold only bytes above
 * ' ', so sorting whole "key Op ..." strings sorts by key first. */
static void canonical(const struct kube_selector *sel, const struct ng_intern *pool, char *out,
		      size_t cap)
{
	char *reqs[NG_MAX_SELECTOR_TERMS] = {0};
	for (uint16_t i = 0; i < sel->nreqs; i++) {
		const struct kube_requirement *r = &sel->reqs[i];
		char *s = malloc(1024);
		assert_non_null(s);
		size_t n = (size_t)snprintf(s, 1024, "%s %s", ng_intern_str(pool, r->key, NULL),
					    op_name(r->op));
		if (r->op == KUBE_OP_GT || r->op == KUBE_OP_LT)
			(void)snprintf(s + n, 1024 - n, " %lld", (long long)r->num);
		if (r->op == KUBE_OP_IN || r->op == KUBE_OP_NOTIN) {
			const char *vals[NG_MAX_SELECTOR_VALUES] = {0};
			for (uint16_t k = 0; k < r->nvalues; k++)
				vals[k] = ng_intern_str(pool, r->values[k], NULL);
			qsort(vals, r->nvalues, sizeof(vals[0]), cmp_str);
			n += (size_t)snprintf(s + n, 1024 - n, " (");
			for (uint16_t k = 0; k < r->nvalues; k++)
				n += (size_t)snprintf(s + n, 1024 - n, "%s%s", k ? "," : "",
						      vals[k]);
			(void)snprintf(s + n, 1024 - n, ")");
		}
		reqs[i] = s;
	}
	qsort(reqs, sel->nreqs, sizeof(reqs[0]), cmp_str);
	size_t at = 0;
	out[0] = '\0';
	for (uint16_t i = 0; i < sel->nreqs; i++) {
		at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? "; " : "", reqs[i]);
		free(reqs[i]);
	}
}

/* Every string of apimachinery's label tests: accepted with the same requirements, or refused
 * (without touching the output). */
static void test_kubernetes_parse_cases(void **state)
{
	for (size_t c = 0; c < ng_nselector_cases; c++) {
		const struct ng_selector_case *k = &ng_selector_cases[c];
		struct ng_intern *pool = ng_intern_create();
		struct ng_arena *arena = ng_arena_create(1u << 20);
		struct kube_selector sel = {.nreqs = 0xad};
		struct ng_err err = {0};
		ng_status st =
		    bud_selector_parse(k->text, strlen(k->text), pool, arena, &sel, &err);
		if (!k->parsed && st != NG_EPARSE)
			fail_msg("\"%s\" (%s): Kubernetes refuses it, got %s", k->text, k->from,
				 ng_status_str(st));
		if (!k->parsed) {
			assert_int_equal(sel.nreqs, 0xad);
			assert_true(err.offset <= strlen(k->text) && err.msg[0] != '\0');
		} else if (st != NG_OK) {
			fail_msg("\"%s\" (%s): Kubernetes accepts it, got %s: %s", k->text, k->from,
				 ng_status_str(st), err.msg);
		} else {
			char got[8192];
			canonical(&sel, pool, got, sizeof(got));
			assert_true(sel.present);
			if (strcmp(got, k->parsed) != 0)
				fail_msg("\"%s\" (%s): got \"%s\", Kubernetes reads \"%s\"",
					 k->text, k->from, got, k->parsed);
		}
		ng_arena_destroy(arena);
		ng_intern_destroy(pool);
	}
}

/* "k=v,k2=v2" into @out (sorted by key id), interned into @pool. */
static size_t labels_from_text(struct ng_intern *pool, const char *text, struct kube_label *out,
			       size_t cap)
{
	size_t n = 0;
	for (const char *p = text; *p && n < cap; n++) {
		const char *eq = strchr(p, '=');
		assert_non_null(eq);
		const char *end = strchr(eq, ',');
		if (!end)
			end = eq + strlen(eq);
		assert_int_equal(ng_intern_add(pool, p, (size_t)(eq - p), &out[n].key), NG_OK);
		assert_int_equal(ng_intern_add(pool, eq + 1, (size_t)(end - eq - 1), &out[n].val),
				 NG_OK);
		p = *end ? end + 1 : end;
	}
	/* cppcheck-suppress uninitvar ; the loop above filled out[0..n) */
	qsort(out, n, sizeof(*out), cmp_label);
	return n;
}

static void test_kubernetes_match_cases(void **state)
{
	for (size_t c = 0; c < ng_nselector_match_cases; c++) {
		const struct ng_selector_match_case *k = &ng_selector_match_cases[c];
		struct ng_intern *pool = ng_intern_create();
		struct ng_arena *arena = ng_arena_create(1u << 20);
		struct kube_selector sel;
		struct ng_err err = {0};
		if (bud_selector_parse(k->text, strlen(k->text), pool, arena, &sel, &err) != NG_OK)
			fail_msg("\"%s\" (%s) does not parse: %s", k->text, k->from, err.msg);
		struct kube_label labels[8];
		size_t n = labels_from_text(pool, k->labels, labels, 8);
		if (bud_selector_matches(&sel, labels, n, pool) != k->match)
			fail_msg("\"%s\" on {%s} (%s): Kubernetes says %s", k->text, k->labels,
				 k->from, k->match ? "match" : "no match");
		ng_arena_destroy(arena);
		ng_intern_destroy(pool);
	}
}

static const char *tok_name(enum bud_tok t)
{
	static const char *const names[] = {"EOF",   "IDENT", "!", "=", "==", "!=", "in",
					    "notin", "(",     ")", ",", ">",  "<"};
	return (size_t)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

/* TestLexer, TestLexerSequence and TestParserLookahead (tokens where an operator may stand: "in"
 * and "notin" are operators), and the value context where they are identifiers. */
static void test_kubernetes_lexer_cases(void **state)
{
	static const struct {
		const char *text;
		bool values;
		const char *tokens; /* space-separated, the final EOF included */
	} cases[] = {
	    /* TestLexer */
	    {"", false, "EOF"},
	    {",", false, ", EOF"},
	    {"notin", false, "notin EOF"},
	    {"in", false, "in EOF"},
	    {"=", false, "= EOF"},
	    {"==", false, "== EOF"},
	    {">", false, "> EOF"},
	    {"<", false, "< EOF"},
	    {"!", false, "! EOF"},
	    {"!=", false, "!= EOF"},
	    {"(", false, "( EOF"},
	    {")", false, ") EOF"},
	    {"~", false, "IDENT EOF"},
	    {"||", false, "IDENT EOF"},
	    /* TestLexerSequence, TestParserLookahead */
	    {"key in ( value )", false, "IDENT in ( IDENT ) EOF"},
	    {"key notin ( value )", false, "IDENT notin ( IDENT ) EOF"},
	    {"key in ( value1, value2 )", false, "IDENT in ( IDENT , IDENT ) EOF"},
	    {"key", false, "IDENT EOF"},
	    {"!key", false, "! IDENT EOF"},
	    {"()", false, "( ) EOF"},
	    {"x in (),y", false, "IDENT in ( ) , IDENT EOF"},
	    {"== != (), = notin", false, "== != ( ) , = notin EOF"},
	    {"key>2", false, "IDENT > IDENT EOF"},
	    {"key<1", false, "IDENT < IDENT EOF"},
	    {"key gt 3", false, "IDENT IDENT IDENT EOF"},
	    /* the value context; the longest symbol; whitespace */
	    {"in notin", true, "IDENT IDENT EOF"},
	    {"!==", false, "!= = EOF"},
	    {"=!=", false, "= != EOF"},
	    {"a>=b", false, "IDENT > = IDENT EOF"},
	    {"===", false, "== = EOF"},
	    {"inx notinx", false, "IDENT IDENT EOF"},
	    {" \t\r\n", false, "EOF"},
	    {"a\fb\v", false, "IDENT EOF"},
	    {"\f \v", false, "IDENT IDENT EOF"},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		enum bud_tok toks[32];
		size_t n = bud_selector_lex(cases[c].text, strlen(cases[c].text), cases[c].values,
					    toks, 32);
		char got[256];
		size_t at = 0;
		got[0] = '\0';
		for (size_t i = 0; i < n && i < 32; i++)
			at += (size_t)snprintf(got + at, sizeof(got) - at, "%s%s", i ? " " : "",
					       tok_name(toks[i]));
		if (strcmp(got, cases[c].tokens) != 0)
			fail_msg("\"%s\": got %s, expected %s", cases[c].text, got,
				 cases[c].tokens);
	}
	/* The count is the whole count even when @out is short. */
	enum bud_tok one;
	assert_int_equal(bud_selector_lex("a=b", 3, false, &one, 1), 4);
	assert_int_equal(one, BUD_TOK_IDENT);
}

/* Kubernetes' lexer stops at a NUL and then reads on past it; nodegate refuses one instead. */
static void test_nul_byte_is_refused(void **state)
{
	static const struct {
		const char *text;
		size_t len, at;
	} cases[] = {{"a=b\0", 4, 3}, {"\0", 1, 0}, {" \0a", 3, 1}, {"a=b\0,c", 6, 3}};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct ng_intern *pool = ng_intern_create();
		struct ng_arena *arena = ng_arena_create(1u << 20);
		struct kube_selector sel = {.nreqs = 0xad};
		struct ng_err err = {0};
		assert_int_equal(
		    bud_selector_parse(cases[c].text, cases[c].len, pool, arena, &sel, &err),
		    NG_EPARSE);
		assert_int_equal(err.offset, cases[c].at);
		assert_non_null(strstr(err.msg, "a NUL byte cannot be part of a label selector"));
		assert_int_equal(sel.nreqs, 0xad);
		ng_arena_destroy(arena);
		ng_intern_destroy(pool);
	}
}

/* Node affinity: PVs in a snapshot, matched against its nodes. */
#define NODE(n, extra)                                                                             \
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" n "\",\"labels\":{"   \
	"\"kubernetes.io/hostname\":\"" n "\"" extra "}}}"
#define PV(n, terms)                                                                               \
	"{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"" n         \
	"\"},\"spec\":{\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":" terms "}}}}"
#define EXPR(k, op, vals) "{\"key\":\"" k "\",\"operator\":\"" op "\",\"values\":" vals "}"

static const struct {
	const char *pv;
	const char *expect; /* node1..node4 */
} affinity_cases[] = {
    {"in", "1000"},
    {"or-terms", "1100"},
    {"and-exprs", "0010"},
    {"notin-absent", "1101"},
    {"gt", "0011"},
    {"lt", "1100"},
    {"gt-bad-value", "0000"},
    {"fields-in", "0100"},
    {"fields-notin-and-label", "0010"},
    {"fields-wrong-key", "0000"},
    {"empty-term", "0000"},
    {"empty-term-or-valid", "0001"},
    {"bad-op-term-or-valid", "1000"},
    {"no-terms", "0000"},
    {"exists", "0011"},
    {"dne", "1100"},
};

/* A fixture literal, laid out by hand: one PersistentVolume a line. */
/* clang-format off */
static const char affinity_fixture[] =
    "{\"kind\":\"List\",\"items\":["
    NODE("node1", ",\"gen\":\"1\"") ","
    NODE("node2", ",\"gen\":\"2\"") ","
    NODE("node3", ",\"gen\":\"5\",\"zone\":\"a\",\"ssd\":\"y\"") ","
    NODE("node4", ",\"gen\":\"9\",\"zone\":\"b\",\"ssd\":\"n\"") ","
    PV("in", "[{\"matchExpressions\":[" EXPR("kubernetes.io/hostname", "In", "[\"node1\"]") "]}]") ","
    PV("or-terms", "[{\"matchExpressions\":[" EXPR("kubernetes.io/hostname", "In", "[\"node1\"]") "]},"
		   "{\"matchExpressions\":[" EXPR("kubernetes.io/hostname", "In", "[\"node2\"]") "]}]") ","
    PV("and-exprs", "[{\"matchExpressions\":[" EXPR("zone", "In", "[\"a\",\"b\"]") ","
		    EXPR("ssd", "In", "[\"y\"]") "]}]") ","
    PV("notin-absent", "[{\"matchExpressions\":[" EXPR("zone", "NotIn", "[\"a\"]") "]}]") ","
    PV("gt", "[{\"matchExpressions\":[" EXPR("gen", "Gt", "[\"4\"]") "]}]") ","
    PV("lt", "[{\"matchExpressions\":[" EXPR("gen", "Lt", "[\"5\"]") "]}]") ","
    PV("gt-bad-value", "[{\"matchExpressions\":[" EXPR("gen", "Gt", "[\"x\"]") "]}]") ","
    PV("fields-in", "[{\"matchFields\":[" EXPR("metadata.name", "In", "[\"node2\"]") "]}]") ","
    PV("fields-notin-and-label", "[{\"matchFields\":[" EXPR("metadata.name", "NotIn", "[\"node4\"]") "],"
				 "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"}]}]") ","
    PV("fields-wrong-key", "[{\"matchFields\":[" EXPR("metadata.uid", "In", "[\"node2\"]") "]}]") ","
    PV("empty-term", "[{}]") ","
    PV("empty-term-or-valid", "[{},{\"matchExpressions\":[" EXPR("zone", "In", "[\"b\"]") "]}]") ","
    PV("bad-op-term-or-valid", "[{\"matchExpressions\":[" EXPR("zone", "Near", "[\"b\"]") "]},"
			       "{\"matchFields\":[" EXPR("metadata.name", "In", "[\"node1\"]") "]}]") ","
    PV("no-terms", "[]") ","
    PV("exists", "[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"}]}]") ","
    PV("dne", "[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"DoesNotExist\"}]}]") ","
    "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"nfs\"},"
    "\"spec\":{}}"
    "]}";
/* clang-format on */

static void test_node_affinity_table(void **state)
{
	struct kube_snapshot *s = ng_test_snapshot(affinity_fixture);
	static const char *const nodes[] = {"node1", "node2", "node3", "node4"};
	for (size_t c = 0; c < sizeof(affinity_cases) / sizeof(affinity_cases[0]); c++) {
		const struct kube_pv *pv =
		    kube_snapshot_find_pv(s, ng_test_id(s, affinity_cases[c].pv));
		assert_non_null(pv);
		for (size_t k = 0; k < 4; k++) {
			const struct kube_node *n =
			    kube_snapshot_find_node(s, ng_test_id(s, nodes[k]));
			bool want = affinity_cases[c].expect[k] == '1';
			if (bud_pv_pins_node(s, pv, n) != want)
				fail_msg("PV %s on %s: expected %s", affinity_cases[c].pv, nodes[k],
					 want ? "pinned" : "not pinned");
		}
	}
	/* A PV without node affinity pins nothing. */
	const struct kube_pv *nfs = kube_snapshot_find_pv(s, ng_test_id(s, "nfs"));
	assert_false(nfs->affinity.present);
	assert_false(bud_pv_pins_node(s, nfs, kube_snapshot_find_node(s, ng_test_id(s, "node1"))));
	kube_snapshot_release(s);
}

/* Node affinity against Kubernetes' own tables, restated from kubernetes/kubernetes
 * staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go:
 * TestNodeSelectorMatch (4 of 5 cases: "nil node" has no counterpart, a PV is matched against
 * a node), TestNodeSelectorRequirementsAsSelector (6 cases) and
 * TestPodMatchesNodeSelectorAndAffinityTerms (18 of its 27 cases: the other 9 are about a pod's
 * spec.nodeSelector or a pod without required affinity, which a PersistentVolume has no
 * counterpart of; a PV without affinity pins nothing).
 *
 * A PV is matched as the volume binder matches it (component-helpers' MatchNodeSelectorTerms,
 * the lazy-error node selector): a term that does not parse (unknown operator, wrong value
 * count, Gt/Lt on a non-integer, an invalid label key or value, a field other than
 * metadata.name) matches no node, and the other terms still count. TestNodeSelectorMatch's
 * "invalid field selector and label selector" is refused whole by the strict NewNodeSelector;
 * here its two invalid terms are marked invalid and its valid one still matches. @invalid is a
 * bit per term that must decode as invalid. */
static const struct affinity_upstream_case {
	const char *name;
	const char *terms;  /* the nodeSelectorTerms JSON value */
	const char *node;   /* metadata.name */
	const char *labels; /* metadata.labels members */
	unsigned invalid;
	bool pinned;
} affinity_upstream[] = {
    /* TestNodeSelectorMatch */
    {"invalid field selector and label selector (node without the label)",
     "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"host_1\","
     "\"host_2\"]}]},{\"matchExpressions\":[{\"key\":\"label_1\",\"operator\":\"In\",\"values\":"
     "[\"label_1_val\"]}],\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
     "\"values\":[\"host_1\"]}]},{\"matchExpressions\":[{\"key\":\"invalid key\",\"operator\":"
     "\"In\",\"values\":[\"label_value\"]}]}]",
     "host_1", "", 5, false},
    {"invalid field selector and label selector (node with the label)",
     "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"host_1\","
     "\"host_2\"]}]},{\"matchExpressions\":[{\"key\":\"label_1\",\"operator\":\"In\",\"values\":"
     "[\"label_1_val\"]}],\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
     "\"values\":[\"host_1\"]}]},{\"matchExpressions\":[{\"key\":\"invalid key\",\"operator\":"
     "\"In\",\"values\":[\"label_value\"]}]}]",
     "host_1", "\"label_1\":\"label_1_val\"", 5, true},
    {"node matches field selector, but not labels",
     "[{\"matchExpressions\":[{\"key\":\"label_1\",\"operator\":\"In\",\"values\":"
     "[\"label_1_val\"]}],\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
     "\"values\":[\"host_1\"]}]}]",
     "host_1", "", 0, false},
    {"node matches field selector and label selector",
     "[{\"matchExpressions\":[{\"key\":\"label_1\",\"operator\":\"In\",\"values\":"
     "[\"label_1_val\"]}],\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
     "\"values\":[\"host_1\"]}]}]",
     "host_1", "\"label_1\":\"label_1_val\"", 0, true},
    {"second term matches",
     "[{\"matchExpressions\":[{\"key\":\"label_1\",\"operator\":\"In\",\"values\":"
     "[\"label_1_val\"]}]},{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
     "\"values\":[\"host_1\"]}]}]",
     "host_1", "", 0, true},
    /* TestNodeSelectorRequirementsAsSelector (no requirements selects nothing) */
    {"requirements nil", "[{\"matchExpressions\":null}]", "n1", "\"foo\":\"bar\"", 0, false},
    {"requirements empty", "[{\"matchExpressions\":[]}]", "n1", "\"foo\":\"bar\"", 0, false},
    {"foo in (baz,bar)",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"In\",\"values\":[\"bar\","
     "\"baz\"]}]}]",
     "n1", "\"foo\":\"baz\"", 0, true},
    {"Exists with values is an error",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"Exists\",\"values\":[\"bar\","
     "\"baz\"]}]}]",
     "n1", "\"foo\":\"bar\"", 1, false},
    {"foo>1", "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}]",
     "n1", "\"foo\":\"2\"", 0, true},
    {"bar<7", "[{\"matchExpressions\":[{\"key\":\"bar\",\"operator\":\"Lt\",\"values\":[\"7\"]}]}]",
     "n1", "\"bar\":\"7\"", 0, false},
    /* TestPodMatchesNodeSelectorAndAffinityTerms */
    {"In operator that matches the existing node",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"In\",\"values\":[\"bar\","
     "\"value2\"]}]}]",
     "n1", "\"foo\":\"bar\"", 0, true},
    {"Gt operator that matches the existing node",
     "[{\"matchExpressions\":[{\"key\":\"kernel-version\",\"operator\":\"Gt\",\"values\":"
     "[\"0204\"]}]}]",
     "n1", "\"kernel-version\":\"0206\"", 0, true},
    {"NotIn operator that matches the existing node",
     "[{\"matchExpressions\":[{\"key\":\"mem-type\",\"operator\":\"NotIn\",\"values\":[\"DDR\","
     "\"DDR2\"]}]}]",
     "n1", "\"mem-type\":\"DDR3\"", 0, true},
    {"Exists operator that matches the existing node",
     "[{\"matchExpressions\":[{\"key\":\"GPU\",\"operator\":\"Exists\"}]}]", "n1",
     "\"GPU\":\"NVIDIA-GRID-K1\"", 0, true},
    {"affinity that doesn't match node's labels",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"In\",\"values\":[\"value1\","
     "\"value2\"]}]}]",
     "n1", "\"foo\":\"bar\"", 0, false},
    {"nil []NodeSelectorTerm", "null", "n1", "\"foo\":\"bar\"", 0, false},
    {"empty []NodeSelectorTerm", "[]", "n1", "\"foo\":\"bar\"", 0, false},
    {"empty MatchExpressions", "[{\"matchExpressions\":[]}]", "n1", "\"foo\":\"bar\"", 0, false},
    {"multiple matchExpressions ANDed that matches",
     "[{\"matchExpressions\":[{\"key\":\"GPU\",\"operator\":\"Exists\"},{\"key\":\"GPU\","
     "\"operator\":\"NotIn\",\"values\":[\"AMD\",\"INTER\"]}]}]",
     "n1", "\"GPU\":\"NVIDIA-GRID-K1\"", 0, true},
    {"multiple matchExpressions ANDed that doesn't match",
     "[{\"matchExpressions\":[{\"key\":\"GPU\",\"operator\":\"Exists\"},{\"key\":\"GPU\","
     "\"operator\":\"In\",\"values\":[\"AMD\",\"INTER\"]}]}]",
     "n1", "\"GPU\":\"NVIDIA-GRID-K1\"", 0, false},
    {"multiple NodeSelectorTerms ORed",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"In\",\"values\":[\"bar\","
     "\"value2\"]}]},{\"matchExpressions\":[{\"key\":\"diffkey\",\"operator\":\"In\",\"values\":"
     "[\"wrong\",\"value2\"]}]}]",
     "n1", "\"foo\":\"bar\"", 0, true},
    {"invalid value in Affinity term",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"NotIn\",\"values\":[\"invalid "
     "value: ___@#$%^\"]}]}]",
     "n1", "\"foo\":\"bar\"", 1, false},
    {"matchFields In that matches the existing node",
     "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
     "[\"node_1\"]}]}]",
     "node_1", "", 0, true},
    {"matchFields In that does not match the existing node",
     "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
     "[\"node_1\"]}]}]",
     "node_2", "", 0, false},
    {"two terms: matchFields does not match, but matchExpressions matches",
     "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
     "[\"node_1\"]}]},{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"In\",\"values\":"
     "[\"bar\"]}]}]",
     "node_2", "\"foo\":\"bar\"", 0, true},
    {"one term: matchFields does not match, but matchExpressions matches",
     "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
     "[\"node_1\"]}],\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"In\",\"values\":"
     "[\"bar\"]}]}]",
     "node_2", "\"foo\":\"bar\"", 0, false},
    {"one term: both matchFields and matchExpressions match",
     "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
     "[\"node_1\"]}],\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"In\",\"values\":"
     "[\"bar\"]}]}]",
     "node_1", "\"foo\":\"bar\"", 0, true},
    {"two terms: both matchFields and matchExpressions do not match",
     "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
     "[\"node_1\"]}]},{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"In\",\"values\":"
     "[\"not-match-to-bar\"]}]}]",
     "node_2", "\"foo\":\"bar\"", 0, false},
    /* nodegate's own: what the same parser refuses, each term alone (pins nothing). */
    {"unknown operator",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"Near\","
     "\"values\":[\"bar\"]}]}]",
     "n1", "\"foo\":\"bar\"", 1, false},
    {"Gt on a non-integer",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"Gt\","
     "\"values\":[\"one\"]}]}]",
     "n1", "\"foo\":\"2\"", 1, false},
    {"Gt with two values",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"Gt\","
     "\"values\":[\"1\",\"2\"]}]}]",
     "n1", "\"foo\":\"3\"", 1, false},
    /* "-1" parses as an integer but is no label value */
    {"Gt on a negative number",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"Gt\","
     "\"values\":[\"-1\"]}]}]",
     "n1", "\"foo\":\"3\"", 1, false},
    {"In without values",
     "[{\"matchExpressions\":[{\"key\":\"foo\",\"operator\":\"In\","
     "\"values\":[]}]}]",
     "n1", "\"foo\":\"bar\"", 1, false},
    {"invalid key prefix",
     "[{\"matchExpressions\":[{\"key\":\"-x/foo\",\"operator\":"
     "\"Exists\"}]}]",
     "n1", "\"foo\":\"bar\"", 1, false},
    {"matchFields on another field",
     "[{\"matchFields\":[{\"key\":\"metadata.uid\","
     "\"operator\":\"NotIn\",\"values\":[\"x\"]}]}]",
     "n1", "", 1, false},
    {"matchFields with Exists",
     "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
     "\"Exists\"}]}]",
     "n1", "", 1, false},
    {"matchFields NotIn",
     "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\","
     "\"values\":[\"n2\"]}]}]",
     "n1", "", 0, true},
};

static void test_node_affinity_agrees_with_nodeaffinity(void **state)
{
	(void)state;
	char json[4096];
	for (size_t c = 0; c < sizeof(affinity_upstream) / sizeof(affinity_upstream[0]); c++) {
		const struct affinity_upstream_case *k = &affinity_upstream[c];
		int n =
		    snprintf(json, sizeof(json),
			     "{\"kind\":\"List\",\"items\":[{\"apiVersion\":\"v1\",\"kind\":"
			     "\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{%s}}},"
			     "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":"
			     "{\"name\":\"pv\"},\"spec\":{\"nodeAffinity\":{\"required\":{"
			     "\"nodeSelectorTerms\":%s}}}}]}",
			     k->node, k->labels, k->terms);
		assert_true(n > 0 && (size_t)n < sizeof(json));
		struct kube_snapshot *s = ng_test_snapshot(json);
		const struct kube_pv *pv = kube_snapshot_find_pv(s, ng_test_id(s, "pv"));
		const struct kube_node *node = kube_snapshot_find_node(s, ng_test_id(s, k->node));
		assert_non_null(pv);
		assert_non_null(node);
		unsigned invalid = 0;
		for (uint16_t t = 0; t < pv->affinity.nterms && t < 8; t++)
			invalid |= pv->affinity.terms[t].invalid ? 1u << t : 0;
		if (invalid != k->invalid)
			fail_msg("%s: invalid terms %#x, want %#x", k->name, invalid, k->invalid);
		if (bud_pv_pins_node(s, pv, node) != k->pinned)
			fail_msg("%s: %s", k->name, k->pinned ? "not pinned" : "pinned");
		kube_snapshot_release(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_string_selector_matching_table),
	    cmocka_unit_test(test_null_selector_matches_nothing),
	    cmocka_unit_test(test_string_selector_errors_point_at_the_problem),
	    cmocka_unit_test(test_string_selector_limits),
	    cmocka_unit_test(test_format_round_trips),
	    cmocka_unit_test(test_kubernetes_parse_cases),
	    cmocka_unit_test(test_kubernetes_match_cases),
	    cmocka_unit_test(test_kubernetes_lexer_cases),
	    cmocka_unit_test(test_nul_byte_is_refused),
	    cmocka_unit_test(test_node_affinity_table),
	    cmocka_unit_test(test_node_affinity_agrees_with_nodeaffinity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
