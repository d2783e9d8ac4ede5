"""Which sensor readings are anomalous? A trailing rolling mean / standard deviation rule over one
sensor's series, after the cleaning a real export needs (unsorted rows, duplicated timestamps,
missing values, readings logged in Fahrenheit, flagged values replaced in later windows). As a
screening program it must reject every series the rule flags and keep every clean one."""

from __future__ import annotations

import calendar
import math
import re
import time

from tmax.families.base import Family, TaskBuilder, register

REFERENCE = r'''
import math
import sys

SENSOR = "__SENSOR__"
W = __W__
K = __KMILLI__ / 1000  # the threshold multiplier, configured in thousandths
OFFSET = "__OFFSET__"  # calibration correction in thousandths of a degree, added to every reported reading
REPLACE = __REPLACE__  # a flagged reading enters later windows as its window mean


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
    if len(sys.argv) > 1 and sys.argv[1] == "--screen":
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W __W__
#define K (__KMILLI__ / 1000.0)
#define REPLACE __REPLACE__
#define SCREEN __SCREEN__
static const char *SENSOR = "__SENSOR__";
static const char *OFFSET = "__OFFSET__"; /* thousandths of a degree */

typedef struct {
    char *ts, *val, *unit;
    long idx;
} Row;

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) *--e = 0;
    return s;
}

static int split(char *line, char **f, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        char *c = strchr(p, ',');
        if (n < max) f[n] = p;
        n++;
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    for (int i = 0; i < n && i < max; i++) f[i] = trim(f[i]);
    return n;
}

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
    for (const char *p = OFFSET; *p; p++)
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

# The screening variant: the same rule as a program that exits 1 on a flagged series.
SCREEN = REFERENCE.replace('if len(sys.argv) > 1 and sys.argv[1] == "--screen":', "if True:")


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


def to_rows(rng, vals: list[float], start: int, step: int, k: dict) -> list[tuple[str, str, str]]:
    """(timestamp, value, unit) rows with the level's export faults."""
    rows = []
    for i, x in enumerate(vals):
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + i * step))
        value, unit = f"{x:.2f}", "C"
        if k["fahrenheit"] and rng.random() < 0.15:
            value, unit = f"{x * 9 / 5 + 32:.2f}", "F"
        rows.append((ts, value, unit))
        if k["missing"] and rng.random() < 0.04:  # a gap the logger marked as missing (its own timestamp)
            ts2 = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + i * step + step // 2))
            rows.append((ts2, rng.choice(["", "NaN"]), "C"))
    if k["dupes"]:
        for _ in range(max(1, len(rows) // 40)):
            pos = rng.randrange(len(rows))
            rows.insert(rng.randrange(pos, len(rows) + 1), rows[pos])
    if k["shuffle"]:
        rng.shuffle(rows)
    return rows


def make_rows(rng, ns: dict, n: int, k: dict, spikes: int, start: int, step: int) -> list[tuple[str, str, str]]:
    """Rows of one sensor whose cleaned series (as the reference cleans it) has exactly ``spikes`` anomalies
    and no evaluated reading within 0.05 of the threshold ratio, so float noise cannot flip a verdict."""
    while True:
        vals = make_values(rng, n, k["w"], k["k"], k["replace"], spikes)
        rows = to_rows(rng, vals, start, step, k)
        series = [x for _, x in ns["series_of"](rows)]
        rs, flagged = ratios(series, k["w"], k["k"], k["replace"])
        if len(flagged) == spikes and all(abs(r - k["k"]) > 0.05 for r in rs):
            return rows


def csv_item(rows) -> str:
    return "timestamp,value,unit\n" + "".join(f"{ts},{v},{u}\n" for ts, v, u in rows)


@register
class RollingAnomalyFlags(Family):
    name = "rolling_anomaly_flags"
    domain = "data_science"
    skill_types = ("Time Series", "Data Quality")
    primitive_skills = ("rolling mean and standard deviation", "z-score anomaly detection", "duplicate record removal",
                        "outlier handling")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence", "adversarial_corpus")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    levels = {1: {"n": 150, "sensors": 2, "w": 12, "k": 3, "shuffle": False, "dupes": True, "missing": False,
                  "fahrenheit": False, "replace": False},
              2: {"n": 300, "sensors": 3, "w": 24, "k": 3, "shuffle": True, "dupes": True, "missing": False,
                  "fahrenheit": False, "replace": False},
              3: {"n": 400, "sensors": 3, "w": 20, "k": 3.5, "shuffle": True, "dupes": True, "missing": True,
                  "fahrenheit": True, "replace": False},
              4: {"n": 600, "sensors": 4, "w": 30, "k": 2.5, "shuffle": True, "dupes": True, "missing": True,
                  "fahrenheit": True, "replace": True}}

    def rule_text(self, k: dict, w: str | None = None, kk: str | None = None) -> str:
        w = w or str(k["w"])
        kk = kk or f"{k['k']:g}"
        s = (f"Walk the readings in time order. A reading is anomalous when at least {w} earlier readings "
             f"exist and it differs from the mean of the {w} readings immediately before it by strictly more "
             f"than {kk} times their population standard deviation (divide by {w}). Flagged readings "
             "stay in the history")
        if k["replace"]:
            s += (", but every later window counts a flagged reading as the window mean it was compared with, "
                  "not as its own value (so one spike does not mask the next).")
        else:
            s += " with their actual values."
        return s

    def cleaning_text(self, k: dict) -> str:
        out = []
        if k["shuffle"]:
            out.append("Rows are not in time order.")
        if k["dupes"]:
            out.append("Some rows were exported twice: a timestamp counts once (keep its first row).")
        if k["missing"]:
            out.append("Readings whose value is empty or `NaN` are gaps: skip them entirely (they are not "
                       "readings and do not enter any window).")
        if k["fahrenheit"]:
            out.append("The `unit` column is `C` or `F`: a firmware bug logged some readings in Fahrenheit; convert "
                       "them with C = (F - 32) * 5 / 9 before anything else.")
        else:
            out.append("All values are in degrees Celsius (`unit` is always `C`).")
        return " ".join(out)

    def build(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        sensors: list[str] = []
        while len(sensors) < k["sensors"]:
            c = t.code(1)
            if c not in sensors:
                sensors.append(c)
        sensor = rng.choice(sensors)
        start = 1714521600 + rng.randrange(0, 200) * 86400
        step = 600

        if t.axes.verifier == "adversarial_corpus":
            self.screen(t, start, step)
            return
        src = (REFERENCE.replace("__W__", str(k["w"])).replace("__KMILLI__", str(round(k["k"] * 1000)))
               .replace("__REPLACE__", str(k["replace"])).replace("__SENSOR__", sensor))
        c_src = (C_REFERENCE.replace("__W__", str(k["w"])).replace("__KMILLI__", str(round(k["k"] * 1000)))
                 .replace("__REPLACE__", str(int(k["replace"]))).replace("__SENSOR__", sensor)
                 .replace("__SCREEN__", "0"))
        ns: dict = {}
        exec(src, ns)  # noqa: S102 - our own reference program

        def log(n: int, spikes: dict[str, int]) -> str:
            rows = []
            for s in sensors:
                rows += [(ts, s, v, u) for ts, v, u in make_rows(rng, ns, n, k, spikes[s], start, step)]
            if k["shuffle"]:
                rng.shuffle(rows)
            else:
                rows.sort(key=lambda r: (r[0], r[1]))
            return "timestamp,sensor,value,unit\n" + "".join(",".join(r) + "\n" for r in rows)

        def correction(texts: list[str]) -> str:
            # Thousandths of a degree; never a number the agent can read anywhere else.
            # A digit run counts with a repeated digit trimmed off either end too ("20244" shows 2024).
            runs = [m for x in texts for m in re.findall(r"[0-9]+", x)]
            seen = {v for m in runs for v in (m, m.lstrip(m[0]), m.rstrip(m[-1]))}
            while True:
                c = str(rng.randrange(1100, 1990))
                if c not in seen:
                    return c

        calib = ("The sensor's calibration certificate says it reads low: add the calibration correction given below "
                 "(in thousandths of a degree Celsius, e.g. 2500 means +2.500 degrees) to every reading you report. "
                 "It is a constant shift, so it does not change which readings are anomalous.")
        out_fmt = ("the timestamp exactly as logged, a space, and the corrected reading in degrees Celsius rounded to "
                   "3 decimals")
        if t.axes.verifier == "fuzz_equivalence":
            cases = []
            for i in range(10):
                n = rng.randrange(k["w"] + 20, k["w"] + 90)
                # The worked examples have no anomaly on the hard-coded sensor: they show the cleaning and the
                # filtering by sensor, not the correction.
                spikes = {s: (rng.randrange(0, 3) if s != sensor or i >= 2 else 0) for s in sensors}
                if i >= 2:
                    spikes[sensor] = rng.randrange(1, 4)
                cases.append(log(n, spikes))
            offset = correction(cases)
            cases = [(x, ns["report"](x, sensor, offset)) for x in cases]
            t.say("Our line sensors log to a shared CSV (header `timestamp,sensor,value,unit`, ISO 8601 UTC "
                  "timestamps) and I want a tool that reads such a log on standard input and lists the anomalous "
                  f"readings of sensor `{sensor}`, with its calibration correction applied.")
            v = t.deliver(offset, "the calibration correction (thousandths of a degree)")
            t.say(self.cleaning_text(k) + " " + self.rule_text(k) + " " + calib + f" Output: one line per anomalous "
                  f"reading, in time order: {out_fmt}. No anomalies: empty output.")
            t.expect_program("The calibration correction is always the one given above: hard-code it.", cases,
                             {"Python": src, "C": c_src})
            t.solve(f'for f in /app/solution.*; do sed -i "s/__OFFSET__/{v}/" "$f"; done')
            return
        text = log(k["n"], {s: max(2, k["n"] // 60) for s in sensors})
        offset = correction([text])
        t.add_file("/app/data/readings.csv", text)
        truth = ns["report"](text, sensor, offset)
        t.say("The temperature sensors on line 3 log to `/app/data/readings.csv` (header `timestamp,sensor,value,"
              "unit`, ISO 8601 UTC timestamps, about one reading every 10 minutes per sensor). I need the anomalous "
              f"readings of sensor `{sensor}`.")
        t.say(self.cleaning_text(k))
        t.say(self.rule_text(k) + " " + calib)
        v = t.deliver(offset, "the calibration correction (thousandths of a degree)")
        t.say(f"Output format: one line per anomalous reading of that sensor, in time order: {out_fmt} (e.g. "
              "`2024-05-01T03:10:00 71.425`).")
        t.add_solution_file("flags.py", src.replace('"__OFFSET__"', '""'))
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/flags.py /app/data/readings.csv {sensor} "{v}" '
                '> /app/out/anomalies.txt')
        t.expect_output("/app/out/anomalies.txt", truth, "the anomaly list (format above)")

    def screen(self, t: TaskBuilder, start: int, step: int) -> None:
        """The screening variant: the delivered value is the threshold multiplier K in thousandths. Both hidden
        corpora hold a feed within 0.001 of K on its side, so any other K misjudges one of them."""
        k, rng = t.knobs, t.rng
        while True:
            milli = round(k["k"] * 1000) + rng.randrange(-400, 400)
            if not 2000 <= milli < 2100:  # never a year of the timestamps
                break
        kk = milli / 1000
        kn = dict(k, k=kk)
        src = (REFERENCE.replace("__W__", str(k["w"])).replace("__KMILLI__", str(milli))
               .replace("__REPLACE__", str(k["replace"])).replace("__SENSOR__", "").replace("__OFFSET__", "0"))
        ns: dict = {}
        exec(src, ns)  # noqa: S102 - our own reference program

        def series_item(spikes: int) -> str:
            n = rng.randrange(k["w"] + 25, k["w"] + 110)
            return csv_item(make_rows(rng, ns, n, kn, spikes, start, step))

        def verdicts(rows, kval: float) -> bool:
            """Is the feed clean under multiplier ``kval``?"""
            series = [x for _, x in ns["series_of"](rows)]
            return not ratios(series, k["w"], kval, k["replace"])[1]

        def edge_item(flagged: bool) -> str:
            """A clean feed plus one last reading just past (flagged) or just inside the threshold."""
            while True:
                n = rng.randrange(k["w"] + 25, k["w"] + 110)
                rows = make_rows(rng, ns, n, kn, 0, start, step)
                series = [x for _, x in ns["series_of"](rows)]
                win = series[-k["w"]:]  # a clean feed: no flagged reading was replaced
                m = sum(win) / k["w"]
                sd = math.sqrt(sum((v - m) ** 2 for v in win) / k["w"])
                last = max(r[0] for r in rows)
                ts = time.strftime("%Y-%m-%dT%H:%M:%S",
                                   time.gmtime(calendar.timegm(time.strptime(last, "%Y-%m-%dT%H:%M:%S")) + step))
                for sign in (1, -1):
                    x = round(m + sign * kk * sd, 2)
                    for cand in (x - 0.01, x, x + 0.01):
                        cand = round(cand, 2)
                        new = rows + [(ts, f"{cand:.2f}", "C")]
                        if flagged and not verdicts(new, kk) and verdicts(new, kk + 0.001):
                            return csv_item(new)
                        if not flagged and verdicts(new, kk) and not verdicts(new, kk - 0.001):
                            return csv_item(new)

        clean = [series_item(0) for _ in range(29)] + [edge_item(False)]
        malicious = [series_item(rng.choice([1, 1, 1, 2, 3])) for _ in range(29)] + [edge_item(True)]
        rng.shuffle(clean)
        rng.shuffle(malicious)
        for item in clean:
            assert ns["is_clean"](item)
        for item in malicious:
            assert not ns["is_clean"](item)
        for i, spikes in enumerate((0, 0, 1, 2), 1):  # shown samples, not part of the hidden corpora
            verdict = "accepted" if spikes == 0 else "rejected"
            t.add_file(f"/app/samples/feed{i}_{verdict}.csv", series_item(spikes))
        t.say("Before a sensor feed is used to retrain our failure model we screen it: a feed that contains "
              "even one anomalous reading goes to a human instead. Each feed is a CSV with header "
              "`timestamp,value,unit` (ISO 8601 UTC timestamps, one reading per row). "
              f"The rule uses a window of {k['w']} readings and a threshold multiplier K that the maintenance team "
              "tuned, see below.")
        v = t.deliver(str(milli), "the threshold multiplier K in thousandths (e.g. 1500 means K = 1.500)")
        t.say(self.cleaning_text(k) + " " + self.rule_text(k, kk="K")
              + " A feed is rejected if at least one of its readings is anomalous; otherwise it is accepted. "
              "A few past feeds with their verdicts are in `/app/samples/`.")
        screen = (SCREEN.replace("__W__", str(k["w"])).replace("__REPLACE__", str(k["replace"]))
                  .replace("__SENSOR__", "").replace("__OFFSET__", "0"))
        c_screen = (C_REFERENCE.replace("__W__", str(k["w"])).replace("__REPLACE__", str(int(k["replace"])))
                    .replace("__SCREEN__", "1").replace("__SENSOR__", "").replace("__OFFSET__", "0"))
        t.expect_classifier("Write that screen as a program (hard-code K): the feed arrives on standard input.",
                            clean, malicious, {"Python": screen, "C": c_screen})
        t.solve(f'for f in /app/solution.*; do sed -i "s/__KMILLI__/{v}/" "$f"; done')
