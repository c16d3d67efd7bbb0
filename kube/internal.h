/* kube/ internals: shared by the module's files and its unit tests only.
 *
 * Memory model. A snapshot is an interning pool plus one immutable table per resource. Tables
 * are reference counted and shared: a publish rebuilds only the tables of resources that
 * changed. Each record's side data (labels, selector terms, a pod's name) lives in a small arena
 * of its own. When a record is deleted or replaced, its arena is retired onto the retire list of
 * the last table version that holds it; retire lists form a chain (each holds a reference on the
 * next), so a list is freed only once its table and every older table of that resource are
 * gone. No reader ever sees freed side data, and the writer never waits for readers. */
#ifndef NG_KUBE_INTERNAL_H
#define NG_KUBE_INTERNAL_H

#include "kube/one.h"
#include "kube/snapshot.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/map.h"

#include <stdatomic.h>

struct cJSON;
struct ng_arena;
struct ng_intern;

static inline uint64_t kube_key2(uint32_t a, uint32_t b)
{
	return ((uint64_t)a << 32) | b;
}

struct kube_range {
	uint32_t start, count;
};

/* An index from a key (node id, namespace id) to a run of record indexes. */
struct kube_index {
	struct ng_map map; /* key -> range number */
	struct kube_range *ranges;
	uint32_t *items;
};

/* Any record, for code that handles every kind. */
union kube_record {
	struct kube_node node;
	struct kube_pod pod;
	struct kube_pvc pvc;
	struct kube_pv pv;
	struct kube_nd nd;
	struct kube_adb adb;
	struct kube_ndb ndb;
	struct kube_ngc ngc;
	struct kube_ndt ndt;
	struct kube_nrem nrem;
	struct kube_pdb pdb;
	struct kube_machine machine;
	struct kube_lease lease;
};

/** Size of one record of @r. */
size_t kube_record_size(enum kube_resource r);
/**
 * The identity hash of a record: (namespace, name) or name. Pod names are not interned, so
 * pods hash their name and equal hashes are told apart with kube_record_same().
 */
uint64_t kube_record_key(enum kube_resource r, const void *rec);
/** True when two records of @r name the same object. */
bool kube_record_same(enum kube_resource r, const void *a, const void *b);
/** The pod key for (ns id, name bytes): what kube_record_key() gives a pod. */
uint64_t kube_pod_key(uint32_t ns, const char *name, size_t len);

/* A record's side data: an arena (nodes, volumes, budgets: nested selectors and terms) or, for
 * pods, one exactly sized malloc'd block marked by the low pointer bit. A pod's data is ~100
 * bytes; an arena of its own would cost ~370 (measured: 679 bytes per cached pod in all). */
#define KUBE_SIDE_BLOCK ((uintptr_t)1)
/** Frees side data of either kind. Accepts NULL. */
void kube_side_free(void *side);

struct kube_retire {
	atomic_uint refs;
	struct kube_retire *next; /* a reference is held */
	void **sides;
	size_t n, cap;
};

/** A new empty retire list with one reference. NULL on OOM. */
struct kube_retire *kube_retire_new(void);
/** Makes room for @extra more arenas (writer only). NG_ENOMEM on OOM. */
NG_NODISCARD ng_status kube_retire_reserve(struct kube_retire *r, size_t extra);
/** Adds @side to the list; room must have been reserved (writer only). */
void kube_retire_add(struct kube_retire *r, void *side);
/** Drops a reference; the last one frees the arenas and drops the reference on next. */
void kube_retire_release(struct kube_retire *r);

/* A later version of record idx of a table that differs from it in its resourceVersion alone
 * (kube_kind_row.same_but_version): the record, held in @side, which the patch owns. */
struct kube_patch {
	uint32_t idx;
	const void *rec;
	void *side;
};

struct kube_table {
	atomic_uint refs;
	enum kube_resource res;
	uint64_t serial; /* unique per table built in this process: kube_snapshot_table_serial() */
	uint64_t shape;  /* kube_snapshot_table_shape(): serial, or an older table's (nodes) */
	size_t n;
	void *recs;                 /* n records of kube_record_size(res) */
	void **sides;               /* each record's side data (see above) */
	struct ng_map by_key;       /* identity key -> index (pods probe past equal hashes) */
	struct kube_index idx_a;    /* pods: by node; adbs: by namespace; nodes: by label */
	struct kube_index idx_b;    /* pods: by namespace */
	struct ng_map grant;        /* nds: granted node -> index (first Granted by name) */
	struct kube_retire *retire; /* a reference: freed after this and older versions */
	/* A patched table (a reference on @base): @base's records, sides and indexes (recs, sides,
	 * by_key, idx_a, idx_b and grant alias them) with @npatches later versions of some
	 * records, sorted by index, each differing from its record in its version alone. A node
	 * heartbeat publishes so: no copy of the other records. NULL/0 for a table of its own. */
	struct kube_table *base;
	struct kube_patch *patches;
	size_t npatches;
};

