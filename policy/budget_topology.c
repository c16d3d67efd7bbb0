/* A node budget's topology limits (topologyKey): at most maxDisruptedDomains domains with a
 * disrupted node, and at most maxDisruptedNodesPerDomain nodes of each domain the request
 * touches. */
#include "policy/disruption_internal.h"

/* One topology domain of a budget's scope: its nodes, those disrupted now, and after the
 * request. */
struct domain {
	uint32_t value; /* the label's value id; NG_INTERN_NONE for nodes without the label */
	int64_t nodes, before, after;
	int64_t asked; /* the request's nodes in it */
	bool touched;  /* the request has a node in it */
};

/* The domains of scope @sc (an NDB's, with @b's topologyKey, numbered by the ledger) into @ret
 * (malloc'ed), counted node by node: what a budget that soaks needs. */
static ng_status domains_of(const struct eval *e, const struct kube_ndb *b, struct bscope *sc,
			    struct domain **ret, size_t *ret_n)
{
	if (pd_ndb_domains(e->ledger, sc, b) != NG_OK)
		return NG_ENOMEM;
	struct domain *d = calloc(sc->ndoms ? sc->ndoms : 1, sizeof(*d));
	if (!d)
		return NG_ENOMEM;
	for (size_t i = 0; i < sc->ndoms; i++)
		d[i] = (struct domain){.value = sc->doms[i].value, .nodes = sc->doms[i].nodes};
	for (size_t k = 0; k < sc->n; k++) {
		struct domain *x = &d[sc->dom[k]];
		bool was = pol_ledger_held_at(e->ledger, sc->idx[k]) || sc->unavail[k] ||
			   (sc->soak_ready && sc->soak[k]);
		bool asked = in_sorted(e->nodes, e->nnodes, sc->names[k]);
		x->before += was;
		x->after += was || asked;
		x->asked += asked;
		x->touched |= asked;
	}
	*ret = d;
	*ret_n = sc->ndoms;
	return NG_OK;
}

/* One of the request's nodes in a topology scope: its domain, and whether it is disrupted now. */
struct domain_hit {
	uint32_t slot;
	bool was;
};

