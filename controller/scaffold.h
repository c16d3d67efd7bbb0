/* The one way a controller is started and stopped on kube/runtime: the runtime created with the
 * controller's step, store and watch, woken by every change of leadership when it has a lease
 * (the watch's result checked: a controller that would never hear of leadership does not
 * start), stopped by unwatching the lease and joining the thread; and the /metrics helpers the
 * controllers share (the leader gauge, a counter family with one label).
 *
 * It lives in controller/ and not in kube/runtime because it knows the lease (controller/leader.h),
 * which the kube layer may not.
 *
 * Ownership: scaffold_create() returns the runtime (freed by scaffold_stop()); the config is
 * borrowed, as kube_runtime_config's is. Threads: create, start and stop from the owner (main);
 * the renderers from any thread. */
#ifndef NG_CONTROLLER_SCAFFOLD_H
#define NG_CONTROLLER_SCAFFOLD_H

#include "common/status.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct kube_config;
struct kube_runtime;
struct kube_store;
struct kube_watch;
struct leader;
struct ng_buf;

struct scaffold_config {
	const char *name;               /* the thread's name and the logs' component */
	const struct kube_config *kube; /* as kube_runtime_config's */
	struct kube_store *store;       /* NULL: no wake-ups on publishes */
	const struct kube_watch *watch; /* NULL: run at once */
	struct leader *leader;          /* borrowed; NULL: no lease, no leadership wake-ups */
	int64_t (*step)(struct kube_runtime *rt, void *ctx);
	void *ctx; /* the controller */
};

/**
 * Creates the runtime (not started, so the controller can keep the handle first) and watches
 * the lease. NULL with @reterr: as kube_runtime_create(), or NG_ELIMIT when the lease has no
 * room for another watcher.
 */
struct kube_runtime *scaffold_create(const struct scaffold_config *cfg, struct ng_err *reterr);

/** Unwatches @leader (may be NULL) and destroys @rt (joins its thread). NULL @rt: no-op. */
void scaffold_stop(struct kube_runtime *rt, struct leader *leader);

/** nodegate_leader: 1 while @leader (may be NULL: 0) is held; @help names whose lease. */
NG_NODISCARD ng_status scaffold_render_leader(struct ng_buf *out, const char *help,
					      const struct leader *leader);

/** One counter family with one label: @n series @label=@values[i] counting *@counters[i]. */
NG_NODISCARD ng_status scaffold_render_counters(struct ng_buf *out, const char *name,
						const char *help, const char *label,
						const char *const *values,
						_Atomic uint64_t *const *counters, size_t n);

#endif
