#include "server/conns.h"

#include "common/buf.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/prom.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* The sweeper looks for expired deadlines this often: deadlines are whole seconds. */
#define SWEEP_MS 250
#define MAX_LISTS 64
#define ADDR_BUCKETS 1024

enum phase {
	PH_OPENING,  /* TLS handshake and the first request's headers */
	PH_BODY,     /* reading a request body */
	PH_HANDLING, /* nodegate is working on it: no deadline */
	PH_QUEUED,   /* the client is reading the response */
	PH_IDLE,     /* keep-alive, waiting for the next request */
};

/* Why a connection was closed by nodegate rather than by its client. */
enum reason {
	R_HEADER_TIMEOUT,
	R_BODY_TIMEOUT,
	R_SEND_TIMEOUT,
	R_IDLE_TIMEOUT,
	R_SHED,
	R_PER_ADDRESS,
	R_COUNT,
};
static const char *const reason_names[R_COUNT] = {
    "header_timeout", "body_timeout", "send_timeout", "idle_timeout", "shed", "per_address_limit",
};

struct addr_key {
	uint8_t bytes[16];
	uint8_t len;
};

struct addr_count {
	struct addr_count *next;
	struct addr_key key;
	unsigned n;
};

struct conn {
	struct conn *prev, *next; /* in the list, stalest first */
	struct srv_conn_list *list;
	int fd;
	enum phase phase;
	int64_t deadline_us; /* monotonic; 0 = none */
	bool closing;        /* shut down by nodegate: waiting for the daemon to close it */
	bool counted;        /* holds one count in the per-address table */
	int peer;            /* srv_conns_peer(): the daemon thread's alone, no lock */
	bool uncorked;       /* srv_conns_tcp_fd(): the daemon thread's alone */
	struct addr_key addr;
};

struct srv_conn_list {
	pthread_mutex_t mu;
	struct conn *head, *tail;
	unsigned n;
	unsigned shed_at; /* this long, the list sheds one connection per new one */
	struct srv_conns *t;
};

struct srv_conns {
	struct srv_conns_config cfg;
	struct srv_conn_list lists[MAX_LISTS];
	pthread_mutex_t addr_mu;
	struct addr_count *addrs[ADDR_BUCKETS];
	_Atomic uint64_t closed[R_COUNT];
	_Atomic int64_t open;
	pthread_t sweeper;
	bool sweeper_started;
	pthread_mutex_t stop_mu;
	pthread_cond_t stop_cv;
	bool stopping;
};

static void unlink_conn(struct srv_conn_list *l, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	c->prev = c->next = NULL;
}

static void append_conn(struct srv_conn_list *l, struct conn *c)
{
	c->prev = l->tail;
	c->next = NULL;
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
}

/* Shuts @c down for @why; the daemon sees the end of the stream and closes it. List locked. */
static void close_conn(struct srv_conns *t, struct conn *c, enum reason why)
{
	if (c->closing)
		return;
	c->closing = true;
	c->deadline_us = 0;
	(void)shutdown(c->fd, SHUT_RDWR);
	atomic_fetch_add_explicit(&t->closed[why], 1, memory_order_relaxed);
}

static int64_t deadline_of(const struct srv_conns *t, enum phase ph, int64_t now)
{
	unsigned s = 0;
	switch (ph) {
	case PH_OPENING:
		s = t->cfg.header_timeout_s;
		break;
	case PH_BODY:
	case PH_QUEUED:
		s = t->cfg.body_timeout_s;
		break;
	case PH_IDLE:
		s = t->cfg.idle_timeout_s;
		break;
	case PH_HANDLING:
		break;
	}
	return s ? now + (int64_t)s * 1000000 : 0;
}

static enum reason timeout_reason(enum phase ph)
{
	switch (ph) {
	case PH_OPENING:
		return R_HEADER_TIMEOUT;
	case PH_BODY:
		return R_BODY_TIMEOUT;
	case PH_QUEUED:
		return R_SEND_TIMEOUT;
	default:
		return R_IDLE_TIMEOUT;
	}
}

/* ---- connections per client address ---- */

