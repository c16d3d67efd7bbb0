/* Bounded number parsing (the only place strtoll may appear, STYLE.md B5) and the name grammars
 * flags and objects share. */
#ifndef NG_COMMON_PARSE_H
#define NG_COMMON_PARSE_H

#include "common/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Parses @len bytes at @s as a base-10 integer (optional leading '-' or '+', digits only, no
 * spaces) in [@min, @max]. Writes @ret only on success. NG_EPARSE for anything else, NG_ELIMIT
 * when out of range.
 */
NG_NODISCARD ng_status ng_parse_i64(const char *s, size_t len, int64_t min, int64_t max,
				    int64_t *ret);

/**
 * Decodes standard base64 with padding, as Go's encoding/base64.StdEncoding decodes []byte
 * fields (kubeconfig *-data, caBundle): CR and LF are skipped, anything else outside the
 * alphabet is an error, and nothing may follow the padding. On NG_OK *@ret is a malloc'ed,
 * NUL-terminated buffer of *@ret_len bytes (at most 3/4 of @len). NG_EPARSE, NG_ENOMEM.
 */
NG_NODISCARD ng_status ng_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len);

/**
 * Whether @s is a DNS-1123 label, what namespace, Service and container names are: 1 to 63
 * lower-case alphanumerics or '-', neither first nor last a '-'. False for NULL.
 */
bool ng_dns_label(const char *s);

#endif
