/* certs: the CA and serving certificate of `nodegate certs` (DESIGN.md §8), read back and
 * verified with OpenSSL as a TLS client would. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "certs/certs.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static X509 *read_cert(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	assert_non_null(x);
	return x;
}

static void test_ca_signs_a_serving_certificate_for_the_service_names(void **state)
{
	static const char *const extra[] = {"webhook.example.com"};
	struct cert_request r = {
	    .service = "nodegate", .ns = "infra", .extra_dns = extra, .nextra = 1, .days = 30};
	struct cert_pair p;
	assert_int_equal(cert_generate(&r, &p, NULL), NG_OK);
	X509 *ca = read_cert(p.ca_pem), *leaf = read_cert(p.cert_pem);
	/* The chain verifies for each name the API server may call, and the CA is a CA. */
	X509_STORE *store = X509_STORE_new();
	assert_int_equal(X509_STORE_add_cert(store, ca), 1);
	static const char *const names[] = {"nodegate", "nodegate.infra", "nodegate.infra.svc",
					    "nodegate.infra.svc.cluster.local",
					    "webhook.example.com"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		X509_STORE_CTX *ctx = X509_STORE_CTX_new();
		assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
		X509_VERIFY_PARAM *vp = X509_STORE_CTX_get0_param(ctx);
		assert_int_equal(X509_VERIFY_PARAM_set1_host(vp, names[i], 0), 1);
		X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
		if (X509_verify_cert(ctx) != 1)
			fail_msg("%s: %s", names[i],
				 X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
		X509_STORE_CTX_free(ctx);
	}
	/* Another name does not verify. */
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	assert_int_equal(
	    X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx), "evil.example.com", 0), 1);
	assert_int_not_equal(X509_verify_cert(ctx), 1);
	X509_STORE_CTX_free(ctx);
	assert_int_equal(X509_check_ca(leaf), 0);
	assert_int_not_equal(X509_check_ca(ca), 0);
	/* ECDSA P-256 keys, and the key file matches the certificate. */
	BIO *b = BIO_new_mem_buf(p.key_pem, -1);
	EVP_PKEY *key = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	assert_non_null(key);
	assert_true(EVP_PKEY_is_a(key, "EC"));
	char group[32];
	assert_int_equal(EVP_PKEY_get_group_name(key, group, sizeof(group), NULL), 1);
	assert_string_equal(group, "prime256v1");
	assert_int_equal(X509_check_private_key(leaf, key), 1);
	/* Valid for 30 days from now. */
	int64_t not_after;
	assert_int_equal(cert_not_after(p.cert_pem, &not_after, NULL), NG_OK);
	int64_t want = (int64_t)time(NULL) + 30 * 86400;
	assert_true(not_after > want - 120 && not_after <= want + 5);
	EVP_PKEY_free(key);
	X509_STORE_free(store);
	X509_free(ca);
	X509_free(leaf);
	cert_pair_finish(&p);
	assert_null(p.key_pem);
}

/* Verifies @leaf against @ca for the IP address @ip (text), as a TLS client that connected to
 * that address does. */
static int verify_ip(X509 *ca, X509 *leaf, const char *ip)
{
	X509_STORE *store = X509_STORE_new();
	assert_int_equal(X509_STORE_add_cert(store, ca), 1);
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	X509_VERIFY_PARAM *vp = X509_STORE_CTX_get0_param(ctx);
	assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(vp, ip), 1);
	X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
	int ok = X509_verify_cert(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok;
}

/* Each SAN of @x as "DNS:name" or "IP:addr", comma-separated, in order. */
static void san_list(X509 *x, char *out, size_t cap)
{
	GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	assert_non_null(names);
	out[0] = '\0';
	for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		char one[128];
		if (g->type == GEN_DNS) {
			(void)snprintf(one, sizeof(one), "DNS:%s",
				       (const char *)ASN1_STRING_get0_data(g->d.dNSName));
		} else {
			assert_int_equal(g->type, GEN_IPADD);
			int n = ASN1_STRING_length(g->d.iPAddress);
			char ip[INET6_ADDRSTRLEN];
			assert_true(n == 4 || n == 16);
			assert_non_null(inet_ntop(n == 4 ? AF_INET : AF_INET6,
						  ASN1_STRING_get0_data(g->d.iPAddress), ip,
						  sizeof(ip)));
			(void)snprintf(one, sizeof(one), "IP:%s", ip);
		}
		(void)snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "," : "", one);
	}
	GENERAL_NAMES_free(names);
}

