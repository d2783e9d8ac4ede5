"""How long was each service down? Replay a journal of start/stop/crash events (several hosts' files
at higher levels, unsorted, with duplicated lines) and sum each unit's downtime inside a window."""

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
    levels = {0: Knobs(hosts=1, units=2, events=16, dups=0), 1: Knobs(hosts=1, units=3, events=30, dups=0), 2: Knobs(hosts=2, units=4, events=80, dups=3),
              3: Knobs(hosts=3, units=6, events=200, dups=8), 4: Knobs(hosts=5, units=8, events=500, dups=20)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
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
        ns = run_python(fill(REFERENCE, START=start, END=end))
        text = "\n".join(lines) + "\n"
        truth = ns["downtime"](text)
        if not truth.strip():  # never an empty answer: add one outage that surely counts
            lines.append(f"{start + 60} {hosts[0]} {units[0]} failed")
            text = "\n".join(lines) + "\n"
            truth = ns["downtime"](text)
        t.deliver(str(end), "the end of the report window as a Unix timestamp")
        t.add_file("/app/journal/events.log", text)
        order = "" if k.hosts == 1 else " Lines from several hosts are interleaved out of time order."
        dup = " The collector sometimes delivered a line twice: identical lines count once." if k.dups else ""
        t.say(f"Our journal collector wrote service events to `/app/journal/events.log`, one per line: "
              f"`<unix time> <host> <unit> <event>` where event is started, stopped, failed or reloaded "
              f"(reloaded changes nothing).{order}{dup} A unit is down from a stopped or failed event until its next "
              f"started event. Report each unit's downtime, in seconds, inside the window that begins at Unix time "
              f"{start} and ends at the time given above (events at or after the end do not count). A unit that is "
              "down when the window begins (its last earlier event was stopped or failed) is down from the start of "
              "the window; one still down at the end counts until the end. The same unit on two hosts is two units.")
        t.say("Report format: one line per unit with downtime above zero, `<host>/<unit> <seconds> <share>`, where "
              "share is the downtime divided by the window's length, printed with exactly 9 decimals (Python's "
              "`f\"{x:.9f}\"`); sorted by seconds (largest first), then by name in byte order.")
        t.add_solution_file("downtime.py", fill(REFERENCE, START=start, END=0))
        t.solve('mkdir -p /app/out\npython3 /solution/downtime.py "$V1" < /app/journal/events.log '
                "> /app/out/downtime.txt")
        t.expect_output("/app/out/downtime.txt", truth, "the downtime report")

    def _atomic(self, t: TaskBuilder, lines, hosts, units, start, end) -> None:
        """One awk pass: how long before the window's end the last failure came. The answer moves with the
        end itself, so no timestamp read off the journal stands in for it."""
        # A failure inside and one after the window: ignoring the delivered end gives another answer.
        lines.append(f"{start + 60} {hosts[0]} {units[0]} failed")
        lines.append(f"{end + 120} {hosts[0]} {units[-1]} failed")
        lines.sort()
        last = max(int(ln.split()[0]) for ln in lines if ln.split()[3] == "failed" and int(ln.split()[0]) < end)
        t.deliver(str(end), "a Unix timestamp")
        t.add_file("/app/journal/events.log", "\n".join(lines) + "\n")
        t.say("`/app/journal/events.log` has one service event per line: `<unix time> <host> <unit> <event>`. "
              "Take the last `failed` event with a time before the timestamp given above: how many seconds "
              "before that timestamp did it happen?")
        t.solve('mkdir -p /app/out\nawk -v e="$V1" \'$4 == "failed" && $1 < e { t = $1 } END { print e - t }\' '
                '/app/journal/events.log > /app/out/gap.txt')
        t.expect_output("/app/out/gap.txt", f"{end - last}\n", "the number of seconds")
