"""Which sensor readings are anomalous? A trailing rolling mean / standard deviation rule over one
sensor's series, after the cleaning a real export needs (unsorted rows, duplicated timestamps,
missing values, readings logged in Fahrenheit, flagged values replaced in later windows). As a
screening program it must reject every series the rule flags and keep every clean one.
Variants: `flags` (the anomalous readings themselves; screening: any anomaly rejects), `daily` (a per-UTC-day
count and highest reading of the anomalies; screening tolerates one glitch) and `peak` (the single anomaly farthest
from its window mean; screening judges only a feed's newest reading)."""

from __future__ import annotations

import calendar
import dataclasses
import math
import time
from dataclasses import dataclass

from tmax.families import unseen
from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import C_SPLIT, C_TRIM, fill, run_python

# @@OFFSET@@ is the delivered correction: the oracle puts it in (the output case passes it on the command line).
# The screening case delivers K instead: its shipped programs are filled with KMILLI="@@KMILLI@@".

REFERENCE = r'''
import math
import sys

SENSOR = "@SENSOR@"
W = @W@
K = @KMILLI@ / 1000  # the threshold multiplier, configured in thousandths
OFFSET = "@@OFFSET@@"  # calibration correction in thousandths of a degree, added to every reported reading
REPLACE = @REPLACE@  # a flagged reading enters later windows as its window mean
SCREEN = @SCREEN@  # always screen one feed from standard input (exit 0 = clean)


def to_celsius(value, unit):
    x = float(value)
    return (x - 32) * 5 / 9 if unit == "F" else x


def series_of(rows):
    """rows: (timestamp, value, unit) in file order -> sorted [(timestamp, celsius)]."""
    seen = set()
    out = []
    for ts, value, unit in rows:
        if ts in seen:
            continue
        seen.add(ts)
        if value in ("", "NaN"):
            continue
        out.append((ts, to_celsius(value, unit)))
    out.sort()
    return out


def detect(series):
    hist, flagged = [], []
    for ts, x in series:
        if len(hist) >= W:
            win = hist[-W:]
            m = sum(win) / W
            sd = math.sqrt(sum((v - m) ** 2 for v in win) / W)
            if abs(x - m) > K * sd:
                flagged.append((ts, x))
                if REPLACE:
                    hist.append(m)
                    continue
        hist.append(x)
    return flagged


def fmt(x):
    s = "%.3f" % x
    return "0.000" if s == "-0.000" else s


def correction(text):
    if not text.isdigit():
        raise SystemExit("the calibration correction must be digits (thousandths of a degree), got %r" % text)
    return int(text) / 1000


def report(text, sensor=None, offset=None):
    sensor = sensor or SENSOR
    c = correction(offset or OFFSET)
    rows = []
    for line in text.splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[1] == sensor:
            rows.append((parts[0], parts[2], parts[3]))
    return "".join("%s %s\n" % (ts, fmt(x + c)) for ts, x in detect(series_of(rows)))


def is_clean(text):
    rows = []
    for line in text.splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            rows.append(tuple(parts))
    return not detect(series_of(rows))


if __name__ == "__main__":
    if SCREEN or (len(sys.argv) > 1 and sys.argv[1] == "--screen"):
        sys.exit(0 if is_clean(sys.stdin.read()) else 1)
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            sys.stdout.write(report(f.read(), sys.argv[2], sys.argv[3]))
    else:
        sys.stdout.write(report(sys.stdin.read()))
'''

# The same rule in C (report or screen mode), for program-writing variants in C or two languages.
C_REFERENCE = r'''
/* Rolling-window anomaly rule over one sensor's readings (see the task statement). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W @W@
#define K (@KMILLI@ / 1000.0)
#define REPLACE @REPLACE@
#define SCREEN @SCREEN@
static const char *SENSOR = "@SENSOR@";
static const char *OFFSET = "@@OFFSET@@"; /* thousandths of a degree; unused when screening */

typedef struct {
    char *ts, *val, *unit;
    long idx;
} Row;

@C_TRIM@

@C_SPLIT@

static int cmp(const void *a, const void *b) {
    const Row *x = a, *y = b;
    int c = strcmp(x->ts, y->ts);
    if (c) return c;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static void fmt(double x, char *out) {
    sprintf(out, "%.3f", x);
    if (strcmp(out, "-0.000") == 0) strcpy(out, "0.000");
}

int main(void) {
    for (const char *p = OFFSET; *p && !SCREEN; p++)
        if (*p < '0' || *p > '9') return 2;
    double offset = SCREEN ? 0.0 : atoi(OFFSET) / 1000.0;
    size_t cap = 0, nrows = 0, rcap = 1024;
    Row *rows = malloc(rcap * sizeof(Row));
    char *line = NULL;
    long lineno = 0;
    while (getline(&line, &cap, stdin) != -1) {
        if (lineno++ == 0) continue;
        char *copy = strdup(line), *f[8];
        int n = split(copy, f, 8);
        Row r;
        if (SCREEN) {
            if (n != 3) continue;
            r.ts = f[0]; r.val = f[1]; r.unit = f[2];
        } else {
            if (n != 4 || strcmp(f[1], SENSOR) != 0) continue;
            r.ts = f[0]; r.val = f[2]; r.unit = f[3];
        }
        r.idx = lineno;
        if (nrows == rcap) rows = realloc(rows, (rcap *= 2) * sizeof(Row));
        rows[nrows++] = r;
    }
    qsort(rows, nrows, sizeof(Row), cmp);
    double *hist = malloc((nrows + 1) * sizeof(double));
    size_t h = 0;
    int flagged = 0;
    char buf[64];
    for (size_t i = 0; i < nrows; i++) {
        if (i > 0 && strcmp(rows[i].ts, rows[i - 1].ts) == 0) continue; /* keep the first row of a timestamp */
        if (rows[i].val[0] == 0 || strcmp(rows[i].val, "NaN") == 0) continue;
        double x = strtod(rows[i].val, NULL);
        if (strcmp(rows[i].unit, "F") == 0) x = (x - 32) * 5 / 9;
        if (h >= W) {
            double m = 0, s = 0;
            for (size_t j = h - W; j < h; j++) m += hist[j];
            m /= W;
            for (size_t j = h - W; j < h; j++) s += (hist[j] - m) * (hist[j] - m);
            double sd = sqrt(s / W);
            if (fabs(x - m) > K * sd) {
                flagged++;
                if (!SCREEN) {
                    fmt(x + offset, buf);
                    printf("%s %s\n", rows[i].ts, buf);
                }
                if (REPLACE) {
                    hist[h++] = m;
                    continue;
                }
            }
        }
        hist[h++] = x;
    }
    if (SCREEN) return flagged ? 1 : 0;
    return 0;
}
'''

