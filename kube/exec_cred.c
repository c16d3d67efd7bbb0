/* kubeconfig exec credential plugins (kube/exec_cred.h): the answer's parser, the shared cache
 * and the run of the plugin itself. */
/* posix_spawn_file_actions_addclosefrom_np, POSIX_SPAWN_SETSID and environ are GNU's in glibc. */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier,cert-dcl37-c) */
#include "kube/exec_cred.h"

#include "common/arena.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/jw.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct kube_exec_cred {
	struct kube_exec_spec spec; /* immutable after create */
	_Atomic long refs;

	pthread_mutex_t mu; /* guards everything below */
	pthread_cond_t cv;  /* signalled when a run ends */
	bool running;
	uint64_t runs; /* plugin starts */
	uint64_t gen;  /* generation of the cached answer; 0 = none */
	bool have;     /* ans holds a usable credential */
	struct kube_exec_answer ans;
	int64_t use_until_mono_us; /* INT64_MAX: no expiry */
	ng_status last_st;         /* the last run's failure, handed to those who waited for it */
	struct ng_err last_err;
	int64_t timeout_ms;
};

static void wipe_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		wipe_free(v[i]);
	free(v);
}

void kube_exec_spec_finish(struct kube_exec_spec *s)
{
	if (!s)
		return;
	free(s->command);
	free_list(s->args, s->nargs);
	free_list(s->env, s->nenv);
	free(s->api_version);
	free(s->install_hint);
	free(s->cluster_json);
	free(s->user);
	memset(s, 0, sizeof(*s));
}

void kube_exec_answer_finish(struct kube_exec_answer *a)
{
	if (!a)
		return;
	wipe_free(a->token);
	free(a->cert_pem);
	wipe_free(a->key_pem);
	memset(a, 0, sizeof(*a));
}

/* ---- the answer ------------------------------------------------------------------------ */

static ng_status dup_field(const cJSON *status, const char *key, char **ret, struct ng_err *err)
{
	const cJSON *v = ng_json_get(status, key);
	*ret = NULL;
	if (!v || cJSON_IsNull(v))
		return NG_OK;
	if (!cJSON_IsString(v))
		return ng_err_set(err, NG_EPARSE, 0, "ExecCredential: status.%s: must be a string",
				  key);
	if (!v->valuestring[0])
		return NG_OK;
	*ret = strdup(v->valuestring);
	return *ret ? NG_OK : ng_err_set(err, NG_ENOMEM, 0, "out of memory");
}

static ng_status check_answer(const struct kube_exec_answer *a, struct ng_err *err)
{
	if (a->token)
		for (const char *p = a->token; *p; p++)
			if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
				return ng_err_set(err, NG_EPARSE, 0,
						  "ExecCredential: status.token: byte 0x%02x is "
						  "not allowed in a token",
						  (unsigned char)*p);
	if (!a->cert_pem != !a->key_pem)
		return ng_err_set(err, NG_EPARSE, 0,
				  "ExecCredential: status.clientCertificateData and "
				  "status.clientKeyData must be set together");
	if (a->cert_pem &&
	    (!strstr(a->cert_pem, "-----BEGIN ") || !strstr(a->key_pem, "-----BEGIN ")))
		return ng_err_set(err, NG_EPARSE, 0,
				  "ExecCredential: status.clientCertificateData and clientKeyData "
				  "must be PEM");
	if (!a->token && !a->cert_pem)
		return ng_err_set(err, NG_EPARSE, 0,
				  "ExecCredential: status has neither token nor "
				  "clientCertificateData and clientKeyData");
	return NG_OK;
}

static ng_status read_status(const cJSON *status, struct kube_exec_answer *a, struct ng_err *err)
{
	ng_status st = dup_field(status, "token", &a->token, err);
	if (st == NG_OK)
		st = dup_field(status, "clientCertificateData", &a->cert_pem, err);
	if (st == NG_OK)
		st = dup_field(status, "clientKeyData", &a->key_pem, err);
	if (st != NG_OK)
		return st;
	const cJSON *exp = ng_json_get(status, "expirationTimestamp");
	if (exp && !cJSON_IsNull(exp)) {
		if (!cJSON_IsString(exp) ||
		    ng_parse_rfc3339_ms(exp->valuestring, strlen(exp->valuestring),
					&a->expires_wall_ms) != NG_OK)
			return ng_err_set(err, NG_EPARSE, 0,
					  "ExecCredential: status.expirationTimestamp: expected "
					  "an RFC 3339 time");
		if (a->expires_wall_ms == 0)
			a->expires_wall_ms = 1; /* 0 means "none" */
	}
	return check_answer(a, err);
}