static struct addr_key addr_key_of(struct MHD_Connection *mc)
{
	struct addr_key k = {{0}, 0};
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	if (sa && sa->sa_family == AF_INET) {
		memcpy(k.bytes, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		k.len = 4;
	} else if (sa && sa->sa_family == AF_INET6) {
		memcpy(k.bytes, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		k.len = 16;
	}
	return k;
}

static size_t addr_bucket(const struct addr_key *k)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (unsigned i = 0; i < k->len; i++)
		h = (h ^ k->bytes[i]) * 1099511628211ull;
	return (size_t)(h % ADDR_BUCKETS);
}

/* Counts one more connection from @k; false when that is over the limit (nothing counted) or
 * there is no memory for the count. */
static bool addr_acquire(struct srv_conns *t, const struct addr_key *k)
{
	struct addr_count **slot = &t->addrs[addr_bucket(k)];
	bool ok = false;
	pthread_mutex_lock(&t->addr_mu);
	struct addr_count *a = *slot;
	while (a && (a->key.len != k->len || memcmp(a->key.bytes, k->bytes, k->len) != 0))
		a = a->next;
	if (!a && (a = calloc(1, sizeof(*a))) != NULL) {
		a->key = *k;
		a->next = *slot;
		*slot = a;
	}
	if (a && a->n < t->cfg.per_address_limit) {
		a->n++;
		ok = true;
	}
	pthread_mutex_unlock(&t->addr_mu);
	return ok;
}

static void addr_release(struct srv_conns *t, const struct addr_key *k)
{
	struct addr_count **p = &t->addrs[addr_bucket(k)];
	pthread_mutex_lock(&t->addr_mu);
	while (*p && ((*p)->key.len != k->len || memcmp((*p)->key.bytes, k->bytes, k->len) != 0))
		p = &(*p)->next;
	struct addr_count *a = *p;
	if (a && --a->n == 0) {
		*p = a->next;
		free(a);
	}
	pthread_mutex_unlock(&t->addr_mu);
}

/* ---- the notifications ---- */

/* Room for @c: when the list is at the shedding mark, the stalest connection waiting on its
 * client goes. List locked. */
static void make_room(struct srv_conn_list *l)
{
	if (l->n < l->shed_at)
		return;
	for (struct conn *c = l->head; c; c = c->next) {
		if (!c->closing && c->phase != PH_HANDLING) {
			close_conn(l->t, c, R_SHED);
			return;
		}
	}
}

static void opened(struct srv_conn_list *l, struct MHD_Connection *mc, void **socket_context)
{
	struct srv_conns *t = l->t;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct conn *c = calloc(1, sizeof(*c));
	if (!c || !ci) {
		/* Untracked, it would escape every deadline: refuse it instead. */
		if (ci)
			(void)shutdown(ci->connect_fd, SHUT_RDWR);
		free(c);
		return;
	}
	c->list = l;
	c->fd = ci->connect_fd;
	c->phase = PH_OPENING;
	c->deadline_us = deadline_of(t, PH_OPENING, ng_now_mono_us());
	if (t->cfg.per_address_limit) {
		c->addr = addr_key_of(mc);
		c->counted = addr_acquire(t, &c->addr);
	}
	pthread_mutex_lock(&l->mu);
	make_room(l);
	append_conn(l, c);
	l->n++;
	if (t->cfg.per_address_limit && !c->counted)
		close_conn(t, c, R_PER_ADDRESS);
	pthread_mutex_unlock(&l->mu);
	atomic_fetch_add_explicit(&t->open, 1, memory_order_relaxed);
	*socket_context = c;
}

static void closed(struct conn *c)
{
	struct srv_conn_list *l = c->list;
	struct srv_conns *t = l->t;
	/* The daemon closes the socket after this returns: while the sweeper holds the lock, no
	 * socket it may shut down is closed (and its number reused) under it. */
	pthread_mutex_lock(&l->mu);
	unlink_conn(l, c);
	l->n--;
	pthread_mutex_unlock(&l->mu);
	if (c->counted)
		addr_release(t, &c->addr);
	atomic_fetch_sub_explicit(&t->open, 1, memory_order_relaxed);
	free(c);
}

void srv_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context, unsigned int toe)
{
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		opened(cls, c, socket_context);
	else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
		closed(*socket_context);
		*socket_context = NULL;
	}
}

static struct conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

int srv_conns_peer(struct MHD_Connection *mc)
{
	const struct conn *c = conn_of(mc);
	return c ? c->peer : 0;
}

void srv_conns_set_peer(struct MHD_Connection *mc, int v)
{
	struct conn *c = conn_of(mc);
	if (c)
		c->peer = v;
}

int srv_conns_tcp_fd(struct MHD_Connection *mc, bool *ret_first)
{
	struct conn *c = conn_of(mc);
	if (!c)
		return -1;
	if (ret_first) {
		*ret_first = !c->uncorked;
		c->uncorked = true;
	}
	return c->fd;
}

void srv_conns_event(struct MHD_Connection *mc, enum srv_conn_event ev)
{
	struct conn *c = conn_of(mc);
	if (!c)
		return;
	static const enum phase next[] = {
	    [SRV_CONN_HEADERS] = PH_BODY,
	    [SRV_CONN_HANDLING] = PH_HANDLING,
	    [SRV_CONN_QUEUED] = PH_QUEUED,
	    [SRV_CONN_DONE] = PH_IDLE,
	};
	struct srv_conn_list *l = c->list;
	pthread_mutex_lock(&l->mu);
	if (!c->closing) {
		c->phase = next[ev];
		c->deadline_us = deadline_of(l->t, c->phase, ng_now_mono_us());
		/* Progress: to the fresh end of the list, away from the shedding end. */
		unlink_conn(l, c);
		append_conn(l, c);
	}
	pthread_mutex_unlock(&l->mu);
}

