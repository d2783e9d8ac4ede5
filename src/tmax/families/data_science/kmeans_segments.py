"""Segment customers with k-means, reproducibly: deduplicate, fix a spend column logged in two units,
impute missing values with column medians, log-transform the skewed spend, standardise, then run
Lloyd's algorithm from a fixed initialisation and report every customer's segment."""

from __future__ import annotations

import math

from tmax.families.base import Family, TaskBuilder, register

REFERENCE = r'''
import math
import sys

K = __K__
FEATURES = __FEATURES__
LOG_SPEND = __LOG__  # use ln(1 + annual_spend) instead of annual_spend
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


def kmeans(points, k=None):
    k = k or K
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


def segments(text):
    ids, raw = load(text)
    assign = kmeans(prepare(raw))
    return "".join("%s,%d\n" % (i, a + 1) for i, a in zip(ids, assign))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            if len(sys.argv) > 2:
                K = int(sys.argv[2])
            sys.stdout.write(segments(f.read()))
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

#define K __K__
#define NF __NF__
#define LOG_SPEND __LOG__
#define MAX_ITER 100
static const char *FEATURES[NF] = {__FEATNAMES__};

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

static int split(char *line, char **f, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        char *c = strchr(p, ',');
        if (c) *c = 0;
        if (n < max) f[n] = trim(p);
        n++;
        if (!c) break;
        p = c + 1;
    }
    return n;
}

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


def make_customers(rng, k: dict, n: int) -> str:
    feats = ALL_FEATURES[:k["features"]]
    centers = []
    for _ in range(rng.randrange(3, 7)):
        centers.append({f: rng.uniform(*SPREAD[f]) for f in ALL_FEATURES})
    header = ["customer_id", *ALL_FEATURES] + (["spend_unit"] if k["units"] else [])
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
        if k["units"]:
            if rng.random() < 0.2:
                row[1] = f"{vals['annual_spend'] / 1000:.5f}"
                row.append("kEUR")
            else:
                row.append("EUR")
        if k["missing"] and rng.random() < 0.06:
            row[1 + rng.randrange(len(feats))] = ""
        rows.append(row)
    if k["dupes"]:
        for _ in range(max(2, n // 25)):
            pos = rng.randrange(len(rows))
            rows.insert(rng.randrange(pos + 1, len(rows) + 1), list(rows[pos]))
    return ",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in rows)


@register
class KmeansSegments(Family):
    name = "kmeans_segments"
    domain = "data_science"
    skill_types = ("Machine Learning", "Feature Engineering")
    primitive_skills = ("k-means clustering", "feature standardisation", "euclidean distance",
                        "missing value imputation")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    levels = {1: {"n": 60, "features": 2, "missing": True, "dupes": False, "units": False, "log": False},
              2: {"n": 150, "features": 3, "missing": True, "dupes": False, "units": False, "log": False},
              3: {"n": 300, "features": 4, "missing": True, "dupes": True, "units": True, "log": False},
              4: {"n": 500, "features": 4, "missing": True, "dupes": True, "units": True, "log": True}}

    def build(self, t: TaskBuilder) -> None:
        kn, rng = t.knobs, t.rng
        k = rng.randrange(3, 6)
        feats = ALL_FEATURES[:kn["features"]]
        src = REFERENCE.replace("__FEATURES__", repr(feats)).replace("__LOG__", str(kn["log"]))
        ns: dict = {}
        exec(src.replace("__K__", str(k)), ns)  # noqa: S102 - our own reference program

        def generate(n: int) -> tuple[str, str]:
            while True:  # no near-ties anywhere in the run, so float noise cannot move a customer
                text = make_customers(rng, kn, n)
                ns["GAP"][0] = math.inf
                out = ns["segments"](text)
                if ns["GAP"][0] > 1e-6 and len({line.split(",")[-1] for line in out.splitlines()}) == k:
                    return text, out

        steps = []
        if kn["dupes"]:
            steps.append("Some customers were exported twice: each `customer_id` counts once (keep its first "
                         "row; \"first\" below always means first in file order after this).")
        if kn["units"]:
            steps.append("`spend_unit` tells whether `annual_spend` is in `EUR` or in thousands of euros (`kEUR`): "
                         "convert everything to EUR.")
        if kn["missing"]:
            steps.append("Empty cells are missing values: replace each with the median of that column's present "
                         "values (the mean of the two middle values when their count is even).")
        if kn["log"]:
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
        feat_list = ", ".join(f"`{f}`" for f in feats)
        fmt = ("one line per customer, in file order (each customer once): `customer_id,segment` where segment is "
               "the number (1 to k) of its final centroid")

        if t.axes.verifier == "fuzz_equivalence":
            cases = [generate(rng.randrange(max(k + 6, 25), 70)) for _ in range(10)]
            t.say("I segment customers every month and want a small, deterministic tool for it. It reads a "
                  "customer export on standard input (CSV, header `customer_id,"
                  + ",".join(ALL_FEATURES) + (",spend_unit" if kn["units"] else "") + "`) and clusters the "
                  f"customers with k-means on these features: {feat_list}. k is given below.")
            v = t.deliver(str(k), "the number of segments k")
            t.say("The steps, in order: " + " ".join(steps) + f" Output: {fmt}.")
            c_src = (C_REFERENCE.replace("__NF__", str(len(feats))).replace("__LOG__", str(int(kn["log"])))
                     .replace("__FEATNAMES__", ", ".join(f'"{f}"' for f in feats)))
            t.expect_program("k is always the value given above: hard-code it.", cases, {"Python": src, "C": c_src})
            t.solve(f'for f in /app/solution.*; do sed -i "s/__K__/{v}/" "$f"; done')
            return

        text, truth = generate(kn["n"])
        t.add_file("/app/data/customers.csv", text)
        t.say("Marketing wants customer segments from `/app/data/customers.csv`. Cluster the customers with "
              f"k-means on these features: {feat_list}; the number of segments k is given below.")
        v = t.deliver(str(k), "the number of segments k")
        t.say("The steps, in order: " + " ".join(steps))
        t.say(f"Output format: {fmt}.")
        t.add_solution_file("segments.py", src.replace("__K__", "0"))
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/segments.py /app/data/customers.csv "{v}" '
                '> /app/out/segments.csv')
        t.expect_output("/app/out/segments.csv", truth, "the segment assignments (format above)")
