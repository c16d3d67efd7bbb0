#include "common/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
	(void)fprintf(stderr, "nodegate: out of memory allocating %zu bytes\n", n);
	abort();
}

void *ng_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *ng_xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom(nmemb * size);
	return p;
}

void *ng_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *ng_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = ng_xmalloc(n);
	memcpy(p, s, n);
	return p;
}