/* ---- the sweeper ---- */

static void sweep(struct srv_conns *t)
{
	int64_t now = ng_now_mono_us();
	for (unsigned i = 0; i < t->cfg.ndaemons; i++) {
		struct srv_conn_list *l = &t->lists[i];
		pthread_mutex_lock(&l->mu);
		for (struct conn *c = l->head; c; c = c->next)
			if (c->deadline_us && now >= c->deadline_us)
				close_conn(t, c, timeout_reason(c->phase));
		pthread_mutex_unlock(&l->mu);
	}
}

static void *sweeper_main(void *arg)
{
	struct srv_conns *t = arg;
	pthread_mutex_lock(&t->stop_mu);
	while (!t->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += SWEEP_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&t->stop_cv, &t->stop_mu, &ts);
		if (t->stopping)
			break;
		pthread_mutex_unlock(&t->stop_mu);
		sweep(t);
		pthread_mutex_lock(&t->stop_mu);
	}
	pthread_mutex_unlock(&t->stop_mu);
	return NULL;
}

/* The length at which a list of @limit connections starts shedding: a reserve of 1/32 (1 to
 * 64) below its limit, so the daemon never refuses at accept. */
static unsigned shed_mark(unsigned limit)
{
	limit = limit ? limit : 1;
	unsigned reserve = limit / 32 < 1 ? 1 : limit / 32 > 64 ? 64 : limit / 32;
	return limit > reserve ? limit - reserve : 1;
}

struct srv_conns *srv_conns_create(const struct srv_conns_config *cfg, struct ng_err *reterr)
{
	struct srv_conns *t = calloc(1, sizeof(*t));
	if (!t) {
		(void)ng_err_set(reterr, NG_ENOMEM, 0, "out of memory");
		return NULL;
	}
	t->cfg = *cfg;
	if (t->cfg.ndaemons < 1 || t->cfg.ndaemons > MAX_LISTS)
		t->cfg.ndaemons = t->cfg.ndaemons < 1 ? 1 : MAX_LISTS;
	for (unsigned i = 0; i < MAX_LISTS; i++) {
		bool last = i + 1 == t->cfg.ndaemons && t->cfg.last_daemon_limit;
		pthread_mutex_init(&t->lists[i].mu, NULL);
		t->lists[i].t = t;
		t->lists[i].shed_at =
		    shed_mark(last ? t->cfg.last_daemon_limit : t->cfg.per_daemon_limit);
	}
	pthread_mutex_init(&t->addr_mu, NULL);
	pthread_mutex_init(&t->stop_mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->stop_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&t->sweeper, NULL, sweeper_main, t) != 0) {
		(void)ng_err_set(reterr, NG_EIO, 0, "starting the connection sweeper failed");
		srv_conns_destroy(t);
		return NULL;
	}
	t->sweeper_started = true;
	return t;
}

struct srv_conn_list *srv_conns_list(struct srv_conns *t, unsigned i)
{
	return &t->lists[i < t->cfg.ndaemons ? i : 0];
}

ng_status srv_conns_render_metrics(struct srv_conns *t, struct ng_buf *out)
{
	static const char *const open_name = "nodegate_connections_open";
	static const char *const closed_name = "nodegate_connections_closed_total";
	ng_status st = ng_prom_header(out, open_name, NG_PROM_GAUGE,
				      "Connections open on the server's listeners.");
	st = st ? st
		: ng_prom_i64(out, open_name, NULL, 0,
			      atomic_load_explicit(&t->open, memory_order_relaxed));
	st =
	    st ? st
	       : ng_prom_header(out, closed_name, NG_PROM_COUNTER,
				"Connections nodegate closed itself: a phase deadline passed, shed "
				"to make room, or over the per-address limit.");
	for (int r = 0; r < R_COUNT && st == NG_OK; r++) {
		const struct ng_prom_label label = {"reason", reason_names[r]};
		st = ng_prom_u64(out, closed_name, &label, 1,
				 atomic_load_explicit(&t->closed[r], memory_order_relaxed));
	}
	return st;
}

void srv_conns_destroy(struct srv_conns *t)
{
	if (!t)
		return;
	if (t->sweeper_started) {
		pthread_mutex_lock(&t->stop_mu);
		t->stopping = true;
		pthread_cond_signal(&t->stop_cv);
		pthread_mutex_unlock(&t->stop_mu);
		pthread_join(t->sweeper, NULL);
	}
	for (size_t b = 0; b < ADDR_BUCKETS; b++) {
		while (t->addrs[b]) {
			struct addr_count *a = t->addrs[b];
			t->addrs[b] = a->next;
			free(a);
		}
	}
	for (unsigned i = 0; i < MAX_LISTS; i++)
		pthread_mutex_destroy(&t->lists[i].mu);
	pthread_mutex_destroy(&t->addr_mu);
	pthread_mutex_destroy(&t->stop_mu);
	pthread_cond_destroy(&t->stop_cv);
	free(t);
}
