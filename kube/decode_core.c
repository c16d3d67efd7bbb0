/* Core kinds: Node, Pod, PersistentVolumeClaim, PersistentVolume and PodDisruptionBudget. */
#include "kube/decode_internal.h"

#include "kube/internal.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/cron.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/map.h"
#include "common/parse.h"
#include "common/regex.h"
#include "common/tz.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- records ---- */

#define DRAIN_NOTE "nodegate.io/drain"
/* Longest drain note read: the holders of one node are a few request names. */
#define DRAIN_NOTE_MAX (64u * 1024u)

/* The note's "taints" (absent: none): [{key, effect}] with strings, at most NG_MAX_NOTE_TAINTS;
 * anything else marks the note invalid. */
static ng_status drain_note_taints(struct kd_ctx *c, const cJSON *j, struct kube_drain_note *note)
{
	if (!j)
		return NG_OK;
	int n = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : -1;
	if (n < 0 || n > NG_MAX_NOTE_TAINTS) {
		note->invalid = true;
		return NG_OK;
	}
	struct kube_taint *t = n ? kd_alloc(c, (size_t)n * sizeof(*t)) : NULL;
	if (n && !t)
		return kd_fail(c, NG_ENOMEM, "metadata.annotations", "out of memory");
	int i = 0;
	for (const cJSON *e = j->child; e && i < n; e = e->next, i++) {
		const char *key = ng_json_str(e, "key"), *effect = ng_json_str(e, "effect");
		if (!key || !effect || !*key || !*effect) {
			note->invalid = true;
			return NG_OK;
		}
		ng_status st = kd_intern(c, key, &t[i].key);
		st = st ? st : kd_intern(c, effect, &t[i].effect);
		if (st)
			return st;
		t[i].val = NG_INTERN_NONE;
	}
	note->taints = t;
	note->ntaints = (uint16_t)n;
	return NG_OK;
}

static const char *const protect_keys[KUBE_NPROTECT] = KUBE_PROTECT_ANNOTATIONS;

static int protect_index(const char *key)
{
	for (int i = 0; key && i < KUBE_NPROTECT; i++)
		if (strcmp(key, protect_keys[i]) == 0)
			return i;
	return -1;
}

/* The note's "protected" (absent: none): [{key, was}], "was" a string or absent (the annotation
 * was not there). An entry for a key this version does not set is skipped; any other shape
 * marks the note invalid. */
static ng_status drain_note_protected(struct kd_ctx *c, const cJSON *j,
				      struct kube_drain_note *note)
{
	if (!j)
		return NG_OK;
	if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) > NG_MAX_NOTE_TAINTS) {
		note->invalid = true;
		return NG_OK;
	}
	for (const cJSON *e = j->child; e; e = e->next) {
		const char *key = ng_json_str(e, "key");
		const cJSON *was = ng_json_get(e, "was");
		if (!key || (was && !cJSON_IsString(was) && !cJSON_IsNull(was))) {
			note->invalid = true;
			return NG_OK;
		}
		int k = protect_index(key);
		if (k < 0)
			continue;
		note->protect |= (uint8_t)(1u << k);
		if (!cJSON_IsString(was))
			continue;
		note->protect_had |= (uint8_t)(1u << k);
		ng_status st = kd_intern(c, was->valuestring, &note->protect_was[k]);
		if (st != NG_OK)
			return st;
	}
	return NG_OK;
}

/* The annotation nodegate.io/drain (struct kube_drain_note). One that does not parse is marked
 * invalid, never an error: the node stays in the cache. */
