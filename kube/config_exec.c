/* A kubeconfig user's exec block read into a kube_exec_cred (kube/config_yaml.h, kc_parse_exec):
 * the fields client-go's ExecConfig defines, checked as kubectl checks them. */
#include "kube/config_yaml.h"

#include "common/buf.h"
#include "common/jw.h"
#include "kube/config.h"
#include "kube/exec_cred.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXEC_V1 "client.authentication.k8s.io/v1"
#define EXEC_V1BETA1 "client.authentication.k8s.io/v1beta1"
#define EXEC_EXTENSION "client.authentication.k8s.io/exec"

/* The command: a relative path with a slash is relative to the kubeconfig's directory, as
 * kubectl resolves it; a bare name is looked up in PATH when it runs. */
static ng_status exec_command(const struct ng_yaml_node *cmd, const char *base_dir, char **ret,
			      struct ng_err *err)
{
	size_t blen = base_dir ? strlen(base_dir) : 0;
	bool join = cmd->s[0] != '/' && memchr(cmd->s, '/', cmd->len) && blen;
	if (cmd->len + blen + 2 > PATH_MAX)
		return ng_err_set(err, NG_ELIMIT, cmd->off, "exec.command: longer than %d bytes",
				  PATH_MAX);
	char *p = malloc(cmd->len + blen + 2);
	if (!p)
		return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	if (join)
		(void)snprintf(p, cmd->len + blen + 2, "%s/%.*s", base_dir, (int)cmd->len, cmd->s);
	else
		memcpy(p, cmd->s, cmd->len + 1);
	*ret = p;
	return NG_OK;
}

static ng_status exec_args(const struct ng_yaml_node *ex, const char *where,
			   struct kube_exec_spec *s, struct ng_err *err)
{
	const struct ng_yaml_node *args = NULL;
	ng_status st = kc_map_get(ex, "args", where, &args, err);
	if (st != NG_OK || !args)
		return st;
	if (args->kind != NG_YAML_SEQ)
		return ng_err_set(err, NG_EPARSE, args->off, "%s.args: must be a list", where);
	for (const struct ng_yaml_node *a = args->first; a; a = a->next) {
		if (s->nargs == KUBE_EXEC_MAX_ARGS)
			return ng_err_set(err, NG_ELIMIT, a->off, "%s.args: more than %d", where,
					  KUBE_EXEC_MAX_ARGS);
		if (a->kind != NG_YAML_SCALAR || memchr(a->s, '\0', a->len))
			return ng_err_set(err, NG_EPARSE, a->off, "%s.args[%zu]: must be a string",
					  where, s->nargs);
		if (!s->args && !(s->args = calloc(KUBE_EXEC_MAX_ARGS, sizeof(*s->args))))
			return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
		if (!(s->args[s->nargs] = kc_dupn(a->s, a->len)))
			return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
		s->nargs++;
	}
	return NG_OK;
}

static bool env_name_ok(const struct ng_yaml_node *n)
{
	if (!n || n->len == 0)
		return false;
	for (size_t i = 0; i < n->len; i++)
		if (n->s[i] == '=' || n->s[i] == '\0')
			return false;
	return true;
}

static ng_status exec_env(const struct ng_yaml_node *ex, const char *where,
			  struct kube_exec_spec *s, struct ng_err *err)
{
	const struct ng_yaml_node *env = NULL;
	ng_status st = kc_map_get(ex, "env", where, &env, err);
	if (st != NG_OK || !env)
		return st;
	if (env->kind != NG_YAML_SEQ)
		return ng_err_set(err, NG_EPARSE, env->off, "%s.env: must be a list", where);
	char w[160];
	for (const struct ng_yaml_node *e = env->first; e; e = e->next) {
		(void)snprintf(w, sizeof(w), "%s.env[%zu]", where, s->nenv);
		if (s->nenv == KUBE_EXEC_MAX_ENV)
			return ng_err_set(err, NG_ELIMIT, e->off, "%s.env: more than %d", where,
					  KUBE_EXEC_MAX_ENV);
		if (e->kind != NG_YAML_MAP)
			return ng_err_set(err, NG_EPARSE, e->off, "%s: must be a mapping", w);
		const struct ng_yaml_node *name = NULL, *value = NULL;
		st = kc_get_str(e, "name", w, &name, err);
		if (st == NG_OK)
			st = kc_get_str(e, "value", w, &value, err);
		if (st != NG_OK)
			return st;
		if (!env_name_ok(name))
			return ng_err_set(err, NG_EPARSE, e->off, "%s.name: required, without '='",
					  w);
		size_t vlen = value ? value->len : 0, n = name->len + vlen + 2;
		if (!s->env && !(s->env = calloc(KUBE_EXEC_MAX_ENV, sizeof(*s->env))))
			return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
		if (!(s->env[s->nenv] = malloc(n)))
			return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
		(void)snprintf(s->env[s->nenv], n, "%.*s=%.*s", (int)name->len, name->s, (int)vlen,
			       value ? value->s : "");
		s->nenv++;
	}
	return NG_OK;
}

