/* Pods read straight from their JSON text (kube_decode_read_as()), token by token with the
 * reader of common/json.h, without building the text's tree: a pod's event is a few KB of JSON
 * of which the record keeps a few dozen bytes, and the tree (a node per value) cost as much as
 * the decoding itself when a million pods are listed at start.
 *
 * The record is the one kd_decode_pod() makes of the same text, and so is every error: the
 * fields come in the text's order, so each field's first problem is kept in a slot of its own
 * and the one kd_decode_pod() would meet first is reported once the object is read. Strings
 * whose count is bounded are held until the count is known, as the tree decoder counts before
 * it interns. tests/unit/test_decode_read.c and the fuzz target decode-read compare both. */
#include "kube/decode_internal.h"
#include "kube/kinds.h"
#include "kube/internal.h"

#include "common/arena.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Strings of a bounded list held until its count is known: one past the bound tells. The
 * first few are held in place, more in the record's arena (a pod has a handful of each). */
#define HELD (NG_MAX_LABELS + 1)
#define HELD_HERE 8

/* The problems kd_decode_pod() can meet, in the order it meets them. */
enum {
	P_NS,     /* interning the namespace (before the kind's decoder) */
	P_LABELS, /* metadata.labels */
	P_NODE,   /* spec.nodeName */
	P_FIN,    /* metadata.finalizers[0] */
	P_OWNER,  /* the controller's kind */
	P_COUNT,
};

struct problem {
	ng_status st;
	const char *field, *what;
};

struct held {
	struct ng_json_str *s; /* here, or in the arena */
	size_t n;              /* how many the text has (only the first HELD are held) */
	size_t cap;
	struct ng_json_str here[HELD_HERE];
};

/* One pod being read. */
struct pod_read {
	struct kd_ctx *c;
	struct ng_json_reader *r;
	struct kube_pod *p;
	struct kube_read_meta *meta;
	enum kube_resource res; /* the kind read (its descriptor row says it is read from text) */
	struct problem prob[P_COUNT];
	struct kube_label *labels; /* in the arena, grown by doubling */
	size_t nlabels, labels_cap;
	bool oom; /* holding a string or a label failed */
	bool owner_found;
	struct ng_json_str dnd, phase, start;
	/* The claims and resource names so far, and the current container's limits (its
	 * requests come first whatever the text's order). */
	struct held claims, reqs, ctr_lim;
};

static void problem(struct pod_read *pr, int slot, ng_status st, const char *field,
		    const char *what)
{
	if (pr->prob[slot].st == NG_OK)
		pr->prob[slot] = (struct problem){st, field, what};
}

/* @s interned into *@ret; a failure goes to @slot as kd_intern() words it. */
static bool intern(struct pod_read *pr, int slot, struct ng_json_str s, uint32_t *ret)
{
	ng_status st = ng_intern_add(pr->c->pool, s.s, s.len, ret);
	if (st != NG_OK)
		problem(pr, slot, st, "string pool", ng_status_str(st));
	return st == NG_OK;
}

/* @s interned into *@ret, or kd_intern()'s error. */
static ng_status intern_now(struct pod_read *pr, struct ng_json_str s, uint32_t *ret)
{
	ng_status st = ng_intern_add(pr->c->pool, s.s, s.len, ret);
	return st == NG_OK ? NG_OK : kd_fail(pr->c, st, "string pool", ng_status_str(st));
}

static void held_init(struct held *h)
{
	h->s = h->here;
	h->n = 0;
	h->cap = HELD_HERE;
}

static void hold(struct pod_read *pr, struct held *h, struct ng_json_str s)
{
	if (h->n == h->cap && h->cap < HELD) {
		size_t cap = h->cap * 2 < HELD ? h->cap * 2 : HELD;
		struct ng_json_str *more = kd_alloc(pr->c, cap * sizeof(*more));
		if (!more) {
			pr->oom = true;
			return;
		}
		memcpy(more, h->s, h->n * sizeof(*more));
		h->s = more;
		h->cap = cap;
	}
	if (h->n < h->cap)
		h->s[h->n] = s;
	h->n++;
}

