"""When will cron fire next? Evaluate a user crontab (lists, ranges, steps, month and weekday names,
the day-of-month / day-of-week OR rule, weekday 7, @macros, @reboot and a leap-day job at higher levels)
and, from a given instant within a 1500-day horizon: merge the next N run times of every job strictly
after it (next_runs), merge the last N run times of every job strictly before it (previous_runs), or
count the runs of all jobs in the 24 hours after it per clock hour (hourly_load)."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

# The start instant is a placeholder: the host substitutes it for the truth, the oracle seds the delivered one.
REFERENCE = r'''
import datetime
import sys

START = "@@VALUE@@"
COUNT = @COUNT@
VARIANT = @VARIANT@
HORIZON = 1500
MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
DOWS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
          "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
MDAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def value(text, names):
    text = text.lower()
    if text in names:
        return names[text]
    return int(text)


def parse_field(text, lo, hi, names):
    out = [False] * (hi + 1)
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, s = part.split("/", 1)
            step = int(s)
        if part == "*":
            a, b = lo, hi
        elif "-" in part:
            x, y = part.split("-", 1)
            a, b = value(x, names), value(y, names)
        else:
            a = b = value(part, names)
        for v in range(a, b + 1, step):
            out[v] = True
    return out


def parse(text):
    jobs = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        first = s.split()[0]
        if "=" in first:
            continue  # environment assignment
        if first.startswith("@"):
            if first.lower() == "@reboot":
                continue
            fields = MACROS[first.lower()].split()
            cmd = s.split(None, 1)[1]
        else:
            parts = s.split(None, 5)
            fields, cmd = parts[:5], parts[5]
        name = cmd.split()[0].rsplit("/", 1)[-1]
        if name.endswith(".sh"):
            name = name[:-3]
        dow = parse_field(fields[4], 0, 7, DOWS)
        dow[0] = dow[0] or dow[7]
        jobs.append({"name": name,
                     "minute": parse_field(fields[0], 0, 59, {}), "hour": parse_field(fields[1], 0, 23, {}),
                     "dom": parse_field(fields[2], 1, 31, {}), "month": parse_field(fields[3], 1, 12, MONTHS),
                     "dow": dow, "dom_star": fields[2].startswith("*"), "dow_star": fields[4].startswith("*")})
    return jobs


def leap(y):
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def weekday(y, m, d):
    # 0 = Sunday: count days from 1970-01-01, a Thursday
    days = (y - 1970) * 365 + sum(1 for v in range(1970, y) if leap(v))
    days += sum(MDAYS[:m - 1]) + (1 if m > 2 and leap(y) else 0) + d - 1
    return (days + 4) % 7


def day_matches(job, y, m, d):
    if not job["month"][m]:
        return False
    dom_ok, dow_ok = job["dom"][d], job["dow"][weekday(y, m, d)]
    if not job["dom_star"] and not job["dow_star"]:
        return dom_ok or dow_ok
    return dom_ok and dow_ok


def next_runs(text, start=None):
    start = start or START
    y, m, d = int(start[0:4]), int(start[4:6]), int(start[6:8])
    now = int(start[8:10]) * 60 + int(start[10:12])
    jobs = parse(text)
    for job in jobs:
        job["times"] = [(hh, mm) for hh in range(24) if job["hour"][hh] for mm in range(60) if job["minute"][mm]]
        job["runs"] = []
    out = []
    for _ in range(HORIZON + 1):
        for job in jobs:
            if len(job["runs"]) >= COUNT or not day_matches(job, y, m, d):
                continue
            for hh, mm in job["times"]:
                if hh * 60 + mm > now and len(job["runs"]) < COUNT:
                    job["runs"].append((y, m, d, hh, mm))
        now = -1
        d += 1
        if d > MDAYS[m - 1] + (1 if m == 2 and leap(y) else 0):
            d, m = 1, m + 1
            if m > 12:
                m, y = 1, y + 1
    for job in jobs:
        out.extend((run, job["name"]) for run in job["runs"])
    out.sort()
    return "".join(f"{y:04d}-{m:02d}-{d:02d} {hh:02d}:{mm:02d} {name}\n" for (y, m, d, hh, mm), name in out)


def days_from(start, step):
    """(i, date) for the start's day (i = 0) and the HORIZON days after it (step 1) or before it (step -1)."""
    day = datetime.date(int(start[0:4]), int(start[4:6]), int(start[6:8]))
    for i in range(HORIZON + 1):
        yield i, day
        day += datetime.timedelta(days=step)


