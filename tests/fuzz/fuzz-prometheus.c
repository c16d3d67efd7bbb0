/* libFuzzer target for the alert gate's reading of Prometheus's answers, controller/alert.h
 * (STYLE.md B12 "Fuzz").
 *
 * Input: the first byte picks the question (even: an instant query's answer, odd: the list of
 * alerts, matched with ^(?:.*Down|Etcd.*)$); the rest is the answer. Whatever the input:
 * - gate_alert_parse() answers NG_OK, or NG_EPARSE/NG_ELIMIT/NG_ENOMEM with one of its fixed
 *   words, and a failure leaves the answer untouched;
 * - reading the same answer twice gives the same answer;
 * - an answer holds at most GATE_ALERT_NAMES names, each NUL-terminated within
 *   GATE_ALERT_NAME_BYTES, distinct, and made only of the bytes a reason may show; nnames +
 *   nmore never exceeds nfiring, and there are names whenever something fires;
 * - the reason built from it is NUL-terminated, bounded and starts with "alert gate: ".
 * Any broken invariant calls abort() so libFuzzer keeps the input. */
#include "common/regex.h"
#include "common/status.h"
#include "controller/alert.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static bool shown_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("_:.-/{}=\",?", c));
}

static void check_answer(const struct gate_alert_answer *a)
{
	check(a->nnames <= GATE_ALERT_NAMES);
	check((uint64_t)a->nnames + a->nmore <= a->nfiring);
	check(a->nfiring == 0 || a->nnames > 0);
	for (uint32_t i = 0; i < a->nnames; i++) {
		size_t n = strnlen(a->names[i], GATE_ALERT_NAME_BYTES);
		check(n < GATE_ALERT_NAME_BYTES);
		for (size_t k = 0; k < n; k++)
			check(shown_byte(a->names[i][k]));
		for (uint32_t j = 0; j < i; j++)
			check(strcmp(a->names[i], a->names[j]) != 0);
	}
	if (!a->nfiring)
		return;
	char r[512];
	memset(r, 'x', sizeof(r));
	gate_alert_reason(a, r, sizeof(r));
	check(memchr(r, '\0', sizeof(r)) != NULL);
	check(strncmp(r, "alert gate: ", 12) == 0);
}

static bool fixed_word(const char *w)
{
	static const char *const words[] = {"answer too large", "answer not JSON",
					    "answer not understood", "Prometheus reported an error",
					    "out of memory"};
	for (size_t i = 0; w && i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(w, words[i]) == 0)
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ng_regex *re;
	static const char pattern[] = "^(?:.*Down|Etcd.*)$";
	if (!re && ng_regex_get(pattern, sizeof(pattern) - 1, &re, NULL) != NG_OK)
		abort();
	if (size == 0)
		return 0;
	enum gate_alert_question q = data[0] % 2 ? GATE_ALERT_ALERTS : GATE_ALERT_QUERY;
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;
	struct gate_alert_answer a, b;
	memset(&a, 0xad, sizeof(a));
	memset(&b, 0xad, sizeof(b));
	const char *wa = NULL, *wb = NULL;
	ng_status sa = gate_alert_parse(q, buf, len, re, &a, &wa);
	ng_status sb = gate_alert_parse(q, buf, len, re, &b, &wb);
	check(sa == sb);
	if (sa != NG_OK) {
		check(sa == NG_EPARSE || sa == NG_ELIMIT || sa == NG_ENOMEM);
		check(fixed_word(wa) && wa == wb);
		check(a.nfiring == 0xadadadad && a.nnames == 0xadadadad);
		return 0;
	}
	check(memcmp(&a, &b, sizeof(a)) == 0);
	check_answer(&a);
	return 0;
}
