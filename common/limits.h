/* Every cap on input-derived sizes lives here, each with the reason for its value. */
#ifndef NG_COMMON_LIMITS_H
#define NG_COMMON_LIMITS_H

/* Largest AdmissionReview body we accept. etcd stores objects up to 1.5 MB; an eviction or a
 * NodeDisruption review carries at most two copies of a small object, so 3 MiB is generous and
 * keeps a connection's worst-case memory bounded (DESIGN.md §10). */
#define NG_MAX_BODY_BYTES (3u * 1024u * 1024u)

/* Per-request arena cap. Real reviews are objects of mostly long strings and parse into about
 * twice their size; a body of tiny values (`[0,0,0,...]`) costs ~40x (a 64-byte node per two
 * bytes) and is refused with "too many values" once it would take more than this. */
#define NG_REQUEST_ARENA_CAP_BYTES (8u * 1024u * 1024u)

/* Arena chunk size: large enough that a typical 2 KB review needs one chunk. */
#define NG_ARENA_CHUNK_BYTES (16u * 1024u)

/* JSON nesting depth we accept anywhere (DESIGN.md §10). Kubernetes objects nest about 12 deep;
 * cJSON's own compile-time limit (1000) is far too deep to be a defence. */
#define NG_MAX_JSON_DEPTH 64

/* Requirements in one label selector or node-selector term. Kubernetes sets no limit; real
 * selectors hold a handful, and 64 bounds the cost of matching one object. */
#define NG_MAX_SELECTOR_TERMS 64

/* Values in one In/NotIn requirement. */
#define NG_MAX_SELECTOR_VALUES 256

/* nodeSelectorTerms in one node affinity. */
#define NG_MAX_NODE_SELECTOR_TERMS 64

/* Taints the drainer's note on one node lists (one per distinct drain taint of its holders). */
#define NG_MAX_NOTE_TAINTS 64

/* Labels kept per object. Kubernetes objects rarely carry more than a few dozen. */
#define NG_MAX_LABELS 256

/* Length of a label key (253-byte DNS prefix + '/' + 63-byte name) and value (63). */
#define NG_MAX_LABEL_KEY_BYTES 317
#define NG_MAX_LABEL_VALUE_BYTES 63

/* Length of a selector written in string form (kubectl -l ...). */
#define NG_MAX_SELECTOR_STRING_BYTES 4096

/* Largest snapshot file `serve --snapshot` reads: a 150k-pod cluster dump is about 1 GB of
 * `kubectl get -o json`; the cap keeps a wrong path from exhausting memory. */
#define NG_MAX_SNAPSHOT_BYTES (2048ull * 1024ull * 1024ull)

/* Strings interned in one pool (ids are uint32_t; one id value is reserved for "absent"). */
#define NG_MAX_INTERNED 0x7fffffffu

/* Log line size: PIPE_BUF, so one write(2) is atomic on pipes (STYLE.md B10). */
#define NG_LOG_LINE_BYTES 4096

#endif
