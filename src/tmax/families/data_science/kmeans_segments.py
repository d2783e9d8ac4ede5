"""Segment customers with k-means, reproducibly: deduplicate, fix a spend column logged in two units,
impute missing values with column medians, log-transform the skewed spend, standardise, then run
Lloyd's algorithm from a fixed initialisation and report every customer's segment."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import C_SPLIT, C_TRIM, fill, run_python

# @@K@@ is the delivered k: the oracle puts it in (the output case passes it on the command line).

REFERENCE = r'''
import math
import sys

K = "@@K@@"  # the number of segments (put in by the oracle)
FEATURES = @FEATURES@
ID, SPEND, UNIT = @ID@, @SPEND@, @UNIT@  # the key, spend and spend-unit columns' names in this export
LOG_SPEND = @LOG@  # use ln(1 + spend) instead of spend
MODE = @MODE@  # segments: each customer's segment; profile: size and most central customer; trace: moves per step
MAX_ITER = 100
GAP = [math.inf]  # smallest relative gap between the two nearest centroids seen (a host-side sanity check)


def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def load(text):
    lines = text.splitlines()
    header = [h.strip() for h in lines[0].split(",")]
    seen = set()
    ids, raw = [], []
    for line in lines[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(header):
            continue
        rec = dict(zip(header, parts))
        if rec[ID] in seen:
            continue
        seen.add(rec[ID])
        row = []
        for f in FEATURES:
            v = rec[f]
            if v == "":
                row.append(None)
                continue
            x = float(v)
            if f == SPEND and rec.get(UNIT) == "kEUR":
                x *= 1000
            row.append(x)
        ids.append(rec[ID])
        raw.append(row)
    return ids, raw


def prepare(raw):
    cols = []
    for j, f in enumerate(FEATURES):
        present = [r[j] for r in raw if r[j] is not None]
        fill = median(present)
        col = [r[j] if r[j] is not None else fill for r in raw]
        if f == SPEND and LOG_SPEND:
            col = [math.log1p(x) for x in col]
        mean = sum(col) / len(col)
        sd = math.sqrt(sum((x - mean) ** 2 for x in col) / len(col))
        cols.append([(x - mean) / sd for x in col])
    return [list(r) for r in zip(*cols)]


def nearest(p, cents):
    d = [sum((a - b) ** 2 for a, b in zip(p, c)) for c in cents]
    best = min(range(len(d)), key=lambda i: (d[i], i))
    rest = [d[i] for i in range(len(d)) if i != best]
    if rest:
        GAP[0] = min(GAP[0], (min(rest) - d[best]) / max(min(rest), 1e-300))
    return best


def lloyd(points, k):
    """The final assignment and, for every assignment step after the first, how many customers moved."""
    cents = [p[:] for p in points[:k]]
    assign, moves = None, []
    for _ in range(MAX_ITER):
        new = [nearest(p, cents) for p in points]
        if assign is not None:
            moves.append(sum(a != b for a, b in zip(new, assign)))
        if new == assign:
            break
        assign = new
        for c in range(k):
            members = [p for p, a in zip(points, assign) if a == c]
            if members:
                cents[c] = [sum(col) / len(members) for col in zip(*members)]
    return assign, moves


def kmeans(points, k):
    return lloyd(points, k)[0]


def central(points, members):
    """The index (into members) of the member nearest the members' mean; a tie goes to the first."""
    mean = [sum(col) / len(members) for col in zip(*(points[i] for i in members))]
    d = [sum((x - m) ** 2 for x, m in zip(points[i], mean)) for i in members]
    best = min(range(len(d)), key=lambda j: (d[j], j))
    rest = [d[j] for j in range(len(d)) if j != best]
    if rest:
        GAP[0] = min(GAP[0], (min(rest) - d[best]) / max(min(rest), 1e-300))
    return best


def segments(text, k=None, mode=None):
    ids, raw = load(text)
    k, mode = int(k or K), mode or MODE
    points = prepare(raw)
    assign, moves = lloyd(points, k)
    if mode == "trace":
        return "".join("%d,%d\n" % (step, m) for step, m in enumerate(moves, 2))
    if mode == "profile":
        out = []
        for c in range(k):
            members = [i for i, a in enumerate(assign) if a == c]
            rep = ids[members[central(points, members)]] if members else "-"
            out.append("%d,%d,%s\n" % (c + 1, len(members), rep))
        return "".join(out)
    return "".join("%s,%d\n" % (i, a + 1) for i, a in zip(ids, assign))


