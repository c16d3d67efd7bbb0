/* cmd/plan_svg: the picture of a plan (O30-O34): a bar per planned node, names escaped, the
 * nodes never granted listed with their reason, the windows shaded, a row per wave above
 * CMD_PLAN_SVG_NODE_ROWS nodes, and an HTML page that loads nothing from elsewhere. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cmd/out.h"
#include "cmd/plan_svg.h"
#include "common/arena.h"
#include "common/buf.h"
#include "policy/plan.h"
#include "tests/support/objects.h"
#include "tests/support/support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int64_t START_WALL_MS = 1795000000000; /* 2026-11-18T11:06:40Z */

/* A node named @name (JSON-escaped text) with label @labels (JSON members). */
#define NODE_JSON(name, labels)                                                                    \
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"" name                  \
	"\",\"labels\":{" labels "}},\"status\":{\"conditions\":[{\"type\":\"Ready\","             \
	"\"status\":\"True\"}]}}"

#define LIST_JSON(items) "{\"kind\":\"List\",\"items\":[" items "]}"
#define POOL_A "\"pool\":\"a\""
#define POOL_B "\"pool\":\"b\""
/* n0 (named as markup), n1 and n2 under a budget of one node at a time with a daily window at
 * 12:00 for 12 minutes; n3 under a frozen budget whose reason is markup too. */
#define CLUSTER_O33                                                                                \
	NODE_JSON("a<b>&\\\"c'", POOL_A)                                                           \
	"," NODE_JSON("n1", POOL_A) "," NODE_JSON("n2", POOL_A) "," NODE_JSON(                     \
	    "n3", POOL_B) "," NDB("one", WINDOWED_ONE) "," NDB("frozen", FROZEN)
#define WINDOWED_ONE                                                                               \
	"{\"nodeSelector\":{\"matchLabels\":{" POOL_A "}},\"maxDisruptedNodes\":1,"                \
	"\"windows\":[{\"schedule\":\"0 12 * * *\",\"duration\":\"12m\"}]}"
#define FROZEN                                                                                     \
	"{\"nodeSelector\":{\"matchLabels\":{" POOL_B "}},\"maxDisruptedNodes\":1,"                \
	"\"freeze\":{\"enabled\":true,\"reason\":\"<moving> & co\"}}"
#define TWO_NODES NODE_JSON("n1", POOL_A) "," NODE_JSON("n2", POOL_A)

struct pic {
	struct kube_snapshot *s;
	struct ng_arena *arena;
	struct pol_plan p;
	struct ng_buf b;
};

/* The picture (@html: the page) of the plan of @nodes over cluster @json. */
static void draw(struct pic *x, const char *json, const char *const *nodes, size_t n, bool html)
{
	x->s = ng_test_snapshot(json);
	x->arena = ng_arena_create(64u << 20);
	struct pol_plan_input in = {.nodes = nodes,
				    .nnodes = n,
				    .start_wall_ms = START_WALL_MS,
				    .drain_ms = 300000,
				    .type = "maintenance",
				    .requestor = "nodegate-plan"};
	assert_int_equal(pol_plan_run(x->s, &in, x->arena, &x->p), NG_OK);
	ng_buf_init(&x->b, 64u << 20);
	assert_int_equal(cmd_plan_svg(x->s, &in, &x->p, html, x->arena, &x->b), NG_OK);
}

static void undraw(struct pic *x)
{
	ng_buf_finish(&x->b);
	ng_arena_destroy(x->arena);
	kube_snapshot_release(x->s);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* O33: a bar per planned node; a name that is markup is escaped everywhere; a node never
 * granted has a row with its reason and no bar; the window of the budget is shaded. */
static void test_O33_bars_escaping_never_granted_and_windows(void **state)
{
	(void)state;
	struct pic x;
	draw(&x, LIST_JSON(CLUSTER_O33), (const char *const[]){"a<b>&\"c'", "n1", "n2", "n3"}, 4,
	     false);
	const char *svg = x.b.data;
	assert_int_equal(x.p.nplanned, 3);
	assert_int_equal(x.p.nnever, 1);
	assert_int_equal(count(svg, "<rect class=\"bar"), 3);
	assert_int_equal(count(svg, "<g class=\"row\">"), 3);
	assert_int_equal(count(svg, "<g class=\"row never\">"), 1);
	assert_null(strstr(svg, "a<b>"));
	assert_null(strstr(svg, "<moving>"));
	assert_int_equal(count(svg, ">a&lt;b&gt;&amp;&quot;c&#39;<"), 1); /* its label */
	assert_non_null(strstr(svg, "never granted: NodeDisruptionBudget frozen is frozen: "
				    "&lt;moving&gt; &amp; co"));
	/* Waves at 12:00, 12:05, 12:10 in the window of 12:00-12:12: one span, lane and shade. */
	assert_int_equal(count(svg, "<rect class=\"win\""), 1);
	assert_int_equal(count(svg, "<rect class=\"shade\""), 1);
	assert_non_null(strstr(svg, "<title>Maintenance windows of NodeDisruptionBudget one"));
	assert_non_null(strstr(svg, "wave 3: "));
	assert_int_equal(strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39), 0);
	assert_int_equal(strcmp(svg + x.b.len - 7, "</svg>\n"), 0);
	undraw(&x);
}