static ng_status drain_note(struct kd_ctx *c, const char *text, struct kube_drain_note *note)
{
	note->present = true;
	note->boot_id = "";
	size_t len = strlen(text);
	struct ng_arena *tmp =
	    len <= DRAIN_NOTE_MAX ? ng_arena_create((64u << 10) + 8 * len) : NULL;
	cJSON *root = NULL;
	if (!tmp || ng_json_parse(text, len, tmp, &root, NULL) != NG_OK || !cJSON_IsObject(root)) {
		note->invalid = true;
		ng_arena_destroy(tmp);
		return NG_OK;
	}
	const cJSON *was = ng_json_get(root, "wasUnschedulable");
	const cJSON *holders = ng_json_get(root, "holders");
	const cJSON *boot = ng_json_get(root, "bootID");
	note->was_unschedulable = cJSON_IsTrue(was);
	note->invalid =
	    !cJSON_IsBool(was) || !cJSON_IsArray(holders) || (boot && !cJSON_IsString(boot));
	ng_status st = NG_OK;
	if (!note->invalid) {
		struct ng_err ignored;
		struct ng_err *keep = c->err;
		c->err = &ignored;
		st = kd_decode_str_array(c, holders, "holders", NG_MAX_LABELS, &note->holders,
					 &note->nholders);
		c->err = keep;
		if (st == NG_EPARSE || st == NG_ELIMIT) {
			note->invalid = true;
			st = NG_OK;
		}
		if (st == NG_OK &&
		    !(note->boot_id = kd_dup_or_empty(c, ng_json_str(root, "bootID"))))
			st = kd_fail(c, NG_ENOMEM, "metadata.annotations", "out of memory");
		if (st == NG_OK)
			st = drain_note_taints(c, ng_json_get(root, "taints"), note);
		if (st == NG_OK)
			st = drain_note_protected(c, ng_json_get(root, "protected"), note);
	}
	ng_arena_destroy(tmp);
	return st;
}

/* The annotation nodegate.io/do-not-disrupt's value @v (NULL: none): KUBE_DND_NONE without it or
 * "false", KUBE_DND_ALWAYS for "true", else a duration counted from @since_ms (0: not yet,
 * protected for good meanwhile). Anything else protects for good and sets *@ret_invalid: an
 * unreadable "not now" must not read as "go ahead". */
int64_t kd_dnd_until(const char *v, int64_t since_ms, bool *ret_invalid)
{
	int64_t dur = 0;
	*ret_invalid = false;
	if (!v || strcmp(v, "false") == 0)
		return KUBE_DND_NONE;
	if (strcmp(v, "true") == 0)
		return KUBE_DND_ALWAYS;
	if (!kd_parse_duration_ms(v, &dur) || dur <= 0) {
		*ret_invalid = true;
		return KUBE_DND_ALWAYS;
	}
	return since_ms > 0 && since_ms <= INT64_MAX - dur ? since_ms + dur : KUBE_DND_ALWAYS;
}

/* kd_dnd_until() of @meta's annotation. */
static int64_t dnd_until(const cJSON *meta, int64_t since_ms, bool *ret_invalid)
{
	return kd_dnd_until(ng_json_str(ng_json_get(meta, "annotations"), KUBE_DO_NOT_DISRUPT),
			    since_ms, ret_invalid);
}

/* What the drainer reads of a node besides the gate's fields. */
static ng_status node_extra(struct kd_ctx *c, const cJSON *o, const cJSON *meta,
			    struct kube_node *n)
{
	const cJSON *info = ng_json_path(o, (const char *const[]){"status", "nodeInfo", NULL});
	n->boot_id = kd_dup_or_empty(c, ng_json_str(info, "bootID"));
	n->rv_decoded = kd_dup_or_empty(c, ng_json_str(meta, "resourceVersion"));
	n->uid = kd_dup_or_empty(c, ng_json_str(meta, "uid"));
	if (!n->boot_id || !n->rv_decoded || !n->uid)
		return kd_fail(c, NG_ENOMEM, "metadata", "out of memory");
	const cJSON *ann = ng_json_get(meta, "annotations");
	n->has_annotations = cJSON_IsObject(ann);
	bool dnd_invalid;
	n->dnd_until_ms = dnd_until(meta, kd_opt_time_ms(meta, "creationTimestamp"), &dnd_invalid);
	if (dnd_invalid)
		n->flags |= KUBE_NODE_DND_INVALID;
	for (int i = 0; i < KUBE_NPROTECT; i++) {
		const char *v = ng_json_str(ann, protect_keys[i]);
		if (!v)
			continue;
		ng_status st = kd_intern(c, v, &n->protect_val[i]);
		if (st != NG_OK)
			return st;
		n->protect_present |= (uint8_t)(1u << i);
		if (strcmp(v, "true") == 0)
			n->protect_true |= (uint8_t)(1u << i);
	}
	const char *note = ng_json_str(ann, DRAIN_NOTE);
	return note ? drain_note(c, note, &n->note) : NG_OK;
}