/**
 * Builds a table over @n records and their side arenas, taking ownership of both malloc'd
 * arrays, and its indexes. @pool resolves names for ordering. Takes a reference on @retire.
 * NULL on OOM, and then the arrays stay the caller's.
 */
struct kube_table *kube_table_build(enum kube_resource res, void *recs, void **sides, size_t n,
				    const struct ng_intern *pool, struct kube_retire *retire);
/**
 * As kube_table_build() with the identity map built already (@by_key: key -> index, as
 * kube_table_find() probes it); the map is taken on success and stays the caller's on failure.
 */
struct kube_table *kube_table_build_keyed(enum kube_resource res, void *recs, void **sides,
					  size_t n, struct ng_map *by_key,
					  const struct ng_intern *pool, struct kube_retire *retire);
/**
 * As kube_table_build() for records whose identities, places and everything the indexes read are
 * @like's (a node table of the same shape: kube_snapshot_table_shape()): @like's identity map and
 * indexes are copied, not built again, and the table takes @like's shape.
 */
struct kube_table *kube_table_build_like(enum kube_resource res, void *recs, void **sides, size_t n,
					 const struct kube_table *like, struct kube_retire *retire);
/**
 * A table showing @like's records with @patches (@n, sorted by index, taken on success; each
 * record found in @like and same_but_version with it) in place of theirs: it shares @like's (or
 * its base's) arrays and indexes, and keeps @like's shape. NULL on OOM.
 */
struct kube_table *kube_table_build_patched(struct kube_table *like, struct kube_patch *patches,
					    size_t n, struct kube_retire *retire);
/** Record @i of @t as @t shows it: its patch's when it has one. */
const void *kube_table_rec(const struct kube_table *t, size_t i);
void kube_table_release(struct kube_table *t);
/** The run of record indexes under @key, *ret_n long (NULL and 0 when none). */
const uint32_t *kube_index_get(const struct kube_index *ix, uint32_t key, size_t *ret_n);
/** Index of the record with the identity of @probe, or -1. */
long kube_table_find(const struct kube_table *t, const void *probe);

/* A string pool and the snapshots that use it: each snapshot holds a reference on the pool it
 * was published with, so a pool the writer replaced (kube_cache_publish_some()) lives on until
 * its last snapshot goes. */
struct kube_pool {
	atomic_uint refs;
	struct ng_intern *in;
};

struct kube_pool *kube_pool_new(void);
void kube_pool_release(struct kube_pool *p);

struct kube_snapshot {
	atomic_uint refs;
	uint64_t generation;
	struct kube_pool *pool;
	struct kube_table *t[KUBE_RES_COUNT];
	uint64_t rv[KUBE_RES_COUNT]; /* kube_snapshot_rv() */
};

/* The writer side of the cache (one thread): the last published tables plus pending changes. */
struct kube_cache;

/** A cache holding nothing yet. NULL on OOM. */
struct kube_cache *kube_cache_create(void);
/** Retires every live record and drops the writer's references. Accepts NULL. */
void kube_cache_destroy(struct kube_cache *c);
/**
 * The pool decoders intern into. A publish may replace it (the pool is rebuilt with only the
 * strings still in use, ids unchanged): fetch it again after every publish, never keep it.
 */
struct ng_intern *kube_cache_pool(struct kube_cache *c);
/**
 * Rebuilds the pool at a publish once it holds more than @min strings and twice as many as
 * after the last rebuild (default KUBE_INTERN_REBUILD_MIN; tests lower it). 0 never rebuilds.
 */
void kube_cache_set_intern_min(struct kube_cache *c, uint32_t min);
/** Strings a pool must hold before a publish considers rebuilding it: a cluster's settled
 * vocabulary is tens of thousands of strings, and a rebuild walks every record. */
#define KUBE_INTERN_REBUILD_MIN 65536u