static size_t digits(const char *s, size_t i, size_t len)
{
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	return i;
}

/* RFC 8259's number grammar. */
static bool json_number(const char *s, size_t len)
{
	size_t i = (len && s[0] == '-') ? 1 : 0, j;
	if (i < len && s[i] == '0')
		j = i + 1;
	else if ((j = digits(s, i, len)) == i)
		return false;
	if (j < len && s[j] == '.') {
		size_t k = digits(s, j + 1, len);
		if (k == j + 1)
			return false;
		j = k;
	}
	if (j < len && (s[j] == 'e' || s[j] == 'E')) {
		j++;
		if (j < len && (s[j] == '+' || s[j] == '-'))
			j++;
		size_t k = digits(s, j, len);
		if (k == j)
			return false;
		j = k;
	}
	return j == len;
}

/* A plain scalar JSON can hold as it is: true, false, null or a number. */
static bool json_literal(const struct ng_yaml_node *n)
{
	if (!n->plain)
		return false;
	return kc_scalar_is(n, "true") || kc_scalar_is(n, "false") || kc_scalar_is(n, "null") ||
	       json_number(n->s, n->len);
}

/* The YAML tree under @n as JSON (the cluster's exec extension, spec.cluster.config). */
/* NOLINTNEXTLINE(misc-no-recursion): depth <= KUBE_CONFIG_MAX_DEPTH (the YAML loader's) */
static void yaml_json(struct ng_jw *w, const struct ng_yaml_node *n)
{
	if (n->kind == NG_YAML_SCALAR) {
		if (json_literal(n))
			ng_jw_raw(w, n->s, n->len);
		else
			ng_jw_strn(w, n->s, n->len);
		return;
	}
	if (n->kind == NG_YAML_SEQ) {
		ng_jw_arr(w);
		for (const struct ng_yaml_node *i = n->first; i; i = i->next)
			yaml_json(w, i);
		ng_jw_arr_end(w);
		return;
	}
	ng_jw_obj(w);
	for (const struct ng_yaml_node *k = n->first; k && k->next; k = k->next->next) {
		if (k->kind != NG_YAML_SCALAR) {
			ng_jw_fail(w, NG_EPARSE);
			return;
		}
		char key[256];
		(void)snprintf(key, sizeof(key), "%.*s", (int)k->len, k->s);
		ng_jw_key(w, key);
		yaml_json(w, k->next);
	}
	ng_jw_obj_end(w);
}

/* clusters[].cluster.extensions[] named client.authentication.k8s.io/exec, or NULL. */
static const struct ng_yaml_node *exec_extension(const struct ng_yaml_node *cl)
{
	const struct ng_yaml_node *ext = NULL;
	if (!cl || kc_map_get(cl, "extensions", "cluster", &ext, NULL) != NG_OK || !ext ||
	    ext->kind != NG_YAML_SEQ)
		return NULL;
	for (const struct ng_yaml_node *e = ext->first; e; e = e->next) {
		const struct ng_yaml_node *name = NULL, *val = NULL;
		if (e->kind != NG_YAML_MAP || kc_map_get(e, "name", "extension", &name, NULL) ||
		    !kc_scalar_is(name, EXEC_EXTENSION))
			continue;
		if (kc_map_get(e, "extension", "extension", &val, NULL) == NG_OK)
			return val;
	}
	return NULL;
}

/* spec.cluster of the ExecCredential the plugin is given (provideClusterInfo). */
static ng_status cluster_info(const struct kube_config *c, const struct ng_yaml_node *cl,
			      char **ret, struct ng_err *err)
{
	struct ng_buf b;
	ng_buf_init(&b, 2u * KUBE_CONFIG_MAX_FILE_BYTES + 65536u);
	struct ng_jw w;
	ng_jw_init(&w, &b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "server", c->server);
	if (c->tls_server_name)
		ng_jw_kstr(&w, "tls-server-name", c->tls_server_name);
	if (c->insecure_skip_tls_verify)
		ng_jw_kbool(&w, "insecure-skip-tls-verify", true);
	if (c->ca_pem) {
		ng_jw_key(&w, "certificate-authority-data");
		ng_jw_base64(&w, c->ca_pem, strlen(c->ca_pem));
	}
	const struct ng_yaml_node *ext = exec_extension(cl);
	if (ext) {
		ng_jw_key(&w, "config");
		yaml_json(&w, ext);
	}
	ng_jw_obj_end(&w);
	ng_status st = ng_jw_finish(&w);
	if (st == NG_OK)
		st = ng_buf_append(&b, "", 1);
	if (st != NG_OK) {
		ng_buf_finish(&b);
		return ng_err_set(err, st, 0,
				  "cluster \"%s\": its exec extension cannot be given "
				  "to the credential plugin",
				  c->server);
	}
	size_t len;
	*ret = ng_buf_take(&b, &len);
	return NG_OK;
}