# The other variants' questions, as functions that replace report / is_clean above (the Python templates are the
# flags reference with these inserted before its entry point; the C ones patch the flags reference's output).
PY_DAILY = r'''

def sensor_rows(text, sensor):
    """(timestamp, value, unit) rows of ``sensor``, by the header's column names: a log with a sensor column
    keeps that sensor's rows, a one-sensor export (no sensor column) all of its rows."""
    lines = text.splitlines()
    cols = [c.strip() for c in lines[0].split(",")] if lines else []
    rows = []
    for line in lines[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == len(cols):
            row = dict(zip(cols, parts))
            if row.get("sensor", sensor) == sensor:
                rows.append((row["timestamp"], row["value"], row["unit"]))
    return rows


def feed_rows(text):
    rows = []
    for line in text.splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            rows.append(tuple(parts))
    return rows


# The daily question: per UTC day with an anomaly, how many and the highest corrected one.
def report(text, sensor=None, offset=None):
    c = correction(offset or OFFSET)
    days = {}
    for ts, x in detect(series_of(sensor_rows(text, sensor or SENSOR))):
        n, top = days.get(ts[:10], (0, x))
        days[ts[:10]] = (n + 1, max(top, x))
    return "".join("%s %d %s\n" % (d, n, fmt(top + c)) for d, (n, top) in sorted(days.items()))


def is_clean(text):  # one anomalous reading is tolerated as a glitch
    return len(detect(series_of(feed_rows(text)))) < 2

'''

PY_PEAK = PY_DAILY.split("# The daily question")[0] + r'''# The peak question: the anomaly farthest from its window mean; screening judges the newest reading only.
def scan(series):
    # [(timestamp, reading, |reading - window mean|, flagged)] for every reading, in time order
    hist, out = [], []
    for ts, x in series:
        if len(hist) >= W:
            win = hist[-W:]
            m = sum(win) / W
            sd = math.sqrt(sum((v - m) ** 2 for v in win) / W)
            if abs(x - m) > K * sd:
                out.append((ts, x, abs(x - m), True))
                hist.append(m if REPLACE else x)
                continue
            out.append((ts, x, abs(x - m), False))
        else:
            out.append((ts, x, 0.0, False))
        hist.append(x)
    return out


def report(text, sensor=None, offset=None):
    c = correction(offset or OFFSET)
    best = None
    for ts, x, d, flagged in scan(series_of(sensor_rows(text, sensor or SENSOR))):
        if flagged and (best is None or d > best[2]):
            best = (ts, x, d)
    return "" if best is None else "%s %s %s\n" % (best[0], fmt(best[1] + c), fmt(best[2]))


def is_clean(text):
    out = scan(series_of(feed_rows(text)))
    return not (out and out[-1][3])

'''

MAIN = '\nif __name__ == "__main__":'
REFERENCES = {"flags": REFERENCE, "daily": REFERENCE.replace(MAIN, PY_DAILY + MAIN),
              "peak": REFERENCE.replace(MAIN, PY_PEAK + MAIN)}