uint32_t kube_lifecycle_hash(const char *const status[KUBE_LIFECYCLE_NTYPES],
			     const char *const reason[KUBE_LIFECYCLE_NTYPES],
			     const char *const message[KUBE_LIFECYCLE_NTYPES])
{
	uint64_t h = NG_FNV64_INIT;
	for (int i = 0; i < KUBE_LIFECYCLE_NTYPES; i++) {
		const char *part[3] = {status[i] ? status[i] : "-", reason[i] ? reason[i] : "",
				       message[i] ? message[i] : ""};
		for (int k = 0; k < 3; k++)
			h = ng_fnv1a64(h, part[k], strlen(part[k]) + 1); /* with its NUL */
	}
	return (uint32_t)(h ^ (h >> 32));
}

static const char *const lifecycle_types[KUBE_LIFECYCLE_NTYPES] = KUBE_LIFECYCLE_TYPES;

/* Condition @e (type @t, status @s) among the lifecycle conditions: its strings into the
 * slots, and the flags it sets. */
static void lifecycle_condition(const cJSON *e, const char *t, const char *s, struct kube_node *n,
				const char *status[], const char *reason[], const char *message[])
{
	if (strcmp(t, KUBE_SHUTDOWN_CONDITION) == 0 && s && strcmp(s, "True") == 0)
		n->flags |= KUBE_NODE_SHUTTING_DOWN;
	for (int i = 0; i < KUBE_LIFECYCLE_NTYPES; i++) {
		if (strcmp(t, lifecycle_types[i]) != 0)
			continue;
		status[i] = s ? s : "";
		reason[i] = ng_json_str(e, "reason");
		message[i] = ng_json_str(e, "message");
		if (s && strcmp(s, "True") == 0 && reason[i] &&
		    strncmp(reason[i], KUBE_LIFECYCLE_REASON_PREFIX,
			    sizeof(KUBE_LIFECYCLE_REASON_PREFIX) - 1) == 0)
			n->flags |= KUBE_NODE_LIFECYCLE_OURS;
	}
}

/* status.conditions: Ready sets KUBE_NODE_READY; every entry with a type is kept for
 * NodeRemediation rules (at most KUBE_MAX_NODE_CONDITIONS, the first ones). Entries of the wrong
 * shape are skipped: a node's status is the kubelet's. The lifecycle conditions are hashed
 * (kube_lifecycle_hash()) and GracefulNodeShutdownInProgress read, over every entry. */
static ng_status node_conditions(struct kd_ctx *c, const cJSON *o, struct kube_node *n)
{
	const cJSON *conds = ng_json_path(o, (const char *const[]){"status", "conditions", NULL});
	size_t cap;
	struct kube_node_condition *out =
	    kd_items_room(c, conds, KUBE_MAX_NODE_CONDITIONS, sizeof(*out), &cap);
	if (cap && !out)
		return kd_fail(c, NG_ENOMEM, "status.conditions", "out of memory");
	size_t k = 0;
	const char *status[KUBE_LIFECYCLE_NTYPES] = {0}, *reason[KUBE_LIFECYCLE_NTYPES] = {0},
		   *message[KUBE_LIFECYCLE_NTYPES] = {0};
	for (const cJSON *e = cap ? conds->child : NULL; e && k < cap; e = e->next) {
		const char *t = ng_json_str(e, "type"), *s = ng_json_str(e, "status");
		if (!t || !*t || strlen(t) > NG_MAX_LABEL_KEY_BYTES)
			continue;
		if (s && strcmp(t, "Ready") == 0 && strcmp(s, "True") == 0)
			n->flags |= KUBE_NODE_READY;
		lifecycle_condition(e, t, s, n, status, reason, message);
		ng_status st = kd_intern(c, t, &out[k].type);
		if (st != NG_OK)
			return st;
		out[k].status = kd_cond_status(s);
		const char *lt = ng_json_str(e, "lastTransitionTime");
		if (!lt || ng_parse_rfc3339_ms(lt, strlen(lt), &out[k].since_ms) != NG_OK)
			out[k].since_ms = 0;
		k++;
	}
	n->conditions = k ? out : NULL;
	n->nconditions = (uint16_t)k;
	n->lifecycle_hash = kube_lifecycle_hash(status, reason, message);
	return NG_OK;
}

