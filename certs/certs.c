#include "certs/certs.h"

#include "common/buf.h"
#include "common/parse.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *bio_string(BIO *b)
{
	char *data;
	long n = BIO_get_mem_data(b, &data);
	char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (out) {
		memcpy(out, data, (size_t)n);
		out[n] = '\0';
	}
	return out;
}

static char *key_pem(EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *s =
	    b && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL) ? bio_string(b) : NULL;
	BIO_free(b);
	return s;
}

static char *cert_pem(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *s = b && PEM_write_bio_X509(b, x) ? bio_string(b) : NULL;
	BIO_free(b);
	return s;
}

static bool add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	bool ok = e && X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok;
}

/* A certificate for @key named @cn, valid @seconds from now, signed by @issuer_key (self-signed
 * when @issuer is NULL). NULL on failure. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, long seconds, X509 *issuer,
		       EVP_PKEY *issuer_key)
{
	X509 *x = X509_new();
	BIGNUM *serial = BN_new();
	bool ok = x && serial && X509_set_version(x, 2) && BN_rand(serial, 127, 0, 0) &&
		  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) &&
		  X509_gmtime_adj(X509_getm_notBefore(x), -300) &&
		  X509_gmtime_adj(X509_getm_notAfter(x), seconds) && X509_set_pubkey(x, key);
	X509_NAME *name = ok ? X509_get_subject_name(x) : NULL;
	ok = ok &&
	     X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
					0) &&
	     X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
	if (ok && !issuer)
		ok = add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
		     add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") &&
		     add_ext(x, x, NID_subject_key_identifier, "hash");
	BN_free(serial);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* The binary form of the IPv4 or IPv6 address @s into @ret (16 bytes); its length, or 0 when
 * @s is not one. inet_pton takes only the canonical text forms ("127.0.0.1", "::1"), so a DNS
 * name such as "1.2.3.4.nip.io" stays a name. */
static int parse_ip(const char *s, unsigned char ret[16])
{
	if (inet_pton(AF_INET, s, ret) == 1)
		return 4;
	if (inet_pton(AF_INET6, s, ret) == 1)
		return 16;
	return 0;
}

/* Appends a SAN of @type (GEN_DNS, GEN_IPADD) holding @len bytes at @data to @names. */
static bool add_san(GENERAL_NAMES *names, int type, const void *data, int len)
{
	GENERAL_NAME *g = GENERAL_NAME_new();
	ASN1_STRING *s =
	    ASN1_STRING_type_new(type == GEN_DNS ? V_ASN1_IA5STRING : V_ASN1_OCTET_STRING);
	if (!g || !s || !ASN1_STRING_set(s, data, len)) {
		GENERAL_NAME_free(g);
		ASN1_STRING_free(s);
		return false;
	}
	GENERAL_NAME_set0_value(g, type, s);
	if (!sk_GENERAL_NAME_push(names, g)) {
		GENERAL_NAME_free(g);
		return false;
	}
	return true;
}

/* The subjectAltName of the serving certificate: the Service's four names, then the extra DNS
 * names (those that are IP addresses as IP SANs), then the extra IPs. Built as GENERAL_NAMEs
 * rather than OpenSSL's "DNS:a,IP:b" config text so that no value is ever parsed as syntax. */
static ng_status build_sans(const struct cert_request *r, GENERAL_NAMES *names,
			    struct ng_err *reterr)
{
	char svc[4][160];
	ng_fmt(svc[0], sizeof(svc[0]), "%s", r->service);
	ng_fmt(svc[1], sizeof(svc[1]), "%s.%s", r->service, r->ns);
	ng_fmt(svc[2], sizeof(svc[2]), "%s.%s.svc", r->service, r->ns);
	ng_fmt(svc[3], sizeof(svc[3]), "%s.%s.svc.cluster.local", r->service, r->ns);
	bool ok = true;
	for (size_t i = 0; ok && i < 4; i++)
		ok = add_san(names, GEN_DNS, svc[i], (int)strlen(svc[i]));
	unsigned char ip[16];
	for (size_t i = 0; ok && i < r->nextra; i++) {
		const char *d = r->extra_dns[i];
		int iplen = parse_ip(d, ip);
		if (iplen)
			ok = add_san(names, GEN_IPADD, ip, iplen);
		else if (!d[0] || strlen(d) > 253 || strpbrk(d, ", \t\r\n:"))
			return ng_err_set(reterr, NG_EINVAL, 0,
					  "\"%.80s\" is not a DNS name or an IP address", d);
		else
			ok = add_san(names, GEN_DNS, d, (int)strlen(d));
	}
	for (size_t i = 0; ok && i < r->nextra_ip; i++) {
		int iplen = parse_ip(r->extra_ip[i], ip);
		if (!iplen)
			return ng_err_set(reterr, NG_EINVAL, 0,
					  "\"%.80s\" is not an IPv4 or IPv6 address",
					  r->extra_ip[i]);
		ok = add_san(names, GEN_IPADD, ip, iplen);
	}
	return ok ? NG_OK : ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
}

