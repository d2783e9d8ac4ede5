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
LOG_SPEND = @LOG@  # use ln(1 + annual_spend) instead of annual_spend
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
        if rec["customer_id"] in seen:
            continue
        seen.add(rec["customer_id"])
        row = []
        for f in FEATURES:
            v = rec[f]
            if v == "":
                row.append(None)
                continue
            x = float(v)
            if f == "annual_spend" and rec.get("spend_unit") == "kEUR":
                x *= 1000
            row.append(x)
        ids.append(rec["customer_id"])
        raw.append(row)
    return ids, raw


def prepare(raw):
    cols = []
    for j, f in enumerate(FEATURES):
        present = [r[j] for r in raw if r[j] is not None]
        fill = median(present)
        col = [r[j] if r[j] is not None else fill for r in raw]
        if f == "annual_spend" and LOG_SPEND:
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


def kmeans(points, k):
    cents = [p[:] for p in points[:k]]
    assign = None
    for _ in range(MAX_ITER):
        new = [nearest(p, cents) for p in points]
        if new == assign:
            break
        assign = new
        for c in range(k):
            members = [p for p, a in zip(points, assign) if a == c]
            if members:
                cents[c] = [sum(col) / len(members) for col in zip(*members)]
    return assign


def segments(text, k=None):
    ids, raw = load(text)
    assign = kmeans(prepare(raw), int(k or K))
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
#define MAX_ITER 100
static const char *FEATURES[NF] = {@FEATNAMES@};

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
        if (!strcmp(h[j], "customer_id")) id_col = j;
        if (!strcmp(h[j], "spend_unit")) unit_col = j;
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
            if (!strcmp(FEATURES[k], "annual_spend") && unit_col >= 0 && !strcmp(f[unit_col], "kEUR")) d *= 1000;
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
            if (LOG_SPEND && !strcmp(FEATURES[k], "annual_spend")) x[i * NF + k] = log1p(x[i * NF + k]);
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
    int *assign = malloc(n * sizeof(int)), *fresh = malloc(n * sizeof(int)), have = 0;
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
        if (have && !memcmp(fresh, assign, n * sizeof(int))) break;
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
    for (int i = 0; i < n; i++) printf("%s,%d\n", ids[i], assign[i] + 1);
    return 0;
}
'''

ALL_FEATURES = ("annual_spend", "visits_per_month", "avg_basket", "tenure_months")
SPREAD = {"annual_spend": (300, 20000), "visits_per_month": (0.5, 20), "avg_basket": (8, 160),
          "tenure_months": (1, 120)}
K_WHAT = "the number of segments k"


# Level 0: the first assignment step on one integer feature, so one awk pass gives an exact integer.
ATOMIC = r'''
import sys

K = "@@K@@"  # the number of initial centroids


def spread(text, k=None):
    k = int(k or K)
    centroids, total = [], 0
    for line in text.splitlines()[1:]:
        parts = line.split(",")
        if len(parts) < 5:
            continue
        x = int(parts[4])
        if len(centroids) < k:
            centroids.append(x)
        total += min((x - c) ** 2 for c in centroids)
    return "%d\n" % total


if __name__ == "__main__":
    if len(sys.argv) > 2:
        with open(sys.argv[1]) as f:
            sys.stdout.write(spread(f.read(), sys.argv[2]))
    else:
        sys.stdout.write(spread(sys.stdin.read()))
