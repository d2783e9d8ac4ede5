#include <math.h>
#include <stdio.h>

#include "format.h"

void print_number(double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        printf("%.0f\n", v);
    else
        printf("%.10g\n", v);
}
