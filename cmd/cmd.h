/* What the files of cmd/ share: the serve flags and one entry point per subcommand (main.c
 * dispatches; flags.c, serve.c, certs.c, check.c).
 *
 * Ownership: strings in struct cmd_serve_config are borrowed from argv, the environment or the
 * flag table's defaults, all of which live as long as the process; nothing in it is freed.
 * Threads: everything here runs on the main thread. cmd_flags_parse() reads the
 * environment, so it runs before any other thread starts.
 * Errors: the subcommands print what is wrong to stderr themselves and return the process's
 * exit status. */
#ifndef NG_CMD_CMD_H
#define NG_CMD_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Repeatable flags hold at most this many values: far more than any deployment passes, and a
 * fixed array keeps the flag table free of allocation. */
#define CMD_MAX_MULTI 64

/* The values of a repeatable flag, in the order given. */
struct cmd_multi {
	const char *v[CMD_MAX_MULTI];
	size_t n;
};

/* Flags one subcommand takes at most. */
#define CMD_MAX_OPTS 64

/* A row of a subcommand's flag table, as cmd_opts_parse() reads it. */
enum cmd_opt_type {
	CMD_OPT_STR,   /* dst: const char ** */
	CMD_OPT_INT,   /* dst: int64_t *, within min..max */
	CMD_OPT_MULTI, /* dst: struct cmd_multi *, repeatable */
	CMD_OPT_BOOL,  /* dst: int64_t *, 0 or 1; "--name" alone is true */
};

struct cmd_opt {
	const char *name; /* without the leading "--" */
	enum cmd_opt_type type;
	void *dst;       /* borrowed; holds the default before parsing */
	const char *arg; /* the value's placeholder in --help: "DIR" */
	const char *doc; /* one paragraph for --help */
	int64_t min, max;
	const char *env; /* NG_...: read when the flag is not given; NULL for none */
	const char *def; /* with env: the default as --help shows it (NULL for none); without env,
			    --help shows dst's value */
};

/* nodegate serve's configuration: one field per entry of the flag table (cmd/flags.c). Integer
 * and boolean flags are int64_t (booleans 0 or 1); an unset string is NULL. */
struct cmd_serve_config {
	const char *listen;
	const char *tls_cert, *tls_key;
	struct cmd_multi snapshots;
	const char *log_level;
	const char *eviction_mode;
	struct cmd_multi exempt_users;
	struct cmd_multi deciders;
	int64_t retry_after_seconds;
	int64_t threads;
	int64_t max_connections;
	int64_t connection_timeout_seconds;
	int64_t header_timeout_seconds;
	int64_t body_timeout_seconds;
	int64_t max_connections_per_address;
	int64_t shutdown_grace_seconds;
	const char *port_file;
	const char *kubeconfig;
	const char *kube_context;
	int64_t allow_insecure_kube_tls;
	int64_t watch_batch_ms;
	int64_t watch_list; /* stream lists where the API server offers it (--watch-list) */
	int64_t tls_reload_seconds;
	int64_t gate;
	const char *lease_namespace;
	const char *lease_name;
	const char *admin_listen;
	const char *admin_auth;
	struct cmd_multi admin_hosts;
	int64_t admin_max_plans;
	int64_t plan_max_rounds;
	int64_t plan_max_decisions;
	int64_t plan_max_seconds;
	const char *client_ca;
	int64_t webhook_port_metrics;
	int64_t auto_request_per_minute;
	const char *identity;
	int64_t self_signed;
	const char *ca_secret; /* NS/NAME */
	const char *service;   /* NS/NAME */
	int64_t cert_seconds;
	const char *webhook_selector;
	const char *self_namespace;            /* drain only */
	const char *self_selector;             /* drain only */
	const char *operation_service_account; /* drain only */
	const char *operation_namespace;       /* drain only */
};

/* The subcommands that take flags from the table. */
enum cmd_kind {
	CMD_SERVE,
	CMD_DRAIN,
};

/**
 * Fills @c (caller storage) from the flag table's defaults, then the environment variables,
 * then @argc/@argv (serve's arguments, after the subcommand), each overriding the one before,
 * through cmd_opts_parse(). @argv is borrowed and must outlive @c. Returns 0, or -1 after
 * printing the error (@c is then partly filled and must not be used). `--help` or `-h` prints
 * @cmd's usage and flags to stdout and exits the process with 0.
 */
