/* Kubeconfig and in-cluster configuration (kube/config.h).
 *
 * The kubeconfig is read into a small tree kept in a capped arena by common/yaml.c (libyaml's
 * event API: aliases refused before anything is expanded, the depth limit enforced before the
 * tree grows). The tree is then walked for the handful of fields clientcmd defines. */
#include "kube/config.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/file.h"
#include "common/parse.h"
#include "common/yaml.h"
#include "kube/config_yaml.h"
#include "kube/exec_cred.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Finds the item of the top-level list @list_key ("clusters") named @name and returns its
 * @inner_key mapping ("cluster"; NULL when the item has none) and its index. */
static ng_status find_named(const struct ng_yaml_node *root, const char *list_key,
			    const char *inner_key, const char *name,
			    const struct ng_yaml_node **ret_inner, size_t *ret_idx,
			    struct ng_err *err)
{
	const struct ng_yaml_node *list = NULL;
	ng_status st = kc_map_get(root, list_key, "kubeconfig", &list, err);
	if (st != NG_OK)
		return st;
	if (list && list->kind != NG_YAML_SEQ)
		return ng_err_set(err, NG_EPARSE, list->off, "%s: must be a list", list_key);
	const struct ng_yaml_node *found = NULL;
	size_t idx = 0, i = 0;
	size_t nlen = strlen(name);
	char where[64];
	for (const struct ng_yaml_node *item = list ? list->first : NULL; item;
	     item = item->next, i++) {
		(void)snprintf(where, sizeof(where), "%s[%zu]", list_key, i);
		if (item->kind != NG_YAML_MAP)
			return ng_err_set(err, NG_EPARSE, item->off, "%s: must be a mapping",
					  where);
		const struct ng_yaml_node *nm = NULL;
		st = kc_get_str(item, "name", where, &nm, err);
		if (st != NG_OK)
			return st;
		if (!nm || nm->len != nlen || memcmp(nm->s, name, nlen) != 0)
			continue;
		if (found)
			return ng_err_set(err, NG_EPARSE, item->off,
					  "%s: name \"%.40s\" appears twice", list_key, name);
		found = item;
		idx = i;
	}
	if (!found)
		return ng_err_set(err, NG_ENOTFOUND, 0, "%.8s \"%.60s\" not found", inner_key,
				  name);
	(void)snprintf(where, sizeof(where), "%s[%zu]", list_key, idx);
	const struct ng_yaml_node *inner = NULL;
	st = kc_map_get(found, inner_key, where, &inner, err);
	if (st != NG_OK)
		return st;
	if (inner && inner->kind != NG_YAML_MAP)
		return ng_err_set(err, NG_EPARSE, inner->off, "%s.%s: must be a mapping", where,
				  inner_key);
	*ret_inner = inner;
	*ret_idx = idx;
	return NG_OK;
}

/* ---- values --------------------------------------------------------------------------- */

static void wipe_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

/* memmem is a GNU extension; this is the portable few lines. */
static const char *find_bytes(const char *hay, size_t hlen, const char *needle, size_t nlen)
{
	for (size_t i = 0; nlen <= hlen && i <= hlen - nlen; i++)
		if (hay[i] == needle[0] && memcmp(hay + i, needle, nlen) == 0)
			return hay + i;
	return NULL;
}

