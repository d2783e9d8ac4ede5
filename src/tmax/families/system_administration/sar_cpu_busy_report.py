"""Read CPU utilisation from `sar -u` text reports (sysstat), where busy time is 100 minus `%idle`.
Variants: the sampling intervals at or above a busy threshold, the mean busy share per hour, and the
streaks of consecutive busy intervals (which a reboot or a new day's file interrupts). Traps by level:
12-hour clock times and repeated column headers with `Average:` lines, then `LINUX RESTART` markers
and per-CPU rows from `sar -P ALL`, several days' files with the date only in the banner, and finally
a report in a locale with decimal commas and the wider `sar -u ALL` column set (find `%idle` by name)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import re
import sys
from decimal import ROUND_HALF_UP, Decimal

VARIANT = @VARIANT@
THRESHOLD = Decimal(@THRESHOLD@)  # busy percent that counts as busy


def to24(clock, half):
    h, m, s = (int(x) for x in clock.split(":"))
    if half:
        h = h % 12 + (12 if half == "PM" else 0)
    return f"{h:02d}:{m:02d}:{s:02d}"


def samples(text):
    """(date, time, busy) per `all` row of one report, and None where the machine restarted."""
    date, cols, out = None, None, []
    for line in text.split("\n"):
        if line.startswith("Linux"):
            m = re.search(r"(\d\d)/(\d\d)/(\d{4})", line)
            date = f"{m.group(3)}-{m.group(1)}-{m.group(2)}" if m else re.search(r"\d{4}-\d\d-\d\d", line).group(0)
            continue
        f = line.split()
        if len(f) < 2 or not re.match(r"\d\d:\d\d:\d\d$", f[0]):
            continue  # blank, banner or Average: lines
        half = f.pop(1) if f[1] in ("AM", "PM") else None
        if "RESTART" in line:
            out.append(None)
        elif f[1] == "CPU":
            cols = f[1:]
        elif f[1] == "all":
            vals = dict(zip(cols, f[1:]))
            busy = Decimal(100) - Decimal(vals["%idle"].replace(",", "."))
            out.append((date, to24(f[0], half), busy))
    return out


def report(run, texts):
    rows = []
    if VARIANT == "peaks":
        for text in texts:
            rows += [f"{run} {d} {t} {b:.2f}" for d, t, b in filter(None, samples(text)) if b >= THRESHOLD]
    elif VARIANT == "hourly":
        hours = {}
        for text in texts:
            for d, t, b in filter(None, samples(text)):
                hours.setdefault((d, t[:2]), []).append(b)
        for (d, h), bs in sorted(hours.items()):
            mean = (sum(bs) / len(bs)).quantize(Decimal("0.01"), ROUND_HALF_UP)
            rows.append(f"{run} {d} {h} {mean}")
    else:  # streaks of two or more consecutive busy intervals
        for text in texts:
            run_of = []
            for s in samples(text) + [None]:
                if s is not None and s[2] >= THRESHOLD:
                    run_of.append(s)
                    continue
                if len(run_of) >= 2:
                    rows.append(f"{run} {run_of[0][0]} {run_of[0][1]} {run_of[-1][1]} {len(run_of)}")
                run_of = []
    return "".join(r + "\n" for r in sorted(rows))


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], [open(p, encoding="utf-8").read() for p in sys.argv[2:]]))
'''

COLS = ("%user", "%nice", "%system", "%iowait", "%steal", "%idle")
COLS_ALL = ("%usr", "%nice", "%sys", "%iowait", "%steal", "%irq", "%soft", "%guest", "%gnice", "%idle")

def asks(th: int) -> dict[str, str]:
    """What each variant reports; th: the busy threshold in percent."""
    return {
        "peaks": f"every sampling interval whose busy share is at least {th}%, one line each as `<RUN> <date> <time> "
                 "<busy>`: the date as YYYY-MM-DD, the row's time on the 24-hour clock (HH:MM:SS), busy with two "
                 "decimals; lines sorted in byte order (that is, chronologically)",
        "hourly": "the mean busy share of each clock hour that has samples (a row belongs to the hour of its time "
                  "stamp), one line each as `<RUN> <date> <HH> <mean>`, the date as YYYY-MM-DD, the hour as two digits "
                  "on the 24-hour clock and the mean rounded to two decimals (halves away from zero); sorted "
                  "chronologically",
        "streaks": f"every streak of two or more consecutive sampling rows whose busy share is at least {th}%, one line "
                   "each as `<RUN> <date> <first time> <last time> <rows>`, the date as YYYY-MM-DD and the times on the "
                   "24-hour clock (HH:MM:SS); a restart, a row below the threshold or the end of a file ends a streak; "
                   "lines sorted in byte order",
    }


@dataclass(frozen=True)
class Knobs:
    files: int  # days, one report each
    hours: int  # hours sampled per day
    ampm: bool  # 12-hour clock, repeated headers and Average: lines
    restarts: bool  # LINUX RESTART markers and per-CPU rows (sar -P ALL)
    locale: bool  # one report with decimal commas and 24-hour times, one with the -u ALL columns


@register
class SarCpuBusyReport(Family):
    name = "sar_cpu_busy_report"
    domain = "system_administration"
    skill_types = ("Resource Monitoring",)
    primitive_skills = ("time window arithmetic", "capacity planning", "sorting with tie-breaks")
    variants = ("peaks", "hourly", "streaks")
    levels = {0: Knobs(files=1, hours=2, ampm=False, restarts=False, locale=False),
              1: Knobs(files=1, hours=6, ampm=True, restarts=False, locale=False),
              2: Knobs(files=1, hours=12, ampm=True, restarts=True, locale=False),
              3: Knobs(files=2, hours=24, ampm=True, restarts=True, locale=False),
              4: Knobs(files=3, hours=24, ampm=True, restarts=True, locale=True)}

    def _report(self, t: TaskBuilder, day: dt.date, host: str, style: str) -> str:
        """One day's `sar -u` text; style: "ampm", "24h", "comma" (decimal commas, 24h) or "all" (-u ALL)."""
        k, rng = t.knobs, t.rng
        cols = COLS_ALL if style == "all" else COLS
        comma = style == "comma"
        first = 0 if k.hours == 24 else rng.randrange(0, 24 - k.hours)
        clock = (lambda h, m: f"{(h % 12) or 12:02d}:{m:02d}:01 {'AM' if h < 12 else 'PM'}") if style in ("ampm", "all") \
            else (lambda h, m: f"{h:02d}:{m:02d}:01")
        banner = f"{day:%m/%d/%Y}" if not comma else f"{day:%Y-%m-%d}"
        out = [f"Linux 5.15.0-{rng.randrange(60, 120)}-generic ({host}) \t{banner} \t_x86_64_\t(4 CPU)", ""]

        def header(h, m):
            out.append(f"{clock(h, m):<12}{'CPU':>8}" + "".join(f"{c:>10}" for c in cols))

        header(first, 0)
        busy = rng.uniform(20, 60)
        slots = [(h, m) for h in range(first, first + k.hours) for m in range(10, 60, 10)] + \
            ([(first + k.hours, 0)] if first + k.hours < 24 else [])
        for i, (h, m) in enumerate(slots):
            if k.restarts and rng.random() < 0.03:
                out += ["", f"{clock(h, m - 5 if m else 0):<12}      LINUX RESTART\t(4 CPU)", ""]
                header(h, m)
            elif k.ampm and i and i % 36 == 0:  # sar repeats the column header
                out.append("")
                header(h, m)
            busy += (40 - busy) * 0.2 + rng.uniform(-12, 12) + (40 if rng.random() < 0.1 else 0)  # bursts revert
            busy = min(99.5, max(1.0, busy))
            for cpu in ["all"] + ([str(c) for c in range(4)] if k.restarts else []):
                b = busy if cpu == "all" else min(100.0, max(0.0, busy + rng.uniform(-20, 20)))
                idle = round(100 - b, 2)
                io = round(min(100 - idle, rng.uniform(0, 8)), 2)
                sys_ = round((100 - idle - io) * 0.3, 2)
                user = round(100 - idle - io - sys_, 2)
                vals = [user, 0.0, sys_, io, 0.0] + ([0.0] * 4 if style == "all" else []) + [idle]
                text = "".join(f"{v:>10.2f}" for v in vals)
                out.append(f"{clock(h, m):<12}{cpu:>8}" + (text.replace(".", ",") if comma else text))
        if k.ampm:
            out += ["", "Average:        all" + "".join(f"{rng.uniform(0, 50):>10.2f}" for _ in cols)]
        return "\n".join(out) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        th = rng.choice([60, 65, 70, 75, 80])
        src = fill(REFERENCE, VARIANT=repr(t.variant), THRESHOLD=th)
        ref = run_python(src)
        host = f"{rng.choice(['web', 'db', 'batch', 'cache'])}{rng.randrange(1, 20):02d}"
        styles = ["24h"] if not k.ampm else ["ampm"] * k.files
        if k.locale:
            styles[1:3] = ["comma", "all"]
        for _ in range(30):  # at least two answer lines
            start = dt.date(2025, 1, 1) + dt.timedelta(days=rng.randrange(600))
            days = [start + dt.timedelta(days=i) for i in range(k.files)]
            texts = [self._report(t, d, host, s) for d, s in zip(days, styles)]
            if ref["report"]("RUN", texts).count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no sar report with two {t.variant} lines in 30 draws")
        names = [f"/app/sar/sar{d:%d}.txt" for d in days]
        for name, text in zip(names, texts):
            t.add_file(name, text)
        run = unseen(t, lambda: t.code(2))
        truth = ref["report"](run, texts)
        where = f"`{names[0]}`" if k.files == 1 else "`/app/sar/` (one file per day)"
        t.say(f"The CPU history of {host} is in {where}: the text output of `sar -u`. The banner line gives the "
              "day; each row that follows is one sampling interval, stamped with the time it ended. The busy share "
              "of a row is 100 minus its `%idle`. Only rows for CPU `all` count.")
        notes = []
        if k.ampm:
            notes.append("times are on the 12-hour clock, the column header repeats now and then, and `Average:` "
                         "lines are summaries, not samples")
        if k.restarts:
            notes.append("`LINUX RESTART` marks a reboot, and rows for single CPUs (0, 1, ...) appear beside `all`")
        if k.locale:
            notes.append("one day was written in a locale with decimal commas and the 24-hour clock, and one with "
                         "`sar -u ALL`, whose columns differ (find `%idle` by its header)")
        if notes:
            t.say("Mind the format: " + "; ".join(notes) + ".")
        t.say(f"Report {asks(th)[t.variant]}. RUN is the capacity review id given below; the planning "
              "sheet files the report under it.")
        var = t.deliver(run, "the capacity review id")
        t.add_solution_file("sar_busy.py", src)
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/sar_busy.py "{var}" {" ".join(names)} > /app/out/cpu.txt')
        t.expect_output("/app/out/cpu.txt", truth, "the report")