def times_of(job):
    return [(hh, mm) for hh in range(24) if job["hour"][hh] for mm in range(60) if job["minute"][mm]]


def previous_runs(text, start=None):
    start = start or START
    now = int(start[8:10]) * 60 + int(start[10:12])
    out = []
    for job in parse(text):
        times, got = times_of(job), []
        for i, day in days_from(start, -1):
            if len(got) >= COUNT:
                break
            if day_matches(job, day.year, day.month, day.day):
                got += [(day.year, day.month, day.day, hh, mm) for hh, mm in reversed(times)
                        if i > 0 or hh * 60 + mm < now][:COUNT - len(got)]
        out.extend((run, job["name"]) for run in got)
    out.sort()
    return "".join(f"{y:04d}-{m:02d}-{d:02d} {hh:02d}:{mm:02d} {name}\n" for (y, m, d, hh, mm), name in out)


def hourly_load(text, start=None):
    """Runs of all jobs strictly after the start and at most 24 hours after it, per clock hour."""
    start = start or START
    now = int(start[8:10]) * 60 + int(start[10:12])
    load = {}
    for job in parse(text):
        times = times_of(job)
        for i, day in days_from(start, 1):
            if i > 1:
                break
            if day_matches(job, day.year, day.month, day.day):
                for hh, mm in times:
                    if (i == 0 and hh * 60 + mm > now) or (i == 1 and hh * 60 + mm <= now):
                        key = f"{day.isoformat()} {hh:02d}:00"
                        load[key] = load.get(key, 0) + 1
    return "".join(f"{h} {n}\n" for h, n in sorted(load.items()))


def report(text, start=None):
    return {"next_runs": next_runs, "previous_runs": previous_runs, "hourly_load": hourly_load}[VARIANT](text, start)


