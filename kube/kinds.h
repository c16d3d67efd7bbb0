/* One row per cached resource kind (kube_kinds[], kube/kinds.c): everything kube/ needs to know
 * about a kind, read by the watch (paths, urgency, a 404 list), the decoder (kind name, scope,
 * dispatch), the tables (record size, identity key, indexes), the intern-id walk, the dump and the
 * metrics. Nothing else in kube/ switches on the kind: adding one is its record struct in
 * records.h, its decoder, its row, and accessors for the code that reads it (docs/architecture.md,
 * "Adding a resource kind").
 * Threads: the rows are constant; any thread reads them. */
#ifndef NG_KUBE_KINDS_H
#define NG_KUBE_KINDS_H

#include "kube/internal.h"
#include "kube/write.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct kd_ctx;
struct kd_id;
struct kube_dump_out;

/* Decodes the record of one kind from @obj into @c's object (kube/decode_internal.h). */
typedef ng_status kube_decode_fn(struct kd_ctx *c, const struct cJSON *obj, const struct kd_id *id);
/* Copies a record decoded in scratch into one exactly sized block: its side data (tagged with
 * KUBE_SIDE_BLOCK), NULL on OOM. */
typedef void *kube_compact_fn(void *rec);
/* Builds a table's secondary indexes (idx_a, idx_b, grant); @pool resolves names. */
typedef ng_status kube_index_fn(struct kube_table *t, const struct ng_intern *pool);
/* Calls @fn with every intern id @rec holds. */
typedef void kube_ids_fn(const void *rec, kube_id_fn fn, void *ctx);
/* Writes record @i of a snapshot's table of the kind as one JSON object (kube/dump.c). */
typedef void kube_dump_fn(struct kube_dump_out *o, const struct kube_snapshot *s, size_t i);

struct kube_kind_row {
	const char *group;   /* API group: "" for the core group */
	const char *version; /* "v1", "v1alpha1" */
	const char *plural;  /* "pods": path, metrics label `resource`, /debug/cache section */
	const char *kind;    /* "Pod": the kind an object names */
	bool namespaced;     /* a missing metadata.namespace reads as "default" */
	/* A namespaced kind cached from this one namespace only: its list and watch path is
	 * /.../namespaces/<namespace>/<plural> (the API server lists a namespace that does not
	 * exist as empty). NULL: every namespace. */
	const char *namespace;
	bool any_version; /* objects of any version of the group decode (nodegate's own) */
	bool optional;    /* a list answered 404 is an empty table, listed again later */
	bool urgent;      /* published as soon as it changes, not once per batch window */
	size_t size;      /* sizeof its record */
	uint64_t (*key)(const void *rec); /* identity: (namespace, name) or name */
	/* NULL: equal keys are the same object; else told apart by this (hashed keys) */
	bool (*same)(const void *a, const void *b);
	kube_ids_fn *ids;       /* every intern id the record holds (kube/ids.c) */
	kube_decode_fn *decode; /* its decoder (kube/decode_*.c) */
	/* Its watch events are read straight from their text (kube_decode_read_as(), into the
	 * record decode makes), not through a tree. Only pods have that reader
	 * (kube/decode_read.c): the million objects of a large start. */
	bool read_from_text;
	kube_compact_fn *compact; /* NULL: the record keeps an arena and an interned name */
	kube_index_fn *index;     /* NULL: no index beyond the identity key */
	/* NULL: an update is a new object at the table's end, and every table a new shape. Else an
	 * update takes its old record's place, and a table whose updates all kept this (old, new)
	 * keeps its predecessor's shape and copies its indexes (kube_snapshot_table_shape(): what
	 * the gate's kept budget pools are made of). */
	bool (*same_shape)(const void *old, const void *rec);
	/* NULL: none. Else whether @rec differs from @old in its resourceVersion alone: such an
	 * update is published as a patch over the table (struct kube_table), not a copy of it.
	 * Only for a kind whose readers take the version from an accessor that knows of patches
	 * (kube_snapshot_node_rv()). */
	bool (*same_but_version)(const void *old, const void *rec);
	kube_dump_fn *dump; /* its /debug/cache object (kube/dump.c) */
	/* How kube/write.h names it in a struct kube_ref; its paths and apiVersion come from this
	 * row. KUBE_KIND_NONE: nodegate never writes it. */
	enum kube_kind write;
};

/** The row whose write target is @k; NULL for a kind nodegate writes without caching it. */
const struct kube_kind_row *kube_kind_of_write(enum kube_kind k);

extern const struct kube_kind_row kube_kinds[KUBE_RES_COUNT];

/* Longest list/watch path a row gives. */
#define KUBE_KIND_PATH_MAX 160
/** The list and watch path of @r ("/api/v1/pods", "/apis/<group>/<version>/<plural>"). */
void kube_kind_path(enum kube_resource r, char *buf, size_t cap);

/* What the rows point at, by kind: intern ids (kube/ids.c), indexes (kube/table.c) and the
 * /debug/cache objects (kube/dump.c); decoders are in kube/decode_internal.h. */
void kube_ids_node(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_pod(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_pvc(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_pv(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_nd(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_adb(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_ndb(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_ngc(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_ndt(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_nrem(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_pdb(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_machine(const void *rec, kube_id_fn fn, void *ctx);
void kube_ids_lease(const void *rec, kube_id_fn fn, void *ctx);

/* nodes: by label (key, value); pods: by node and by namespace; ADBs and PDBs: by namespace;
 * NodeDisruptions: granted node -> the first Granted request by name. */
ng_status kube_index_node_labels(struct kube_table *t, const struct ng_intern *pool);
ng_status kube_index_pods(struct kube_table *t, const struct ng_intern *pool);
ng_status kube_index_adbs(struct kube_table *t, const struct ng_intern *pool);
ng_status kube_index_pdbs(struct kube_table *t, const struct ng_intern *pool);
ng_status kube_index_nd_grants(struct kube_table *t, const struct ng_intern *pool);

kube_dump_fn kube_dump_node, kube_dump_pod, kube_dump_pvc, kube_dump_pv, kube_dump_nd,
    kube_dump_adb, kube_dump_ndb, kube_dump_ngc, kube_dump_ndt, kube_dump_nrem, kube_dump_pdb,
    kube_dump_machine, kube_dump_lease;

#endif
