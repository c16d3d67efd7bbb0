/* The cluster cache seen from outside kube/: immutable snapshots that admission threads read
 * without holding a lock, how one is built from `kubectl get -o json` dumps, and the store that
 * holds the current one (DESIGN.md §7, STYLE.md B8-B9, docs/architecture.md "The cache").
 *
 * Threads: a snapshot is built by one thread (kube_builder_*, or the watch's cache writer) and
 * published with kube_store_publish(). Any thread may kube_store_acquire() the current snapshot,
 * read it with the accessors below (all take const pointers and never change it) and
 * kube_snapshot_release() it. A snapshot never changes after it is published.
 *
 * Ownership: every pointer an accessor returns (records, index arrays, the pool, strings of the
 * pool) is borrowed from the snapshot and valid until the caller's reference is released. Intern
 * ids of records are ids of kube_snapshot_pool(); kube/records.h says when ids of two snapshots
 * may be compared (same writer: always, relists included; different writers: never). */
#ifndef NG_KUBE_SNAPSHOT_H
#define NG_KUBE_SNAPSHOT_H

#include "kube/records.h"

/* ---- snapshot ----------------------------------------------------------------------- */

struct kube_snapshot;

/**
 * The snapshot's string pool (borrowed, valid until the release): it resolves the intern ids of
 * every record of @s. Shared with every snapshot of the same writer (kube/records.h).
 */
const struct ng_intern *kube_snapshot_pool(const struct kube_snapshot *s);
/** The publish count of the cache that made @s (1 for the first). */
uint64_t kube_snapshot_generation(const struct kube_snapshot *s);
/**
 * A number that names @s's table of kind @r: equal in two snapshots exactly when that kind did
 * not change between them (never reused within the process). For a controller that skips a pass
 * when nothing it reads has changed.
 */
uint64_t kube_snapshot_table_serial(const struct kube_snapshot *s, enum kube_resource r);
/**
 * Like kube_snapshot_table_serial(), but equal in two snapshots also when only what no budget
 * reads changed: for nodes, equal while the same nodes sit at the same positions with the same
 * labels, taints and state flags (a kubelet's status heartbeat, a new resourceVersion or
 * condition time keep it); for NodeDisruptionBudgets, while the same budgets at the same
 * positions have the same node selector, topologyKey, taintTargets, countUnavailableNodes and
 * validity (a status write, a new limit or window keep it); for every other kind, the serial.
 * For a consumer that keeps what it derived from those across snapshots (the gate's pools).
 */
uint64_t kube_snapshot_table_shape(const struct kube_snapshot *s, enum kube_resource r);
/**
 * The API server's resourceVersion that @s's table of kind @r reflects: the list it came from or
 * the last watch event (bookmarks included) published with it, as a number; 0 when unknown (a
 * snapshot not made by a watch, or a server whose versions are not decimal numbers). Every
 * object of kind @r written at or before this version is in @s as it was then or later.
 */
uint64_t kube_snapshot_rv(const struct kube_snapshot *s, enum kube_resource r);
/**
 * A resourceVersion as a number, for ordering: 0 for NULL, "" or anything but decimal digits
 * that fit in 64 bits. kube-apiserver's versions are etcd revisions, which are such numbers and
 * grow with every write; Kubernetes calls them opaque, so a caller treats 0 as "cannot compare".
 */
uint64_t kube_rv_number(const char *rv);
/** Number of objects of kind @r. */
size_t kube_snapshot_count(const struct kube_snapshot *s, enum kube_resource r);

const struct kube_node *kube_snapshot_nodes(const struct kube_snapshot *s, size_t *ret_n);
const struct kube_pod *kube_snapshot_pods(const struct kube_snapshot *s, size_t *ret_n);
const struct kube_pvc *kube_snapshot_pvcs(const struct kube_snapshot *s, size_t *ret_n);
const struct kube_pv *kube_snapshot_pvs(const struct kube_snapshot *s, size_t *ret_n);
const struct kube_nd *kube_snapshot_nds(const struct kube_snapshot *s, size_t *ret_n);
const struct kube_adb *kube_snapshot_adbs(const struct kube_snapshot *s, size_t *ret_n);
const struct kube_ndb *kube_snapshot_ndbs(const struct kube_snapshot *s, size_t *ret_n);
const struct kube_ngc *kube_snapshot_ngcs(const struct kube_snapshot *s, size_t *ret_n);
const struct kube_ndt *kube_snapshot_ndts(const struct kube_snapshot *s, size_t *ret_n);
const struct kube_nrem *kube_snapshot_nrems(const struct kube_snapshot *s, size_t *ret_n);
const struct kube_pdb *kube_snapshot_pdbs(const struct kube_snapshot *s, size_t *ret_n);
/** The cluster.x-k8s.io Machines (none when the cluster does not serve them). */
const struct kube_machine *kube_snapshot_machines(const struct kube_snapshot *s, size_t *ret_n);
/** The Machine @ns/@name (intern ids), or NULL. */
const struct kube_machine *kube_snapshot_find_machine(const struct kube_snapshot *s, uint32_t ns,
						      uint32_t name);