static void test_ip_addresses_become_ip_sans(void **state)
{
	/* --dns 127.0.0.1 and --dns 2001:db8::5 are IP addresses: a DNS SAN holding one would never
	 * verify, since TLS clients match an IP only against IP SANs. */
	static const char *const dns[] = {"127.0.0.1", "webhook.example.com", "2001:db8::5",
					  "10.0.0.1.nip.io"};
	static const char *const ips[] = {"::1", "192.168.7.9"};
	struct cert_request r = {.service = "nodegate",
				 .ns = "infra",
				 .extra_dns = dns,
				 .nextra = 4,
				 .extra_ip = ips,
				 .nextra_ip = 2,
				 .days = 1};
	struct cert_pair p;
	assert_int_equal(cert_generate(&r, &p, NULL), NG_OK);
	X509 *ca = read_cert(p.ca_pem), *leaf = read_cert(p.cert_pem);
	char sans[1024];
	san_list(leaf, sans, sizeof(sans));
	assert_string_equal(sans, "DNS:nodegate,DNS:nodegate.infra,DNS:nodegate.infra.svc,"
				  "DNS:nodegate.infra.svc.cluster.local,IP:127.0.0.1,"
				  "DNS:webhook.example.com,IP:2001:db8::5,"
				  "DNS:10.0.0.1.nip.io,IP:::1,IP:192.168.7.9");
	static const char *const good[] = {"127.0.0.1", "::1", "2001:db8::5", "192.168.7.9"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (verify_ip(ca, leaf, good[i]) != 1)
			fail_msg("%s does not verify", good[i]);
	static const char *const bad[] = {"127.0.0.2", "10.0.0.1", "::2"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (verify_ip(ca, leaf, bad[i]) == 1)
			fail_msg("%s verifies", bad[i]);
	X509_free(ca);
	X509_free(leaf);
	cert_pair_finish(&p);
	/* --ip takes addresses only. */
	static const char *const notip[] = {"localhost", "127.0.0.1/8", "fe80::1%eth0", ""};
	for (size_t i = 0; i < sizeof(notip) / sizeof(notip[0]); i++) {
		struct ng_err err = {0};
		r = (struct cert_request){.service = "nodegate",
					  .ns = "infra",
					  .extra_ip = &notip[i],
					  .nextra_ip = 1,
					  .days = 1};
		assert_int_equal(cert_generate(&r, &p, &err), NG_EINVAL);
		assert_non_null(strstr(err.msg, "is not an IPv4 or IPv6 address"));
		assert_null(p.cert_pem);
	}
}

/* A later serving certificate from the same CA (what serve --self-signed renews with): it
 * verifies against the CA, lives the seconds asked, and a key that is not the CA's is refused. */
static void test_issue_from_an_existing_ca(void **state)
{
	(void)state;
	struct cert_request r = {.service = "nodegate", .ns = "nodegate", .days = 1};
	struct cert_pair p, other;
	assert_int_equal(cert_generate(&r, &p, NULL), NG_OK);
	assert_int_equal(cert_generate(&r, &other, NULL), NG_OK);
	char *cert = NULL, *key = NULL;
	assert_int_equal(cert_issue(&r, p.ca_pem, p.ca_key_pem, 600, &cert, &key, NULL), NG_OK);
	X509 *ca = read_cert(p.ca_pem), *leaf = read_cert(cert);
	X509_STORE *store = X509_STORE_new();
	assert_int_equal(X509_STORE_add_cert(store, ca), 1);
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	assert_int_equal(
	    X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx), "nodegate.nodegate.svc", 0),
	    1);
	assert_int_equal(X509_verify_cert(ctx), 1);
	X509_STORE_CTX_free(ctx);
	int64_t not_after = 0;
	assert_int_equal(cert_not_after(cert, &not_after, NULL), NG_OK);
	int64_t left = not_after - (int64_t)time(NULL);
	assert_true(left > 590 && left <= 600);
	cert_free_secret(key);
	free(cert);
	/* Another CA's key: refused, nothing returned. */
	struct ng_err err = {0};
	assert_int_equal(cert_issue(&r, p.ca_pem, other.ca_key_pem, 600, &cert, &key, &err),
			 NG_EPARSE);
	assert_null(cert);
	assert_null(key);
	assert_non_null(strstr(err.msg, "do not load together"));
	X509_free(leaf);
	X509_free(ca);
	X509_STORE_free(store);
	cert_pair_finish(&p);
	cert_pair_finish(&other);
}

/* PEM of @x or of @k (malloc'ed). */
static char *pem_of(X509 *x, EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	assert_non_null(b);
	assert_int_equal(x ? PEM_write_bio_X509(b, x)
			   : PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL),
			 1);
	char *data;
	long n = BIO_get_mem_data(b, &data);
	char *s = malloc((size_t)n + 1);
	assert_non_null(s);
	memcpy(s, data, (size_t)n);
	s[n] = '\0';
	BIO_free(b);
	return s;
}