/* Checks decoded or file contents that must be PEM: no NUL (we keep C strings) and a header. */
static ng_status check_pem(const char *p, size_t len, const char *what, struct ng_err *err)
{
	if (memchr(p, '\0', len))
		return ng_err_set(err, NG_EPARSE, 0, "%s: contains a NUL byte", what);
	if (!find_bytes(p, len, "-----BEGIN ", 11))
		return ng_err_set(err, NG_EPARSE, 0, "%s: not PEM (no -----BEGIN line)", what);
	return NG_OK;
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

ng_status kube_config_read_token(const char *path, char **ret_token, struct ng_err *reterr)
{
	if (!path || !ret_token)
		return ng_err_set(reterr, NG_EINVAL, 0, "token file: no path");
	char *p;
	size_t len;
	ng_status st =
	    ng_read_file(path, KUBE_CONFIG_MAX_TOKEN_BYTES, "token file", true, &p, &len, reterr);
	if (st != NG_OK)
		return st;
	size_t a = 0, b = len;
	while (a < b && is_space(p[a]))
		a++;
	while (b > a && is_space(p[b - 1]))
		b--;
	if (a == b) {
		st = ng_err_set(reterr, NG_EPARSE, 0, "token file %s: empty", path);
		goto out;
	}
	for (size_t i = a; i < b; i++) {
		unsigned char ch = (unsigned char)p[i];
		if (ch < 0x21 || ch > 0x7e) {
			st = ng_err_set(reterr, NG_EPARSE, i,
					"token file %s: byte 0x%02x is not allowed in a token",
					path, ch);
			goto out;
		}
	}
	memmove(p, p + a, b - a);
	explicit_bzero(p + (b - a), len - (b - a));
	p[b - a] = '\0';
	*ret_token = p;
	p = NULL;
out:
	if (p) {
		explicit_bzero(p, len);
		free(p);
	}
	return st;
}

/* Joins a relative @path to @base_dir; absolute paths and a NULL base are kept as they are. */
static ng_status resolve_path(const char *base_dir, const char *path, char **ret,
			      struct ng_err *err)
{
	size_t plen = strlen(path);
	size_t blen = (path[0] != '/' && base_dir && base_dir[0]) ? strlen(base_dir) : 0;
	if (plen + blen + 2 > PATH_MAX)
		return ng_err_set(err, NG_ELIMIT, 0, "path longer than %d bytes", PATH_MAX);
	char *p = malloc(plen + blen + 2);
	if (!p)
		return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	size_t o = 0;
	if (blen) {
		memcpy(p, base_dir, blen);
		o = blen;
		if (p[o - 1] != '/')
			p[o++] = '/';
	}
	memcpy(p + o, path, plen + 1);
	*ret = p;
	return NG_OK;
}

/* Reads @path_node (relative to @base_dir) as a PEM file for field @where. */
static ng_status load_pem_file(const struct ng_yaml_node *path_node, const char *base_dir,
			       const char *where, char **ret, struct ng_err *err)
{
	char *path = NULL;
	ng_status st = resolve_path(base_dir, path_node->s, &path, err);
	if (st != NG_OK)
		return st;
	char *p = NULL;
	size_t len;
	st = ng_read_file(path, KUBE_CONFIG_MAX_FILE_BYTES, where, true, &p, &len, err);
	if (st == NG_OK)
		st = check_pem(p, len, where, err);
	if (st == NG_OK) {
		*ret = p;
		p = NULL;
	}
	wipe_free(p);
	free(path);
	return st;
}

/* Decodes a *-data field as base64 PEM. */
static ng_status load_pem_data(const struct ng_yaml_node *n, const char *where, char **ret,
			       struct ng_err *err)
{
	char *p;
	size_t len;
	ng_status bst = ng_base64_decode(n->s, n->len, &p, &len);
	if (bst == NG_ENOMEM)
		return ng_err_set(err, NG_ENOMEM, n->off, "%s: out of memory", where);
	if (bst != NG_OK)
		return ng_err_set(err, NG_EPARSE, n->off, "%s: not valid base64", where);
	ng_status st = check_pem(p, len, where, err);
	if (st != NG_OK) {
		if (err)
			err->offset = n->off;
		wipe_free(p);
		return st;
	}
	*ret = p;
	return NG_OK;
}

/* A PEM that may come from "<key>-data" (base64) or "<key>" (a file), never both. */
static ng_status get_pem(const struct ng_yaml_node *map, const char *key, const char *where,
			 const char *base_dir, const char *what, const char *name, char **ret,
			 struct ng_err *err)
{
	char data_key[64];
	(void)snprintf(data_key, sizeof(data_key), "%s-data", key);
	const struct ng_yaml_node *file, *data;
	ng_status st = kc_get_str(map, key, where, &file, err);
	if (st == NG_OK)
		st = kc_get_str(map, data_key, where, &data, err);
	if (st != NG_OK)
		return st;
	if (file && data)
		return ng_err_set(err, NG_EPARSE, file->off, "%s \"%.40s\": %s and %s are both set",
				  what, name, key, data_key);
	char field[128];
	if (data) {
		(void)snprintf(field, sizeof(field), "%s.%s", where, data_key);
		return load_pem_data(data, field, ret, err);
	}
	if (file) {
		(void)snprintf(field, sizeof(field), "%s \"%.40s\": %s", what, name, key);
		return load_pem_file(file, base_dir, field, ret, err);
	}
	*ret = NULL;
	return NG_OK;
}

static bool url_byte_ok(unsigned char ch)
{
	if (ch <= 0x20 || ch >= 0x7f)
		return false;
	return !strchr("?#\\@\"<>`{}|^", ch);
}

/* Validates the authority (host[:port]) of a server URL. */
static bool authority_ok(const char *a, size_t len)
{
	size_t host_end;
	const char *port = NULL;
	if (len > 0 && a[0] == '[') {
		const char *close = memchr(a, ']', len);
		if (!close || close == a + 1)
			return false;
		host_end = (size_t)(close - a) + 1;
		if (host_end < len) {
			if (a[host_end] != ':')
				return false;
			port = a + host_end + 1;
		}
	} else {
		const char *colon = memchr(a, ':', len);
		host_end = colon ? (size_t)(colon - a) : len;
		if (colon) {
			port = colon + 1;
			if (memchr(port, ':', len - host_end - 1))
				return false;
		}
		for (size_t i = 0; i < host_end; i++)
			if (a[i] == '[' || a[i] == ']')
				return false;
	}
	if (host_end == 0)
		return false;
	if (port) {
		int64_t v;
		if (ng_parse_i64(port, (size_t)(a + len - port), 1, 65535, &v) != NG_OK ||
		    port[0] == '+' || port[0] == '-')
			return false;
	}
	return true;
}

/* client-go accepts "host:port" and adds https://; only http and https are meaningful here. The
 * result has no trailing slash, so callers append paths that start with '/'. */
static ng_status normalize_server(const struct ng_yaml_node *n, const char *name, char **ret,
				  struct ng_err *err)
{
	const char *s = n->s;
	size_t len = n->len;
	while (len > 0 && s[len - 1] == '/')
		len--;
	for (size_t i = 0; i < len; i++)
		if (!url_byte_ok((unsigned char)s[i]))
			return ng_err_set(
			    err, NG_EPARSE, n->off + i,
			    "cluster \"%.40s\": server: byte 0x%02x not allowed in the "
			    "URL",
			    name, (unsigned char)s[i]);
	const char *prefix = "";
	size_t start;
	const char *sep = len >= 3 ? find_bytes(s, len, "://", 3) : NULL;
	if (!sep) {
		prefix = "https://";
		start = 0;
	} else if ((size_t)(sep - s) == 5 && memcmp(s, "https", 5) == 0) {
		start = 8;
	} else if ((size_t)(sep - s) == 4 && memcmp(s, "http", 4) == 0) {
		start = 7;
	} else {
		return ng_err_set(err, NG_EPARSE, n->off,
				  "cluster \"%.40s\": server: scheme must be https or http", name);
	}
	const char *slash = memchr(s + start, '/', len - start);
	size_t alen = slash ? (size_t)(slash - (s + start)) : len - start;
	if (!authority_ok(s + start, alen))
		return ng_err_set(err, NG_EPARSE, n->off,
				  "cluster \"%.40s\": server: not a valid host[:port]", name);
	size_t plen = strlen(prefix);
	char *p = malloc(plen + len + 1);
	if (!p)
		return ng_err_set(err, NG_ENOMEM, n->off, "out of memory");
	memcpy(p, prefix, plen);
	memcpy(p + plen, s, len);
	p[plen + len] = '\0';
	*ret = p;
	return NG_OK;
}

static bool host_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == ':'))
			return false;
	}
	return true;
}

