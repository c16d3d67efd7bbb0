/* Where the Kubernetes API server is and how to authenticate to it: a kubeconfig file (the
 * subset of client-go's clientcmd that a controller needs) or the in-cluster service account
 * (docs/kubernetes-client.md, reference kubernetes-interfaces.md §3.5-3.6).
 *
 * Ownership: every string in struct kube_config is owned by the struct (malloc'd) and freed by
 * kube_config_finish(). Threads: the functions are reentrant and keep no global state; the
 * resolvers read the environment (getenv), so do not call them while another thread changes it.
 * Errors: NG_EPARSE (malformed YAML or field), NG_ELIMIT (over a limit below), NG_ENOTFOUND (no
 * such context/cluster/user, no configuration at all), NG_EINVAL (a feature nodegate refuses),
 * NG_EIO (a referenced file cannot be read), NG_ENOMEM. The ng_err message names the field. */
#ifndef NG_KUBE_CONFIG_H
#define NG_KUBE_CONFIG_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>

/* Largest kubeconfig we read. Real ones, even with hundreds of contexts and inline certificates,
 * are tens of KiB; the cap bounds the parser's memory on a wrong path or hostile input. */
#define KUBE_CONFIG_MAX_BYTES (1024u * 1024u)

/* YAML nesting depth. A kubeconfig nests 4 deep (clusters[].cluster.extensions[] a little more);
 * 32 leaves room for extensions and stops deeply nested input before it costs anything. */
#define KUBE_CONFIG_MAX_DEPTH 32

/* Memory for the parsed YAML tree (nodes plus scalar copies). About 3x the input for real files;
 * 16 MiB refuses only pathological inputs such as a megabyte of one-character list items. */
#define KUBE_CONFIG_TREE_CAP_BYTES (16u * 1024u * 1024u)

/* Largest certificate-authority, client-certificate or client-key file. A full public CA bundle
 * (Debian's ca-certificates.crt) is about 220 KiB. */
#define KUBE_CONFIG_MAX_FILE_BYTES (1024u * 1024u)

/* Largest bearer token. Projected service-account JWTs are about 1 KiB, OIDC ID tokens a few
 * KiB; 64 KiB bounds a wrong tokenFile path. */
#define KUBE_CONFIG_MAX_TOKEN_BYTES (64u * 1024u)

/* Most files a KUBECONFIG list may merge. kubectl sets no limit; real lists name a handful. */
#define KUBE_CONFIG_MAX_FILES 64

struct kube_exec_cred;

struct kube_config {
	char *server;          /* "https://host:port[/prefix]", no trailing slash; never NULL after
				  a successful load */
	char *ca_pem;          /* CA bundle PEM; NULL = system roots */
	char *client_cert_pem; /* client certificate PEM; NULL when unused */
	char *client_key_pem;  /* its private key PEM; set exactly when client_cert_pem is */
	char *token;           /* static bearer token (or the initial in-cluster token); NULL */
	char *token_file;      /* re-read by the client at least every 60 s; NULL */
	bool insecure_skip_tls_verify;
	char *tls_server_name;       /* SNI and verification name; NULL = the server's host */
	char *ns;                    /* context or in-cluster namespace; "default" when unset */
	char *source;                /* for logs: "kubeconfig PATH[:PATH] (context NAME)" or
					"in-cluster" */
	struct kube_exec_cred *exec; /* the user's credential plugin (kube/exec_cred.h), one
					reference; NULL when the user has none */
};

/**
 * Parses the kubeconfig in @buf (@len bytes, no NUL needed) and selects @context (borrowed;
 * NULL = the file's current-context). Relative certificate-authority, client-certificate,
 * client-key and tokenFile paths are resolved against @base_dir (borrowed; NULL = the working
 * directory); those files are read now (tokenFile only to check it is readable).
 *
 * YAML is read by common/yaml.h (libyaml's event API); aliases are refused (billion laughs), as
 * are more than KUBE_CONFIG_MAX_BYTES, nesting deeper than KUBE_CONFIG_MAX_DEPTH, a second
 * document that is not empty, and users with auth-provider, username/password, impersonation or
 * exec interactiveMode Always (NG_EINVAL). A user's exec block becomes c->exec; the plugin is
 * not run here. On success fills
 * @ret (caller frees with kube_config_finish()); on failure @ret is untouched and @reterr
 * (optional) says what is wrong, e.g. `context "x" not found`. Any thread. This is also the
 * fuzz target's entry point.
 */