ng_status kube_exec_cred_parse(const char *buf, size_t len, const char *api_version,
			       struct kube_exec_answer *ret, struct ng_err *reterr)
{
	if ((!buf && len) || !api_version || !ret)
		return ng_err_set(reterr, NG_EINVAL, 0, "ExecCredential: missing argument");
	if (len > KUBE_EXEC_MAX_STDOUT_BYTES)
		return ng_err_set(reterr, NG_ELIMIT, 0, "ExecCredential: larger than %u bytes",
				  KUBE_EXEC_MAX_STDOUT_BYTES);
	struct ng_arena *arena = ng_arena_create(8u * KUBE_EXEC_MAX_STDOUT_BYTES);
	if (!arena)
		return ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
	cJSON *root = NULL;
	struct kube_exec_answer a = {0};
	struct ng_err e = {0};
	ng_status st = ng_json_parse(buf ? buf : "", len, arena, &root, &e);
	if (st != NG_OK) {
		st = ng_err_set(reterr, st, e.offset, "ExecCredential: not JSON: %s", e.msg);
		goto out;
	}
	const char *kind = ng_json_str(root, "kind"), *av = ng_json_str(root, "apiVersion");
	const cJSON *status = ng_json_get(root, "status");
	if (!cJSON_IsObject(root) || !kind || strcmp(kind, "ExecCredential") != 0)
		st =
		    ng_err_set(reterr, NG_EPARSE, 0, "ExecCredential: kind must be ExecCredential");
	else if (!av || strcmp(av, api_version) != 0)
		st = ng_err_set(reterr, NG_EPARSE, 0,
				"ExecCredential: apiVersion \"%.60s\" is not the kubeconfig's "
				"\"%s\"",
				av ? av : "", api_version);
	else if (!cJSON_IsObject(status))
		st = ng_err_set(reterr, NG_EPARSE, 0, "ExecCredential: status: required");
	else
		st = read_status(status, &a, reterr);
	if (st == NG_OK) {
		*ret = a;
		memset(&a, 0, sizeof(a));
	}
out:
	kube_exec_answer_finish(&a);
	ng_arena_destroy(arena);
	return st;
}

/* ---- running the plugin ---------------------------------------------------------------- */

/* KUBERNETES_EXEC_INFO: the ExecCredential the plugin is given, as kubectl writes it. */
static ng_status exec_info(const struct kube_exec_spec *s, struct ng_buf *b, struct ng_err *err)
{
	struct ng_jw w;
	ng_jw_init(&w, b);
	ng_jw_obj(&w);
	ng_jw_kstr(&w, "kind", "ExecCredential");
	ng_jw_kstr(&w, "apiVersion", s->api_version);
	ng_jw_key(&w, "spec");
	ng_jw_obj(&w);
	if (s->cluster_json) {
		ng_jw_key(&w, "cluster");
		ng_jw_raw(&w, s->cluster_json, strlen(s->cluster_json));
	}
	ng_jw_kbool(&w, "interactive", false);
	ng_jw_obj_end(&w);
	ng_jw_obj_end(&w);
	ng_status st = ng_jw_finish(&w);
	if (st == NG_OK)
		st = ng_buf_append(b, "", 1);
	if (st == NG_ELIMIT)
		return ng_err_set(err, st, 0,
				  "credential plugin %s: KUBERNETES_EXEC_INFO would be larger than "
				  "%u bytes (the cluster's CA and exec extension)",
				  s->command, KUBE_EXEC_MAX_INFO_BYTES);
	if (st != NG_OK)
		return ng_err_set(err, st, 0, "credential plugin %s: out of memory", s->command);
	return NG_OK;
}

static bool env_overridden(const struct kube_exec_spec *s, const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t n = eq ? (size_t)(eq - entry) : strlen(entry);
	if (n == 20 && memcmp(entry, "KUBERNETES_EXEC_INFO", 20) == 0)
		return true;
	for (size_t i = 0; i < s->nenv; i++)
		if (strncmp(s->env[i], entry, n) == 0 && s->env[i][n] == '=')
			return true;
	return false;
}

/* nodegate's environment, the spec's env on top, then KUBERNETES_EXEC_INFO. Entries are
 * borrowed but for the last (@info, owned by the caller); the array is malloc'd. */