static ng_status parse_cluster(const struct ng_yaml_node *cl, size_t idx, const char *name,
			       const char *base_dir, struct kube_config *c, struct ng_err *err)
{
	char where[64];
	(void)snprintf(where, sizeof(where), "clusters[%zu].cluster", idx);
	const struct ng_yaml_node *server = NULL, *sni = NULL;
	ng_status st = cl ? kc_get_str(cl, "server", where, &server, err) : NG_OK;
	if (st != NG_OK)
		return st;
	if (!server)
		return ng_err_set(err, NG_EPARSE, cl ? cl->off : 0,
				  "cluster \"%.60s\": server: required", name);
	st = normalize_server(server, name, &c->server, err);
	if (st != NG_OK)
		return st;
	st = kc_refuse(cl, "proxy-url", "cluster", name, "", err);
	if (st == NG_OK)
		st = get_pem(cl, "certificate-authority", where, base_dir, "cluster", name,
			     &c->ca_pem, err);
	if (st == NG_OK)
		st = kc_get_bool(cl, "insecure-skip-tls-verify", where,
				 &c->insecure_skip_tls_verify, err);
	if (st == NG_OK)
		st = kc_get_str(cl, "tls-server-name", where, &sni, err);
	if (st != NG_OK)
		return st;
	/* client-go: "specifying a root certificates file with the insecure flag is not
	 * allowed". */
	if (c->ca_pem && c->insecure_skip_tls_verify)
		return ng_err_set(err, NG_EPARSE, cl->off,
				  "cluster \"%.40s\": certificate-authority and "
				  "insecure-skip-tls-verify are both set",
				  name);
	if (sni) {
		if (!host_name_ok(sni->s, sni->len))
			return ng_err_set(err, NG_EPARSE, sni->off,
					  "%s.tls-server-name: not a host name", where);
		c->tls_server_name = kc_dupn(sni->s, sni->len);
		if (!c->tls_server_name)
			return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	}
	return NG_OK;
}

