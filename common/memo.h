/* The written-but-not-yet-cached memo: what a controller wrote a moment ago and must not write
 * again before its cache shows it (a request created, a pod asked to leave, a version written
 * over). One implementation for every controller: a bounded table of key → until, where until is
 * a monotonic time in ms (ng_now_mono_ms()'s clock) after which the entry is forgotten.
 *
 * Bounded: at most the cap given to ng_memo_init(); putting a new key into a full table forgets
 * the entry that expires soonest (losing one only costs a repeated write, which the API server
 * answers with a conflict). An entry is also forgotten when its owner sees the write in its cache
 * (ng_memo_forget).
 *
 * Threads: a memo belongs to one thread (or is guarded by its owner); no locks inside. */
#ifndef NG_COMMON_MEMO_H
#define NG_COMMON_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ng_memo_entry {
	uint64_t key;
	uint64_t
	    group; /* what the write was for (a remediation), asked by ng_memo_has_group(); 0 */
	int64_t until_mono_ms;
};

struct ng_memo {
	struct ng_memo_entry *e; /* owned; unordered */
	size_t n, cap, max;
};

/** An empty memo holding at most @max keys (0: one). Allocates nothing until the first put. */
void ng_memo_init(struct ng_memo *m, size_t max);

/** Frees the table; the memo is empty (and usable) afterwards. */
void ng_memo_free(struct ng_memo *m);

/** Forgets the entries whose until is at or before @now_mono_ms. */
void ng_memo_expire(struct ng_memo *m, int64_t now_mono_ms);

/** True when @key was put and has neither expired at @now_mono_ms nor been forgotten. Expires
 * what is due on the way. */
bool ng_memo_has(struct ng_memo *m, uint64_t key, int64_t now_mono_ms);

/**
 * Remembers @key until @until_mono_ms (a key already there takes the later until). A full memo
 * forgets its soonest-expiring entry first. On OOM nothing is remembered: only a repeated write
 * follows.
 */
void ng_memo_put(struct ng_memo *m, uint64_t key, int64_t until_mono_ms);

/** ng_memo_put() of a key that belongs to @group: ng_memo_has_group() asks for any of them. */
void ng_memo_put_group(struct ng_memo *m, uint64_t key, uint64_t group, int64_t until_mono_ms);

/** True when some unexpired key of @group is remembered. Expires what is due on the way. */
bool ng_memo_has_group(struct ng_memo *m, uint64_t group, int64_t now_mono_ms);

/** Forgets @key (the cache shows the write now). No-op when absent. */
void ng_memo_forget(struct ng_memo *m, uint64_t key);

/** Forgets every key (a new leadership term starts with nothing written); keeps the table. */
void ng_memo_clear(struct ng_memo *m);

/** The soonest until among the entries, INT64_MAX when empty: when a step should look again. */
int64_t ng_memo_next_expiry(const struct ng_memo *m);

#endif