static void wipe_free(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

/* The serving certificate for @r's names and a new key, signed by @ca / @ca_key, valid
 * @seconds: PEM into @ret_cert and @ret_key (malloc'ed). */
static ng_status issue(const struct cert_request *r, X509 *ca, EVP_PKEY *ca_key, long seconds,
		       char **ret_cert, char **ret_key, struct ng_err *reterr)
{
	*ret_cert = *ret_key = NULL;
	if (!ng_dns_label(r->service) || !ng_dns_label(r->ns))
		return ng_err_set(reterr, NG_EINVAL, 0,
				  "service and namespace must be DNS labels (lower-case letters, "
				  "digits and '-', at most 63)");
	GENERAL_NAMES *sans = sk_GENERAL_NAME_new_null();
	if (!sans)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	ng_status st = build_sans(r, sans, reterr);
	if (st != NG_OK) {
		GENERAL_NAMES_free(sans);
		return st;
	}
	char cn[160];
	ng_fmt(cn, sizeof(cn), "%s.%s.svc", r->service, r->ns);
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *leaf = key ? make_cert(key, cn, seconds, ca, ca_key) : NULL;
	/* The authority key identifier is the CA's subject key identifier; a CA brought in a Secret
	 * may have none (RFC 5280 asks for one, not every tool writes it), and then it is the CA's
	 * issuer and serial, as RFC 5280 also allows. "keyid:always" refused such a CA. */
	bool ok = leaf && add_ext(leaf, ca, NID_basic_constraints, "critical,CA:FALSE") &&
		  add_ext(leaf, ca, NID_key_usage, "critical,digitalSignature") &&
		  add_ext(leaf, ca, NID_ext_key_usage, "serverAuth") &&
		  X509_add1_ext_i2d(leaf, NID_subject_alt_name, sans, 0, X509V3_ADD_DEFAULT) == 1 &&
		  add_ext(leaf, ca, NID_authority_key_identifier, "keyid,issuer") &&
		  X509_sign(leaf, ca_key, EVP_sha256()) > 0;
	if (ok) {
		*ret_cert = cert_pem(leaf);
		*ret_key = key_pem(key);
		ok = *ret_cert && *ret_key;
	}
	X509_free(leaf);
	EVP_PKEY_free(key);
	GENERAL_NAMES_free(sans);
	if (!ok) {
		free(*ret_cert);
		wipe_free(*ret_key);
		*ret_cert = *ret_key = NULL;
		return ng_err_set(reterr, NG_EIO, 0, "cannot create the certificate (OpenSSL)");
	}
	return NG_OK;
}

ng_status cert_generate(const struct cert_request *r, struct cert_pair *ret, struct ng_err *reterr)
{
	memset(ret, 0, sizeof(*ret));
	if (r->days < 1 || r->days > CERT_MAX_DAYS)
		return ng_err_set(reterr, NG_EINVAL, 0, "days must be between 1 and %d",
				  CERT_MAX_DAYS);
	long seconds = (long)r->days * 86400L;
	EVP_PKEY *ca_key = EVP_EC_gen("P-256");
	X509 *ca = ca_key ? make_cert(ca_key, "nodegate webhook CA", seconds, NULL, NULL) : NULL;
	bool ok = ca && X509_sign(ca, ca_key, EVP_sha256()) > 0;
	ng_status st = ok ? issue(r, ca, ca_key, seconds, &ret->cert_pem, &ret->key_pem, reterr)
			  : ng_err_set(reterr, NG_EIO, 0, "cannot create the CA (OpenSSL)");
	if (st == NG_OK) {
		ret->ca_pem = cert_pem(ca);
		ret->ca_key_pem = key_pem(ca_key);
		if (!ret->ca_pem || !ret->ca_key_pem)
			st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	}
	X509_free(ca);
	EVP_PKEY_free(ca_key);
	if (st != NG_OK)
		cert_pair_finish(ret);
	return st;
}

ng_status cert_issue(const struct cert_request *r, const char *ca_pem, const char *ca_key_pem,
		     int64_t seconds, char **ret_cert, char **ret_key, struct ng_err *reterr)
{
	*ret_cert = *ret_key = NULL;
	if (seconds < 1 || seconds > 3650 * 86400L)
		return ng_err_set(reterr, NG_EINVAL, 0, "validity must be 1 s..3650 days");
	BIO *b = BIO_new_mem_buf(ca_pem, -1);
	X509 *ca = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	b = BIO_new_mem_buf(ca_key_pem, -1);
	EVP_PKEY *ca_key = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	ng_status st = ca && ca_key && X509_check_private_key(ca, ca_key) == 1
			   ? issue(r, ca, ca_key, (long)seconds, ret_cert, ret_key, reterr)
			   : ng_err_set(reterr, NG_EPARSE, 0,
					"the CA certificate and key do not load together");
	X509_free(ca);
	EVP_PKEY_free(ca_key);
	return st;
}

void cert_free_secret(char *pem)
{
	wipe_free(pem);
}

void cert_pair_finish(struct cert_pair *p)
{
	free(p->ca_pem);
	free(p->cert_pem);
	wipe_free(p->ca_key_pem);
	wipe_free(p->key_pem);
	memset(p, 0, sizeof(*p));
}

ng_status cert_not_after(const char *pem, int64_t *ret_unix_s, struct ng_err *reterr)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	struct tm tm;
	bool ok = x && ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1;
	X509_free(x);
	if (!ok)
		return ng_err_set(reterr, NG_EPARSE, 0, "no PEM certificate to read");
	*ret_unix_s = (int64_t)timegm(&tm);
	return NG_OK;
}