static ng_status parse_user(const struct ng_yaml_node *u, size_t idx, const char *name,
			    const char *base_dir, const struct ng_yaml_node *cluster,
			    struct kube_config *c, struct ng_err *err)
{
	if (!u)
		return NG_OK;
	char where[64];
	(void)snprintf(where, sizeof(where), "users[%zu].user", idx);
	static const struct {
		const char *key, *why;
	} refused[] = {
	    {"auth-provider", " (use a token, tokenFile or client certificate)"},
	    {"username", " (basic auth was removed from Kubernetes)"},
	    {"password", " (basic auth was removed from Kubernetes)"},
	    {"as", " (impersonation)"},
	    {"as-uid", " (impersonation)"},
	    {"as-groups", " (impersonation)"},
	    {"as-user-extra", " (impersonation)"},
	};
	ng_status st = NG_OK;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]) && st == NG_OK; i++)
		st = kc_refuse(u, refused[i].key, "user", name, refused[i].why, err);
	const struct ng_yaml_node *ex = NULL;
	if (st == NG_OK)
		st = kc_map_get(u, "exec", where, &ex, err);
	if (st == NG_OK && ex)
		return kc_parse_exec(u, where, name, base_dir, c, cluster, &c->exec, err);
	if (st == NG_OK)
		st = get_pem(u, "client-certificate", where, base_dir, "user", name,
			     &c->client_cert_pem, err);
	if (st == NG_OK)
		st = get_pem(u, "client-key", where, base_dir, "user", name, &c->client_key_pem,
			     err);
	if (st != NG_OK)
		return st;
	if (!c->client_cert_pem != !c->client_key_pem)
		return ng_err_set(err, NG_EPARSE, u->off,
				  "user \"%.60s\": client-certificate and client-key must be set "
				  "together",
				  name);
	const struct ng_yaml_node *token, *token_file;
	st = kc_get_str(u, "token", where, &token, err);
	if (st == NG_OK)
		st = kc_get_str(u, "tokenFile", where, &token_file, err);
	if (st != NG_OK)
		return st;
	if (token) {
		for (size_t i = 0; i < token->len; i++) {
			unsigned char ch = (unsigned char)token->s[i];
			if (ch < 0x21 || ch > 0x7e)
				return ng_err_set(err, NG_EPARSE, token->off,
						  "%s.token: byte 0x%02x is not allowed in a token",
						  where, ch);
		}
		c->token = kc_dupn(token->s, token->len);
		if (!c->token)
			return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	}
	if (token_file) {
		st = resolve_path(base_dir, token_file->s, &c->token_file, err);
		if (st != NG_OK)
			return st;
		/* Fail at startup, not at the first request. */
		char *probe = NULL;
		st = kube_config_read_token(c->token_file, &probe, err);
		wipe_free(probe);
		if (st != NG_OK)
			return st;
	}
	return NG_OK;
}

static char *format_str(const char *fmt, const char *a, const char *b)
{
	size_t n = strlen(fmt) + strlen(a) + (b ? strlen(b) : 0) + 1;
	char *p = malloc(n);
	if (!p)
		return NULL;
	(void)snprintf(p, n, fmt, a, b ? b : "");
	return p;
}

/* One kubeconfig file of a merged list: its tree, the directory its relative paths are
 * relative to, and its path for messages (NULL for a buffer). */
struct kc_file {
	const struct ng_yaml_node *root; /* a mapping, or NULL for an empty file */
	const char *dir;
	const char *path;
};

/* Prefixes @err's message with @path ("PATH: ..."), when there is one. */
static ng_status blame(ng_status st, const char *path, struct ng_err *err)
{
	if (st != NG_OK && path && err) {
		char msg[sizeof(err->msg)];
		memcpy(msg, err->msg, sizeof(msg));
		(void)ng_err_set(err, st, err->offset, "%s: %s", path, msg);
	}
	return st;
}

/* The files' paths joined with ':' into @out, for "not found in A:B". */
static void list_paths(const struct kc_file *f, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && f[i].path && o + 1 < cap; i++) {
		int k = snprintf(out + o, cap - o, "%s%s", i ? ":" : " in ", f[i].path);
		if (k < 0)
			break;
		o += (size_t)k;
	}
}

