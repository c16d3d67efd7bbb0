/* Reading whole files, bounded. */
#ifndef NG_COMMON_FILE_H
#define NG_COMMON_FILE_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>

/**
 * Reads the regular file at @path (at most @cap bytes) into a malloc'd NUL-terminated buffer the
 * caller frees with free(). @what names the file in messages ("--tls-cert", "snapshot"). With
 * @secret, buffers are wiped before they are freed on failure. NG_EIO (open/read failed, with
 * strerror), NG_EINVAL (not a regular file: a FIFO could block forever), NG_ELIMIT (over @cap),
 * NG_ENOMEM. Writes @ret_buf and @ret_len only on success.
 */
NG_NODISCARD ng_status ng_read_file(const char *path, size_t cap, const char *what, bool secret,
				    char **ret_buf, size_t *ret_len, struct ng_err *reterr);

#endif
