#ifndef CALC_EVAL_H
#define CALC_EVAL_H

#include "lexer.h"

#define EVAL_OK 0
#define EVAL_SYNTAX 1
#define EVAL_DOMAIN 2

/* Evaluate an arithmetic expression; returns EVAL_OK and stores the value in *out. */
int eval_expr(const char *src, double *out);

#endif
