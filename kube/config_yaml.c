/* Walking the YAML tree of a kubeconfig (kube/config_yaml.h). */
#include "kube/config_yaml.h"

#include <stdlib.h>
#include <string.h>

char *kc_dupn(const char *s, size_t len)
{
	char *p = malloc(len + 1);
	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

bool kc_scalar_is(const struct ng_yaml_node *n, const char *s)
{
	size_t l = strlen(s);
	return n && n->kind == NG_YAML_SCALAR && n->len == l && memcmp(n->s, s, l) == 0;
}

bool kc_is_null(const struct ng_yaml_node *n)
{
	if (!n)
		return true;
	if (n->kind != NG_YAML_SCALAR)
		return false;
	if (n->len == 0)
		return true; /* null, or "" which clientcmd treats as unset */
	return n->plain && (kc_scalar_is(n, "~") || kc_scalar_is(n, "null") ||
			    kc_scalar_is(n, "Null") || kc_scalar_is(n, "NULL"));
}

/* Looks @key up in the mapping @map; *ret is NULL when absent or null. Duplicate keys are refused
 * rather than resolved, so nobody has to guess which one wins. */
ng_status kc_map_get(const struct ng_yaml_node *map, const char *key, const char *where,
		     const struct ng_yaml_node **ret, struct ng_err *err)
{
	const struct ng_yaml_node *found = NULL;
	for (const struct ng_yaml_node *k = map->first; k && k->next; k = k->next->next) {
		if (!kc_scalar_is(k, key))
			continue;
		if (found)
			return ng_err_set(err, NG_EPARSE, k->off, "%s: duplicate key \"%s\"", where,
					  key);
		found = k->next;
	}
	*ret = kc_is_null(found) ? NULL : found;
	return NG_OK;
}

/* A string field: *ret is NULL when absent, null or empty. */
ng_status kc_get_str(const struct ng_yaml_node *map, const char *key, const char *where,
		     const struct ng_yaml_node **ret, struct ng_err *err)
{
	const struct ng_yaml_node *n = NULL;
	ng_status st = kc_map_get(map, key, where, &n, err);
	if (st != NG_OK)
		return st;
	if (n && n->kind != NG_YAML_SCALAR)
		return ng_err_set(err, NG_EPARSE, n->off, "%s.%s: must be a string", where, key);
	if (n && memchr(n->s, '\0', n->len))
		return ng_err_set(err, NG_EPARSE, n->off, "%s.%s: contains a NUL byte", where, key);
	*ret = n;
	return NG_OK;
}

bool kc_scalar_in(const struct ng_yaml_node *n, const char *const *words)
{
	for (size_t i = 0; words[i]; i++)
		if (kc_scalar_is(n, words[i]))
			return true;
	return false;
}

/* A boolean field, YAML 1.1 spellings as sigs.k8s.io/yaml accepts them; absent is false. */
ng_status kc_get_bool(const struct ng_yaml_node *map, const char *key, const char *where, bool *ret,
		      struct ng_err *err)
{
	static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes",
					  "YES",  "on",   "On",   "ON",  NULL};
	static const char *const no[] = {"false", "False", "FALSE", "no",  "No",
					 "NO",    "off",   "Off",   "OFF", NULL};
	const struct ng_yaml_node *n = NULL;
	ng_status st = kc_map_get(map, key, where, &n, err);
	if (st != NG_OK)
		return st;
	if (!n) {
		*ret = false;
		return NG_OK;
	}
	if (n->kind == NG_YAML_SCALAR && n->plain && kc_scalar_in(n, yes)) {
		*ret = true;
		return NG_OK;
	}
	if (n->kind == NG_YAML_SCALAR && n->plain && kc_scalar_in(n, no)) {
		*ret = false;
		return NG_OK;
	}
	return ng_err_set(err, NG_EPARSE, n->off, "%s.%s: must be true or false", where, key);
}

/* Refuses a field nodegate does not implement, when it is set. */
ng_status kc_refuse(const struct ng_yaml_node *map, const char *key, const char *what,
		    const char *name, const char *why, struct ng_err *err)
{
	const struct ng_yaml_node *n = NULL;
	ng_status st = kc_map_get(map, key, what, &n, err);
	if (st != NG_OK)
		return st;
	if (n)
		return ng_err_set(err, NG_EINVAL, n->off, "%s \"%.40s\": %s is not supported%s",
				  what, name, key, why);
	return NG_OK;
}