static char **child_env(const struct kube_exec_spec *s, char *info)
{
	size_t n = 0;
	for (char **e = environ; e && *e; e++)
		n++;
	char **v = calloc(n + s->nenv + 2, sizeof(*v));
	if (!v)
		return NULL;
	size_t o = 0;
	for (char **e = environ; e && *e; e++)
		if (!env_overridden(s, *e))
			v[o++] = *e;
	for (size_t i = 0; i < s->nenv; i++)
		v[o++] = s->env[i];
	v[o++] = info;
	v[o] = NULL;
	return v;
}

struct run {
	pid_t pid;
	int out_fd, err_fd;
	struct ng_buf out;
	char tail[KUBE_EXEC_STDERR_TAIL_BYTES];
	size_t tail_len;
	bool reaped; /* the plugin exited and was waited for: status holds how */
	int status;
};

static void keep_tail(struct run *r, const char *p, size_t n)
{
	if (n >= sizeof(r->tail)) {
		memcpy(r->tail, p + n - sizeof(r->tail), sizeof(r->tail));
		r->tail_len = sizeof(r->tail);
		return;
	}
	if (r->tail_len + n > sizeof(r->tail)) {
		size_t drop = r->tail_len + n - sizeof(r->tail);
		memmove(r->tail, r->tail + drop, r->tail_len - drop);
		r->tail_len -= drop;
	}
	memcpy(r->tail + r->tail_len, p, n);
	r->tail_len += n;
}

/* Whether @cmd names an executable file: as given when it has a '/', else in a directory of
 * $PATH (as kubectl looks a plugin up). Checked before spawning because where posix_spawnp
 * cannot report a failed exec (an emulated vfork), a missing command would read as a plugin
 * that exited with status 127, and the install hint would be lost. */
static bool command_exists(const char *cmd)
{
	if (strchr(cmd, '/'))
		return access(cmd, X_OK) == 0;
	/* NOLINTNEXTLINE(concurrency-mt-unsafe): nodegate never sets its environment */
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	char full[4096];
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		size_t want = n + (n ? 1 : 0) + strlen(cmd);
		ng_fmt(full, sizeof(full), "%.*s%s%s", (int)n, p, n ? "/" : "", cmd);
		if (want < sizeof(full) && access(full, X_OK) == 0)
			return true;
		if (!colon)
			return false;
		p = colon + 1;
	}
}

/* The end of stderr as one printable line, for a message. */
static void tail_text(const struct run *r, char *out, size_t cap)
{
	size_t a = 0, b = r->tail_len, o = 0;
	while (b > a && (unsigned char)r->tail[b - 1] <= ' ')
		b--;
	if (b - a > cap - 1)
		a = b - (cap - 1);
	for (size_t i = a; i < b && o + 1 < cap; i++) {
		unsigned char ch = (unsigned char)r->tail[i];
		out[o++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
	}
	out[o] = '\0';
}

static ng_status spawn(const struct kube_exec_spec *s, char **envp, struct run *r,
		       struct ng_err *err)
{
	int po[2] = {-1, -1}, pe[2] = {-1, -1};
	if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
		for (int i = 0; i < 2; i++)
			if (po[i] >= 0)
				(void)close(po[i]);
		return ng_err_set(err, NG_EIO, 0, "credential plugin %s: pipe: %s", s->command,
				  ng_strerror(errno));
	}
	char **argv = calloc(s->nargs + 2, sizeof(*argv));
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int rc = argv ? 0 : ENOMEM;
	bool fa_ok = false, at_ok = false;
	if (!rc)
		fa_ok = (rc = posix_spawn_file_actions_init(&fa)) == 0;
	if (!rc)
		at_ok = (rc = posix_spawnattr_init(&at)) == 0;
	if (!rc) {
		argv[0] = s->command;
		for (size_t i = 0; i < s->nargs; i++)
			argv[i + 1] = s->args[i];
		sigset_t none, all;
		sigemptyset(&none);
		sigfillset(&all);
		rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		rc = rc ? rc : posix_spawn_file_actions_adddup2(&fa, po[1], 1);
		rc = rc ? rc : posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
		rc = rc ? rc : posix_spawn_file_actions_addclosefrom_np(&fa, 3);
		rc = rc ? rc : posix_spawnattr_setsigmask(&at, &none);
		rc = rc ? rc : posix_spawnattr_setsigdefault(&at, &all);
		rc = rc ? rc
			: posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
							    POSIX_SPAWN_SETSIGDEF |
							    POSIX_SPAWN_SETSID);
	}
	if (!rc && !command_exists(s->command))
		rc = ENOENT;
	if (!rc)
		rc = (strchr(s->command, '/') ? posix_spawn : posix_spawnp)(&r->pid, s->command,
									    &fa, &at, argv, envp);
	if (fa_ok)
		(void)posix_spawn_file_actions_destroy(&fa);
	if (at_ok)
		(void)posix_spawnattr_destroy(&at);
	free(argv);
	(void)close(po[1]);
	(void)close(pe[1]);
	if (rc) {
		(void)close(po[0]);
		(void)close(pe[0]);
		if (rc == ENOENT)
			return ng_err_set(
			    err, NG_ENOTFOUND, 0,
			    "credential plugin %s of user \"%.60s\" not found%s%.400s", s->command,
			    s->user, s->install_hint ? ": " : "",
			    s->install_hint ? s->install_hint : "");
		return ng_err_set(err, rc == ENOMEM ? NG_ENOMEM : NG_EIO, 0,
				  "credential plugin %s: cannot start it: %s", s->command,
				  ng_strerror(rc));
	}
	r->out_fd = po[0];
	r->err_fd = pe[0];
	return NG_OK;
}

