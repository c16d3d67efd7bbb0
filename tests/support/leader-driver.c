/* leader-driver: runs one leader-election candidate (controller/leader.h) for the e2e test
 * tests/e2e/test_leader.py.
 *
 *   leader-driver --kubeconfig FILE --identity ID [--namespace NS] [--name NAME]
 *                 [--duration-ms N] [--renew-ms N] [--retry-ms N]
 *
 * Prints one JSON line on stdout at start, whenever leadership changes (sampled every
 * POLL_MS, with the CLOCK_MONOTONIC time of the sample, comparable across processes and with
 * Python's time.monotonic()), and at exit. SIGTERM or SIGINT stops the candidate, which releases
 * the lease if it leads, and exits 0. The module's own log goes to stderr. */
#include "common/buf.h"
#include "common/clock.h"
#include "common/parse.h"
#include "controller/leader.h"
#include "kube/config.h"

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* How often leadership is sampled: short against the test's timings (hundreds of ms). */
#define POLL_MS 2

static void emit(const char *event, const char *identity, bool leading, uint64_t term)
{
	struct ng_buf b;
	ng_buf_init(&b, 4096);
	if (ng_buf_printf(&b, "{\"event\":\"%s\",\"identity\":", event) != NG_OK ||
	    ng_buf_json_str(&b, identity, strlen(identity)) != NG_OK ||
	    ng_buf_printf(&b, ",\"leader\":%s,\"term\":%llu,\"mono_us\":%lld}\n",
			  leading ? "true" : "false", (unsigned long long)term,
			  (long long)ng_now_mono_us()) != NG_OK) {
		ng_buf_finish(&b);
		return;
	}
	(void)fwrite(b.data, 1, b.len, stdout);
	(void)fflush(stdout);
	ng_buf_finish(&b);
}

static int usage(void)
{
	(void)fputs(
	    "usage: leader-driver --kubeconfig FILE --identity ID [--namespace NS] [--name NAME]\n"
	    "                     [--duration-ms N] [--renew-ms N] [--retry-ms N]\n",
	    stderr);
	return 2;
}

static bool parse_ms(const char *s, int64_t *ret)
{
	return ng_parse_i64(s, strlen(s), 1, 3600 * 1000, ret) == NG_OK;
}

int main(int argc, char **argv)
{
	const char *kubeconfig = NULL;
	struct leader_config lc = {.ns = "nodegate", .name = "nodegate-gate"};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return usage();
		i++;
		if (strcmp(a, "--kubeconfig") == 0)
			kubeconfig = v;
		else if (strcmp(a, "--identity") == 0)
			lc.identity = v;
		else if (strcmp(a, "--namespace") == 0)
			lc.ns = v;
		else if (strcmp(a, "--name") == 0)
			lc.name = v;
		else if (strcmp(a, "--duration-ms") == 0 && parse_ms(v, &lc.lease_duration_ms))
			/* NOLINTNEXTLINE(bugprone-branch-clone): one field per flag */
			continue;
		else if (strcmp(a, "--renew-ms") == 0 && parse_ms(v, &lc.renew_deadline_ms))
			continue;
		else if (strcmp(a, "--retry-ms") == 0 && parse_ms(v, &lc.retry_period_ms))
			continue;
		else
			return usage();
	}
	if (!kubeconfig || !lc.identity)
		return usage();

	/* Blocked before any thread starts, so SIGTERM only ever reaches sigtimedwait below. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		(void)fputs("leader-driver: curl_global_init failed\n", stderr);
		return 1;
	}
	struct kube_config kc = {0};
	struct ng_err err = {0};
	int rc = 1;
	if (kube_config_load_kubeconfig(kubeconfig, NULL, &kc, &err) != NG_OK) {
		(void)fprintf(stderr, "leader-driver: %s\n", err.msg);
		goto out;
	}
	lc.kube = &kc;
	struct leader *l = leader_start(&lc, &err);
	if (!l) {
		(void)fprintf(stderr, "leader-driver: %s: %s\n", ng_status_str(err.status),
			      err.msg);
		goto out;
	}
	emit("start", lc.identity, false, 0);

	bool leading = false;
	uint64_t term = 0;
	const struct timespec poll = {.tv_sec = 0, .tv_nsec = POLL_MS * 1000000L};
	for (;;) {
		int sig = sigtimedwait(&sigs, NULL, &poll);
		if (sig == SIGTERM || sig == SIGINT)
			break;
		uint64_t t = leader_term(l);
		bool now = leader_is_leader(l);
		if (t != term && leading) /* lost and regained between two samples */
			emit("leader", lc.identity, false, term);
		if (now != leading || t != term)
			emit("leader", lc.identity, now, t);
		leading = now;
		term = t;
	}
	emit("stopping", lc.identity, leading, term);
	leader_stop(l);
	emit("stopped", lc.identity, false, term);
	rc = 0;
out:
	kube_config_finish(&kc);
	curl_global_cleanup();
	return rc;
}
