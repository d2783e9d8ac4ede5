"""Reference-program texts of ab_test_readout's arm_table and conversion_latency variants. Each is assembled
in the family file from the readout program's own parsing helpers (sliced out of REFERENCE / C_REFERENCE,
which stay as they are), the shared cohort code below and a report of its own."""

# -- Python ------------------------------------------------------------------------------------------------

PY_HEAD = r'''
import calendar
import math
import sys
import time

'''

PY_CONSTS = r'''RESTART = "@@RESTART@@"  # YYYYMMDDHHMM (UTC): users first exposed before then are out of the analysis
WINDOW_DAYS = @WINDOW@  # 0: no conversion window
QA_PREFIX = "qa_"


'''

# Who is in the analysis, and when each converter first bought (the readout only needs whether they did).
PY_COHORT = r'''def cohort(assign_text, events_text, restart):
    """(user -> arm, user -> assignment time, converter -> time of their first counted purchase)."""
    cutoff = restart_epoch(restart)
    first = {}
    arms = {}
    for user, a, ts in rows(assign_text):
        if user.startswith(QA_PREFIX):
            continue
        t = parse_ts(ts)
        seen = arms.setdefault(user, [])
        if a not in seen:
            seen.append(a)
        if user not in first or t < first[user]:
            first[user] = t
    members = {u: al[0] for u, al in arms.items() if len(al) == 1 and first[u] >= cutoff}
    bought = {}
    for user, event, ts in rows(events_text):
        if event != "purchase" or user not in members:
            continue
        t = parse_ts(ts)
        if t < first[user] or (WINDOW_DAYS and t >= first[user] + WINDOW_DAYS * 86400):
            continue
        if user not in bought or t < bought[user]:
            bought[user] = t
    return members, first, bought


'''

PY_ARM_TABLE = r'''ALPHA = 0.05  # family-wise, split evenly over the treatment arms (Bonferroni)


def p_value(n1, x1, n2, x2):
    """Two-sided p-value of the pooled two-proportion z-test (1 when it is undefined)."""
    if not (n1 and n2):
        return 1.0
    pool = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2))
    if se <= 0:
        return 1.0
    return math.erfc(abs((x2 / n2 - x1 / n1) / se) / math.sqrt(2))


def readout(assign_text, events_text, restart=None):
    members, _, bought = cohort(assign_text, events_text, restart or RESTART)
    n = {"CONTROL": 0}
    x = {"CONTROL": 0}
    for user, a in members.items():
        n[a] = n.get(a, 0) + 1
        x[a] = x.get(a, 0) + (user in bought)
    n1, x1 = n["CONTROL"], x["CONTROL"]
    r1 = x1 / n1 if n1 else 0.0
    out = ["CONTROL,%d,%d,%s,0.0000,1.0000,baseline" % (n1, x1, fmt(r1))]
    treated = sorted(a for a in n if a != "CONTROL")
    for a in treated:
        r2 = x[a] / n[a]
        p = p_value(n1, x1, n[a], x[a])
        verdict = "flat" if p >= ALPHA / len(treated) else "better" if r2 > r1 else "worse"
        lift = (r2 - r1) / r1 if r1 else 0.0
        out.append("%s,%d,%d,%s,%s,%s,%s" % (a, n[a], x[a], fmt(r2), fmt(lift), fmt(p), verdict))
    return "\n".join(out) + "\n"


'''

PY_LATENCY = r'''def hours(seconds):
    return "%.2f" % (seconds / 3600)


def readout(assign_text, events_text, restart=None, arm=None):
    members, first, bought = cohort(assign_text, events_text, restart or RESTART)
    out = []
    for a in ("CONTROL", arm or ARM):
        users = [u for u in members if members[u] == a]
        waits = sorted(bought[u] - first[u] for u in users if u in bought)
        m = len(waits)
        median = mean = 0.0
        if m:
            median = waits[m // 2] if m % 2 else (waits[m // 2 - 1] + waits[m // 2]) / 2
            mean = sum(waits) / m
        out.append("%s,%d,%d,%s,%s" % (a, len(users), m, hours(median), hours(mean)))
    return "\n".join(out) + "\n"


'''

