/* The drainer's pods (docs/drainer.md "Which pods go", "How they go"): waiting for pods to leave
 * on their own, choosing those that must go (policy/drain.c decides), evicting or deleting them,
 * and waiting for their volumes to detach. Runs on the drainer's thread; the shared state is
 * controller/drain_internal.h's. */
#include "controller/drain_internal.h"

#include "budgets/selector.h"
#include "common/arena.h"
#include "common/backoff.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/jw.h"
#include "common/log.h"
#include "common/map.h"
#include "common/prom.h"
#include "common/regex.h"
#include "controller/leader.h"
#include "kube/lookup.h"
#include "kube/records.h"
#include "kube/runtime.h"
#include "kube/snapshot.h"
#include "kube/watch.h"
#include "kube/write.h"
#include "policy/drain.h"
#include "policy/drain_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* waitForPodCompletion: true while it still waits. */
bool waiting_for_pods(struct req *r, const struct kube_node *const *nodes, size_t nn)
{
	const struct kube_nd_drain *dr = &r->x->drain;
	if (!dr->has_wait || r->was > POL_PH_WAITING)
		return false;
	struct kube_selector sel = {true, 0, NULL};
	struct ng_err err = {0};
	if (dr->wait_pod_selector &&
	    pol_selector_for_pool(dr->wait_pod_selector, r->pool, r->arena, &sel, &err) != NG_OK)
		return false; /* refused by the webhook; checked with the spec */
	char msg[sizeof(r->msg)];
	size_t waiting = pol_drain_waiting(r->s, nodes, nn, &sel, msg, sizeof(msg));
	if (!waiting)
		return false;
	int64_t since = r->was == POL_PH_WAITING && r->ready ? r->ready->since_ms : r->now_ms;
	if (pol_drain_timed_out(since, dr->wait_timeout_s, r->now_ms))
		return false;
	if (dr->wait_timeout_s > 0)
		soon(r, r->now_mono_ms + (since + dr->wait_timeout_s * 1000 - r->now_ms));
	r->phase = POL_PH_WAITING;
	memcpy(r->msg, msg, sizeof(r->msg));
	(void)write_status(r);
	return true;
}

/* The labels of namespace @ns (an id of the step's pool), read once per step (kube/lookup.c);
 * false when they cannot be read. */
static bool ns_labels(void *ctx, uint32_t ns, const struct kube_label **ret, uint16_t *ret_n)
{
	struct req *r = ctx;
	for (size_t i = 0; i < r->nns; i++) {
		if (r->ns_seen[i].ns == ns) {
			*ret = r->ns_seen[i].labels;
			*ret_n = r->ns_seen[i].nlabels;
			return r->ns_seen[i].ok;
		}
	}
	const struct kube_label *labels = NULL;
	uint16_t n = 0;
	struct ng_err err = {0};
	bool ok = kube_get_namespace_labels(r->client, str(r, ns), r->pool, r->arena, &labels, &n,
					    &err) == NG_OK;
	if (!ok)
		soon(r, r->now_mono_ms + POLL_MS); /* read again shortly */
	if (r->nns < sizeof(r->ns_seen) / sizeof(r->ns_seen[0]))
		r->ns_seen[r->nns++] = (struct ns_seen){ns, ok, ok ? n : 0, ok ? labels : NULL};
	*ret = ok ? labels : NULL;
	*ret_n = ok ? n : 0;
	return ok;
}

/* Compiles the drain's filters and selector into @rules, with nodegate's own pods and the drain
 * rules of the request and of NodeGateConfig. False with @r->msg on a bad spec. */
