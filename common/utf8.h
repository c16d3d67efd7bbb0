/* UTF-8 validation shared by the JSON reader and writer. */
#ifndef NG_COMMON_UTF8_H
#define NG_COMMON_UTF8_H

#include <stddef.h>

/**
 * Length (1-4) of the well-formed UTF-8 sequence at @s, of which @avail bytes are readable, or
 * 0 when it is not well-formed (overlong forms, surrogates and code points past U+10FFFF are
 * not). @avail must be >= 1.
 */
size_t ng_utf8_seq_len(const unsigned char *s, size_t avail);

#endif
