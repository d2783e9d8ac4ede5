#include <math.h>
#include <string.h>

#include "eval.h"

/*
 * Grammar:
 *   expr   := term (('+' | '-') term)*
 *   term   := unary (('*' | '/') unary)*
 *   unary  := '-' unary | power
 *   power  := atom ('^' unary)?          (right-associative)
 *   atom   := NUMBER | '(' expr ')' | IDENT '(' expr ')'
 */
struct parser {
    struct lexer lx;
    int err;
};

static double expr(struct parser *ps);

static double atom(struct parser *ps)
{
    struct token t = ps->lx.cur;
    if (t.kind == TOK_NUM) {
        lex_next(&ps->lx);
        return t.num;
    }
    if (t.kind == TOK_LPAREN) {
        lex_next(&ps->lx);
        double v = expr(ps);
        if (ps->lx.cur.kind != TOK_RPAREN) {
            ps->err = EVAL_SYNTAX;
            return 0;
        }
        lex_next(&ps->lx);
        return v;
    }
    if (t.kind == TOK_IDENT) {
        lex_next(&ps->lx);
        if (ps->lx.cur.kind != TOK_LPAREN) {
            ps->err = EVAL_SYNTAX;
            return 0;
        }
        double arg = atom(ps);
        if (strcmp(t.ident, "sqrt") == 0) {
            if (arg < 0)
                ps->err = EVAL_DOMAIN;
            return sqrt(arg);
        }
        if (strcmp(t.ident, "ln") == 0) {
            if (arg <= 0)
                ps->err = EVAL_DOMAIN;
            return log(arg);
        }
        ps->err = EVAL_SYNTAX;
        return 0;
    }
    ps->err = EVAL_SYNTAX;
    return 0;
}

static double unary(struct parser *ps);

static double power(struct parser *ps)
{
    double base = atom(ps);
    if (ps->lx.cur.kind == TOK_OP && ps->lx.cur.op == '^') {
        lex_next(&ps->lx);
        return pow(base, unary(ps));
    }
    return base;
}

static double unary(struct parser *ps)
{
    if (ps->lx.cur.kind == TOK_OP && ps->lx.cur.op == '-') {
        lex_next(&ps->lx);
        return -unary(ps);
    }
    return power(ps);
}

static double term(struct parser *ps)
{
    double v = unary(ps);
    while (!ps->err && ps->lx.cur.kind == TOK_OP && (ps->lx.cur.op == '*' || ps->lx.cur.op == '/')) {
        char op = ps->lx.cur.op;
        lex_next(&ps->lx);
        double r = unary(ps);
        if (op == '/' && r == 0)
            ps->err = EVAL_DOMAIN;
        v = op == '*' ? v * r : v / r;
    }
    return v;
}

static double expr(struct parser *ps)
{
    double v = term(ps);
    while (!ps->err && ps->lx.cur.kind == TOK_OP && (ps->lx.cur.op == '+' || ps->lx.cur.op == '-')) {
        char op = ps->lx.cur.op;
        lex_next(&ps->lx);
        double r = term(ps);
        v = op == '+' ? v + r : v - r;
    }
    return v;
}

int eval_expr(const char *src, double *out)
{
    struct parser ps = { .err = EVAL_OK };
    lex_init(&ps.lx, src);
    double v = expr(&ps);
    if (!ps.err && ps.lx.cur.kind != TOK_END)
        ps.err = EVAL_SYNTAX;
    *out = v;
    return ps.err;
}
