/* Kubernetes objects as nodegate keeps them: compact records whose repetitive strings are ids
 * into an interning pool (STYLE.md B8), and what every record kind shares (enum kube_resource).
 *
 * Records are plain values: they come from a snapshot (kube/snapshot.h) or from a one-object
 * holder (struct kube_one, below), and the pool that resolves their ids is that snapshot's or that
 * holder's. Ownership: every pointer inside a record (arrays, selector terms, `const char *`
 * strings) is borrowed from the side data of the snapshot or holder that returned the record and
 * is valid until that snapshot's last kube_snapshot_release() or kube_one_destroy(); nothing in a
 * record is ever freed or changed by its reader.
 *
 * Intern ids: an id is meaningful only in the pool it came from (kube_snapshot_pool(),
 * kube_one_pool()); NG_INTERN_NONE means "absent" or, in a selector, "a value no object carries".
 * Snapshots published by one cache writer (kube/internal.h struct kube_cache: the live watch
 * for the whole life of the process, or one kube_builder) use that writer's line of pools: the
 * writer now and then replaces its pool with one holding only the strings still in use, under
 * the same ids, and never gives an id to another string. So an id, once given, names the same
 * string in every later snapshot of that writer that still holds the string, across watch
 * batches and across relists; in a snapshot that no longer holds it (the object is gone) it
 * resolves to "", and a string that comes back later gets a new id. Ids are NOT comparable
 * across writers: a snapshot built from files
 * (kube_snapshot_load_files(), so each --snapshot reload on SIGHUP), a snapshot from another
 * builder, and a kube_one holder each have a pool of their own; compare their strings. */
#ifndef NG_KUBE_RECORDS_H
#define NG_KUBE_RECORDS_H

#include "common/cron.h"
#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_intern;

struct kube_label {
	uint32_t key, val; /* intern ids */
};

enum kube_op {
	KUBE_OP_IN,
	KUBE_OP_NOTIN,
	KUBE_OP_EXISTS,
	KUBE_OP_DOES_NOT_EXIST,
	KUBE_OP_GT, /* node selectors only */
	KUBE_OP_LT, /* node selectors only */
};

/* One requirement of a label selector or node-selector term. Values are intern ids; a value no
 * object carries is NG_INTERN_NONE and matches nothing. For Gt/Lt, @num holds the bound. */
struct kube_requirement {
	uint32_t key;
	uint8_t op; /* enum kube_op */
	uint16_t nvalues;
	const uint32_t *values;
	int64_t num;
};

/* A metav1.LabelSelector. @present false is a null selector (matches nothing); present with no
 * requirements is `{}` (matches everything). */
struct kube_selector {
	bool present;
	uint16_t nreqs;
	const struct kube_requirement *reqs;
};

/* One nodeSelectorTerm: expressions and fields ANDed. @invalid terms (unknown operator, bad
 * Gt/Lt value, matchFields other than one-valued In/NotIn on metadata.name) match nothing, as in
 * Kubernetes' LazyErrorNodeSelector. */
struct kube_node_term {
	bool invalid;
	uint16_t nexprs, nfields;
	const struct kube_requirement *exprs;
	const struct kube_requirement *fields; /* key is "metadata.name" */
};

/* A PersistentVolume's spec.nodeAffinity.required. @present false: no affinity (the volume
 * pins no node). Terms are ORed. */
struct kube_node_selector {
	bool present;
	uint16_t nterms;
	const struct kube_node_term *terms;
};

/* IntOrString as Kubernetes writes it (e.g. "maxDisruptions: 1" or "25%"). */
struct kube_int_or_string {
	bool set;
	bool is_str;
	int64_t i;
	uint32_t str; /* intern id when is_str */
};

enum kube_node_flag {
	KUBE_NODE_READY = 1u << 0,
	KUBE_NODE_UNSCHEDULABLE = 1u << 1,
	KUBE_NODE_DND_INVALID = 1u << 2, /* do-not-disrupt annotation unreadable: protects */
	/* Another actor is taking the node away: an autoscaler's or a cloud's deletion taint
	 * (KUBE_LEAVING_TAINTS). Counted as disrupted by every NodeDisruptionBudget. */
	KUBE_NODE_LEAVING = 1u << 3,
	/* Condition GracefulNodeShutdownInProgress is True: counted as disrupted likewise. */
	KUBE_NODE_SHUTTING_DOWN = 1u << 4,
	/* One of the lifecycle conditions (KUBE_LIFECYCLE_TYPES) is True with a reason nodegate
	 * writes (KUBE_LIFECYCLE_REASON_PREFIX): the drainer clears it once nobody holds the node.
	 */
	KUBE_NODE_LIFECYCLE_OURS = 1u << 5,
};

/* Taint keys by which an autoscaler or a cloud says a node is going away: the cluster-
 * autoscaler's scale-down, Karpenter's disruption (v1, and the key of releases before it), the
 * non-graceful shutdown taint, and every key of aws-node-termination-handler (a prefix). */
#define KUBE_LEAVING_TAINTS                                                                        \
	{                                                                                          \
		"ToBeDeletedByClusterAutoscaler", "karpenter.sh/disrupted",                        \
		    "karpenter.sh/disruption", "node.kubernetes.io/out-of-service"                 \
	}
#define KUBE_LEAVING_TAINT_PREFIX "aws-node-termination-handler/"

/* The node lifecycle conditions nodegate keeps on the nodes it holds (docs/drainer.md "Node
 * conditions"), in this order everywhere, and the condition that says a node shuts down. */
#define KUBE_LIFECYCLE_NTYPES 4
#define KUBE_LIFECYCLE_TYPES                                                                       \
	{                                                                                          \
		"MaintenancePlanned", "DrainInProgress", "Drained", "MaintenanceInProgress"        \
	}
#define KUBE_LIFECYCLE_REASON_PREFIX "Nodegate"
#define KUBE_SHUTDOWN_CONDITION "GracefulNodeShutdownInProgress"

/* The annotations by which autoscalers leave a node alone, which the drainer sets to "true" on
 * the nodes it holds (NodeGateConfig protectHeldNodes) and restores on release. */
