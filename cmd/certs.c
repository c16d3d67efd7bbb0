/* nodegate certs: a CA and a serving certificate for the webhook's Service. */
#include "cmd/cmd.h"

#include "certs/certs.h"
#include "common/buf.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes @data to @dir/@name, refusing to replace a file (a CA key is not overwritten by a
 * typo). 0 or -1 with errno. */
static int write_new_file(const char *dir, const char *name, const char *data, mode_t mode)
{
	char path[4096];
	ng_fmt(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	size_t len = strlen(data), off = 0;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = errno;
			(void)close(fd);
			errno = e;
			return -1;
		}
		off += (size_t)n;
	}
	return close(fd);
}

int cmd_certs(int argc, char **argv)
{
	const char *out = NULL;
	struct cmd_multi dns = {0}, ips = {0};
	int64_t days = 365;
	struct cert_request r = {.service = "nodegate", .ns = "nodegate"};
	const struct cmd_opt opts[] = {
	    {"out", CMD_OPT_STR, &out, "DIR", "Directory to write the four files into. Required.",
	     0, 0, NULL, NULL},
	    {"service", CMD_OPT_STR, &r.service, "NAME",
	     "The webhook's Service: the certificate names NAME, NAME.NS, NAME.NS.svc and "
	     "NAME.NS.svc.cluster.local.",
	     0, 0, NULL, NULL},
	    {"namespace", CMD_OPT_STR, &r.ns, "NS", "The Service's namespace.", 0, 0, NULL, NULL},
	    {"dns", CMD_OPT_MULTI, &dns, "NAME",
	     "Another DNS name for the certificate. A value that is an IPv4 or IPv6 address is "
	     "written as an IP SAN, as --ip does.",
	     0, 0, NULL, NULL},
	    {"ip", CMD_OPT_MULTI, &ips, "ADDR",
	     "An IPv4 or IPv6 address for the certificate (an IP SAN): for a webhook registered by "
	     "URL with an address, since TLS clients match an address only against IP SANs.",
	     0, 0, NULL, NULL},
	    {"days", CMD_OPT_INT, &days, "N", "Validity of the CA and the certificate.", 1,
	     CERT_MAX_DAYS, NULL, NULL},
	};
	int rc = cmd_opts_parse("certs", opts, sizeof(opts) / sizeof(opts[0]), argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	r.extra_dns = dns.v;
	r.nextra = dns.n;
	r.extra_ip = ips.v;
	r.nextra_ip = ips.n;
	r.days = (int)days;
	if (!out) {
		(void)fprintf(stderr, "nodegate certs: --out DIR is required\n");
		return 2;
	}
	struct cert_pair p;
	struct ng_err err = {0};
	if (cert_generate(&r, &p, &err) != NG_OK) {
		(void)fprintf(stderr, "nodegate certs: %s\n", err.msg);
		return 2;
	}
	static const char *const names[4] = {"ca.crt", "ca.key", "tls.crt", "tls.key"};
	const char *data[4] = {p.ca_pem, p.ca_key_pem, p.cert_pem, p.key_pem};
	for (int i = 0; i < 4 && rc == 0; i++) {
		if (write_new_file(out, names[i], data[i], i % 2 ? 0600 : 0644) != 0) {
			(void)fprintf(stderr, "nodegate certs: %s/%s: %s\n", out, names[i],
				      ng_strerror(errno));
			rc = 1;
		}
	}
	if (rc == 0) {
		/* What a webhook configuration's clientConfig.caBundle takes. */
		struct ng_buf b;
		ng_buf_init(&b, 64 * 1024);
		if (ng_buf_base64(&b, p.ca_pem, strlen(p.ca_pem)) == NG_OK)
			(void)printf("%s\n", b.data);
		ng_buf_finish(&b);
	}
	cert_pair_finish(&p);
	return rc;
}