/** Called with each intern id a record holds (NG_INTERN_NONE included, duplicates too). */
typedef void (*kube_id_fn)(void *ctx, uint32_t id);
/** Visits every intern id of record @rec of @r (kube/ids.c). */
void kube_record_ids(enum kube_resource r, const void *rec, kube_id_fn fn, void *ctx);
/** A scratch arena for kube_decode_*() on the writer thread. */
struct ng_arena *kube_cache_scratch(struct kube_cache *c);
/**
 * Notes that the changes of kind @r given so far bring it to the API server's resourceVersion
 * @rv (a list's, or a watch event's, bookmarks included): the next publish of @r carries it
 * (kube_snapshot_rv()). A version that is not a decimal number counts as 0 (unknown).
 */
void kube_cache_note_rv(struct kube_cache *c, enum kube_resource r, const char *rv);

/* A decoded object: its kind, record and side data (ownership passes to the cache). */
struct kube_object {
	enum kube_resource res;
	union kube_record rec;
	void *side;
};

/**
 * Decodes one Kubernetes object into @ret with side data of its own. @scratch (may be NULL; reset
 * here) is where a pod is decoded before it is copied into one exact block. Returns
 * NG_ENOTFOUND for kinds the cache does not keep. NG_EPARSE/NG_ELIMIT with @reterr naming @where
 * and the field on a malformed core object; a malformed budget decodes as invalid instead.
 */
NG_NODISCARD ng_status kube_decode_object(struct ng_intern *pool, struct ng_arena *scratch,
					  const struct cJSON *obj, const char *where,
					  struct kube_object *ret, struct ng_err *reterr);

/**
 * Decodes @obj as a @res object whatever its kind/apiVersion say (items of a list response carry
 * neither). Errors as kube_decode_object().
 */
NG_NODISCARD ng_status kube_decode_as(struct ng_intern *pool, struct ng_arena *scratch,
				      enum kube_resource res, const struct cJSON *obj,
				      const char *where, struct kube_object *ret,
				      struct ng_err *reterr);

/* What kube_decode_read_as() read of an object's metadata besides its record, as the text
 * gives it: .s NULL when absent or not a string. Valid while the reader's text and arena are. */
struct kube_read_meta {
	struct ng_json_str name, ns, rv;
};

/** Whether kube_decode_read_as() reads objects of @res (pods). */
bool kube_decode_reads(enum kube_resource res);

/**
 * kube_decode_as() of the object at @r, read straight from its text without building a tree
 * (kube/decode_read.c), for the kinds kube_decode_reads() names: the same record and the same
 * errors, naming @where (required; so is @scratch). The object is consumed; when the text is
 * not JSON, the reader's status is returned and its error set (@reterr untouched).
 */
NG_NODISCARD ng_status kube_decode_read_as(struct ng_intern *pool, struct ng_arena *scratch,
					   enum kube_resource res, struct ng_json_reader *r,
					   const char *where, struct kube_object *ret,
					   struct kube_read_meta *meta, struct ng_err *reterr);

/** Queues an added or modified object; ownership of @obj->side is taken. NG_ENOMEM on OOM. */
NG_NODISCARD ng_status kube_cache_upsert(struct kube_cache *c, struct kube_object *obj);
/** Queues a deletion of the object @obj names; ownership of @obj->side is taken. */
NG_NODISCARD ng_status kube_cache_delete(struct kube_cache *c, struct kube_object *obj);
/* A list being received: the objects of one resource, gathered apart from the cache's pending
 * changes so that a list in progress is never published half-way, and kept as the table's own
 * arrays so that the largest table is never held twice (writer thread only). */
struct kube_stage;

/**
 * An empty stage for @r, known to @c until destroyed (a pool rebuild keeps the strings of staged
 * objects). Destroy it before @c. NULL on OOM.
 */
struct kube_stage *kube_stage_create(struct kube_cache *c, enum kube_resource r);
/** Frees the stage and the side data of what it still holds. Accepts NULL. */
void kube_stage_destroy(struct kube_stage *s);
/**
 * Adds a listed object (of the stage's resource); ownership of @obj->side is taken. An object
 * listed twice keeps its later version. NG_ENOMEM on OOM.
 */
