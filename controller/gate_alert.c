/* The alert gate (docs/gate.md "Alert gate"): before the gate grants anything, one cluster-wide
 * question to Prometheus, NodeGateConfig spec.alertGate. It is asked only when a round would
 * grant, at most once per round, on a thread of its own (the round goes on; what would be granted
 * waits for the answer, which starts a new round), and its answer is kept for cacheSeconds.
 * While it says firing, or it failed under failurePolicy Deny, every grant stays Pending with a
 * reason naming the alerts, and retries by the end of the cache. */
#include "controller/alert.h"
#include "controller/gate_internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/log.h"
#include "common/map.h"
#include "common/prom.h"
#include "common/regex.h"
#include "kube/runtime.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

/* A 1 MiB answer parses into a tree of several MiB (cJSON nodes for each short string). */
#define ALERT_ARENA_BYTES (32u << 20)
/* After the question could not even be asked (no memory, no thread), look again. */
#define ALERT_AGAIN_MS 1000
/* The longest list of names a reason gives before "and K more". */
#define ALERT_REASON_NAMES_BYTES 200

/* ---- reading an answer (pure) ---- */

/* @src (@len bytes) as a name for a reason: bytes outside a small set become '?', and a name
 * longer than GATE_ALERT_NAME_BYTES - 1 ends in "...". */
