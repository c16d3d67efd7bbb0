/* libFuzzer target for a credential plugin's answer (STYLE.md B12 "Fuzz"): every input goes
 * through kube_exec_cred_parse() as a client.authentication.k8s.io/v1 and a v1beta1 answer. A
 * failure must leave the output untouched and say something; a success must hold a token of
 * header-safe bytes or a PEM certificate with its key. Any broken invariant calls abort() so
 * libFuzzer keeps the input. */
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

static void run(const uint8_t *data, size_t size, const char *api_version)
{
	struct kube_exec_answer a, before;
	memset(&a, 0xad, sizeof(a));
	memcpy(&before, &a, sizeof(a));
	struct ng_err err = {0};
	ng_status st = kube_exec_cred_parse((const char *)data, size, api_version, &a, &err);
	if (st != NG_OK) {
		/* NOLINTNEXTLINE(bugprone-suspicious-memory-comparison): bytes: untouched */
		check(memcmp(&a, &before, sizeof(a)) == 0);
		check(err.status == st && err.msg[0] != '\0');
		return;
	}
	check(a.token || a.cert_pem);
	check(!a.cert_pem == !a.key_pem);
	for (const char *p = a.token; p && *p; p++)
		check((unsigned char)*p >= 0x21 && (unsigned char)*p <= 0x7e);
	if (a.cert_pem)
		check(strstr(a.cert_pem, "-----BEGIN ") && strstr(a.key_pem, "-----BEGIN "));
	kube_exec_answer_finish(&a);
	for (size_t i = 0; i < sizeof(a); i++)
		check(((const unsigned char *)&a)[i] == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run(data, size, "client.authentication.k8s.io/v1");
	run(data, size, "client.authentication.k8s.io/v1beta1");
	return 0;
}