/* O34: above CMD_PLAN_SVG_NODE_ROWS planned nodes a row per wave, naming its nodes on hover;
 * the document stays small per node. */
static void test_O34_many_nodes_get_a_row_per_wave(void **state)
{
	(void)state;
	enum { N = 2000 };
	struct ng_buf j;
	ng_buf_init(&j, 8u << 20);
	assert_int_equal(ng_buf_puts(&j, "{\"kind\":\"List\",\"items\":["), NG_OK);
	static char names[N][16];
	static const char *v[N];
	for (int i = 0; i < N; i++) {
		(void)snprintf(names[i], sizeof(names[i]), "node-%04d", i);
		v[i] = names[i];
		assert_int_equal(ng_buf_printf(&j, NODE_JSON("%s", "\"pool\":\"a\"") ",", names[i]),
				 NG_OK);
	}
	assert_int_equal(ng_buf_puts(&j, NDB("tenth", "{\"nodeSelector\":{\"matchLabels\":{"
						      "\"pool\":\"a\"}},\"maxDisruptedNodes\":"
						      "\"5%\"}") "]}"),
			 NG_OK);
	struct pic x;
	draw(&x, j.data, v, N, false);
	ng_buf_finish(&j);
	assert_int_equal(x.p.nwaves, 20); /* 100 at a time */
	assert_int_equal(count(x.b.data, "<rect class=\"bar"), 20);
	assert_non_null(strstr(x.b.data, "wave 20 (100 nodes)"));
	assert_non_null(strstr(x.b.data, " node-1999</title>"));
	printf("# %d nodes in 20 waves: %zu bytes, %.1f per node\n", N, x.b.len,
	       (double)x.b.len / N);
	assert_true(x.b.len < (size_t)N * 40);
	undraw(&x);
}

/* O31: the page holds the SVG and its script, and names nothing to load. */
static void test_O31_html_page_is_self_contained(void **state)
{
	(void)state;
	struct pic x;
	draw(&x, LIST_JSON(TWO_NODES), (const char *const[]){"n1", "n2"}, 2, true);
	const char *html = x.b.data;
	assert_int_equal(strncmp(html, "<!DOCTYPE html>", 15), 0);
	assert_int_equal(count(html, "<svg "), 1);
	assert_int_equal(count(html, "<rect class=\"bar"), 2);
	assert_int_equal(count(html, "<script>"), 1);
	/* The only URL is the SVG namespace's name, which is never fetched. */
	assert_int_equal(count(html, "http"), 1);
	assert_null(strstr(html, "src="));
	assert_null(strstr(html, "href"));
	assert_null(strstr(html, "@import"));
	assert_null(strstr(html, "url("));
	undraw(&x);
}

static void test_duration_reads_as_the_text_plan_does(void **state)
{
	(void)state;
	char d[32];
	cmd_out_duration_str(d, sizeof(d), 45000);
	assert_string_equal(d, "45s");
	cmd_out_duration_str(d, sizeof(d), 300000);
	assert_string_equal(d, "5m00s");
	cmd_out_duration_str(d, sizeof(d), 7380000);
	assert_string_equal(d, "2h03m00s");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_O33_bars_escaping_never_granted_and_windows),
	    cmocka_unit_test(test_O34_many_nodes_get_a_row_per_wave),
	    cmocka_unit_test(test_O31_html_page_is_self_contained),
	    cmocka_unit_test(test_duration_reads_as_the_text_plan_does),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