/* Room for one more label (the @n-th). */
static struct kube_label *label_room(struct pod_read *pr, size_t n)
{
	if (n == pr->labels_cap) {
		size_t cap = pr->labels_cap ? pr->labels_cap * 2 : 16;
		struct kube_label *more = kd_alloc(pr->c, cap * sizeof(*more));
		if (!more) {
			pr->oom = true;
			return NULL;
		}
		if (pr->labels) /* NULL until the first 16 */
			memcpy(more, pr->labels, n * sizeof(*more));
		pr->labels = more;
		pr->labels_cap = cap;
	}
	return &pr->labels[n];
}

/* The value at the reader: a string into *@ret (else skipped, *@ret untouched). */
static void opt_string(struct pod_read *pr, struct ng_json_str *ret)
{
	struct ng_json_str s;
	if (ng_json_string(pr->r, &s))
		*ret = s;
}

/* metadata.labels, as kd_decode_labels() reads them. */
static void read_labels(struct pod_read *pr)
{
	struct ng_json_reader *r = pr->r;
	enum ng_json_type t = ng_json_peek(r);
	if (t != NG_JSON_OBJECT) {
		(void)ng_json_skip(r);
		if (t != NG_JSON_NULL && ng_json_reader_status(r) == NG_OK)
			problem(pr, P_LABELS, NG_EPARSE, "metadata.labels", "expected an object");
		return;
	}
	/* A value that is not a string, or a string pool failure, before the count is known. */
	struct problem first = {NG_OK, NULL, NULL};
	size_t n = 0;
	struct ng_json_str k, v;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (++n > NG_MAX_LABELS || first.st != NG_OK) {
			(void)ng_json_skip(r);
			continue;
		}
		if (!ng_json_string(r, &v)) {
			first = (struct problem){NG_EPARSE, "metadata.labels",
						 "label values must be strings"};
			continue;
		}
		struct kube_label *l = label_room(pr, n - 1);
		if (!l)
			continue;
		ng_status st = ng_intern_add(pr->c->pool, k.s, k.len, &l->key);
		if (st == NG_OK)
			st = ng_intern_add(pr->c->pool, v.s, v.len, &l->val);
		if (st != NG_OK)
			first = (struct problem){st, "string pool", ng_status_str(st)};
	}
	if (n > NG_MAX_LABELS)
		problem(pr, P_LABELS, NG_ELIMIT, "metadata.labels", "more than 256 labels");
	else if (first.st != NG_OK)
		problem(pr, P_LABELS, first.st, first.field, first.what);
	pr->nlabels = n;
}

static void read_annotations(struct pod_read *pr)
{
	struct ng_json_reader *r = pr->r;
	if (ng_json_peek(r) != NG_JSON_OBJECT) {
		(void)ng_json_skip(r);
		return;
	}
	struct ng_json_str k;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (NG_JSON_IS(k, "kubernetes.io/config.mirror")) {
			pr->p->flags |= KUBE_POD_MIRROR;
			(void)ng_json_skip(r);
		} else if (NG_JSON_IS(k, KUBE_DO_NOT_DISRUPT)) {
			opt_string(pr, &pr->dnd);
		} else {
			(void)ng_json_skip(r);
		}
	}
}

/* metadata.finalizers: the first, when a string, and whether more follow. */
static void read_finalizers(struct pod_read *pr)
{
	struct ng_json_reader *r = pr->r;
	if (ng_json_peek(r) != NG_JSON_ARRAY) {
		(void)ng_json_skip(r);
		return;
	}
	struct ng_json_str k, first = {NULL, 0};
	size_t n = 0;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (n++ == 0)
			opt_string(pr, &first);
		else
			(void)ng_json_skip(r);
	}
	if (!first.s)
		return;
	if (n > 1)
		pr->p->flags |= KUBE_POD_MORE_FINALIZERS;
	(void)intern(pr, P_FIN, first, &pr->p->finalizer);
}