C_PRINT = '''                if (!SCREEN) {
                    fmt(x + offset, buf);
                    printf("%s %s\\n", rows[i].ts, buf);
                }
'''
C_END = "    if (SCREEN) return flagged ? 1 : 0;\n"
C_DAILY = (C_REFERENCE.replace("    char buf[64];\n", "    char buf[64], day[11] = \"\";\n    int dn = 0;\n"
                               "    double dmax = 0;\n")
           .replace(C_PRINT, '''                if (!SCREEN) { /* one line per UTC day: count and highest reading */
                    if (dn && strncmp(day, rows[i].ts, 10) != 0) {
                        fmt(dmax + offset, buf);
                        printf("%s %d %s\\n", day, dn, buf);
                        dn = 0;
                    }
                    if (!dn || x > dmax) dmax = x;
                    strncpy(day, rows[i].ts, 10);
                    day[10] = 0;
                    dn++;
                }
''')
           .replace(C_END, '''    if (SCREEN) return flagged >= 2 ? 1 : 0; /* one anomaly is tolerated */
    if (dn) {
        fmt(dmax + offset, buf);
        printf("%s %d %s\\n", day, dn, buf);
    }
'''))
C_PEAK = (C_REFERENCE.replace("    char buf[64];\n", "    char buf[64], pts[64] = \"\";\n    int pn = 0, last = 0;\n"
                              "    double pd = 0, px = 0;\n")
          .replace('        if (strcmp(rows[i].unit, "F") == 0) x = (x - 32) * 5 / 9;\n',
                   '        if (strcmp(rows[i].unit, "F") == 0) x = (x - 32) * 5 / 9;\n        last = 0;\n')
          .replace(C_PRINT, '''                last = 1;
                if (!pn || fabs(x - m) > pd) { /* the farthest anomaly, earliest on a tie */
                    pd = fabs(x - m);
                    px = x;
                    snprintf(pts, sizeof pts, "%s", rows[i].ts);
                    pn = 1;
                }
''')
          .replace(C_END, '''    if (SCREEN) return last; /* only the newest reading is judged */
    if (pn) {
        char dbuf[64];
        fmt(px + offset, buf);
        fmt(pd, dbuf);
        printf("%s %s %s\\n", pts, buf, dbuf);
    }
'''))
C_REFERENCES = {"flags": C_REFERENCE, "daily": C_DAILY, "peak": C_PEAK}
for _v, _src in (("daily", C_DAILY), ("peak", C_PEAK)):
    assert _src.count("fmt(") > C_REFERENCE.count("fmt("), _v

OFFSET_WHAT = "the calibration correction (thousandths of a degree)"


@dataclass(frozen=True)
class Knobs:
    n: int  # readings per sensor in the output case
    sensors: int  # sensors in the shared log
    w: int  # window length
    k: float  # threshold multiplier (the screening case draws K within 0.4 of it)
    shuffle: bool  # rows out of time order
    dupes: bool  # rows exported twice
    missing: bool  # empty / NaN gaps
    fahrenheit: bool  # some readings in Fahrenheit
    replace: bool  # a flagged reading enters later windows as its window mean


def ratios(values: list[float], w: int, k: float, replace: bool) -> tuple[list[float], list[int]]:
    """|x - mean| / sd of every evaluated reading (host-side mirror of the rule), and the flagged indices."""
    hist: list[float] = []
    out, flagged = [], []
    for i, x in enumerate(values):
        if len(hist) >= w:
            win = hist[-w:]
            m = sum(win) / w
            sd = math.sqrt(sum((v - m) ** 2 for v in win) / w)
            r = abs(x - m) / sd if sd > 0 else math.inf
            out.append(r)
            if abs(x - m) > k * sd:
                flagged.append(i)
                if replace:
                    hist.append(m)
                    continue
        hist.append(x)
    return out, flagged


def history(values: list[float], w: int, k: float, replace: bool) -> list[float]:
    """The readings as later windows see them (a flagged one replaced by its window mean when ``replace``)."""
    hist: list[float] = []
    for x in values:
        if len(hist) >= w:
            win = hist[-w:]
            m = sum(win) / w
            sd = math.sqrt(sum((v - m) ** 2 for v in win) / w)
            if abs(x - m) > k * sd and replace:
                hist.append(m)
                continue
        hist.append(x)
    return hist


def make_values(rng, n: int, w: int, k: float, replace: bool, spikes: int) -> list[float]:
    """A drifting, noisy temperature series with ``spikes`` injected anomalies (0: clean). Built reading by
    reading: a normal reading that would land near or past the threshold is redrawn inside it."""
    base = rng.uniform(35, 85)
    amp = rng.uniform(0.5, 4)
    period = rng.uniform(40, 160)
    noise = rng.uniform(0.3, 1.5)
    phase = rng.uniform(0, 6.3)
    where = set(rng.sample(range(w + 1, n), spikes)) if spikes else set()
    vals: list[float] = []
    hist: list[float] = []
    for i in range(n):
        x = round(base + amp * math.sin(i / period * 6.283 + phase) + rng.uniform(-noise, noise), 2)
        if len(hist) >= w:
            win = hist[-w:]
            m = sum(win) / w
            sd = math.sqrt(sum((v - m) ** 2 for v in win) / w)
            if i in where:
                lo, hi = (k + 0.1, k + 0.4) if rng.random() < 0.4 else (k + 0.4, k + 6)  # some barely over
                x = round(m + rng.choice([-1, 1]) * rng.uniform(lo, hi) * sd, 2)
                vals.append(x)
                hist.append(m if replace else x)
                continue
            if abs(x - m) > (k - 0.3) * sd:
                x = round(m + rng.uniform(-1, 1) * (k - 0.5) * sd, 2)
        vals.append(x)
        hist.append(x)
    return vals


