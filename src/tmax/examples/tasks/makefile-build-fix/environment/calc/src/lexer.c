#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "lexer.h"

void lex_init(struct lexer *lx, const char *src)
{
    lx->p = src;
    lex_next(lx);
}

void lex_next(struct lexer *lx)
{
    while (isspace((unsigned char)*lx->p))
        lx->p++;
    char c = *lx->p;
    struct token *t = &lx->cur;
    if (c == '\0') {
        t->kind = TOK_END;
    } else if (isdigit((unsigned char)c) || c == '.') {
        char *end;
        t->kind = TOK_NUM;
        t->num = strtod(lx->p, &end);
        lx->p = end;
    } else if (strchr("+-*/^", c)) {
        t->kind = TOK_OP;
        t->op = c;
        lx->p++;
    } else if (c == '(' || c == ')') {
        t->kind = c == '(' ? TOK_LPAREN : TOK_RPAREN;
        lx->p++;
    } else if (isalpha((unsigned char)c)) {
        size_t n = 0;
        t->kind = TOK_IDENT;
        while (isalpha((unsigned char)*lx->p)) {
            if (n + 1 < sizeof t->ident)
                t->ident[n++] = *lx->p;
            lx->p++;
        }
        t->ident[n] = '\0';
    } else {
        t->kind = TOK_ERR;
    }
}