/* metadata.ownerReferences: the first with controller: true and a kind. */
static void read_owners(struct pod_read *pr)
{
	struct ng_json_reader *r = pr->r;
	if (ng_json_peek(r) != NG_JSON_ARRAY) {
		(void)ng_json_skip(r);
		return;
	}
	struct ng_json_str k;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (ng_json_peek(r) != NG_JSON_OBJECT) {
			(void)ng_json_skip(r);
			continue;
		}
		bool controller = false;
		struct ng_json_str kind = {NULL, 0};
		(void)ng_json_enter(r);
		while (ng_json_next(r, &k)) {
			if (NG_JSON_IS(k, "controller"))
				controller = ng_json_peek(r) == NG_JSON_TRUE;
			if (NG_JSON_IS(k, "kind"))
				opt_string(pr, &kind);
			else
				(void)ng_json_skip(r);
		}
		if (pr->owner_found || !controller || !kind.s)
			continue;
		pr->owner_found = true;
		if (intern(pr, P_OWNER, kind, &pr->p->owner_kind) && NG_JSON_IS(kind, "DaemonSet"))
			pr->p->flags |= KUBE_POD_DAEMONSET;
	}
}

static void read_metadata(struct pod_read *pr)
{
	struct ng_json_reader *r = pr->r;
	if (ng_json_peek(r) != NG_JSON_OBJECT) {
		(void)ng_json_skip(r);
		return;
	}
	struct ng_json_str k;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (NG_JSON_IS(k, "name"))
			opt_string(pr, &pr->meta->name);
		else if (NG_JSON_IS(k, "namespace"))
			opt_string(pr, &pr->meta->ns);
		else if (NG_JSON_IS(k, "resourceVersion"))
			opt_string(pr, &pr->meta->rv);
		else if (NG_JSON_IS(k, "labels"))
			read_labels(pr);
		else if (NG_JSON_IS(k, "annotations"))
			read_annotations(pr);
		else if (NG_JSON_IS(k, "finalizers"))
			read_finalizers(pr);
		else if (NG_JSON_IS(k, "ownerReferences"))
			read_owners(pr);
		else {
			if (NG_JSON_IS(k, "deletionTimestamp") && ng_json_peek(r) != NG_JSON_NULL)
				pr->p->flags |= KUBE_POD_TERMINATING;
			(void)ng_json_skip(r);
		}
	}
}

/* The keys of an object at the reader (anything else: none) into @h. */
static void read_keys(struct pod_read *pr, struct held *h)
{
	struct ng_json_reader *r = pr->r;
	if (ng_json_peek(r) != NG_JSON_OBJECT) {
		(void)ng_json_skip(r);
		return;
	}
	struct ng_json_str k;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		hold(pr, h, k);
		(void)ng_json_skip(r);
	}
}

/* spec.containers: the resource names of each one's requests, then of its limits. */
static void read_containers(struct pod_read *pr)
{
	struct ng_json_reader *r = pr->r;
	if (ng_json_peek(r) != NG_JSON_ARRAY) {
		(void)ng_json_skip(r);
		return;
	}
	struct ng_json_str k;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (ng_json_peek(r) != NG_JSON_OBJECT) {
			(void)ng_json_skip(r);
			continue;
		}
		pr->ctr_lim.n = 0;
		(void)ng_json_enter(r);
		while (ng_json_next(r, &k)) {
			if (!NG_JSON_IS(k, "resources") || ng_json_peek(r) != NG_JSON_OBJECT) {
				(void)ng_json_skip(r);
				continue;
			}
			(void)ng_json_enter(r);
			while (ng_json_next(r, &k)) {
				if (NG_JSON_IS(k, "requests"))
					read_keys(pr, &pr->reqs);
				else if (NG_JSON_IS(k, "limits"))
					read_keys(pr, &pr->ctr_lim);
				else
					(void)ng_json_skip(r);
			}
		}
		for (size_t i = 0; i < pr->ctr_lim.n; i++) {
			if (i < pr->ctr_lim.cap)
				hold(pr, &pr->reqs, pr->ctr_lim.s[i]);
			else
				pr->reqs.n++;
		}
	}
}