/* find_named() over the files in order: the first file that defines @name wins, as kubectl
 * merges them. *@ret_file is that file's index. */
static ng_status find_any(const struct kc_file *f, size_t n, const char *list_key,
			  const char *inner_key, const char *name,
			  const struct ng_yaml_node **ret_inner, size_t *ret_idx, size_t *ret_file,
			  struct ng_err *err)
{
	for (size_t i = 0; i < n; i++) {
		if (!f[i].root)
			continue;
		ng_status st =
		    find_named(f[i].root, list_key, inner_key, name, ret_inner, ret_idx, err);
		if (st == NG_ENOTFOUND)
			continue;
		*ret_file = i;
		return blame(st, f[i].path, err);
	}
	char where[512];
	list_paths(f, n, where, sizeof(where));
	return ng_err_set(err, NG_ENOTFOUND, 0, "%.8s \"%.60s\" not found%s", inner_key, name,
			  where);
}

/* current-context: @context when given, else the first file that sets it. */
static ng_status current_context(const struct kc_file *f, size_t n, const char *context,
				 const char **ret, struct ng_err *err)
{
	if (context && context[0]) {
		*ret = context;
		return NG_OK;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ng_yaml_node *cur = NULL;
		if (!f[i].root)
			continue;
		ng_status st = kc_get_str(f[i].root, "current-context", "kubeconfig", &cur, err);
		if (st != NG_OK)
			return blame(st, f[i].path, err);
		if (cur) {
			*ret = cur->s;
			return NG_OK;
		}
	}
	char where[512];
	list_paths(f, n, where, sizeof(where));
	return ng_err_set(err, NG_ENOTFOUND, 0,
			  "kubeconfig%s: current-context is not set and no context was given",
			  where);
}

/* The context's cluster, user and namespace names. */
static ng_status read_context(const struct kc_file *f, size_t n, const char *ctx_name,
			      const struct ng_yaml_node **cluster_name,
			      const struct ng_yaml_node **user_name, const struct ng_yaml_node **ns,
			      struct ng_err *err)
{
	const struct ng_yaml_node *ctx = NULL;
	size_t ci, fi = 0;
	ng_status st = find_any(f, n, "contexts", "context", ctx_name, &ctx, &ci, &fi, err);
	if (st != NG_OK)
		return st;
	char where[64];
	(void)snprintf(where, sizeof(where), "contexts[%zu].context", ci);
	if (ctx) {
		st = kc_get_str(ctx, "cluster", where, cluster_name, err);
		if (st == NG_OK)
			st = kc_get_str(ctx, "user", where, user_name, err);
		if (st == NG_OK)
			st = kc_get_str(ctx, "namespace", where, ns, err);
		if (st != NG_OK)
			return blame(st, f[fi].path, err);
	}
	if (!*cluster_name)
		return blame(ng_err_set(err, NG_EPARSE, ctx ? ctx->off : 0,
					"context \"%.60s\": cluster: required", ctx_name),
			     f[fi].path, err);
	return NG_OK;
}

static ng_status parse_files(const struct kc_file *f, size_t n, const char *context,
			     struct kube_config *c, struct ng_err *err)
{
	const char *ctx_name = NULL;
	const struct ng_yaml_node *cl = NULL, *user = NULL;
	const struct ng_yaml_node *cluster_name = NULL, *user_name = NULL, *ns = NULL;
	size_t cli, ui = 0, cf = 0, uf = 0;
	ng_status st = current_context(f, n, context, &ctx_name, err);
	if (st == NG_OK)
		st = read_context(f, n, ctx_name, &cluster_name, &user_name, &ns, err);
	if (st == NG_OK && !cluster_name) /* read_context() says so already */
		st =
		    ng_err_set(err, NG_EPARSE, 0, "context \"%.60s\": cluster: required", ctx_name);
	if (st == NG_OK)
		st = find_any(f, n, "clusters", "cluster", cluster_name->s, &cl, &cli, &cf, err);
	if (st == NG_OK)
		st = blame(parse_cluster(cl, cli, cluster_name->s, f[cf].dir, c, err), f[cf].path,
			   err);
	if (st != NG_OK)
		return st;
	/* No user is anonymous access, as in client-go. */
	if (user_name) {
		st = find_any(f, n, "users", "user", user_name->s, &user, &ui, &uf, err);
		if (st == NG_OK)
			st = blame(parse_user(user, ui, user_name->s, f[uf].dir, cl, c, err),
				   f[uf].path, err);
		if (st != NG_OK)
			return st;
	}
	c->ns = ns ? kc_dupn(ns->s, ns->len) : kc_dupn("default", 7);
	c->source = format_str("kubeconfig (context %s)%s", ctx_name, NULL);
	if (!c->ns || !c->source)
		return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	return NG_OK;
}

