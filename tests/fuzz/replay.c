/* A plain main() for a libFuzzer target (STYLE.md B12 "Fuzz"): runs every file of each
 * directory given on the command line through LLVMFuzzerTestOneInput(), so corpora and stored
 * crashers are replayed in every normal build, gcc included, under whatever sanitizers the
 * build has. Files whose names start with '.' (.gitkeep) are skipped. Each input is read into a
 * buffer of exactly its size, as libFuzzer passes it, so an overread is a sanitizer report.
 *
 * Exit status: 0 when every directory was read, 1 otherwise. A target that breaks an invariant
 * aborts; the name of the input it was running is on stderr just before. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads all of @path into a malloc'd buffer of exactly its size. An empty file gets a buffer of
 * size 0, not NULL: libFuzzer never passes NULL, and a parser given (NULL, 0) would compute
 * NULL + 0, which UBSan (clang) reports. */
static int read_file(const char *path, uint8_t **ret_data, size_t *ret_size)
{
	FILE *f = fopen(path, "rbe");
	if (!f)
		return -1;
	uint8_t *data = NULL;
	size_t size = 0;
	uint8_t chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		uint8_t *p = realloc(data, size + n);
		if (!p) {
			free(data);
			(void)fclose(f);
			return -1;
		}
		data = p;
		memcpy(data + size, chunk, n);
		size += n;
	}
	int failed = ferror(f);
	(void)fclose(f);
	if (failed) {
		free(data);
		return -1;
	}
	if (!data && !(data = malloc(1))) /* an empty file: a valid pointer to no bytes */
		return -1;
	*ret_data = data;
	*ret_size = size;
	return 0;
}

/* Replays every regular file in @dir in name order. Returns the count, or -1 on an I/O error. */
static long replay_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		(void)fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
		return -1;
	}
	char **names = NULL;
	size_t nnames = 0;
	long count = -1;
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char **p = realloc(names, (nnames + 1) * sizeof(*names));
		if (!p)
			goto out;
		names = p;
		names[nnames] = strdup(e->d_name);
		if (!names[nnames])
			goto out;
		nnames++;
	}
	if (errno != 0) {
		(void)fprintf(stderr, "replay: cannot read %s: %s\n", dir, strerror(errno));
		goto out;
	}
	if (nnames)
		qsort(names, nnames, sizeof(*names), cmp_names);

	count = 0;
	for (size_t i = 0; i < nnames; i++) {
		size_t plen = strlen(dir) + 1 + strlen(names[i]) + 1;
		char *path = malloc(plen);
		if (!path) {
			count = -1;
			goto out;
		}
		(void)snprintf(path, plen, "%s/%s", dir, names[i]);
		struct stat stbuf;
		if (stat(path, &stbuf) != 0 || !S_ISREG(stbuf.st_mode)) {
			free(path);
			continue;
		}
		uint8_t *data = NULL;
		size_t size = 0;
		if (read_file(path, &data, &size) != 0) {
			(void)fprintf(stderr, "replay: cannot read %s: %s\n", path,
				      strerror(errno));
			free(path);
			count = -1;
			goto out;
		}
		(void)fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
		(void)LLVMFuzzerTestOneInput(data, size);
		free(data);
		free(path);
		count++;
	}
out:
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	(void)closedir(d);
	return count;
}

int main(int argc, char **argv)
{
	int rc = 0;
	if (argc < 2) {
		(void)fprintf(stderr, "usage: %s DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		long n = replay_dir(argv[i]);
		if (n < 0) {
			rc = 1;
			continue;
		}
		printf("replayed %ld inputs from %s\n", n, argv[i]);
		/* A later input may abort: keep this line. */
		(void)fflush(stdout);
	}
	return rc;
}