/* The Leases of KUBE_MEDIK8S_NAMESPACE (the only namespace whose Leases are cached). */
const struct kube_lease *kube_snapshot_leases(const struct kube_snapshot *s, size_t *ret_n);
/** The NodeDisruption named @name (intern id), or NULL. */
const struct kube_nd *kube_snapshot_find_nd(const struct kube_snapshot *s, uint32_t name);
/** The NodeDisruptionTemplate named @name (intern id), or NULL. */
const struct kube_ndt *kube_snapshot_find_ndt(const struct kube_snapshot *s, uint32_t name);
/** The cached Lease @ns/@name (@name_len bytes, not NUL-terminated); NULL when there is none. */
const struct kube_lease *kube_snapshot_find_lease_str(const struct kube_snapshot *s, const char *ns,
						      const char *name, size_t name_len);
/** The NodeGateConfig named "default", or NULL (defaults apply). */
const struct kube_ngc *kube_snapshot_config(const struct kube_snapshot *s);
/**
 * Index (into kube_snapshot_nodes) of the nodes carrying label @key=@val (intern ids), in node
 * order; *ret_n gets their count.
 */
const uint32_t *kube_snapshot_nodes_with_label(const struct kube_snapshot *s, uint32_t key,
					       uint32_t val, size_t *ret_n);

/** The node named @name (intern id), or NULL. */
const struct kube_node *kube_snapshot_find_node(const struct kube_snapshot *s, uint32_t name);
/**
 * The metadata.resourceVersion of node @n (a record of @s's nodes) as @s knows it: a later
 * version than its record's when only that changed since (a kubelet's status heartbeat; the
 * record is shared with older snapshots then). For writes conditional on the version. "" when
 * the object had none; NULL for hand-made records without one.
 */
const char *kube_snapshot_node_rv(const struct kube_snapshot *s, const struct kube_node *n);
/**
 * Looks a pod up by namespace and name (@ns and @name borrowed for the call, no NUL needed):
 * NULL when there is no such pod.
 */
const struct kube_pod *kube_snapshot_find_pod_str(const struct kube_snapshot *s, const char *ns,
						  size_t ns_len, const char *name, size_t name_len);
const struct kube_pvc *kube_snapshot_find_pvc(const struct kube_snapshot *s, uint32_t ns,
					      uint32_t name);
const struct kube_pv *kube_snapshot_find_pv(const struct kube_snapshot *s, uint32_t name);
/** Index (into kube_snapshot_pods) of the pods on node @node; *ret_n gets their count. */
const uint32_t *kube_snapshot_pods_on_node(const struct kube_snapshot *s, uint32_t node,
					   size_t *ret_n);
/** Index of the pods in namespace @ns. */
const uint32_t *kube_snapshot_pods_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n);
/** Index (into kube_snapshot_adbs) of the budgets in namespace @ns. */
const uint32_t *kube_snapshot_adbs_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n);
/** Index (into kube_snapshot_pdbs) of the PodDisruptionBudgets in namespace @ns. */
const uint32_t *kube_snapshot_pdbs_in_ns(const struct kube_snapshot *s, uint32_t ns, size_t *ret_n);
/**
 * The Granted NodeDisruption whose status.disruptedNodes holds node @node, or NULL. With
 * several, the first by name.
 */
const struct kube_nd *kube_snapshot_node_grant(const struct kube_snapshot *s, uint32_t node);

/** True when @labels (sorted by key) hold @key; writes its value id to @ret_val. */
bool kube_labels_get(const struct kube_label *labels, size_t n, uint32_t key, uint32_t *ret_val);

struct ng_buf;
/**
 * Appends the snapshot as JSON (every object with the fields decisions use) for /debug/cache.
 * NG_ELIMIT/NG_ENOMEM from the buffer (which then ends after the last piece written whole).
 */
NG_NODISCARD ng_status kube_snapshot_dump_json(const struct kube_snapshot *s, struct ng_buf *b);

/**
 * Where a dump in parts stands. Zeroed (`= {0}`) is the start; the fields are kube/dump.c's.
 * Tied to one snapshot: the caller keeps its reference until the dump ends or is abandoned.
 */
struct kube_dump_cursor {
	int section;
	size_t item;
	int stage;
};

/**
 * Appends the next part of the dump of @s at @cur to @b, piece by piece (the head, a section's
 * opening, one object, a section's closing, the tail: each whole), until @b holds at least
 * @budget bytes or the dump ends; a part may so exceed the budget by one piece, and each call
 * before the end appends at least one. Advances @cur past what it wrote. *@ret_done is set true
 * once the final part is written; later calls append nothing and keep it true. The parts,
 * concatenated, are the bytes kube_snapshot_dump_json() writes.
 *
 * Threads: any thread, one caller per cursor (the snapshot is only read).
 * Errors: NG_ELIMIT/NG_ENOMEM from the buffer: @b is restored to its length before the failed
 * piece and @cur stays at it, so the call may be retried with room; NG_EINVAL for a cursor no
 * call produced. *@ret_done is false on error.
 */