/* Loads @buf into @arena as the tree of @f, which must be a mapping (or empty). */
static ng_status load_tree(const char *buf, size_t len, struct ng_arena *arena, struct kc_file *f,
			   struct ng_err *err)
{
	struct ng_yaml_node *root = NULL;
	ng_status st =
	    ng_yaml_load(buf, len, "kubeconfig", KUBE_CONFIG_MAX_DEPTH, arena, &root, err);
	if (st == NG_OK && root && root->kind != NG_YAML_MAP)
		st = ng_err_set(err, NG_EPARSE, root->off,
				"kubeconfig: the top level must be a mapping");
	f->root = root;
	return st;
}

ng_status kube_config_parse_kubeconfig(const char *buf, size_t len, const char *base_dir,
				       const char *context, struct kube_config *ret,
				       struct ng_err *reterr)
{
	if ((!buf && len) || !ret)
		return ng_err_set(reterr, NG_EINVAL, 0, "kubeconfig: no buffer or result");
	if (len > KUBE_CONFIG_MAX_BYTES)
		return ng_err_set(reterr, NG_ELIMIT, 0, "kubeconfig: larger than %u bytes",
				  KUBE_CONFIG_MAX_BYTES);
	struct ng_arena *arena = ng_arena_create(KUBE_CONFIG_TREE_CAP_BYTES);
	if (!arena)
		return ng_err_set(reterr, NG_ENOMEM, 0, "kubeconfig: out of memory");
	struct kube_config c = {0};
	struct kc_file f = {NULL, base_dir, NULL};
	ng_status st = load_tree(buf, len, arena, &f, reterr);
	if (st == NG_OK && !f.root)
		st = ng_err_set(reterr, NG_EPARSE, 0, "kubeconfig: empty");
	if (st == NG_OK)
		st = parse_files(&f, 1, context, &c, reterr);
	if (st == NG_OK)
		*ret = c;
	else
		kube_config_finish(&c);
	ng_arena_destroy(arena);
	return st;
}

/* The absolute directory of @path (clientcmd ResolvePaths: relative paths inside a file are
 * relative to it; absolute, so a later chdir cannot change what they mean). malloc'd. */
static char *dir_of(const char *path)
{
	char *real = realpath(path, NULL);
	char *dir = real ? real : strdup(path);
	if (!dir)
		return NULL;
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		dir[0] = '\0';
	return dir;
}

/* The files being merged: their bytes, and their directories and trees (in one arena). */
struct kc_set {
	struct kc_file f[KUBE_CONFIG_MAX_FILES];
	char *buf[KUBE_CONFIG_MAX_FILES];
	size_t len[KUBE_CONFIG_MAX_FILES];
	size_t n;
	struct ng_arena *arena;
};

static void set_finish(struct kc_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->buf[i])
			explicit_bzero(s->buf[i], s->len[i]);
		free(s->buf[i]);
	}
	ng_arena_destroy(s->arena);
}

/* Reads @path into the set; @path is borrowed for the set's life. */
static ng_status set_add(struct kc_set *s, const char *path, struct ng_err *err)
{
	if (s->n == KUBE_CONFIG_MAX_FILES)
		return ng_err_set(err, NG_ELIMIT, 0, "KUBECONFIG: more than %d files",
				  KUBE_CONFIG_MAX_FILES);
	size_t i = s->n;
	ng_status st = ng_read_file(path, KUBE_CONFIG_MAX_BYTES, "kubeconfig", true, &s->buf[i],
				    &s->len[i], err);
	if (st != NG_OK)
		return st;
	s->n++;
	s->f[i].path = path;
	char *dir = dir_of(path);
	s->f[i].dir = dir && dir[0] ? ng_arena_strndup(s->arena, dir, strlen(dir)) : NULL;
	bool lost = !dir || (dir[0] && !s->f[i].dir);
	free(dir);
	if (lost)
		return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	return blame(load_tree(s->buf[i], s->len[i], s->arena, &s->f[i], err), path, err);
}