static bool drain_rules(struct req *r, struct pol_drain_rules *rules, struct kube_selector *sel,
			struct kube_selector *self)
{
	struct drain *d = r->d;
	struct ng_err err = {0};
	if (pol_drain_rules_from(r->pool, &r->x->drain, r->arena, rules, sel, &err) != NG_OK) {
		ng_fmt(r->msg, sizeof(r->msg), "%s", err.msg);
		return false;
	}
	pol_drain_rules_config(rules, r->ngc, ns_labels, r);
	rules->self_ns = d->cfg.self_namespace ? ng_intern_find(r->pool, d->cfg.self_namespace,
								strlen(d->cfg.self_namespace))
					       : NG_INTERN_NONE;
	if (d->cfg.self_selector &&
	    pol_selector_for_pool(d->cfg.self_selector, r->pool, r->arena, self, &err) == NG_OK)
		rules->self_selector = self;
	return true;
}

/* Whether pod @p's namespace is protected (NodeGateConfig drain.protectedNamespaces). A
 * namespace that cannot be read counts as protected: the Eviction API is the safe way. */
static bool ns_protected(struct req *r, const struct kube_pod *p)
{
	const struct kube_selector *sel = r->ngc ? &r->ngc->protected_namespaces : NULL;
	if (!sel || !sel->present)
		return false;
	const struct kube_label *labels;
	uint16_t n;
	return !ns_labels(r, p->ns, &labels, &n) || bud_selector_matches(sel, labels, n, r->pool);
}

/* Asks pod @p to leave by the drain's strategy. Returns whether it was answered yes. */
static bool evict_one(struct req *r, const struct kube_pod *p, uint64_t key, char *refusal,
		      size_t cap)
{
	struct drain *d = r->d;
	uint8_t strategy = r->x->drain.strategy;
	const char *ns = str(r, p->ns);
	struct kube_write_result w;
	int64_t retry_s = 0;
	bool use_eviction = strategy == KUBE_DRAIN_EVICT || ns_protected(r, p);
	if (use_eviction) {
		kube_evict_pod(r->client, ns, p->name, &retry_s, &w);
	} else {
		const struct kube_ref ref = {KUBE_KIND_POD, ns, p->name};
		kube_delete(r->client, &ref, strategy == KUBE_DRAIN_FORCE_DELETE ? 0 : -1, &w);
	}
	if (w.outcome == KUBE_WRITE_OK || w.outcome == KUBE_WRITE_GONE) {
		asked_put(r, key, r->now_mono_ms + ASKED_MS);
		if (w.outcome == KUBE_WRITE_OK) {
			ng_prom_add(&d->evicted[use_eviction ? KUBE_DRAIN_EVICT : strategy], 1);
			char what[300];
			ng_fmt(what, sizeof(what), "%s/%s by %s", ns, p->name,
			       use_eviction ? "eviction" : strategy_names[strategy]);
			logline(r, "evicted", str(r, p->node), what);
		}
		return w.outcome == KUBE_WRITE_OK;
	}
	int64_t wait_ms = (w.http == 429 ? (retry_s > 0 ? retry_s : DEFAULT_RETRY_AFTER_S)
					 : DEFAULT_RETRY_AFTER_S) *
			  1000;
	asked_put(r, key, r->now_mono_ms + wait_ms);
	soon(r, r->now_mono_ms + wait_ms);
	if (!*refusal)
		ng_fmt(refusal, cap, "%s/%s: %s%s", ns, p->name,
		       w.http == 429 ? "eviction refused for now (429): " : "", w.err.msg);
	if (w.http != 429)
		count_write(d, &w, "pod not evicted",
			    &(struct kube_ref){KUBE_KIND_POD, ns, p->name});
	return false;
}

/* Asks each chosen pod of @sv that is not yet leaving, and was not asked a moment ago, to go.
 * The first refusal is in @refusal. */
static void ask_to_leave(struct req *r, const struct pol_drain_survey *sv, char *refusal,
			 size_t refusal_cap)
{
	/* A pod whose rules cannot be decided might belong to an earlier batch: ask nobody. */
	if (r->x->drain.strategy == KUBE_DRAIN_NONE || sv->nundecided)
		return;
	for (size_t i = 0; i < sv->nchosen; i++) {
		const struct kube_pod *p = sv->chosen[i];
		uint64_t key = pod_key(r, p);
		bool leaving = (p->flags & KUBE_POD_TERMINATING) != 0;
		if (!leaving && !asked_has(r, key))
			leaving = evict_one(r, p, key, refusal, refusal_cap);
		/* The drain waits for it to go: the watch publishes its deletion at once. */
		if (leaving)
			kube_watch_await_gone(r->d->cfg.watch, KUBE_RES_PODS, str(r, p->ns),
					      p->name, r->now_mono_ms + AWAIT_GONE_MS);
	}
}