/* Whether taint key @key says another actor is taking the node away (KUBE_LEAVING_TAINTS). */
static bool leaving_taint(const char *key)
{
	static const char *const keys[] = KUBE_LEAVING_TAINTS;
	if (!key)
		return false;
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		if (strcmp(key, keys[i]) == 0)
			return true;
	return strncmp(key, KUBE_LEAVING_TAINT_PREFIX, sizeof(KUBE_LEAVING_TAINT_PREFIX) - 1) == 0;
}

ng_status kd_decode_node(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t name = id->name_id;
	const cJSON *meta = ng_json_get(o, "metadata");
	struct kube_node *n = kd_record(c, KUBE_RES_NODES);
	n->name = name;
	uint16_t nl;
	ng_status st =
	    kd_decode_labels(c, ng_json_get(meta, "labels"), "metadata.labels", &n->labels, &nl);
	if (st != NG_OK)
		return st;
	n->nlabels = nl;
	const cJSON *spec = ng_json_get(o, "spec");
	if (cJSON_IsTrue(ng_json_get(spec, "unschedulable")))
		n->flags |= KUBE_NODE_UNSCHEDULABLE;
	if ((st = node_conditions(c, o, n)) != NG_OK || (st = node_extra(c, o, meta, n)) != NG_OK)
		return st;
	const cJSON *taints = ng_json_get(spec, "taints");
	if (cJSON_IsArray(taints)) {
		size_t nt = (size_t)cJSON_GetArraySize(taints);
		if (nt > NG_MAX_LABELS)
			return kd_fail(c, NG_ELIMIT, "spec.taints", "too many taints");
		struct kube_taint *t = kd_alloc(c, nt * sizeof(*t));
		if (nt && !t)
			return kd_fail(c, NG_ENOMEM, "spec.taints", "out of memory");
		size_t i = 0;
		for (const cJSON *e = taints->child; e; e = e->next, i++) {
			if (leaving_taint(ng_json_str(e, "key")))
				n->flags |= KUBE_NODE_LEAVING;
			if ((st = kd_opt_str(c, e, "key", "spec.taints.key", &t[i].key)) != NG_OK ||
			    (st = kd_opt_str(c, e, "value", "spec.taints.value", &t[i].val)) !=
				NG_OK ||
			    (st = kd_opt_str(c, e, "effect", "spec.taints.effect", &t[i].effect)) !=
				NG_OK)
				return st;
		}
		n->taints = t;
		n->ntaints = (uint32_t)nt;
	}
	return NG_OK;
}

uint8_t kd_pod_phase(const char *s)
{
	if (!s)
		return KUBE_POD_PENDING;
	if (strcmp(s, "Running") == 0)
		return KUBE_POD_RUNNING;
	if (strcmp(s, "Succeeded") == 0)
		return KUBE_POD_SUCCEEDED;
	if (strcmp(s, "Failed") == 0)
		return KUBE_POD_FAILED;
	if (strcmp(s, "Pending") == 0)
		return KUBE_POD_PENDING;
	return KUBE_POD_UNKNOWN;
}

/* The controller's kind (and whether it is a DaemonSet) from metadata.ownerReferences. */
static ng_status pod_owner(struct kd_ctx *c, const cJSON *meta, struct kube_pod *p)
{
	const cJSON *owners = ng_json_get(meta, "ownerReferences");
	for (const cJSON *e = cJSON_IsArray(owners) ? owners->child : NULL; e; e = e->next) {
		if (!cJSON_IsTrue(ng_json_get(e, "controller")))
			continue;
		const char *kind = ng_json_str(e, "kind");
		if (!kind)
			continue;
		ng_status st = kd_intern(c, kind, &p->owner_kind);
		if (st != NG_OK)
			return st;
		if (strcmp(kind, "DaemonSet") == 0)
			p->flags |= KUBE_POD_DAEMONSET;
		break;
	}
	return NG_OK;
}