/* Merges the files of @s as kubectl does and selects @context. */
static ng_status set_parse(struct kc_set *s, const char *context, struct kube_config *ret,
			   struct ng_err *err)
{
	struct kube_config c = {0};
	ng_status st = parse_files(s->f, s->n, context, &c, err);
	char paths[512];
	list_paths(s->f, s->n, paths, sizeof(paths));
	char *src = st == NG_OK ? format_str("kubeconfig %s %s", paths + strlen(" in "),
					     c.source + strlen("kubeconfig "))
				: NULL;
	if (st == NG_OK && !src)
		st = ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	if (st != NG_OK) {
		kube_config_finish(&c);
		return st;
	}
	free(c.source);
	c.source = src;
	*ret = c;
	return NG_OK;
}

ng_status kube_config_load_kubeconfig(const char *path, const char *context,
				      struct kube_config *ret, struct ng_err *reterr)
{
	if (!path || !ret)
		return ng_err_set(reterr, NG_EINVAL, 0, "kubeconfig: no path");
	struct kc_set s = {.arena = ng_arena_create(KUBE_CONFIG_TREE_CAP_BYTES)};
	ng_status st =
	    s.arena ? set_add(&s, path, reterr) : ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	if (st == NG_OK && !s.f[0].root)
		st = ng_err_set(reterr, NG_EPARSE, 0, "%s: kubeconfig: empty", path);
	if (st == NG_OK)
		st = set_parse(&s, context, ret, reterr);
	set_finish(&s);
	return st;
}

ng_status kube_config_load_list(const char *list, const char *context, struct kube_config *ret,
				struct ng_err *reterr)
{
	if (!list || !ret)
		return ng_err_set(reterr, NG_EINVAL, 0, "KUBECONFIG: no list");
	struct kc_set s = {.arena = ng_arena_create(KUBE_CONFIG_TREE_CAP_BYTES)};
	char *copy = strdup(list);
	ng_status st = s.arena && copy ? NG_OK : ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	char *save = NULL;
	for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p && st == NG_OK;
	     p = strtok_r(NULL, ":", &save)) {
		if (access(p, F_OK) != 0)
			continue; /* kubectl skips missing files */
		st = set_add(&s, p, reterr);
	}
	if (st == NG_OK && s.n == 0)
		st = ng_err_set(reterr, NG_ENOTFOUND, 0, "KUBECONFIG: none of its files exists");
	if (st == NG_OK)
		st = set_parse(&s, context, ret, reterr);
	set_finish(&s);
	free(copy);
	return st;
}

/* ---- in-cluster ------------------------------------------------------------------------ */

#define SA_DIR "var/run/secrets/kubernetes.io/serviceaccount"

ng_status kube_config_in_cluster(const char *root, struct kube_config *ret, struct ng_err *reterr)
{
	if (!root || !ret)
		return ng_err_set(reterr, NG_EINVAL, 0, "in-cluster: no root");
	/* NOLINTNEXTLINE(concurrency-mt-unsafe): nodegate never sets its environment */
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	/* NOLINTNEXTLINE(concurrency-mt-unsafe): nodegate never sets its environment */
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (!host || !host[0] || !port || !port[0])
		return ng_err_set(reterr, NG_ENOTFOUND, 0,
				  "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
				  "are not set (not running in a pod)");
	if (!host_name_ok(host, strlen(host)))
		return ng_err_set(
		    reterr, NG_EPARSE, 0,
		    "in-cluster: KUBERNETES_SERVICE_HOST is not a host name or address");
	int64_t port_num;
	if (ng_parse_i64(port, strlen(port), 1, 65535, &port_num) != NG_OK)
		return ng_err_set(reterr, NG_EPARSE, 0,
				  "in-cluster: KUBERNETES_SERVICE_PORT is not a port number");

	struct kube_config c = {0};
	char *path = NULL, *ns = NULL;
	size_t len;
	ng_status st = NG_OK;
	size_t n = strlen(host) + 32;
	c.server = malloc(n);
	if (!c.server) {
		st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		goto out;
	}
	/* net.JoinHostPort: an IPv6 literal needs brackets. */
	(void)snprintf(c.server, n, strchr(host, ':') ? "https://[%s]:%lld" : "https://%s:%lld",
		       host, (long long)port_num);

	st = resolve_path(root, SA_DIR "/token", &c.token_file, reterr);
	if (st == NG_OK)
		/* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): kube_config_finish() frees */
		st = kube_config_read_token(c.token_file, &c.token, reterr);
	if (st != NG_OK)
		goto out;
	/* client-go falls back to the system roots when ca.crt is unreadable; a pod always has
	 * it, so its absence is a broken mount worth failing on rather than trusting every
	 * public CA. */
	st = resolve_path(root, SA_DIR "/ca.crt", &path, reterr);
	if (st == NG_OK)
		st = ng_read_file(path, KUBE_CONFIG_MAX_FILE_BYTES, "in-cluster CA", true,
				  &c.ca_pem, &len, reterr);
	if (st == NG_OK)
		st = check_pem(c.ca_pem, len, "in-cluster ca.crt", reterr);
	if (st != NG_OK)
		goto out;
	free(path);
	path = NULL;
	st = resolve_path(root, SA_DIR "/namespace", &path, reterr);
	if (st != NG_OK)
		goto out;
	/* Optional: "default" when absent, as client-go's namespace fallback. */
	struct ng_err ignored;
	if (ng_read_file(path, 256, "namespace", true, &ns, &len, &ignored) == NG_OK) {
		size_t a = 0, b = len;
		while (a < b && is_space(ns[a]))
			a++;
		while (b > a && is_space(ns[b - 1]))
			b--;
		if (b > a && !memchr(ns + a, '\0', b - a))
			c.ns = kc_dupn(ns + a, b - a);
	}
	if (!c.ns)
		c.ns = kc_dupn("default", 7);
	c.source = kc_dupn("in-cluster", 10);
	if (!c.ns || !c.source) {
		st = ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		goto out;
	}
	*ret = c;
	memset(&c, 0, sizeof(c));
out:
	kube_config_finish(&c);
	free(ns);
	free(path);
	return st;
}

