/* Infrastructure allocations (STYLE.md B7 class 1): fixed-size, abort on OOM. Sizes derived from
 * input never come here; they go through a capped ng_arena or ng_buf. */
#ifndef NG_COMMON_ALLOC_H
#define NG_COMMON_ALLOC_H

#include <stddef.h>

/** malloc that aborts with a message on failure. Caller frees with free(). */
void *ng_xmalloc(size_t n);
/** calloc that aborts on failure or overflow. Caller frees with free(). */
void *ng_xcalloc(size_t nmemb, size_t size);
/** realloc that aborts on failure. */
void *ng_xrealloc(void *p, size_t n);
/** strdup that aborts on failure. */
char *ng_xstrdup(const char *s);

/** Moves ownership out of *p: returns it and sets *p to NULL. */
static inline void *ng_steal_ptr(void **p)
{
	void *v = *p;
	*p = NULL;
	return v;
}

#endif