/* The request's entry in the chosen-pod counts (added when @add); NULL when none, or on OOM
 * (only the count is lost then). */
static struct chosen *chosen_of(struct drain *d, const char *name, bool add)
{
	uint64_t key = ng_fnv1a64(NG_FNV64_INIT, name, strlen(name));
	for (size_t i = 0; i < d->nchosen; i++)
		if (d->chosen[i].key == key)
			return &d->chosen[i];
	struct chosen *c =
	    add ? ng_array_grow(d->chosen, &d->capchosen, d->nchosen, sizeof(*c)) : NULL;
	if (!c)
		return NULL;
	d->chosen = c;
	d->chosen[d->nchosen] = (struct chosen){key, 0};
	return &d->chosen[d->nchosen++];
}

void forget_chosen(struct drain *d, const char *name)
{
	pthread_mutex_lock(&d->mu);
	struct chosen *c = chosen_of(d, name, false);
	if (c)
		*c = d->chosen[--d->nchosen];
	pthread_mutex_unlock(&d->mu);
}

/* status.drain's counts from the pods left: totalPods is the most the attempts chose,
 * evictedPods those gone since. */
static void count_pods(struct req *r, size_t left)
{
	pthread_mutex_lock(&r->d->mu);
	struct chosen *c = chosen_of(r->d, r->name, true);
	if (c && c->pods > r->ds.total)
		r->ds.total = c->pods;
	if (r->ds.total < (int64_t)left)
		r->ds.total = (int64_t)left;
	if (c)
		c->pods = r->ds.total;
	pthread_mutex_unlock(&r->d->mu);
	r->ds.evicted = r->ds.total - (int64_t)left;
	r->ds.remaining = r->x->drain.skip_waiting_for_eviction ? 0 : (int64_t)left;
}

/* VolumeAttachments still naming the nodes but for the volumes of the pods the drain skips (one
 * that cannot be read counts as attached). */
static size_t volumes_attached(struct req *r, const struct kube_node *const *nodes, size_t nn,
			       const struct pol_drain_survey *sv)
{
	const struct kube_nd_drain *dr = &r->x->drain;
	size_t attached = 0;
	if (!dr->wait_for_volume_detach || dr->strategy == KUBE_DRAIN_NONE)
		return 0;
	for (size_t i = 0; i < nn; i++) {
		size_t n = 0;
		struct ng_err err = {0};
		if (kube_count_volume_attachments(r->client, str(r, nodes[i]->name),
						  sv->kept_volumes, sv->nkept, &n, &err) != NG_OK)
			n = 1;
		attached += n;
	}
	if (attached)
		soon(r, r->now_mono_ms + POLL_MS);
	return attached;
}

/* After the asks of an attempt: its counts, the volumes, the timeout and the message naming
 * what each pod left waits for (@sv) and the first refusal. True when the pods are gone (and
 * the volumes detached). */