/* The PVC claim names of spec.volumes, bounded. */
static ng_status pod_claims(struct kd_ctx *c, const cJSON *spec, struct kube_pod *p)
{
	const cJSON *vols = ng_json_get(spec, "volumes");
	size_t nclaims = 0;
	for (const cJSON *e = cJSON_IsArray(vols) ? vols->child : NULL; e; e = e->next) {
		if (ng_json_str(ng_json_get(e, "persistentVolumeClaim"), "claimName"))
			nclaims++;
		if (ng_json_get(e, "emptyDir"))
			p->flags |= KUBE_POD_EMPTYDIR;
	}
	if (nclaims > NG_MAX_LABELS)
		return kd_fail(c, NG_ELIMIT, "spec.volumes", "too many PVC volumes");
	uint32_t *claims = kd_alloc(c, nclaims * sizeof(*claims));
	if (nclaims && !claims)
		return kd_fail(c, NG_ENOMEM, "spec.volumes", "out of memory");
	size_t i = 0;
	for (const cJSON *e = nclaims ? vols->child : NULL; e; e = e->next) {
		const char *cn = ng_json_str(ng_json_get(e, "persistentVolumeClaim"), "claimName");
		ng_status st;
		if (cn && (st = kd_intern(c, cn, &claims[i++])) != NG_OK)
			return st;
	}
	p->claims = claims;
	p->nclaims = (uint16_t)nclaims;
	return NG_OK;
}

/* The distinct resource names of spec.containers' requests and limits, bounded. */
static ng_status pod_requests(struct kd_ctx *c, const cJSON *spec, struct kube_pod *p)
{
	static const char *const paths[2][3] = {{"resources", "requests", NULL},
						{"resources", "limits", NULL}};
	const cJSON *ctrs = ng_json_get(spec, "containers");
	size_t nreq = 0;
	for (const cJSON *e = cJSON_IsArray(ctrs) ? ctrs->child : NULL; e; e = e->next) {
		for (int k = 0; k < 2; k++) {
			const cJSON *r = ng_json_path(e, paths[k]);
			if (cJSON_IsObject(r))
				nreq += (size_t)cJSON_GetArraySize(r);
		}
	}
	if (nreq > NG_MAX_LABELS)
		return kd_fail(c, NG_ELIMIT, "spec.containers", "too many resource requests");
	uint32_t *reqs = kd_alloc(c, nreq * sizeof(*reqs));
	if (nreq && !reqs)
		return kd_fail(c, NG_ENOMEM, "spec.containers", "out of memory");
	size_t i = 0;
	for (const cJSON *e = nreq ? ctrs->child : NULL; e; e = e->next) {
		for (int w = 0; w < 2; w++) {
			const cJSON *r = ng_json_path(e, paths[w]);
			for (const cJSON *k = cJSON_IsObject(r) ? r->child : NULL; k; k = k->next) {
				uint32_t id;
				ng_status st = kd_intern(c, k->string, &id);
				if (st != NG_OK)
					return st;
				kd_put_once(reqs, &i, id);
			}
		}
	}
	p->requests = reqs;
	p->nrequests = (uint16_t)i;
	return NG_OK;
}

/* The first of metadata.finalizers: the drainer names it for a pod that does not go. */
static ng_status pod_finalizer(struct kd_ctx *c, const cJSON *meta, struct kube_pod *p)
{
	p->finalizer = NG_INTERN_NONE;
	const cJSON *fins = ng_json_get(meta, "finalizers");
	const cJSON *first = cJSON_IsArray(fins) ? fins->child : NULL;
	if (!first || !cJSON_IsString(first))
		return NG_OK;
	if (first->next)
		p->flags |= KUBE_POD_MORE_FINALIZERS;
	return kd_intern(c, first->valuestring, &p->finalizer);
}

