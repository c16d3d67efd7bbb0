/* Walking the YAML tree of a kubeconfig (common/yaml.h): the few lookups the kubeconfig
 * readers share (kube/config.c for clusters, contexts and users, kube/config_exec.c for a
 * user's exec block). Internal to kube/.
 *
 * Ownership: every node is borrowed from the caller's tree. Threads: any; nothing global.
 * Errors: NG_EPARSE with @where and the key in the message ("users[0].user.token: must be a
 * string"), the offset of the offending node in the ng_err; NG_EINVAL for kc_refuse(). */
#ifndef NG_KUBE_CONFIG_YAML_H
#define NG_KUBE_CONFIG_YAML_H

#include "common/status.h"
#include "common/yaml.h"

#include <stdbool.h>
#include <stddef.h>

/** @len bytes of @s as a malloc'd NUL-terminated string; NULL on OOM. */
char *kc_dupn(const char *s, size_t len);

/** True when @n is a scalar equal to @s. */
bool kc_scalar_is(const struct ng_yaml_node *n, const char *s);

/** True when @n is absent, empty or a plain null (~, null): clientcmd treats these as unset. */
bool kc_is_null(const struct ng_yaml_node *n);

/** @key of the mapping @map into *@ret (NULL when absent or null); a duplicate key is refused. */
NG_NODISCARD ng_status kc_map_get(const struct ng_yaml_node *map, const char *key,
				  const char *where, const struct ng_yaml_node **ret,
				  struct ng_err *err);

/** A string field: *@ret is NULL when absent, null or empty; a NUL byte is refused. */
NG_NODISCARD ng_status kc_get_str(const struct ng_yaml_node *map, const char *key,
				  const char *where, const struct ng_yaml_node **ret,
				  struct ng_err *err);

/** True when @n is a scalar equal to one of the NULL-terminated @words. */
bool kc_scalar_in(const struct ng_yaml_node *n, const char *const *words);

/** A boolean field in the YAML 1.1 spellings sigs.k8s.io/yaml accepts; absent is false. */
NG_NODISCARD ng_status kc_get_bool(const struct ng_yaml_node *map, const char *key,
				   const char *where, bool *ret, struct ng_err *err);

/** NG_EINVAL "WHAT "NAME": KEY is not supported WHY" when @key is set in @map. */
NG_NODISCARD ng_status kc_refuse(const struct ng_yaml_node *map, const char *key, const char *what,
				 const char *name, const char *why, struct ng_err *err);

struct kube_config;
struct kube_exec_cred;

/**
 * Reads the exec block of the user mapping @u (user @user, at @where, e.g. "users[0].user") into
 * a new kube_exec_cred (*@ret, one reference). Another credential beside exec (token, tokenFile,
 * client certificate or key) is refused. A relative command with a slash is resolved against
 * @base_dir. With provideClusterInfo, @c's cluster fields (already parsed) and the exec extension
 * of the cluster mapping @cluster (may be NULL) become spec.cluster. The plugin is not run.
 * NG_EPARSE naming the field, NG_EINVAL for interactiveMode Always, NG_ELIMIT, NG_ENOMEM.
 */
NG_NODISCARD ng_status kc_parse_exec(const struct ng_yaml_node *u, const char *where,
				     const char *user, const char *base_dir,
				     const struct kube_config *c,
				     const struct ng_yaml_node *cluster,
				     struct kube_exec_cred **ret, struct ng_err *err);

#endif