# Level 0 of both variants: per key (an arm of the exposure log, or a buyer of the event log), the whole
# minutes from the restart time to its earliest row at or after it. The readout's parse_ts/restart_epoch
# are pasted in after the constants.
PY_FIRST_AFTER_HEAD = r'''
import calendar
import sys
import time

RESTART = "@@RESTART@@"  # YYYYMMDDHHMM (UTC)
KEY = @KEY@  # the column rows are grouped by
EVENT = @EVENT@  # only rows whose second column is this count ("": every row)


'''

PY_FIRST_AFTER = r'''def first_after(text, restart=None):
    cut = restart_epoch(restart or RESTART)
    best = {}
    for line in text.splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or (EVENT and parts[1] != EVENT):
            continue
        t = parse_ts(parts[2])
        if t >= cut and (parts[KEY] not in best or t < best[parts[KEY]]):
            best[parts[KEY]] = t
    return "".join("%s %d\n" % (k, (best[k] - cut) // 60) for k in sorted(best))


if __name__ == "__main__":
    if len(sys.argv) > 2:
        with open(sys.argv[1]) as f:
            sys.stdout.write(first_after(f.read(), sys.argv[2]))
    else:
        sys.stdout.write(first_after(sys.stdin.read()))
'''

# -- C -------------------------------------------------------------------------------------------------------

C_HEAD = r'''
/* @TITLE@ (see the task statement). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_DAYS @WINDOW@
static const char *RESTART = "@@RESTART@@"; /* YYYYMMDDHHMM, UTC */

typedef struct {
    char *id;
    char *arms[2]; /* the first two distinct arms are enough to know "more than one" */
    int narms;
    long long first;
    int converted;
    long long bought; /* the first counted purchase, when converted */
} User;

'''

# After the readout's parsing helpers and on_assign: counted purchases, and loading stdin into users[].
C_COHORT = r'''static long long cutoff;

static void on_event(char **f) {
    if (strcmp(f[1], "purchase")) return;
    User *u = find(f[0]);
    if (!u || u->narms != 1 || u->first < cutoff) return;
    long long t = parse_ts(f[2]);
    if (t < u->first) return;
    if (WINDOW_DAYS && t >= u->first + (long long)WINDOW_DAYS * 86400) return;
    if (!u->converted || t < u->bought) u->bought = t;
    u->converted = 1;
}

static int in_analysis(const User *u) { return u->narms == 1 && u->first >= cutoff; }

/* Reads the two logs from stdin into users[]; 0 on success. */
static int load(void) {
    size_t cap = 1 << 16, len = 0, r;
    char *buf = malloc(cap);
    while ((r = fread(buf + len, 1, cap - len - 1, stdin)) > 0) {
        len += r;
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[len] = 0;
    char *sep = strstr(buf, "\n---\n"), *events = "";
    if (sep) {
        sep[1] = 0;
        events = sep + 5;
    }
    int ry, rm, rd, rh, rmin;
    if (strlen(RESTART) != 12 || sscanf(RESTART, "%4d%2d%2d%2d%2d", &ry, &rm, &rd, &rh, &rmin) != 5) return 2;
    cutoff = days_from_civil(ry, (unsigned)rm, (unsigned)rd) * 86400 + rh * 3600 + rmin * 60;
    rows(buf, on_assign);
    rows(events, on_event);
    return 0;
}

'''

C_ARM_TABLE = r'''static void put4(double x) {
    char b[64];
    sprintf(b, "%.4f", x);
    fputs(strcmp(b, "-0.0000") ? b : "0.0000", stdout);
}

typedef struct {
    const char *name;
    long n, x;
} Arm;

static int by_name(const void *a, const void *b) { return strcmp(((const Arm *)a)->name, ((const Arm *)b)->name); }

static double p_value(long n1, long x1, long n2, long x2) {
    if (!n1 || !n2) return 1.0;
    double pool = (double)(x1 + x2) / (double)(n1 + n2);
    double se = sqrt(pool * (1 - pool) * (1.0 / n1 + 1.0 / n2));
    if (se <= 0) return 1.0;
    return erfc(fabs(((double)x2 / (double)n2 - (double)x1 / (double)n1) / se) / sqrt(2.0));
}

int main(void) {
    if (load()) return 2;
    Arm *tab = calloc((size_t)nusers + 1, sizeof(Arm));
    int narm = 0;
    long n1 = 0, x1 = 0;
    for (int i = 0; i < nusers; i++) {
        User *u = &users[i];
        if (!in_analysis(u)) continue;
        if (!strcmp(u->arms[0], "CONTROL")) { n1++; x1 += u->converted; continue; }
        int j = 0;
        while (j < narm && strcmp(tab[j].name, u->arms[0])) j++;
        if (j == narm) tab[narm++].name = u->arms[0];
        tab[j].n++;
        tab[j].x += u->converted;
    }
    qsort(tab, (size_t)narm, sizeof(Arm), by_name);
    double r1 = n1 ? (double)x1 / (double)n1 : 0.0;
    printf("CONTROL,%ld,%ld,", n1, x1);
    put4(r1);
    printf(",0.0000,1.0000,baseline\n");
    for (int j = 0; j < narm; j++) {
        double r2 = (double)tab[j].x / (double)tab[j].n, p = p_value(n1, x1, tab[j].n, tab[j].x);
        const char *verdict = p >= 0.05 / narm ? "flat" : r2 > r1 ? "better" : "worse";
        printf("%s,%ld,%ld,", tab[j].name, tab[j].n, tab[j].x);
        put4(r2);
        putchar(',');
        put4(r1 ? (r2 - r1) / r1 : 0.0);
        putchar(',');
        put4(p);
        printf(",%s\n", verdict);
    }
    return 0;
}
'''

