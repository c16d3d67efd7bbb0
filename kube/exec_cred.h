/* kubeconfig exec credential plugins (users[].user.exec), run as kubectl runs them: the
 * client.authentication.k8s.io v1 or v1beta1 ExecCredential protocol (docs/kubernetes-client.md,
 * "Credential plugins").
 *
 * A struct kube_exec_cred holds one user's plugin (command, args, env, ...) and the credential
 * it last answered. kube/config.c creates it while reading the kubeconfig; every kube_client
 * made from that configuration holds a reference, so the clients of all threads share one
 * cache and one plugin run.
 *
 * Ownership: kube_exec_cred_create() takes the spec's strings; references are counted
 * (kube_exec_cred_ref/unref). Answers handed out are malloc'd copies the caller finishes.
 * Threads: every function may be called from any thread. At most one plugin runs at a time per
 * kube_exec_cred; other callers wait for its answer (a mutex guards the cache, never held while
 * the plugin runs). The plugin is started with posix_spawn (no shell), stdin /dev/null, a new
 * session (no terminal), every other descriptor closed; it is reaped before the call returns.
 * Errors: NG_ENOTFOUND (the command does not exist: the message carries installHint),
 * NG_ETIMEDOUT (it ran longer than the timeout: killed), NG_ELIMIT (stdout over
 * KUBE_EXEC_MAX_STDOUT_BYTES: killed), NG_EIO (it could not start, or exited non-zero: the
 * message quotes the end of its stderr), NG_EPARSE (the answer is not an ExecCredential),
 * NG_ENOMEM. Every message names the plugin's command. */
#ifndef NG_KUBE_EXEC_CRED_H
#define NG_KUBE_EXEC_CRED_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How long a plugin may run. Cloud plugins answer from a cache in milliseconds and fetch a new
 * token in a second or two; 30 s tolerates a slow identity provider and bounds a hung one. */
#define KUBE_EXEC_TIMEOUT_MS 30000

/* Largest answer read from a plugin's stdout. An ExecCredential with a certificate chain and a
 * key is a few KiB; 1 MiB bounds a plugin that prints the wrong thing. */
#define KUBE_EXEC_MAX_STDOUT_BYTES (1024u * 1024u)

/* How much of the end of a plugin's stderr is kept to quote in an error. */
#define KUBE_EXEC_STDERR_TAIL_BYTES 1024u

/* Bounds on the exec block: argument and env counts. */
#define KUBE_EXEC_MAX_ARGS 256
#define KUBE_EXEC_MAX_ENV 256

/* Largest KUBERNETES_EXEC_INFO: room for a 1 MiB CA bundle in base64 (provideClusterInfo) and
 * an exec extension. The kernel's own limit on one environment string (128 KiB on Linux) is
 * usually met first: then the plugin cannot start, and the error says so. */
#define KUBE_EXEC_MAX_INFO_BYTES (4u * 1024u * 1024u)

/* A credential is used until this long before its expirationTimestamp (at most half of the
 * lifetime it had when it arrived), so a request does not leave with a token about to expire. */
#define KUBE_EXEC_EXPIRY_MARGIN_MS 10000

/* The plugin, as the kubeconfig describes it. Every string is malloc'd; args and env are
 * malloc'd arrays of them (env entries are "NAME=value"). */
struct kube_exec_spec {
	char *command; /* as written; a relative path with a slash is already made absolute */
	char **args;   /* nargs entries */
	size_t nargs;
	char **env; /* nenv entries "NAME=value", added to nodegate's environment */
	size_t nenv;
	char *api_version;  /* client.authentication.k8s.io/v1 or .../v1beta1 */
	char *install_hint; /* NULL when none */
	char *cluster_json; /* spec.cluster as a JSON object when provideClusterInfo, else NULL */
	char *user;         /* the kubeconfig user's name, for messages */
};

/* What a plugin answered. Strings are malloc'd (NULL when absent); token or cert+key is set. */
struct kube_exec_answer {
	char *token;
	char *cert_pem;
	char *key_pem;
	int64_t expires_wall_ms; /* 0: no expirationTimestamp, kept until a 401 */
};

struct kube_exec_cred;

/** Frees the strings of @s and zeroes it. Accepts NULL and zeroed. */
void kube_exec_spec_finish(struct kube_exec_spec *s);

/** Frees the strings of @a (token and key wiped) and zeroes it. Accepts NULL and zeroed. */
void kube_exec_answer_finish(struct kube_exec_answer *a);

/**
 * A plugin for @spec, whose contents it takes (zeroed in @spec, on failure too). One reference;
 * NULL on OOM.
 */
struct kube_exec_cred *kube_exec_cred_create(struct kube_exec_spec *spec);

/** Another reference to @e (returned). Accepts NULL. */
struct kube_exec_cred *kube_exec_cred_ref(struct kube_exec_cred *e);

/** Drops a reference; the last one frees @e and its cached credential (wiped). Accepts NULL. */
void kube_exec_cred_unref(struct kube_exec_cred *e);

/** The command, as the kubeconfig names it, for messages. Borrowed from @e. */
const char *kube_exec_cred_command(const struct kube_exec_cred *e);

/** Test hook: how long a plugin may run (default KUBE_EXEC_TIMEOUT_MS). */
void kube_exec_cred_set_timeout_ms(struct kube_exec_cred *e, int64_t ms);

/** How many times the plugin has been started (tests, logs). */
uint64_t kube_exec_cred_runs(struct kube_exec_cred *e);

/**
 * The current credential: the cached one while it is fresh, else the plugin's next answer
 * (running it, or waiting for the run another thread started). On success fills @ret with
 * copies and *@ret_gen (optional) with the credential's generation, for
 * kube_exec_cred_invalidate(). On failure @ret is untouched.
 */
NG_NODISCARD ng_status kube_exec_cred_get(struct kube_exec_cred *e, struct kube_exec_answer *ret,
					  uint64_t *ret_gen, struct ng_err *reterr);

/**
 * Forgets the credential of generation @gen (the API server answered 401 to it), so the next
 * kube_exec_cred_get() runs the plugin again. A newer credential is kept: several requests
 * failing with the same old token cause one run, not one each.
 */
void kube_exec_cred_invalidate(struct kube_exec_cred *e, uint64_t gen);

/**
 * Parses a plugin's stdout (@buf, @len bytes) as an ExecCredential of @api_version: kind
 * ExecCredential, the same apiVersion, status.token (bytes allowed in an HTTP header) and/or
 * status.clientCertificateData with status.clientKeyData (PEM, both or neither), optional
 * status.expirationTimestamp (RFC 3339). NG_EPARSE naming the field otherwise; NG_ELIMIT over
 * KUBE_EXEC_MAX_STDOUT_BYTES. On success fills @ret (caller finishes it); on failure @ret is
 * untouched. Any thread; the fuzz target exec_credential's entry point.
 */
NG_NODISCARD ng_status kube_exec_cred_parse(const char *buf, size_t len, const char *api_version,
					    struct kube_exec_answer *ret, struct ng_err *reterr);

#endif
