/* libFuzzer target for what reads PEM and base64 (STYLE.md B12 "Fuzz"): certs/'s
 * cert_not_after() (the serving certificate's expiry, from files mounted from a Secret) and
 * cert_issue() (a serving certificate from a CA certificate and key read back from a Secret),
 * common/parse.c's ng_base64_decode(), and the two places a base64 CA bundle is checked as PEM:
 * an ADB's spec.healthHook.caBundle (kube/decode.c) and a kubeconfig's
 * certificate-authority-data (kube/config.c).
 *
 * The input is the PEM (and, for ng_base64_decode(), the base64 text). Invariants, each
 * abort()ing when broken:
 * - cert_not_after() answers the same twice, and refuses with NG_EPARSE and a message;
 * - cert_issue() with the input as both CA certificate and key issues a certificate whose
 *   notAfter is the requested hour from now, or refuses with NG_EPARSE and a message;
 * - base64: decode -> encode -> decode is stable, and what decodes is at most 3/4 of the input;
 * - the input as a health hook's caBundle (base64 of it; empty: no bundle) is kept byte for
 *   byte exactly when it holds "-----BEGIN CERTIFICATE-----" before any NUL and is at most 64 KiB;
 * otherwise the hook cannot be called and says why;
 * - the input as a kubeconfig's certificate-authority-data (empty: not set) is the
 *   configuration's CA exactly when it holds no NUL and a "-----BEGIN " line; otherwise the
 *   kubeconfig is refused with NG_EPARSE naming the field. */
#include "certs/certs.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/limits.h"
#include "common/parse.h"
#include "kube/config.h"
#include "kube/one.h"
#include "tests/fuzz/roundtrip.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bound on spec.healthHook.caBundle once decoded (kube/decode.c HOOK_CA_MAX). */
#define HOOK_CA_MAX (64u * 1024u)

static bool has(const uint8_t *data, size_t size, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; n <= size && i <= size - n; i++)
		if (memcmp(data + i, needle, n) == 0)
			return true;
	return false;
}

static void check_certs(const char *pem, const uint8_t *data, size_t size)
{
	int64_t a = 0, b = 0;
	struct ng_err ea = {0}, eb = {0};
	ng_status sa = cert_not_after(pem, &a, &ea);
	ng_status sb = cert_not_after(pem, &b, &eb);
	ng_fuzz_check(sa == sb && a == b);
	if (sa != NG_OK) {
		ng_fuzz_check(sa == NG_EPARSE && ng_fuzz_message_ok(ea.msg, data, size));
		return;
	}
	static const struct cert_request req = {.service = "nodegate", .ns = "nodegate", .days = 1};
	char *cert = NULL, *key = NULL;
	struct ng_err err = {0};
	int64_t before = ng_now_wall_ms() / 1000;
	ng_status st = cert_issue(&req, pem, pem, 3600, &cert, &key, &err);
	int64_t after = ng_now_wall_ms() / 1000;
	if (st != NG_OK) {
		ng_fuzz_check(st == NG_EPARSE && !cert && !key &&
			      ng_fuzz_message_ok(err.msg, data, size));
		return;
	}
	int64_t expiry = 0;
	ng_fuzz_check(cert && key && cert_not_after(cert, &expiry, NULL) == NG_OK);
	ng_fuzz_check(expiry >= before + 3600 - 1 && expiry <= after + 3600 + 1);
	free(cert);
	cert_free_secret(key);
}

static void check_base64(const uint8_t *data, size_t size)
{
	char *raw = NULL, *again = NULL;
	size_t n = 0, n2 = 0;
	ng_status st = ng_base64_decode((const char *)data, size, &raw, &n);
	if (st != NG_OK) {
		ng_fuzz_check(st == NG_EPARSE && raw == NULL);
		return;
	}
	ng_fuzz_check(raw != NULL && n <= size / 4 * 3 && raw[n] == '\0');
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	ng_fuzz_check(ng_buf_base64(&b, raw, n) == NG_OK);
	ng_fuzz_check(b.len == (n + 2) / 3 * 4);
	ng_fuzz_check(ng_base64_decode(b.data ? b.data : "", b.len, &again, &n2) == NG_OK);
	ng_fuzz_check(n2 == n && memcmp(raw, again, n) == 0);
	free(raw);
	free(again);
	ng_buf_finish(&b);
}

