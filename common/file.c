#include "common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void drop(char *p, size_t n, bool secret)
{
	if (p && secret)
		explicit_bzero(p, n);
	free(p);
}

ng_status ng_read_file(const char *path, size_t cap, const char *what, bool secret, char **ret_buf,
		       size_t *ret_len, struct ng_err *reterr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return ng_err_set(reterr, NG_EIO, 0, "%s %s: %s", what, path, ng_strerror(errno));
	ng_status st = NG_OK;
	char *buf = NULL;
	size_t alloc = 0, len = 0;
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		st = ng_err_set(reterr, NG_EIO, 0, "%s %s: %s", what, path, ng_strerror(errno));
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		st = ng_err_set(reterr, NG_EINVAL, 0, "%s %s: not a regular file", what, path);
		goto out;
	}
	if ((unsigned long long)sb.st_size > cap) {
		st = ng_err_set(reterr, NG_ELIMIT, 0, "%s %s: larger than %zu bytes", what, path,
				cap);
		goto out;
	}
	/* Sized from fstat, grown if the file grows while we read (up to the cap). */
	alloc = (size_t)sb.st_size + 1;
	buf = malloc(alloc);
	if (!buf) {
		st = ng_err_set(reterr, NG_ENOMEM, 0, "%s %s: out of memory", what, path);
		goto out;
	}
	for (;;) {
		char probe = 0;
		char *dst = len + 1 < alloc ? buf + len : &probe;
		size_t want = len + 1 < alloc ? alloc - 1 - len : 1;
		ssize_t r = read(fd, dst, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			st = ng_err_set(reterr, NG_EIO, 0, "%s %s: %s", what, path,
					ng_strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		if (dst == buf + len) {
			len += (size_t)r;
			continue;
		}
		/* The file grew past its fstat size: grow up to the cap. */
		if (len >= cap) {
			st = ng_err_set(reterr, NG_ELIMIT, 0, "%s %s: larger than %zu bytes", what,
					path, cap);
			goto out;
		}
		size_t next = alloc * 2 < cap + 1 ? alloc * 2 : cap + 1;
		char *p = malloc(next);
		if (!p) {
			st = ng_err_set(reterr, NG_ENOMEM, 0, "%s %s: out of memory", what, path);
			goto out;
		}
		memcpy(p, buf, len);
		drop(buf, len, secret);
		buf = p;
		alloc = next;
		buf[len++] = probe;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	buf = NULL;
out:
	drop(buf, len, secret);
	(void)close(fd);
	return st;
}