#define KUBE_NPROTECT 2
#define KUBE_PROTECT_ANNOTATIONS                                                                   \
	{                                                                                          \
		"cluster-autoscaler.kubernetes.io/scale-down-disabled",                            \
		    "karpenter.sh/do-not-disrupt"                                                  \
	}

/**
 * The hash the drainer compares a node's lifecycle conditions by: over the KUBE_LIFECYCLE_TYPES
 * in order, each one's @status ("True", "False", "Unknown"; NULL when the node has no such
 * condition), @reason and @message (NULL as ""). Equal hashes: nothing to write.
 */
uint32_t kube_lifecycle_hash(const char *const status[KUBE_LIFECYCLE_NTYPES],
			     const char *const reason[KUBE_LIFECYCLE_NTYPES],
			     const char *const message[KUBE_LIFECYCLE_NTYPES]);

/* The annotation by which a pod or a node says "not now" (docs/gate.md, Do-not-disrupt):
 * "true", or a duration (e.g. "30m") since the pod started or the node was created. */
#define KUBE_DO_NOT_DISRUPT "nodegate.io/do-not-disrupt"
/* A kube_pod/kube_node dnd_until_ms: no annotation (or "false"), and protected for good. */
#define KUBE_DND_NONE 0
#define KUBE_DND_ALWAYS INT64_MAX

struct kube_taint {
	uint32_t key, val, effect;
};

/* A taint a NodeDisruptionBudget counts as unavailability (spec.taintTargets): key, and effect
 * and value unless NG_INTERN_NONE; `exists` ignores the value (operator Exists). */
struct kube_taint_target {
	uint32_t key, val, effect;
	bool exists;
};

/* The drainer's note on a node it holds (annotation nodegate.io/drain, JSON): written before the
 * node is first cordoned, so a drainer restarted at any point knows what to give back. */
struct kube_drain_note {
	bool present;           /* the annotation exists */
	bool invalid;           /* it does not parse: the node is left alone, and logged */
	bool was_unschedulable; /* "wasUnschedulable": the node was cordoned before nodegate */
	uint16_t nholders;
	const uint32_t *holders; /* "holders": names of the NodeDisruptions that hold the node */
	const char *boot_id;     /* "bootID": status.nodeInfo.bootID when first held; "" if none */
	uint16_t ntaints;
	const struct kube_taint
	    *taints; /* "taints": [{key, effect}] the drainer added (val NONE) */
	/* "protected": [{key, was}]: the KUBE_PROTECT_ANNOTATIONS the drainer set (bit i for the
	 * i-th), those of them present before (bit i of protect_had) and their values then
	 * (intern ids, read only where protect_had says so). */
	uint8_t protect, protect_had;
	uint32_t protect_was[KUBE_NPROTECT];
};

enum kube_cond_status {
	KUBE_COND_UNKNOWN,
	KUBE_COND_TRUE,
	KUBE_COND_FALSE,
};

/* One status.conditions entry of a node, as NodeRemediation rules read them. */
struct kube_node_condition {
	uint32_t type;    /* intern id */
	uint8_t status;   /* enum kube_cond_status */
	int64_t since_ms; /* lastTransitionTime; 0 when absent or not a time */
};

/* Most conditions kept per node: the kubelet writes five, node-problem-detector and device
 * plugins add a few each. */
#define KUBE_MAX_NODE_CONDITIONS 64

struct kube_node {
	uint32_t name;
	uint32_t flags; /* enum kube_node_flag */
	uint32_t nlabels, ntaints;
	uint16_t nconditions;
	const struct kube_node_condition *conditions; /* status.conditions, in their order */
	const struct kube_label *labels;              /* sorted by key id */
	const struct kube_taint *taints;
	const char
	    *boot_id; /* status.nodeInfo.bootID; "" when absent (NULL in hand-made records) */
	/* metadata.resourceVersion as decoded; "" when absent (NULL likewise). A snapshot may
	 * hold a later version of the node that changed nothing else (a kubelet's status
	 * heartbeat): read the version with kube_snapshot_node_rv(). */
	const char *rv_decoded;
	const char *uid;             /* metadata.uid; "" when absent (NULL likewise) */
	bool has_annotations;        /* metadata.annotations exists (JSON patches need to know) */
	struct kube_drain_note note; /* annotation nodegate.io/drain */
	/* The KUBE_PROTECT_ANNOTATIONS on the node: bit i of protect_present when the i-th is
	 * there, of protect_true when its value is "true"; the values (intern ids, read only where
	 * protect_present says so). */
	uint8_t protect_present, protect_true;
	uint32_t protect_val[KUBE_NPROTECT];
	uint32_t lifecycle_hash; /* kube_lifecycle_hash() of its lifecycle conditions */
	/* Annotation nodegate.io/do-not-disrupt: protected until this wall time (ms);
	 * KUBE_DND_NONE or KUBE_DND_ALWAYS. */
	int64_t dnd_until_ms;
};

enum kube_pod_phase {
	KUBE_POD_PENDING,
	KUBE_POD_RUNNING,
	KUBE_POD_SUCCEEDED,
	KUBE_POD_FAILED,
	KUBE_POD_UNKNOWN,
};

enum kube_pod_flag {
	KUBE_POD_MIRROR = 1u << 0,      /* static pod mirrored by the kubelet */
	KUBE_POD_DAEMONSET = 1u << 1,   /* controller is a DaemonSet */
	KUBE_POD_TERMINATING = 1u << 2, /* deletionTimestamp set */
	KUBE_POD_EMPTYDIR = 1u << 3,    /* has an emptyDir volume (its data dies with the pod) */
	KUBE_POD_DND_INVALID = 1u << 4, /* do-not-disrupt annotation unreadable: protects */
	KUBE_POD_READY = 1u << 5,       /* condition Ready=True: healthy, as a PDB counts it */
	KUBE_POD_MORE_FINALIZERS = 1u << 6, /* metadata.finalizers has more than @finalizer */
};

