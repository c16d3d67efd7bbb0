#include "tests/support/fake-api.h"

#include "common/buf.h"
#include "kube/config.h"

#include <stdlib.h>
#include <string.h>

static ng_status answer(void *ctx, const struct kube_request *rq, struct ng_buf *out,
			long *ret_http, struct ng_err *reterr)
{
	struct fake_api *f = ctx;
	if (f->nreqs < FAKE_API_MAX) {
		struct fake_api_request *r = &f->reqs[f->nreqs++];
		ng_fmt(r->method, sizeof(r->method), "%s", rq->method);
		ng_fmt(r->path, sizeof(r->path), "%s", rq->path);
		ng_fmt(r->content_type, sizeof(r->content_type), "%s",
		       rq->content_type ? rq->content_type : "");
		r->body = calloc(1, rq->body_len + 1);
		if (r->body && rq->body)
			memcpy(r->body, rq->body, rq->body_len);
	}
	for (size_t i = 0; i < f->nreplies; i++) {
		const struct fake_api_reply *p = &f->replies[i];
		if (p->path_contains && !strstr(rq->path, p->path_contains))
			continue;
		if (p->times && f->used[i] >= p->times)
			continue;
		f->used[i]++;
		if (p->fail)
			return ng_err_set(reterr, NG_EIO, 0, "fake: connection refused");
		*ret_http = p->http;
		return ng_buf_puts(out, p->body ? p->body : "{}");
	}
	*ret_http = 200;
	return ng_buf_puts(out, "{}");
}

void fake_api_init(struct fake_api *f)
{
	memset(f, 0, sizeof(*f));
	f->transport = (struct kube_transport){answer, f};
}

struct kube_client *fake_api_client(struct fake_api *f)
{
	struct kube_config cfg = {.server = (char *)"https://127.0.0.1:1"};
	struct kube_client *c = kube_client_create(&cfg);
	if (!c)
		abort();
	kube_client_set_transport(c, &f->transport);
	return c;
}

void fake_api_clear(struct fake_api *f)
{
	for (size_t i = 0; i < f->nreqs; i++)
		free(f->reqs[i].body);
	f->nreqs = 0;
}

void fake_api_finish(struct fake_api *f)
{
	fake_api_clear(f);
}

void fake_api_reply(struct fake_api *f, const struct fake_api_reply *r)
{
	if (f->nreplies < sizeof(f->replies) / sizeof(f->replies[0]))
		f->replies[f->nreplies++] = *r;
}

static bool matches(const struct fake_api_request *r, const char *method, const char *path)
{
	return (!method || strcmp(r->method, method) == 0) && (!path || strstr(r->path, path));
}

const struct fake_api_request *fake_api_find(const struct fake_api *f, const char *method,
					     const char *path, size_t i)
{
	for (size_t k = 0; k < f->nreqs; k++)
		if (matches(&f->reqs[k], method, path) && i-- == 0)
			return &f->reqs[k];
	return NULL;
}

size_t fake_api_count(const struct fake_api *f, const char *method, const char *path)
{
	size_t n = 0;
	for (size_t k = 0; k < f->nreqs; k++)
		n += matches(&f->reqs[k], method, path);
	return n;
}
