/* The written-but-not-yet-cached memo (memo.h): a small unordered array, scanned linearly; the
 * tables stay small (a controller's writes of the last seconds). */
#include "common/memo.h"

#include "common/buf.h"

#include <stdlib.h>

void ng_memo_init(struct ng_memo *m, size_t max)
{
	*m = (struct ng_memo){.max = max ? max : 1};
}

void ng_memo_free(struct ng_memo *m)
{
	free(m->e);
	m->e = NULL;
	m->n = m->cap = 0;
}

void ng_memo_expire(struct ng_memo *m, int64_t now_mono_ms)
{
	for (size_t i = 0; i < m->n;) {
		if (m->e[i].until_mono_ms <= now_mono_ms)
			m->e[i] = m->e[--m->n];
		else
			i++;
	}
}

static size_t find(const struct ng_memo *m, uint64_t key)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].key == key)
			return i;
	return m->n;
}

bool ng_memo_has(struct ng_memo *m, uint64_t key, int64_t now_mono_ms)
{
	ng_memo_expire(m, now_mono_ms);
	return find(m, key) < m->n;
}

static size_t soonest(const struct ng_memo *m)
{
	size_t s = 0;
	for (size_t i = 1; i < m->n; i++)
		if (m->e[i].until_mono_ms < m->e[s].until_mono_ms)
			s = i;
	return s;
}

void ng_memo_put(struct ng_memo *m, uint64_t key, int64_t until_mono_ms)
{
	ng_memo_put_group(m, key, 0, until_mono_ms);
}

void ng_memo_put_group(struct ng_memo *m, uint64_t key, uint64_t group, int64_t until_mono_ms)
{
	size_t i = find(m, key);
	if (i < m->n) {
		if (until_mono_ms > m->e[i].until_mono_ms)
			m->e[i].until_mono_ms = until_mono_ms;
		return;
	}
	if (m->n >= m->max)
		m->e[soonest(m)] = m->e[--m->n];
	if (m->n == m->cap) {
		struct ng_memo_entry *e = ng_array_grow(m->e, &m->cap, m->n, sizeof(*e));
		if (!e)
			return; /* only costs a repeated write */
		m->e = e;
	}
	m->e[m->n++] = (struct ng_memo_entry){key, group, until_mono_ms};
}

bool ng_memo_has_group(struct ng_memo *m, uint64_t group, int64_t now_mono_ms)
{
	ng_memo_expire(m, now_mono_ms);
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].group == group)
			return true;
	return false;
}

void ng_memo_clear(struct ng_memo *m)
{
	m->n = 0;
}

void ng_memo_forget(struct ng_memo *m, uint64_t key)
{
	size_t i = find(m, key);
	if (i < m->n)
		m->e[i] = m->e[--m->n];
}

int64_t ng_memo_next_expiry(const struct ng_memo *m)
{
	return m->n ? m->e[soonest(m)].until_mono_ms : INT64_MAX;
}