def inertia(text, k=None):
    """The within-segment sum of squares: squared distances of the standardised vectors to their final
    segment's mean."""
    points = prepare(load(text)[1])
    assign = kmeans(points, int(k or K))
    total = 0.0
    for c in sorted(set(assign)):
        members = [p for p, a in zip(points, assign) if a == c]
        mean = [sum(col) / len(members) for col in zip(*members)]
        total += sum(sum((x - m) ** 2 for x, m in zip(p, mean)) for p in members)
    return total


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inertia":
        with open(sys.argv[2]) as f:
            print("%.12g" % inertia(f.read(), sys.argv[3] if len(sys.argv) > 3 else None))
    elif len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            sys.stdout.write(segments(f.read(), sys.argv[2] if len(sys.argv) > 2 else None))
    else:
        sys.stdout.write(segments(sys.stdin.read()))
'''

C_REFERENCE = r'''
/* Customer segmentation with k-means from a fixed initialisation (see the task statement). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K @@K@@
#define NF @NF@
#define LOG_SPEND @LOG@
#define MODE @MODE@ /* 0: each customer's segment; 1: size and most central customer; 2: moves per step */
#define MAX_ITER 100
static const char *FEATURES[NF] = {@FEATNAMES@};
static const char *ID = @ID@, *SPEND = @SPEND@, *UNIT = @UNIT@;

@C_TRIM@