if __name__ == "__main__":
    sys.stdout.write(report(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

# Level 0's program: daily jobs only, the runs still to come on the start's day (previous_runs: the runs
# already done that day; hourly_load: the runs still to come counted per clock hour).
ATOMIC_REFERENCE = r'''
import sys

START = "@@VALUE@@"
VARIANT = @VARIANT@


def today(text, start=None):
    s = start or START
    day, now = f"{s[:4]}-{s[4:6]}-{s[6:8]}", int(s[8:10]) * 60 + int(s[10:12])
    runs = []
    for line in text.splitlines():
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        m, h = int(f[0]), int(f[1])
        name = f[5].rsplit("/", 1)[-1]
        if name.endswith(".sh"):
            name = name[:-3]
        if VARIANT == "previous_runs" and h * 60 + m < now:
            runs.append(f"{day} {h:02d}:{m:02d} {name}")
        elif VARIANT != "previous_runs" and h * 60 + m > now:
            runs.append(f"{day} {h:02d}:{m:02d} {name}")
    if VARIANT == "hourly_load":
        hours = sorted({r[:13] for r in runs})
        return "".join(f"{h}:00 {sum(r.startswith(h) for r in runs)}\n" for h in hours)
    return "".join(r + "\n" for r in sorted(runs))


if __name__ == "__main__":
    sys.stdout.write(today(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

NAMES = ["backup-db", "rotate-logs", "sync-mirror", "purge-tmp", "renew-certs", "report-usage", "fetch-feeds",
         "vacuum-db", "scrub-disks", "send-digest", "check-raid", "prune-images", "index-mail", "export-metrics",
         "reindex-search", "archive-audit", "warm-cache", "snapshot-vm", "clean-sessions", "refresh-dns"]
MON_NAMES = "jan feb mar apr may jun jul aug sep oct nov dec".split()
DOW_NAMES = "sun mon tue wed thu fri sat".split()


def _case(rng, word):
    return rng.choice([word, word.upper(), word.title()])


class _Gen:
    def __init__(self, rng, level):
        self.rng, self.level = rng, level

    def minute(self):
        r, rng = self.rng.random(), self.rng
        if r < 0.35:
            return str(rng.randrange(60))
        if r < 0.6:
            return ",".join(str(v) for v in sorted(rng.sample(range(60), rng.randint(2, 3))))
        if self.level >= 2 and r < 0.8:
            return f"*/{rng.choice([5, 10, 15, 20, 30])}"
        if self.level >= 2:
            a = rng.randrange(0, 30)
            return f"{a}-{a + rng.randrange(5, 29)}/{rng.choice([7, 10, 13])}"
        return str(rng.randrange(60))

    def hour(self):
        r, rng = self.rng.random(), self.rng
        if r < 0.3:
            return "*"
        if r < 0.55:
            return str(rng.randrange(24))
        if r < 0.75:
            return ",".join(str(v) for v in sorted(rng.sample(range(24), rng.randint(2, 4))))
        if self.level >= 2:
            a = rng.randrange(0, 12)
            b = a + rng.randrange(3, 12)
            return rng.choice([f"{a}-{b}", f"*/{rng.choice([2, 3, 4, 6])}", f"{a}-{b}/{rng.choice([2, 3])}"])
        return str(rng.randrange(24))

    def dom(self):
        r, rng = self.rng.random(), self.rng
        if r < 0.6 or self.level == 1:
            return "*" if r < 0.8 else str(rng.randrange(1, 29))
        if r < 0.75:
            return str(rng.randrange(1, 32))
        if r < 0.9:
            return f"{rng.randrange(1, 10)}-{rng.randrange(12, 29)}"
        return f"*/{rng.choice([2, 5, 10])}"

    def month(self):
        r, rng = self.rng.random(), self.rng
        if r < 0.65:
            return "*"
        if self.level >= 3 and r < 0.85:
            ms = sorted(rng.sample(range(12), rng.randint(2, 4)))
            return ",".join(_case(rng, MON_NAMES[v]) for v in ms)
        ms = sorted(rng.sample(range(1, 13), rng.randint(1, 4)))
        return ",".join(str(v) for v in ms)

    def dow(self):
        r, rng = self.rng.random(), self.rng
        if r < 0.55:
            return "*"
        if self.level >= 3 and r < 0.7:
            a = rng.randrange(1, 5)
            return f"{_case(rng, DOW_NAMES[a])}-{_case(rng, DOW_NAMES[a + rng.randrange(1, 3)])}"
        if self.level >= 3 and r < 0.8:
            return rng.choice(["7", "0", "5-7", "6,7"])
        if self.level >= 2 and r < 0.9:
            return f"{rng.randrange(1, 3)}-{rng.randrange(4, 6)}"
        return str(rng.randrange(0, 7))

    def entry(self):
        dom, dow = self.dom(), self.dow()
        if self.level < 3 and dom != "*" and dow != "*":
            dow = "*"
        return [self.minute(), self.hour(), dom, self.month(), dow]


def crontab(rng, level, jobs):
    """Crontab text; jobs = number of scheduled jobs."""
    gen = _Gen(rng, level)
    names = rng.sample(NAMES, jobs + 2)
    lines = ["# m h dom mon dow command"]
    if level >= 3:
        lines += ["SHELL=/bin/bash", "MAILTO=ops@example.org", ""]
    # one frequent job so the report always fills
    lines.append(f"{rng.choice(['*/5', '*/10', '*/15', '7,37'])} * * * * /usr/local/bin/{names[0]}.sh")
    for i in range(1, jobs):
        name = names[i]
        cmd = f"/usr/local/bin/{name}.sh" + rng.choice(["", " --quiet", " >/dev/null 2>&1", " -v --since 1d"])
        if level >= 4 and rng.random() < 0.25:
            lines.append(f"{rng.choice(['@daily', '@hourly', '@weekly', '@monthly', '@midnight'])} {cmd}")
            continue
        if level >= 3 and rng.random() < 0.15:
            lines.append("# " + " ".join(gen.entry()) + f" /usr/local/bin/{names[-1]}.sh  (disabled)")
        lines.append(" ".join(gen.entry()) + " " + cmd)
    if level >= 4:
        lines.append(f"@reboot /usr/local/bin/{names[-2]}.sh")
        lines.insert(rng.randrange(1, len(lines)), f"{rng.randrange(60)} {rng.randrange(24)} 29 2 * "
                                                   f"/usr/local/bin/{names[-1]}.sh")
    return "\n".join(lines) + "\n"


def instant(rng, years: range) -> str:
    """A start instant YYYYMMDDHHMM in one of ``years``."""
    return (f"{rng.choice(years):04d}{rng.randrange(1, 13):02d}{rng.randrange(1, 29):02d}"
            f"{rng.randrange(24):02d}{rng.randrange(60):02d}")


def draw_start(t: TaskBuilder, *texts: str) -> str:
    """The delivered start instant (2026-2028), shown nowhere (``texts``: what is still to be shown)."""
    return unseen(t, lambda: instant(t.rng, range(2026, 2029)), *texts)


# Level 0's report, by variant (daily jobs only, on the start instant's day).
ATOMIC_ASK = {"next_runs": "the runs still to come on the start instant's day strictly after its time, one line per "
                           "run as `YYYY-MM-DD HH:MM job` (the job is the command's base name without `.sh`), sorted "
                           "by time",
              "previous_runs": "the runs earlier on the start instant's day, strictly before its time, one line per "
                               "run as `YYYY-MM-DD HH:MM job` (the job is the command's base name without `.sh`), "
                               "sorted by time",
              "hourly_load": "how many runs are still to come on the start instant's day strictly after its time in "
                             "each clock hour, one line per hour with at least one as `YYYY-MM-DD HH:00 runs`, in "
                             "time order"}


@dataclass(frozen=True)
class Knobs:
    jobs: int  # scheduled jobs in the crontab
    count: int  # next runs reported per job


VALUE = "the start instant as YYYYMMDDHHMM"
# The format's example: a candidate anyone can read off, so it lies years before every start drawn (its
# runs, within the horizon, never meet ours, even under partial credit).
EXAMPLE = "199901021530"


@register
class CronNextRuns(Family):
    name = "cron_next_runs"
    domain = "system_administration"
    skill_types = ("Scheduling",)
    primitive_skills = ("cron expression evaluation", "calendar arithmetic", "day-of-month and day-of-week semantics",
                        "schedule merging", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = ("next_runs", "previous_runs", "hourly_load")
    levels = {0: Knobs(jobs=5, count=1), 1: Knobs(jobs=4, count=2), 2: Knobs(jobs=6, count=3), 3: Knobs(jobs=8, count=3),
              4: Knobs(jobs=10, count=4)}

    def rules(self, level: int, count: int, variant: str = "next_runs") -> tuple[str, str]:
        """(the cron rules as a bullet list, the report format): both cases state them alike."""
        rules = ["Fields are minute (0-59), hour (0-23), day of month (1-31), month (1-12) and day of week "
                 "(0-7, where both 0 and 7 mean Sunday). A field is `*`, a number, a range `a-b`, or a "
                 "comma-separated list of those; `*/n` and `a-b/n` take every n-th value of the range "
                 "starting at its first value."]
        if level >= 3:
            rules.append("Month and weekday names (`jan`..`dec`, `sun`..`sat`, any letter case) may replace "
                         "numbers. Lines whose first word contains `=` set environment variables; lines starting "
                         "with `#` are comments.")
            rules.append("When both the day-of-month and the day-of-week field are restricted (neither begins with "
                         "`*`), a day matches if EITHER field matches; otherwise both must match.")
        if level >= 4:
            rules.append("Macros: `@hourly` is `0 * * * *`, `@daily` and `@midnight` are `0 0 * * *`, `@weekly` "
                         "is `0 0 * * 0`, `@monthly` is `0 0 1 * *`; `@reboot` jobs are not time-based and never "
                         "appear in the report.")
        rules.append("A job is named by the base name of the first word of its command with a trailing `.sh` "
                     "removed (`/usr/local/bin/backup-db.sh --full` is `backup-db`). Times are local wall-clock "
                     "time with no daylight-saving changes.")
        fmt = {"next_runs": f"for every job, its next {count} run times strictly after the start instant, looking at "
                            "most 1500 days ahead (the start day is day 0, so runs on day 1500 still count; a job "
                            "with fewer runs in that horizon lists only those), all jobs together, one line per run "
                            "as `YYYY-MM-DD HH:MM job`, in time order, runs at the same minute ordered by job name "
                            "(byte order)",
               "previous_runs": f"for every job, its last {count} run times strictly before the start instant, "
                                "looking at most 1500 days back (the start day is day 0, so runs on day -1500 still "
                                "count; a job with fewer runs in that horizon lists only those), all jobs together, "
                                "one line per run as `YYYY-MM-DD HH:MM job`, oldest first, runs at the same minute "
                                "ordered by job name (byte order)",
               "hourly_load": "the load of the 24 hours after the start instant: every run of every job strictly "
                              "after the start and at most 24 hours after it, counted per clock hour, one line per "
                              "hour with at least one run as `YYYY-MM-DD HH:00 runs`, in time order"}[variant]
        return "\n".join(f"- {r}" for r in rules), fmt

    def program_case(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        if level == 0:
            return self.atomic_program(t)
        src = fill(REFERENCE, COUNT=k.count, VARIANT=repr(t.variant))
        ns = run_python(src)
        rules_txt, fmt = self.rules(level, k.count, t.variant)
        texts = [crontab(rng, level, rng.randrange(max(2, k.jobs - 2), k.jobs + 2)) for _ in range(10)]
        # The worked examples use a demo start stated in the instruction, years earlier: their runs show the
        # format, not when our start lies.
        demo = instant(rng, range(2020, 2024))
        start = draw_start(t, *texts[:2], rules_txt, fmt, demo)
        cases = [(text, ns["report"](text, demo if i < 2 else start)) for i, text in enumerate(texts)]
        t.deliver(start, VALUE)
        t.say("We keep a tool that previews cron schedules before they are installed. Given a user crontab "
              f"(five time fields, then the command) on standard input, print {fmt}.\n\n{rules_txt}\n\n"
              f"The worked examples were produced with a demo start instant of {demo} (YYYYMMDDHHMM); your "
              "program must use the start instant given above.")
        t.expect_program("The start instant is the one given above; hard-code it.", cases, {"Python": src})
        t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        var = t.variant
        src = fill(REFERENCE, COUNT=k.count, VARIANT=repr(var))
        ns = run_python(src)
        if level == 0:
            return self.atomic(t, ns)
        rules_txt, fmt = self.rules(level, k.count, var)
        text = crontab(rng, level, k.jobs)
        # next_runs keeps its one wording and paths; the other variants draw theirs, so seeds differ in more
        # than numbers.
        host = "our batch host" if var == "next_runs" else rng.choice(["our batch host", "the reporting server",
                                                                      "the build box", "the mail relay"])
        path = "/app/cron/crontab" if var == "next_runs" else rng.choice(["/app/cron/crontab", "/app/etc/crontab.user",
                                                                         "/app/spool/cron/ops"])
        t.add_file(path, text)
        start = draw_start(t, rules_txt, fmt, EXAMPLE)
        truth = ns["report"](text, start)
        v = t.deliver(start, VALUE)
        need = "Before a maintenance window I need to know exactly what will run after the start instant given above"
        if var == "previous_runs":
            need = rng.choice(["A job misbehaved and I need to know exactly what had run before the start instant "
                               "given above", "For an incident review I must list what cron had already started "
                               "before the instant given above"])
        elif var == "hourly_load":
            need = rng.choice(["I am planning a maintenance window and need to know how busy cron will be in the day "
                               "after the start instant given above", "Capacity check: I need the number of cron "
                               "runs in each hour of the day following the instant given above"])
        t.say(f"The crontab of {host} is `{path}` (a user crontab: five time fields, then the "
              f"command). {need} (YYYYMMDDHHMM; {EXAMPLE} is 2 January 1999, 15:30).\n\n{rules_txt}\n\n"
              f"Report format: {fmt}.")
        out = {"next_runs": "/app/out/next_runs.txt", "previous_runs": "/app/out/previous_runs.txt",
               "hourly_load": "/app/out/hourly_load.txt"}[var]
        t.add_solution_file("cron_next.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/cron_next.py "{v}" < {path} > {out}')
        t.expect_output(out, truth, "the report")

    def daily(self, rng, jobs: int) -> str:
        """A crontab of daily jobs at distinct times."""
        names = rng.sample(NAMES, jobs)
        times = rng.sample(range(24 * 60), jobs)
        return "# m h dom mon dow command\n" + "".join(f"{m % 60} {m // 60} * * * /usr/local/bin/{n}.sh\n"
                                                      for n, m in zip(names, times))

    def atomic_program(self, t: TaskBuilder) -> None:
        """Level 0's program: the daily jobs' runs still to come on the start's day (previous_runs: already
        done that day; hourly_load: still to come, counted per clock hour)."""
        k, rng = t.knobs, t.rng
        src = fill(ATOMIC_REFERENCE, VARIANT=repr(t.variant))
        small = run_python(src)
        after = run_python(fill(ATOMIC_REFERENCE, VARIANT=repr("next_runs")))

        def case(start: str) -> tuple[str, str]:
            """A crontab with runs both before and after ``start``'s time: neither all nor no job is right."""
            for _ in range(100):
                text = self.daily(rng, rng.randint(3, k.jobs + 2))
                out = small["today"](text, start)
                if 0 < after["today"](text, start).count("\n") < text.count("\n") - 1 and out:
                    return text, out
            raise FamilyError(f"family {self.name}: no crontab with runs on both sides of the start")
        demo = instant(rng, range(2020, 2024))
        examples = [case(demo) for _ in range(2)]
        ask = ("We keep a tool that previews cron schedules. It reads a crontab on standard input in which every "
               f"job runs daily (`<minute> <hour> * * * <command>`) and prints {ATOMIC_ASK[t.variant]}. The worked "
               f"examples were produced with a demo start instant of {demo} (YYYYMMDDHHMM); your program must use "
               "the start instant given above.")
        start = draw_start(t, *(x for c in examples for x in c), ask)
        cases = examples + [case(start) for _ in range(8)]
        t.deliver(start, VALUE)
        t.say(ask)
        t.expect_program("The start instant is the one given above; hard-code it.", cases, {"Python": src})
        t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')

    def atomic(self, t: TaskBuilder, ns: dict) -> None:
        """Daily jobs only: which of them still run on the start's day, after its time."""
        k, rng = t.knobs, t.rng
        text = self.daily(rng, k.jobs)
        t.add_file("/app/cron/crontab", text)
        out = {"next_runs": "/app/out/today.txt", "previous_runs": "/app/out/earlier.txt",
               "hourly_load": "/app/out/load.txt"}[t.variant]
        ask = ("Every job in it runs daily (`<minute> <hour> * * * <command>`). "
               + {"next_runs": "Which jobs still run on the start instant's day strictly after its time?",
                  "previous_runs": "Which jobs already ran on the start instant's day strictly before its time?",
                  "hourly_load": "How many runs are still to come on the start instant's day, per hour?"}[t.variant]
               + f" Write {ATOMIC_ASK[t.variant]} to `{out}`.") if t.variant != "next_runs" else \
            ("Every job in it runs daily (`<minute> <hour> * * * <command>`). Which jobs still run on the start "
             "instant's day strictly after its time? One line per run as `YYYY-MM-DD HH:MM job` (the job is the "
             "command's base name without `.sh`), sorted by time, to `/app/out/today.txt`.")
        for _ in range(50):
            start = draw_start(t, ask)
            day = f"{start[:4]}-{start[4:6]}-{start[6:8]}"
            runs = ns["next_runs"](text, start).splitlines()
            today = [r for r in runs if r.startswith(day)]
            # Some jobs before the start and some after: neither all nor none of them is the answer.
            if 0 < len(today) < len(runs):
                break
        else:
            raise FamilyError(f"family {self.name}: no start instant between the jobs")
        t.say("The crontab of our batch host is `/app/cron/crontab`.")
        v = t.deliver(start, VALUE)
        t.say(ask)
        if t.variant != "next_runs":  # the same day's runs, on the other side of the start or counted per hour
            today = run_python(fill(ATOMIC_REFERENCE, VARIANT=repr(t.variant)))["today"](text, start).splitlines()
        cmp = "<" if t.variant == "previous_runs" else ">"
        line = ('printf "%s %02d:00\\n", d, $2' if t.variant == "hourly_load" else
                'n = $6; sub(".*/", "", n); sub(/[.]sh$/, "", n); printf "%s %02d:%02d %s\\n", d, $2, $1, n')
        tail = " | uniq -c | awk '{print $2, $3, $1}'" if t.variant == "hourly_load" else ""
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\ns="{v}"\n'
                f'awk -v d="${{s:0:4}}-${{s:4:2}}-${{s:6:2}}" -v now="${{s:8:4}}" \'$1 ~ /^[0-9]/ && $2 * 100 + $1 {cmp} '
                f'now {{{line}}}\' /app/cron/crontab | sort{tail} > {out}')
        t.expect_output(out, "".join(r + "\n" for r in today), "the runs" if t.variant != "hourly_load" else
                        "the hourly counts")
