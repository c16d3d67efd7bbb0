/* budgets/: what only the module and its tests see. */
#ifndef NG_BUDGETS_INTERNAL_H
#define NG_BUDGETS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* The tokens of the label selector string grammar (budgets/selector.c). */
enum bud_tok {
	BUD_TOK_EOF,
	BUD_TOK_IDENT,  /* a key or a value: any run of bytes but whitespace and the symbols */
	BUD_TOK_BANG,   /* ! */
	BUD_TOK_EQ,     /* = */
	BUD_TOK_DEQ,    /* == */
	BUD_TOK_NEQ,    /* != */
	BUD_TOK_IN,     /* in */
	BUD_TOK_NOTIN,  /* notin */
	BUD_TOK_LPAREN, /* ( */
	BUD_TOK_RPAREN, /* ) */
	BUD_TOK_COMMA,  /* , */
	BUD_TOK_GT,     /* > */
	BUD_TOK_LT,     /* < */
};

/**
 * Splits @buf (@len bytes) into the tokens bud_selector_parse() reads, for tests. With @values,
 * "in" and "notin" are identifiers, as they are wherever the grammar expects a key or a value;
 * without, they are the operators. Writes at most @cap tokens to @out (caller storage) and
 * returns how many there are, the final BUD_TOK_EOF included.
 */
size_t bud_selector_lex(const char *buf, size_t len, bool values, enum bud_tok *out, size_t cap);

#endif