static void sanitize(const char *src, size_t len, char out[GATE_ALERT_NAME_BYTES])
{
	static const char keep[] = "_:.-/{}=\",";
	size_t max = GATE_ALERT_NAME_BYTES - 1, n = len > max ? max : len;
	memset(out, 0, GATE_ALERT_NAME_BYTES); /* the whole name is copied: nothing undefined */
	for (size_t i = 0; i < n; i++) {
		char c = src[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || (c != '\0' && strchr(keep, c));
		out[i] = ok ? c : '?';
	}
	out[n] = '\0';
	if (len > max)
		memcpy(out + max - 3, "...", 3);
}

/* Counts one firing item named @name (@len bytes). */
static void add_name(struct gate_alert_answer *a, const char *name, size_t len)
{
	char s[GATE_ALERT_NAME_BYTES];
	sanitize(name, len, s);
	a->nfiring++;
	for (uint32_t i = 0; i < a->nnames; i++)
		if (strcmp(a->names[i], s) == 0)
			return;
	if (a->nnames < GATE_ALERT_NAMES)
		memcpy(a->names[a->nnames++], s, sizeof(s));
	else
		a->nmore++;
}

/* A sample's metric without an alertname label, briefly: name{k="v",...}, cut at 255 bytes
 * (sanitize() cuts it again). */
static void metric_brief(const cJSON *metric, char *out, size_t cap)
{
	const char *name = ng_json_str(metric, "__name__");
	size_t n = 0;
	ng_fmt(out, cap, "%s{", name ? name : "");
	n = strlen(out);
	bool first = true;
	for (const cJSON *l = cJSON_IsObject(metric) ? metric->child : NULL; l && n + 1 < cap;
	     l = l->next) {
		if (!l->string || strcmp(l->string, "__name__") == 0 || !cJSON_IsString(l))
			continue;
		ng_fmt(out + n, cap - n, "%s%s=\"%s\"", first ? "" : ",", l->string,
		       l->valuestring);
		n = strlen(out);
		first = false;
	}
	if (n + 1 < cap) {
		out[n] = '}';
		out[n + 1] = '\0';
	}
}

static ng_status read_vector(const cJSON *data, struct gate_alert_answer *a)
{
	const char *type = ng_json_str(data, "resultType");
	const cJSON *result = ng_json_get(data, "result");
	if (!type || strcmp(type, "vector") != 0 || !cJSON_IsArray(result))
		return NG_EPARSE;
	for (const cJSON *e = result->child; e; e = e->next) {
		const cJSON *metric = ng_json_get(e, "metric");
		if (!cJSON_IsObject(e) || (metric && !cJSON_IsObject(metric)))
			return NG_EPARSE;
		const char *name = ng_json_str(metric, "alertname");
		char brief[256];
		if (!name) {
			metric_brief(metric, brief, sizeof(brief));
			name = brief;
		}
		add_name(a, name, strlen(name));
	}
	return NG_OK;
}

bool gate_alert_name_counts(const struct ng_regex *re, const char *name, size_t len)
{
	if (len > GATE_ALERT_NAME_MAX_BYTES)
		return true;
	bool matched = false;
	/* Undecided (not UTF-8, a bound stopped the match): counted, the gate fails closed. */
	return ng_regex_match(re, name, len, &matched, NULL) != NG_OK || matched;
}

static ng_status read_alerts(const cJSON *data, const struct ng_regex *re,
			     struct gate_alert_answer *a)
{
	const cJSON *alerts = ng_json_get(data, "alerts");
	if (!cJSON_IsArray(alerts))
		return NG_EPARSE;
	for (const cJSON *e = alerts->child; e; e = e->next) {
		if (!cJSON_IsObject(e))
			return NG_EPARSE;
		const char *state = ng_json_str(e, "state");
		const char *name = ng_json_str(ng_json_get(e, "labels"), "alertname");
		if (!state || strcmp(state, "firing") != 0 || !name)
			continue;
		if (gate_alert_name_counts(re, name, strlen(name)))
			add_name(a, name, strlen(name));
	}
	return NG_OK;
}

ng_status gate_alert_parse(enum gate_alert_question q, const char *buf, size_t len,
			   const struct ng_regex *re, struct gate_alert_answer *ret,
			   const char **reterr_word)
{
	const char *word = "answer not understood";
	ng_status st = NG_ELIMIT;
	struct ng_arena *arena = NULL;
	if (len > GATE_ALERT_MAX_BYTES) {
		word = "answer too large";
		goto out;
	}
	if (!(arena = ng_arena_create(ALERT_ARENA_BYTES))) {
		word = "out of memory";
		st = NG_ENOMEM;
		goto out;
	}
	cJSON *root = NULL;
	st = ng_json_parse(buf, len, arena, &root, NULL);
	if (st != NG_OK) {
		word = st == NG_EPARSE ? "answer not JSON" : "answer too large";
		goto out;
	}
	const char *status = ng_json_str(root, "status");
	st = NG_EPARSE;
	if (!status)
		goto out;
	if (strcmp(status, "success") != 0) {
		word = "Prometheus reported an error";
		goto out;
	}
	struct gate_alert_answer a = {0};
	const cJSON *data = ng_json_get(root, "data");
	st = q == GATE_ALERT_QUERY ? read_vector(data, &a)
	     : re                  ? read_alerts(data, re, &a)
				   : NG_EINVAL;
	if (st == NG_OK)
		*ret = a;
out:
	ng_arena_destroy(arena);
	if (st != NG_OK && reterr_word)
		*reterr_word = word;
	return st;
}

void gate_alert_reason(const struct gate_alert_answer *a, char *out, size_t cap)
{
	char list[ALERT_REASON_NAMES_BYTES + GATE_ALERT_NAME_BYTES + 4] = "";
	size_t n = 0;
	uint32_t shown = 0;
	for (; shown < a->nnames; shown++) {
		size_t l = strlen(a->names[shown]);
		/* The first name always fits whole. */
		if (shown && n + 2 + l > ALERT_REASON_NAMES_BYTES)
			break;
		ng_fmt(list + n, sizeof(list) - n, "%s%s", shown ? ", " : "", a->names[shown]);
		n = strlen(list);
	}
	uint32_t more = a->nmore + (a->nnames - shown);
	char tail[32] = "";
	if (more)
		ng_fmt(tail, sizeof(tail), " and %u more", more);
	ng_fmt(out, cap, "alert gate: %u alert%s firing: %s%s", a->nfiring,
	       a->nfiring == 1 ? "" : "s", list, tail);
}

/* ---- asking, on a thread of its own ---- */

enum alert_result { ALERT_CLEAR, ALERT_FIRING, ALERT_ERROR };
static const char *const result_names[3] = {"clear", "firing", "error"};

/* One question in flight. Everything its thread reads is its own or outlives it: the snapshot
 * reference keeps the config it asks under; the deny list is the gate's, which joins the thread
 * before freeing it. */
struct gate_alert_job {
	struct gate_job t;       /* first: the thread that asks */
	uint64_t key;            /* the config it asks under (alert_key()) */
	struct kube_snapshot *s; /* a reference of the job's own */
	const struct kube_alert_gate *ag;
	struct kube_hook_policy hp;
	const struct kube_cidr *deny;
	size_t ndeny;
	struct ng_regex *re; /* alertNameRegex anchored; NULL for a query */
	char *url;
	/* What the thread found. */
	enum alert_result result;
	struct gate_alert_answer answer;
	const char *word; /* ALERT_ERROR: a fixed word */
	long code;
	int64_t t0_mono_us, end_mono_us;
};

static uint64_t alert_key(const struct kube_alert_gate *ag)
{
	const struct kube_hook *t = &ag->target;
	uint64_t h = ng_fnv1a64(NG_FNV64_INIT, &ag->mode, sizeof(ag->mode));
	h = ng_fnv1a64(h, t->url, strlen(t->url) + 1);
	h = ng_fnv1a64(h, ag->expr, strlen(ag->expr) + 1);
	h = ng_fnv1a64(h, &t->timeout_s, sizeof(t->timeout_s));
	h = ng_fnv1a64(h, &ag->cache_s, sizeof(ag->cache_s));
	h = ng_fnv1a64(h, &ag->fail_open, sizeof(ag->fail_open));
	return t->nca ? ng_fnv1a64(h, t->ca, t->nca) : h;
}

static void ask(struct gate_alert_job *j)
{
	struct ng_buf body;
	ng_buf_init(&body, GATE_ALERT_MAX_BYTES);
	long code = 0;
	const char *word = NULL;
	ng_status st = gate_http_get(j->url, &j->ag->target, &j->hp, j->deny, j->ndeny,
				     &j->t.cancel, &body, &code, &word);
	j->code = code;
	if (st == NG_OK && (code < 200 || code > 299)) {
		static const char *const words[] = {"HTTP status 3xx", "HTTP status 4xx",
						    "HTTP status 5xx"};
		word = code >= 300 && code < 600 ? words[code / 100 - 3] : "HTTP status unexpected";
		st = NG_EIO;
	}
	if (st == NG_OK)
		st = gate_alert_parse(j->re ? GATE_ALERT_ALERTS : GATE_ALERT_QUERY,
				      body.data ? body.data : "", body.len, j->re, &j->answer,
				      &word);
	ng_buf_finish(&body);
	j->word = word;
	j->result = st != NG_OK ? ALERT_ERROR : j->answer.nfiring ? ALERT_FIRING : ALERT_CLEAR;
}

static void job_run(struct gate_job *t)
{
	struct gate_alert_job *j = (struct gate_alert_job *)t;
	ask(j);
	j->end_mono_us = ng_now_mono_us();
}

static void job_free(struct gate_alert_job *j)
{
	if (!j)
		return;
	kube_snapshot_release(j->s);
	ng_regex_put(j->re);
	free(j->url);
	free(j);
}

/* The question of @ag as a URL: malloc'ed (caller frees); NULL on OOM. */
static char *question_url(const struct kube_alert_gate *ag)
{
	struct ng_buf b;
	ng_buf_init(&b, 2 * KUBE_ALERT_QUERY_MAX + 8192);
	ng_status st = ng_buf_puts(&b, ag->target.url);
	if (ag->mode == KUBE_ALERT_REGEX) {
		st = st ? st : ng_buf_puts(&b, "/api/v1/alerts");
	} else {
		char *q = curl_easy_escape(NULL, ag->expr, 0);
		st = st ? st : q ? ng_buf_printf(&b, "/api/v1/query?query=%s", q) : NG_ENOMEM;
		curl_free(q);
	}
	if (st != NG_OK) {
		ng_buf_finish(&b);
		return NULL;
	}
	size_t len;
	return ng_buf_take(&b, &len);
}

/* Starts the question of @ag (of @s) on a thread. NULL when there is no memory or thread, or
 * the pattern cannot be had (the decoder checked it compiles: only memory). */
static struct gate_alert_job *job_start(struct gate *g, const struct kube_snapshot *s,
					const struct kube_alert_gate *ag, uint64_t key)
{
	struct gate_alert_job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->key = key;
	j->ag = ag;
	pol_hook_policy_from(s, &j->hp);
	j->deny = g->deny;
	j->ndeny = g->ndeny;
	j->t0_mono_us = ng_now_mono_us();
	j->s = kube_snapshot_ref((struct kube_snapshot *)(uintptr_t)s);
	j->url = question_url(ag);
	bool ok = j->url != NULL;
	if (ok && ag->mode == KUBE_ALERT_REGEX)
		ok = ng_regex_get_label_matcher(ag->expr, strlen(ag->expr), &j->re, NULL) == NG_OK;
	if (!ok || !gate_job_start(&j->t, g, &g->alert_answered, job_run)) {
		job_free(j);
		return NULL;
	}
	return j;
}

/* Stops the question in flight, if any, and forgets it. */
static void job_drop(struct gate *g)
{
	struct gate_alert_job *j = g->alert_job;
	if (!j)
		return;
	g->alert_job = NULL;
	gate_job_stop(&j->t);
	job_free(j);
}

/* ---- what the gate keeps of answers ---- */

static void count_result(struct gate *g, enum alert_result r, bool fail_open)
{
	ng_prom_add(&g->alert_evals[r], 1);
	atomic_store(&g->alert_firing, r == ALERT_FIRING ? 1u : 0u);
	if (r == ALERT_ERROR && fail_open)
		ng_prom_add(&g->alert_ignored, 1);
}

/* Keeps the answer of @j (ended) for its cacheSeconds, with the reason a held request gives. */
static void keep_answer(struct gate *g, const struct gate_alert_job *j)
{
	struct gate_alert_last *l = &g->alert;
	const struct kube_alert_gate *ag = j->ag;
	l->have = true;
	l->key = j->key;
	l->result = (uint8_t)j->result;
	l->fail_open = ag->fail_open;
	int64_t cache_us = (int64_t)ag->cache_s * 1000000;
	l->until_mono_us = j->end_mono_us + cache_us;
	if (j->result == ALERT_FIRING)
		gate_alert_reason(&j->answer, l->reason, sizeof(l->reason));
	else if (j->result == ALERT_ERROR)
		ng_fmt(l->reason, sizeof(l->reason),
		       "alert gate: query failed (%s); failurePolicy Deny",
		       j->word ? j->word : "error");
	else
		l->reason[0] = '\0';
	count_result(g, j->result, ag->fail_open);
	bool ignored = j->result == ALERT_ERROR && ag->fail_open;
	struct ng_logline line;
	if (ng_log_begin(&line, j->result == ALERT_ERROR ? NG_LOG_WARN : NG_LOG_INFO, "gate",
			 ignored ? "alert gate failed; failurePolicy Ignore lets grants through"
				 : "alert gate evaluated")) {
		ng_log_str(&line, "result", result_names[j->result]);
		ng_log_i64(&line, "firing", j->answer.nfiring);
		if (j->result == ALERT_FIRING)
			ng_log_str(&line, "reason", l->reason);
		if (j->word)
			ng_log_str(&line, "err", j->word);
		ng_log_i64(&line, "code", j->code);
		ng_log_i64(&line, "duration_ms", (j->end_mono_us - j->t0_mono_us) / 1000);
		ng_log_i64(&line, "cache_s", ag->cache_s);
		ng_log_end(&line);
	}
}

/* An answer no request needs to wait for: the config that asked for it is gone. */
static void forget_answer(struct gate *g)
{
	memset(&g->alert, 0, sizeof(g->alert));
	atomic_store(&g->alert_firing, 0);
}

void gate_alert_forget(struct gate *g)
{
	job_drop(g);
	forget_answer(g);
}

/* Whether @ag may be asked under @s's healthHooks policy: its host among allowedHosts; the
 * address is checked where the call connects. */
static bool target_allowed(const struct kube_snapshot *s, const struct kube_alert_gate *ag)
{
	struct kube_hook_policy hp;
	pol_hook_policy_from(s, &hp);
	return pol_hook_allowed(&ag->target, &hp, kube_snapshot_pool(s), NULL) == NG_OK;
}

enum gate_alert_step gate_alert_check(struct gate *g, const struct kube_snapshot *s,
				      struct pol_gate_decision *d, int64_t now_wall_ms,
				      int64_t *ret_retry_by_wall_ms)
{
	const struct kube_ngc *ngc = kube_snapshot_config(s);
	const struct kube_alert_gate *ag = ngc && !ngc->invalid ? &ngc->alert : NULL;
	if (!ag || ag->mode == KUBE_ALERT_NONE) {
		if (g->alert_job || g->alert.have)
			gate_alert_forget(g);
		return GATE_ALERT_PASS;
	}
	uint64_t key = alert_key(ag);
	struct gate_alert_job *j = g->alert_job;
	if (j && gate_job_done(&j->t)) {
		if (j->key == key)
			keep_answer(g, j);
		job_drop(g);
		j = NULL;
	}
	struct gate_alert_last *l = &g->alert;
	int64_t now_mono_us = g->round_mono_us; /* the round's instant, as its now_wall_ms */
	bool fresh = l->have && l->key == key && now_mono_us < l->until_mono_us;
	if (!fresh && !target_allowed(s, ag)) {
		/* Never asked (a question in flight is stopped: the policy may have changed since
		 * it started): the answer is an error at once, kept as any other. */
		job_drop(g);
		j = NULL;
		struct gate_alert_job no = {.key = key, .ag = ag, .result = ALERT_ERROR};
		no.word = "URL not allowed by NodeGateConfig healthHooks";
		no.t0_mono_us = no.end_mono_us = now_mono_us;
		keep_answer(g, &no);
		fresh = true;
	}
	if (!fresh) {
		if (j && j->key != key)
			job_drop(g); /* asked under a config that changed since */
		if (!g->alert_job && !(g->alert_job = job_start(g, s, ag, key))) {
			ng_prom_add(&g->errors, 1);
			g->again_wall_ms = now_wall_ms + ALERT_AGAIN_MS;
		}
		return GATE_ALERT_WAIT;
	}
	if (l->result == ALERT_CLEAR || (l->result == ALERT_ERROR && l->fail_open))
		return GATE_ALERT_PASS;
	d->outcome = POL_GATE_PENDING;
	ng_fmt(d->reason, sizeof(d->reason), "%s", l->reason);
	/* On the round's clock: the answer expires that long from now. */
	*ret_retry_by_wall_ms = now_wall_ms + (l->until_mono_us - now_mono_us + 999) / 1000;
	return GATE_ALERT_HOLD;
}

ng_status gate_render_alert_metrics(const struct gate *cg, struct ng_buf *out)
{
	struct gate *g = (struct gate *)(uintptr_t)cg;
	ng_status st = ng_prom_header(out, "nodegate_alert_gate_evaluations_total", NG_PROM_COUNTER,
				      "Answers of the alert gate's Prometheus question, by result "
				      "(clear, firing, error).");
	for (int i = 0; st == NG_OK && i < 3; i++) {
		const struct ng_prom_label l[] = {{"result", result_names[i]}};
		st = ng_prom_u64(out, "nodegate_alert_gate_evaluations_total", l, 1,
				 ng_prom_get(&g->alert_evals[i]));
	}
	st = st ? st
		: ng_prom_header(out, "nodegate_alert_gate_firing", NG_PROM_GAUGE,
				 "1 while the alert gate's last answer says firing: no grants.");
	st = st ? st
		: ng_prom_u64(out, "nodegate_alert_gate_firing", NULL, 0,
			      atomic_load(&g->alert_firing));
	st = st ? st
		: ng_prom_header(out, "nodegate_alert_gate_errors_ignored_total", NG_PROM_COUNTER,
				 "Alert gate questions that failed under failurePolicy Ignore "
				 "(grants went on).");
	return st ? st
		  : ng_prom_u64(out, "nodegate_alert_gate_errors_ignored_total", NULL, 0,
				ng_prom_get(&g->alert_ignored));
}
