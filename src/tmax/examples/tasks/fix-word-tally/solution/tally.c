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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    char *word;
    long count;
};

static struct entry *table;
static size_t used, cap;

/* open-addressing hash index into table[] */
static size_t *slots;
static size_t nslots;

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603ULL;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        perror("realloc");
        exit(1);
    }
    return p;
}

static void rehash(void)
{
    nslots = nslots ? nslots * 2 : 1024;
    free(slots);
    slots = xrealloc(NULL, nslots * sizeof *slots);
    for (size_t i = 0; i < nslots; i++)
        slots[i] = (size_t)-1;
    for (size_t i = 0; i < used; i++) {
        size_t j = hash(table[i].word) & (nslots - 1);
        while (slots[j] != (size_t)-1)
            j = (j + 1) & (nslots - 1);
        slots[j] = i;
    }
}

static void add_word(const char *w)
{
    if (2 * (used + 1) > nslots)
        rehash();
    size_t j = hash(w) & (nslots - 1);
    while (slots[j] != (size_t)-1) {
        if (strcmp(table[slots[j]].word, w) == 0) {
            table[slots[j]].count++;
            return;
        }
        j = (j + 1) & (nslots - 1);
    }
    if (used == cap) {
        cap = cap ? cap * 2 : 64;
        table = xrealloc(table, cap * sizeof *table);
    }
    table[used].word = strdup(w);
    if (!table[used].word) {
        perror("strdup");
        exit(1);
    }
    table[used].count = 1;
    slots[j] = used;
    used++;
}

static int by_count(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->word, y->word);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [N]\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    int n = argc > 2 ? atoi(argv[2]) : 10;

    char *word = NULL;
    size_t len = 0, wcap = 0;
    int c;
    for (;;) {
        c = fgetc(f);
        int letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
        if (letter) {
            if (len + 1 >= wcap) {
                wcap = wcap ? wcap * 2 : 64;
                word = xrealloc(word, wcap);
            }
            word[len++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        } else {
            if (len > 0) {
                word[len] = '\0';
                add_word(word);
                len = 0;
            }
            if (c == EOF)
                break;
        }
    }
    fclose(f);

    qsort(table, used, sizeof(struct entry), by_count);
    for (size_t i = 0; n > 0 && i < (size_t)n && i < used; i++)
        printf("%ld %s\n", table[i].count, table[i].word);
    return 0;
}