int cmd_flags_parse(enum cmd_kind cmd, int argc, char **argv, struct cmd_serve_config *c);

/**
 * The one flag parser of every subcommand. Parses @argc/@argv (borrowed; the arguments after
 * subcommand @cmd, e.g. "certs") against the table @opts (@n entries, at most CMD_MAX_OPTS):
 * "--name VALUE" or "--name=VALUE" ("--name" alone for a boolean; "-o VALUE" is "--output
 * VALUE", as kubectl spells it); a flag with an environment
 * variable not given on the command line is read from it first. Every refusal starts with
 * "nodegate @cmd" (and the variable, for a value from the environment) and says which flag and
 * why, an integer's its range ("nodegate certs: --days \"3651\": must be an integer between 1
 * and 3650"). Returns 0; 1 after printing @cmd's usage and flags to stdout for --help or -h,
 * wherever they are but not as a flag's value (exit with 0, nothing parsed); or -1 after
 * printing the error to stderr (the @dst of flags read so far are written).
 */
int cmd_opts_parse(const char *cmd, const struct cmd_opt *opts, size_t n, int argc, char **argv);

/**
 * @val as an integer in @min..@max into *@ret for the flag --@name; -1 after printing
 * "@prefix: --@name \"@val\": must be an integer between @min and @max" to stderr (*@ret
 * untouched). The one message every integer flag of every subcommand gives.
 */
int cmd_parse_int_flag(const char *prefix, const char *name, const char *val, int64_t min,
		       int64_t max, int64_t *ret);

/**
 * Time flag --@name's value @val (RFC 3339) as wall ms into *@ret; now when @val is NULL. -1
 * after printing "@prefix: --@name \"@val\": expected an RFC 3339 time, e.g. ..." to stderr.
 */
int cmd_parse_time_flag(const char *prefix, const char *name, const char *val, int64_t *ret);

/** "ADDR:PORT" or "[V6]:PORT" into @host (@hostcap bytes) and @port. 0, or -1 if malformed. */
int cmd_split_listen(const char *s, char *host, size_t hostcap, uint16_t *port);

/** Writes @port and a newline to @path through a rename. 0, or -1 with errno. */
int cmd_write_port_file(const char *path, uint16_t port);

/** Applies --log-level @level. 0, or -1 after printing what is wrong. */
int cmd_set_log_level(const char *level);

/** This replica's name into @out (@cap bytes): --identity @flag, else hostname_pid. */
void cmd_identity(const char *flag, char *out, size_t cap);

/** Prints `nodegate --help` to @f (borrowed): every subcommand with one line each. */
void cmd_usage(FILE *f);

/** Whether @name is a subcommand cmd_usage() lists. */
bool cmd_known(const char *name);

/** Prints docs/config.md, generated from the flag table, to stdout. */
void cmd_dump_config_doc(void);

/**
 * nodegate serve: the webhooks, the gate and /metrics until SIGTERM or SIGINT. @argv (borrowed)
 * holds the arguments after "serve". curl_global_init() must have run. Returns the exit status:
 * 0 after a signal, 1 when something fails to start, 2 for a bad flag.
 */
int cmd_serve(int argc, char **argv);

/**
 * nodegate drain: the drainer and its probes until SIGTERM or SIGINT. As cmd_serve().
 */
int cmd_drain(int argc, char **argv);

/**
 * nodegate certs: writes a CA and a serving certificate into --out and prints the CA bundle in
 * base64. @argv (borrowed) holds the arguments after "certs". Returns 0, 1 (a file could not be
 * written) or 2 (bad arguments, generation failed).
 */
int cmd_certs(int argc, char **argv);

/**
 * nodegate check: decides a NodeDisruption against snapshot files offline and prints the
 * decision. @argv (borrowed) holds the arguments after "check". Returns 0 (would be Granted),
 * 1 (would not) or 2 (invalid, or a file cannot be read).
 */
/* nodegate status and nodegate why: what waits and why (cmd/status.c). */
int cmd_status(int argc, char **argv);
int cmd_why(int argc, char **argv);
/* nodegate plan: the what-if planner (cmd/plan.c). */
int cmd_plan(int argc, char **argv);
int cmd_check(int argc, char **argv);

#endif