/* Reads what is ready on @fd; false at end of file or on an error. */
static bool drain_fd(struct run *r, int fd, bool is_out, ng_status *st)
{
	char b[4096];
	ssize_t n = read(fd, b, sizeof(b));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	if (!is_out) {
		keep_tail(r, b, (size_t)n);
		return true;
	}
	ng_status a = ng_buf_append(&r->out, b, (size_t)n);
	if (a != NG_OK)
		*st = a;
	return a == NG_OK;
}

/* Reads stdout and stderr until both end, stdout overflows or @deadline_us passes. Once stdout
 * has ended and the plugin has exited, a stderr still held open (by something it left running)
 * is not waited for: the answer is complete. */
static ng_status pump(struct run *r, int64_t deadline_us)
{
	bool out_open = true, err_open = true;
	while (out_open || err_open) {
		if (!out_open && !r->reaped && waitpid(r->pid, &r->status, WNOHANG) == r->pid)
			r->reaped = true;
		if (!out_open && r->reaped)
			break;
		int64_t left_ms = (deadline_us - ng_now_mono_us()) / 1000;
		if (left_ms <= 0)
			return NG_ETIMEDOUT;
		int wait_ms = out_open ? 1000 : 20;
		struct pollfd p[2] = {{out_open ? r->out_fd : -1, POLLIN, 0},
				      {err_open ? r->err_fd : -1, POLLIN, 0}};
		int k = poll(p, 2, left_ms > wait_ms ? wait_ms : (int)left_ms);
		if (k < 0 && errno != EINTR)
			return NG_EIO;
		if (k <= 0)
			continue;
		ng_status st = NG_OK;
		if (out_open && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			out_open = drain_fd(r, r->out_fd, true, &st);
		if (st != NG_OK)
			return st;
		if (err_open && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			err_open = drain_fd(r, r->err_fd, false, &st);
	}
	return NG_OK;
}

/* Waits for the child until @deadline_us; kills its whole session after that. */
static int reap(struct run *r, int64_t deadline_us, bool kill_now)
{
	int status = 0;
	if (r->reaped && !kill_now)
		return r->status;
	if (kill_now)
		(void)kill(-r->pid, SIGKILL);
	if (r->reaped) /* only what it left running was still there */
		return r->status;
	for (;;) {
		pid_t w = waitpid(r->pid, &status, WNOHANG);
		if (w == r->pid || (w < 0 && errno != EINTR))
			return w == r->pid ? status : -1;
		if (ng_now_mono_us() > deadline_us) {
			(void)kill(-r->pid, SIGKILL);
			deadline_us = INT64_MAX;
		}
		struct timespec ts = {0, 5 * 1000 * 1000};
		(void)nanosleep(&ts, NULL);
	}
}

static ng_status run_error(const struct kube_exec_spec *s, const struct run *r, ng_status st,
			   int status, int64_t timeout_ms, struct ng_err *err)
{
	char tail[KUBE_EXEC_STDERR_TAIL_BYTES + 1];
	tail_text(r, tail, sizeof(tail));
	const char *sep = tail[0] ? "; its stderr ends: " : " (nothing on stderr)";
	if (st == NG_ETIMEDOUT)
		return ng_err_set(err, st, 0,
				  "credential plugin %s: no answer within %lld ms, killed%s%.300s",
				  s->command, (long long)timeout_ms, sep, tail);
	if (st == NG_ELIMIT)
		return ng_err_set(
		    err, st, 0, "credential plugin %s: printed more than %u bytes, killed%s%.300s",
		    s->command, KUBE_EXEC_MAX_STDOUT_BYTES, sep, tail);
	if (st != NG_OK)
		return ng_err_set(err, st, 0, "credential plugin %s: reading its output failed",
				  s->command);
	if (status < 0)
		return ng_err_set(err, NG_EIO, 0, "credential plugin %s: lost its exit status",
				  s->command);
	if (WIFSIGNALED(status))
		return ng_err_set(err, NG_EIO, 0,
				  "credential plugin %s: killed by signal %d%s%.300s", s->command,
				  WTERMSIG(status), sep, tail);
	if (WEXITSTATUS(status) != 0)
		return ng_err_set(err, NG_EIO, 0,
				  "credential plugin %s: exited with status %d%s%.300s", s->command,
				  WEXITSTATUS(status), sep, tail);
	return NG_OK;
}

/* Runs the plugin once and parses its answer into @ret. */
static ng_status run_plugin(const struct kube_exec_spec *s, int64_t timeout_ms,
			    struct kube_exec_answer *ret, struct ng_err *err)
{
	struct ng_buf info;
	ng_buf_init(&info, KUBE_EXEC_MAX_INFO_BYTES);
	struct run r = {.pid = -1, .out_fd = -1, .err_fd = -1};
	ng_buf_init(&r.out, KUBE_EXEC_MAX_STDOUT_BYTES);
	char *info_env = NULL, **envp = NULL;
	ng_status st = ng_buf_append(&info, "KUBERNETES_EXEC_INFO=", 21);
	st = st == NG_OK ? exec_info(s, &info, err) : ng_err_set(err, st, 0, "out of memory");
	if (st == NG_OK) {
		info_env = info.data;
		envp = child_env(s, info_env);
		st =
		    envp ? spawn(s, envp, &r, err) : ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	}
	if (st != NG_OK)
		goto out;
	int64_t deadline_us = ng_now_mono_us() + timeout_ms * 1000;
	ng_status pst = pump(&r, deadline_us);
	(void)close(r.out_fd);
	(void)close(r.err_fd);
	int status = reap(&r, deadline_us, pst != NG_OK);
	st = run_error(s, &r, pst, status, timeout_ms, err);
	if (st == NG_OK) {
		struct ng_err e = {0};
		st = kube_exec_cred_parse(r.out.data, r.out.len, s->api_version, ret, &e);
		if (st != NG_OK) {
			char tail[KUBE_EXEC_STDERR_TAIL_BYTES + 1];
			tail_text(&r, tail, sizeof(tail));
			st = ng_err_set(err, st, 0, "credential plugin %s: %s%s%.300s", s->command,
					e.msg, tail[0] ? "; its stderr ends: " : "", tail);
		}
	}
out:
	free(envp);
	ng_buf_finish(&info);
	if (r.out.data)
		explicit_bzero(r.out.data, r.out.len);
	ng_buf_finish(&r.out);
	return st;
}

/* ---- the shared cache ------------------------------------------------------------------- */

struct kube_exec_cred *kube_exec_cred_create(struct kube_exec_spec *spec)
{
	struct kube_exec_cred *e = calloc(1, sizeof(*e));
	if (!e || pthread_mutex_init(&e->mu, NULL) != 0) {
		free(e);
		kube_exec_spec_finish(spec);
		return NULL;
	}
	if (pthread_cond_init(&e->cv, NULL) != 0) {
		pthread_mutex_destroy(&e->mu);
		free(e);
		kube_exec_spec_finish(spec);
		return NULL;
	}
	e->spec = *spec;
	memset(spec, 0, sizeof(*spec));
	e->refs = 1;
	e->timeout_ms = KUBE_EXEC_TIMEOUT_MS;
	return e;
}

struct kube_exec_cred *kube_exec_cred_ref(struct kube_exec_cred *e)
{
	if (e)
		e->refs++;
	return e;
}

void kube_exec_cred_unref(struct kube_exec_cred *e)
{
	if (!e || --e->refs > 0)
		return;
	kube_exec_answer_finish(&e->ans);
	kube_exec_spec_finish(&e->spec);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

const char *kube_exec_cred_command(const struct kube_exec_cred *e)
{
	return e->spec.command;
}

void kube_exec_cred_set_timeout_ms(struct kube_exec_cred *e, int64_t ms)
{
	pthread_mutex_lock(&e->mu);
	e->timeout_ms = ms;
	pthread_mutex_unlock(&e->mu);
}

uint64_t kube_exec_cred_runs(struct kube_exec_cred *e)
{
	pthread_mutex_lock(&e->mu);
	uint64_t n = e->runs;
	pthread_mutex_unlock(&e->mu);
	return n;
}

static char *dup_opt(const char *s, bool *ok)
{
	if (!s)
		return NULL;
	char *p = strdup(s);
	*ok = *ok && p;
	return p;
}

/* Copies the cached answer into @ret; called with mu held. */
static ng_status copy_cached(struct kube_exec_cred *e, struct kube_exec_answer *ret,
			     uint64_t *ret_gen, struct ng_err *err)
{
	bool ok = true;
	struct kube_exec_answer a = {dup_opt(e->ans.token, &ok), dup_opt(e->ans.cert_pem, &ok),
				     dup_opt(e->ans.key_pem, &ok), e->ans.expires_wall_ms};
	if (!ok) {
		kube_exec_answer_finish(&a);
		return ng_err_set(err, NG_ENOMEM, 0, "out of memory");
	}
	*ret = a;
	if (ret_gen)
		*ret_gen = e->gen;
	return NG_OK;
}

/* When a fresh answer stops being used: its expiry less a margin of at most half its life. */
static int64_t use_until(const struct kube_exec_answer *a)
{
	if (!a->expires_wall_ms)
		return INT64_MAX;
	int64_t life_ms = a->expires_wall_ms - ng_now_wall_ms();
	int64_t margin_ms =
	    life_ms / 2 < KUBE_EXEC_EXPIRY_MARGIN_MS ? life_ms / 2 : KUBE_EXEC_EXPIRY_MARGIN_MS;
	if (margin_ms < 0)
		margin_ms = 0;
	return ng_now_mono_us() + (life_ms - margin_ms) * 1000;
}

/* Runs the plugin with mu released and stores what it said; called with mu held. */
static void refresh(struct kube_exec_cred *e)
{
	e->running = true;
	e->runs++;
	int64_t timeout_ms = e->timeout_ms;
	pthread_mutex_unlock(&e->mu);
	struct kube_exec_answer a = {0};
	struct ng_err err = {0};
	ng_status st = run_plugin(&e->spec, timeout_ms, &a, &err);
	pthread_mutex_lock(&e->mu);
	e->running = false;
	e->last_st = st;
	e->last_err = err;
	if (st == NG_OK) {
		kube_exec_answer_finish(&e->ans);
		e->ans = a;
		e->have = true;
		e->gen++;
		e->use_until_mono_us = use_until(&a);
	}
	pthread_cond_broadcast(&e->cv);
}

ng_status kube_exec_cred_get(struct kube_exec_cred *e, struct kube_exec_answer *ret,
			     uint64_t *ret_gen, struct ng_err *reterr)
{
	if (!e || !ret)
		return ng_err_set(reterr, NG_EINVAL, 0, "credential plugin: missing argument");
	pthread_mutex_lock(&e->mu);
	ng_status st;
	for (;;) {
		if (e->have && ng_now_mono_us() < e->use_until_mono_us) {
			st = copy_cached(e, ret, ret_gen, reterr);
			break;
		}
		if (!e->running) {
			refresh(e);
			st = e->last_st;
			if (st == NG_OK)
				st = copy_cached(e, ret, ret_gen, reterr);
			else if (reterr)
				*reterr = e->last_err;
			break;
		}
		/* Another thread runs it: its answer, or its failure, is ours too. */
		uint64_t runs = e->runs;
		while (e->running && e->runs == runs)
			pthread_cond_wait(&e->cv, &e->mu);
		if (!e->running && e->last_st != NG_OK) {
			st = e->last_st;
			if (reterr)
				*reterr = e->last_err;
			break;
		}
	}
	pthread_mutex_unlock(&e->mu);
	return st;
}

void kube_exec_cred_invalidate(struct kube_exec_cred *e, uint64_t gen)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->mu);
	if (e->gen == gen)
		e->have = false;
	pthread_mutex_unlock(&e->mu);
}
