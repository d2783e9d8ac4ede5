"""How long was each service down? Replay a journal of start/stop/crash events (several hosts' files
at higher levels, unsorted, with duplicated lines) and measure the outages inside a window.
Variants: unit_downtime (each unit's summed downtime), host_degraded (per host, the time at least one of
its units was down: the union of overlapping outages) and longest_outage (each unit's single longest
outage with when it began). Every variant delivers the window's end and prints each line's share of the
window, so every line moves with the delivered value."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import visible

REFERENCE = r'''
import sys

WINDOW_START = @START@
WINDOW_END = @END@


def downtime(text, window_end=None):
    """Seconds each unit spent down inside [WINDOW_START, end): down from a 'stopped' or 'failed'
    event until the next 'started'; units start the window in the state of their last earlier event
    (up if none). Duplicate lines count once."""
    end = int(window_end) if window_end else WINDOW_END
    seen, events = set(), []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 4 or line in seen or not parts[0].isdigit():
            continue
        seen.add(line)
        ts, host, unit, what = int(parts[0]), parts[1], parts[2], parts[3]
        if what not in ("started", "stopped", "failed"):
            continue
        events.append((ts, host + "/" + unit, what))
    events.sort()
    down_since, total = {}, {}
    for ts, key, what in events:
        total.setdefault(key, 0)
        if ts >= end:
            continue
        if what in ("stopped", "failed"):
            down_since.setdefault(key, max(ts, WINDOW_START))
        elif key in down_since:
            since = down_since.pop(key)
            total[key] += max(0, min(ts, end) - max(since, WINDOW_START))
    for key, since in down_since.items():
        total[key] += max(0, end - max(since, WINDOW_START))
    rows = sorted(((v, k) for k, v in total.items() if v > 0), key=lambda r: (-r[0], r[1]))
    span = end - WINDOW_START  # the share of the window: every line depends on where it ends
    return "".join(f"{k} {v} {v / span:.9f}\n" for v, k in rows)


if __name__ == "__main__":
    sys.stdout.write(downtime(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

# The other variants' reports, on the outage intervals (REFERENCE, unit_downtime's program, stays as shipped).
EXTRA = r'''


def outages(text, end):
    """key -> the (since, until) outages clipped to [WINDOW_START, end), in time order; the same replay
    as downtime()."""
    seen, events = set(), []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 4 or line in seen or not parts[0].isdigit():
            continue
        seen.add(line)
        if parts[3] in ("started", "stopped", "failed"):
            events.append((int(parts[0]), parts[1] + "/" + parts[2], parts[3]))
    events.sort()
    down_since, spans = {}, {}
    for ts, key, what in events:
        if ts >= end:
            continue
        if what in ("stopped", "failed"):
            down_since.setdefault(key, max(ts, WINDOW_START))
        elif key in down_since:
            spans.setdefault(key, []).append((down_since.pop(key), ts))
    for key, since in down_since.items():
        spans.setdefault(key, []).append((since, end))
    return {k: [(a, b) for a, b in v if b > a] for k, v in spans.items()}


def degraded(text, window_end=None):
    """Per host: seconds during which at least one of its units was down (overlaps count once)."""
    end = int(window_end) if window_end else WINDOW_END
    by_host = {}
    for key, spans in outages(text, end).items():
        by_host.setdefault(key.split("/")[0], []).extend(spans)
    rows = []
    for host, spans in by_host.items():
        total, reach = 0, WINDOW_START
        for a, b in sorted(spans):
            total += max(0, b - max(a, reach))
            reach = max(reach, b)
        if total > 0:
            rows.append((total, host))
    span = end - WINDOW_START
    return "".join(f"{h} {v} {v / span:.9f}\n" for v, h in sorted(rows, key=lambda r: (-r[0], r[1])))


def longest(text, window_end=None):
    """Per unit: its longest single outage inside the window (the earliest of equals) and when it began."""
    end = int(window_end) if window_end else WINDOW_END
    rows = []
    for key, spans in outages(text, end).items():
        if spans:
            a, b = min(spans, key=lambda s: (s[0] - s[1], s[0]))
            rows.append((b - a, key, a))
    span = end - WINDOW_START
    return "".join(f"{k} {a} {v} {v / span:.9f}\n" for v, k, a in sorted(rows, key=lambda r: (-r[0], r[1])))
'''
VARIANT_REPORT = {"unit_downtime": "downtime", "host_degraded": "degraded", "longest_outage": "longest"}


def reference(variant: str) -> str:
    """The reference program of a variant (unit_downtime's text is today's, unchanged)."""
    if variant == "unit_downtime":
        return REFERENCE
    core, main = REFERENCE.split("\n\n\nif __name__")
    return core + EXTRA + "\n\nif __name__" + main.replace("downtime(", VARIANT_REPORT[variant] + "(")


# What each variant reports: (the ask, the line format and its sort, the output file).
ASKS = {
    "unit_downtime": ("Report each unit's downtime, in seconds,",
                      "per unit with downtime above zero, `<host>/<unit> <seconds> <share>`, where share is the "
                      "downtime divided by the window's length",
                      "/app/out/downtime.txt"),
    "host_degraded": ("For each host, report the seconds during which at least one of its units was down "
                      "(overlapping outages of several units count once)",
                      "per host with such time above zero, `<host> <seconds> <share>`, where share is those "
                      "seconds divided by the window's length", "/app/out/degraded.txt"),
    "longest_outage": ("For each unit, report its longest single outage (of equally long ones, the earliest), in "
                       "seconds and cut off at the window's edges, and when it began (the window's start, for one "
                       "already under way then)",
                       "per unit with an outage inside the window, `<host>/<unit> <began> <seconds> <share>`, "
                       "where share is the outage's seconds divided by the window's length",
                       "/app/out/longest_outage.txt"),
}
UNITS = ["nginx.service", "postgresql.service", "redis.service", "cron.service", "sshd.service", "app-worker.service",
         "node-exporter.service", "rsyslog.service"]




@dataclass(frozen=True)
class Knobs:
    hosts: int  # hosts whose events are merged
    units: int  # units per journal
    events: int  # event lines
    dups: int  # lines delivered twice


def journal(rng, k: Knobs, start: int, end: int) -> tuple[list[str], list[str], list[str]]:
    """(event lines, hosts, units) around the window [start, end)."""
    hosts = [f"{rng.choice(['web', 'db', 'app', 'cache'])}{i + 1:02d}" for i in range(k.hosts)]
    units = rng.sample(UNITS, k.units)
    lines = []
    for _ in range(k.events):
        ts = rng.randrange(start - 4 * 3600, end + 4 * 3600)
        lines.append(f"{ts} {rng.choice(hosts)} {rng.choice(units)} "
                     f"{rng.choice(['started', 'started', 'stopped', 'failed', 'reloaded'])}")
    lines += rng.sample(lines, k.dups)
    if k.hosts == 1:
        lines.sort()
    else:
        rng.shuffle(lines)
    return lines, hosts, units


@register
class ServiceDowntimeReport(Family):
    name = "service_downtime_report"
    domain = "system_administration"
    skill_types = ("Service Management",)
    primitive_skills = ("service health checking", "log correlation across hosts", "time window arithmetic")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("unit_downtime", "host_degraded", "longest_outage")
    levels = {0: Knobs(hosts=1, units=2, events=16, dups=0), 1: Knobs(hosts=1, units=3, events=30, dups=0), 2: Knobs(hosts=2, units=4, events=80, dups=3),
              3: Knobs(hosts=3, units=6, events=200, dups=8), 4: Knobs(hosts=5, units=8, events=500, dups=20)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        for _ in range(self.variants.index(t.variant)):  # a seed's journal differs between the variants
            rng.random()
        start = 1_780_000_000 + rng.randrange(0, 86_400)
        # The window's end is the delivered value: the journal is redrawn (rarely) until no line shows it.
        for _ in range(50):
            end = start + rng.randrange(6, 30) * 3600
            lines, hosts, units = journal(rng, k, start, end)
            if not visible(t, str(end), "\n".join(lines), str(start)):
                break
        else:
            raise FamilyError(f"family {self.name}: every journal drawn shows the window's end")
        if t.level == 0:
            return self._atomic(t, lines, hosts, units, start, end)
        src, report = reference(t.variant), VARIANT_REPORT[t.variant]
        ns = run_python(fill(src, START=start, END=end))
        text = "\n".join(lines) + "\n"
        truth = ns[report](text)
        if not truth.strip():  # never an empty answer: add one outage that surely counts
            lines.append(f"{start + 60} {hosts[0]} {units[0]} failed")
            text = "\n".join(lines) + "\n"
            truth = ns[report](text)
        t.deliver(str(end), "the end of the report window as a Unix timestamp")
        t.add_file("/app/journal/events.log", text)
        order = "" if k.hosts == 1 else " Lines from several hosts are interleaved out of time order."
        ask, fmt, out = ASKS[t.variant]
        dup = " The collector sometimes delivered a line twice: identical lines count once." if k.dups else ""
        t.say(f"Our journal collector wrote service events to `/app/journal/events.log`, one per line: "
              f"`<unix time> <host> <unit> <event>` where event is started, stopped, failed or reloaded "
              f"(reloaded changes nothing).{order}{dup} A unit is down from a stopped or failed event until its next "
              f"started event. {ask} inside the window that begins at Unix time "
              f"{start} and ends at the time given above (events at or after the end do not count). A unit that is "
              "down when the window begins (its last earlier event was stopped or failed) is down from the start of "
              "the window; one still down at the end counts until the end. The same unit on two hosts is two units.")
        t.say(f"Report format: one line {fmt}, printed with exactly 9 decimals (Python's `f\"{{x:.9f}}\"`); "
              "sorted by seconds (largest first), then by name in byte order.")
        script = "downtime.py" if t.variant == "unit_downtime" else t.variant + ".py"
        t.add_solution_file(script, fill(src, START=start, END=0))
        t.solve(f'mkdir -p /app/out\npython3 /solution/{script} "$V1" < /app/journal/events.log '
                f"> {out}")
        t.expect_output(out, truth, "the downtime report" if t.variant == "unit_downtime" else "the report")

    def _atomic(self, t: TaskBuilder, lines, hosts, units, start, end) -> None:
        """One awk pass whose answer moves with the window's end itself, so no timestamp read off the journal
        stands in for it: unit_downtime, how long before the end the last failure came; host_degraded, each
        unit's last event before the end; longest_outage, every outage start before the end."""
        # A failure inside and one after the window: ignoring the delivered end gives another answer.
        lines.append(f"{start + 60} {hosts[0]} {units[0]} failed")
        lines.append(f"{end + 120} {hosts[0]} {units[-1]} failed")
        lines.sort()
        rows = [(int(ln.split()[0]), ln.split()[2], ln.split()[3]) for ln in lines if int(ln.split()[0]) < end]
        t.deliver(str(end), "a Unix timestamp")
        t.add_file("/app/journal/events.log", "\n".join(lines) + "\n")
        head = "`/app/journal/events.log` has one service event per line: `<unix time> <host> <unit> <event>`. "
        if t.variant == "unit_downtime":
            last = max(ts for ts, _, what in rows if what == "failed")
            t.say(head + "Take the last `failed` event with a time before the timestamp given above: how many "
                  "seconds before that timestamp did it happen?")
            t.solve('mkdir -p /app/out\nawk -v e="$V1" \'$4 == "failed" && $1 < e { t = $1 } END { print e - t }\' '
                    '/app/journal/events.log > /app/out/gap.txt')
            return t.expect_output("/app/out/gap.txt", f"{end - last}\n", "the number of seconds")
        if t.variant == "host_degraded":
            state = {unit: (what, end - ts) for ts, unit, what in rows}  # the file is in time order
            truth = "".join(f"{u} {w} {g}\n" for u, (w, g) in sorted(state.items()))
            t.say(head + "For each unit, take its last event with a time before the timestamp given above. Write "
                  "one line per unit, `<unit> <event> <seconds before the timestamp>`, sorted by unit name (byte "
                  "order), to `/app/out/last_state.txt`.")
            t.solve('mkdir -p /app/out\nawk -v e="$V1" \'$1 < e { w[$3] = $4; g[$3] = e - $1 } '
                    'END { for (u in w) print u, w[u], g[u] }\' /app/journal/events.log | LC_ALL=C sort '
                    '> /app/out/last_state.txt')
            return t.expect_output("/app/out/last_state.txt", truth, "the last states")
        truth = "".join(f"{ts} {u} {end - ts}\n" for ts, u, what in rows if what in ("stopped", "failed"))
        t.say(head + "List every `stopped` or `failed` event with a time before the timestamp given above, in "
              "file order, one line each: `<unix time> <unit> <seconds before the timestamp>`. Write them to "
              "`/app/out/outage_starts.txt`.")
        t.solve('mkdir -p /app/out\nawk -v e="$V1" \'$1 < e && ($4 == "stopped" || $4 == "failed") '
                '{ print $1, $3, e - $1 }\' /app/journal/events.log > /app/out/outage_starts.txt')
        t.expect_output("/app/out/outage_starts.txt", truth, "the outage starts")