/* ---- resolution ------------------------------------------------------------------------- */

/* The first path of the colon-separated @list that exists; NULL when none (or on OOM). */
static char *first_existing(const char *list)
{
	const char *p = list;
	while (*p) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n > 0 && n < PATH_MAX) {
			char *cand = kc_dupn(p, n);
			if (!cand)
				return NULL;
			if (access(cand, F_OK) == 0)
				return cand;
			free(cand);
		}
		if (!end)
			break;
		p = end + 1;
	}
	return NULL;
}

ng_status kube_config_resolve(const char *kubeconfig_flag, const char *context, bool allow_insecure,
			      struct kube_config *ret, struct ng_err *reterr)
{
	if (!ret)
		return ng_err_set(reterr, NG_EINVAL, 0, "kubernetes config: no result");
	struct kube_config c = {0};
	ng_status st;
	/* NOLINTNEXTLINE(concurrency-mt-unsafe): nodegate never sets its environment */
	const char *env = getenv("KUBECONFIG");
	char *path = NULL;
	if (kubeconfig_flag && kubeconfig_flag[0]) {
		st = kube_config_load_kubeconfig(kubeconfig_flag, context, &c, reterr);
	} else if (env && env[0] && (path = first_existing(env)) != NULL) {
		free(path);
		st = kube_config_load_list(env, context, &c, reterr);
	} else if (context && context[0]) {
		return ng_err_set(
		    reterr, NG_EINVAL, 0,
		    "a context (--context) needs a kubeconfig: pass --kubeconfig or set "
		    "KUBECONFIG%s",
		    env && env[0] ? " (no file listed in KUBECONFIG exists)" : "");
	} else {
		st = kube_config_in_cluster("/", &c, reterr);
		if (st == NG_ENOTFOUND)
			return ng_err_set(reterr, NG_ENOTFOUND, 0,
					  "no Kubernetes API server configured: pass --kubeconfig, "
					  "set KUBECONFIG%s or run in a pod",
					  env && env[0] ? " (none of its files exists)" : "");
	}
	if (st != NG_OK)
		return st;
	if (c.insecure_skip_tls_verify && !allow_insecure) {
		st = ng_err_set(reterr, NG_EINVAL, 0,
				"%.100s sets insecure-skip-tls-verify; pass "
				"--allow-insecure-kube-tls to accept an unverified API server",
				c.source);
		kube_config_finish(&c);
		return st;
	}
	if (c.exec) {
		/* Run the plugin now: a missing or failing one is a startup error that says why,
		 * not a watch retrying for ever. Its answer is cached for the clients. */
		struct kube_exec_answer a = {0};
		st = kube_exec_cred_get(c.exec, &a, NULL, reterr);
		kube_exec_answer_finish(&a);
		if (st != NG_OK) {
			kube_config_finish(&c);
			return st;
		}
	}
	*ret = c;
	return NG_OK;
}

void kube_config_finish(struct kube_config *c)
{
	if (!c)
		return;
	free(c->server);
	free(c->ca_pem);
	free(c->client_cert_pem);
	wipe_free(c->client_key_pem);
	wipe_free(c->token);
	free(c->token_file);
	free(c->tls_server_name);
	free(c->ns);
	free(c->source);
	kube_exec_cred_unref(c->exec);
	memset(c, 0, sizeof(*c));
}