@C_SPLIT@

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void) {
    char *line = NULL, *f[32], *h[32];
    size_t cap = 0;
    if (getline(&line, &cap, stdin) == -1) return 0;
    char *hline = strdup(line);
    int nh = split(hline, h, 32), col[NF], id_col = -1, unit_col = -1;
    for (int j = 0; j < nh && j < 32; j++) {
        if (!strcmp(h[j], ID)) id_col = j;
        if (!strcmp(h[j], UNIT)) unit_col = j;
    }
    for (int k = 0; k < NF; k++)
        for (int j = 0; j < nh && j < 32; j++)
            if (!strcmp(h[j], FEATURES[k])) col[k] = j;
    int n = 0, rcap = 256;
    char **ids = malloc(rcap * sizeof(char *));
    double *x = malloc(rcap * NF * sizeof(double));
    char *miss = malloc(rcap * NF);
    while (getline(&line, &cap, stdin) != -1) {
        char *copy = strdup(line);
        if (split(copy, f, 32) != nh) continue;
        int dup = 0;
        for (int i = 0; i < n && !dup; i++) dup = !strcmp(ids[i], f[id_col]);
        if (dup) continue;
        if (n == rcap) {
            rcap *= 2;
            ids = realloc(ids, rcap * sizeof(char *));
            x = realloc(x, rcap * NF * sizeof(double));
            miss = realloc(miss, rcap * NF);
        }
        ids[n] = f[id_col];
        for (int k = 0; k < NF; k++) {
            const char *v = f[col[k]];
            miss[n * NF + k] = *v == 0;
            double d = *v ? strtod(v, NULL) : 0.0;
            if (!strcmp(FEATURES[k], SPEND) && unit_col >= 0 && !strcmp(f[unit_col], "kEUR")) d *= 1000;
            x[n * NF + k] = d;
        }
        n++;
    }
    double *tmp = malloc((n + 1) * sizeof(double));
    for (int k = 0; k < NF; k++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (!miss[i * NF + k]) tmp[m++] = x[i * NF + k];
        qsort(tmp, m, sizeof(double), cmp_d);
        double fill = m % 2 ? tmp[m / 2] : (tmp[m / 2 - 1] + tmp[m / 2]) / 2;
        for (int i = 0; i < n; i++) {
            if (miss[i * NF + k]) x[i * NF + k] = fill;
            if (LOG_SPEND && !strcmp(FEATURES[k], SPEND)) x[i * NF + k] = log1p(x[i * NF + k]);
        }
        double mean = 0, ss = 0;
        for (int i = 0; i < n; i++) mean += x[i * NF + k];
        mean /= n;
        for (int i = 0; i < n; i++) ss += pow(x[i * NF + k] - mean, 2);
        double sd = sqrt(ss / n);
        for (int i = 0; i < n; i++) x[i * NF + k] = (x[i * NF + k] - mean) / sd;
    }
    double cent[K][NF];
    for (int c = 0; c < K; c++)
        for (int k = 0; k < NF; k++) cent[c][k] = x[c * NF + k];
    int *assign = malloc(n * sizeof(int)), *fresh = malloc(n * sizeof(int)), have = 0, moves[MAX_ITER], nm = 0;
    for (int it = 0; it < MAX_ITER; it++) {
        for (int i = 0; i < n; i++) {
            int best = 0;
            double bd = 0;
            for (int c = 0; c < K; c++) {
                double d = 0;
                for (int k = 0; k < NF; k++) d += pow(x[i * NF + k] - cent[c][k], 2);
                if (c == 0 || d < bd) { bd = d; best = c; }
            }
            fresh[i] = best;
        }
        if (have) {
            int m = 0;
            for (int i = 0; i < n; i++) m += fresh[i] != assign[i];
            moves[nm++] = m;
            if (!m) break;
        }
        memcpy(assign, fresh, n * sizeof(int));
        have = 1;
        for (int c = 0; c < K; c++) {
            double sum[NF] = {0};
            int cnt = 0;
            for (int i = 0; i < n; i++)
                if (assign[i] == c) {
                    cnt++;
                    for (int k = 0; k < NF; k++) sum[k] += x[i * NF + k];
                }
            if (cnt)
                for (int k = 0; k < NF; k++) cent[c][k] = sum[k] / cnt;
        }
    }
#if MODE == 2
    for (int j = 0; j < nm; j++) printf("%d,%d\n", j + 2, moves[j]);
#elif MODE == 1
    for (int c = 0; c < K; c++) {
        double mean[NF] = {0}, bd = 0;
        int cnt = 0, best = -1;
        for (int i = 0; i < n; i++)
            if (assign[i] == c) {
                cnt++;
                for (int k = 0; k < NF; k++) mean[k] += x[i * NF + k];
            }
        for (int k = 0; k < NF; k++) mean[k] /= cnt ? cnt : 1;
        for (int i = 0; i < n; i++) {
            if (assign[i] != c) continue;
            double d = 0;
            for (int k = 0; k < NF; k++) d += pow(x[i * NF + k] - mean[k], 2);
            if (best < 0 || d < bd) { bd = d; best = i; }
        }
        printf("%d,%d,%s\n", c + 1, cnt, best < 0 ? "-" : ids[best]);
    }
#else
    for (int i = 0; i < n; i++) printf("%s,%d\n", ids[i], assign[i] + 1);
#endif
    return 0;
}
'''

ALL_FEATURES = ("annual_spend", "visits_per_month", "avg_basket", "tenure_months")
SPREAD = {"annual_spend": (300, 20000), "visits_per_month": (0.5, 20), "avg_basket": (8, 160),
          "tenure_months": (1, 120)}
K_WHAT = "the number of segments k"
# What each export calls its columns (the first spelling is the canonical one, which level 0 keeps).
SPELLINGS = {"customer_id": ("customer_id", "client_id", "member_id", "account_id", "shopper_id"),
             "annual_spend": ("annual_spend", "yearly_spend", "spend_12m", "total_spend"),
             "visits_per_month": ("visits_per_month", "monthly_visits", "visit_rate", "visits_pm"),
             "avg_basket": ("avg_basket", "mean_basket", "basket_value", "avg_order_value"),
             "tenure_months": ("tenure_months", "months_active", "tenure", "months_as_customer"),
             "spend_unit": ("spend_unit", "spend_scale", "currency_unit", "amount_unit")}
EXPORTS = ("/app/data/customers.csv", "/app/data/crm_export.csv", "/app/input/shoppers.csv",
           "/app/crm/members.csv", "/app/exports/accounts.csv", "/app/loyalty/cardholders.csv")
MODES = {"segments": 0, "profile": 1, "trace": 2}  # the C references' MODE for each variant


# Level 0: the first assignment step on one integer feature, so one awk pass gives the answer exactly.
ATOMIC = r'''
import sys

K = "@@K@@"  # the number of initial centroids
MODE = @MODE@  # segments: the spread; profile: customers per centroid; trace: each customer's centroid (one line each)


