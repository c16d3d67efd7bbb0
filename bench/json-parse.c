/* Why cJSON: parse the same AdmissionReview and the same PodList with cJSON (malloc and our
 * arena hooks) and with jansson, in one run, and print each one's time per parse and MB/s.
 * Usage: bench-json-parse REVIEW.json PODLIST.json [ROUNDS] */
#include "common/arena.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/json.h"
#include "common/parse.h"

#include <jansson.h>
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

static void report(const char *what, const char *lib, size_t len, int rounds, int64_t us)
{
	double per = (double)us / rounds;
	(void)printf("%-8s %-14s %10.2f us/parse %9.1f MB/s\n", what, lib, per, (double)len / per);
}

static void run(const char *what, const char *buf, size_t len, int rounds)
{
	int64_t t0 = ng_now_mono_us();
	for (int i = 0; i < rounds; i++) {
		cJSON *root = NULL;
		if (ng_json_parse(buf, len, NULL, &root, NULL) != NG_OK)
			abort();
		cJSON_Delete(root);
	}
	report(what, "cJSON+checks", len, rounds, ng_now_mono_us() - t0);
	struct ng_arena *a = ng_arena_create(1u << 30);
	t0 = ng_now_mono_us();
	for (int i = 0; i < rounds; i++) {
		cJSON *root = NULL;
		if (ng_json_parse(buf, len, a, &root, NULL) != NG_OK)
			abort();
		ng_arena_reset(a);
	}
	report(what, "cJSON+arena", len, rounds, ng_now_mono_us() - t0);
	ng_arena_destroy(a);
	t0 = ng_now_mono_us();
	for (int i = 0; i < rounds; i++) {
		cJSON *root = cJSON_ParseWithLength(buf, len);
		if (!root)
			abort();
		cJSON_Delete(root);
	}
	report(what, "cJSON plain", len, rounds, ng_now_mono_us() - t0);
	t0 = ng_now_mono_us();
	for (int i = 0; i < rounds; i++) {
		json_error_t e;
		json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &e);
		if (!root)
			abort();
		json_decref(root);
	}
	report(what, "jansson", len, rounds, ng_now_mono_us() - t0);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		(void)fprintf(stderr, "usage: %s REVIEW.json PODLIST.json [ROUNDS]\n", argv[0]);
		return 2;
	}
	int64_t rounds = 20000;
	if (argc > 3 && ng_parse_i64(argv[3], strlen(argv[3]), 1, 10000000, &rounds) != NG_OK)
		return 2;
	size_t rl, pl;
	char *review = slurp(argv[1], &rl);
	char *pods = slurp(argv[2], &pl);
	if (!review || !pods)
		return 2;
	run("review", review, rl, (int)rounds);
	run("podlist", pods, pl, rounds / 2000 > 0 ? (int)(rounds / 2000) : 1);
	free(review);
	free(pods);
	return 0;
}
