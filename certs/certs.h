/* Certificates for the webhook's Service (DESIGN.md §8): an ECDSA P-256 CA and a serving
 * certificate it signs, for the names the API server calls (<svc>, <svc>.<ns>, <svc>.<ns>.svc,
 * <svc>.<ns>.svc.cluster.local) and any extra DNS names and IP addresses (a webhook registered
 * by URL, https://10.0.0.5:8443/...). OpenSSL; PEM in and out. Any thread. */
#ifndef NG_CERTS_CERTS_H
#define NG_CERTS_CERTS_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

/* Longest validity nodegate certs writes: ten years. Longer-lived certificates are a liability
 * (a leaked key stays good), and Go's crypto/x509 in the API server has no use for more. */
#define CERT_MAX_DAYS 3650

struct cert_request {
	const char *service;          /* Service name, a DNS label */
	const char *ns;               /* its namespace, a DNS label */
	const char *const *extra_dns; /* more DNS names for the serving certificate; one that
				       * parses as an IPv4 or IPv6 address becomes an IP SAN,
				       * since TLS clients match an IP only against IP SANs */
	size_t nextra;
	const char *const *extra_ip; /* IPv4 or IPv6 addresses for the serving certificate */
	size_t nextra_ip;
	int days; /* validity of both, from now (1..CERT_MAX_DAYS) */
};

/* PEM, malloc'ed; the keys are wiped by cert_pair_finish(). */
struct cert_pair {
	char *ca_pem, *ca_key_pem;
	char *cert_pem, *key_pem;
};

/**
 * Creates a CA and a serving certificate signed by it. NG_EINVAL with @reterr for a name that is
 * not a DNS label, an extra DNS name with a space, comma or colon (that is not an IP address),
 * an extra_ip that is not an IPv4 or IPv6 address, or days out of range; NG_EIO when OpenSSL
 * fails. @ret is zeroed on failure.
 */
NG_NODISCARD ng_status cert_generate(const struct cert_request *r, struct cert_pair *ret,
				     struct ng_err *reterr);

/**
 * A new serving certificate and key for @r's names (@r->days unused), signed by the CA
 * @ca_pem / @ca_key_pem, valid @seconds from now (from five minutes ago, for clock skew): PEM
 * into *@ret_cert and *@ret_key (malloc'ed; the key is the caller's to wipe). NG_EPARSE when the
 * CA does not load or the key is not its key, NG_EINVAL for a bad name or validity, NG_EIO when
 * OpenSSL fails.
 */
NG_NODISCARD ng_status cert_issue(const struct cert_request *r, const char *ca_pem,
				  const char *ca_key_pem, int64_t seconds, char **ret_cert,
				  char **ret_key, struct ng_err *reterr);

/** Wipes and frees a private key's PEM (NULL ok). */
void cert_free_secret(char *pem);

/** Frees @p, wiping the private keys. Accepts a zeroed pair. */
void cert_pair_finish(struct cert_pair *p);

/** notAfter of the first certificate in @pem, in Unix seconds. NG_EPARSE when none parses. */
NG_NODISCARD ng_status cert_not_after(const char *pem, int64_t *ret_unix_s, struct ng_err *reterr);

#endif
