/* The live cluster as the CLI sees it: a list+watch into a store of the subcommand's own. */
#include "cmd/live.h"

#include "cmd/cmd.h"
#include "common/buf.h"
#include "common/clock.h"
#include "kube/config.h"
#include "kube/kube.h"
#include "kube/watch.h"

#include <stdlib.h>
#include <unistd.h>
#include <time.h>

struct cmd_live {
	struct kube_config cfg;
	struct kube_store *store;
	struct kube_watch *watch;
};

void cmd_live_stop(struct cmd_live *l)
{
	if (!l)
		return;
	kube_watch_stop(l->watch);
	kube_store_destroy(l->store);
	kube_config_finish(&l->cfg);
	free(l);
}

/* Waits until @w has listed every kind once, at most CMD_LIVE_SYNC_TIMEOUT_MS. */
static ng_status wait_synced(struct kube_watch *w, struct ng_err *err)
{
	int64_t until_us = ng_now_mono_us() + (int64_t)CMD_LIVE_SYNC_TIMEOUT_MS * 1000;
	while (!kube_watch_synced(w)) {
		if (ng_now_mono_us() > until_us)
			return ng_err_set(err, NG_ETIMEDOUT, 0,
					  "the cluster was not listed within %d s",
					  CMD_LIVE_SYNC_TIMEOUT_MS / 1000);
		struct timespec ts = {0, 20 * 1000 * 1000};
		(void)nanosleep(&ts, NULL);
	}
	return NG_OK;
}

/* The kubeconfig the CLI reads, as kubectl picks it: --kubeconfig, else $KUBECONFIG (NULL
 * here: kube_config_resolve() reads it), else ~/.kube/config when it exists, else none (the
 * pod's service account). @buf (@cap bytes) holds the path built. */
static const char *cli_kubeconfig(const struct cmd_cluster *cl, char *buf, size_t cap)
{
	if (cl->kubeconfig)
		return cl->kubeconfig;
	/* NOLINTNEXTLINE(concurrency-mt-unsafe): the CLI never sets its environment */
	const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
	if ((env && env[0]) || !home || !home[0])
		return NULL;
	ng_fmt(buf, cap, "%s/.kube/config", home);
	return access(buf, R_OK) == 0 ? buf : NULL;
}

ng_status cmd_live_start(const struct cmd_cluster *cl, struct cmd_live **ret, struct ng_err *err)
{
	/* The watch's progress lines are not the subcommand's business; its problems are. */
	if (cmd_set_log_level("warn") != 0)
		return ng_err_set(err, NG_EINVAL, 0, "cannot set the log level");
	struct cmd_live *l = calloc(1, sizeof(*l));
	if (!l)
		return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	char home[4096];
	ng_status st = kube_config_resolve(cli_kubeconfig(cl, home, sizeof(home)), cl->context,
					   false, &l->cfg, err);
	if (st != NG_OK) {
		free(l);
		return st;
	}
	l->store = kube_store_create();
	struct kube_watch_config wc = {.cfg = &l->cfg, .store = l->store, .batch_ms = 100};
	l->watch = l->store ? kube_watch_start(&wc, err) : NULL;
	st = l->watch ? NG_OK : l->store ? NG_EIO : ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	if (st == NG_OK)
		st = wait_synced(l->watch, err);
	if (st != NG_OK) {
		cmd_live_stop(l);
		return st;
	}
	*ret = l;
	return NG_OK;
}

struct kube_store *cmd_live_store(struct cmd_live *l)
{
	return l->store;
}

ng_status cmd_live_load(const struct cmd_cluster *cl, struct kube_snapshot **ret,
			struct ng_err *err)
{
	struct cmd_live *l = NULL;
	ng_status st = cmd_live_start(cl, &l, err);
	if (st == NG_OK)
		*ret = kube_store_acquire(l->store);
	cmd_live_stop(l);
	return st;
}