/* A CA without a subject key identifier (some tools write none) issues too: the serving
 * certificate names its authority by the CA's issuer and serial instead, and verifies. Our own
 * CA's certificates keep naming it by key identifier alone. */
static void test_issue_from_a_ca_without_key_identifier(void **state)
{
	(void)state;
	EVP_PKEY *ca_key = EVP_EC_gen("P-256");
	X509 *ca = X509_new();
	assert_non_null(ca_key);
	assert_non_null(ca);
	assert_int_equal(X509_set_version(ca, 2), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(ca), 4242), 1);
	X509_NAME *name = X509_get_subject_name(ca);
	assert_int_equal(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
						    (const unsigned char *)"bring-your-own CA", -1,
						    -1, 0),
			 1);
	assert_int_equal(X509_set_issuer_name(ca, name), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(ca), -60));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(ca), 86400));
	assert_int_equal(X509_set_pubkey(ca, ca_key), 1);
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, ca, ca, NULL, NULL, 0);
	X509_EXTENSION *bc =
	    X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
	assert_non_null(bc);
	assert_int_equal(X509_add_ext(ca, bc, -1), 1);
	X509_EXTENSION_free(bc);
	assert_true(X509_sign(ca, ca_key, EVP_sha256()) > 0);
	assert_null(X509_get_ext_d2i(ca, NID_subject_key_identifier, NULL, NULL));
	char *ca_pem = pem_of(ca, NULL), *ca_key_pem = pem_of(NULL, ca_key);

	struct cert_request r = {.service = "nodegate", .ns = "nodegate", .days = 1};
	char *cert = NULL, *key = NULL;
	struct ng_err err = {0};
	assert_int_equal(cert_issue(&r, ca_pem, ca_key_pem, 600, &cert, &key, &err), NG_OK);
	X509 *leaf = read_cert(cert);
	AUTHORITY_KEYID *akid = X509_get_ext_d2i(leaf, NID_authority_key_identifier, NULL, NULL);
	assert_non_null(akid);
	assert_null(akid->keyid);
	assert_int_equal(ASN1_INTEGER_get(akid->serial), 4242);
	AUTHORITY_KEYID_free(akid);
	X509_STORE *store = X509_STORE_new();
	assert_int_equal(X509_STORE_add_cert(store, ca), 1);
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	assert_int_equal(
	    X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx), "nodegate.nodegate.svc", 0),
	    1);
	if (X509_verify_cert(ctx) != 1)
		fail_msg("%s", X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	X509_free(leaf);
	free(cert);
	cert_free_secret(key);

	struct cert_pair p;
	assert_int_equal(cert_generate(&r, &p, NULL), NG_OK);
	leaf = read_cert(p.cert_pem);
	akid = X509_get_ext_d2i(leaf, NID_authority_key_identifier, NULL, NULL);
	assert_non_null(akid);
	assert_non_null(akid->keyid);
	assert_null(akid->issuer);
	assert_null(akid->serial);
	AUTHORITY_KEYID_free(akid);
	X509_free(leaf);
	cert_pair_finish(&p);
	free(ca_pem);
	cert_free_secret(ca_key_pem);
	X509_free(ca);
	EVP_PKEY_free(ca_key);
}

static void test_bad_requests_are_refused_with_why(void **state)
{
	struct cert_pair p;
	struct ng_err err = {0};
	static const char *const comma[] = {"a.example.com,DNS:evil"};
	const struct cert_request bad[] = {
	    {.service = "Bad_Name", .ns = "x", .days = 1},
	    {.service = "nodegate", .ns = "", .days = 1},
	    {.service = "nodegate", .ns = "x", .days = 0},
	    {.service = "nodegate", .ns = "x", .days = 3651},
	    {.service = "nodegate", .ns = "x", .days = 1, .extra_dns = comma, .nextra = 1},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(cert_generate(&bad[i], &p, &err), NG_EINVAL);
		assert_true(err.msg[0] != '\0');
		assert_null(p.cert_pem);
	}
	int64_t t;
	assert_int_equal(cert_not_after("not a certificate", &t, &err), NG_EPARSE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ca_signs_a_serving_certificate_for_the_service_names),
	    cmocka_unit_test(test_ip_addresses_become_ip_sans),
	    cmocka_unit_test(test_issue_from_an_existing_ca),
	    cmocka_unit_test(test_issue_from_a_ca_without_key_identifier),
	    cmocka_unit_test(test_bad_requests_are_refused_with_why),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