static int cmp_hit(const void *a, const void *b)
{
	const struct domain_hit *x = a, *y = b;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The domains of scope @sc that the request touches (malloc'ed into @ret, in the scope's
 * order, as domains_of() has them), from the domains the ledger keeps, and in *@ret_others how
 * many others have a disrupted node: the request's nodes are looked at, not the pool's. Not
 * for a budget that soaks (its soaking nodes count, per instant, as disrupted). */
static ng_status touched_domains(const struct eval *e, const struct kube_ndb *b, struct bscope *sc,
				 struct domain **ret, size_t *ret_n, int64_t *ret_others)
{
	if (pd_ndb_domains(e->ledger, sc, b) != NG_OK)
		return NG_ENOMEM;
	struct domain_hit *hit = calloc(e->nnodes ? e->nnodes : 1, sizeof(*hit));
	struct domain *d = calloc(e->nnodes ? e->nnodes : 1, sizeof(*d));
	if (!hit || !d) {
		free(hit);
		free(d);
		return NG_ENOMEM;
	}
	size_t nh = 0;
	for (size_t x = 0; x < e->nnodes; x++) {
		const struct kube_node *n = e->recs[x];
		size_t i = n ? (size_t)(n - e->ledger->nodes) : SIZE_MAX;
		size_t j = n ? pd_scope_pos(sc, i) : SIZE_MAX;
		if (j != SIZE_MAX)
			hit[nh++] = (struct domain_hit){
			    sc->dom[j], pol_ledger_held_at(e->ledger, i) || sc->unavail[j]};
	}
	qsort(hit, nh, sizeof(*hit), cmp_hit);
	size_t nd = 0;
	int64_t others = (int64_t)sc->ndoms_disrupted;
	for (size_t k = 0; k < nh; k++) {
		if (k == 0 || hit[k].slot != hit[k - 1].slot) {
			const struct scope_domain *s = &sc->doms[hit[k].slot];
			d[nd++] = (struct domain){.value = s->value,
						  .nodes = s->nodes,
						  .before = s->disrupted,
						  .after = s->disrupted,
						  .touched = true};
			others -= s->disrupted > 0;
		}
		d[nd - 1].asked++;
		d[nd - 1].after += !hit[k].was;
	}
	free(hit);
	*ret = d;
	*ret_n = nd;
	*ret_others = others;
	return NG_OK;
}

/* Failed verdict @v of NDB @b on its topology limits, with @sc's domains @d (@nd of them) and
 * its maxDisruptedNodesPerDomain @per (NULL: none): whether the request alone touches more
 * domains than the budget allows, or more nodes of one domain. Windows do not change these
 * limits, so then it never fits (check_never()). */
static void topology_never(struct eval *e, struct pol_budget_verdict *v, const struct kube_ndb *b,
			   const struct bscope *sc, const struct domain *d, size_t nd,
			   const struct bud_int_or_percent *per)
{
	int64_t own = 0;
	for (size_t i = 0; i < nd; i++)
		own += d[i].asked > 0;
	const char *key = str(e, b->topology_key);
	if (b->max_domains >= 0 && own > b->max_domains) {
		ng_fmt(v->reason, sizeof(v->reason),
		       "needs nodes in %lld %s domains of %.*s, which allows at most %lld: raise "
		       "maxDisruptedDomains to %lld or split the request",
		       (long long)own, key, (int)sc->what_len, sc->what, (long long)b->max_domains,
		       (long long)own);
		pd_mark_never(e, v);
		return;
	}
	for (size_t i = 0; per && i < nd; i++) {
		int64_t limit = bud_int_or_percent_scaled(per, d[i].nodes);
		if (d[i].asked <= limit)
			continue;
		ng_fmt(v->reason, sizeof(v->reason),
		       "needs %lld nodes of %s=%s of %.*s, which allows at most %lld of its %lld "
		       "nodes per domain: raise maxDisruptedNodesPerDomain to %lld or split the "
		       "request",
		       (long long)d[i].asked, key,
		       d[i].value == NG_INTERN_NONE ? "(none)" : str(e, d[i].value),
		       (int)sc->what_len, sc->what, (long long)limit, (long long)d[i].nodes,
		       (long long)d[i].asked);
		pd_mark_never(e, v);
		return;
	}
}

/* The topology limits of NDB @b on its scope @sc: at most maxDisruptedDomains domains with a
 * disrupted node once the request is granted, and in each domain the request touches at most
 * maxDisruptedNodesPerDomain of its nodes (a percentage of the domain, rounded up). */
ng_status pd_check_topology(struct eval *e, struct pol_budget_verdict *v, const struct kube_ndb *b,
			    struct bscope *sc)
{
	struct domain *d;
	size_t nd;
	int64_t domains = 0; /* with a disrupted node, among those the request does not touch */
	if (b->b.soak_ms ? domains_of(e, b, sc, &d, &nd) != NG_OK
			 : touched_domains(e, b, sc, &d, &nd, &domains) != NG_OK)
		return NG_ENOMEM;
	struct bud_int_or_percent per = {0};
	bool has_per = b->max_per_domain.set && bud_int_or_percent_from(&b->max_per_domain, e->pool,
									"", &per, NULL) == NG_OK;
	for (size_t i = 0; i < nd; i++)
		domains += d[i].after > 0;
	const char *key = str(e, b->topology_key);
	if (b->max_domains >= 0 && domains > b->max_domains) {
		pd_fail_v(e, v);
		ng_fmt(v->reason, sizeof(v->reason),
		       "%.*s: nodes of %lld %s domains would be disrupted at once (limit "
		       "maxDisruptedDomains %lld)",
		       (int)sc->what_len, sc->what, (long long)domains, key,
		       (long long)b->max_domains);
	}
	for (size_t i = 0; v->ok && has_per && i < nd; i++) {
		int64_t limit = bud_int_or_percent_scaled(&per, d[i].nodes);
		if (!d[i].touched || d[i].after <= limit)
			continue;
		pd_fail_v(e, v);
		ng_fmt(
		    v->reason, sizeof(v->reason),
		    "%.*s: %s=%s: %lld of its %lld nodes disrupted, this request adds %lld (limit "
		    "maxDisruptedNodesPerDomain %lld)",
		    (int)sc->what_len, sc->what, key,
		    d[i].value == NG_INTERN_NONE ? "(none)" : str(e, d[i].value),
		    (long long)d[i].before, (long long)d[i].nodes,
		    (long long)(d[i].after - d[i].before), (long long)limit);
	}
	if (!v->ok)
		topology_never(e, v, b, sc, d, nd, has_per ? &per : NULL);
	free(d);
	return NG_OK;
}