def spread(text, k=None):
    k = int(k or K)
    centroids, total, counts, rows = [], 0, [0] * k, []
    for line in text.splitlines()[1:]:
        parts = line.split(",")
        if len(parts) < 5:
            continue
        x = int(parts[4])
        if len(centroids) < k:
            centroids.append(x)
        d = [(x - c) ** 2 for c in centroids]
        j = d.index(min(d))  # a tie goes to the lower-numbered centroid
        total += d[j]
        counts[j] += 1
        rows.append(str(j + 1))
    if MODE == "profile":
        return ",".join(str(c) for c in counts) + "\n"
    if MODE == "trace":
        return ",".join(rows) + "\n"
    return "%d\n" % total


if __name__ == "__main__":
    if len(sys.argv) > 2:
        with open(sys.argv[1]) as f:
            sys.stdout.write(spread(f.read(), sys.argv[2]))
    else:
        sys.stdout.write(spread(sys.stdin.read()))
'''

C_ATOMIC = r'''
/* The first assignment step on tenure_months against the first K customers' values (standard input). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K @@K@@
#define MODE @MODE@ /* 0: sum of squared distances; 1: customers per centroid; 2: each customer's centroid, one line */

int main(void) {
    static char line[4096];
    long long c[K], total = 0, count[K] = {0};
    int nc = 0, header = 1, rows = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (header) { header = 0; continue; }
        char *p = line;
        int commas = 0;
        while (commas < 4 && (p = strchr(p, ','))) { p++; commas++; }
        if (commas < 4) continue;
        long long x = atoll(p);
        if (nc < K) c[nc++] = x;
        long long best = -1;
        int bj = 0;
        for (int i = 0; i < nc; i++) {
            long long d = (x - c[i]) * (x - c[i]);
            if (best < 0 || d < best) { best = d; bj = i; }
        }
        total += best;
        count[bj]++;
        if (MODE == 2) printf(rows++ ? ",%d" : "%d", bj + 1);
    }
    if (MODE == 2) printf("\n");
    if (MODE == 1)
        for (int j = 0; j < K; j++) printf(j + 1 < K ? "%lld," : "%lld\n", count[j]);
    if (MODE == 0) printf("%lld\n", total);
    return 0;
}
'''


@dataclass(frozen=True)
class Knobs:
    n: int  # customers in the output case
    features: int  # how many of ALL_FEATURES the model uses
    missing: bool  # empty cells to impute
    dupes: bool  # customers exported twice
    units: bool  # spend logged in EUR or kEUR
    log: bool  # model ln(1 + annual_spend)


@dataclass(frozen=True)
class Layout:
    """How one export is laid out: the file, each column's name, the column order and the model's features."""
    path: str
    names: dict  # canonical column -> its name in this export
    order: tuple  # canonical columns in file order
    feats: tuple  # the model's features (canonical), in ALL_FEATURES order

    def col(self, canonical: str) -> str:
        return self.names[canonical]


def draw_layout(t: TaskBuilder) -> Layout:
    """Level 0 keeps the canonical export (its one-pass answer reads the fifth column); above it the file,
    the column names, the column order and which features the model uses are drawn."""
    kn, rng = t.knobs, t.rng
    cols = [*ALL_FEATURES] + (["spend_unit"] if kn.units else [])
    if t.level == 0:
        return Layout(EXPORTS[0], {c: s[0] for c, s in SPELLINGS.items()}, ("customer_id", *cols),
                      ALL_FEATURES[:kn.features])
    names = {c: rng.choice(s) for c, s in SPELLINGS.items()}
    rng.shuffle(cols)
    feats = tuple(sorted(rng.sample(ALL_FEATURES, kn.features), key=ALL_FEATURES.index))
    return Layout(rng.choice(EXPORTS), names, ("customer_id", *cols), feats)


CANONICAL = Layout(EXPORTS[0], {c: s[0] for c, s in SPELLINGS.items()},
                   ("customer_id", *ALL_FEATURES, "spend_unit"), ALL_FEATURES)


def make_customers(rng, k: Knobs, n: int, lay: Layout = CANONICAL) -> str:
    feats = lay.feats[:k.features]
    centers = []
    for _ in range(rng.randrange(3, 7)):
        centers.append({f: rng.uniform(*SPREAD[f]) for f in ALL_FEATURES})
    header = [c for c in lay.order if k.units or c != "spend_unit"]
    rows = []
    for cid in rng.sample(range(100000, 999999), n):
        c = rng.choice(centers)
        vals = {}
        for f in ALL_FEATURES:
            lo, hi = SPREAD[f]
            x = max(lo * 0.5, rng.gauss(c[f], (hi - lo) * 0.07))
            vals[f] = x
        row = {"customer_id": f"C{cid}", "annual_spend": f"{vals['annual_spend']:.2f}",
               "visits_per_month": f"{vals['visits_per_month']:.1f}", "avg_basket": f"{vals['avg_basket']:.2f}",
               "tenure_months": str(max(1, round(vals["tenure_months"])))}
        if k.units:
            if rng.random() < 0.2:
                row["annual_spend"] = f"{vals['annual_spend'] / 1000:.5f}"
                row["spend_unit"] = "kEUR"
            else:
                row["spend_unit"] = "EUR"
        if k.missing and rng.random() < 0.06:
            row[feats[rng.randrange(len(feats))]] = ""
        rows.append([row[h] for h in header])
    if k.dupes:
        for _ in range(max(2, n // 25)):
            pos = rng.randrange(len(rows))
            rows.insert(rng.randrange(pos + 1, len(rows) + 1), list(rows[pos]))
    return ",".join(lay.col(h) for h in header) + "\n" + "".join(",".join(r) + "\n" for r in rows)


def steps_text(kn: Knobs, lay: Layout = CANONICAL) -> str:
    """The preprocessing and clustering steps: both cases state them alike."""
    steps = []
    key, spend = f"`{lay.col('customer_id')}`", f"`{lay.col('annual_spend')}`"
    if kn.dupes:
        steps.append(f"Some customers were exported twice: each {key} counts once (keep its first "
                     "row; \"first\" below always means first in file order after this).")
    if kn.units:
        steps.append(f"`{lay.col('spend_unit')}` tells whether {spend} is in `EUR` or in thousands of euros "
                     "(`kEUR`): convert everything to EUR.")
    if kn.missing:
        steps.append("Empty cells are missing values: replace each with the median of that column's present "
                     "values (the mean of the two middle values when their count is even).")
    if kn.log:
        steps.append(f"Spend is heavily skewed, so the model uses ln(1 + {lay.col('annual_spend')}) in place of "
                     f"{lay.col('annual_spend')} (after the steps above).")
    steps.append("Standardise every feature: subtract its mean and divide by its population standard "
                 "deviation (divide by the number of customers).")
    steps.append("Run Lloyd's k-means on the standardised vectors with squared Euclidean distance. The initial "
                 "centroids are the vectors of the first k customers (centroid 1 is the first customer, and so "
                 "on). Repeat: assign every customer to its nearest centroid (a tie goes to the lower-numbered "
                 "centroid), then move each centroid to the mean of its customers (a centroid with no "
                 "customers stays where it is); stop as soon as an assignment step changes nothing (at most "
                 "100 steps).")
    return " ".join(steps)


FMT = ("one line per customer, in file order (each customer once): `customer_id,segment` where segment is "
       "the number (1 to k) of its final centroid")


def answer_format(variant: str, lay: Layout = CANONICAL) -> str:
    """What each variant reports once Lloyd's algorithm has stopped."""
    key = lay.col("customer_id")
    if variant == "profile":
        return ("one line per segment, segments 1 to k in order: `segment,size,central` where size is how many "
                "customers end in that segment and central is the "
                f"`{key}` of its most central customer, the one whose standardised vector is nearest (squared "
                "Euclidean distance) to the mean of the segment's standardised vectors (a tie goes to the customer "
                "first in file order)")
    if variant == "trace":
        return ("the convergence trace: one line per assignment step after the first, in order, `step,moved` "
                "where step counts the assignment steps from 1 (so the first line is step 2) and moved is how many "
                "customers that step put in a different segment from the step before; the last line is the step "
                "that changed nothing")
    return FMT.replace("customer_id", key)


ATOMIC_ASKS = {
    "segments": "I need the sum, over every customer, of the squared distance from its `tenure_months` to the "
                "nearest of those k values (an integer).",
    "profile": "Give every customer to the centroid nearest its `tenure_months` (a tie goes to the lower-numbered "
               "centroid; centroid 1 is the first customer's value) and tell me how many customers each centroid "
               "gets: one line, the counts for centroid 1 to k in order, separated by commas (e.g. `12,5,9`).",
    "trace": "Give every customer to the centroid nearest its `tenure_months` (a tie goes to the lower-numbered "
             "centroid; centroid 1 is the first customer's value) and write every customer's centroid number, in "
             "file order, on one line separated by commas (e.g. `1,3,2,2,1`)."}
ATOMIC_OUT = {"segments": ("/app/out/spread.txt", "the sum"), "profile": ("/app/out/counts.txt", "the counts"),
              "trace": ("/app/out/first_step.txt", "the assignments")}


@register
class KmeansSegments(Family):
    name = "kmeans_segments"
    domain = "data_science"
    skill_types = ("Machine Learning", "Feature Engineering")
    primitive_skills = ("k-means clustering", "feature standardisation", "euclidean distance",
                        "missing value imputation")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    # segments: every customer's final segment; profile: each segment's size and most central customer;
    # trace: how many customers each assignment step moves until Lloyd's algorithm converges.
    variants = ("segments", "profile", "trace")
    levels = {0: Knobs(n=30, features=1, missing=False, dupes=False, units=False, log=False),
              1: Knobs(n=60, features=2, missing=True, dupes=False, units=False, log=False),
              2: Knobs(n=150, features=3, missing=True, dupes=False, units=False, log=False),
              3: Knobs(n=300, features=4, missing=True, dupes=True, units=True, log=False),
              4: Knobs(n=500, features=4, missing=True, dupes=True, units=True, log=True)}

    @staticmethod
    def setup(t: TaskBuilder) -> tuple[int, Layout, str, dict]:
        """(k, the export's layout, the filled Python reference, its namespace)."""
        k = t.rng.randrange(3, 6)
        lay = draw_layout(t)
        src = fill(REFERENCE, FEATURES=tuple(lay.col(f) for f in lay.feats), LOG=t.knobs.log, MODE=repr(t.variant),
                   ID=repr(lay.col("customer_id")), SPEND=repr(lay.col("annual_spend")),
                   UNIT=repr(lay.col("spend_unit")))
        return k, lay, src, run_python(src)

    @staticmethod
    def generate(t: TaskBuilder, ns: dict, k: int, n: int, lay: Layout, apart: bool = False,
                 disjoint: bool = False) -> tuple[str, str]:
        """Customers and the answer, with no near-tie anywhere in the run (so float noise cannot move a
        customer or change a segment's most central one), every one of the k segments used and, for a trace,
        at least two steps that move someone (a run that stops at once is guessed). ``apart``:
        every other k from 1 to 9 gives a within-segment sum of squares at least 1e-4 away (relatively).
        ``disjoint``: no other k from 1 to 9 gives any line of the answer (graded line by line, one shared
        line would earn reward without k)."""
        for _ in range(100):
            text = make_customers(t.rng, t.knobs, n, lay)
            ns["GAP"][0] = math.inf
            out = ns["segments"](text, k)
            used = {line.split(",")[-1] for line in ns["segments"](text, k, "segments").splitlines()}
            if ns["GAP"][0] <= 1e-6 or len(used) != k or (t.variant == "trace" and out.count("\n") < 3):
                continue
            if disjoint and any(set(ns["segments"](text, alt).splitlines()) & set(out.splitlines())
                                for alt in range(1, 10) if alt != k):
                continue
            if apart:
                w = ns["inertia"](text, k)
                if any(abs(ns["inertia"](text, alt) - w) <= 1e-4 * w for alt in range(1, 10) if alt != k):
                    continue
            return text, out
        raise FamilyError("kmeans_segments: no customer set without near-ties in 100 draws")

    def program_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_program(t)
        kn, rng = t.knobs, t.rng
        k, lay, src, ns = self.setup(t)
        cases = [self.generate(t, ns, k, rng.randrange(max(k + 6, 25), 70), lay) for _ in range(10)]
        feat_list = ", ".join(f"`{lay.col(f)}`" for f in lay.feats)
        header = ",".join(lay.col(c) for c in lay.order if kn.units or c != "spend_unit")
        t.say("I segment customers every month and want a small, deterministic tool for it. It reads a "
              f"customer export on standard input (CSV, header `{header}`) and clusters the "
              f"customers with k-means on these features: {feat_list}. k is given below.")
        v = t.deliver(str(k), K_WHAT)
        t.say(f"The steps, in order: {steps_text(kn, lay)} Output: {answer_format(t.variant, lay)}.")
        c_src = fill(C_REFERENCE, NF=str(len(lay.feats)), LOG="1" if kn.log else "0", MODE=str(MODES[t.variant]),
                     FEATNAMES=", ".join(f'"{lay.col(f)}"' for f in lay.feats), C_TRIM=C_TRIM, C_SPLIT=C_SPLIT,
                     **{c: f'"{lay.col(n)}"' for c, n in (("ID", "customer_id"), ("SPEND", "annual_spend"),
                                                           ("UNIT", "spend_unit"))})
        t.expect_program("k is always the value given above: hard-code it.", cases, {"Python": src, "C": c_src})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@K@@/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_output(t)
        kn, variant = t.knobs, t.variant
        k, lay, src, ns = self.setup(t)
        inertia = variant == "segments" and t.partial_credit
        text, truth = self.generate(t, ns, k, kn.n, lay, apart=inertia,
                                    disjoint=t.partial_credit and variant != "segments")
        t.add_file(lay.path, text)
        feat_list = ", ".join(f"`{lay.col(f)}`" for f in lay.feats)
        t.say(f"Marketing wants customer segments from `{lay.path}`. Cluster the customers with "
              f"k-means on these features: {feat_list}; the number of segments k is given below.")
        v = t.deliver(str(k), K_WHAT)
        t.say(f"The steps, in order: {steps_text(kn, lay)}")
        t.add_solution_file("segments.py", src)  # k comes on the command line
        if inertia:  # one number graded by its relative error: most lines would survive another k
            t.say("I need the within-segment sum of squares of the final segmentation: the sum over customers of "
                  "the squared Euclidean distance between the customer's standardised vector and the mean of the "
                  "standardised vectors of its final segment.")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/segments.py --inertia '
                    f'{lay.path} "{v}" > /app/out/inertia.txt')
            t.expect_number("/app/out/inertia.txt", ns["inertia"](text, k), 1e-6,
                            "the within-segment sum of squares, unrounded (at least 10 significant digits),")
            return
        out = f"/app/out/{variant}.csv"
        t.say(f"Output format: {answer_format(variant, lay)}.")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/segments.py {lay.path} "{v}" > {out}')
        t.expect_output(out, truth, {"segments": "the segment assignments (format above)",
                                     "profile": "the segment profile (format above)",
                                     "trace": "the convergence trace (format above)"}[variant])

    @staticmethod
    def atomic_draw(t: TaskBuilder, ns: dict, k: int, n: int) -> tuple[str, str]:
        """Customers whose answer (one line) moves under every other k from 1 to 9 (a repeated centroid
        value would not)."""
        for _ in range(100):
            text = make_customers(t.rng, t.knobs, n)
            out = ns["spread"](text, k)
            if all(ns["spread"](text, alt) != out for alt in range(1, 10) if alt != k):
                return text, out
        raise FamilyError("kmeans_segments: no customer set that every other k gets wrong in 100 draws")

    def atomic_rule(self, variant: str) -> str:
        return ("The initial centroids of our k-means run are the `tenure_months` values of the first k customers "
                "in the file (k is given below). " + ATOMIC_ASKS[variant])

    def atomic_output(self, t: TaskBuilder) -> None:
        k = t.rng.randrange(3, 6)
        src = fill(ATOMIC, MODE=repr(t.variant))
        ns = run_python(src)
        text, truth = self.atomic_draw(t, ns, k, t.knobs.n)
        path, what = ATOMIC_OUT[t.variant]
        t.add_file("/app/data/customers.csv", text)
        t.say(f"Marketing's customer export is `/app/data/customers.csv` (CSV with a header). "
              f"{self.atomic_rule(t.variant)}")
        v = t.deliver(str(k), K_WHAT)
        t.add_solution_file("spread.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/spread.py /app/data/customers.csv "{v}" '
                f'> {path}')
        t.expect_output(path, truth, what)

    def atomic_program(self, t: TaskBuilder) -> None:
        rng = t.rng
        k = rng.randrange(3, 6)
        src = fill(ATOMIC, MODE=repr(t.variant))
        ns = run_python(src)
        cases = [self.atomic_draw(t, ns, k, rng.randrange(15, 40)) for _ in range(10)]
        t.say("I want a small tool that reads a customer export on standard input (CSV, header `customer_id,"
              + ",".join(ALL_FEATURES) + "`) and prints " + ("one integer" if t.variant == "segments" else "the answer")
              + f". {self.atomic_rule(t.variant)}")
        v = t.deliver(str(k), K_WHAT)
        t.expect_program("k is always the value given above: hard-code it.", cases,
                         {"Python": src, "C": fill(C_ATOMIC, MODE=str(MODES[t.variant]))})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@K@@/{v}/" "$f"; done')