NG_NODISCARD ng_status kube_config_parse_kubeconfig(const char *buf, size_t len,
						    const char *base_dir, const char *context,
						    struct kube_config *ret, struct ng_err *reterr);

/**
 * Reads the kubeconfig file at @path (borrowed) and parses it as above, resolving relative paths
 * against the file's directory. NG_EIO when it cannot be read, NG_ELIMIT when larger than
 * KUBE_CONFIG_MAX_BYTES. @ret is written only on success.
 */
NG_NODISCARD ng_status kube_config_load_kubeconfig(const char *path, const char *context,
						   struct kube_config *ret, struct ng_err *reterr);

/**
 * The colon-separated @list of kubeconfig files (borrowed; $KUBECONFIG) merged as kubectl
 * merges them: missing files and empty entries are skipped; for clusters, contexts and users the
 * first file that defines a name wins; current-context comes from the first file that sets it
 * (@context overrides it); relative paths inside a file are resolved against that file's
 * directory. At most KUBE_CONFIG_MAX_FILES files (NG_ELIMIT), each as above. A context, cluster
 * or user named but defined nowhere is NG_ENOTFOUND naming it and the files; NG_ENOTFOUND too
 * when no file exists. Errors about one file start with its path. @ret is written only on
 * success.
 */
NG_NODISCARD ng_status kube_config_load_list(const char *list, const char *context,
					     struct kube_config *ret, struct ng_err *reterr);

/**
 * The in-cluster configuration (client-go InClusterConfig): server from
 * KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (an IPv6 host is bracketed), token file,
 * CA and namespace from @root (borrowed; "/" in production, a temporary directory in tests)
 * joined with var/run/secrets/kubernetes.io/serviceaccount/. The token is read once to check it
 * exists and kept as the initial token; token_file is set so the client re-reads it.
 * NG_ENOTFOUND when either variable is empty (not in a cluster), NG_EPARSE for a malformed
 * host or port, NG_EIO when the token or ca.crt cannot be read. @ret is written only on success.
 */
NG_NODISCARD ng_status kube_config_in_cluster(const char *root, struct kube_config *ret,
					      struct ng_err *reterr);

/**
 * Finds the configuration the way nodegate's docs describe: @kubeconfig_flag (borrowed, the
 * --kubeconfig value; NULL or "" = not given), else the files of the colon-separated
 * KUBECONFIG merged (kube_config_load_list(), when one of them exists), else in-cluster (root "/"),
 * else NG_ENOTFOUND with a message listing the three ways. @context (borrowed, NULL =
 * current-context) needs a kubeconfig: NG_EINVAL when only in-cluster is available. A configuration
 * with insecure-skip-tls-verify is refused with NG_EINVAL naming --allow-insecure-kube-tls unless
 * @allow_insecure. A user with an exec credential plugin has it run once here, so a missing or
 * failing plugin is this call's error (kube/exec_cred.h). @ret is written only on success.
 */
NG_NODISCARD ng_status kube_config_resolve(const char *kubeconfig_flag, const char *context,
					   bool allow_insecure, struct kube_config *ret,
					   struct ng_err *reterr);

/**
 * Reads the bearer token in the file at @path (borrowed): at most KUBE_CONFIG_MAX_TOKEN_BYTES,
 * surrounding whitespace trimmed as client-go does, and only bytes that may appear in an HTTP
 * header value without quoting (0x21-0x7e). On success *ret_token is a malloc'd string the caller
 * frees (wipe it first). NG_EIO (cannot open or read), NG_EINVAL (not a regular file), NG_ELIMIT,
 * NG_EPARSE (empty or bad bytes), NG_ENOMEM. Shared by the config loaders and kube_client's
 * periodic re-read. Any thread.
 */
NG_NODISCARD ng_status kube_config_read_token(const char *path, char **ret_token,
					      struct ng_err *reterr);

/** Frees every string (key material is wiped first) and zeroes @c. Accepts NULL and zeroed. */
void kube_config_finish(struct kube_config *c);

#endif
