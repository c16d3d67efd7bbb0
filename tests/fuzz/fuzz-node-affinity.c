/* libFuzzer target for node affinity (STYLE.md B12 "Fuzz"): a PersistentVolume's
 * spec.nodeAffinity as kube/decode.c reads it (nodeSelectorTerms of matchExpressions with In,
 * NotIn, Exists, DoesNotExist, Gt, Lt and matchFields on metadata.name; an invalid term matches
 * nothing) and as budgets/selector.c matches it against nodes (bud_pv_pins_node()).
 *
 * The input is the value of spec.nodeAffinity: when it is one JSON value, it is put into a
 * PersistentVolume and decoded into a snapshot (kube_builder_add_json(), the way the cache
 * decodes it). Invariants, each abort()ing when broken:
 * - decoding the same bytes twice gives equal records; a refusal is NG_ELIMIT (too many terms)
 *   or NG_ENOMEM with a readable message;
 * - a requirement of a valid term has the value count its operator needs, and Gt/Lt hold the
 *   number their one value reads as;
 * - decode -> encode -> decode is stable: the volume written back (tests/fuzz/roundtrip.c)
 *   decodes to an equal record;
 * - matching, in a snapshot holding the volume and nodes (a few fixed ones, and per term one
 *   built to satisfy it): terms are ORed (the volume pins a node exactly when one of its terms
 *   alone does), a term that pins a node has every requirement hold for it, an invalid or
 *   empty term pins nothing, the node built for a term pins it whenever the term is
 *   satisfiable for sure (expressions on distinct keys, at most one field: In with a value,
 *   Exists, Gt/Lt on a number one past the bound, NotIn and DoesNotExist by the key's
 *   absence, a field by the node's name), and the volume written back pins the same nodes. */
#include "budgets/budgets.h"
#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/jw.h"
#include "common/limits.h"
#include "common/parse.h"
#include "kube/snapshot.h"
#include "tests/fuzz/roundtrip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The volume of the input, and nodes to match it against: a List for kube_builder_add_json(). */
static const char pv_head[] = "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{"
			      "\"name\":\"pv\"},\"spec\":{\"nodeAffinity\":";
