#ifndef CALC_LEXER_H
#define CALC_LEXER_H

enum tok_kind { TOK_NUM, TOK_OP, TOK_LPAREN, TOK_RPAREN, TOK_IDENT, TOK_END, TOK_ERR };

struct token {
    enum tok_kind kind;
    double num;      /* TOK_NUM */
    char op;         /* TOK_OP: one of + - * / ^ */
    char ident[16];  /* TOK_IDENT */
};

struct lexer {
    const char *p;
    struct token cur;
};

void lex_init(struct lexer *lx, const char *src);
void lex_next(struct lexer *lx);

#endif