/* spec.volumes: the PVC claim names, and whether one is an emptyDir. */
static void read_volumes(struct pod_read *pr)
{
	struct ng_json_reader *r = pr->r;
	if (ng_json_peek(r) != NG_JSON_ARRAY) {
		(void)ng_json_skip(r);
		return;
	}
	struct ng_json_str k;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (ng_json_peek(r) != NG_JSON_OBJECT) {
			(void)ng_json_skip(r);
			continue;
		}
		(void)ng_json_enter(r);
		while (ng_json_next(r, &k)) {
			if (NG_JSON_IS(k, "emptyDir"))
				pr->p->flags |= KUBE_POD_EMPTYDIR;
			if (!NG_JSON_IS(k, "persistentVolumeClaim") ||
			    ng_json_peek(r) != NG_JSON_OBJECT) {
				(void)ng_json_skip(r);
				continue;
			}
			(void)ng_json_enter(r);
			while (ng_json_next(r, &k)) {
				struct ng_json_str cn;
				if (NG_JSON_IS(k, "claimName") && ng_json_string(r, &cn))
					hold(pr, &pr->claims, cn);
				else if (!NG_JSON_IS(k, "claimName"))
					(void)ng_json_skip(r);
			}
		}
	}
}

static void read_spec(struct pod_read *pr)
{
	struct ng_json_reader *r = pr->r;
	if (ng_json_peek(r) != NG_JSON_OBJECT) {
		(void)ng_json_skip(r);
		return;
	}
	struct ng_json_str k, s;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (NG_JSON_IS(k, "nodeName")) {
			enum ng_json_type t = ng_json_peek(r);
			if (ng_json_string(r, &s))
				(void)intern(pr, P_NODE, s, &pr->p->node);
			else if (t != NG_JSON_NULL && ng_json_reader_status(r) == NG_OK)
				problem(pr, P_NODE, NG_EPARSE, "spec.nodeName",
					"expected a string");
		} else if (NG_JSON_IS(k, "volumes")) {
			read_volumes(pr);
		} else if (NG_JSON_IS(k, "containers")) {
			read_containers(pr);
		} else {
			(void)ng_json_skip(r);
		}
	}
}

/* status.conditions: whether one is Ready and True. */
static void read_conditions(struct pod_read *pr)
{
	struct ng_json_reader *r = pr->r;
	if (ng_json_peek(r) != NG_JSON_ARRAY) {
		(void)ng_json_skip(r);
		return;
	}
	struct ng_json_str k;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (ng_json_peek(r) != NG_JSON_OBJECT) {
			(void)ng_json_skip(r);
			continue;
		}
		struct ng_json_str type = {NULL, 0}, status = {NULL, 0};
		(void)ng_json_enter(r);
		while (ng_json_next(r, &k)) {
			if (NG_JSON_IS(k, "type"))
				opt_string(pr, &type);
			else if (NG_JSON_IS(k, "status"))
				opt_string(pr, &status);
			else
				(void)ng_json_skip(r);
		}
		if (type.s && status.s && NG_JSON_IS(type, "Ready") && NG_JSON_IS(status, "True"))
			pr->p->flags |= KUBE_POD_READY;
	}
}

