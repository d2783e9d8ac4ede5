"""What does a store's week look like? Classical additive decomposition of daily sales with a weekly
period: corrections that replace earlier rows, gaps filled by linear interpolation, quantities
logged in dozens, a centred 7-day moving-average trend, normalised weekday indices and, at the top
level, a trend-plus-season forecast of the next week."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families import unseen
from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import C_SPLIT, C_TRIM, fill, run_python

# @@ASOF@@ is the delivered as-of date: the oracle puts it in (the output case passes it on the command line).

REFERENCE = r'''
import datetime
import sys

STORE = "@STORE@"
ASOF = "@@ASOF@@"  # YYYYMMDD: the backtest's as-of date; later rows are not known yet (put in by the oracle)
FORECAST = @FORECAST@  # also forecast the 7 days after the last date
MODE = @MODE@  # pattern: the weekday indices; anomalies: the largest residuals; adjusted: the last week deseasonalised
TOP = 5  # anomalies: how many days
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def as_of(text):
    if len(text) != 8 or not text.isdigit():
        raise SystemExit("as-of date must be written YYYYMMDD, got %r" % text)
    return datetime.datetime.strptime(text, "%Y%m%d").date()


def series(text, store, asof):
    """Daily units of one store up to ``asof``, gaps interpolated: [(date, units)] from its first to its last
    date."""
    lines = text.splitlines()
    header = [h.strip() for h in lines[0].split(",")]
    known = {}
    for line in lines[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(header):
            continue
        rec = dict(zip(header, parts))
        if rec["store"] != store:
            continue
        day = datetime.date.fromisoformat(rec["date"])
        if day > asof:
            continue
        if rec["units"] == "":
            known.pop(day, None)  # the latest row for the day says: unknown
            continue
        units = float(rec["units"])
        if rec.get("unit") == "dozen":
            units *= 12
        known[day] = units
    days = sorted(known)
    out = []
    for a, b in zip(days, days[1:]):
        gap = (b - a).days
        for i in range(gap):
            out.append((a + datetime.timedelta(days=i), known[a] + (known[b] - known[a]) * i / gap))
    out.append((days[-1], known[days[-1]]))
    return out


def components(text, store=None, asof=None):
    """(the daily series, its units, the trend, the seasonal index of each weekday)."""
    s = series(text, store or STORE, as_of(asof or ASOF))
    ys = [y for _, y in s]
    trend = [None] * len(ys)
    for i in range(3, len(ys) - 3):
        trend[i] = sum(ys[i - 3:i + 4]) / 7
    sums, counts = [0.0] * 7, [0] * 7
    for (day, y), tr in zip(s, trend):
        if tr is not None:
            sums[day.weekday()] += y - tr
            counts[day.weekday()] += 1
    raw = [sums[d] / counts[d] for d in range(7)]
    centre = sum(raw) / 7
    season = [r - centre for r in raw]
    return s, ys, trend, season


def residuals(text, store=None, asof=None):
    """(date, units - trend - seasonal index) of every day where the trend is defined."""
    s, ys, trend, season = components(text, store, asof)
    return [(day.isoformat(), y - tr - season[day.weekday()]) for (day, y), tr in zip(s, trend) if tr is not None]


def decompose(text, store=None, asof=None):
    s, ys, trend, season = components(text, store, asof)
    if MODE == "anomalies":  # largest absolute residual first, a tie to the earlier date
        return sorted(residuals(text, store, asof), key=lambda r: (-abs(r[1]), r[0]))[:TOP]
    if MODE == "adjusted":
        return [(day.isoformat(), y - season[day.weekday()]) for day, y in s[-7:]]
    rows = [(DAYS[d], season[d]) for d in range(7)]
    if FORECAST:
        last = len(ys) - 4
        slope = (trend[last] - trend[last - 7]) / 7
        rows.append(("trend_last", trend[last]))
        rows.append(("trend_slope", slope))
        for h in range(1, 8):
            day = s[-1][0] + datetime.timedelta(days=h)
            steps = (day - s[last][0]).days
            rows.append((day.isoformat(), trend[last] + slope * steps + season[day.weekday()]))
    return rows


def fmt(x):
    s = "%.2f" % x
    return "0.00" if s == "-0.00" else s


def report(text, store=None, asof=None):
    return "".join("%s %s\n" % (name, fmt(v)) for name, v in decompose(text, store, asof))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            sys.stdout.write(report(f.read(), sys.argv[2], sys.argv[3]))
    else:
        sys.stdout.write(report(sys.stdin.read()))
'''


C_REFERENCE = r'''
/* Classical additive decomposition (weekly period) of one store's daily sales (see the task statement). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORECAST @FORECAST@
#define MODE @MODE@ /* 0: the weekday indices; 1: the 5 largest residuals; 2: the last week deseasonalised */
static const char *STORE = "@STORE@";
static const char *ASOF = "@@ASOF@@"; /* YYYYMMDD */
static const char *DAYS[7] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

@C_TRIM@

@C_SPLIT@

static long days_from_civil(long y, unsigned m, unsigned d) {
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long)doe - 719468;
}

static void civil_from_days(long z, char *out) {
    z += 719468;
    long era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long y = (long)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    sprintf(out, "%04ld-%02u-%02u", y + (m <= 2), m, d);
}

static int weekday(long days) { return (int)(((days % 7) + 7 + 3) % 7); } /* 1970-01-01 was a Thursday */

static void line_out(const char *name, double x) {
    char buf[64];
    sprintf(buf, "%.2f", x);
    printf("%s %s\n", name, strcmp(buf, "-0.00") ? buf : "0.00");
}

typedef struct { long day; int known; double units; } Row;

int main(void) {
    char *line = NULL, *f[16], *h[16];
    size_t cap = 0;
    if (getline(&line, &cap, stdin) == -1) return 0;
    char *hline = strdup(line);
    int nh = split(hline, h, 16), c_date = 0, c_store = 0, c_units = 0, c_unit = -1;
    for (int j = 0; j < nh && j < 16; j++) {
        if (!strcmp(h[j], "date")) c_date = j;
        else if (!strcmp(h[j], "store")) c_store = j;
        else if (!strcmp(h[j], "units")) c_units = j;
        else if (!strcmp(h[j], "unit")) c_unit = j;
    }
    int ay, am, ad;
    if (strlen(ASOF) != 8 || sscanf(ASOF, "%4d%2d%2d", &ay, &am, &ad) != 3) return 2;
    long asof = days_from_civil(ay, (unsigned)am, (unsigned)ad);
    int n = 0, rcap = 256;
    Row *rows = malloc(rcap * sizeof(Row));
    long lo = 0, hi = 0;
    while (getline(&line, &cap, stdin) != -1) {
        char *copy = strdup(line);
        if (split(copy, f, 16) != nh || strcmp(f[c_store], STORE)) continue;
        int y, m, d;
        sscanf(f[c_date], "%d-%d-%d", &y, &m, &d);
        Row r = {days_from_civil(y, (unsigned)m, (unsigned)d), *f[c_units] != 0, 0.0};
        if (r.day > asof) continue;
        if (r.known) {
            r.units = strtod(f[c_units], NULL);
            if (c_unit >= 0 && !strcmp(f[c_unit], "dozen")) r.units *= 12;
        }
        if (n == rcap) rows = realloc(rows, (rcap *= 2) * sizeof(Row));
        if (n == 0 || r.day < lo) lo = r.day;
        if (n == 0 || r.day > hi) hi = r.day;
        rows[n++] = r;
    }
    long span = hi - lo + 1;
    int *known = calloc(span, sizeof(int));
    double *val = calloc(span, sizeof(double));
    for (int i = 0; i < n; i++) { /* the latest row for a day wins */
        known[rows[i].day - lo] = rows[i].known;
        val[rows[i].day - lo] = rows[i].units;
    }
    long first = -1, last = -1;
    for (long i = 0; i < span; i++)
        if (known[i]) { if (first < 0) first = i; last = i; }
    long len = last - first + 1;
    double *ys = malloc(len * sizeof(double));
    long a = first;
    for (long i = first + 1; i <= last; i++) {
        if (!known[i]) continue;
        long gap = i - a;
        for (long k = 0; k < gap; k++) ys[a - first + k] = val[a] + (val[i] - val[a]) * k / gap;
        a = i;
    }
    ys[len - 1] = val[last];
    long day0 = lo + first;
    double *trend = malloc(len * sizeof(double)), sums[7] = {0};
    int counts[7] = {0};
    for (long i = 3; i < len - 3; i++) {
        double s = 0;
        for (long j = i - 3; j <= i + 3; j++) s += ys[j];
        trend[i] = s / 7;
        int wd = weekday(day0 + i);
        sums[wd] += ys[i] - trend[i];
        counts[wd]++;
    }
    double raw[7], centre = 0, season[7];
    for (int d = 0; d < 7; d++) raw[d] = sums[d] / counts[d];
    for (int d = 0; d < 7; d++) centre += raw[d];
    centre /= 7;
    for (int d = 0; d < 7; d++) season[d] = raw[d] - centre;
    char name[32];
#if MODE == 1
    char *used = calloc(len, 1);
    for (int r = 0; r < 5; r++) { /* largest absolute residual first; a tie keeps the earlier date */
        long best = -1;
        double bv = 0;
        for (long i = 3; i < len - 3; i++) {
            double v = fabs(ys[i] - trend[i] - season[weekday(day0 + i)]);
            if (!used[i] && (best < 0 || v > bv)) { best = i; bv = v; }
        }
        if (best < 0) break;
        used[best] = 1;
        civil_from_days(day0 + best, name);
        line_out(name, ys[best] - trend[best] - season[weekday(day0 + best)]);
    }
    return 0;
#elif MODE == 2
    for (long i = len - 7; i < len; i++) {
        civil_from_days(day0 + i, name);
        line_out(name, ys[i] - season[weekday(day0 + i)]);
    }
    return 0;
#endif
    for (int d = 0; d < 7; d++) line_out(DAYS[d], season[d]);
    if (FORECAST) {
        long lt = len - 4;
        double slope = (trend[lt] - trend[lt - 7]) / 7;
        line_out("trend_last", trend[lt]);
        line_out("trend_slope", slope);
        for (int hh = 1; hh <= 7; hh++) {
            long day = day0 + len - 1 + hh;
            civil_from_days(day, name);
            line_out(name, trend[lt] + slope * (double)(day - (day0 + lt)) + season[weekday(day)]);
        }
    }
    return 0;
}
'''


# Level 0: the 7-day unit total of one store ending on the as-of date (a trap-free file, one row per day).
WEEK_REFERENCE = r'''
import datetime
import sys

STORE = "@STORE@"
ASOF = "@@ASOF@@"  # YYYYMMDD (put in by the oracle)
MODE = @MODE@  # pattern: the 7-day total; anomalies: its best day; adjusted: the change from a week before


def total(text, asof=None):
    hi = datetime.datetime.strptime(asof or ASOF, "%Y%m%d").date()
    lo = (hi - datetime.timedelta(days=6)).isoformat()
    if MODE != "pattern":
        units = {}
        for line in text.splitlines()[1:]:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 3 and parts[1] == STORE:
                units[parts[0]] = int(parts[2])
        if MODE == "adjusted":
            # a day without a row counts as 0 units
            return "%d\n" % (units.get(hi.isoformat(), 0) - units.get((hi - datetime.timedelta(days=7)).isoformat(), 0))
        week = [(-u, d) for d, u in units.items() if lo <= d <= hi.isoformat()]
        return (min(week)[1] if week else "none") + "\n"  # the most units; a tie goes to the earlier date
    n = 0
    for line in text.splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[1] == STORE and lo <= parts[0] <= hi.isoformat():
            n += int(parts[2])
    return "%d\n" % n


if __name__ == "__main__":
    sys.stdout.write(total(sys.stdin.read()))
'''

WEEK_C_REFERENCE = r'''
/* The 7-day unit total of one store ending on the as-of date (see the task statement). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *STORE = "@STORE@";
static const char *ASOF = "@@ASOF@@"; /* YYYYMMDD */
#define MODE @MODE@ /* 0: the 7-day total; 1: its best day; 2: the change from a week before */

@C_TRIM@

@C_SPLIT@

static long days_from_civil(long y, unsigned m, unsigned d) {
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long)doe - 719468;
}

int main(void) {
    int ay, am, ad;
    if (strlen(ASOF) != 8 || sscanf(ASOF, "%4d%2d%2d", &ay, &am, &ad) != 3) return 2;
    long hi = days_from_civil(ay, (unsigned)am, (unsigned)ad), total = 0, now = 0, before = 0, bu = -1, bday = 0;
    char bdate[32] = "none";
    char *line = NULL, *f[4];
    size_t cap = 0;
    if (getline(&line, &cap, stdin) != -1) {
        while (getline(&line, &cap, stdin) != -1) {
            char *copy = strdup(line);
            int y, m, d;
            if (split(copy, f, 4) == 3 && !strcmp(f[1], STORE) && sscanf(f[0], "%d-%d-%d", &y, &m, &d) == 3) {
                long day = days_from_civil(y, (unsigned)m, (unsigned)d), u = atol(f[2]);
                if (day > hi - 7 && day <= hi) {
                    total += u;
                    if (bu < 0 || u > bu || (u == bu && day < bday)) { bu = u; bday = day; snprintf(bdate, 32, "%s", f[0]); }
                }
                if (day == hi) now = u;
                if (day == hi - 7) before = u;
            }
            free(copy);
        }
    }
    if (MODE == 1) printf("%s\n", bdate);
    else printf("%ld\n", MODE == 2 ? now - before : total);
    return 0;
}
'''

ASOF_WHAT = "the as-of date (YYYYMMDD)"
ALTS = (-2, -1, 1, 2)  # as-of dates a guess would land on, in days from the true one
MODES = {"pattern": 0, "anomalies": 1, "adjusted": 2}  # the C references' MODE for each variant
SALES_FILES = ("/app/data/sales.csv", "/app/data/daily_units.csv", "/app/pos/store_sales.csv",
               "/app/exports/sales_by_day.csv", "/app/retail/units_daily.csv")


@dataclass(frozen=True)
class Knobs:
    weeks: int  # weeks of history before the earliest as-of date of the output case
    stores: int  # stores in the file
    fixes: bool  # corrections that replace earlier rows
    gaps: bool  # absent days and empty counts, interpolated
    dozens: bool  # quantities logged in dozens
    interleave: bool  # rows of all stores sorted by date
    forecast: bool  # also forecast the next week


def near_tie(x: float, decimals: int = 2) -> bool:
    """True when x is within 1e-6 of a rounding boundary at ``decimals`` places (float noise could flip it)."""
    scaled = abs(x) * 10 ** decimals
    return abs(scaled - int(scaled) - 0.5) < 1e-6


def make_sales(rng, k: Knobs, stores: list[str], start: dt.date, n: int) -> str:
    header = "date,store,units" + (",unit" if k.dozens else "")
    rows: list[list[str]] = []
    fixes: list[list[str]] = []
    for store in stores:
        base = rng.uniform(80, 400)
        slope = rng.uniform(-1.0, 1.5)
        season = [rng.uniform(-0.35, 0.35) * base for _ in range(7)]
        noise = base * rng.uniform(0.02, 0.08)
        for i in range(n):
            day = start + dt.timedelta(days=i)
            y = max(0, round(base + slope * i + season[day.weekday()] + rng.gauss(0, noise)))
            row = [day.isoformat(), store, str(y)]
            if k.dozens:
                if rng.random() < 0.15:
                    row[2] = str(max(1, round(y / 12)))
                    row.append("dozen")
                else:
                    row.append("each")
            interior = 0 < i < n - 1
            if k.gaps and interior and rng.random() < 0.06:
                if rng.random() < 0.5:
                    continue  # the day is simply absent
                row[2] = ""  # logged, but the count is missing
            if k.fixes and rng.random() < 0.05:  # a wrong first entry, corrected later in the file
                wrong = list(row)
                wrong[2] = str(max(0, round(y * rng.uniform(1.5, 3)))) if row[2] else str(rng.randrange(1, 50))
                rows.append(wrong)
                fixes.append(row)
                continue
            rows.append(row)
    if k.interleave:
        rows.sort(key=lambda r: (r[0], r[1]))
    text = header + "\n" + "".join(",".join(r) + "\n" for r in rows + fixes)
    return text


class Backtest:
    """One task's stores, first day and reference."""

    def __init__(self, t: TaskBuilder):
        k, rng = t.knobs, t.rng
        self.k, self.rng, self.variant = k, rng, t.variant
        self.stores = unseen.distinct(lambda: t.code(1), k.stores)
        self.store = rng.choice(self.stores)
        self.start = dt.date(2023, 1, 2) + dt.timedelta(days=rng.randrange(0, 500))
        forecast = k.forecast and t.variant == "pattern"  # the forecast extends the weekday pattern only
        self.src = fill(REFERENCE, FORECAST=forecast, STORE=self.store, MODE=repr(t.variant))
        self.c_src = fill(C_REFERENCE, FORECAST="1" if forecast else "0", STORE=self.store, C_TRIM=C_TRIM,
                          C_SPLIT=C_SPLIT, MODE=str(MODES[t.variant]))
        self.ns = run_python(self.src)

    def ymd(self, day: int) -> str:
        return (self.start + dt.timedelta(days=day)).strftime("%Y%m%d")

    def report(self, text: str, day: int) -> str:
        return self.ns["report"](text, self.store, self.ymd(day))

    def decompose(self, text: str, day: int) -> list | None:
        """The decomposition as of ``day``, or None where it is undefined or a value sits on a rounding tie."""
        try:
            rows = self.ns["decompose"](text, self.store, self.ymd(day))
            sizes = sorted((abs(r) for _, r in self.ns["residuals"](text, self.store, self.ymd(day))), reverse=True)
        except (ZeroDivisionError, IndexError, ValueError):
            return None
        if self.variant == "anomalies" and any(a - b < 1e-6 for a, b in zip(sizes[:6], sizes[1:7])):
            return None  # the top days' order (or the last one in) would hang on float noise
        return None if any(near_tie(v) for _, v in rows) else rows

    def generate(self, n: int, day: int | None) -> tuple[str, str] | None:
        """Sales over ``n`` days and the report as of ``day`` (None: after the last day)."""
        day = n + 5 if day is None else day
        text = make_sales(self.rng, self.k, self.stores, self.start, n)
        if self.decompose(text, day) is None:
            return None
        return text, self.report(text, day)

    def texts(self) -> tuple[str, str, str]:
        """(the input columns, the steps, the output format): both cases state them alike."""
        k = self.k
        cols = "`date,store,units`" + (" plus `unit`" if k.dozens else "")
        steps = [f"Take the rows of store `{self.store}` dated on or before the as-of date given below (a "
                 "backtest: later rows were not known yet on that day)."]
        if k.fixes:
            steps.append("A later row for the same date is a correction: it replaces every earlier row for that "
                         "date (file order).")
        if k.dozens:
            steps.append("`unit` is `each` or `dozen`; multiply dozens by 12.")
        if k.gaps:
            steps.append("The daily series runs from the store's first date to its last (after the as-of cut). Some "
                         "days are absent and some have an empty `units` (unknown, after any correction): fill every "
                         "such day by linear interpolation in time between the nearest known days before and after "
                         "it.")
        steps.append("Trend: the centred 7-day moving average (the mean of the day itself and the 3 days on each "
                     "side); it is undefined for the first 3 and last 3 days.")
        steps.append("Seasonal index of a weekday: the mean of (units - trend) over the days of that weekday where "
                     "the trend is defined; then subtract the mean of the seven indices from each, so they sum to "
                     "zero.")
        fmt = "seven lines `Mon <index>` through `Sun <index>` (Monday first, these three-letter names)"
        if self.variant == "anomalies":
            fmt = ("five lines `<YYYY-MM-DD> <residual>` for the 5 days with the largest absolute residual, "
                   "largest first (a tie goes to the earlier date), where a day's residual is its units minus its "
                   "trend minus the seasonal index of its weekday, over the days where the trend is defined")
        elif self.variant == "adjusted":
            fmt = ("seven lines `<YYYY-MM-DD> <adjusted>` for the last 7 days of the series in date order, where "
                   "adjusted is the day's units (as filled in above where the day was) minus the seasonal index of "
                   "its weekday")
        elif k.forecast:
            steps.append("Forecast: let T be the trend on the last day where it is defined and slope = (T - the trend "
                         "7 days earlier) / 7. The forecast for a day h days after that trend day is T + slope * h "
                         "+ the seasonal index of its weekday.")
            fmt += (", then `trend_last <T>`, `trend_slope <slope>`, then one line `<YYYY-MM-DD> <forecast>` for "
                    "each of the 7 days after the series' last date, in date order")
        fmt += "; every number rounded to 2 decimals, and never a negative zero"
        return cols, " ".join(steps), fmt