C_LATENCY = r'''static const char *ARM = "@ARM@";

static int by_value(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(void) {
    if (load()) return 2;
    long long *waits = malloc(((size_t)nusers + 1) * sizeof(long long));
    const char *arm_names[2] = {"CONTROL", ARM};
    for (int k = 0; k < 2; k++) {
        long members = 0, m = 0;
        long long total = 0;
        for (int i = 0; i < nusers; i++) {
            User *u = &users[i];
            if (!in_analysis(u) || strcmp(u->arms[0], arm_names[k])) continue;
            members++;
            if (u->converted) {
                waits[m++] = u->bought - u->first;
                total += u->bought - u->first;
            }
        }
        qsort(waits, (size_t)m, sizeof(long long), by_value);
        double median = 0.0, mean = 0.0;
        if (m) {
            median = m % 2 ? (double)waits[m / 2] : (double)(waits[m / 2 - 1] + waits[m / 2]) / 2.0;
            mean = (double)total / (double)m;
        }
        printf("%s,%ld,%ld,%.2f,%.2f\n", arm_names[k], members, m, median / 3600.0, mean / 3600.0);
    }
    return 0;
}
'''

C_FIRST_AFTER_HEAD = r'''
/* Per @WHAT@, whole minutes from the restart time to its earliest row at or after it (see the task). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *RESTART = "@@RESTART@@"; /* YYYYMMDDHHMM, UTC */
#define KEY @KEY@ /* the column rows are grouped by */
static const char *EVENT = "@EVENT@"; /* only rows whose second column is this count ("": every row) */

'''

C_FIRST_AFTER = r'''typedef struct {
    char *key;
    long long t;
} Best;

static int by_key(const void *a, const void *b) { return strcmp(((const Best *)a)->key, ((const Best *)b)->key); }

int main(void) {
    static char line[4096];
    Best *best = NULL;
    int n = 0, cap = 0, header = 1, ry, rm, rd, rh, rmin;
    if (strlen(RESTART) != 12 || sscanf(RESTART, "%4d%2d%2d%2d%2d", &ry, &rm, &rd, &rh, &rmin) != 5) return 2;
    long long cut = days_from_civil(ry, (unsigned)rm, (unsigned)rd) * 86400 + rh * 3600 + rmin * 60;
    while (fgets(line, sizeof line, stdin)) {
        if (header) { header = 0; continue; }
        line[strcspn(line, "\r\n")] = 0;
        char *f[3];
        if (split(line, f, 3) < 3 || (*EVENT && strcmp(f[1], EVENT))) continue;
        long long t = parse_ts(f[2]);
        if (t < cut) continue;
        int i = 0;
        while (i < n && strcmp(best[i].key, f[KEY])) i++;
        if (i == n) {
            if (n == cap) best = realloc(best, (cap = cap ? cap * 2 : 64) * sizeof *best);
            best[n].key = strdup(f[KEY]);
            best[n++].t = t;
        } else if (t < best[i].t) best[i].t = t;
    }
    qsort(best, (size_t)n, sizeof *best, by_key);
    for (int i = 0; i < n; i++) printf("%s %lld\n", best[i].key, (best[i].t - cut) / 60);
    return 0;
}
'''