static const char pv_tail[] = "}}";
static const char fixed_nodes[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":{"
    "\"kubernetes.io/hostname\":\"n1\",\"topology.kubernetes.io/zone\":\"a\",\"n\":\"5\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n2\",\"labels\":{"
    "\"kubernetes.io/hostname\":\"n2\",\"topology.kubernetes.io/zone\":\"b\",\"n\":\"-7\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"bare\"}}";

static const char *str(const struct ng_intern *pool, uint32_t id)
{
	return ng_intern_str(pool, id, NULL);
}

static void check_terms(const struct kube_pv *pv, const struct ng_intern *pool)
{
	for (uint16_t t = 0; t < pv->affinity.nterms; t++) {
		const struct kube_node_term *term = &pv->affinity.terms[t];
		for (uint16_t i = 0; !term->invalid && i < term->nexprs + term->nfields; i++) {
			const struct kube_requirement *r =
			    i < term->nexprs ? &term->exprs[i] : &term->fields[i - term->nexprs];
			bool single = r->op == KUBE_OP_GT || r->op == KUBE_OP_LT;
			bool none = r->op == KUBE_OP_EXISTS || r->op == KUBE_OP_DOES_NOT_EXIST;
			ng_fuzz_check(r->op <= KUBE_OP_LT);
			ng_fuzz_check(none     ? r->nvalues == 0
				      : single ? r->nvalues == 1
					       : r->nvalues > 0);
			if (i >= term->nexprs)
				ng_fuzz_check(strcmp(str(pool, r->key), "metadata.name") == 0 &&
					      r->nvalues == 1 &&
					      (r->op == KUBE_OP_IN || r->op == KUBE_OP_NOTIN));
			if (single) {
				int64_t num;
				const char *v = str(pool, r->values[0]);
				ng_fuzz_check(ng_parse_i64(v, strlen(v), INT64_MIN, INT64_MAX,
							   &num) == NG_OK &&
					      num == r->num);
			}
		}
	}
}

/* A label value that satisfies requirement @r, or NULL when leaving the key out does. */
static const char *satisfying(const struct kube_requirement *r, const struct ng_intern *pool,
			      char *tmp, size_t cap)
{
	switch (r->op) {
	case KUBE_OP_IN:
		return str(pool, r->values[0]);
	case KUBE_OP_EXISTS:
		return "x";
	case KUBE_OP_GT:
	case KUBE_OP_LT:
		if ((r->op == KUBE_OP_GT && r->num == INT64_MAX) ||
		    (r->op == KUBE_OP_LT && r->num == INT64_MIN))
			return "0";
		(void)snprintf(tmp, cap, "%lld",
			       (long long)(r->op == KUBE_OP_GT ? r->num + 1 : r->num - 1));
		return tmp;
	default: /* NotIn, DoesNotExist */
		return NULL;
	}
}

/* The name of the node built for valid term @t of @aff (its In field's value, else
 * "derived-<t>"; @buf holds @cap bytes), and whether that node satisfies the term for sure: its
 * expressions are on distinct keys, it has at most one field, no Gt on INT64_MAX nor Lt on
 * INT64_MIN, a field names a node ("" names none) other than the built name, and no other node
 * has the name. */
static bool derived_name(const struct kube_node_selector *aff, uint16_t t,
			 const struct ng_intern *pool, char *buf, size_t cap, const char **ret_name)
{
	const struct kube_node_term *term = &aff->terms[t];
	(void)snprintf(buf, cap, "derived-%u", (unsigned)t);
	*ret_name = buf;
	for (uint16_t i = 0; i < term->nfields; i++)
		if (term->fields[i].op == KUBE_OP_IN && *str(pool, term->fields[i].values[0]))
			*ret_name = str(pool, term->fields[i].values[0]);
	bool sure = term->nfields <= 1 && term->nexprs + term->nfields > 0;
	for (uint16_t i = 0; sure && i < term->nexprs; i++) {
		const struct kube_requirement *r = &term->exprs[i];
		for (uint16_t k = 0; sure && k < i; k++)
			sure = term->exprs[k].key != r->key;
		sure = sure && !(r->op == KUBE_OP_GT && r->num == INT64_MAX) &&
		       !(r->op == KUBE_OP_LT && r->num == INT64_MIN);
	}
	if (sure && term->nfields) {
		const char *v = str(pool, term->fields[0].values[0]);
		sure = term->fields[0].op == KUBE_OP_IN ? *v != '\0' : strcmp(v, *ret_name) != 0;
	}
	static const char *const fixed[] = {"n1", "n2", "bare"};
	for (size_t i = 0; sure && i < sizeof(fixed) / sizeof(fixed[0]); i++)
		sure = strcmp(*ret_name, fixed[i]) != 0;
	for (uint16_t u = 0; sure && u < aff->nterms; u++) {
		char other[32];
		const char *name = other;
		if (u == t || aff->terms[u].invalid)
			continue;
		(void)snprintf(other, sizeof(other), "derived-%u", (unsigned)u);
		for (uint16_t i = 0; i < aff->terms[u].nfields; i++)
			if (aff->terms[u].fields[i].op == KUBE_OP_IN &&
			    *str(pool, aff->terms[u].fields[i].values[0]))
				name = str(pool, aff->terms[u].fields[i].values[0]);
		sure = strcmp(name, *ret_name) != 0;
	}
	return sure;
}

/* One node per valid term, labelled (first requirement of a key wins) to satisfy it, named by
 * derived_name(). */
static void derived_nodes(struct ng_jw *w, const struct kube_pv *pv, const struct ng_intern *pool)
{
	for (uint16_t t = 0; t < pv->affinity.nterms; t++) {
		const struct kube_node_term *term = &pv->affinity.terms[t];
		if (term->invalid)
			continue;
		char buf[32];
		const char *node_name;
		(void)derived_name(&pv->affinity, t, pool, buf, sizeof(buf), &node_name);
		ng_jw_obj(w);
		ng_jw_kstr(w, "apiVersion", "v1");
		ng_jw_kstr(w, "kind", "Node");
		ng_jw_key(w, "metadata");
		ng_jw_obj(w);
		ng_jw_kstr(w, "name", node_name);
		ng_jw_key(w, "labels");
		ng_jw_obj(w);
		for (uint16_t i = 0; i < term->nexprs; i++) {
			const struct kube_requirement *r = &term->exprs[i];
			bool seen = false;
			for (uint16_t k = 0; k < i && !seen; k++)
				seen = term->exprs[k].key == r->key;
			char tmp[32];
			const char *v = satisfying(r, pool, tmp, sizeof(tmp));
			if (seen || !v)
				continue;
			ng_jw_kstr(w, str(pool, r->key), v);
		}
		ng_jw_obj_end(w);
		ng_jw_obj_end(w);
		ng_jw_obj_end(w);
	}
}

/* A snapshot of the List of @items (@len bytes of JSON array members), or NULL with @reterr. */
static struct kube_snapshot *snapshot(const char *items, size_t len, struct ng_err *reterr)
{
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	ng_fuzz_check(ng_buf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[") ==
			  NG_OK &&
		      ng_buf_append(&b, items, len) == NG_OK && ng_buf_puts(&b, "]}") == NG_OK);
	struct kube_builder *kb = kube_builder_create();
	struct kube_snapshot *s = NULL;
	ng_fuzz_check(kb != NULL);
	if (kube_builder_add_json(kb, b.data, b.len, reterr) != NG_OK)
		kube_builder_destroy(kb);
	else
		ng_fuzz_check(kube_builder_finish(kb, &s) == NG_OK);
	ng_buf_finish(&b);
	return s;
}

/* The volume in @pv_json with the fixed nodes and those derived from @pv (of @pool); NULL when
 * a derived node is refused (a label key twice, an empty name). */
static struct kube_snapshot *cluster(const char *pv_json, size_t len, const struct kube_pv *pv,
				     const struct ng_intern *pool)
{
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_arr(&w);
	ng_jw_raw(&w, pv_json, len);
	ng_jw_raw(&w, fixed_nodes, strlen(fixed_nodes));
	derived_nodes(&w, pv, pool);
	ng_jw_arr_end(&w);
	ng_fuzz_check(ng_jw_finish(&w) == NG_OK);
	struct ng_err err = {0};
	/* Without the array's brackets: snapshot() puts the items in a List. */
	struct kube_snapshot *s = snapshot(b.data + 1, b.len - 2, &err);
	ng_buf_finish(&b);
	return s;
}

static bool term_holds(const struct kube_node_term *term, const struct kube_node *node,
		       const struct ng_intern *pool)
{
	for (uint16_t i = 0; i < term->nexprs; i++)
		if (!bud_requirement_matches(&term->exprs[i], node->labels, node->nlabels, pool))
			return false;
	for (uint16_t i = 0; i < term->nfields; i++) {
		const struct kube_requirement *r = &term->fields[i];
		bool eq = r->values[0] == node->name;
		if (r->op == KUBE_OP_IN ? !eq : eq)
			return false;
	}
	return true;
}

/* Whether the volume of @s pins the node named @name (which @s holds). */
static bool pins(const struct kube_snapshot *s, const char *name)
{
	size_t npv, nnodes;
	const struct kube_pv *pvs = kube_snapshot_pvs(s, &npv);
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nnodes);
	const struct ng_intern *pool = kube_snapshot_pool(s);
	for (size_t n = 0; n < nnodes; n++)
		if (strcmp(str(pool, nodes[n].name), name) == 0)
			return bud_pv_pins_node(s, &pvs[0], &nodes[n]);
	abort();
}

/* Matching in @s; the same answers from @s2, the volume written back with the same nodes. */
static void check_matches(const struct kube_snapshot *s, const struct kube_snapshot *s2)
{
	size_t npv, nnodes;
	const struct kube_pv *pvs = kube_snapshot_pvs(s, &npv);
	const struct kube_node *nodes = kube_snapshot_nodes(s, &nnodes);
	const struct ng_intern *pool = kube_snapshot_pool(s);
	ng_fuzz_check(npv == 1);
	const struct kube_node_selector *aff = &pvs[0].affinity;
	for (size_t n = 0; n < nnodes; n++) {
		bool pinned = bud_pv_pins_node(s, &pvs[0], &nodes[n]);
		bool any = false;
		for (uint16_t t = 0; t < aff->nterms; t++) {
			const struct kube_node_term *term = &aff->terms[t];
			const struct kube_node_selector one = {true, 1, term};
			bool alone = bud_node_selector_matches(&one, &nodes[n], pool);
			if (alone)
				ng_fuzz_check(!term->invalid && term->nexprs + term->nfields > 0 &&
					      term_holds(term, &nodes[n], pool));
			any = any || alone;
		}
		ng_fuzz_check(pinned == any && (aff->present || !pinned));
		ng_fuzz_check(pinned == pins(s2, str(pool, nodes[n].name)));
	}
	/* The node built for a term it surely satisfies is pinned by that term alone. */
	for (uint16_t t = 0; t < aff->nterms; t++) {
		char buf[32];
		const char *name;
		if (aff->terms[t].invalid || !derived_name(aff, t, pool, buf, sizeof(buf), &name))
			continue;
		const struct kube_node_selector one = {true, 1, &aff->terms[t]};
		bool found = false;
		for (size_t n = 0; n < nnodes && !found; n++) {
			found = strcmp(str(pool, nodes[n].name), name) == 0;
			if (found && !bud_node_selector_matches(&one, &nodes[n], pool)) {
				(void)fprintf(stderr,
					      "node-affinity: node %s does not satisfy term %u\n",
					      name, (unsigned)t);
				abort();
			}
		}
		ng_fuzz_check(found);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *value = NULL;
	if (ng_json_parse((const char *)data, size, NULL, &value, NULL) != NG_OK)
		return 0;
	cJSON_Delete(value);
	struct ng_buf text, again;
	ng_buf_init(&text, NG_MAX_BODY_BYTES);
	ng_buf_init(&again, NG_MAX_BODY_BYTES);
	struct kube_snapshot *a = NULL, *b = NULL, *c = NULL, *c2 = NULL;
	if (ng_buf_puts(&text, pv_head) != NG_OK || ng_buf_append(&text, data, size) != NG_OK ||
	    ng_buf_puts(&text, pv_tail) != NG_OK)
		goto out;

	struct ng_err ea = {0}, eb = {0};
	a = snapshot(text.data, text.len, &ea);
	b = snapshot(text.data, text.len, &eb);
	ng_fuzz_check(!a == !b);
	if (!a) {
		ng_fuzz_check((ea.status == NG_ELIMIT || ea.status == NG_ENOMEM) &&
			      eb.status == ea.status && strcmp(ea.msg, eb.msg) == 0 &&
			      ng_fuzz_message_ok(ea.msg, data, size));
		goto out;
	}
	size_t n;
	const struct kube_pv *pv = kube_snapshot_pvs(a, &n);
	const struct ng_intern *pool = kube_snapshot_pool(a);
	ng_fuzz_check(n == 1);
	ng_fuzz_check(ng_fuzz_same_pv(pv, pool, kube_snapshot_pvs(b, &n), kube_snapshot_pool(b)));
	check_terms(pv, pool);

	ng_fuzz_check(ng_fuzz_encode_pv(pv, pool, &again) == NG_OK);
	c = cluster(text.data, text.len, pv, pool);
	c2 = cluster(again.data, again.len, pv, pool);
	ng_fuzz_check(!c == !c2);
	if (!c)
		goto out;
	if (!ng_fuzz_same_pv(pv, pool, kube_snapshot_pvs(c2, &n), kube_snapshot_pool(c2))) {
		(void)fprintf(stderr, "roundtrip: written back as\n%s\n", again.data);
		abort();
	}
	check_matches(c, c2);
out:
	kube_snapshot_release(a);
	kube_snapshot_release(b);
	kube_snapshot_release(c);
	kube_snapshot_release(c2);
	ng_buf_finish(&text);
	ng_buf_finish(&again);
	return 0;
}