static void check_hook_ca(const uint8_t *data, size_t size, const char *b64, size_t len)
{
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	ng_fuzz_check(ng_buf_puts(&b,
				  "{\"apiVersion\":\"nodegate.io/v1alpha1\",\"kind\":"
				  "\"ApplicationDisruptionBudget\",\"metadata\":{\"name\":\"a\","
				  "\"namespace\":\"n\"},\"spec\":{\"podSelector\":{},"
				  "\"maxDisruptions\":1,\"healthHook\":{\"url\":"
				  "\"https://hook.example.com/check\",\"caBundle\":\"") == NG_OK &&
		      ng_buf_append(&b, b64, len) == NG_OK && ng_buf_puts(&b, "\"}}}") == NG_OK);
	struct kube_one *one = NULL;
	struct ng_err err = {0};
	ng_fuzz_check(kube_one_parse(b.data, b.len, &one, &err) == NG_OK);
	const struct kube_hook *h = &kube_one_adb(one)->hook;
	/* The decoder looks for the header in the bundle read as a C string. */
	const uint8_t *nul = size ? memchr(data, '\0', size) : NULL;
	size_t text = nul ? (size_t)(nul - data) : size;
	if (size == 0)
		ng_fuzz_check(h->error == NG_INTERN_NONE && !h->ca);
	else if (size <= HOOK_CA_MAX && has(data, text, "-----BEGIN CERTIFICATE-----"))
		ng_fuzz_check(h->error == NG_INTERN_NONE && h->ca && h->nca == size &&
			      memcmp(h->ca, data, size) == 0);
	else
		ng_fuzz_check(
		    h->error != NG_INTERN_NONE && !h->ca &&
		    strstr(ng_intern_str(kube_one_pool(one), h->error, NULL), "caBundle") != NULL);
	kube_one_destroy(one);
	ng_buf_finish(&b);
}

static void check_kubeconfig(const uint8_t *data, size_t size, const char *b64, size_t len)
{
	struct ng_buf b;
	ng_buf_init(&b, NG_MAX_BODY_BYTES);
	ng_fuzz_check(ng_buf_puts(&b, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n"
				      "  cluster:\n    server: https://k.example.com\n"
				      "    certificate-authority-data: \"") == NG_OK &&
		      ng_buf_append(&b, b64, len) == NG_OK &&
		      ng_buf_puts(&b, "\"\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n"
				      "- name: x\n  context:\n    cluster: c\n    user: u\n"
				      "current-context: x\n") == NG_OK);
	struct kube_config c;
	struct ng_err err = {0};
	ng_status st = kube_config_parse_kubeconfig(b.data, b.len, "/nonexistent", NULL, &c, &err);
	bool pem = size > 0 && !memchr(data, '\0', size) && has(data, size, "-----BEGIN ");
	if (b.len > KUBE_CONFIG_MAX_BYTES) {
		ng_fuzz_check(st == NG_ELIMIT);
	} else if (size == 0) {
		/* An empty *-data is not set, as client-go reads it. */
		ng_fuzz_check(st == NG_OK && !c.ca_pem);
		kube_config_finish(&c);
	} else if (pem) {
		ng_fuzz_check(st == NG_OK && c.ca_pem && strlen(c.ca_pem) == size &&
			      memcmp(c.ca_pem, data, size) == 0);
		kube_config_finish(&c);
	} else {
		ng_fuzz_check(st == NG_EPARSE &&
			      strstr(err.msg, "certificate-authority-data") != NULL);
	}
	ng_buf_finish(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *pem = malloc(size + 1);
	ng_fuzz_check(pem != NULL);
	if (size)
		memcpy(pem, data, size);
	pem[size] = '\0';
	check_certs(pem, data, size);
	free(pem);

	check_base64(data, size);

	struct ng_buf b64;
	ng_buf_init(&b64, NG_MAX_BODY_BYTES);
	ng_fuzz_check(ng_buf_base64(&b64, data, size) == NG_OK);
	check_hook_ca(data, size, b64.data ? b64.data : "", b64.len);
	check_kubeconfig(data, size, b64.data ? b64.data : "", b64.len);
	ng_buf_finish(&b64);
	return 0;
}
