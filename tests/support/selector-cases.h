/* Label selector strings and what Kubernetes makes of them, for the selector's own tests and the
 * NodeDisruption webhook's. The cases are restated from kubernetes/kubernetes
 * staging/src/k8s.io/apimachinery/pkg/labels/selector_test.go (TestSelectorParse,
 * TestDeterministicParse, TestSelectorMatches, TestEverything, TestSetMatches, TestLexer,
 * TestLexerSequence, TestParserLookahead, TestRequirementConstructor, TestToString,
 * TestRequirementSelectorMatching, TestSetSelectorParser, TestParseOperator,
 * TestValidatedSelectorFromSet), each row naming its test function in @from, as strings, plus
 * the places nodegate's parser once read otherwise. */
#ifndef NG_TESTS_SUPPORT_SELECTOR_CASES_H
#define NG_TESTS_SUPPORT_SELECTOR_CASES_H

#include <stdbool.h>
#include <stddef.h>

/*
 * One selector string; @parsed is NULL when Kubernetes refuses it, else the requirements it
 * stands for in a canonical form: sorted by key (then operator, then values), joined by "; ",
 * each "key Op" with Op one of In, NotIn, Exists, DoesNotExist, Gt, Lt; In and NotIn add their
 * value set sorted and in parentheses, where an empty entry is the value "" ("x In (,a)" is
 * {"", "a"}, "x In ()" is {""}: a set is never empty); Gt and Lt add the number. "=" and "=="
 * are In with one value, "!=" NotIn with one. The empty selector is "".
 */
struct ng_selector_case {
	const char *text;
	const char *parsed;
	const char *from; /* the Kubernetes test it comes from, or why it is here */
};

/* A selector string (which parses) against a label set written "k=v,k2=v2" ("" none). */
struct ng_selector_match_case {
	const char *text;
	const char *labels;
	bool match;
	const char *from;
};

extern const struct ng_selector_case ng_selector_cases[];
extern const size_t ng_nselector_cases;
extern const struct ng_selector_match_case ng_selector_match_cases[];
extern const size_t ng_nselector_match_cases;

#endif