def to_rows(rng, vals: list[float], start: int, step: int, k: Knobs) -> list[tuple[str, str, str]]:
    """(timestamp, value, unit) rows with the level's export faults."""
    rows = []
    for i, x in enumerate(vals):
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + i * step))
        value, unit = f"{x:.2f}", "C"
        if k.fahrenheit and rng.random() < 0.15:
            value, unit = f"{x * 9 / 5 + 32:.2f}", "F"
        rows.append((ts, value, unit))
        if k.missing and rng.random() < 0.04:  # a gap the logger marked as missing (its own timestamp)
            ts2 = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + i * step + step // 2))
            rows.append((ts2, rng.choice(["", "NaN"]), "C"))
    if k.dupes:
        for _ in range(max(1, len(rows) // 40)):
            pos = rng.randrange(len(rows))
            rows.insert(rng.randrange(pos, len(rows) + 1), rows[pos])
    if k.shuffle:
        rng.shuffle(rows)
    return rows


def make_rows(rng, ns: dict, n: int, k: Knobs, spikes: int, start: int, step: int) -> list[tuple[str, str, str]]:
    """Rows of one sensor whose cleaned series (as the reference cleans it) has exactly ``spikes`` anomalies
    and no evaluated reading within 0.05 of the threshold ratio, so float noise cannot flip a verdict."""
    for _ in range(200):
        vals = make_values(rng, n, k.w, k.k, k.replace, spikes)
        rows = to_rows(rng, vals, start, step, k)
        series = [x for _, x in ns["series_of"](rows)]
        rs, flagged = ratios(series, k.w, k.k, k.replace)
        if len(flagged) == spikes and all(abs(r - k.k) > 0.05 for r in rs):
            return rows
    raise FamilyError(f"rolling_anomaly_flags: no series with exactly {spikes} clear anomalies in 200 draws")


def csv_item(rows) -> str:
    return "timestamp,value,unit\n" + "".join(f"{ts},{v},{u}\n" for ts, v, u in rows)


CALIB = ("The sensor's calibration certificate says it reads low: add the calibration correction given below "
         "(in thousandths of a degree Celsius, e.g. 2500 means +2.500 degrees) to every reading you report. "
         "It is a constant shift, so it does not change which readings are anomalous.")
OUT_FMT = ("the timestamp exactly as logged, a space, and the corrected reading in degrees Celsius rounded to "
           "3 decimals")
DAILY_FMT = ("one line per UTC day with at least one anomalous reading, in date order: the date (`YYYY-MM-DD`, the "
             "first 10 characters of the timestamp), a space, the number of anomalous readings that day, a space, and "
             "the highest of that day's anomalous readings, corrected, in degrees Celsius rounded to 3 decimals")
PEAK_FMT = ("a single line for the anomalous reading farthest from the mean of its window (the largest |reading - "
            "mean|; the earliest on a tie): the timestamp exactly as logged, a space, the corrected reading in degrees "
            "Celsius rounded to 3 decimals, a space, and that distance |reading - mean| in degrees rounded to 3 "
            "decimals")
# Per variant: what the program does, its output rule, the output case's files and example line.
ASK = {"flags": "lists the anomalous readings of sensor `@`, with its calibration correction applied.",
       "daily": "summarises the anomalous readings of sensor `@` per UTC day, with its calibration correction applied.",
       "peak": "finds the single most extreme anomalous reading of sensor `@`, with its calibration correction applied."}
PROGRAM_OUT = {"flags": f" Output: one line per anomalous reading, in time order: {OUT_FMT}. No anomalies: empty output.",
               "daily": f" Output: {DAILY_FMT}. No anomalies: empty output.",
               "peak": f" Output: {PEAK_FMT}. No anomalies: empty output."}
FILES = {"flags": ("/app/data/readings.csv", "/app/out/anomalies.txt"),
         "daily": ("/app/data/by_sensor", "/app/out/daily_anomalies.txt"),
         "peak": ("/app/data/sensor_log.csv", "/app/out/peak_anomaly.txt")}
OUTPUT_FMT = {"flags": f"one line per anomalous reading of that sensor, in time order: {OUT_FMT} (e.g. "
                       "`2024-05-01T03:10:00 71.425`)",
              "daily": f"{DAILY_FMT} (e.g. `2024-05-01 3 71.425`)",
              "peak": f"{PEAK_FMT} (e.g. `2024-05-01T03:10:00 71.425 4.871`)"}
SCREEN_INTRO = {
    "flags": ("Before a sensor feed is used to retrain our failure model we screen it: a feed that contains "
              "even one anomalous reading goes to a human instead."),
    "daily": ("Before a sensor feed is used to retrain our failure model we screen it. A single odd reading is a known "
              "logger glitch and is tolerated, but a feed with two or more anomalous readings goes to a human instead."),
    "peak": ("Our live monitor screens every sensor feed each time a reading arrives: only the newest reading is "
             "judged (the earlier ones were judged when they arrived), and an anomalous newest reading raises an "
             "alert.")}
SCREEN_VERDICT = {
    "flags": " A feed is rejected if at least one of its readings is anomalous; otherwise it is accepted.",
    "daily": " A feed is rejected if at least two of its readings are anomalous; otherwise (none or one) it is accepted.",
    "peak": (" A feed is rejected if its latest reading (the last one in time order, after the cleaning) is anomalous, "
             "whatever its earlier readings are; otherwise it is accepted.")}


@register
class RollingAnomalyFlags(Family):
    name = "rolling_anomaly_flags"
    domain = "data_science"
    skill_types = ("Time Series", "Data Quality")
    primitive_skills = ("rolling mean and standard deviation", "z-score anomaly detection", "duplicate record removal",
                        "outlier handling")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence", "adversarial_corpus")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    variants = ("flags", "daily", "peak")
    levels = {0: Knobs(n=30, sensors=2, w=5, k=3.0, shuffle=False, dupes=False, missing=False,
                       fahrenheit=False, replace=False),
              1: Knobs(n=150, sensors=2, w=12, k=3.0, shuffle=False, dupes=True, missing=False,
                       fahrenheit=False, replace=False),
              2: Knobs(n=300, sensors=3, w=24, k=3.0, shuffle=True, dupes=True, missing=False,
                       fahrenheit=False, replace=False),
              3: Knobs(n=400, sensors=3, w=20, k=3.5, shuffle=True, dupes=True, missing=True,
                       fahrenheit=True, replace=False),
              4: Knobs(n=600, sensors=4, w=30, k=2.5, shuffle=True, dupes=True, missing=True,
                       fahrenheit=True, replace=True)}
    STEP = 600  # seconds between readings

    def rule_text(self, k: Knobs, w: str | None = None, kk: str | None = None) -> str:
        w = w or str(k.w)
        kk = kk or f"{k.k:g}"
        s = (f"Walk the readings in time order. A reading is anomalous when at least {w} earlier readings "
             f"exist and it differs from the mean of the {w} readings immediately before it by strictly more "
             f"than {kk} times their population standard deviation (divide by {w}). Flagged readings "
             "stay in the history")
        if k.replace:
            s += (", but every later window counts a flagged reading as the window mean it was compared with, "
                  "not as its own value (so one spike does not mask the next).")
        else:
            s += " with their actual values."
        return s

    def cleaning_text(self, k: Knobs) -> str:
        out = []
        if k.shuffle:
            out.append("Rows are not in time order.")
        if k.dupes:
            out.append("Some rows were exported twice: a timestamp counts once (keep its first row).")
        if k.missing:
            out.append("Readings whose value is empty or `NaN` are gaps: skip them entirely (they are not "
                       "readings and do not enter any window).")
        if k.fahrenheit:
            out.append("The `unit` column is `C` or `F`: a firmware bug logged some readings in Fahrenheit; convert "
                       "them with C = (F - 32) * 5 / 9 before anything else.")
        else:
            out.append("All values are in degrees Celsius (`unit` is always `C`).")
        return " ".join(out)

    @staticmethod
    def start(t: TaskBuilder) -> int:
        return 1714521600 + t.rng.randrange(0, 200) * 86400

    def report_setup(self, t: TaskBuilder) -> tuple[list[str], str, int, dict, dict, object]:
        """(the sensors, the reported one, the first timestamp, the Python and C references, the Python
        namespace, and a function drawing the whole log: log(readings, {sensor: spikes}))."""
        k, rng = t.knobs, t.rng
        if t.variant != "flags":  # other draws than the flags task of the same seed
            rng.random()
        sensors = unseen.distinct(lambda: t.code(1), k.sensors)
        sensor = rng.choice(sensors)
        start = self.start(t)
        kmilli = round(k.k * 1000)
        src = fill(REFERENCES[t.variant], W=k.w, KMILLI=kmilli, REPLACE=k.replace, SENSOR=sensor, SCREEN=False)
        c_src = fill(C_REFERENCES[t.variant], W=str(k.w), KMILLI=str(kmilli), REPLACE="1" if k.replace else "0",
                     SENSOR=sensor, SCREEN="0", C_TRIM=C_TRIM, C_SPLIT=C_SPLIT)
        ns = run_python(src)

        def log(n: int, spikes: dict[str, int]) -> str:
            rows = []
            for s in sensors:
                rows += [(ts, s, v, u) for ts, v, u in make_rows(rng, ns, n, k, spikes[s], start, self.STEP)]
            if k.shuffle:
                rng.shuffle(rows)
            else:
                rows.sort(key=lambda r: (r[0], r[1]))
            return "timestamp,sensor,value,unit\n" + "".join(",".join(r) + "\n" for r in rows)

        return sensors, sensor, start, {"Python": src, "C": c_src}, ns, log

    @staticmethod
    def correction(t: TaskBuilder, *extra: str) -> str:
        """Thousandths of a degree; never a number the agent can read anywhere else."""
        return unseen.unseen(t, lambda: str(t.rng.randrange(1100, 1990)), *extra)

    def program_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        sensors, sensor, start, programs, ns, log = self.report_setup(t)
        cases = []
        for i in range(10):
            n = rng.randrange(k.w + 20, k.w + 90)
            # The worked examples have no anomaly on the hard-coded sensor: they show the cleaning and the
            # filtering by sensor, not the correction.
            spikes = {s: (rng.randrange(0, 3) if s != sensor or i >= 2 else 0) for s in sensors}
            if i >= 2:
                spikes[sensor] = rng.randrange(1, 4)
            cases.append(log(n, spikes))
        intro = ("Our line sensors log to a shared CSV (header `timestamp,sensor,value,unit`, ISO 8601 UTC "
                 "timestamps) and I want a tool that reads such a log on standard input and "
                 + ASK[t.variant].replace("@", sensor))
        rules = self.cleaning_text(k) + " " + self.rule_text(k) + " " + CALIB + PROGRAM_OUT[t.variant]
        offset = self.correction(t, intro, rules, *cases[:2])
        cases = [(x, ns["report"](x, sensor, offset)) for x in cases]
        t.say(intro)
        v = t.deliver(offset, OFFSET_WHAT)
        t.say(rules)
        t.expect_program("The calibration correction is always the one given above: hard-code it.", cases, programs)
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@OFFSET@@/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_output(t)
        k = t.knobs
        sensors, sensor, start, programs, ns, log = self.report_setup(t)
        text = log(k.n, {s: max(2, k.n // 60) for s in sensors})
        data, out = FILES[t.variant]
        need = {"flags": f"the anomalous readings of sensor `{sensor}`.",
                "daily": f"a per-day summary of the anomalous readings of sensor `{sensor}`.",
                "peak": f"the single most extreme anomalous reading of sensor `{sensor}`."}[t.variant]
        rows = [line.split(",") for line in text.splitlines()[1:]]
        if t.variant == "daily":  # one export per sensor, no sensor column
            exports = {s: "timestamp,value,unit\n" + "".join(f"{ts},{v},{u}\n" for ts, s2, v, u in rows if s2 == s)
                       for s in sensors}
            for s in sensors:
                t.add_file(f"{data}/{s}.csv", exports[s])
            text, data = exports[sensor], f"{data}/{sensor}.csv"
            intro = (f"Each temperature sensor on line 3 exports its own log to `{FILES['daily'][0]}/<SENSOR>.csv` "
                     "(header `timestamp,value,unit`, ISO 8601 UTC timestamps, about one reading every 10 minutes). "
                     "I need " + need)
        else:
            if t.variant == "peak":  # the logger's other column order
                text = "sensor,unit,value,timestamp\n" + "".join(f"{s2},{u},{v},{ts}\n" for ts, s2, v, u in rows)
            t.add_file(data, text)
            header = "sensor,unit,value,timestamp" if t.variant == "peak" else "timestamp,sensor,value,unit"
            intro = (f"The temperature sensors on line 3 log to `{data}` (header `{header}`, ISO 8601 UTC "
                     "timestamps, about one reading every 10 minutes per sensor). I need " + need)
        rules = self.rule_text(k) + " " + CALIB
        fmt = f"Output format: {OUTPUT_FMT[t.variant]}."
        offset = self.correction(t, intro, self.cleaning_text(k), rules, fmt)
        truth = ns["report"](text, sensor, offset)
        t.say(intro)
        t.say(self.cleaning_text(k))
        t.say(rules)
        v = t.deliver(offset, OFFSET_WHAT)
        t.say(fmt)
        t.add_solution_file("flags.py", programs["Python"])  # the correction comes on the command line
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/flags.py {data} {sensor} "{v}" > {out}')
        t.expect_output(out, truth, {"flags": "the anomaly list (format above)", "daily": "the per-day summary (format "
                                     "above)", "peak": "the most extreme anomaly (format above)"}[t.variant])

    def atomic_output(self, t: TaskBuilder) -> None:
        """Level 0: a fixed operating range stands in for the rolling rule, so one awk filter answers it."""
        k, rng = t.knobs, t.rng
        if t.variant != "flags":
            rng.random()
        sensors = unseen.distinct(lambda: t.code(1), k.sensors)
        sensor = rng.choice(sensors)
        start = self.start(t)
        rows, bands = [], {}
        for s in sensors:
            base = rng.randrange(35, 85)
            bands[s] = (base - 5, base + 5)
            spikes = set(rng.sample(range(k.n), 3))
            for i in range(k.n):  # normal readings stay 1 degree inside the band, spikes 1 degree outside
                x = base + (rng.choice([-1, 1]) * rng.uniform(6, 12) if i in spikes else rng.uniform(-4, 4))
                rows.append((time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + i * self.STEP)), s, f"{x:.2f}"))
        rows.sort()
        text = "timestamp,sensor,value,unit\n" + "".join(f"{ts},{s},{v},C\n" for ts, s, v in rows)
        data, out = {"daily": ("/app/data/line3_log.csv", FILES["daily"][1])}.get(t.variant, FILES[t.variant])
        t.add_file(data, text)
        lo, hi = bands[sensor]
        intro = (f"The temperature sensors on line 3 log to `{data}` (header `timestamp,sensor,value,"
                 f"unit`, values in degrees Celsius). Sensor `{sensor}` normally reads between {lo} and {hi}: a "
                 "reading of it strictly outside that range is anomalous.")
        ask = {"flags": f"Output: one line per anomalous reading of `{sensor}`, in time order: {OUT_FMT}.",
               "daily": (f"Output: one line per UTC day with an anomalous reading of `{sensor}`, in date order: the "
                         "date (`YYYY-MM-DD`), a space, how many anomalous readings it had that day, a space, and the "
                         "highest of them, corrected, rounded to 3 decimals."),
               "peak": (f"Output: a single line for the anomalous reading of `{sensor}` farthest outside that range "
                        f"(the earliest on a tie): {OUT_FMT}.")}[t.variant]
        fmt = (f"Add the calibration correction given above (thousandths of a degree, e.g. 2500 means +2.500) to "
               f"every reading you report. {ask}")
        offset = self.correction(t, intro, fmt, text)
        c = int(offset) / 1000
        bad = [(ts, float(v)) for ts, s, v in rows if s == sensor and not lo <= float(v) <= hi]
        if t.variant == "daily":
            days: dict[str, list[float]] = {}
            for ts, x in bad:
                days.setdefault(ts[:10], []).append(x)
            truth = "".join(f"{d} {len(xs)} {max(xs) + c:.3f}\n" for d, xs in sorted(days.items()))
        elif t.variant == "peak":
            best = None
            for ts, x in bad:
                d = lo - x if x < lo else x - hi
                if best is None or d > best[0]:
                    best = (d, ts, x)
            truth = f"{best[1]} {best[2] + c:.3f}\n"
        else:
            truth = "".join(f"{ts} {x + int(offset) / 1000:.3f}\n" for ts, x in bad)
        t.say(intro)
        v = t.deliver(offset, OFFSET_WHAT)
        t.say(fmt)
        cond = f'$2 == "{sensor}" && ($3 < {lo} || $3 > {hi})'
        prog = {"flags": cond + ' {printf "%s %.3f\\n", $1, $3 + c / 1000}',
                "daily": (cond + ' {d = substr($1, 1, 10); if (!(d in n) || $3 > m[d]) m[d] = $3; n[d]++} '
                          'END {for (d in n) printf "%s %d %.3f\\n", d, n[d], m[d] + c / 1000}'),
                "peak": (cond + ' {d = $3 < ' + str(lo) + ' ? ' + str(lo) + ' - $3 : $3 - ' + str(hi) + '; '
                         'if (b == "" || d > bd) {b = $1; bd = d; bv = $3}} END {printf "%s %.3f\\n", b, bv + c / 1000}')}
        sort = " | sort" if t.variant == "daily" else ""
        t.solve(f'mkdir -p /app/out\nawk -F, -v c="{v}" \'{prog[t.variant]}\' {data}{sort} > {out}')
        t.expect_output(out, truth, {"flags": "the anomaly list (format above)", "daily": "the per-day summary (format "
                                     "above)", "peak": "the most extreme anomaly (format above)"}[t.variant])

    def corpus_case(self, t: TaskBuilder) -> None:
        """The screening variant: the delivered value is the threshold multiplier K in thousandths. Both hidden
        corpora hold a feed within 0.001 of K on its side, so any other K misjudges one of them. K is drawn
        before the feeds (they depend on it): when it shows in the shown samples, everything is drawn again."""
        k, rng, var = t.knobs, t.rng, t.variant
        if var != "flags":
            rng.random()
        start = self.start(t)
        intro = (SCREEN_INTRO[var] + " Each feed is a CSV with header "
                 "`timestamp,value,unit` (ISO 8601 UTC timestamps, one reading per row). "
                 f"The rule uses a window of {k.w} readings and a threshold multiplier K that the maintenance team "
                 "tuned, see below.")
        rules = (self.cleaning_text(k) + " " + self.rule_text(k, kk="K") + SCREEN_VERDICT[var]
                 + " A few past feeds with their verdicts are in `/app/samples/`.")
        for _ in range(10):
            milli = int(unseen.unseen(t, lambda: str(round(k.k * 1000) + rng.randrange(-400, 400)), intro, rules))
            kn = dataclasses.replace(k, k=milli / 1000)
            ns = run_python(fill(REFERENCES[var], W=k.w, KMILLI=milli, REPLACE=k.replace, SENSOR="", SCREEN=True))
            for i, spikes in enumerate((0, 0, 1, 2), 1):  # shown samples, not part of the hidden corpora
                verdict = "accepted" if spikes == 0 else "rejected"
                if var != "flags":
                    t.add_file(f"/app/samples/feed{i}_{verdict}.csv", self.feed_item(t, ns, kn, start, spikes > 0))
                    continue
                n = rng.randrange(k.w + 25, k.w + 110)
                t.add_file(f"/app/samples/feed{i}_{verdict}.csv", csv_item(make_rows(rng, ns, n, kn, spikes, start,
                                                                                     self.STEP)))
            if not unseen.visible(t, str(milli), intro, rules):
                break
            t.env_files.clear()
        else:
            raise FamilyError("rolling_anomaly_flags: K showed in the samples in 10 draws")

        def series_item(spikes: int) -> str:
            n = rng.randrange(k.w + 25, k.w + 110)
            return csv_item(make_rows(rng, ns, n, kn, spikes, start, self.STEP))

        if var == "flags":
            clean = [series_item(0) for _ in range(29)] + [self.edge_item(t, ns, kn, start, False)]
            malicious = [series_item(rng.choice([1, 1, 1, 2, 3])) for _ in range(29)] + \
                [self.edge_item(t, ns, kn, start, True)]
        else:
            clean = [self.feed_item(t, ns, kn, start, False) for _ in range(29)] + \
                [self.edge_item(t, ns, kn, start, False)]
            malicious = [self.feed_item(t, ns, kn, start, True) for _ in range(29)] + \
                [self.edge_item(t, ns, kn, start, True)]
        rng.shuffle(clean)
        rng.shuffle(malicious)
        for item in clean:
            assert ns["is_clean"](item)
        for item in malicious:
            assert not ns["is_clean"](item)
        t.say(intro)
        v = t.deliver(str(milli), "the threshold multiplier K in thousandths (e.g. 1500 means K = 1.500)")
        t.say(rules)
        # The shipped screens keep K as @@KMILLI@@: the oracle puts the delivered value in.
        screen = fill(REFERENCES[var], W=k.w, KMILLI="@@KMILLI@@", REPLACE=k.replace, SENSOR="", SCREEN=True)
        c_screen = fill(C_REFERENCES[var], W=str(k.w), KMILLI="@@KMILLI@@", REPLACE="1" if k.replace else "0",
                        SENSOR="", SCREEN="1", C_TRIM=C_TRIM, C_SPLIT=C_SPLIT)
        t.expect_classifier("Write that screen as a program (hard-code K): the feed arrives on standard input.",
                            clean, malicious, {"Python": screen, "C": c_screen})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@KMILLI@@/{v}/" "$f"; done')

    @staticmethod
    def clean_under(variant: str, ns: dict, kn: Knobs, rows, kval: float) -> bool:
        """The variant's screening verdict under threshold ``kval`` (host-side mirror)."""
        series = [x for _, x in ns["series_of"](rows)]
        flagged = ratios(series, kn.w, kval, kn.replace)[1]
        if variant == "daily":
            return len(flagged) < 2
        if variant == "peak":
            return len(series) - 1 not in flagged
        return not flagged

    def last_reading(self, rows, ns: dict, kn: Knobs) -> tuple[str, float, float]:
        """The timestamp one step after the feed's last row, and the mean and deviation of the last window."""
        series = [x for _, x in ns["series_of"](rows)]
        win = history(series, kn.w, kn.k, kn.replace)[-kn.w:]
        m = sum(win) / kn.w
        sd = math.sqrt(sum((v - m) ** 2 for v in win) / kn.w)
        last = max(r[0] for r in rows)
        ts = time.strftime("%Y-%m-%dT%H:%M:%S",
                           time.gmtime(calendar.timegm(time.strptime(last, "%Y-%m-%dT%H:%M:%S")) + self.STEP))
        return ts, m, sd

    def feed_item(self, t: TaskBuilder, ns: dict, kn: Knobs, start: int, bad: bool) -> str:
        """A feed of the daily or peak screen, rejected (``bad``) or accepted, clear of the threshold."""
        rng, w = t.rng, kn.w
        for _ in range(200):
            n = rng.randrange(w + 25, w + 110)
            if t.variant == "daily":
                rows = make_rows(rng, ns, n, kn, rng.choice([2, 2, 3, 4]) if bad else rng.choice([0, 1, 1]), start,
                                 self.STEP)
            else:  # earlier anomalies do not matter: the newest reading decides
                rows = make_rows(rng, ns, n - 1, kn, rng.choice([0, 1, 1, 2]), start, self.STEP)
                ts, m, sd = self.last_reading(rows, ns, kn)
                r = rng.uniform(kn.k + 0.4, kn.k + 5) if bad else rng.uniform(0, kn.k - 0.5)
                rows = rows + [(ts, f"{m + rng.choice([-1, 1]) * r * sd:.2f}", "C")]
            if self.clean_under(t.variant, ns, kn, rows, kn.k) != bad and ns["is_clean"](csv_item(rows)) != bad:
                return csv_item(rows)
        raise FamilyError("rolling_anomaly_flags: no clear feed in 200 draws")

    def edge_item(self, t: TaskBuilder, ns: dict, kn: Knobs, start: int, flagged: bool) -> str:
        """A feed plus one last reading just past (flagged) or just inside the threshold K = ``kn.k``: a clean feed
        (flags), one with one anomaly already (daily) or with a few or none (peak)."""
        rng, w, kk, step = t.rng, kn.w, kn.k, self.STEP

        def clean_under(rows, kval: float) -> bool:
            return self.clean_under(t.variant, ns, kn, rows, kval)

        for _ in range(200):
            n = rng.randrange(w + 25, w + 110)
            base = rng.choice([0, 1, 2]) if t.variant == "peak" else (1 if t.variant == "daily" else 0)
            rows = make_rows(rng, ns, n, kn, base, start, step)
            series = [x for _, x in ns["series_of"](rows)]
            win = history(series, w, kk, kn.replace)[-w:]  # as later windows see them
            m = sum(win) / w
            sd = math.sqrt(sum((v - m) ** 2 for v in win) / w)
            last = max(r[0] for r in rows)
            ts = time.strftime("%Y-%m-%dT%H:%M:%S",
                               time.gmtime(calendar.timegm(time.strptime(last, "%Y-%m-%dT%H:%M:%S")) + step))
            for sign in (1, -1):
                x = round(m + sign * kk * sd, 2)
                for cand in (x - 0.01, x, x + 0.01):
                    cand = round(cand, 2)
                    new = rows + [(ts, f"{cand:.2f}", "C")]
                    if flagged and not clean_under(new, kk) and clean_under(new, kk + 0.001):
                        return csv_item(new)
                    if not flagged and clean_under(new, kk) and not clean_under(new, kk - 0.001):
                        return csv_item(new)
        raise FamilyError("rolling_anomaly_flags: no feed within 0.001 of K in 200 draws")