'''

C_ATOMIC = r'''
/* Sum of squared distances of tenure_months to the nearest of the first K customers' (standard input). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K @@K@@

int main(void) {
    static char line[4096];
    long long c[K], total = 0;
    int nc = 0, header = 1;
    while (fgets(line, sizeof line, stdin)) {
        if (header) { header = 0; continue; }
        char *p = line;
        int commas = 0;
        while (commas < 4 && (p = strchr(p, ','))) { p++; commas++; }
        if (commas < 4) continue;
        long long x = atoll(p);
        if (nc < K) c[nc++] = x;
        long long best = -1;
        for (int i = 0; i < nc; i++) {
            long long d = (x - c[i]) * (x - c[i]);
            if (best < 0 || d < best) best = d;
        }
        total += best;
    }
    printf("%lld\n", total);
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


def make_customers(rng, k: Knobs, n: int) -> str:
    feats = ALL_FEATURES[:k.features]
    centers = []
    for _ in range(rng.randrange(3, 7)):
        centers.append({f: rng.uniform(*SPREAD[f]) for f in ALL_FEATURES})
    header = ["customer_id", *ALL_FEATURES] + (["spend_unit"] if k.units else [])
    rows = []
    for cid in rng.sample(range(100000, 999999), n):
        c = rng.choice(centers)
        vals = {}
        for f in ALL_FEATURES:
            lo, hi = SPREAD[f]
            x = max(lo * 0.5, rng.gauss(c[f], (hi - lo) * 0.07))
            vals[f] = x
        row = [f"C{cid}", f"{vals['annual_spend']:.2f}", f"{vals['visits_per_month']:.1f}",
               f"{vals['avg_basket']:.2f}", str(max(1, round(vals["tenure_months"])))]
        if k.units:
            if rng.random() < 0.2:
                row[1] = f"{vals['annual_spend'] / 1000:.5f}"
                row.append("kEUR")
            else:
                row.append("EUR")
        if k.missing and rng.random() < 0.06:
            row[1 + rng.randrange(len(feats))] = ""
        rows.append(row)
    if k.dupes:
        for _ in range(max(2, n // 25)):
            pos = rng.randrange(len(rows))
            rows.insert(rng.randrange(pos + 1, len(rows) + 1), list(rows[pos]))
    return ",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in rows)


def steps_text(kn: Knobs) -> str:
    """The preprocessing and clustering steps: both cases state them alike."""
    steps = []
    if kn.dupes:
        steps.append("Some customers were exported twice: each `customer_id` counts once (keep its first "
                     "row; \"first\" below always means first in file order after this).")
    if kn.units:
        steps.append("`spend_unit` tells whether `annual_spend` is in `EUR` or in thousands of euros (`kEUR`): "
                     "convert everything to EUR.")
    if kn.missing:
        steps.append("Empty cells are missing values: replace each with the median of that column's present "
                     "values (the mean of the two middle values when their count is even).")
    if kn.log:
        steps.append("Spend is heavily skewed, so the model uses ln(1 + annual_spend) in place of "
                     "annual_spend (after the steps above).")
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


@register
class KmeansSegments(Family):
    name = "kmeans_segments"
    domain = "data_science"
    skill_types = ("Machine Learning", "Feature Engineering")
    primitive_skills = ("k-means clustering", "feature standardisation", "euclidean distance",
                        "missing value imputation")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    levels = {0: Knobs(n=30, features=1, missing=False, dupes=False, units=False, log=False),
              1: Knobs(n=60, features=2, missing=True, dupes=False, units=False, log=False),
              2: Knobs(n=150, features=3, missing=True, dupes=False, units=False, log=False),
              3: Knobs(n=300, features=4, missing=True, dupes=True, units=True, log=False),
              4: Knobs(n=500, features=4, missing=True, dupes=True, units=True, log=True)}

    @staticmethod
    def setup(t: TaskBuilder) -> tuple[int, tuple[str, ...], str, dict]:
        """(k, the model's features, the filled Python reference, its namespace)."""
        k = t.rng.randrange(3, 6)
        feats = ALL_FEATURES[:t.knobs.features]
        src = fill(REFERENCE, FEATURES=feats, LOG=t.knobs.log)
        return k, feats, src, run_python(src)

    @staticmethod
    def generate(t: TaskBuilder, ns: dict, k: int, n: int, apart: bool = False) -> tuple[str, str]:
        """Customers and their segments, with no near-tie anywhere in the run (so float noise cannot move a
        customer) and every one of the k segments used. ``apart``: every other k from 1 to 9 gives a
        within-segment sum of squares at least 1e-4 away (relatively)."""
        for _ in range(100):
            text = make_customers(t.rng, t.knobs, n)
            ns["GAP"][0] = math.inf
            out = ns["segments"](text, k)
            if ns["GAP"][0] <= 1e-6 or len({line.split(",")[-1] for line in out.splitlines()}) != k:
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
        k, feats, src, ns = self.setup(t)
        cases = [self.generate(t, ns, k, rng.randrange(max(k + 6, 25), 70)) for _ in range(10)]
        feat_list = ", ".join(f"`{f}`" for f in feats)
        t.say("I segment customers every month and want a small, deterministic tool for it. It reads a "
              "customer export on standard input (CSV, header `customer_id,"
              + ",".join(ALL_FEATURES) + (",spend_unit" if kn.units else "") + "`) and clusters the "
              f"customers with k-means on these features: {feat_list}. k is given below.")
        v = t.deliver(str(k), K_WHAT)
        t.say(f"The steps, in order: {steps_text(kn)} Output: {FMT}.")
        c_src = fill(C_REFERENCE, NF=str(len(feats)), LOG="1" if kn.log else "0",
                     FEATNAMES=", ".join(f'"{f}"' for f in feats), C_TRIM=C_TRIM, C_SPLIT=C_SPLIT)
        t.expect_program("k is always the value given above: hard-code it.", cases, {"Python": src, "C": c_src})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@K@@/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_output(t)
        kn = t.knobs
        k, feats, src, ns = self.setup(t)
        text, truth = self.generate(t, ns, k, kn.n, apart=t.partial_credit)
        t.add_file("/app/data/customers.csv", text)
        feat_list = ", ".join(f"`{f}`" for f in feats)
        t.say("Marketing wants customer segments from `/app/data/customers.csv`. Cluster the customers with "
              f"k-means on these features: {feat_list}; the number of segments k is given below.")
        v = t.deliver(str(k), K_WHAT)
        t.say(f"The steps, in order: {steps_text(kn)}")
        t.add_solution_file("segments.py", src)  # k comes on the command line
        if t.partial_credit:  # one number graded by its relative error: most lines would survive another k
            t.say("I need the within-segment sum of squares of the final segmentation: the sum over customers of "
                  "the squared Euclidean distance between the customer's standardised vector and the mean of the "
                  "standardised vectors of its final segment.")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/segments.py --inertia '
                    f'/app/data/customers.csv "{v}" > /app/out/inertia.txt')
            t.expect_number("/app/out/inertia.txt", ns["inertia"](text, k), 1e-6,
                            "the within-segment sum of squares, unrounded (at least 10 significant digits),")
            return
        t.say(f"Output format: {FMT}.")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/segments.py /app/data/customers.csv "{v}" '
                '> /app/out/segments.csv')
        t.expect_output("/app/out/segments.csv", truth, "the segment assignments (format above)")

    ATOMIC_RULE = ("The initial centroids of our k-means run are the `tenure_months` values of the first k customers "
                   "in the file (k is given below). I need the sum, over every customer, of the squared distance "
                   "from its `tenure_months` to the nearest of those k values (an integer).")

    @staticmethod
    def atomic_draw(t: TaskBuilder, ns: dict, k: int, n: int) -> tuple[str, str]:
        """Customers whose sum moves under every other k from 1 to 9 (a repeated centroid value would not)."""
        for _ in range(100):
            text = make_customers(t.rng, t.knobs, n)
            out = ns["spread"](text, k)
            if all(ns["spread"](text, alt) != out for alt in range(1, 10) if alt != k):
                return text, out
        raise FamilyError("kmeans_segments: no customer set that every other k gets wrong in 100 draws")

    def atomic_output(self, t: TaskBuilder) -> None:
        k = t.rng.randrange(3, 6)
        ns = run_python(fill(ATOMIC))
        text, truth = self.atomic_draw(t, ns, k, t.knobs.n)
        t.add_file("/app/data/customers.csv", text)
        t.say(f"Marketing's customer export is `/app/data/customers.csv` (CSV with a header). {self.ATOMIC_RULE}")
        v = t.deliver(str(k), K_WHAT)
        t.add_solution_file("spread.py", fill(ATOMIC))
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/spread.py /app/data/customers.csv "{v}" '
                '> /app/out/spread.txt')
        t.expect_output("/app/out/spread.txt", truth, "the sum")

    def atomic_program(self, t: TaskBuilder) -> None:
        rng = t.rng
        k = rng.randrange(3, 6)
        ns = run_python(fill(ATOMIC))
        cases = [self.atomic_draw(t, ns, k, rng.randrange(15, 40)) for _ in range(10)]
        t.say("I want a small tool that reads a customer export on standard input (CSV, header `customer_id,"
              + ",".join(ALL_FEATURES) + f"`) and prints one integer. {self.ATOMIC_RULE}")
        v = t.deliver(str(k), K_WHAT)
        t.expect_program("k is always the value given above: hard-code it.", cases,
                         {"Python": fill(ATOMIC), "C": fill(C_ATOMIC)})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@K@@/{v}/" "$f"; done')
