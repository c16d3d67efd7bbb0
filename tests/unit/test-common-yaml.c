/* common/yaml: YAML as kubectl reads it, converted to JSON (check --nd, --snapshot files), and
 * the refusals it shares with the kubeconfig reader. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/file.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/yaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Converts @yaml; returns the status and leaves the JSON (or "") in @out (4 KiB). */
static ng_status convert(const char *yaml, char *out, struct ng_err *err)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	ng_status st = ng_yaml_to_json(yaml, strlen(yaml), "test", &b, err);
	(void)snprintf(out, 4096, "%s", b.len ? b.data : "");
	ng_buf_finish(&b);
	return st;
}

static void test_kubectl_yaml_becomes_the_json_kubectl_sends(void **state)
{
	static const struct {
		const char *yaml, *json;
	} cases[] = {
	    /* Block and flow collections, comments, an explicit document start. */
	    {"# c\n---\na: 1\nb:\n  - x\n  - {c: d}\n", "{\"a\":1,\"b\":[\"x\",{\"c\":\"d\"}]}"},
	    {"[a, 'b', \"c\"]", "[\"a\",\"b\",\"c\"]"},
	    {"{}", "{}"},
	    {"a: []\nb: {}\n", "{\"a\":[],\"b\":{}}"},
	    /* YAML 1.1 nulls and booleans, as go-yaml v2 under sigs.k8s.io/yaml resolves them. */
	    {"[~, null, Null, NULL, ]", "[null,null,null,null]"},
	    {"a:\nb: ~\n", "{\"a\":null,\"b\":null}"},
	    {"[true, True, TRUE, yes, Yes, on, ON, y, Y]",
	     "[true,true,true,true,true,true,true,true,true]"},
	    {"[false, FALSE, no, NO, off, Off, n, N]",
	     "[false,false,false,false,false,false,false,false]"},
	    /* Integers: decimal, signs, '_', hex, octal (0o and a leading 0: defaultMode: 0644),
	     * binary; the largest of each sign. */
	    {"[0, -0, +7, 1_000, 0x1F, -0x10, 0o17, 0644, 0b101, -0b11]",
	     "[0,0,7,1000,31,-16,15,420,5,-3]"},
	    {"[9223372036854775807, -9223372036854775808, 18446744073709551615]",
	     "[9223372036854775807,-9223372036854775808,18446744073709551615]"},
	    /* Floats, written as JSON numbers. */
	    {"[1.5, -2.0, .5, 1., +3e2, 1E-3, 012.50, 089]", "[1.5,-2.0,0.5,1,3e2,1E-3,12.50,89]"},
	    /* Not numbers: strings, as kubectl leaves them. */
	    {"- 1.2.3\n- 0x\n- 0xZZ\n- 1e\n- +\n- .\n- 12:30\n- v1\n- _1\n- \"1\"\n- '2'\n- 1_\n",
	     "[\"1.2.3\",\"0x\",\"0xZZ\",\"1e\",\"+\",\".\",\"12:30\",\"v1\",\"_1\",\"1\",\"2\","
	     "1]"},
	    /* Quoted and !!str stay strings; !!int and the like resolve; "!" is a string. */
	    {"[\"true\", 'null', !!str 1, !!int \"12\", !!float '1', !!bool \"yes\", !!null '', ! "
	     "5]",
	     "[\"true\",\"null\",\"1\",12,1,true,null,\"5\"]"},
	    /* Keys are strings as written. */
	    {"1: a\ntrue: b\nnull: c\n", "{\"1\":\"a\",\"true\":\"b\",\"null\":\"c\"}"},
	    /* Block scalars, escapes, UTF-8. */
	    {"a: |\n  x\n  y\nb: >\n  p\n  q\nc: \"t\\tq\\\"\\u00e9\"\nd: caf\xc3\xa9\n",
	     "{\"a\":\"x\\ny\\n\",\"b\":\"p "
	     "q\\n\",\"c\":\"t\\tq\\\"\xc3\xa9\",\"d\":\"caf\xc3\xa9\"}"},
	    /* An anchor alone expands nothing and is fine; empty documents are skipped. */
	    {"a: &x 1\n", "{\"a\":1}"},
	    {"a: 1\n---\n", "{\"a\":1}"},
	    {"---\n---\na: 1\n...\n", "{\"a\":1}"},
	    /* A lone scalar document. */
	    {"hello", "\"hello\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[4096];
		struct ng_err err = {0};
		ng_status st = convert(cases[i].yaml, out, &err);
		if (st != NG_OK || strcmp(out, cases[i].json) != 0)
			fail_msg("%s\ngot %s %s (%s)\nwant %s", cases[i].yaml, ng_status_str(st),
				 out, err.msg, cases[i].json);
		/* What it writes is JSON nodegate's own parser accepts. */
		cJSON *root = NULL;
		assert_int_equal(ng_json_parse(out, strlen(out), NULL, &root, NULL), NG_OK);
		cJSON_Delete(root);
	}
}

static void test_what_json_cannot_hold_or_we_refuse_is_refused_with_the_line(void **state)
{
	static const struct {
		const char *yaml;
		ng_status st;
		const char *msg;
	} cases[] = {
	    {"a: &x [1]\nb: *x\n", NG_EPARSE, "test: line 2: YAML aliases are not supported"},
	    {"a: 1\n---\nb: 2\n", NG_EPARSE, "test: line 3: more than one YAML document"},
	    {"a: 1\n<<: {b: 2}\n", NG_EPARSE, "test: line 2: merge keys (<<) are not supported"},
	    {"? [a]\n: 1\n", NG_EPARSE, "test: line 1: a mapping key must be a string"},
	    {"a: .inf\n", NG_EPARSE, "test: line 1: .inf has no JSON form"},
	    {"[-.INF]", NG_EPARSE, "-.INF has no JSON form"},
	    {"a: .nan\n", NG_EPARSE, ".nan has no JSON form"},
	    {"a: !!binary aGk=\n", NG_EPARSE, "tag tag:yaml.org,2002:binary is not supported"},
	    {"a: !custom x\n", NG_EPARSE, "tag !custom is not supported"},
	    {"a: !custom {b: 1}\n", NG_EPARSE, "tag !custom is not supported"},
	    {"a: !!int x\n", NG_EPARSE, "\"x\" does not match its tag"},
	    {"a: \"x\\0y\"\n", NG_EPARSE, "test: line 1: a NUL character"},
	    {"a: [1\n", NG_EPARSE, "test: line 2 column 1:"},
	    {"a: b: c\n", NG_EPARSE, "test: line 1 column 5: mapping values are not allowed"},
	    {"", NG_EPARSE, "test: no YAML or JSON document"},
	    {"# only a comment\n", NG_EPARSE, "no YAML or JSON document"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[4096];
		struct ng_err err = {0};
		ng_status st = convert(cases[i].yaml, out, &err);
		if (st != cases[i].st || !strstr(err.msg, cases[i].msg))
			fail_msg("%s\ngot %s \"%s\", want %s \"%s\"", cases[i].yaml,
				 ng_status_str(st), err.msg, ng_status_str(cases[i].st),
				 cases[i].msg);
	}
}

static void test_limits_depth_and_output_cap(void **state)
{
	/* NG_YAML_MAX_DEPTH levels convert (and parse as JSON); one more is refused. */
	char yaml[512], out[4096];
	struct ng_err err = {0};
	for (size_t depth = NG_YAML_MAX_DEPTH; depth <= NG_YAML_MAX_DEPTH + 1; depth++) {
		size_t n = 0;
		for (size_t i = 0; i < depth; i++)
			yaml[n++] = '[';
		for (size_t i = 0; i < depth; i++)
			yaml[n++] = ']';
		yaml[n] = '\0';
		/* "[[...]]" is JSON to ng_yaml_is_json(), but here it is read as YAML flow. */
		ng_status st = convert(yaml, out, &err);
		if (depth == NG_YAML_MAX_DEPTH) {
			assert_int_equal(st, NG_OK);
			cJSON *root = NULL;
			assert_int_equal(ng_json_parse(out, strlen(out), NULL, &root, NULL), NG_OK);
			cJSON_Delete(root);
		} else {
			assert_int_equal(st, NG_ELIMIT);
			assert_non_null(strstr(err.msg, "nested deeper than 64 levels"));
		}
	}
	/* Output over the caller's cap (its JSON limit) is refused and leaves @out as it was. */
	struct ng_buf b;
	ng_buf_init(&b, 24);
	assert_int_equal(ng_buf_puts(&b, "kept"), NG_OK);
	const char *big = "a: a fairly long string value\n";
	assert_int_equal(ng_yaml_to_json(big, strlen(big), "test", &b, &err), NG_ELIMIT);
	assert_non_null(strstr(err.msg, "test: more than 24 bytes as JSON"));
	assert_int_equal(b.len, 4);
	assert_string_equal(b.data, "kept");
	ng_buf_finish(&b);
}

static void test_json_or_yaml(void **state)
{
	assert_true(ng_yaml_is_json(" \n\t{\"a\":1}", 10));
	assert_true(ng_yaml_is_json("[1]", 3));
	assert_false(ng_yaml_is_json("a: {}", 5));
	assert_false(ng_yaml_is_json("# {\n", 4));
	assert_false(ng_yaml_is_json("---\n{}", 6));
	assert_false(ng_yaml_is_json("", 0));
	assert_false(ng_yaml_is_json("   ", 3));
}

/* The YAML example is the JSON example. */
static void test_the_yaml_example_is_the_json_example(void **state)
{
	char *y = NULL, *j = NULL;
	size_t ylen, jlen;
	assert_int_equal(ng_read_file(NG_SOURCE_ROOT "/examples/nodedisruption.yaml", 1 << 20,
				      "example", false, &y, &ylen, NULL),
			 NG_OK);
	assert_int_equal(ng_read_file(NG_SOURCE_ROOT "/examples/nodedisruption.json", 1 << 20,
				      "example", false, &j, &jlen, NULL),
			 NG_OK);
	assert_false(ng_yaml_is_json(y, ylen));
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	assert_int_equal(ng_yaml_to_json(y, ylen, "example", &b, NULL), NG_OK);
	cJSON *from_yaml = NULL, *from_json = NULL;
	assert_int_equal(ng_json_parse(b.data, b.len, NULL, &from_yaml, NULL), NG_OK);
	assert_int_equal(ng_json_parse(j, jlen, NULL, &from_json, NULL), NG_OK);
	assert_true(cJSON_Compare(from_yaml, from_json, 1));
	cJSON_Delete(from_yaml);
	cJSON_Delete(from_json);
	ng_buf_finish(&b);
	free(y);
	free(j);
}

/* The tree reader (kubeconfigs) shares the refusals and skips empty documents too. */
static void test_tree_reader(void **state)
{
	struct ng_arena *a = ng_arena_create(1 << 20);
	struct ng_yaml_node *root = (struct ng_yaml_node *)0x1;
	struct ng_err err = {0};
	const char *y = "k: v\nl: [1, 2]\n---\n";
	assert_int_equal(ng_yaml_load(y, strlen(y), "kc", 8, a, &root, &err), NG_OK);
	assert_int_equal(root->kind, NG_YAML_MAP);
	assert_string_equal(root->first->s, "k");
	assert_string_equal(root->first->next->s, "v");
	assert_int_equal(root->last->kind, NG_YAML_SEQ);
	assert_string_equal(root->last->last->s, "2");
	assert_int_equal(ng_yaml_load("", 0, "kc", 8, a, &root, &err), NG_OK);
	assert_null(root);
	/* Failures leave the result alone. */
	root = (struct ng_yaml_node *)0x1;
	assert_int_equal(ng_yaml_load("[[[1]]]", 7, "kc", 2, a, &root, &err), NG_ELIMIT);
	assert_string_equal(err.msg, "kc: line 1: nested deeper than 2 levels");
	assert_int_equal(ng_yaml_load("a: 1\n---\nb: 1\n", 14, "kc", 8, a, &root, &err), NG_EPARSE);
	assert_string_equal(err.msg, "kc: line 3: more than one YAML document");
	assert_ptr_equal(root, (struct ng_yaml_node *)0x1);
	ng_arena_destroy(a);
	/* The arena's cap bounds the tree. */
	a = ng_arena_create(64 * 1024);
	char *many = malloc(200001);
	for (size_t i = 0; i < 100000; i++)
		memcpy(many + 2 * i, i ? ",1" : "[1", 2);
	many[200000] = '\0';
	assert_int_equal(ng_yaml_load(many, 200000, "kc", 8, a, &root, &err), NG_ELIMIT);
	assert_non_null(strstr(err.msg, "bytes of YAML"));
	free(many);
	ng_arena_destroy(a);
}

/* Writes @json as YAML into @out (4 KiB) and returns the status. */
static ng_status to_yaml(const char *json, char *out, struct ng_err *err)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	ng_status st = ng_yaml_from_json(json, strlen(json), &b, err);
	(void)snprintf(out, 4096, "%s", b.len ? b.data : "");
	ng_buf_finish(&b);
	return st;
}

static void test_json_written_as_kubectl_prints_yaml(void **state)
{
	static const struct {
		const char *json, *yaml;
	} cases[] = {
	    {"{\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"labels\":{}},\"spec\":{"
	     "\"nodeNames\":[\"web-1\",\"web-2\"],\"priority\":10,\"x\":[]}}",
	     "apiVersion: v1\nmetadata:\n  name: a\n  labels: {}\nspec:\n  nodeNames:\n  - web-1\n"
	     "  - web-2\n  priority: 10\n  x: []\n"},
	    /* Strings YAML would read as something else are quoted; numbers and booleans not. */
	    {"[\"true\",\"no\",\"null\",\"~\",\"\",\"123\",\"0x1F\",\"1e3\",\".inf\",\"1.5\",\"y\","
	     "true,null,1.5,-3,\"v1\",\"1.2.3\"]",
	     "- \"true\"\n- \"no\"\n- \"null\"\n- \"~\"\n- \"\"\n- \"123\"\n- \"0x1F\"\n- \"1e3\"\n"
	     "- \".inf\"\n- \"1.5\"\n- \"y\"\n- true\n- null\n- 1.5\n- -3\n- v1\n- 1.2.3\n"},
	    /* What plain YAML cannot hold is quoted by the emitter; lines break as a literal. */
	    {"{\"a\":\"x: y\",\"b\":\"- z\",\"c\":\"l1\\nl2\\n\",\"on\":0.1}",
	     "a: 'x: y'\nb: '- z'\nc: |\n  l1\n  l2\n\"on\": 0.1\n"},
	    {"{}", "{}\n"},
	};
	(void)state;
	char out[4096];
	struct ng_err err = {0};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(to_yaml(cases[i].json, out, &err), NG_OK);
		assert_string_equal(out, cases[i].yaml);
	}
}

