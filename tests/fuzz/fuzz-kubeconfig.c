/* libFuzzer target for the kubeconfig parser (STYLE.md B12 "Fuzz").
 *
 * Every input goes through kube_config_parse_kubeconfig() twice: with the file's
 * current-context and with an explicit context "x". Relative file paths resolve under
 * "/nonexistent", so file fields fail cleanly. A failure must leave the output untouched
 * (STYLE.md B6) and say something; a success must name an http(s) server, a namespace and a
 * source, and keep the pairings the parser promises (an exec user has no other credential and
 * its plugin is not run). Any broken invariant calls abort() so libFuzzer keeps the input. */
#include "kube/config.h"
#include "kube/exec_cred.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

static void run(const uint8_t *data, size_t size, const char *context)
{
	struct kube_config c, before;
	memset(&c, 0xad, sizeof(c));
	memcpy(&before, &c, sizeof(c));
	struct ng_err err = {0};
	ng_status st = kube_config_parse_kubeconfig((const char *)data, size, "/nonexistent",
						    context, &c, &err);
	if (st != NG_OK) {
		/* NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): bytes: untouched */
		check(memcmp(&c, &before, sizeof(c)) == 0);
		check(err.status == st && err.msg[0] != '\0');
		return;
	}
	check(c.server != NULL);
	check(strncmp(c.server, "https://", 8) == 0 || strncmp(c.server, "http://", 7) == 0);
	check(c.server[strlen(c.server) - 1] != '/');
	check(c.ns != NULL && c.ns[0] != '\0');
	check(c.source != NULL);
	check(!c.client_cert_pem == !c.client_key_pem);
	check(!(c.ca_pem && c.insecure_skip_tls_verify));
	/* A credential plugin's answer is the only credential; it is never run by parsing. */
	if (c.exec)
		check(!c.token && !c.token_file && !c.client_cert_pem &&
		      kube_exec_cred_runs(c.exec) == 0);
	if (c.ca_pem)
		check(strstr(c.ca_pem, "-----BEGIN ") != NULL);
	kube_config_finish(&c);
	for (size_t i = 0; i < sizeof(c); i++)
		check(((const unsigned char *)&c)[i] == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run(data, size, NULL);
	run(data, size, "x");
	return 0;
}
