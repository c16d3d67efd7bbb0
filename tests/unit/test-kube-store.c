/* kube/store.c: publishing while readers acquire. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/limits.h"
#include "kube/one.h"
#include "kube/internal.h"
#include "tests/support/support.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stress {
	struct kube_store *store;
	int rounds;
};

static void *reader(void *arg)
{
	struct stress *st = arg;
	for (int i = 0; i < st->rounds * 20; i++) {
		struct kube_snapshot *s = kube_store_acquire(st->store);
		size_t n = kube_snapshot_count(s, KUBE_RES_NODES);
		if (n != 0 && n != 3)
			abort();
		kube_snapshot_release(s);
	}
	return NULL;
}

static void test_store_publish_while_readers_acquire(void **state)
{
	struct stress st = {.store = kube_store_create(), .rounds = 200};
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, &st), 0);
	for (int i = 0; i < st.rounds; i++)
		kube_store_publish(st.store, ng_test_snapshot(ng_fixture_f));
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(kube_store_generation(st.store), (uint64_t)st.rounds);
	struct kube_snapshot *s = kube_store_acquire(st.store);
	assert_int_equal(kube_snapshot_count(s, KUBE_RES_NODES), 3);
	kube_snapshot_release(s);
	kube_store_destroy(st.store);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_store_publish_while_readers_acquire),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
