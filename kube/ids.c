/* Every intern id a record holds, for rebuilding the cache's string pool (kube/cache.c): an id
 * missed here would name "" in the next pool, so a field of kube/records.h that holds an id
 * must be visited here. tests/unit/test-kube-intern.c checks, over every fixture of the
 * repository, that decoding an object interns no string this walk does not visit. */
#include "kube/kinds.h"

#include "common/intern.h"

static void ids(kube_id_fn fn, void *ctx, const uint32_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fn(ctx, v[i]);
}

static void labels(kube_id_fn fn, void *ctx, const struct kube_label *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fn(ctx, l[i].key);
		fn(ctx, l[i].val);
	}
}

static void taints(kube_id_fn fn, void *ctx, const struct kube_taint *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fn(ctx, t[i].key);
		fn(ctx, t[i].val);
		fn(ctx, t[i].effect);
	}
}

static void reqs(kube_id_fn fn, void *ctx, const struct kube_requirement *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fn(ctx, r[i].key);
		ids(fn, ctx, r[i].values, r[i].nvalues);
	}
}

static void selector(kube_id_fn fn, void *ctx, const struct kube_selector *s)
{
	reqs(fn, ctx, s->reqs, s->nreqs);
}

static void drain_rules(kube_id_fn fn, void *ctx, const struct kube_drain_rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		selector(fn, ctx, &r[i].pod_selector);
		selector(fn, ctx, &r[i].ns_selector);
	}
}

static void node_selector(kube_id_fn fn, void *ctx, const struct kube_node_selector *s)
{
	for (size_t i = 0; i < s->nterms; i++) {
		reqs(fn, ctx, s->terms[i].exprs, s->terms[i].nexprs);
		reqs(fn, ctx, s->terms[i].fields, s->terms[i].nfields);
	}
}

static void int_or_string(kube_id_fn fn, void *ctx, const struct kube_int_or_string *v)
{
	if (v->set && v->is_str)
		fn(ctx, v->str);
}

static void hook(kube_id_fn fn, void *ctx, const struct kube_hook *h)
{
	fn(ctx, h->error);
	fn(ctx, h->token_ns);
	fn(ctx, h->token_name);
	fn(ctx, h->token_key);
}

static void budget(kube_id_fn fn, void *ctx, const struct kube_budget_common *b)
{
	hook(fn, ctx, &b->hook2);
	fn(ctx, b->ns);
	fn(ctx, b->name);
	fn(ctx, b->error);
	fn(ctx, b->freeze_reason);
	ids(fn, ctx, b->types, b->ntypes);
	for (size_t i = 0; i < b->nsoaking; i++)
		fn(ctx, b->soaking[i].node);
	for (size_t i = 0; i < b->nexclusions; i++)
		fn(ctx, b->exclusions[i].reason);
	for (size_t i = 0; i < b->nwindows; i++) {
		fn(ctx, b->windows[i].schedule);
		fn(ctx, b->windows[i].zone);
		int_or_string(fn, ctx, &b->windows[i].limit);
	}
}

void kube_ids_node(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_node *n = rec;
	fn(ctx, n->name);
	labels(fn, ctx, n->labels, n->nlabels);
	taints(fn, ctx, n->taints, n->ntaints);
	ids(fn, ctx, n->note.holders, n->note.nholders);
	taints(fn, ctx, n->note.taints, n->note.ntaints);
	for (size_t i = 0; i < n->nconditions; i++)
		fn(ctx, n->conditions[i].type);
	for (int i = 0; i < KUBE_NPROTECT; i++) {
		if (n->protect_present & (1u << i))
			fn(ctx, n->protect_val[i]);
		if (n->note.protect_had & (1u << i))
			fn(ctx, n->note.protect_was[i]);
	}
}

void kube_ids_pod(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_pod *p = rec;
	fn(ctx, p->ns);
	fn(ctx, p->node);
	fn(ctx, p->owner_kind);
	fn(ctx, p->finalizer);
	labels(fn, ctx, p->labels, p->nlabels);
	ids(fn, ctx, p->claims, p->nclaims);
	ids(fn, ctx, p->requests, p->nrequests);
}

void kube_ids_pvc(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_pvc *v = rec;
	fn(ctx, v->ns);
	fn(ctx, v->name);
	fn(ctx, v->volume);
	labels(fn, ctx, v->labels, v->nlabels);
}

