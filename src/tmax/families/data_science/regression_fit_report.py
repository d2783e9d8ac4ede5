"""What drives listing prices in one region? Clean a property listings export (duplicates, missing
values, square feet mixed with square metres, placeholder prices), one-hot encode the condition at
higher levels, fit ordinary least squares and report the coefficients, R^2 and a prediction. Variants:
`coefficients` (that report), `outliers` (the three listings with the largest residuals of the fit) and
`predict` (the other regions' listings priced by this region's model; at level 0 the line's price at one size)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families import unseen
from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import C_SPLIT, C_TRIM, fill, run_python

# @@SINCE@@ is the delivered start date: the oracle puts it in (the output case passes it on the command line).

CORE = r'''
import sys

REGION = "@REGION@"
SINCE = "@@SINCE@@"  # YYYYMMDD: only listings listed on or after this day are fitted (put in by the oracle)
CONDITION = @CONDITION@  # one-hot encode `condition` (baseline: fair)
QUERY = @QUERY@  # None, or (size_m2, age_years, distance_km, condition) to predict
SQFT_TO_M2 = 0.09290304
MISSING = ("", "NA")


def solve(a, b):
    """Gaussian elimination with partial pivoting; a is n x n, b has n entries."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def features(size, age, dist, cond):
    row = [1.0, size, age, dist]
    if CONDITION:
        row += [1.0 if cond == "good" else 0.0, 1.0 if cond == "excellent" else 0.0]
    return row


def money(x):
    s = "%.2f" % x
    return "0.00" if s == "-0.00" else s


def since_iso(text):
    if len(text) != 8 or not text.isdigit():
        raise SystemExit("the start date must be written YYYYMMDD, got %r" % text)
    y, m, d = int(text[:4]), int(text[4:6]), int(text[6:])
    if not (1 <= m <= 12 and 1 <= d <= 31):
        raise SystemExit("not a date: %r" % text)
    return "%04d-%02d-%02d" % (y, m, d)


