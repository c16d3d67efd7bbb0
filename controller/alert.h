/* The alert gate's reading of Prometheus's answers (docs/gate.md "Alert gate"): an instant
 * query's answer (GET /api/v1/query) or the list of alerts (GET /api/v1/alerts), read into what
 * the gate says about it. Bounded: the answer is at most GATE_ALERT_MAX_BYTES (the call stops
 * reading past that), parsed by common/json.h into an arena of its own, and what is kept of it
 * is a count and a few short, sanitized names. The entry point is also the fuzz target
 * `prometheus`. Pure; any thread. */
#ifndef NG_CONTROLLER_ALERT_H
#define NG_CONTROLLER_ALERT_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_regex;

/* Longest answer read: a query's vector of a few thousand samples, or a few thousand alerts. */
#define GATE_ALERT_MAX_BYTES (1u << 20)
/* Distinct names kept to name in a reason: a reason shows a handful. */
#define GATE_ALERT_NAMES 8
/* Longest name kept, with its NUL: alert names are tens of bytes. */
#define GATE_ALERT_NAME_BYTES 64

/* Longest alert name matched: alert names are rule names, tens of bytes, and Prometheus sets
 * no bound of its own. With it, one match stays far within the engine's bounds (the backtracking
 * depth is two per character for `(a|b)*`). A longer name counts as matching. */
#define GATE_ALERT_NAME_MAX_BYTES 1024u

/* What an answer says. */
struct gate_alert_answer {
	uint32_t nfiring; /* samples in the vector, or firing alerts whose name matches */
	uint32_t nnames;  /* distinct names kept in names */
	uint32_t nmore;   /* firing samples or alerts whose name is not among names */
	/* Each sample's alertname label (else its metric name and labels, briefly), or each
	 * matching alert's alertname, in the answer's order; bytes other than letters, digits
	 * and _:.-/{}=", become '?', and a longer name ends in "...". */
	char names[GATE_ALERT_NAMES][GATE_ALERT_NAME_BYTES];
};

/* Which question was asked. */
enum gate_alert_question {
	GATE_ALERT_QUERY,  /* /api/v1/query: firing when the vector is not empty */
	GATE_ALERT_ALERTS, /* /api/v1/alerts: firing alerts whose alertname matches @re */
};

/**
 * Whether a firing alert named @name (@len bytes, no NUL needed) counts under @re (borrowed,
 * from ng_regex_get_label_matcher(): matched as Prometheus matches a label value, `.` matching
 * newlines too). A name that cannot be matched safely counts, so the gate fails closed: longer
 * than GATE_ALERT_NAME_MAX_BYTES, not valid UTF-8, or a match one of the engine's bounds stopped.
 * Control characters are characters like any other, as in Prometheus. Pure; any thread.
 */
bool gate_alert_name_counts(const struct ng_regex *re, const char *name, size_t len);

/**
 * Reads answer @buf (@len bytes, no NUL needed) to question @q into @ret. For GATE_ALERT_ALERTS,
 * @re (borrowed, from ng_regex_get_label_matcher()) picks the alerts that count: those with
 * state "firing" whose labels.alertname counts (gate_alert_name_counts()). NG_OK with @ret filled
 * (nfiring 0: clear). Otherwise @ret is left alone and
 * *@reterr_word (may be NULL) is a fixed word: NG_ELIMIT "answer too large"; NG_EPARSE "answer
 * not JSON", "answer not understood" (not the shape Prometheus answers with, or a result that is
 * not a vector) or "Prometheus reported an error" (status not "success"); NG_ENOMEM "out of
 * memory". Nothing of the answer but the names reaches @ret.
 */
NG_NODISCARD ng_status gate_alert_parse(enum gate_alert_question q, const char *buf, size_t len,
					const struct ng_regex *re, struct gate_alert_answer *ret,
					const char **reterr_word);

/**
 * The reason a held request gives for answer @a (nfiring > 0), into @out (@cap bytes):
 * "alert gate: 2 alerts firing: NodeDown, EtcdHighLatency", names as fit in about 200 bytes,
 * then "and K more".
 */
void gate_alert_reason(const struct gate_alert_answer *a, char *out, size_t cap);

#endif