ng_status kd_decode_pod(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t ns = id->ns_id;
	const char *name = id->name;
	const cJSON *meta = ng_json_get(o, "metadata");
	struct kube_pod *p = kd_record(c, KUBE_RES_PODS);
	p->ns = ns;
	p->name = ng_arena_strndup(c->arena, name, strlen(name));
	if (!p->name)
		return kd_fail(c, NG_ENOMEM, "metadata.name", "out of memory");
	p->owner_kind = NG_INTERN_NONE;
	ng_status st = kd_decode_labels(c, ng_json_get(meta, "labels"), "metadata.labels",
					&p->labels, &p->nlabels);
	if (st != NG_OK)
		return st;
	const cJSON *spec = ng_json_get(o, "spec");
	if ((st = kd_opt_str(c, spec, "nodeName", "spec.nodeName", &p->node)) != NG_OK)
		return st;
	p->phase = kd_pod_phase(ng_json_str(ng_json_get(o, "status"), "phase"));
	const cJSON *ann = ng_json_get(meta, "annotations");
	if (ng_json_get(ann, "kubernetes.io/config.mirror"))
		p->flags |= KUBE_POD_MIRROR;
	const cJSON *del = ng_json_get(meta, "deletionTimestamp");
	if (del && !cJSON_IsNull(del))
		p->flags |= KUBE_POD_TERMINATING;
	if ((st = pod_finalizer(c, meta, p)) != NG_OK)
		return st;
	const cJSON *pconds = ng_json_get(ng_json_get(o, "status"), "conditions");
	for (const cJSON *e = cJSON_IsArray(pconds) ? pconds->child : NULL; e; e = e->next) {
		const char *t = ng_json_str(e, "type"), *v = ng_json_str(e, "status");
		if (t && v && strcmp(t, "Ready") == 0 && strcmp(v, "True") == 0)
			p->flags |= KUBE_POD_READY;
	}
	bool dnd_invalid;
	p->dnd_until_ms =
	    dnd_until(meta, kd_opt_time_ms(ng_json_get(o, "status"), "startTime"), &dnd_invalid);
	if (dnd_invalid)
		p->flags |= KUBE_POD_DND_INVALID;
	if ((st = pod_owner(c, meta, p)) != NG_OK || (st = pod_claims(c, spec, p)) != NG_OK)
		return st;
	return pod_requests(c, spec, p);
}

ng_status kd_decode_pvc(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t ns = id->ns_id, name = id->name_id;
	const cJSON *meta = ng_json_get(o, "metadata");
	struct kube_pvc *v = kd_record(c, KUBE_RES_PVCS);
	v->ns = ns;
	v->name = name;
	ng_status st = kd_decode_labels(c, ng_json_get(meta, "labels"), "metadata.labels",
					&v->labels, &v->nlabels);
	if (st != NG_OK)
		return st;
	if ((st = kd_opt_str(c, ng_json_get(o, "spec"), "volumeName", "spec.volumeName",
			     &v->volume)) != NG_OK)
		return st;
	const char *ph = ng_json_str(ng_json_get(o, "status"), "phase");
	v->phase = ph && strcmp(ph, "Bound") == 0  ? KUBE_PVC_BOUND
		   : ph && strcmp(ph, "Lost") == 0 ? KUBE_PVC_LOST
						   : KUBE_PVC_PENDING;
	return NG_OK;
}

ng_status kd_decode_pv(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t name = id->name_id;
	struct kube_pv *v = kd_record(c, KUBE_RES_PVS);
	v->name = name;
	return kd_decode_node_selector(c, ng_json_get(ng_json_get(o, "spec"), "nodeAffinity"),
				       &v->affinity);
}

/* A PodDisruptionBudget: its selector and status. A selector that does not read makes it
 * invalid: it then covers every pod of its namespace and allows nothing. */
