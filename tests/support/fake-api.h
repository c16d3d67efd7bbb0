/* An API server in memory under a kube_client (kube_client_set_transport): records every
 * request a controller makes and answers from a script, so writes, preconditions and 409/404
 * handling are unit-tested without a socket (STYLE.md B12). One thread. */
#ifndef NG_TESTS_FAKE_API_H
#define NG_TESTS_FAKE_API_H

#include "kube/client.h"

#include <stdbool.h>
#include <stddef.h>

#define FAKE_API_MAX 256

struct fake_api_request {
	char method[8];
	char path[512];
	char content_type[64];
	char *body; /* NUL-terminated copy; "" without a body */
};

struct fake_api_reply {
	const char *path_contains; /* NULL: any request */
	long http;
	const char *body; /* borrowed; NULL: "{}" */
	bool fail;        /* no answer: the transport fails with NG_EIO */
	unsigned times;   /* how many requests it answers; 0 = every one */
};

struct fake_api {
	struct fake_api_request reqs[FAKE_API_MAX];
	size_t nreqs;
	struct fake_api_reply replies[32];
	unsigned used[32];
	size_t nreplies;
	struct kube_transport transport;
};

/** Empty: every request is answered 200 "{}". */
void fake_api_init(struct fake_api *f);
/**
 * A kube client for https://127.0.0.1:1 whose requests go to @f instead of a socket. Aborts the
 * test when it cannot be made. Free with kube_client_destroy().
 */
struct kube_client *fake_api_client(struct fake_api *f);
/** Frees the recorded bodies. */
void fake_api_finish(struct fake_api *f);
/** The first matching reply rule (in the order added) that is not used up answers a request. */
void fake_api_reply(struct fake_api *f, const struct fake_api_reply *r);
/** Forgets the recorded requests (rules stay). */
void fake_api_clear(struct fake_api *f);
/** The @i-th recorded request whose method is @method and path contains @path (NULL: any). */
const struct fake_api_request *fake_api_find(const struct fake_api *f, const char *method,
					     const char *path, size_t i);
/** How many recorded requests match. */
size_t fake_api_count(const struct fake_api *f, const char *method, const char *path);

#endif