NG_NODISCARD ng_status kube_stage_add(struct kube_stage *s, struct kube_object *obj);
/** Objects staged so far. */
size_t kube_stage_count(const struct kube_stage *s);
/**
 * Replaces every object of the stage's resource with the staged ones: builds that resource's
 * next table at once (the next snapshot shows it, e.g. kube_cache_publish_some() with mask 0)
 * and drops its pending changes, which the list supersedes. The staged objects move into the
 * table; the caller still destroys @s. NG_ENOMEM changes nothing.
 */
NG_NODISCARD ng_status kube_cache_replace(struct kube_cache *c, struct kube_stage *s);

/** Drops every object of @r: the next publish shows only what is upserted after this (relist). */
void kube_cache_reset(struct kube_cache *c, enum kube_resource r);
/** Drops the pending changes of @r (a relist that failed half-way). */
void kube_cache_discard(struct kube_cache *c, enum kube_resource r);
/** True when changes are pending. */
bool kube_cache_dirty(const struct kube_cache *c);
/** Bit (1u << r) set for every resource r with pending changes. */
unsigned kube_cache_dirty_mask(const struct kube_cache *c);
/**
 * Applies pending changes: rebuilds the tables of changed resources and returns a new snapshot
 * (one reference) of every resource. NG_ENOMEM leaves the pending changes in place.
 */
NG_NODISCARD ng_status kube_cache_publish(struct kube_cache *c, struct kube_snapshot **ret_snap);
/**
 * As kube_cache_publish() for the resources in @mask only (bit 1u << r); the others' pending
 * changes stay pending and their current tables go into the snapshot.
 */
NG_NODISCARD ng_status kube_cache_publish_some(struct kube_cache *c, unsigned mask,
					       struct kube_snapshot **ret_snap);

/* The framing of a watch stream (kube/watch.c): newline-delimited JSON events, which need not
 * line up with the HTTP chunks that carry them. Caller storage; one thread. */
struct kube_lines {
	struct ng_buf buf; /* bytes received and not yet handed over */
	size_t scanned;    /* of buf, already searched for '\n' */
};

/** One line (@len bytes at @line, without its '\n', borrowed for the call). False stops. */
typedef bool (*kube_line_fn)(void *ctx, const char *line, size_t len);

/** Starts empty: what is held plus one chunk may be at most @cap bytes. Allocates nothing. */
void kube_lines_init(struct kube_lines *l, size_t cap);
/** Drops what is held (a new stream), keeping the storage. */
void kube_lines_reset(struct kube_lines *l);
/** Frees the storage. Accepts a zeroed struct. */
void kube_lines_finish(struct kube_lines *l);
/**
 * Appends @n bytes at @p (borrowed) and hands each complete line that is not empty to @fn, in
 * order, until @fn returns false: the lines not handed over then stay held, and the next call
 * (with @n 0, if need be) hands them over first. Bytes after the last '\n' wait for the rest of
 * their line. NG_ELIMIT when what is held plus @n is over the cap, NG_ENOMEM: nothing is then
 * appended nor handed over.
 */
NG_NODISCARD ng_status kube_lines_feed(struct kube_lines *l, const char *p, size_t n,
				       kube_line_fn fn, void *ctx);

/**
 * Parses @len bytes at @buf into a tree in a fresh, uncapped arena of its own (*@ret_arena):
 * one free for the whole tree instead of one per node, and about twice as fast to build
 * (bench/json-parse.c). The caller destroys the arena when the tree is decoded. Both written
 * only on success; errors of ng_json_parse(), NG_ENOMEM.
 */
NG_NODISCARD ng_status kube_parse_scratch(const char *buf, size_t len, struct ng_arena **ret_arena,
					  struct cJSON **ret_root, struct ng_err *reterr);

/* What an operation Job's pod spec @ps (a JobTemplateSpec's spec.template.spec, borrowed) may
 * never hold, webhook or not: a Secret volume or projected source, a projected service account
 * token, automountServiceAccountToken true, an env or envFrom from a Secret. NULL when none;
 * else why, with the field relative to @ps written to @field (@cap bytes). Any thread. */
const char *kube_pod_spec_forbidden(const struct cJSON *ps, char *field, size_t cap);

/* Whether pod spec @ps (borrowed) is privileged: hostPID, hostNetwork, hostIPC, a hostPath
 * volume, or an (init, ephemeral) container whose securityContext sets privileged or
 * allowPrivilegeEscalation true or adds capabilities. The first such field, relative to @ps,
 * goes to @field (@cap bytes). Any thread. */
bool kube_pod_spec_privileged(const struct cJSON *ps, char *field, size_t cap);

#endif