@register
class SeasonalDecomposition(Family):
    name = "seasonal_decomposition"
    domain = "data_science"
    skill_types = ("Time Series",)
    primitive_skills = ("seasonal decomposition", "centered moving average", "gap filling by interpolation",
                        "duplicate record removal")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    # pattern: the weekday indices (and a forecast at the top level); anomalies: the days the residual flags;
    # adjusted: the last week seasonally adjusted. Level 0: a 7-day total, its best day, a week-over-week change.
    variants = ("pattern", "anomalies", "adjusted")
    levels = {0: Knobs(weeks=3, stores=2, fixes=False, gaps=False, dozens=False, interleave=False, forecast=False),
              1: Knobs(weeks=8, stores=2, fixes=True, gaps=True, dozens=False, interleave=False, forecast=False),
              2: Knobs(weeks=12, stores=3, fixes=True, gaps=True, dozens=False, interleave=True, forecast=False),
              3: Knobs(weeks=16, stores=3, fixes=True, gaps=True, dozens=False, interleave=True, forecast=False),
              4: Knobs(weeks=20, stores=4, fixes=True, gaps=True, dozens=True, interleave=True, forecast=True)}

    def program_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_program(t)
        rng = t.rng
        b = Backtest(t)
        cols, steps, fmt = b.texts()
        intro = ("Every store manager sends me a daily sales CSV (header " + cols + ", ISO dates) and I want a "
                 "backtesting tool that reads one on standard input and does a classical additive decomposition "
                 f"with a weekly period for store `{b.store}`, as of the date given below"
                 + {"pattern": ".", "anomalies": ", to flag the days that fit its trend and weekly pattern worst.",
                    "adjusted": ", to report its last week of sales seasonally adjusted."}[t.variant])
        for _ in range(50):
            day = rng.randrange(6 * 7, 12 * 7)
            # The worked examples end before the as-of date: they show the steps, not the date.
            examples = [b.generate(rng.randrange(4 * 7, day - 1), None) for _ in range(2)]
            hidden = [b.generate(day + rng.randrange(7, 21), day) for _ in range(8)]
            cases = examples + hidden
            if any(c is None for c in cases):
                continue
            if unseen.visible(t, b.ymd(day), intro, steps, fmt, *(x for c in examples for x in c)):
                continue
            if all(any(b.report(x, day + alt) != y for x, y in hidden) for alt in ALTS):
                break
        else:
            raise FamilyError("seasonal_decomposition: no as-of date that every near miss gets wrong in 50 draws")
        t.say(intro)
        v = t.deliver(b.ymd(day), ASOF_WHAT)
        t.say(f"Steps: {steps} Output: {fmt}.")
        t.expect_program("The as-of date is always the one given above: hard-code it.", cases,
                         {"Python": b.src, "C": b.c_src})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@ASOF@@/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_output(t)
        k, rng = t.knobs, t.rng
        b = Backtest(t)
        cols, steps, fmt = b.texts()
        n = k.weeks * 7 + rng.randrange(35, 56)
        for _ in range(30):
            text = make_sales(rng, k, b.stores, b.start, n)
            days = list(range(k.weeks * 7, n - 3))
            rng.shuffle(days)
            good: dict[str, str] = {}  # as-of date -> report, for dates every near miss gets wrong
            for day in days[:8]:
                if b.decompose(text, day) is None:
                    continue
                truth = b.report(text, day)
                # No line of the truth may survive an as-of date a guess would land on.
                lines = set(truth.splitlines())
                if all(not lines & set(b.report(text, day + alt).splitlines()) for alt in ALTS):
                    good[b.ymd(day)] = truth
                    if len(good) == 3:
                        break
            if good:
                break
        else:
            raise FamilyError("seasonal_decomposition: no as-of date that every near miss gets wrong in 30 draws")
        path = rng.choice(SALES_FILES)
        t.add_file(path, text)
        want = {"pattern": f"the weekly pattern of store `{b.store}`",
                "anomalies": f"the days that stood out at store `{b.store}`, once its trend and weekly pattern are "
                             "taken out,",
                "adjusted": f"the last week of store `{b.store}`'s sales, seasonally adjusted,"}[t.variant]
        intro = (f"`{path}` has daily unit sales of all our stores (columns {cols}; ISO dates). I want {want} as we "
                 "would have seen it on the as-of date given below, from a classical additive decomposition with a "
                 "period of 7 days.")
        asof = unseen.unseen(t, lambda: rng.choice(list(good)), intro, steps, fmt)
        t.say(intro)
        v = t.deliver(asof, ASOF_WHAT)
        t.say(f"Steps: {steps}")
        t.say(f"Output format: {fmt}.")
        t.add_solution_file("decompose.py", b.src)  # the as-of date comes on the command line
        out = {"pattern": "/app/out/weekly_pattern.txt", "anomalies": "/app/out/anomalies.txt",
               "adjusted": "/app/out/adjusted.txt"}[t.variant]
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/decompose.py {path} {b.store} '
                f'"{v}" > {out}')
        t.expect_output(out, good[asof], "the decomposition (format above)")

    # Level 0 per variant: what is asked of the 7 days ending on the as-of date, how the answer is written,
    # and the awk pass that gives it ($from / $to: the first and last of the 7 days, $prev: a week before).
    @staticmethod
    def atomic_ask(variant: str, store: str) -> tuple[str, str, str]:
        return {"pattern": (f"What did store `{store}` sell in the 7 days ending on the as-of date given below (the "
                            "as-of date and the 6 days before it)?",
                            "Write the total number of units as one integer.", "week_total.txt"),
                "anomalies": (f"Which was store `{store}`'s best day in the 7 days ending on the as-of date given "
                              "below (the as-of date and the 6 days before it): the day it sold the most units?",
                              "Write that date as `YYYY-MM-DD` (if several days tie, the earliest).",
                              "best_day.txt"),
                "adjusted": ("A week-over-week change takes the weekly pattern out of daily sales: how many more "
                             f"units did store `{store}` sell on the as-of date given below than on the same "
                             "weekday one week earlier (7 days before it)?",
                             "Write the difference (as-of day minus a week before) as one integer, negative if "
                             "sales fell.", "week_over_week.txt")}[variant]

    ATOMIC_AWK = {"pattern": "'$2 == s && $1 >= a && $1 <= b {n += $3} END {print n + 0}'",
                  "anomalies": "'$2 == s && $1 >= a && $1 <= b && (m == \"\" || $3 + 0 > m) {m = $3 + 0; d = $1} "
                               "END {print d}'",
                  "adjusted": "'$2 == s && $1 == p {w = $3} $2 == s && $1 == b {n = $3} END {print n - w}'"}
    # What a program prints when the data hold none of the days asked about (its worked examples do not).
    ATOMIC_EMPTY = {"pattern": "", "anomalies": " If the store has no row in those 7 days, print `none`.",
                    "adjusted": " A day without a row counts as 0 units."}

    def atomic_output(self, t: TaskBuilder) -> None:
        """Level 0: one figure of the 7 days up to the as-of date, one date shift and one awk pass."""
        k, rng = t.knobs, t.rng
        b = Backtest(t)
        n = k.weeks * 7 + rng.randrange(7, 21)
        answer = run_python(fill(WEEK_REFERENCE, STORE=b.store, MODE=repr(t.variant)))["total"]

        for _ in range(30):
            text = make_sales(rng, k, b.stores, b.start, n)
            # As-of dates whose answer no near miss (a day or two off) reproduces.
            good = {b.ymd(day): answer(text, b.ymd(day)) for day in range(8, n - 3)
                    if all(answer(text, b.ymd(day + alt)) != answer(text, b.ymd(day)) for alt in ALTS)}
            if good:
                break
        else:
            raise FamilyError("seasonal_decomposition: no as-of date that every near miss gets wrong in 30 draws")
        t.add_file("/app/data/sales.csv", text)
        ask, fmt, name = self.atomic_ask(t.variant, b.store)
        intro = ("`/app/data/sales.csv` has daily unit sales of our stores (columns `date,store,units`; ISO dates, "
                 f"one row per store and day). {ask}")
        asof = unseen.unseen(t, lambda: rng.choice(sorted(good)), intro, fmt)
        t.say(intro)
        v = t.deliver(asof, ASOF_WHAT)
        t.say(fmt)
        week_ago = t.variant == "adjusted"
        t.solve(f'mkdir -p /app/out\nfrom=$(date -u -d "{v} -6 days" +%F)\nto=$(date -u -d "{v}" +%F)\n'
                + (f'prev=$(date -u -d "{v} -7 days" +%F)\n' if week_ago else "")
                + f'awk -F, -v s={b.store} -v a="$from" -v b="$to" ' + ('-v p="$prev" ' if week_ago else "")
                + self.ATOMIC_AWK[t.variant] + f" /app/data/sales.csv > /app/out/{name}")
        t.expect_output(f"/app/out/{name}", good[asof], {"pattern": "the 7-day total", "anomalies": "the best day",
                                                         "adjusted": "the week-over-week change"}[t.variant])

    def atomic_program(self, t: TaskBuilder) -> None:
        """Level 0: a program printing one figure of one store's 7 days up to a hard-coded date."""
        k, rng = t.knobs, t.rng
        b = Backtest(t)
        src = fill(WEEK_REFERENCE, STORE=b.store, MODE=repr(t.variant))
        total = run_python(src)["total"]
        ask, fmt, _ = self.atomic_ask(t.variant, b.store)
        intro = ("Every store manager sends me a daily sales CSV (header `date,store,units`, ISO dates, one row per "
                 "store and day) and I want a tool that reads one on standard input and answers this for store "
                 f"`{b.store}`: {ask} {fmt.replace('Write', 'Print')}"
                 + self.ATOMIC_EMPTY[t.variant])

        def case(n: int, day: int) -> tuple[str, str]:
            text = make_sales(rng, k, b.stores, b.start, n)
            return text, total(text, b.ymd(day))

        for _ in range(50):
            day = rng.randrange(4 * 7, 8 * 7)
            # The worked examples end before the 7 days: they show the form, not the date.
            examples = [case(rng.randrange(2 * 7, day - 7), day) for _ in range(2)]
            hidden = [case(day + rng.randrange(1, 14), day) for _ in range(8)]
            if unseen.visible(t, b.ymd(day), intro, *(x for c in examples for x in c)):
                continue
            if all(any(total(x, b.ymd(day + alt)) != y for x, y in hidden) for alt in ALTS):
                break
        else:
            raise FamilyError("seasonal_decomposition: no as-of date that every near miss gets wrong in 50 draws")
        t.say(intro)
        v = t.deliver(b.ymd(day), ASOF_WHAT)
        t.expect_program("The as-of date is always the one given above: hard-code it.", examples + hidden,
                         {"Python": src, "C": fill(WEEK_C_REFERENCE, STORE=b.store, MODE=str(MODES[t.variant]),
                                                   C_TRIM=C_TRIM, C_SPLIT=C_SPLIT)})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@ASOF@@/{v}/" "$f"; done')
