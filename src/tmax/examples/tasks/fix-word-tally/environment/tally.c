/*
 * tally - print the most frequent words of a text file.
 *
 * usage: tally FILE [N]
 *
 * A word is a maximal run of ASCII letters (A-Z, a-z); everything else separates
 * words. Words are compared case-insensitively and printed in lower case.
 * Prints the N (default 10) most frequent words, one per line, as
 * "<count> <word>", ordered by count descending, ties broken by word ascending
 * (byte order). If there are fewer than N distinct words, prints all of them.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORD 16

struct entry {
    char *word;
    long count;
};

static struct entry *table;
static size_t used, cap;

static void add_word(const char *w)
{
    for (size_t i = 0; i < used; i++) {
        if (strcmp(table[i].word, w) == 0) {
            table[i].count++;
            return;
        }
    }
    if (used == cap) {
        cap = cap ? cap * 2 : 64;
        table = realloc(table, cap);
        if (!table) {
            perror("realloc");
            exit(1);
        }
    }
    table[used].word = strdup(w);
    table[used].count = 1;
    used++;
}

static int by_count(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count;
    return strcmp(y->word, x->word);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [N]\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    int n = argc > 2 ? atoi(argv[2]) : 10;

    char word[MAX_WORD];
    size_t len = 0;
    char c;
    while ((c = fgetc(f)) != EOF) {
        if (isalpha(c)) {
            word[len++] = c;
        } else if (len > 0) {
            word[len] = '\0';
            add_word(word);
            len = 0;
        }
    }
    fclose(f);

    qsort(table, used, sizeof(struct entry), by_count);
    for (int i = 0; i <= n && i < (int)used; i++)
        printf("%ld %s\n", table[i].count, table[i].word);
    return 0;
}