NG_NODISCARD ng_status kube_snapshot_dump_json_part(const struct kube_snapshot *s,
						    struct kube_dump_cursor *cur, struct ng_buf *b,
						    size_t budget, bool *ret_done);

/* ---- building a snapshot -------------------------------------------------------------- */

struct kube_builder;

/**
 * Starts a snapshot with a fresh string pool of its own: its ids are not comparable with any
 * other snapshot's. NULL on OOM. Caller frees with kube_builder_finish() or
 * kube_builder_destroy(). One thread at a time.
 */
struct kube_builder *kube_builder_create(void);
/** Frees an unfinished builder. Accepts NULL. */
void kube_builder_destroy(struct kube_builder *b);

/**
 * Adds every object in @len bytes of JSON at @buf (borrowed for the call; no NUL needed): one
 * object, a `List`/`…List` of objects (mixed
 * kinds allowed, as `kubectl get a,b,c -o json` prints). Kinds nodegate does not cache are
 * skipped and counted. A later object with the same identity replaces an earlier one. On
 * malformed input returns NG_EPARSE (or NG_ELIMIT) with @reterr naming the item and field;
 * objects before the bad one stay added, so callers discard the builder on error.
 */
NG_NODISCARD ng_status kube_builder_add_json(struct kube_builder *b, const char *buf, size_t len,
					     struct ng_err *reterr);

/** Objects skipped because their kind is not cached. */
size_t kube_builder_skipped(const struct kube_builder *b);

/**
 * Builds the indexes and returns the snapshot (reference count 1) in @ret_snap; the builder is
 * consumed either way. NG_ENOMEM on OOM.
 */
NG_NODISCARD ng_status kube_builder_finish(struct kube_builder *b, struct kube_snapshot **ret_snap);

/**
 * Builds a snapshot from the files at @paths (borrowed; each a `kubectl get -o json` or
 * `-o yaml` dump, at most NG_MAX_SNAPSHOT_BYTES, and YAML at most that once converted to JSON:
 * ng_yaml_to_json() says what YAML is taken), with a pool of its own. The caller releases
 * *@ret_snap. NG_EIO/NG_ELIMIT (a file), NG_EPARSE (its content, @reterr names file, item and
 * field), NG_ENOMEM.
 */
NG_NODISCARD ng_status kube_snapshot_load_files(const char *const *paths, size_t npaths,
						struct kube_snapshot **ret_snap,
						struct ng_err *reterr);

/**
 * As kube_snapshot_load_files(), but nodegate's own objects with a field their CRD does not have
 * are refused (NG_EPARSE, "FILE: items[2]: spec.priorty: unknown field (did you mean
 * priority?)"; kube/strict.h), as the API server's strict field validation would: for the files
 * people write for `nodegate check` and `nodegate plan`.
 */
NG_NODISCARD ng_status kube_snapshot_load_files_strict(const char *const *paths, size_t npaths,
						       struct kube_snapshot **ret_snap,
						       struct ng_err *reterr);

/** Takes one more reference (returns @s); the caller drops it with release. Any thread. */
struct kube_snapshot *kube_snapshot_ref(struct kube_snapshot *s);
/** Drops a reference; the last one frees the snapshot. Accepts NULL. Any thread. */
void kube_snapshot_release(struct kube_snapshot *s);

/* ---- the store: the current snapshot ------------------------------------------------ */

struct kube_store;

/** Creates a store holding an empty snapshot. NULL on OOM. Free with kube_store_destroy(). */
struct kube_store *kube_store_create(void);
/** Frees the store and drops its snapshot reference. Accepts NULL. */
void kube_store_destroy(struct kube_store *st);
/**
 * Makes @next current; ownership of the caller's reference is taken, and the previous snapshot
 * is released (freed by its last reader). Writer thread only.
 */
void kube_store_publish(struct kube_store *st, struct kube_snapshot *next);
/** Returns the current snapshot with a reference the caller drops with release. Any thread. */
struct kube_snapshot *kube_store_acquire(struct kube_store *st);
/** Number of snapshots published so far (0 = only the initial empty one). */
uint64_t kube_store_generation(struct kube_store *st);

/* Store subscribers: told after every publish (controllers wake on it instead of polling). */
#define KUBE_STORE_MAX_SUBSCRIBERS 16

/**
 * Calls @fn(@ctx) after every kube_store_publish(), on the publishing thread, with no store
 * lock but the subscriber list's held: @fn must be quick and must not call back into the store
 * (a condition-variable signal). Returns a handle for kube_store_unsubscribe(), or -1 when
 * KUBE_STORE_MAX_SUBSCRIBERS are taken. Any thread.
 */
int kube_store_subscribe(struct kube_store *st, void (*fn)(void *ctx), void *ctx);
/** Removes subscriber @sub; once it returns, @fn is not running and will not be called. */
void kube_store_unsubscribe(struct kube_store *st, int sub);

#endif