struct kube_pod {
	const char *name; /* not interned: pod names are nearly unique and churn */
	uint32_t ns;
	uint32_t node;       /* NG_INTERN_NONE when not scheduled */
	uint32_t owner_kind; /* controller's kind, NG_INTERN_NONE without controller */
	uint8_t phase;       /* enum kube_pod_phase */
	uint8_t flags;       /* enum kube_pod_flag */
	uint16_t nlabels, nclaims, nrequests;
	/* The first of metadata.finalizers (what keeps a terminating pod), NG_INTERN_NONE when
	 * none: fits the padding before @labels. */
	uint32_t finalizer;
	const struct kube_label *labels; /* sorted by key id */
	const uint32_t *claims;          /* PVC names (in ns) mounted by the pod */
	/* The distinct resource names of the containers' requests and limits: what drain
	 * podEvictionFilters match. */
	const uint32_t *requests;
	/* Annotation nodegate.io/do-not-disrupt: protected until this wall time (ms; a duration
	 * counts from status.startTime, and a pod not started yet is protected);
	 * KUBE_DND_NONE or KUBE_DND_ALWAYS. */
	int64_t dnd_until_ms;
};

enum kube_pvc_phase {
	KUBE_PVC_PENDING,
	KUBE_PVC_BOUND,
	KUBE_PVC_LOST,
};

struct kube_pvc {
	uint32_t ns, name;
	uint32_t volume; /* spec.volumeName, NG_INTERN_NONE when unset */
	uint8_t phase;   /* enum kube_pvc_phase */
	uint16_t nlabels;
	const struct kube_label *labels;
};

struct kube_pv {
	uint32_t name;
	struct kube_node_selector affinity;
};

enum kube_nd_state {
	KUBE_ND_UNKNOWN, /* no status yet: counts as Pending */
	KUBE_ND_PENDING,
	KUBE_ND_GRANTED,
	KUBE_ND_REJECTED,
};

/* Longest spec.drain.podEvictionFilters[].byResourceNameRegex: a resource name pattern is tens
 * of bytes; longer is a mistake, and compiling costs more the longer it is. */
#define KUBE_MAX_REGEX_BYTES 1024

/* Most entries in a NodeDisruption's lists (nodeNames, disruptedNodes, additionalRequestors,
 * disruptedDisruptionBudgets, drain.podEvictionFilters): a cluster may have thousands of nodes in
 * one request, and 65535 is the bound of the record's 16-bit counts. */
#define KUBE_MAX_ND_LIST 65535

/* spec.drain.evictionStrategy */
enum kube_drain_strategy {
	KUBE_DRAIN_EVICT, /* "Evict", the default */
	KUBE_DRAIN_DELETE,
	KUBE_DRAIN_FORCE_DELETE,
	KUBE_DRAIN_NONE,
};

/* One spec.drain.podEvictionFilters entry: the filters are ORed. */
struct kube_eviction_filter {
	/* byResourceNameRegex (at most KUBE_MAX_REGEX_BYTES); NULL when absent. Not compiled
	 * here: whoever matches with it gets it from common/regex.h's cache (dialect and limits
	 * there). */
	const char *by_resource_name_regex;
};

/* spec.drain (DESIGN.md §3.1): read by the drainer only; defaults applied when absent. */
/* spec.drain.rules[].behavior: Cluster API's MachineDrainRule behaviors. */
enum kube_drain_behavior {
	KUBE_DRAIN_BEHAVIOR_DRAIN,          /* evicted, in ascending order batches */
	KUBE_DRAIN_BEHAVIOR_SKIP,           /* never evicted, never waited for */
	KUBE_DRAIN_BEHAVIOR_WAIT_COMPLETED, /* never evicted; the drain waits until it is gone or
					       finished */
};

/* Rules in one spec.drain.rules list: a list read for every pod of a drained node; 32 orders
 * and exceptions are more than any cluster's drain needs. */
#define KUBE_MAX_DRAIN_RULES 32
/* The pod label that takes precedence over every rule ("skip" or "wait-completed"), as
 * Cluster API reads it. */
#define KUBE_POD_DRAIN_LABEL "cluster.x-k8s.io/drain"

/* One spec.drain.rules entry (a NodeDisruption's or NodeGateConfig's). */
struct kube_drain_rule {
	/* podSelector and namespaceSelector; not present: every pod, every namespace. */
	struct kube_selector pod_selector, ns_selector;
	int32_t order;    /* Drain only; 0 when absent */
	uint8_t behavior; /* enum kube_drain_behavior */
};

struct kube_nd_drain {
	bool present; /* spec.drain is set */
	bool cordon;  /* default true */
	bool has_taint;
	struct kube_taint taint;       /* key, value (NG_INTERN_NONE when absent), effect */
	bool has_wait;                 /* waitForPodCompletion is set */
	const char *wait_pod_selector; /* waitForPodCompletion.podSelector (selector string) */
	int64_t wait_timeout_s;        /* waitForPodCompletion.timeoutSeconds; -1 when absent */
	uint8_t strategy;              /* enum kube_drain_strategy (evictionStrategy) */
	const char *pod_selector;      /* label selector string; NULL when absent */
	uint16_t nfilters;
	const struct kube_eviction_filter *filters; /* podEvictionFilters */
	bool force;                                 /* default false */
	bool delete_empty_dir;                      /* default false */
	bool skip_waiting_for_eviction;             /* default false */
	bool wait_for_volume_detach;                /* default true */
	int64_t timeout_s; /* timeoutSeconds (per attempt); -1 when absent */
	/* deadlineSeconds: the whole drain, from the grant, across attempts; -1 when absent (the
	 * NodeGateConfig default applies), 0: none. */
	int64_t deadline_s;
	uint8_t on_deadline; /* enum kube_drain_on_deadline (onDeadline) */
	uint16_t nrules;
	const struct kube_drain_rule *rules; /* spec.drain.rules, in their order */
};

/* spec.drain.onDeadline: what a drain not finished by its deadline does. */
enum kube_drain_on_deadline {
	KUBE_ON_DEADLINE_RETRY,      /* go on trying, as without a deadline */
	KUBE_ON_DEADLINE_RELEASE,    /* the gate ends the request: the nodes are given back */
	KUBE_ON_DEADLINE_QUARANTINE, /* the drainer labels the nodes, keeps them cordoned and
					fails the request */
};