static void test_yaml_written_reads_back_as_the_same_json(void **state)
{
	static const char *const docs[] = {
	    "{\"a\":[1,-2,3.25,1e+20,0.1,true,false,null],\"b\":{\"c\":\"d\",\"e\":[[],{}]}}",
	    /* One document in two literals, in parentheses so compilers do not take it for two. */
	    ("[\"yes\",\"Off\",\"0644\",\"+7\",\"1_000\",\"<<\",\"\",\" lead\",\"trail \",\"#c\","
	     "\"a\\tb\",\"\xc2\xb5s\",\"x\\ny\",\"'q'\",\"\\\"\",\"%\",\"@\",\"*a\",\"&a\",\"!"
	     "t\"]"),
	    "{\"true\":1,\"123\":2,\"a b\":3,\"\":4}",
	    "\"only a string\"",
	    "42",
	};
	(void)state;
	char yaml[4096], back[4096];
	struct ng_err err = {0};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		assert_int_equal(to_yaml(docs[i], yaml, &err), NG_OK);
		assert_int_equal(convert(yaml, back, &err), NG_OK);
		assert_string_equal(back, docs[i]);
	}
	/* Malformed JSON and a cap too small are refused, and the buffer is left as it was. */
	assert_int_equal(to_yaml("{\"a\":", yaml, &err), NG_EPARSE);
	struct ng_buf b;
	ng_buf_init(&b, 8);
	const char *big = "{\"a\":\"0123456789\"}";
	assert_int_equal(ng_yaml_from_json(big, strlen(big), &b, &err), NG_ELIMIT);
	assert_int_equal(b.len, 0);
	ng_buf_finish(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kubectl_yaml_becomes_the_json_kubectl_sends),
	    cmocka_unit_test(test_what_json_cannot_hold_or_we_refuse_is_refused_with_the_line),
	    cmocka_unit_test(test_limits_depth_and_output_cap),
	    cmocka_unit_test(test_json_or_yaml),
	    cmocka_unit_test(test_the_yaml_example_is_the_json_example),
	    cmocka_unit_test(test_tree_reader),
	    cmocka_unit_test(test_json_written_as_kubectl_prints_yaml),
	    cmocka_unit_test(test_yaml_written_reads_back_as_the_same_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