static bool attempt_waits(struct req *r, const struct kube_node *const *nodes, size_t nn,
			  const struct pol_drain_survey *sv, const char *refusal)
{
	const struct kube_nd_drain *dr = &r->x->drain;
	/* Every pod of every batch, and those waited for, is left; skipWaitingForEviction does not
	 * wait for the last batch to go, but a later batch waits for the one before it. */
	size_t later = sv->nlater + sv->nwaiting + sv->nundecided;
	count_pods(r, sv->nchosen + later);
	if (dr->skip_waiting_for_eviction && later)
		r->ds.remaining = (int64_t)(sv->nchosen + later);
	/* With rules at work the batch in progress, what is waited for and skipped; else "". */
	char batch[sizeof(r->msg)];
	pol_drain_progress(sv, batch, sizeof(batch));
	size_t attached = r->ds.remaining ? 0 : volumes_attached(r, nodes, nn, sv);
	if (r->ds.remaining == 0 && attached == 0)
		return true;
	const char *sep = *refusal ? "; " : "";
	if (pol_drain_timed_out(r->ds.attempt_started_ms, dr->timeout_s, r->now_ms)) {
		char why[sizeof(r->msg)];
		if (r->ds.remaining)
			ng_fmt(why, sizeof(why),
			       "timed out after %llds with %lld pod(s) left: %s%s%s",
			       (long long)dr->timeout_s, (long long)r->ds.remaining,
			       *batch ? batch : sv->left, sep, refusal);
		else
			ng_fmt(why, sizeof(why),
			       "timed out after %llds waiting for %zu volume attachment(s)",
			       (long long)dr->timeout_s, attached);
		fail_attempt(r, F_TIMEOUT, why);
		return false;
	}
	if (dr->timeout_s > 0)
		soon(r, r->now_mono_ms +
			    (r->ds.attempt_started_ms + dr->timeout_s * 1000 - r->now_ms));
	r->phase = POL_PH_DRAINING;
	if (r->ds.remaining && *batch)
		ng_fmt(r->msg, sizeof(r->msg), "attempt %lld: %s%s%s",
		       (long long)r->ds.attempts + 1, batch, sep, refusal);
	else if (r->ds.remaining)
		ng_fmt(r->msg, sizeof(r->msg),
		       "attempt %lld: waiting for %lld pod(s) to go: %s%s%s",
		       (long long)r->ds.attempts + 1, (long long)r->ds.remaining, sv->left, sep,
		       refusal);
	else
		ng_fmt(r->msg, sizeof(r->msg), "waiting for %zu volume attachment(s) to detach",
		       attached);
	(void)write_status(r);
	return false;
}

/* The attempt's evictions and waits: policy surveys the pods, then the drainer asks those
 * chosen to go. True when the pods are gone (and the volumes detached). */
bool drain_pods(struct req *r, const struct kube_node *const *nodes, size_t nn)
{
	if (pol_drain_backing_off(r->ds.backoff_until_ms, r->now_ms)) {
		/* Still backing off: keep the message of the failed attempt. */
		soon(r, r->now_mono_ms + (r->ds.backoff_until_ms - r->now_ms));
		return false;
	}
	r->ds.backoff_until_ms = 0;
	if (!r->ds.attempt_started_ms) {
		r->ds.attempt_started_ms = r->now_ms;
		r->began = true;
	}
	struct pol_drain_rules rules;
	struct kube_selector sel, self;
	if (!drain_rules(r, &rules, &sel, &self)) {
		r->phase = POL_PH_FAILED;
		ng_prom_add(&r->d->failures[F_SPEC], 1);
		(void)write_status(r);
		return false;
	}
	const struct pol_drain_context cx = {&rules, r->x->drain.strategy != KUBE_DRAIN_NONE,
					     r->ngc ? &r->ngc->protected_job_pods : NULL, r->nd,
					     r->now_ms};
	struct pol_drain_survey *sv = ng_arena_alloc(r->arena, sizeof(*sv));
	bool ok = sv && pol_drain_survey(r->s, nodes, nn, &cx, r->arena, sv) == NG_OK;
	pol_drain_rules_put(&rules);
	if (!ok) {
		soon(r, r->now_mono_ms + POLL_MS); /* out of memory: try again shortly */
		return false;
	}
	if (*sv->stop) {
		fail_attempt(r, sv->nblocked ? F_BLOCKED : F_HELD, sv->stop);
		return false;
	}
	char refusal[300] = "";
	ask_to_leave(r, sv, refusal, sizeof(refusal));
	return attempt_waits(r, nodes, nn, sv, refusal);
}

/* The operation Job's name for one node: stable, short enough for a label value. */