/* spec.operation (DESIGN.md §3.1): read by the drainer only. */
struct kube_nd_operation {
	bool present; /* spec.operation is set */
	/* jobTemplate (a batch/v1 JobTemplateSpec, which the CRD keeps whole) as compact JSON with
	 * object keys sorted, so equal templates are equal strings; NULL when absent. */
	const char *job_template;
	bool wait_for_reboot; /* default false */
	/* The first field that makes the operation privileged (hostPID, hostNetwork, hostIPC, a
	 * hostPath volume, or a container's securityContext privileged, allowPrivilegeEscalation
	 * or capabilities.add), as "spec.template.spec.hostPID"; NULL when none. Only requestors
	 * allowed `create` on nodedisruptions/privileged-operation may ask for one (admission). */
	const char *privileged;
};

/* One status.disruptedDisruptionBudgets entry: a budget's verdict in the decision. */
struct kube_nd_verdict {
	uint32_t kind, ns, name; /* reference.*; NG_INTERN_NONE when absent */
	bool ok;
	bool preparing;     /* its multistep hooks answered /prepare: /terminate is owed */
	const char *reason; /* "" when absent */
};

/* One status.conditions entry. */
struct kube_condition {
	const char *type, *reason, *message; /* "" when absent */
	uint8_t status;                      /* enum kube_cond_status */
	int64_t since_ms;                    /* lastTransitionTime; 0 when absent */
};

/* status.drain: the drainer's progress, read back so a restarted drainer goes on. */
struct kube_nd_drain_status {
	int64_t total, evicted, remaining, progress; /* pods */
	int64_t attempts;                            /* failed attempts so far */
	int64_t backoff_until_ms;                    /* backoffUntil; 0 when absent */
	int64_t attempt_started_ms;                  /* attemptStartedAt; 0 when absent */
};

/* What only admission and the drainer read of a NodeDisruption. */
struct kube_nd_detail {
	bool has_node_selector; /* spec.nodeSelector is set (not null), even when invalid */
	bool has_node_names;    /* spec.nodeNames is set (not null), even when empty */
	int64_t start_ms;       /* spec.startDate; 0 when absent */
	int64_t duration_ms;    /* spec.duration (a Go duration such as "1h30m"); -1 when absent */
	struct kube_nd_drain drain;
	struct kube_nd_operation operation;
	uint16_t nmore_requestors;
	const uint32_t *more_requestors; /* spec.additionalRequestors */
	/* Intern id of why spec.drain, spec.operation, spec.additionalRequestors, spec.startDate,
	 * spec.duration, spec.activeDeadlineSeconds or spec.ttlSecondsAfterCompletion is malformed
	 * (the first problem, naming the field); NG_INTERN_NONE when fine. Such a request stays
	 * readable for the gate, which reads only the last two (malformed: absent); admission
	 * refuses it and a drainer must not act on it. */
	uint32_t spec_error;
	uint32_t created_by;  /* annotation nodegate.io/created-by; NG_INTERN_NONE when absent */
	uint32_t remediation; /* label nodegate.io/remediation: the NodeRemediation that created
			       * the request; NG_INTERN_NONE when absent */
	/* Annotation nodegate.io/cluster-api-machine ("<namespace>/<name>") of a request labelled
	 * nodegate.io/cluster-api: "true", Cluster API gating's for that Machine; NG_INTERN_NONE
	 * otherwise. */
	uint32_t capi_machine;
	int64_t granted_ms; /* status.grantedAt; 0 when absent, -1 when not a time */
	/* spec.activeDeadlineSeconds and spec.ttlSecondsAfterCompletion (0..KUBE_MAX_LIFECYCLE_S);
	 * -1 when absent or malformed (then spec_error names the field). */
	int64_t active_deadline_s, ttl_after_completion_s;
	int64_t expires_ms; /* status.expiresAt; 0 when absent or not a time */
	uint16_t ndeleted_nodes;
	const uint32_t *deleted_nodes; /* status.deletedNodes: granted nodes since deleted */
	/* A request eviction.autoRequest made (label nodegate.io/auto-request: "true"); when the
	 * evictor last used it (annotation nodegate.io/last-used; 0 when absent or not a time);
	 * whether its node was seen cordoned while it existed (nodegate.io/node-cordoned). */
	bool auto_request, node_cordoned;
	int64_t last_used_ms;
	bool has_annotations; /* metadata.annotations exists (JSON patches need to know) */
	uint16_t nverdicts;
	const struct kube_nd_verdict *verdicts; /* status.disruptedDisruptionBudgets */
	uint16_t nconditions;
	const struct kube_condition *conditions;  /* status.conditions, in their order */
	struct kube_nd_drain_status drain_status; /* status.drain */
};

struct kube_nd {
	uint32_t name;
	uint8_t state; /* enum kube_nd_state */
	uint32_t type, requestor;
	int32_t priority;
	uint16_t nnode_names, ndisrupted;
	const uint32_t *node_names; /* spec.nodeNames */
	const uint32_t *disrupted;  /* status.disruptedNodes */
	struct kube_selector node_selector;
	bool selector_invalid;   /* spec.nodeSelector did not decode: the request selects nothing */
	uint32_t selector_error; /* intern id of why, when invalid */
	bool retry;              /* spec.retry.enabled */
	int64_t deadline_ms;     /* spec.retry.deadline; 0 = none */
	int64_t created_ms;      /* metadata.creationTimestamp; 0 when absent */
	bool deleting;           /* metadata.deletionTimestamp is set */
	uint32_t retry_count;    /* status.retryCount */
	int64_t next_retry_ms;   /* status.nextRetryDate; 0 when absent */
	const char *rv;          /* metadata.resourceVersion ("" when absent): write precondition */
	const char *uid;         /* metadata.uid ("" when absent): Events name it */
	const char *status_reason; /* the first failing budget's reason in status, "" if none */
	uint16_t nfinalizers;
	const uint32_t *finalizers; /* metadata.finalizers */
	bool additional_requestors; /* spec.additionalRequestors is not empty */
	int64_t read_mono_us;       /* when this version was decoded (a watch event read, a list
				     * page, a file): the start of nodegate's own share of a
				     * decision's latency. Monotonic µs; 0 in records made by hand */
	/* The rest, in the record's side data so the record stays small (every pending change of
	 * the cache holds a record of the largest kind). Never NULL in a decoded record; NULL in
	 * records made by hand (tests, benchmarks). */
	const struct kube_nd_detail *detail;
};

