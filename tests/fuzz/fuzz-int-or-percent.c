/* libFuzzer target for budget limits, IntOrString (STYLE.md B12 "Fuzz"): the string form
 * bud_int_or_percent_parse() reads ("3", "25%"), and the decoded form bud_int_or_percent_from()
 * converts (an integer, or a string that must be a percentage), as a NodeDisruptionBudget's
 * maxDisruptedNodes holds it.
 *
 * Every input goes through bud_int_or_percent_parse(). Invariants, each abort()ing when broken:
 * - a refusal is NG_EPARSE or NG_ELIMIT, with a readable message, and leaves the output alone;
 * - a value is a count in 0..1000000 or a percentage in 0..100, a percentage exactly when the
 *   input ends in '%';
 * - parse -> print -> parse is stable: the value printed ("%lld" or "%lld%%") parses to the same
 *   value, and is the input itself when the input has no leading zeros;
 * - the same text as a decoded IntOrString string converts to the same value when it is a
 *   percentage and is refused otherwise; a count written as a JSON integer converts to itself;
 * - scaling a percentage against a pool of p nodes rounds up: ceil(v * p / 100), within 0..p.
 * When the input is one JSON value, it is also decoded as an NDB's maxDisruptedNodes
 * (kube_one_parse()) and converted: what converts is what the string or integer above gives. */
#include "budgets/budgets.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "kube/one.h"
#include "tests/fuzz/roundtrip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_scaled(const struct bud_int_or_percent *v)
{
	static const int64_t pools[] = {0, 1, 2, 3, 7, 99, 100, 101, 999, 5000, 1000000};
	for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++) {
		int64_t p = pools[i], got = bud_int_or_percent_scaled(v, p);
		if (!v->is_percent) {
			ng_fuzz_check(got == v->value);
			continue;
		}
		ng_fuzz_check(got >= 0 && got <= p);
		ng_fuzz_check(got * 100 >= v->value * p && (got - 1) * 100 < v->value * p);
	}
}

/* @v as the decoded form of a string (interned into @pool) and of an integer. */
static void check_decoded(const char *text, size_t len, const struct bud_int_or_percent *v)
{
	struct ng_intern *pool = ng_intern_create();
	ng_fuzz_check(pool != NULL);
	struct kube_int_or_string s = {.set = true, .is_str = true};
	ng_fuzz_check(ng_intern_add(pool, text, len, &s.str) == NG_OK);
	struct bud_int_or_percent got;
	struct ng_err err = {0};
	ng_status st = bud_int_or_percent_from(&s, pool, "limit", &got, &err);
	if (v->is_percent)
		ng_fuzz_check(st == NG_OK && got.is_percent && got.value == v->value);
	else
		ng_fuzz_check(st == NG_EPARSE && err.msg[0] != '\0');
	if (!v->is_percent) {
		struct kube_int_or_string i = {.set = true, .i = v->value};
		ng_fuzz_check(bud_int_or_percent_from(&i, pool, "limit", &got, NULL) == NG_OK &&
			      !got.is_percent && got.value == v->value);
	}
	ng_intern_destroy(pool);
}

/* The input as the JSON value of maxDisruptedNodes. */
static void check_budget(const uint8_t *data, size_t size)
{
	cJSON *value = NULL;
	if (ng_json_parse((const char *)data, size, NULL, &value, NULL) != NG_OK)
		return;
	bool is_str = cJSON_IsString(value);
	char *text = is_str ? strdup(value->valuestring) : NULL;
	int64_t num = 0;
	bool is_int = ng_json_int64(value, &num);
	cJSON_Delete(value);
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	ng_fuzz_check(!is_str || text != NULL);
	ng_fuzz_check(ng_buf_puts(&b, "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":"
				      "\"NodeDisruptionBudget\",\"metadata\":{\"name\":\"b\"},"
				      "\"spec\":{\"nodeSelector\":{},\"maxDisruptedNodes\":") ==
			  NG_OK &&
		      ng_buf_append(&b, data, size) == NG_OK && ng_buf_puts(&b, "}}") == NG_OK);
	struct kube_one *one = NULL;
	struct ng_err err = {0};
	ng_fuzz_check(kube_one_parse(b.data, b.len, &one, &err) == NG_OK);
	const struct kube_ndb *ndb = kube_one_ndb(one);
	ng_fuzz_check(ndb != NULL);
	struct bud_int_or_percent got, want;
	ng_status st = NG_EPARSE;
	if (!ndb->b.invalid)
		st = bud_int_or_percent_from(&ndb->max_disrupted, kube_one_pool(one),
					     "spec.maxDisruptedNodes", &got, &err);
	if (is_str) {
		size_t len = strlen(text);
		bool pct = len > 0 && text[len - 1] == '%';
		ng_status ws = bud_int_or_percent_parse(text, len, &want, NULL);
		ng_fuzz_check(ws == NG_OK && pct
				  ? st == NG_OK && got.value == want.value && got.is_percent
				  : st != NG_OK);
	} else if (is_int) {
		bool ok = num >= 0 && num <= 1000000;
		ng_fuzz_check(ok ? st == NG_OK && !got.is_percent && got.value == num
				 : st != NG_OK);
	} else {
		ng_fuzz_check(st != NG_OK); /* null, true, 1.5, {}: no limit to convert */
	}
	if (st != NG_OK && !ndb->b.invalid)
		ng_fuzz_check(ng_fuzz_message_ok(err.msg, data, size));
	kube_one_destroy(one);
	ng_buf_finish(&b);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct bud_int_or_percent v = {.is_percent = true, .value = -42};
	struct ng_err err = {0};
	ng_status st = bud_int_or_percent_parse(text, size, &v, &err);
	if (st != NG_OK) {
		ng_fuzz_check((st == NG_EPARSE || st == NG_ELIMIT) && err.status == st);
		ng_fuzz_check(ng_fuzz_message_ok(err.msg, data, size));
		ng_fuzz_check(v.is_percent && v.value == -42);
	} else {
		bool pct = size > 0 && text[size - 1] == '%';
		ng_fuzz_check(v.is_percent == pct && v.value >= 0 &&
			      v.value <= (pct ? 100 : 1000000));
		char printed[32];
		int n = snprintf(printed, sizeof(printed), "%lld%s", (long long)v.value,
				 pct ? "%" : "");
		struct bud_int_or_percent again;
		ng_fuzz_check(n > 0 &&
			      bud_int_or_percent_parse(printed, (size_t)n, &again, NULL) == NG_OK &&
			      again.is_percent == v.is_percent && again.value == v.value);
		if (!(size > 1 && text[0] == '0' && text[1] >= '0' && text[1] <= '9'))
			ng_fuzz_check((size_t)n == size && memcmp(printed, text, size) == 0);
		check_scaled(&v);
		check_decoded(text, size, &v);
	}
	check_budget(data, size);
	return 0;
}