/* apiVersion, interactiveMode and provideClusterInfo. */
static ng_status exec_modes(const struct ng_yaml_node *ex, const char *where, const char *user,
			    bool *ret_cluster_info, struct kube_exec_spec *s, struct ng_err *err)
{
	const struct ng_yaml_node *av = NULL, *mode = NULL;
	ng_status st = kc_get_str(ex, "apiVersion", where, &av, err);
	if (st == NG_OK)
		st = kc_get_str(ex, "interactiveMode", where, &mode, err);
	if (st == NG_OK)
		st = kc_get_bool(ex, "provideClusterInfo", where, ret_cluster_info, err);
	if (st != NG_OK)
		return st;
	if (!av || !(kc_scalar_is(av, EXEC_V1) || kc_scalar_is(av, EXEC_V1BETA1)))
		return ng_err_set(
		    err, NG_EPARSE, av ? av->off : ex->off,
		    "user \"%.60s\": exec.apiVersion must be " EXEC_V1 " or " EXEC_V1BETA1, user);
	/* client-go: v1 has no default, so kubectl refuses a v1 plugin without it. */
	if (!mode && kc_scalar_is(av, EXEC_V1))
		return ng_err_set(err, NG_EPARSE, ex->off,
				  "user \"%.60s\": exec.interactiveMode is required with " EXEC_V1
				  " (Never or IfAvailable)",
				  user);
	if (mode && kc_scalar_is(mode, "Always"))
		return ng_err_set(
		    err, NG_EINVAL, mode->off,
		    "user \"%.60s\": exec.interactiveMode is Always, but nodegate never "
		    "gives a credential plugin a terminal; use a plugin mode that needs "
		    "no prompt (Never or IfAvailable)",
		    user);
	if (mode && !kc_scalar_is(mode, "Never") && !kc_scalar_is(mode, "IfAvailable"))
		return ng_err_set(err, NG_EPARSE, mode->off,
				  "%s.interactiveMode: must be Never, IfAvailable or Always",
				  where);
	s->api_version = kc_dupn(av->s, av->len);
	return s->api_version ? NG_OK : ng_err_set(err, NG_ENOMEM, 0, "out of memory");
}

/* The exec block @ex at @where, read into a spec. */
static ng_status exec_spec(const struct ng_yaml_node *ex, const char *where, const char *user,
			   const char *base_dir, const struct kube_config *c,
			   const struct ng_yaml_node *cluster, struct kube_exec_spec *s,
			   struct ng_err *err)
{
	if (ex->kind != NG_YAML_MAP)
		return ng_err_set(err, NG_EPARSE, ex->off, "%s: must be a mapping", where);
	const struct ng_yaml_node *cmd = NULL, *hint = NULL;
	bool provide = false;
	ng_status st = kc_get_str(ex, "command", where, &cmd, err);
	if (st == NG_OK && !cmd)
		st = ng_err_set(err, NG_EPARSE, ex->off, "user \"%.60s\": exec.command: required",
				user);
	if (st == NG_OK)
		st = kc_get_str(ex, "installHint", where, &hint, err);
	if (st == NG_OK)
		st = exec_modes(ex, where, user, &provide, s, err);
	if (st == NG_OK)
		st = exec_command(cmd, base_dir, &s->command, err);
	if (st == NG_OK)
		st = exec_args(ex, where, s, err);
	if (st == NG_OK)
		st = exec_env(ex, where, s, err);
	if (st == NG_OK && provide)
		st = cluster_info(c, cluster, &s->cluster_json, err);
	if (st == NG_OK && hint && !(s->install_hint = kc_dupn(hint->s, hint->len)))
		st = ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	if (st == NG_OK && !(s->user = kc_dupn(user, strlen(user))))
		st = ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	return st;
}

ng_status kc_parse_exec(const struct ng_yaml_node *u, const char *where, const char *user,
			const char *base_dir, const struct kube_config *c,
			const struct ng_yaml_node *cluster, struct kube_exec_cred **ret,
			struct ng_err *err)
{
	/* The plugin's answer is the credential: no other may be set beside it. */
	static const char *const others[] = {
	    "token",      "tokenFile",      "client-certificate", "client-certificate-data",
	    "client-key", "client-key-data"};
	const struct ng_yaml_node *ex = NULL, *other = NULL;
	ng_status st = kc_map_get(u, "exec", where, &ex, err);
	for (size_t i = 0; st == NG_OK && i < sizeof(others) / sizeof(others[0]); i++) {
		st = kc_map_get(u, others[i], where, &other, err);
		if (st == NG_OK && other)
			return ng_err_set(
			    err, NG_EPARSE, other->off,
			    "user \"%.60s\": exec and %s are both set; the credential "
			    "plugin's answer is the credential",
			    user, others[i]);
	}
	if (st != NG_OK || !ex)
		return st;
	char w[72];
	(void)snprintf(w, sizeof(w), "%.60s.exec", where);
	struct kube_exec_spec s = {0};
	st = exec_spec(ex, w, user, base_dir, c, cluster, &s, err);
	if (st != NG_OK) {
		kube_exec_spec_finish(&s);
		return st;
	}
	*ret = kube_exec_cred_create(&s);
	return *ret ? NG_OK : ng_err_set(err, NG_ENOMEM, 0, "out of memory");
}