/* The most seconds a NodeDisruption's spec.activeDeadlineSeconds or ttlSecondsAfterCompletion
 * and NodeGateConfig's lifecycle defaults may say: ten years is past any maintenance (more is a
 * typo), and keeps the milliseconds they become far from overflowing. */
#define KUBE_MAX_LIFECYCLE_S 315360000

/* NodeGateConfig spec.eviction.autoRequestIdleSeconds: how long a request autoRequest made may
 * go unused before the gate ends it. Low values are allowed (tests use them) but end the
 * requests of evictors that retry less often than that. */
#define KUBE_MIN_AUTO_IDLE_S 1
#define KUBE_MAX_AUTO_IDLE_S 86400
#define KUBE_DEFAULT_AUTO_IDLE_S 300
/* The label autoRequest puts on its requests, and the annotations that record their use. */
#define KUBE_AUTO_REQUEST_LABEL "nodegate.io/auto-request"
#define KUBE_LAST_USED_ANNOTATION "nodegate.io/last-used"
#define KUBE_NODE_CORDONED_ANNOTATION "nodegate.io/node-cordoned"

/* One entry of a budget's spec.windows: the schedule opens a maintenance window on the zone's
 * wall clock and it stays open for the duration; inside it, @limit (spec.windows[].
 * maxDisruptedNodes on a NodeDisruptionBudget, maxDisruptions on an ApplicationDisruptionBudget)
 * replaces the budget's own maximum when set. */
struct kube_window {
	struct ng_cron cron;
	const struct ng_tz *tz; /* the process's zone table: valid for the process's life */
	int64_t duration_ms;
	struct kube_int_or_string limit;
	uint32_t schedule, zone; /* intern ids of the text, for reasons and round trips */
};

/* Most windows a budget may list (the CRDs' maxItems says the same): any namespace may create
 * an ApplicationDisruptionBudget, and every decision on its nodes computes where each of its
 * windows stands (bounded work each, common/cron.h), so the count is bounded too. 16 is more
 * than a weekly plan of one window a day and a few exceptions needs. */
#define KUBE_MAX_WINDOWS 16

/* A maintenance exclusion (spec.exclusions of a budget or a NodeGateConfig): no new grant
 * touching what it covers from start_ms until end_ms (exclusive). */
struct kube_exclusion {
	int64_t start_ms, end_ms;
	uint32_t reason; /* intern id; "" when none was given */
};

/* Most exclusions one object may list (the CRDs' maxItems says the same). */
#define KUBE_MAX_EXCLUSIONS 32

/* The longest pause pacing takes (spec.soakSeconds, spec.minIntervalSeconds): a week, which
 * already outlasts any maintenance a node pool is paced for. */
#define KUBE_MAX_PACING_SECONDS 604800

/* A node of status.soakingNodes: counted as disrupted until until_ms; KUBE_SOAK_NOT_BACK
 * while it is not Ready and schedulable again since its request ended. */
struct kube_soaking {
	uint32_t node; /* intern id */
	int64_t until_ms;
};
#define KUBE_SOAK_NOT_BACK INT64_MAX

