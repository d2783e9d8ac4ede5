#include <stdio.h>

#include "eval.h"
#include "format.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s EXPRESSION\n", argv[0]);
        return 2;
    }
    double v;
    switch (eval_expr(argv[1], &v)) {
    case EVAL_OK:
        print_number(v);
        return 0;
    case EVAL_DOMAIN:
        fprintf(stderr, "calc: math domain error\n");
        return 1;
    default:
        fprintf(stderr, "calc: syntax error\n");
        return 1;
    }
}
