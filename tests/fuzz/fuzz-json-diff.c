/* libFuzzer target: ng_json_parse() against the reference parser (tests/support/json-ref.c, the
 * cJSON-wrapping parser it replaced), on arbitrary bytes, with an arena and without.
 *
 * The two must agree (ng_test_json_diff()): equal trees when both accept; never an input only
 * ng_json_parse() accepts; an input only the reference accepts must not be RFC 8259 JSON; and
 * when both reject, NG_ELIMIT from both for JSON that is only too deep. Any disagreement is
 * printed and abort()s, so libFuzzer keeps the input. */
#include "tests/support/json-check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int use_arena = 0; use_arena < 2; use_arena++) {
		char why[512];
		if (!ng_test_json_diff((const char *)data, size, use_arena, NULL, why,
				       sizeof(why))) {
			(void)fprintf(stderr, "json-diff (%s): %s\n",
				      use_arena ? "arena" : "malloc", why);
			abort();
		}
	}
	return 0;
}