/* Orders struct kube_soaking by node id, for qsort() and bsearch(). */
static inline int kube_soaking_cmp(const void *a, const void *b)
{
	const struct kube_soaking *x = a, *y = b;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* Most soaking nodes a budget's status lists (and a decoder reads back): as many as an
 * ApplicationDisruptionBudget's watchedNodes. */
#define KUBE_MAX_SOAKING 1000

/* An ApplicationDisruptionBudget's spec.healthHook (DESIGN.md §3.3), or either budget kind's
 * spec.hookV2BasePath. Whether the URL may be called is the NodeGateConfig's healthHooks policy,
 * checked when it is called (policy/hook.h). */
struct kube_hook {
	bool present;
	bool service;    /* from .service: url is its cluster DNS name */
	const char *url; /* .url, or https://<name>.<namespace>.svc:<port><path> */
	const char *ca;  /* .caBundle decoded (PEM), NULL = system roots */
	size_t nca;
	int32_t timeout_s; /* .timeoutSeconds: healthHook 1..25, default 5; hookV2BasePath 1..60,
			    * default 30 */
	uint32_t error;    /* intern id of why the hook cannot be called; NG_INTERN_NONE if fine */
	/* The URL's parts, read once here so that deciding needs no URL parser: scheme and host
	 * lower case, an IPv6 literal's host without brackets; NULL when error is set. */
	const char *scheme, *host;
	bool userinfo; /* the URL carries credentials (user[:password]@) */
	/* .tokenSecretRef: the Secret key whose value is sent as "Authorization: Bearer <it>";
	 * intern ids, NG_INTERN_NONE when absent. */
	uint32_t token_ns, token_name, token_key;
};

/* Shared by ADB and NDB: a budget that failed validation stays in the cache as invalid so the
 * decision can fail closed and say why. */
struct kube_budget_common {
	uint32_t ns, name; /* ns is NG_INTERN_NONE for cluster-scoped */
	const char *uid;   /* metadata.uid ("" when absent; NULL in records made by hand) */
	bool invalid;
	uint32_t error; /* intern id of the validation message when invalid */
	bool frozen;
	uint32_t freeze_reason;
	uint16_t ntypes;
	const uint32_t *types; /* supportedNodeDisruptionTypes; empty = every type */
	uint16_t nwindows;
	const struct kube_window *windows; /* spec.windows; none = always open */
	/* spec.outsideWindows: UseDefault (true) applies the budget's own limits outside every
	 * window; Deny (false, the default) allows nothing there. */
	bool outside_use_default;
	uint16_t nexclusions;
	const struct kube_exclusion *exclusions; /* spec.exclusions, sorted by start */
	/* spec.hookV2BasePath: the multistep hooks (<url>/prepare, /ready, /terminate); not
	 * present when absent. Both budget kinds. */
	struct kube_hook hook2;
	/* Pacing (docs/gate.md "Pacing"): spec.soakSeconds and spec.minIntervalSeconds in ms, 0
	 * off; status.lastGrantAt (0 none), written by the gate before a grant adding nodes; and
	 * status.soakingNodes, sorted by node id. */
	int64_t soak_ms, min_interval_ms;
	int64_t last_grant_ms;
	uint16_t nsoaking;
	const struct kube_soaking *soaking;
};

struct kube_adb {
	struct kube_budget_common b;
	struct kube_hook hook;
	struct kube_selector pod_selector;
	struct kube_selector pvc_selector;
	struct kube_int_or_string max_disruptions;
};

struct kube_ndb {
	struct kube_budget_common b;
	struct kube_selector node_selector;
	struct kube_int_or_string max_disrupted;
	struct kube_int_or_string min_undisrupted;
	/* spec.topologyKey (intern id, NG_INTERN_NONE when absent): the node label whose values
	 * split the pool into domains (a node without it is in the domain ""), with
	 * spec.maxDisruptedDomains (-1 when absent) and spec.maxDisruptedNodesPerDomain. */
	uint32_t topology_key;
	int64_t max_domains;
	struct kube_int_or_string max_per_domain;
	bool count_unavailable;
	uint16_t ntargets;
	const struct kube_taint_target *taint_targets; /* spec.taintTargets */
};

/* NodeGateConfig (the singleton named "default"): what the cache keeps of it so far. The
 * eviction fields override the server's flags while the object exists. */
enum kube_eviction_mode {
	KUBE_EVICTION_UNSET,
	KUBE_EVICTION_ENFORCE,
	KUBE_EVICTION_WARN,
	KUBE_EVICTION_OFF,
};

/**
 * Parses an eviction mode as the wire spells it (NUL-terminated "Enforce", "Warn" or "Off"):
 * NodeGateConfig spec.eviction.mode and, through pol_eviction_mode_parse(), --eviction-mode.
 * NG_OK and writes @ret (never KUBE_EVICTION_UNSET), else NG_EPARSE and @ret is untouched.
 */
NG_NODISCARD ng_status kube_eviction_mode_parse(const char *s, enum kube_eviction_mode *ret);

/* One CIDR of NodeGateConfig healthHooks.allowedCIDRs: @bits leading bits of @addr. */
struct kube_cidr {
	uint8_t family; /* 4 or 6 */
	uint8_t bits;
	uint8_t addr[16];
};

/* NodeGateConfig spec.healthHooks: where health hooks may send requests. */
/* NodeGateConfig healthHooks.terminateDeadlineSeconds by default. */
#define KUBE_DEFAULT_TERMINATE_DEADLINE_S 600

struct kube_hook_policy {
	uint16_t nhosts, ncidrs;
	const uint32_t *hosts;         /* allowedHosts: host globs (intern ids); none = any host */
	const struct kube_cidr *cidrs; /* allowedCIDRs; none = any address */
	bool allow_service_refs;       /* default true */
	bool allow_http;               /* default false */
	int64_t max_response_bytes;    /* default 65536 */
	/* terminateDeadlineSeconds: how long a deleted request's /terminate calls are tried
	 * (1..86400, default 600) */
	int64_t terminate_deadline_s;
};

/* NodeGateConfig spec.alertGate: one cluster-wide Prometheus question asked before the gate
 * grants anything (docs/gate.md "Alert gate"). */
enum kube_alert_mode {
	KUBE_ALERT_NONE,  /* no alertGate */
	KUBE_ALERT_QUERY, /* query: firing when the instant vector is not empty */
	KUBE_ALERT_REGEX, /* alertNameRegex: firing when a firing alert's alertname matches */
};

/* Longest alertGate.query: PromQL a person writes is a few hundred bytes. */
#define KUBE_ALERT_QUERY_MAX 4096
/* Longest alertGate.alertNameRegex: it is matched as Prometheus matches a label value, as
 * ^(?s:…)$, which must stay within NG_REGEX_MAX_BYTES (1024). */
#define KUBE_ALERT_REGEX_MAX 1000

struct kube_alert_gate {
	uint8_t mode; /* enum kube_alert_mode */
	/* prometheusURL (url without a trailing '/', scheme, host, userinfo), caBundle (ca, nca)
	 * and timeoutSeconds (timeout_s: 1..30, default 5): checked and called as a health hook
	 * is, under spec.healthHooks. */
	struct kube_hook target;
	const char *expr; /* query or alertNameRegex (as written); NULL when mode is NONE */
	int32_t cache_s;  /* cacheSeconds: 1..300, default 10 */
	bool fail_open;   /* failurePolicy Ignore; default Deny */
};

struct kube_ngc {
	uint32_t name;
	bool invalid;
	uint32_t error; /* intern id of the validation message when invalid */
	bool paused;
	uint16_t nexclusions;
	const struct kube_exclusion *exclusions; /* spec.exclusions: the whole cluster */
	bool reject_empty;                       /* spec.rejectEmptyDisruptions (default true) */
	bool reject_overlapping; /* spec.rejectOverlappingDisruptions (default false) */
	/* spec.nodeConditions and spec.protectHeldNodes are false (both default true, so that a
	 * zeroed record keeps them on). */
	bool no_node_conditions, no_protect_held;
	bool serial_control_plane; /* spec.controlPlane.serial (default true) */
	bool respect_pdbs;         /* spec.respectPodDisruptionBudgets (default false) */
	/* spec.clusterAPI.enabled false: Cluster API Machines are not gated (default: gated;
	 * docs/integrations/cluster-api.md). */
	bool capi_disabled;
	/* spec.medik8sLeases (default false): hold medik8s's node Lease while a node is granted,
	 * and grant no node whose Lease another holder owns. */
	bool medik8s_leases;
	/* spec.controlPlane.selector; not present = label node-role.kubernetes.io/control-plane
	 * exists. */
	struct kube_selector control_plane_selector;
	int64_t retry_initial_ms; /* spec.retry.initialIntervalSeconds; 0 = default */
	int64_t retry_max_ms;     /* spec.retry.maxIntervalSeconds; 0 = default */
	uint16_t nallowed_types;
	const uint32_t *allowed_types; /* spec.allowedTypes; none = any type */
	uint8_t eviction_mode;         /* enum kube_eviction_mode */
	bool auto_request;             /* spec.eviction.autoRequest (default false) */
	/* spec.eviction.autoRequestIdleSeconds (KUBE_MIN..KUBE_MAX_AUTO_IDLE_S); 0 in a record
	 * made by hand: the default, KUBE_DEFAULT_AUTO_IDLE_S. */
	int64_t auto_request_idle_s;
	/* spec.eviction.exemptUsers is present (possibly empty): user or group names, a trailing
	 * '*' matching by prefix (kube_exempt_entry_problem() says which entries are refused). */
	bool has_exempt_users;
	uint16_t nexempt;
	const uint32_t *exempt_users;
	struct kube_hook_policy hooks; /* spec.healthHooks */
	struct kube_alert_gate alert;  /* spec.alertGate; mode NONE when absent or invalid */
	/* spec.doNotDisruptOverrideTypes: request types whose grant overrides do-not-disrupt. */
	uint16_t ndnd_override;
	const uint32_t *dnd_override;
	/* spec.drain: pods in namespaces matching protected_namespaces are evicted through the
	 * Eviction API whatever the strategy (never deleted past a PodDisruptionBudget); running
	 * Job pods matching protected_job_pods hold a drain back. Not present: none. */
	struct kube_selector protected_namespaces, protected_job_pods;
	int64_t drain_deadline_s; /* spec.drain.deadlineSeconds: requests' default; -1: none */
	uint16_t ndrain_rules;
	const struct kube_drain_rule *drain_rules; /* spec.drain.rules: after a request's own */
	int64_t drain_backoff_base_ms, drain_backoff_max_ms,
	    drain_backoff_jitter_ms; /* -1: default */
	/* spec.lifecycle.defaultActiveDeadlineSeconds and defaultTTLSecondsAfterCompletion, for
	 * requests that set none (0..KUBE_MAX_LIFECYCLE_S), each when its has_ is set (a zeroed
	 * record has none: a TTL of 0 would end requests at once). */
	bool has_default_deadline, has_default_ttl;
	int64_t default_deadline_s, default_ttl_s;
};

/* The label on a NodeDisruption a NodeRemediation created, valued with its name; the finalizer
 * that keeps a NodeRemediation until its requests are done. */
#define KUBE_REMEDIATION_LABEL "nodegate.io/remediation"

/* The annotations the author webhook (/mutate/author) writes on NodeDisruptionTemplates and
 * NodeRemediations at create and at every change of their spec: the user's name, and the
 * user's groups as a compact JSON array of strings. */
#define KUBE_AUTHOR_ANNOTATION "nodegate.io/created-by"
#define KUBE_AUTHOR_GROUPS_ANNOTATION "nodegate.io/created-by-groups"
/* Groups recorded for an author: enough for any real user (a handful, OIDC users a few dozen);
 * a user in more is refused rather than recorded with some dropped, since the groups are what
 * the author's rights are checked with later. 8 KiB bounds the annotation. */
#define KUBE_MAX_AUTHOR_GROUPS 256
#define KUBE_MAX_AUTHOR_GROUPS_BYTES 8192

/* Who wrote an object's spec, from its author annotations. @name is NG_INTERN_NONE when the
 * annotations are absent or the groups annotation is not a JSON array of at most
 * KUBE_MAX_AUTHOR_GROUPS strings (then no author is known: decide as for none). */
struct kube_author {
	uint32_t name; /* nodegate.io/created-by: intern id */
	uint16_t ngroups;
	const uint32_t *groups; /* nodegate.io/created-by-groups: intern ids, in their order */
};
#define KUBE_REMEDIATION_FINALIZER "nodegate.io/remediation"

/* A NodeDisruptionTemplate: what a NodeRemediation's requests are made of. */
struct kube_ndt {
	uint32_t name;
	/* Intern id of why spec.drain or spec.operation is malformed (as a NodeDisruption's
	 * would be refused); NG_INTERN_NONE when fine. */
	uint32_t error;
	/* spec as compact JSON with object keys sorted ("{}" when absent): the members of the
	 * requests' spec besides nodeNames. */
	const char *spec_json;
	/* What the gate reads of the requests, for dry runs: spec.type and spec.requestor (intern
	 * ids, NG_INTERN_NONE when absent), spec.priority, spec.retry.enabled. */
	uint32_t type, requestor;
	int32_t priority;
	bool retry;
	/* spec.operation's first privileged field (struct kube_nd_operation); NULL when none. */
	const char *privileged;
	struct kube_author author; /* who last wrote the spec */
};

/* One NodeRemediation spec.rule.conditions entry. */
struct kube_rem_condition {
	uint32_t type;  /* intern id */
	uint8_t status; /* enum kube_cond_status */
	int64_t for_ms; /* forSeconds, in ms */
};

/* One status.lastRemediated entry, read back so a restarted nodegate keeps the cooldown. */
struct kube_rem_last {
	uint32_t node, request; /* intern ids */
	int64_t at_ms;          /* time */
	const char *uid;        /* the request's uid ("" when absent) */
};

/* Most rule conditions and status.lastRemediated entries of a NodeRemediation. */
#define KUBE_MAX_REM_CONDITIONS 16
#define KUBE_MAX_REM_LAST 1000

/* A NodeRemediation (docs/remediation.md). One that fails validation stays in the cache as
 * invalid with the message: it starts nothing and its status says why. */
struct kube_nrem {
	uint32_t name;
	const char *uid, *rv; /* "" when absent */
	bool deleting;        /* metadata.deletionTimestamp is set */
	bool has_finalizer;   /* metadata.finalizers holds nodegate.io/remediation */
	uint16_t nfinalizers;
	const uint32_t *finalizers;
	bool invalid;
	uint32_t error; /* intern id of the validation message when invalid */
	struct kube_selector node_selector;
	uint16_t nconds;
	const struct kube_rem_condition *conds;
	uint32_t template_name;
	struct kube_int_or_string max_concurrent; /* default 1 */
	bool storm_guard;
	struct kube_int_or_string max_unhealthy;
	int64_t cooldown_ms; /* cooldownSeconds (default 3600), in ms */
	/* status, read back */
	bool storm;
	int64_t storm_since_ms;
	uint16_t nlast;
	const struct kube_rem_last *last; /* status.lastRemediated */
	struct kube_author author;        /* who last wrote the spec */
};

/* A policy/v1 PodDisruptionBudget: what NodeGateConfig respectPodDisruptionBudgets weighs a
 * grant against. One whose selector does not read is @invalid and covers every pod of its
 * namespace with nothing allowed (fail closed). */
struct kube_pdb {
	uint32_t ns, name;
	struct kube_selector selector; /* spec.selector: null selects nothing, {} every pod */
	bool invalid;
	bool has_status; /* status.observedGeneration or disruptionsAllowed present */
	int64_t disruptions_allowed, current_healthy, desired_healthy, expected_pods;
};

/* Cluster API's Machine deletion phase hooks: while a Machine being deleted carries an
 * annotation with this prefix, Cluster API does not drain its Node. nodegate's own hook is
 * KUBE_CAPI_HOOK; its value names the hook's owner (Cluster API reads only the key). */
#define KUBE_CAPI_PRE_DRAIN_PREFIX "pre-drain.delete.hook.machine.cluster.x-k8s.io/"
#define KUBE_CAPI_HOOK "pre-drain.delete.hook.machine.cluster.x-k8s.io/nodegate"
#define KUBE_CAPI_HOOK_VALUE "nodegate"
/* The label and annotation on the NodeDisruption nodegate asks for a deleted Machine: the
 * label marks it (value "true"), the annotation names the Machine as <namespace>/<name>. */
#define KUBE_CAPI_REQUEST_LABEL "nodegate.io/cluster-api"
#define KUBE_CAPI_MACHINE_ANNOTATION "nodegate.io/cluster-api-machine"

/* A cluster.x-k8s.io Machine: what Cluster API gating reads (docs/integrations/cluster-api.md). */
struct kube_machine {
	uint32_t ns, name;
	const char *uid, *rv; /* metadata.uid, metadata.resourceVersion; "" when absent */
	bool deleting;        /* metadata.deletionTimestamp is set */
	bool has_annotations; /* metadata.annotations exists (JSON patches need to know) */
	bool hook;            /* annotation KUBE_CAPI_HOOK is there */
	uint16_t npre_drain;  /* annotations with KUBE_CAPI_PRE_DRAIN_PREFIX, ours included */
	uint32_t node;        /* status.nodeRef.name; NG_INTERN_NONE when absent */
	uint32_t owner_kind, owner_name; /* the first ownerReferences entry; NONE when none */
	uint32_t cluster;                /* spec.clusterName; NG_INTERN_NONE when absent */
};

/* The namespace medik8s (node-healthcheck-operator, node-maintenance-operator,
 * self-node-remediation, through their shared lease manager) keeps node leases in, and the only
 * namespace whose Leases nodegate caches: one Lease "node-<node name>" per node an actor holds. */
#define KUBE_MEDIK8S_NAMESPACE "medik8s-leases"
#define KUBE_MEDIK8S_LEASE_PREFIX "node-"

/* A coordination.k8s.io/v1 Lease of KUBE_MEDIK8S_NAMESPACE. Times are wall ms, 0 when absent
 * or unreadable; a lease without renewTime or leaseDurationSeconds has expired (medik8s treats
 * it so). */
struct kube_lease {
	uint32_t ns, name;
	uint32_t holder;    /* spec.holderIdentity; NG_INTERN_NONE when absent or "" */
	int64_t duration_s; /* spec.leaseDurationSeconds; -1 when absent */
	int64_t acquire_ms, renew_ms;
	int64_t transitions; /* spec.leaseTransitions; 0 when absent */
	const char *rv;      /* metadata.resourceVersion ("" when absent): write precondition */
	const char *uid;     /* metadata.uid ("" when absent) */
};

/* The cached kinds: each has a row in kube/kinds.c (path, scope, decoder, key, dump, ...). */
enum kube_resource {
	KUBE_RES_NODES,
	KUBE_RES_PODS,
	KUBE_RES_PVCS,
	KUBE_RES_PVS,
	KUBE_RES_NDS,
	KUBE_RES_ADBS,
	KUBE_RES_NDBS,
	KUBE_RES_NGCS,
	KUBE_RES_NDTS,     /* NodeDisruptionTemplates */
	KUBE_RES_NREMS,    /* NodeRemediations */
	KUBE_RES_PDBS,     /* policy/v1 PodDisruptionBudgets */
	KUBE_RES_MACHINES, /* cluster.x-k8s.io Machines (optional) */
	KUBE_RES_LEASES,   /* coordination.k8s.io/v1 Leases of KUBE_MEDIK8S_NAMESPACE only */
	KUBE_RES_COUNT,
};

/** Name of @r as the metrics label `resource` spells it ("pods", "nodedisruptions", ...). */
const char *kube_resource_name(enum kube_resource r);

/**
 * Checks label key syntax (optional DNS-subdomain prefix and '/', then a 1-63 character name).
 * Returns NULL when valid, else a constant message saying what is wrong.
 */
const char *kube_label_key_problem(const char *s, size_t len);
/** Checks label value syntax (empty, or up to 63 characters). NULL when valid. */
const char *kube_label_value_problem(const char *s, size_t len);

/**
 * Checks one exemptUsers entry (NodeGateConfig spec.eviction.exemptUsers, --exempt-user): a
 * user or group name, or a prefix of one ending in '*'. Returns NULL when valid, else a constant
 * message: "*" alone is refused, since it would exempt every user from the eviction guard.
 */
const char *kube_exempt_entry_problem(const char *s);

#endif