def report(text, region=None, since=None):
    region = region or REGION
    first = since_iso(since or SINCE)
    lines = text.splitlines()
    header = [h.strip() for h in lines[0].split(",")]
    seen = set()
    xs, ys = [], []
    for line in lines[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(header):
            continue
        rec = dict(zip(header, parts))
        if rec["listing_id"] in seen:
            continue
        seen.add(rec["listing_id"])
        if rec["region"] != region or rec["listed_on"] < first:
            continue
        used = ("size", "age_years", "distance_km", "price") + (("condition",) if CONDITION else ())
        if any(rec[c] in MISSING for c in used):
            continue
        size = float(rec["size"])
        if rec["size_unit"] == "sqft":
            size *= SQFT_TO_M2
        price = float(rec["price"])
        if price <= 0:
            continue
        xs.append(features(size, float(rec["age_years"]), float(rec["distance_km"]), rec["condition"]))
        ys.append(price)
    k = len(xs[0])
    xtx = [[sum(r[i] * r[j] for r in xs) for j in range(k)] for i in range(k)]
    xty = [sum(r[i] * y for r, y in zip(xs, ys)) for i in range(k)]
    beta = solve(xtx, xty)
    mean = sum(ys) / len(ys)
    ss_res = sum((y - sum(b * v for b, v in zip(beta, r))) ** 2 for r, y in zip(xs, ys))
    ss_tot = sum((y - mean) ** 2 for y in ys)
    names = ["intercept", "size_m2", "age_years", "distance_km"]
    if CONDITION:
        names += ["condition_good", "condition_excellent"]
    out = ["n=%d" % len(ys)] + ["%s=%s" % (nm, money(b)) for nm, b in zip(names, beta)]
    out.append("r_squared=%.4f" % (1 - ss_res / ss_tot))
    if QUERY is not None:
        q = features(*QUERY)
        out.append("predicted_price=" + money(sum(b * v for b, v in zip(beta, q))))
    return "\n".join(out) + "\n"

'''

MAIN = r'''
if __name__ == "__main__":
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            sys.stdout.write(report(f.read(), sys.argv[2], sys.argv[3]))
    else:
        sys.stdout.write(report(sys.stdin.read()))
'''
REFERENCE = CORE + MAIN

# The other variants replace report(): the same cleaning and fit, another output of it.
VARIANT_PY = r'''
VARIANT = "@VARIANT@"  # "outliers": the 3 largest residuals; "predict": price the other regions' listings


def clean_rows(text, first):
    """(listing_id, region, features, price) of each listing from ``first`` on that the cleaning rules keep."""
    lines = text.splitlines()
    header = [h.strip() for h in lines[0].split(",")]
    seen = set()
    rows = []
    for line in lines[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(header):
            continue
        rec = dict(zip(header, parts))
        if rec["listing_id"] in seen:
            continue
        seen.add(rec["listing_id"])
        if rec["listed_on"] < first:
            continue
        used = ("size", "age_years", "distance_km", "price") + (("condition",) if CONDITION else ())
        if any(rec[c] in MISSING for c in used):
            continue
        size = float(rec["size"])
        if rec["size_unit"] == "sqft":
            size *= SQFT_TO_M2
        price = float(rec["price"])
        if price <= 0:
            continue
        x = features(size, float(rec["age_years"]), float(rec["distance_km"]), rec["condition"])
        rows.append((rec["listing_id"], rec["region"], x, price))
    return rows


def report(text, region=None, since=None):
    region = region or REGION
    rows = clean_rows(text, since_iso(since or SINCE))
    mine = [r for r in rows if r[1] == region]
    xs = [r[2] for r in mine]
    ys = [r[3] for r in mine]
    k = len(xs[0])
    xtx = [[sum(r[i] * r[j] for r in xs) for j in range(k)] for i in range(k)]
    xty = [sum(r[i] * y for r, y in zip(xs, ys)) for i in range(k)]
    beta = solve(xtx, xty)
    if VARIANT == "outliers":
        res = [(lid, y - sum(b * v for b, v in zip(beta, x))) for lid, _, x, y in mine]
        top = sorted(res, key=lambda p: -abs(p[1]))[:3]
        return "".join("%s,%s\n" % (lid, money(r)) for lid, r in top)
    return "".join("%s,%s\n" % (lid, money(sum(b * v for b, v in zip(beta, x))))
                   for lid, reg, x, _ in rows if reg != region)


'''

C_REFERENCE = r'''
/* Ordinary least squares fit of listing prices for one region (see the task statement). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONDITION @CONDITION@
#define HAS_QUERY @HASQ@
#define NP (CONDITION ? 6 : 4)
static const char *REGION = "@REGION@";
static const char *SINCE = "@@SINCE@@"; /* YYYYMMDD */
static const double QUERY[3] = {@QV@};
static const char *QUERY_CONDITION = "@QC@";
static const double SQFT_TO_M2 = 0.09290304;

@C_TRIM@

@C_SPLIT@

static int missing(const char *v) { return !*v || !strcmp(v, "NA"); }

static void features(double size, double age, double dist, const char *cond, double *row) {
    row[0] = 1.0; row[1] = size; row[2] = age; row[3] = dist;
    if (CONDITION) {
        row[4] = !strcmp(cond, "good") ? 1.0 : 0.0;
        row[5] = !strcmp(cond, "excellent") ? 1.0 : 0.0;
    }
}

static void money(double x, char *out) {
    sprintf(out, "%.2f", x);
    if (!strcmp(out, "-0.00")) strcpy(out, "0.00");
}

int main(void) {
    char *line = NULL, *f[32], *h[32];
    size_t cap = 0;
    if (getline(&line, &cap, stdin) == -1) return 0;
    char *hline = strdup(line);
    char first[16];
    int sy, sm, sd;
    if (strlen(SINCE) != 8 || sscanf(SINCE, "%4d%2d%2d", &sy, &sm, &sd) != 3 || sm < 1 || sm > 12 || sd < 1 || sd > 31)
        return 2;
    sprintf(first, "%04d-%02d-%02d", sy, sm, sd);
    int c_listed = 0;
    int nh = split(hline, h, 32), c_id = 0, c_region = 0, c_size = 0, c_unit = 0, c_age = 0, c_dist = 0, c_cond = 0,
        c_price = 0;
    for (int j = 0; j < nh && j < 32; j++) {
        if (!strcmp(h[j], "listing_id")) c_id = j;
        else if (!strcmp(h[j], "region")) c_region = j;
        else if (!strcmp(h[j], "size")) c_size = j;
        else if (!strcmp(h[j], "size_unit")) c_unit = j;
        else if (!strcmp(h[j], "age_years")) c_age = j;
        else if (!strcmp(h[j], "distance_km")) c_dist = j;
        else if (!strcmp(h[j], "condition")) c_cond = j;
        else if (!strcmp(h[j], "price")) c_price = j;
        else if (!strcmp(h[j], "listed_on")) c_listed = j;
    }
    int nseen = 0, seen_cap = 256, n = 0, rcap = 256;
    char **seen = malloc(seen_cap * sizeof(char *));
    double *xs = malloc(rcap * NP * sizeof(double)), *ys = malloc(rcap * sizeof(double));
    while (getline(&line, &cap, stdin) != -1) {
        char *copy = strdup(line);
        if (split(copy, f, 32) != nh) continue;
        int dup = 0;
        for (int i = 0; i < nseen && !dup; i++) dup = !strcmp(seen[i], f[c_id]);
        if (dup) continue;
        if (nseen == seen_cap) seen = realloc(seen, (seen_cap *= 2) * sizeof(char *));
        seen[nseen++] = f[c_id];
        if (strcmp(f[c_region], REGION) || strcmp(f[c_listed], first) < 0) continue;
        if (missing(f[c_size]) || missing(f[c_age]) || missing(f[c_dist]) || missing(f[c_price])) continue;
        if (CONDITION && missing(f[c_cond])) continue;
        double size = strtod(f[c_size], NULL);
        if (!strcmp(f[c_unit], "sqft")) size *= SQFT_TO_M2;
        double price = strtod(f[c_price], NULL);
        if (price <= 0) continue;
        if (n == rcap) {
            rcap *= 2;
            xs = realloc(xs, rcap * NP * sizeof(double));
            ys = realloc(ys, rcap * sizeof(double));
        }
        features(size, strtod(f[c_age], NULL), strtod(f[c_dist], NULL), f[c_cond], xs + n * NP);
        ys[n++] = price;
    }
    double m[NP][NP + 1], beta[NP];
    for (int i = 0; i < NP; i++) {
        for (int j = 0; j < NP; j++) {
            double s = 0;
            for (int r = 0; r < n; r++) s += xs[r * NP + i] * xs[r * NP + j];
            m[i][j] = s;
        }
        double s = 0;
        for (int r = 0; r < n; r++) s += xs[r * NP + i] * ys[r];
        m[i][NP] = s;
    }
    for (int col = 0; col < NP; col++) {
        int piv = col;
        for (int r = col + 1; r < NP; r++)
            if (fabs(m[r][col]) > fabs(m[piv][col])) piv = r;
        for (int c = 0; c <= NP; c++) {
            double t = m[col][c];
            m[col][c] = m[piv][c];
            m[piv][c] = t;
        }
        for (int r = col + 1; r < NP; r++) {
            double fct = m[r][col] / m[col][col];
            for (int c = col; c <= NP; c++) m[r][c] -= fct * m[col][c];
        }
    }
    for (int r = NP - 1; r >= 0; r--) {
        double s = 0;
        for (int c = r + 1; c < NP; c++) s += m[r][c] * beta[c];
        beta[r] = (m[r][NP] - s) / m[r][r];
    }
    double mean = 0, ss_res = 0, ss_tot = 0;
    for (int r = 0; r < n; r++) mean += ys[r];
    mean /= n;
    for (int r = 0; r < n; r++) {
        double fit = 0;
        for (int j = 0; j < NP; j++) fit += beta[j] * xs[r * NP + j];
        ss_res += pow(ys[r] - fit, 2);
        ss_tot += pow(ys[r] - mean, 2);
    }
    static const char *names[] = {"intercept", "size_m2", "age_years", "distance_km", "condition_good",
                                  "condition_excellent"};
    char buf[64];
    printf("n=%d\n", n);
    for (int j = 0; j < NP; j++) {
        money(beta[j], buf);
        printf("%s=%s\n", names[j], buf);
    }
    printf("r_squared=%.4f\n", 1 - ss_res / ss_tot);
    if (HAS_QUERY) {
        double q[6], p = 0;
        features(QUERY[0], QUERY[1], QUERY[2], QUERY_CONDITION, q);
        for (int j = 0; j < NP; j++) p += beta[j] * q[j];
        money(p, buf);
        printf("predicted_price=%s\n", buf);
    }
    return 0;
}
'''

C_VARIANT = r'''
/* Ordinary least squares fit of listing prices for one region, then its residuals or its predictions. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONDITION @CONDITION@
#define OUTLIERS @OUTLIERS@ /* 1: the 3 largest residuals; 0: price the other regions' listings */
#define NP (CONDITION ? 6 : 4)
static const char *REGION = "@REGION@";
static const char *SINCE = "@@SINCE@@"; /* YYYYMMDD */
static const double SQFT_TO_M2 = 0.09290304;

@C_TRIM@

@C_SPLIT@

static int missing(const char *v) { return !*v || !strcmp(v, "NA"); }

static void features(double size, double age, double dist, const char *cond, double *row) {
    row[0] = 1.0; row[1] = size; row[2] = age; row[3] = dist;
    if (CONDITION) {
        row[4] = !strcmp(cond, "good") ? 1.0 : 0.0;
        row[5] = !strcmp(cond, "excellent") ? 1.0 : 0.0;
    }
}

static void money(double x, char *out) {
    sprintf(out, "%.2f", x);
    if (!strcmp(out, "-0.00")) strcpy(out, "0.00");
}

int main(void) {
    char *line = NULL, *f[32], *h[32];
    size_t cap = 0;
    if (getline(&line, &cap, stdin) == -1) return 0;
    char *hline = strdup(line);
    char first[16];
    int sy, sm, sd;
    if (strlen(SINCE) != 8 || sscanf(SINCE, "%4d%2d%2d", &sy, &sm, &sd) != 3 || sm < 1 || sm > 12 || sd < 1 || sd > 31)
        return 2;
    sprintf(first, "%04d-%02d-%02d", sy, sm, sd);
    int c_listed = 0;
    int nh = split(hline, h, 32), c_id = 0, c_region = 0, c_size = 0, c_unit = 0, c_age = 0, c_dist = 0, c_cond = 0,
        c_price = 0;
    for (int j = 0; j < nh && j < 32; j++) {
        if (!strcmp(h[j], "listing_id")) c_id = j;
        else if (!strcmp(h[j], "region")) c_region = j;
        else if (!strcmp(h[j], "size")) c_size = j;
        else if (!strcmp(h[j], "size_unit")) c_unit = j;
        else if (!strcmp(h[j], "age_years")) c_age = j;
        else if (!strcmp(h[j], "distance_km")) c_dist = j;
        else if (!strcmp(h[j], "condition")) c_cond = j;
        else if (!strcmp(h[j], "price")) c_price = j;
        else if (!strcmp(h[j], "listed_on")) c_listed = j;
    }
    /* every kept listing (any region): id, whether it is this region's, features, price */
    int nseen = 0, seen_cap = 256, n = 0, rcap = 256;
    char **seen = malloc(seen_cap * sizeof(char *)), **ids = malloc(rcap * sizeof(char *));
    int *mine = malloc(rcap * sizeof(int));
    double *xs = malloc(rcap * NP * sizeof(double)), *ys = malloc(rcap * sizeof(double));
    while (getline(&line, &cap, stdin) != -1) {
        char *copy = strdup(line);
        if (split(copy, f, 32) != nh) continue;
        int dup = 0;
        for (int i = 0; i < nseen && !dup; i++) dup = !strcmp(seen[i], f[c_id]);
        if (dup) continue;
        if (nseen == seen_cap) seen = realloc(seen, (seen_cap *= 2) * sizeof(char *));
        seen[nseen++] = f[c_id];
        if (strcmp(f[c_listed], first) < 0) continue;
        if (missing(f[c_size]) || missing(f[c_age]) || missing(f[c_dist]) || missing(f[c_price])) continue;
        if (CONDITION && missing(f[c_cond])) continue;
        double size = strtod(f[c_size], NULL);
        if (!strcmp(f[c_unit], "sqft")) size *= SQFT_TO_M2;
        double price = strtod(f[c_price], NULL);
        if (price <= 0) continue;
        if (n == rcap) {
            rcap *= 2;
            xs = realloc(xs, rcap * NP * sizeof(double));
            ys = realloc(ys, rcap * sizeof(double));
            ids = realloc(ids, rcap * sizeof(char *));
            mine = realloc(mine, rcap * sizeof(int));
        }
        features(size, strtod(f[c_age], NULL), strtod(f[c_dist], NULL), f[c_cond], xs + n * NP);
        ids[n] = f[c_id];
        mine[n] = !strcmp(f[c_region], REGION);
        ys[n++] = price;
    }
    double m[NP][NP + 1], beta[NP];
    for (int i = 0; i < NP; i++) {
        for (int j = 0; j < NP; j++) {
            double s = 0;
            for (int r = 0; r < n; r++)
                if (mine[r]) s += xs[r * NP + i] * xs[r * NP + j];
            m[i][j] = s;
        }
        double s = 0;
        for (int r = 0; r < n; r++)
            if (mine[r]) s += xs[r * NP + i] * ys[r];
        m[i][NP] = s;
    }
    for (int col = 0; col < NP; col++) {
        int piv = col;
        for (int r = col + 1; r < NP; r++)
            if (fabs(m[r][col]) > fabs(m[piv][col])) piv = r;
        for (int c = 0; c <= NP; c++) {
            double t = m[col][c];
            m[col][c] = m[piv][c];
            m[piv][c] = t;
        }
        for (int r = col + 1; r < NP; r++) {
            double fct = m[r][col] / m[col][col];
            for (int c = col; c <= NP; c++) m[r][c] -= fct * m[col][c];
        }
    }
    for (int r = NP - 1; r >= 0; r--) {
        double s = 0;
        for (int c = r + 1; c < NP; c++) s += m[r][c] * beta[c];
        beta[r] = (m[r][NP] - s) / m[r][r];
    }
    char buf[64];
    double *res = malloc((n + 1) * sizeof(double));
    for (int r = 0; r < n; r++) {
        double fit = 0;
        for (int j = 0; j < NP; j++) fit += beta[j] * xs[r * NP + j];
        res[r] = OUTLIERS ? ys[r] - fit : fit;
        if (!OUTLIERS && !mine[r]) {
            money(fit, buf);
            printf("%s,%s\n", ids[r], buf);
        }
    }
    if (OUTLIERS) {
        int *taken = calloc(n + 1, sizeof(int));
        for (int k = 0; k < 3; k++) {
            int best = -1;
            for (int r = 0; r < n; r++)
                if (mine[r] && !taken[r] && (best < 0 || fabs(res[r]) > fabs(res[best]))) best = r;
            if (best < 0) break;
            taken[best] = 1;
            money(res[best], buf);
            printf("%s,%s\n", ids[best], buf);
        }
    }
    return 0;
}
'''

# Level 0: one predictor, one region, no cleaning: the slope from one awk pass over running sums.
ATOMIC = r'''
import sys

SINCE = "@@SINCE@@"  # YYYYMMDD: only listings listed on or after this day are fitted


def slope(text, since=None):
    day = since or SINCE
    first = "%s-%s-%s" % (day[:4], day[4:6], day[6:])
    n = sx = sy = sxx = sxy = 0.0
    for line in text.splitlines()[1:]:
        r = line.split(",")
        if len(r) < 9 or r[8] < first:
            continue
        x, y = float(r[2]), float(r[7])
        n += 1
        sx += x
        sy += y
        sxx += x * x
        sxy += x * y
    return (n * sxy - sx * sy) / (n * sxx - sx * sx)


def report(text, since=None):
    s = "%.2f" % slope(text, since)
    return ("0.00" if s == "-0.00" else s) + "\n"


if __name__ == "__main__":
    if len(sys.argv) > 2:
        with open(sys.argv[1]) as f:
            sys.stdout.write(report(f.read(), sys.argv[2]))
    else:
        sys.stdout.write(report(sys.stdin.read()))
'''

C_ATOMIC = r'''
/* OLS slope of price on size (standard input) over listings on or after the hard-coded start date. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SINCE = "@@SINCE@@"; /* YYYYMMDD */

int main(void) {
    static char line[4096];
    char first[11];
    snprintf(first, sizeof first, "%.4s-%.2s-%.2s", SINCE, SINCE + 4, SINCE + 6);
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    int header = 1;
    while (fgets(line, sizeof line, stdin)) {
        if (header) { header = 0; continue; }
        line[strcspn(line, "\r\n")] = 0;
        char *f[16], *p = line;
        int nf = 0;
        f[nf++] = p;
        while (nf < 16 && (p = strchr(p, ','))) {
            *p++ = 0;
            f[nf++] = p;
        }
        if (nf < 9 || strcmp(f[8], first) < 0) continue;
        double x = strtod(f[2], NULL), y = strtod(f[7], NULL);
        n += 1;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f", (n * sxy - sx * sy) / (n * sxx - sx * sx));
    printf("%s\n", strcmp(buf, "-0.00") ? buf : "0.00");
    return 0;
}
'''

# Level 0's other variants: the same line, then its 3 largest residuals or its price at one size.
ATOMIC_VARIANT = r'''
import sys

SINCE = "@@SINCE@@"  # YYYYMMDD: only listings listed on or after this day are fitted
VARIANT = "@VARIANT@"  # "outliers" or "predict"
SIZE = @SIZE@  # predict: the floor area (m2) to price


def money(x):
    s = "%.2f" % x
    return "0.00" if s == "-0.00" else s


def points(text, since=None):
    day = since or SINCE
    first = "%s-%s-%s" % (day[:4], day[4:6], day[6:])
    pts = []
    for line in text.splitlines()[1:]:
        r = line.split(",")
        if len(r) < 9 or r[8] < first:
            continue
        pts.append((r[0], float(r[2]), float(r[7])))
    return pts


def line(pts):
    n = sx = sy = sxx = sxy = 0.0
    for _, x, y in pts:
        n += 1
        sx += x
        sy += y
        sxx += x * x
        sxy += x * y
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - b * sx) / n, b


def slope(text, since=None):
    return line(points(text, since))[1]


def report(text, since=None):
    pts = points(text, since)
    a, b = line(pts)
    if VARIANT == "predict":
        return money(a + b * SIZE) + "\n"
    res = sorted(((lid, y - (a + b * x)) for lid, x, y in pts), key=lambda p: -abs(p[1]))[:3]
    return "".join("%s,%s\n" % (lid, money(r)) for lid, r in res)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        with open(sys.argv[1]) as f:
            sys.stdout.write(report(f.read(), sys.argv[2]))
    else:
        sys.stdout.write(report(sys.stdin.read()))
'''

C_ATOMIC_VARIANT = r'''
/* OLS line of price on size (standard input) from the hard-coded start date on: residuals or a prediction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUTLIERS @OUTLIERS@ /* 1: the 3 largest residuals; 0: the price at SIZE */
static const char *SINCE = "@@SINCE@@"; /* YYYYMMDD */
static const double SIZE = @SIZE@;

static void money(double x, char *out) {
    sprintf(out, "%.2f", x);
    if (!strcmp(out, "-0.00")) strcpy(out, "0.00");
}

int main(void) {
    static char line[4096];
    static char ids[4096][32];
    static double xs[4096], ys[4096];
    char first[11], buf[64];
    snprintf(first, sizeof first, "%.4s-%.2s-%.2s", SINCE, SINCE + 4, SINCE + 6);
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    int header = 1, np = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (header) { header = 0; continue; }
        line[strcspn(line, "\r\n")] = 0;
        char *f[16], *p = line;
        int nf = 0;
        f[nf++] = p;
        while (nf < 16 && (p = strchr(p, ','))) {
            *p++ = 0;
            f[nf++] = p;
        }
        if (nf < 9 || strcmp(f[8], first) < 0 || np == 4096) continue;
        double x = strtod(f[2], NULL), y = strtod(f[7], NULL);
        snprintf(ids[np], sizeof ids[np], "%s", f[0]);
        xs[np] = x;
        ys[np++] = y;
        n += 1;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    double b = (n * sxy - sx * sy) / (n * sxx - sx * sx), a = (sy - b * sx) / n;
    if (!OUTLIERS) {
        money(a + b * SIZE, buf);
        printf("%s\n", buf);
        return 0;
    }
    static int taken[4096];
    for (int k = 0; k < 3; k++) {
        int best = -1;
        double rb = 0;
        for (int i = 0; i < np; i++) {
            double r = ys[i] - (a + b * xs[i]);
            if (!taken[i] && (best < 0 || fabs(r) > fabs(rb))) best = i, rb = r;
        }
        if (best < 0) break;
        taken[best] = 1;
        money(rb, buf);
        printf("%s,%s\n", ids[best], buf);
    }
    return 0;
}
'''

CONDITIONS = ("fair", "good", "excellent")
HEADER = "listing_id,region,size,size_unit,age_years,distance_km,condition,price,listed_on"
SINCE_WHAT = "the start date (YYYYMMDD)"
# The column order of the export, by variant (the fitting programs find columns by name).
COLUMNS = {"coefficients": HEADER.split(","),
           "outliers": "listing_id,listed_on,region,condition,size,size_unit,age_years,distance_km,price".split(","),
           "predict": "region,listing_id,price,size,size_unit,condition,age_years,distance_km,listed_on".split(",")}
ALTS = (-2, -1, 1, 2)  # start dates a guess would land on, in days from the true one


@dataclass(frozen=True)
class Knobs:
    rows: int  # listings per region in the output case (also its span in days)
    regions: int  # regions in the export
    missing: bool  # empty (or NA) fields
    dupes: bool  # listings exported twice
    sqft: bool  # sizes in square feet too
    condition: bool  # one-hot encode the condition
    placeholders: bool  # price 0 for unsold listings
    query: bool  # also predict one listing's price


def c_source(condition: bool, query, region: str) -> str:
    q = query or (0.0, 0.0, 0.0, "fair")
    return fill(C_REFERENCE, CONDITION="1" if condition else "0", HASQ="0" if query is None else "1",
                QV=", ".join(repr(float(v)) for v in q[:3]), QC=q[3], REGION=region, C_TRIM=C_TRIM, C_SPLIT=C_SPLIT)


def make_listings(rng, k: Knobs, regions: list[str], per_region: int, start, span: int, first_day: int = 0,
                  columns: list[str] | None = None) -> str:
    """Listings put on the market between ``first_day`` and ``span`` days after ``start`` (a date), with
    ``columns`` (default: HEADER's order)."""

    rows: list[list[str]] = []
    params = {}
    for r in regions:
        params[r] = (rng.uniform(20000, 90000), rng.uniform(1500, 5200), -rng.uniform(200, 1500),
                     -rng.uniform(800, 4500), rng.uniform(5000, 20000), rng.uniform(15000, 45000))
    ids = rng.sample(range(10000, 99999), per_region * len(regions))
    for i, lid in enumerate(ids):
        region = regions[i % len(regions)]
        b0, b_size, b_age, b_dist, b_good, b_exc = params[region]
        size = round(rng.uniform(35, 220), 1)
        age = rng.randrange(0, 80)
        dist = round(rng.uniform(0.3, 35), 2)
        cond = rng.choice(CONDITIONS)
        price = b0 + b_size * size + b_age * age + b_dist * dist
        if k.condition:
            price += {"fair": 0.0, "good": b_good, "excellent": b_exc}[cond]
        price = max(5000, round(price + rng.gauss(0, 0.06 * price)))
        unit, shown = "m2", f"{size:.1f}"
        if k.sqft and rng.random() < 0.25:
            unit, shown = "sqft", f"{size / 0.09290304:.1f}"
        listed = (start + dt.timedelta(days=rng.randrange(first_day, span))).isoformat()
        row = [f"L{lid}", region, shown, unit, str(age), f"{dist:.2f}", cond, str(price), listed]
        if k.missing and rng.random() < 0.05:
            row[rng.choice([2, 4, 5, 6, 7])] = rng.choice(["", "NA"] if k.sqft else [""])
        if k.placeholders and rng.random() < 0.04:
            row[7] = "0"
        rows.append(row)
    if k.dupes:
        for _ in range(max(2, len(rows) // 30)):
            pos = rng.randrange(len(rows))
            rows.insert(rng.randrange(pos, len(rows) + 1), list(rows[pos]))
    if columns is not None and columns != COLUMNS["coefficients"]:
        at = [COLUMNS["coefficients"].index(c) for c in columns]
        return ",".join(columns) + "\n" + "".join(",".join(r[i] for i in at) + "\n" for r in rows)
    return HEADER + "\n" + "".join(",".join(r) + "\n" for r in rows)


class Fit:
    """One task's regions, start day, query and reference."""

    def __init__(self, t: TaskBuilder):
        k, rng = t.knobs, t.rng
        self.variant = t.variant
        self.columns = COLUMNS[t.variant]
        self.header = ",".join(self.columns)
        self.regions = unseen.distinct(lambda: t.code(1), k.regions)
        self.region = rng.choice(self.regions)
        self.query = None
        if k.query:
            self.query = (float(rng.randrange(45, 180)), float(rng.randrange(1, 60)), round(rng.uniform(1, 25), 1),
                          rng.choice(CONDITIONS))
        if t.variant == "coefficients":
            self.src = fill(REFERENCE, CONDITION=k.condition, QUERY=self.query, REGION=self.region)
            self.c_src = c_source(k.condition, self.query, self.region)
        else:
            self.src = fill(CORE + VARIANT_PY + MAIN, CONDITION=k.condition, QUERY=None, REGION=self.region,
                            VARIANT=t.variant)
            self.c_src = fill(C_VARIANT, CONDITION="1" if k.condition else "0",
                              OUTLIERS="1" if t.variant == "outliers" else "0", REGION=self.region, C_TRIM=C_TRIM,
                              C_SPLIT=C_SPLIT)
        self.ns = run_python(self.src)
        self.start = dt.date(2023, 1, 2) + dt.timedelta(days=rng.randrange(0, 600))

    def ymd(self, day: int) -> str:
        return (self.start + dt.timedelta(days=day)).strftime("%Y%m%d")

    def fit(self, text: str, day: int) -> str | None:
        try:
            return self.ns["report"](text, self.region, self.ymd(day)) or None
        except ZeroDivisionError:  # a singular design matrix
            return None

    def well_posed(self, text: str, day: int) -> bool:
        first = (self.start + dt.timedelta(days=day)).isoformat()
        c_region, c_cond, c_listed = (self.columns.index(c) for c in ("region", "condition", "listed_on"))
        mine = [line.split(",") for line in text.splitlines()[1:]]
        mine = [r[c_cond] for r in mine if r[c_region] == self.region and r[c_listed] >= first]
        return min(mine.count(c) for c in CONDITIONS) >= 3

    def out_path(self) -> str:
        return {"coefficients": "/app/out/model.txt", "outliers": "/app/out/outliers.txt",
                "predict": "/app/out/predictions.txt"}[self.variant]

    def texts(self, k: Knobs) -> tuple[str, str, str]:
        """(the model, the cleaning rules, the output format): both cases state them alike."""
        query = self.query
        model = ("an ordinary least squares linear regression of `price` on an intercept, the floor area in "
                 "square metres, `age_years` and `distance_km`")
        if k.condition:
            model += (", plus the one-hot encoded `condition` with `fair` as the baseline (two indicator columns, "
                      "`condition_good` and `condition_excellent`)")
        rules = ["Only listings put on the market on or after the start date given below count (`listed_on`, "
                 "ISO dates; prices before it were set under the old mortgage rates)."]
        if k.dupes:
            rules.append("Each `listing_id` counts once: if it appears again, keep the first occurrence.")
        if k.missing:
            miss = "empty or `NA`" if k.sqft else "empty"
            rules.append(f"Rows with any {miss} field among the columns the model uses are dropped (no imputation).")
        if k.sqft:
            rules.append("`size_unit` says whether `size` is in `m2` or `sqft`; convert square feet with "
                         "1 sqft = 0.09290304 m2 before fitting.")
        else:
            rules.append("`size` is in square metres (`size_unit` is always `m2`).")
        if k.placeholders:
            rules.append("A `price` of 0 is a placeholder for an unsold listing: drop those rows.")
        fields = ["`n` (number of listings used in the fit)", "`intercept`", "`size_m2`", "`age_years`",
                  "`distance_km`"]
        if k.condition:
            fields += ["`condition_good`", "`condition_excellent`"]
        fields.append("`r_squared` (coefficient of determination of the fit, on the rows used)")
        if query:
            fields.append(f"`predicted_price` (the model's price for a {query[0]:g} m2, {query[1]:g}-year-old "
                          f"listing {query[2]:g} km from the centre in `{query[3]}` condition)")
        fmt = ("`key=value` lines in this order: " + ", ".join(fields) + ". Coefficients"
               + (" and the predicted price" if query else "") + " are rounded to 2 decimals, `r_squared` to 4 "
               "decimals, `n` is an integer; never write a negative zero.")
        if self.variant == "outliers":
            fmt = ("three lines `listing_id,residual`: the three listings used in the fit with the largest absolute "
                   "residual (observed `price` minus the fitted price), largest first (ties: the earlier row first), "
                   "the residual signed and rounded to 2 decimals; never write a negative zero.")
        elif self.variant == "predict":
            fmt = (f"one line `listing_id,predicted_price` for every listing of the other regions that the same rules "
                   f"keep (start date, cleaning), in file order, priced with the model fitted on region "
                   f"`{self.region}` and rounded to 2 decimals; never write a negative zero.")
        return model, " ".join(rules), fmt


@register
class RegressionFitReport(Family):
    name = "regression_fit_report"
    domain = "data_science"
    skill_types = ("Statistical Inference", "Machine Learning", "Feature Engineering")
    primitive_skills = ("linear regression fit", "coefficient of determination", "one-hot encoding",
                        "Gaussian elimination", "cohort filtering")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    variants = ("coefficients", "outliers", "predict")
    levels = {0: Knobs(rows=30, regions=1, missing=False, dupes=False, sqft=False, condition=False,
                       placeholders=False, query=False),
              1: Knobs(rows=60, regions=2, missing=False, dupes=False, sqft=False, condition=True,
                       placeholders=False, query=False),
              2: Knobs(rows=90, regions=3, missing=True, dupes=True, sqft=False, condition=True,
                       placeholders=False, query=False),
              3: Knobs(rows=160, regions=3, missing=True, dupes=True, sqft=True, condition=True,
                       placeholders=False, query=False),
              4: Knobs(rows=260, regions=4, missing=True, dupes=True, sqft=True, condition=True,
                       placeholders=True, query=True)}

    def program_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_program(t)
        k, rng = t.knobs, t.rng
        f = Fit(t)
        model, rules, fmt = f.texts(k)
        intro = (f"Every week our brokers export property listings as CSV (header `{f.header}`) and I want a small "
                 f"tool that reads one export on standard input and fits {model}, using only the listings of "
                 f"region `{f.region}`.")
        if t.variant == "outliers":
            intro = (f"Our brokers' weekly listings CSV (header `{f.header}`) hides mispriced homes. I want a program "
                     f"that reads one export on standard input, fits {model} on the listings of region "
                     f"`{f.region}`, and prints the listings that sit furthest from that fit.")
        elif t.variant == "predict":
            intro = (f"I want a program that reads a listings export (CSV, header `{f.header}`) on standard input, "
                     f"fits {model} on region `{f.region}` alone, and uses that model to price the listings of "
                     f"every other region, as a cross-market comparison.")
        span = 60
        for _ in range(30):
            day = rng.randrange(15, 40)
            cases = []
            for _ in range(60):
                if len(cases) == 10:
                    break
                # The worked examples hold only listings from the start date on: they show the fit, not the date.
                example = len(cases) < 2
                text = make_listings(rng, k, f.regions, rng.randrange(18, 40) if example else rng.randrange(36, 70),
                                     f.start, span, day if example else 0, f.columns)
                out = f.fit(text, day) if f.well_posed(text, day) else None
                if out is not None:
                    cases.append((text, out))
            if len(cases) < 10 or unseen.visible(t, f.ymd(day), intro, rules, fmt, *(x for c in cases[:2] for x in c)):
                continue
            if all(any(f.fit(x, day + a) != y for x, y in cases[2:]) for a in ALTS):
                break
        else:
            raise FamilyError("regression_fit_report: no start date that every near miss gets wrong in 30 draws")
        t.say(intro)
        v = t.deliver(f.ymd(day), SINCE_WHAT)
        t.say(f"{rules} The output is {fmt}")
        t.expect_program("The start date is always the one given above: hard-code it.", cases,
                         {"Python": f.src, "C": f.c_src})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@SINCE@@/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_output(t)
        k, rng = t.knobs, t.rng
        f = Fit(t)
        model, rules, fmt = f.texts(k)
        span = k.rows
        for _ in range(30):
            text = make_listings(rng, k, f.regions, k.rows, f.start, span, columns=f.columns)
            days = list(range(span // 6, span // 2))
            rng.shuffle(days)
            good: dict[str, str] = {}  # start date -> report, for dates every near miss gets wrong
            for day in days[:12]:
                truth = f.fit(text, day) if f.well_posed(text, day) else None
                if truth is None:
                    continue
                # Every line must move under a near-miss date, or a guess would earn line credit.
                lines = set(truth.splitlines())
                if all((o := f.fit(text, day + a)) is not None and not lines & set(o.splitlines()) for a in ALTS):
                    good[f.ymd(day)] = truth
                    if len(good) == 3:
                        break
            if good:
                break
        else:
            raise FamilyError("regression_fit_report: no start date that every near miss gets wrong in 30 draws")
        t.add_file("/app/data/listings.csv", text)
        intro = (f"`/app/data/listings.csv` is our brokers' listings export (columns `{f.header}`). Fit {model}, "
                 f"using only the listings of region `{f.region}`.")
        if t.variant == "outliers":
            intro = (f"Which listings of region `{f.region}` are furthest off the market? Take our brokers' export "
                     f"`/app/data/listings.csv` (columns `{f.header}`), fit {model} on that region's listings and "
                     f"write its biggest residuals to `{f.out_path()}`.")
        elif t.variant == "predict":
            intro = (f"Price the other markets with one region's model: from `/app/data/listings.csv` (columns "
                     f"`{f.header}`) fit {model} on region `{f.region}` only, then write to `{f.out_path()}` what "
                     f"that model says each listing of the other regions is worth.")
        since = unseen.unseen(t, lambda: rng.choice(list(good)), intro, rules, fmt)
        t.say(intro)
        v = t.deliver(since, SINCE_WHAT)
        t.say(f"Cleaning rules: {rules}")
        t.say(f"Output format: {fmt}")
        t.add_solution_file("fit.py", f.src)  # the start date comes on the command line
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/fit.py /app/data/listings.csv {f.region} '
                f'"{v}" > {f.out_path()}')
        what = {"coefficients": "the model report (format above)", "outliers": "the largest residuals (format above)",
                "predict": "the predicted prices (format above)"}[t.variant]
        t.expect_output(f.out_path(), good[since], what)

    ATOMIC_RULE = ("Fit a straight line price = a + b * size by ordinary least squares to the listings put on the "
                   "market on or after the start date given below (`listed_on` is an ISO date; `size` is in square "
                   "metres). I need the slope b (price per square metre), rounded to 2 decimals.")

    @staticmethod
    def atomic_rule(t: TaskBuilder, size: float) -> str:
        if t.variant == "coefficients":
            return RegressionFitReport.ATOMIC_RULE
        fit = ("Take the listings put on the market on or after the start date given below (`listed_on` is an ISO "
               "date; `size` is in square metres) and fit the line price = a + b * size to them by ordinary least "
               "squares.")
        if t.variant == "outliers":
            return (fit + " I need the three listings furthest from that line: lines `listing_id,residual` (residual ="
                    " price minus a - b * size, signed, 2 decimals), largest absolute residual first.")
        return fit + f" I need the line's price for a {size:g} m2 listing, a + b * {size:g}, rounded to 2 decimals."

    @staticmethod
    def atomic_src(t: TaskBuilder, size: float, c: bool = False) -> str:
        if t.variant == "coefficients":
            return fill(C_ATOMIC if c else ATOMIC)
        if c:
            return fill(C_ATOMIC_VARIANT, OUTLIERS="1" if t.variant == "outliers" else "0", SIZE=repr(size))
        return fill(ATOMIC_VARIANT, VARIANT=t.variant, SIZE=repr(size))

    @staticmethod
    def atomic_setup(t: TaskBuilder) -> tuple[list[str], dt.date, dict, float]:
        regions = unseen.distinct(lambda: t.code(1), t.knobs.regions)
        start = dt.date(2023, 1, 2) + dt.timedelta(days=t.rng.randrange(0, 600))
        size = float(t.rng.randrange(45, 180)) if t.variant == "predict" else 0.0  # predict: the size to price
        return regions, start, run_python(RegressionFitReport.atomic_src(t, size)), size

    @staticmethod
    def atomic_good(ns: dict, text: str, start: dt.date, day: int) -> str | None:
        """The report for start ``day`` if every near-miss date changes it and no rounding tie is near."""
        def ymd(d: int) -> str:
            return (start + dt.timedelta(days=d)).strftime("%Y%m%d")

        try:
            b = ns["slope"](text, ymd(day))
            out = ns["report"](text, ymd(day))
            if abs(abs(b) * 100 % 1 - 0.5) < 1e-4 or any(ns["report"](text, ymd(day + a)) == out for a in ALTS):
                return None
        except ZeroDivisionError:  # too few listings left for a line
            return None
        return out

    def atomic_output(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        regions, start, ns, size = self.atomic_setup(t)
        for _ in range(30):
            text = make_listings(rng, k, regions, k.rows, start, k.rows)
            good = {}
            for day in range(k.rows // 6, k.rows // 2):
                out = self.atomic_good(ns, text, start, day)
                if out is not None:
                    good[(start + dt.timedelta(days=day)).strftime("%Y%m%d")] = out
            if good:
                break
        else:
            raise FamilyError("regression_fit_report: no start date that every near miss gets wrong in 30 draws")
        t.add_file("/app/data/listings.csv", text)
        out = {"coefficients": "/app/out/slope.txt", "outliers": "/app/out/outliers.txt",
               "predict": "/app/out/price.txt"}[t.variant]
        intro = (f"`/app/data/listings.csv` is our brokers' listings export (columns `{HEADER}`). "
                 f"{self.atomic_rule(t, size)}")
        if t.variant != "coefficients":
            intro += f" Write it to `{out}`."
        since = unseen.unseen(t, lambda: rng.choice(sorted(good)), intro)
        t.say(intro)
        v = t.deliver(since, SINCE_WHAT)
        t.add_solution_file("slope.py", self.atomic_src(t, size))
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/slope.py /app/data/listings.csv "{v}" '
                f'> {out}')
        t.expect_output(out, good[since], {"coefficients": "the slope", "outliers": "the largest residuals",
                                           "predict": "the predicted price"}[t.variant])

    def atomic_program(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        regions, start, ns, size = self.atomic_setup(t)
        intro = ("Every week our brokers export property listings as CSV (header `" + HEADER + "`) and I want a small "
                 f"tool that reads one export on standard input and prints one number. {self.ATOMIC_RULE}")
        if t.variant == "outliers":
            intro = ("I want a small tool that reads a listings CSV export (header `" + HEADER + "`) on standard input "
                     f"and flags the listings that stray furthest from a price-by-size line. "
                     + self.atomic_rule(t, size))
        elif t.variant == "predict":
            intro = ("I want a small tool that reads a listings CSV export (header `" + HEADER + "`) on standard input "
                     f"and quotes one price from a price-by-size line. {self.atomic_rule(t, size)}")
        span = 60
        for _ in range(30):
            day = rng.randrange(15, 40)
            since = (start + dt.timedelta(days=day)).strftime("%Y%m%d")
            cases = []
            for _ in range(60):
                if len(cases) == 10:
                    break
                # The worked examples hold only listings from the start date on: they show the fit, not the date.
                example = len(cases) < 2
                text = make_listings(rng, k, regions, rng.randrange(12, 25) if example else rng.randrange(25, 50),
                                     start, span, day if example else 0)
                try:
                    b = ns["slope"](text, since)
                except ZeroDivisionError:
                    continue
                if abs(abs(b) * 100 % 1 - 0.5) >= 1e-4:
                    cases.append((text, ns["report"](text, since)))
            if len(cases) < 10 or unseen.visible(t, since, intro, *(x for c in cases[:2] for x in c)):
                continue
            alts = [(start + dt.timedelta(days=day + a)).strftime("%Y%m%d") for a in ALTS]
            if all(any(ns["report"](x, alt) != y for x, y in cases[2:]) for alt in alts):
                break
        else:
            raise FamilyError("regression_fit_report: no start date that every near miss gets wrong in 30 draws")
        t.say(intro)
        v = t.deliver(since, SINCE_WHAT)
        t.expect_program("The start date is always the one given above: hard-code it.", cases,
                         {"Python": self.atomic_src(t, size), "C": self.atomic_src(t, size, c=True)})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@SINCE@@/{v}/" "$f"; done')
