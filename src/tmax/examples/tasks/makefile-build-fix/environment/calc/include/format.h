#ifndef CALC_FORMAT_H
#define CALC_FORMAT_H

/* Print a result the way the calculator shows it (integers without decimals). */
void print_number(double v);

#endif
