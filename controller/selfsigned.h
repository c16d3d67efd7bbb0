/* serve --self-signed (docs/certificates.md): certificates that look after themselves.
 *
 * One CA for every replica, kept in a Secret (the first replica to start creates it; the others
 * read it), so the API server needs one caBundle whichever replica it reaches. Each replica
 * issues its own serving certificate from that CA at start and again when two thirds of its
 * validity have passed, handing it to the server through @install (served from the next
 * handshake). The CA is patched into the caBundle of every webhook of the webhook configurations
 * carrying the configured label, at start and every minute after (a re-applied manifest resets
 * it).
 *
 * Ownership: selfsigned_start() returns the renewer, freed by selfsigned_stop(); the config's
 * strings and kube config are borrowed and must outlive it. Threads: start and stop from the
 * owner; @install runs on the renewer's thread. */
#ifndef NG_CONTROLLER_SELFSIGNED_H
#define NG_CONTROLLER_SELFSIGNED_H

#include "common/status.h"

#include <stdint.h>

struct kube_client;
struct kube_config;

struct selfsigned_config {
	const struct kube_config *kube;
	const char *secret_ns, *secret_name;   /* the CA's Secret */
	const char *service_ns, *service_name; /* the names in the serving certificate */
	int64_t cert_seconds;                  /* a serving certificate's validity */
	const char *selector; /* label selector of the webhook configurations to patch */
	/* A new serving pair (PEM; borrowed for the call) and its notAfter in Unix seconds. */
	void (*install)(void *ctx, const char *cert_pem, const char *key_pem, int64_t not_after);
	void *ctx;
};

/* The pair to start serving with and the CA it is from (malloc'ed PEM; free the key with
 * cert_free_secret()). */
struct selfsigned_first {
	char *cert_pem, *key_pem, *ca_pem;
	int64_t not_after;
};

/**
 * The CA from its Secret (created when absent) and a first serving certificate, on the calling
 * thread through @c, trying for up to @wait_s seconds while the API server does not answer.
 * NG_EKUBE/NG_EIO/NG_ETIMEDOUT with @reterr when it never did, NG_EPARSE when the Secret holds no
 * usable CA (its message says which key).
 */
NG_NODISCARD ng_status selfsigned_bootstrap(const struct selfsigned_config *cfg,
					    struct kube_client *c, int64_t wait_s,
					    struct selfsigned_first *ret, struct ng_err *reterr);

struct selfsigned;

/**
 * Starts the renewer on its own runtime thread: renewals, the caBundle patches, from the pair
 * bootstrap returned (@first, read only). NULL with @reterr on failure.
 */
struct selfsigned *selfsigned_start(const struct selfsigned_config *cfg,
				    const struct selfsigned_first *first, struct ng_err *reterr);

/** Stops and frees @s (NULL ok). */
void selfsigned_stop(struct selfsigned *s);

#endif