static void read_status(struct pod_read *pr)
{
	struct ng_json_reader *r = pr->r;
	if (ng_json_peek(r) != NG_JSON_OBJECT) {
		(void)ng_json_skip(r);
		return;
	}
	struct ng_json_str k;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (NG_JSON_IS(k, "phase"))
			opt_string(pr, &pr->phase);
		else if (NG_JSON_IS(k, "startTime"))
			opt_string(pr, &pr->start);
		else if (NG_JSON_IS(k, "conditions"))
			read_conditions(pr);
		else
			(void)ng_json_skip(r);
	}
}

static int cmp_label(const void *a, const void *b)
{
	const struct kube_label *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* A copy of @s, NUL-terminated, in the record's arena. */
static char *dup_str(struct pod_read *pr, struct ng_json_str s)
{
	return ng_arena_strndup(pr->c->arena, s.s, s.len);
}

/* The lists whose counts are known now: labels, claims, requests (kd_decode_pod()'s order). */
static ng_status finish_lists(struct pod_read *pr)
{
	struct kd_ctx *c = pr->c;
	struct kube_pod *p = pr->p;
	size_t n = pr->nlabels;
	struct kube_label *labels = n ? pr->labels : NULL;
	if (pr->oom)
		return kd_fail(c, NG_ENOMEM, "metadata", "out of memory");
	if (n > 1)
		qsort(labels, n, sizeof(*labels), cmp_label);
	p->labels = labels;
	p->nlabels = (uint16_t)n;
	for (int s = P_NODE; s < P_COUNT; s++)
		if (pr->prob[s].st != NG_OK)
			return kd_fail(c, pr->prob[s].st, pr->prob[s].field, pr->prob[s].what);
	if (pr->claims.n > NG_MAX_LABELS)
		return kd_fail(c, NG_ELIMIT, "spec.volumes", "too many PVC volumes");
	uint32_t *claims = kd_alloc(c, pr->claims.n * sizeof(*claims));
	if (pr->claims.n && !claims)
		return kd_fail(c, NG_ENOMEM, "spec.volumes", "out of memory");
	ng_status st;
	for (size_t i = 0; i < pr->claims.n; i++)
		if ((st = intern_now(pr, pr->claims.s[i], &claims[i])) != NG_OK)
			return st;
	p->claims = claims;
	p->nclaims = (uint16_t)pr->claims.n;
	if (pr->reqs.n > NG_MAX_LABELS)
		return kd_fail(c, NG_ELIMIT, "spec.containers", "too many resource requests");
	uint32_t *reqs = kd_alloc(c, pr->reqs.n * sizeof(*reqs));
	if (pr->reqs.n && !reqs)
		return kd_fail(c, NG_ENOMEM, "spec.containers", "out of memory");
	size_t i = 0;
	for (size_t k = 0; k < pr->reqs.n; k++) {
		uint32_t id;
		if ((st = intern_now(pr, pr->reqs.s[k], &id)) != NG_OK)
			return st;
		kd_put_once(reqs, &i, id);
	}
	p->requests = reqs;
	p->nrequests = (uint16_t)i;
	return NG_OK;
}

/* After the object was read: kd_decode_pod()'s record, or the error it would meet first. */
static ng_status finish_pod(struct pod_read *pr, const char *where)
{
	struct kd_ctx *c = pr->c;
	struct kube_pod *p = pr->p;
	const struct kube_read_meta *m = pr->meta;
	if (!m->name.s || !m->name.len)
		return ng_err_set(c->err, NG_EPARSE, 0, "%s (%s): metadata.name: required", where,
				  kube_kinds[pr->res].kind);
	/* Objects written by hand may leave the namespace out; kubectl would use "default". */
	struct ng_json_str ns = m->ns.s && m->ns.len ? m->ns : (struct ng_json_str){"default", 7};
	c->kind = kube_kinds[pr->res].kind;
	c->ns = dup_str(pr, ns);
	p->name = dup_str(pr, m->name);
	c->name = p->name;
	if (!c->ns || !p->name) {
		c->name = NULL;
		return ng_err_set(c->err, NG_ENOMEM, 0, "%s: out of memory", where);
	}
	if (!intern(pr, P_NS, ns, &p->ns))
		return kd_fail(c, pr->prob[P_NS].st, pr->prob[P_NS].field, pr->prob[P_NS].what);
	if (pr->prob[P_LABELS].st != NG_OK)
		return kd_fail(c, pr->prob[P_LABELS].st, pr->prob[P_LABELS].field,
			       pr->prob[P_LABELS].what);
	char *phase = pr->phase.s ? dup_str(pr, pr->phase) : NULL;
	char *dnd = pr->dnd.s ? dup_str(pr, pr->dnd) : NULL;
	if ((pr->phase.s && !phase) || (pr->dnd.s && !dnd))
		return kd_fail(c, NG_ENOMEM, "metadata", "out of memory");
	p->phase = kd_pod_phase(phase);
	int64_t start_ms = 0;
	if (pr->start.s && ng_parse_rfc3339_ms(pr->start.s, pr->start.len, &start_ms) != NG_OK)
		start_ms = 0;
	bool dnd_invalid;
	p->dnd_until_ms = kd_dnd_until(dnd, start_ms, &dnd_invalid);
	if (dnd_invalid)
		p->flags |= KUBE_POD_DND_INVALID;
	return finish_lists(pr);
}

bool kube_decode_reads(enum kube_resource res)
{
	return (unsigned)res < KUBE_RES_COUNT && kube_kinds[res].read_from_text;
}

ng_status kube_decode_read_as(struct ng_intern *pool, struct ng_arena *scratch,
			      enum kube_resource res, struct ng_json_reader *r, const char *where,
			      struct kube_object *ret, struct kube_read_meta *meta,
			      struct ng_err *reterr)
{
	*meta = (struct kube_read_meta){0};
	if (!kube_decode_reads(res) || !scratch || !where)
		return ng_err_set(reterr, NG_EINVAL, 0, "%s: not read from text",
				  where ? where : "");
	if (ng_json_peek(r) != NG_JSON_OBJECT) {
		if (!ng_json_skip(r))
			return ng_json_reader_status(r);
		return ng_err_set(reterr, NG_EPARSE, 0, "%s: expected an object", where);
	}
	struct kube_object out;
	struct kd_ctx c = {.obj = &out, .pool = pool, .err = reterr, .where = where};
	ng_arena_reset(scratch);
	c.arena = scratch;
	struct pod_read read, *pr = &read;
	memset(pr->prob, 0, sizeof(pr->prob));
	pr->labels = NULL;
	pr->nlabels = pr->labels_cap = 0;
	pr->owner_found = pr->oom = false;
	pr->dnd = pr->phase = pr->start = (struct ng_json_str){NULL, 0};
	held_init(&pr->claims);
	held_init(&pr->reqs);
	held_init(&pr->ctr_lim);
	pr->c = &c;
	pr->r = r;
	pr->meta = meta;
	pr->res = res;
	pr->p = kd_record(&c, res);
	pr->p->node = pr->p->owner_kind = pr->p->finalizer = NG_INTERN_NONE;
	struct ng_json_str k;
	(void)ng_json_enter(r);
	while (ng_json_next(r, &k)) {
		if (NG_JSON_IS(k, "metadata"))
			read_metadata(pr);
		else if (NG_JSON_IS(k, "spec"))
			read_spec(pr);
		else if (NG_JSON_IS(k, "status"))
			read_status(pr);
		else
			(void)ng_json_skip(r);
	}
	ng_status st = ng_json_reader_status(r);
	if (st == NG_OK)
		st = finish_pod(pr, where);
	if (st != NG_OK)
		return st;
	out.side = kube_kinds[res].compact(&out.rec);
	if (!out.side)
		return ng_err_set(reterr, NG_ENOMEM, 0, "%s: out of memory", where);
	*ret = out;
	return NG_OK;
}
