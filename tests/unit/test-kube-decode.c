/* kube/decode.c: objects decoded on their own (kube/one.h). */
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

static void test_kube_one_entry_points(void **state)
{
	struct kube_one *one = (struct kube_one *)(uintptr_t)0xad;
	struct ng_err err = {0};
	/* Fields the gate reads still refuse the object, naming the field without a prefix. */
	static const char bad[] = "{\"kind\":\"NodeDisruption\",\"apiVersion\":\"nodegate.io/"
				  "v1alpha1\",\"metadata\":{\"name\":\"x\"},\"spec\":{\"priority\":"
				  "\"high\"}}";
	assert_int_equal(kube_one_parse(bad, strlen(bad), &one, &err), NG_EPARSE);
	assert_string_equal(err.msg, "spec.priority: expected an integer");
	assert_ptr_equal(one, (struct kube_one *)(uintptr_t)0xad); /* untouched on failure */
	static const char pod[] = "{\"kind\":\"Eviction\",\"apiVersion\":\"policy/v1\"}";
	assert_int_equal(kube_one_parse(pod, strlen(pod), &one, &err), NG_ENOTFOUND);
	static const char noname[] = "{\"spec\":{\"nodeNames\":[\"a\"]}}";
	cJSON *tree = NULL;
	assert_int_equal(ng_json_parse(noname, strlen(noname), NULL, &tree, NULL), NG_OK);
	assert_int_equal(kube_one_decode_as(KUBE_RES_NDS, tree, 0, &one, &err), NG_EPARSE);
	assert_string_equal(err.msg, "metadata.name: required");
	assert_int_equal(kube_one_decode_as(KUBE_RES_NDS, tree, KUBE_ONE_NAME_OPTIONAL, &one, &err),
			 NG_OK);
	assert_int_equal(kube_one_resource(one), KUBE_RES_NDS);
	assert_int_equal(kube_one_nd(one)->name, NG_INTERN_NONE);
	assert_null(kube_one_adb(one));
	kube_one_destroy(one);
	cJSON_Delete(tree);
	/* A budget decodes as invalid, as in the cache. */
	static const char ndb[] = "{\"kind\":\"NodeDisruptionBudget\",\"apiVersion\":\"nodegate.io/"
				  "v1alpha1\",\"metadata\":{\"name\":\"p\"},\"spec\":{"
				  "\"nodeSelector\":{\"matchLabels\":{\"a\":5}}}}";
	assert_int_equal(kube_one_parse(ndb, strlen(ndb), &one, &err), NG_OK);
	assert_true(kube_one_ndb(one)->b.invalid);
	kube_one_destroy(one);
	kube_one_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kube_one_entry_points),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
