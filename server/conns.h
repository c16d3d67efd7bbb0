/* Connection phases, deadlines and shedding for the server's libmicrohttpd daemons.
 *
 * libmicrohttpd has one idle timeout, reset by every byte: a client that never starts TLS, stops
 * half-way through a handshake or sends a header byte every few seconds holds its connection for
 * ever, and about a thousand such clients lock everyone else out. nodegate tracks every
 * connection from accept to close and gives each phase a deadline that no trickle extends:
 *
 *   opened ──header_timeout──▶ headers complete ──body_timeout──▶ body complete (handled)
 *     ▲                                                               │ response queued
 *     └─────────── idle_timeout ◀── response sent ◀──body_timeout─────┘
 *
 * A connection past its deadline is shut down (the daemon then closes it as a client error).
 * When a daemon's list is nearly full, each new connection sheds the stalest connection that is
 * waiting on its client (opening, reading a request, or idle) — never one being handled — so the
 * listen queue keeps moving and nobody is refused while a silent socket holds a slot. An optional
 * per-address limit refuses connections beyond it.
 *
 * Ownership: srv_conns_create() returns the tracker the server frees with srv_conns_destroy()
 * after every daemon has stopped. Threads: one sweeper thread of its own; the srv_conns_*
 * notifications run on the daemon thread that owns the connection; each daemon's list has its
 * own mutex (the sweeper and that daemon thread share it), the per-address table one more;
 * counters are relaxed atomics readable from any thread. */
#ifndef NG_SERVER_CONNS_H
#define NG_SERVER_CONNS_H

#include "common/status.h"

#include <stdbool.h>
#include <stdint.h>

struct MHD_Connection;
struct ng_buf;

struct srv_conns_config {
	unsigned header_timeout_s; /* accept → the first request's headers (TLS included); >= 1 */
	unsigned body_timeout_s; /* headers → body complete, and response queued → sent; >= 1 */
	unsigned idle_timeout_s; /* response sent → the next request's headers; 0 = none */
	unsigned per_daemon_limit;  /* connections one daemon holds (its libmicrohttpd limit) */
	unsigned per_address_limit; /* connections from one client address; 0 = none */
	unsigned ndaemons;          /* lists to keep, one per daemon; 1..64 */
	unsigned last_daemon_limit; /* the last daemon's limit when not 0 (the admin listener) */
};

struct srv_conns;

/** What one daemon's notify-connection callback gets as its closure: see srv_conns_list(). */
struct srv_conn_list;

/**
 * Starts the sweeper thread. NULL with @reterr on failure (NG_ENOMEM, NG_EIO). @cfg is copied.
 */
struct srv_conns *srv_conns_create(const struct srv_conns_config *cfg, struct ng_err *reterr);

/** The closure for daemon @i's MHD_OPTION_NOTIFY_CONNECTION (i < ndaemons). */
struct srv_conn_list *srv_conns_list(struct srv_conns *t, unsigned i);

/**
 * The MHD_NotifyConnectionCallback itself (@cls is a struct srv_conn_list): tracks a connection
 * from MHD_CONNECTION_NOTIFY_STARTED to MHD_CONNECTION_NOTIFY_CLOSED in *@socket_context.
 */
void srv_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context, unsigned int toe);

/** The phases a request moves a connection through; called on the connection's daemon thread. */
enum srv_conn_event {
	SRV_CONN_HEADERS,  /* the access handler's first call: headers complete, body next */
	SRV_CONN_HANDLING, /* the body is complete: nodegate works; no deadline meanwhile */
	SRV_CONN_QUEUED,   /* a response is queued: the client must read it in body_timeout */
	SRV_CONN_DONE,     /* the request completed: idle until the next one */
};
void srv_conns_event(struct MHD_Connection *c, enum srv_conn_event ev);

/**
 * What the connection's client certificate was found to be, kept for the connection: 0 not
 * checked yet, 1 verified, -1 absent or not verified. Daemon thread of the connection.
 */
int srv_conns_peer(struct MHD_Connection *c);
void srv_conns_set_peer(struct MHD_Connection *c, int v);

/**
 * The connection's socket, or -1 when it is not tracked. With @ret_first, *@ret_first is true
 * the first time it is asked so for this connection (server/http.c takes the socket out of
 * libmicrohttpd's TCP cork then, once). Daemon thread of the connection.
 */
int srv_conns_tcp_fd(struct MHD_Connection *c, bool *ret_first);

/**
 * Appends nodegate_connections_open, nodegate_connections_closed_total{reason} (timeouts per
 * phase, shed, per-address refusals) to @out. Any thread.
 */
NG_NODISCARD ng_status srv_conns_render_metrics(struct srv_conns *t, struct ng_buf *out);

/** Stops the sweeper and frees the tracker; every daemon must have stopped. Accepts NULL. */
void srv_conns_destroy(struct srv_conns *t);

#endif