ng_status kd_decode_pdb(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	uint32_t ns = id->ns_id, name = id->name_id;
	struct kube_pdb *p = kd_record(c, KUBE_RES_PDBS);
	p->ns = ns;
	p->name = name;
	struct ng_err verr = {0};
	ng_status st =
	    kube_decode_selector(c->pool, c->arena, ng_json_get(ng_json_get(o, "spec"), "selector"),
				 "spec.selector", &p->selector, &verr);
	if (st == NG_ENOMEM)
		return kd_fail(c, st, "spec.selector", "out of memory");
	if (verr.status != NG_OK) {
		p->invalid = true;
		p->selector = (struct kube_selector){.present = true};
	}
	const cJSON *status = ng_json_get(o, "status");
	p->has_status =
	    ng_json_int64(ng_json_get(status, "disruptionsAllowed"), &p->disruptions_allowed);
	(void)ng_json_int64(ng_json_get(status, "currentHealthy"), &p->current_healthy);
	(void)ng_json_int64(ng_json_get(status, "desiredHealthy"), &p->desired_healthy);
	(void)ng_json_int64(ng_json_get(status, "expectedPods"), &p->expected_pods);
	if (p->invalid || !p->has_status || p->disruptions_allowed < 0)
		p->disruptions_allowed = 0;
	return NG_OK;
}

/* A Lease as medik8s's lease manager writes and reads it: who holds it and until when. Times are
 * MicroTime ("2026-11-29T02:31:01.123456Z"), kept to the millisecond. */
ng_status kd_decode_lease(struct kd_ctx *c, const cJSON *o, const struct kd_id *id)
{
	struct kube_lease *l = kd_record(c, KUBE_RES_LEASES);
	l->ns = id->ns_id;
	l->name = id->name_id;
	l->holder = NG_INTERN_NONE;
	l->duration_s = -1;
	const cJSON *spec = ng_json_get(o, "spec");
	const char *holder = ng_json_str(spec, "holderIdentity");
	ng_status st = holder && *holder ? kd_intern(c, holder, &l->holder) : NG_OK;
	if (st != NG_OK)
		return kd_fail(c, st, "spec.holderIdentity", "cannot be kept");
	int64_t v;
	if (ng_json_int64(ng_json_get(spec, "leaseDurationSeconds"), &v) && v >= 0)
		l->duration_s = v;
	if (ng_json_int64(ng_json_get(spec, "leaseTransitions"), &v) && v >= 0)
		l->transitions = v;
	l->acquire_ms = kd_opt_time_ms(spec, "acquireTime");
	l->renew_ms = kd_opt_time_ms(spec, "renewTime");
	const cJSON *meta = ng_json_get(o, "metadata");
	l->rv = kd_dup_or_empty(c, ng_json_str(meta, "resourceVersion"));
	l->uid = kd_dup_or_empty(c, ng_json_str(meta, "uid"));
	if (!l->rv || !l->uid)
		return kd_fail(c, NG_ENOMEM, "metadata", "out of memory");
	return NG_OK;
}

/* Copies a pod's side data (decoded in scratch) into one exactly sized block, tagged as such.
 * NULL on OOM. */
void *kd_compact_pod(void *rec)
{
	struct kube_pod *p = rec;
	size_t nl = (size_t)p->nlabels * sizeof(*p->labels);
	size_t nc = (size_t)p->nclaims * sizeof(*p->claims);
	size_t nr = (size_t)p->nrequests * sizeof(*p->requests);
	size_t nn = strlen(p->name) + 1;
	char *block = malloc(nl + nc + nr + nn);
	if (!block)
		return NULL;
	char *at = block;
	if (nl)
		memcpy(at, p->labels, nl);
	p->labels = nl ? (const struct kube_label *)(void *)at : NULL;
	at += nl;
	if (nc)
		memcpy(at, p->claims, nc);
	p->claims = nc ? (const uint32_t *)(void *)at : NULL;
	at += nc;
	if (nr)
		memcpy(at, p->requests, nr);
	p->requests = nr ? (const uint32_t *)(void *)at : NULL;
	at += nr;
	memcpy(at, p->name, nn);
	p->name = at;
	return (void *)((uintptr_t)block | KUBE_SIDE_BLOCK);
}