void kube_ids_nd(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_nd *d = rec;
	fn(ctx, d->name);
	fn(ctx, d->type);
	fn(ctx, d->requestor);
	ids(fn, ctx, d->node_names, d->nnode_names);
	ids(fn, ctx, d->disrupted, d->ndisrupted);
	selector(fn, ctx, &d->node_selector);
	fn(ctx, d->selector_error);
	ids(fn, ctx, d->finalizers, d->nfinalizers);
	const struct kube_nd_detail *x = d->detail;
	if (!x)
		return;
	fn(ctx, x->drain.taint.key);
	fn(ctx, x->drain.taint.val);
	fn(ctx, x->drain.taint.effect);
	drain_rules(fn, ctx, x->drain.rules, x->drain.nrules);
	ids(fn, ctx, x->more_requestors, x->nmore_requestors);
	ids(fn, ctx, x->deleted_nodes, x->ndeleted_nodes);
	fn(ctx, x->spec_error);
	fn(ctx, x->created_by);
	fn(ctx, x->remediation);
	fn(ctx, x->capi_machine);
	for (size_t i = 0; i < x->nverdicts; i++) {
		fn(ctx, x->verdicts[i].kind);
		fn(ctx, x->verdicts[i].ns);
		fn(ctx, x->verdicts[i].name);
	}
}

void kube_ids_adb(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_adb *a = rec;
	budget(fn, ctx, &a->b);
	hook(fn, ctx, &a->hook);
	selector(fn, ctx, &a->pod_selector);
	selector(fn, ctx, &a->pvc_selector);
	int_or_string(fn, ctx, &a->max_disruptions);
}

void kube_ids_ndb(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_ndb *b = rec;
	fn(ctx, b->topology_key);
	int_or_string(fn, ctx, &b->max_per_domain);
	budget(fn, ctx, &b->b);
	selector(fn, ctx, &b->node_selector);
	int_or_string(fn, ctx, &b->max_disrupted);
	int_or_string(fn, ctx, &b->min_undisrupted);
	for (size_t i = 0; i < b->ntargets; i++) {
		fn(ctx, b->taint_targets[i].key);
		fn(ctx, b->taint_targets[i].val);
		fn(ctx, b->taint_targets[i].effect);
	}
}

void kube_ids_ngc(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_ngc *g = rec;
	fn(ctx, g->name);
	fn(ctx, g->error);
	selector(fn, ctx, &g->control_plane_selector);
	ids(fn, ctx, g->allowed_types, g->nallowed_types);
	ids(fn, ctx, g->exempt_users, g->nexempt);
	ids(fn, ctx, g->hooks.hosts, g->hooks.nhosts);
	ids(fn, ctx, g->dnd_override, g->ndnd_override);
	selector(fn, ctx, &g->protected_namespaces);
	selector(fn, ctx, &g->protected_job_pods);
	drain_rules(fn, ctx, g->drain_rules, g->ndrain_rules);
	for (size_t i = 0; i < g->nexclusions; i++)
		fn(ctx, g->exclusions[i].reason);
}

static void author(kube_id_fn fn, void *ctx, const struct kube_author *a)
{
	fn(ctx, a->name);
	ids(fn, ctx, a->groups, a->ngroups);
}

void kube_ids_nrem(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_nrem *r = rec;
	fn(ctx, r->name);
	ids(fn, ctx, r->finalizers, r->nfinalizers);
	fn(ctx, r->error);
	selector(fn, ctx, &r->node_selector);
	for (size_t i = 0; i < r->nconds; i++)
		fn(ctx, r->conds[i].type);
	fn(ctx, r->template_name);
	int_or_string(fn, ctx, &r->max_concurrent);
	int_or_string(fn, ctx, &r->max_unhealthy);
	for (size_t i = 0; i < r->nlast; i++) {
		fn(ctx, r->last[i].node);
		fn(ctx, r->last[i].request);
	}
	author(fn, ctx, &r->author);
}

void kube_ids_pv(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_pv *v = rec;
	fn(ctx, v->name);
	node_selector(fn, ctx, &v->affinity);
}

void kube_ids_ndt(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_ndt *t = rec;
	fn(ctx, t->name);
	fn(ctx, t->error);
	fn(ctx, t->type);
	fn(ctx, t->requestor);
	author(fn, ctx, &t->author);
}

void kube_ids_pdb(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_pdb *p = rec;
	fn(ctx, p->ns);
	fn(ctx, p->name);
	selector(fn, ctx, &p->selector);
}

void kube_ids_machine(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_machine *m = rec;
	fn(ctx, m->ns);
	fn(ctx, m->name);
	fn(ctx, m->node);
	fn(ctx, m->owner_kind);
	fn(ctx, m->owner_name);
	fn(ctx, m->cluster);
}

void kube_ids_lease(const void *rec, kube_id_fn fn, void *ctx)
{
	const struct kube_lease *l = rec;
	fn(ctx, l->ns);
	fn(ctx, l->name);
	fn(ctx, l->holder);
}

void kube_record_ids(enum kube_resource r, const void *rec, kube_id_fn fn, void *ctx)
{
	if (r < KUBE_RES_COUNT)
		kube_kinds[r].ids(rec, fn, ctx);
}
