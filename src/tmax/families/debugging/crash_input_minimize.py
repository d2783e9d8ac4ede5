"""Minimise a crashing input. A ledger replay tool written in C (compiled at environment build time;
stripped and without its source at higher levels) dies with a segmentation fault on a customer's
script. The agent must reduce the script to the smallest reproducer: the subset of its lines, in
order, that still segfaults and from which no line can be dropped. The crash needs three to six
specific lines (a use of an account whose record was freed, which needs the account opened, held,
closed in batch mode and swept, depending on the level); the script is built so that this subset is
unique (the crash condition only accumulates, every trigger line occurs once). Traps: look-alike
patterns that do not crash (a close without hold is only a soft close), and, at higher levels, lines
after the crash point that make the tool abort or reject the script, so a reducer that accepts any
failure converges on the wrong lines. Other customers' scripts crash the tool too; uploads are filed
under a digest of their ticket number, so only the (delivered) ticket says which script is this one.
Variants: reproducer (that minimal subset), crash_line (the number and text of the line the tool dies
on) and after_crash (the exit status and stop line of a replay with that line deleted: the look-alike
failures after the crash point are then what stops it)."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

SOURCE = r'''/* txreplay: replays ledger scripts. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEED_HOLD @HOLD@
#define NEED_BATCH @BATCH@
#define NEED_SWEEP @SWEEP@

struct account {
    long balance;
    int held;
    int pending;
};

struct slot {
    char name[32];
    struct account *acct;
};

static struct slot slots[4096];
static int nslots, batch_mode, lineno;

static void parse_error(void) {
    fprintf(stderr, "txreplay: parse error at line %d\n", lineno);
    exit(2);
}

static void warn(const char *what, const char *name) {
    fprintf(stderr, "txreplay: line %d: %s: %s\n", lineno, what, name);
}

static struct slot *find(const char *name) {
    for (int i = 0; i < nslots; i++)
        if (strcmp(slots[i].name, name) == 0)
            return &slots[i];
    return NULL;
}

static long amount_of(const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0')
        parse_error();
    assert(v > 0);
    return v;
}

static void cmd_open(char **a, int n) {
    if (n != 3 || strlen(a[1]) >= 32)
        parse_error();
    long v = amount_of(a[2]);
    if (find(a[1])) {
        warn("already open", a[1]);
        return;
    }
    struct slot *s = &slots[nslots++];
    strcpy(s->name, a[1]);
    s->acct = calloc(1, sizeof *s->acct);
    s->acct->balance = v;
}

static void cmd_hold(char **a, int n) {
    if (n != 2)
        parse_error();
    struct slot *s = find(a[1]);
    if (!s || !s->acct) {
        warn("no such account", a[1]);
        return;
    }
    s->acct->held = 1;
}

static void cmd_close(char **a, int n) {
    if (n != 2)
        parse_error();
    struct slot *s = find(a[1]);
    if (!s || !s->acct) {
        warn("no such account", a[1]);
        return;
    }
    if (NEED_HOLD && !s->acct->held)
        return; /* soft close: the record stays */
    if (NEED_BATCH && !batch_mode)
        return; /* online mode keeps records until end of day */
    if (NEED_SWEEP) {
        s->acct->pending = 1;
        return;
    }
    free(s->acct);
    s->acct = NULL;
}

static void cmd_sweep(int n) {
    if (n != 1)
        parse_error();
    for (int i = 0; i < nslots; i++)
        if (slots[i].acct && slots[i].acct->pending) {
            free(slots[i].acct);
            slots[i].acct = NULL;
        }
}

static void cmd_deposit(char **a, int n) {
    if (n != 3)
        parse_error();
    long v = amount_of(a[2]);
    struct slot *s = find(a[1]);
    if (!s || !s->acct) {
        warn("no such account", a[1]);
        return;
    }
    s->acct->balance += v;
}

static void cmd_send(char **a, int n) {
    if (n != 4)
        parse_error();
    long v = amount_of(a[3]);
    struct slot *to = find(a[2]);
    if (!to) {
        warn("unknown account", a[2]);
        return;
    }
    struct slot *from = find(a[1]);
    if (from && from->acct)
        from->acct->balance -= v;
    to->acct->balance += v;
}

static void cmd_audit(int n) {
    if (n != 1)
        parse_error();
    long total = 0;
    int live = 0;
    for (int i = 0; i < nslots; i++)
        if (slots[i].acct) {
            live++;
            total += slots[i].acct->balance;
        }
    printf("audit line %d: %d accounts, balance %ld\n", lineno, live, total);
}

int main(int argc, char **argv) {
    FILE *in = argc > 1 ? fopen(argv[1], "r") : stdin;
    if (!in) {
        perror(argv[1]);
        return 1;
    }
    char line[512];
    while (fgets(line, sizeof line, in)) {
        char *a[8];
        int n = 0;
        lineno++;
        for (char *tok = strtok(line, " \t\r\n"); tok && n < 8; tok = strtok(NULL, " \t\r\n"))
            a[n++] = tok;
        if (n == 0 || a[0][0] == '#')
            continue;
        if (strcmp(a[0], "mode") == 0) {
            if (n != 2 || (strcmp(a[1], "batch") && strcmp(a[1], "online")))
                parse_error();
            batch_mode = strcmp(a[1], "batch") == 0;
        } else if (strcmp(a[0], "open") == 0) {
            cmd_open(a, n);
        } else if (strcmp(a[0], "hold") == 0) {
            cmd_hold(a, n);
        } else if (strcmp(a[0], "close") == 0) {
            cmd_close(a, n);
        } else if (strcmp(a[0], "sweep") == 0) {
            cmd_sweep(n);
        } else if (strcmp(a[0], "deposit") == 0) {
            cmd_deposit(a, n);
        } else if (strcmp(a[0], "send") == 0) {
            cmd_send(a, n);
        } else if (strcmp(a[0], "audit") == 0) {
            cmd_audit(n);
        } else {
            parse_error();
        }
    }
    printf("replayed %d lines\n", lineno);
    return 0;
}
'''

DDMIN = r'''import os
import resource
import subprocess
import sys


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def segfaults(lines):
    p = subprocess.run([sys.argv[1]], input="".join(lines).encode(), capture_output=True, preexec_fn=no_core,
                       cwd="/tmp", timeout=20)
    return p.returncode == -11


def ddmin(lines):
    n = 2
    while len(lines) >= 2:
        size = len(lines) // n
        chunks = [lines[i:i + size] for i in range(0, len(lines), size)] if size else [[x] for x in lines]
        reduced = False
        for i in range(len(chunks)):
            rest = [x for j, c in enumerate(chunks) if j != i for x in c]
            if segfaults(chunks[i]):
                lines, n, reduced = chunks[i], 2, True
                break
            if segfaults(rest):
                lines, n, reduced = rest, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(lines):
                break
            n = min(len(lines), n * 2)
    return lines


lines = open(sys.argv[2]).read().splitlines(keepends=True)
assert segfaults(lines), "the input does not reproduce the crash"
sys.stdout.write("".join(ddmin(lines)))
'''

# crash_line and after_crash: where the replay stops. A prefix of the script stops (with a given status)
# exactly when it holds the stop line, so the shortest such prefix is found by bisection.
STOP_POINT = r'''import resource
import subprocess
import sys


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def status(lines):
    """txreplay's exit status as a shell reports it: 128 + the signal number when a signal kills it."""
    p = subprocess.run([sys.argv[1]], input="".join(lines).encode(), capture_output=True, preexec_fn=no_core,
                       cwd="/tmp", timeout=20)
    return 128 - p.returncode if p.returncode < 0 else p.returncode


def stop_line(lines, code):
    """The 1-based number of the line where the replay of ``lines`` stops with ``code``."""
    lo, hi = 1, len(lines)
    while lo < hi:
        mid = (lo + hi) // 2
        if status(lines[:mid]) == code:
            hi = mid
        else:
            lo = mid + 1
    return lo


lines = open(sys.argv[3]).read().splitlines(keepends=True)
crash = stop_line(lines, 139)
if sys.argv[2] == "crash_line":
    print(crash, lines[crash - 1].rstrip("\n"))
else:
    rest = lines[:crash - 1] + lines[crash:]
    code = status(rest)
    stop = stop_line(rest, code) if code else len(rest)
    print(code, stop + (stop >= crash))
'''

WORDS = ["cafe", "mill", "forge", "dock", "farm", "press", "bakery", "depot", "lab", "yard", "shop", "studio"]
TRIGGERS = {1: ["open", "close", "send"], 2: ["open", "hold", "close", "send"],
            3: ["mode", "open", "hold", "close", "send"], 4: ["mode", "open", "hold", "close", "sweep", "send"]}


class Model:
    """The tool's behaviour, modelled line by line."""

    def __init__(self, level: int):
        self.hold, self.batch_needed, self.sweep_needed = level >= 2, level >= 3, level >= 4
        self.slots: dict[str, dict | None] = {}
        self.batch = False

    @staticmethod
    def _amount(s: str) -> str | None:
        try:
            v = int(s)
        except ValueError:
            return "parse"
        return None if v > 0 else "abort"

    def would_segv(self, line: str) -> bool:
        a = line.split()
        return len(a) == 4 and a[0] == "send" and self._amount(a[3]) is None and a[2] in self.slots \
            and self.slots[a[2]] is None

    def step(self, line: str, harmless: bool = False) -> str | None:
        """Apply one line; returns "segv", "abort" or "parse" if the tool stops there, else None."""
        a = line.split()
        if not a or a[0].startswith("#"):
            return None
        cmd, n = a[0], len(a)
        if cmd == "mode":
            if n != 2 or a[1] not in ("batch", "online"):
                return "parse"
            self.batch = a[1] == "batch"
        elif cmd == "open":
            if n != 3:
                return "parse"
            if self._amount(a[2]):
                return self._amount(a[2])
            if a[1] not in self.slots:
                self.slots[a[1]] = {"held": False, "pending": False}
        elif cmd == "hold":
            if n != 2:
                return "parse"
            if self.slots.get(a[1]):
                self.slots[a[1]]["held"] = True
        elif cmd == "close":
            if n != 2:
                return "parse"
            acct = self.slots.get(a[1])
            if not acct or (self.hold and not acct["held"]) or (self.batch_needed and not self.batch):
                return None
            if self.sweep_needed:
                acct["pending"] = True
            else:
                self.slots[a[1]] = None
        elif cmd == "sweep":
            if n != 1:
                return "parse"
            for name, acct in self.slots.items():
                if acct and acct["pending"]:
                    self.slots[name] = None
        elif cmd == "deposit":
            if n != 3:
                return "parse"
            return self._amount(a[2])
        elif cmd == "send":
            if n != 4:
                return "parse"
            if self._amount(a[3]):
                return self._amount(a[3])
            if self.would_segv(line) and not harmless:
                return "segv"
        elif cmd == "audit":
            return "parse" if n != 1 else None
        else:
            return "parse"
        return None


def simulate(lines: list[str], level: int) -> tuple[str, int]:
    """("segv"|"abort"|"parse"|"ok", index of the line where the tool stopped)."""
    m = Model(level)
    for i, line in enumerate(lines):
        out = m.step(line)
        if out:
            return out, i
    return "ok", len(lines)


def make_script(rng, level: int, n_lines: int, tail_traps: bool) -> tuple[list[str], list[int]]:
    """A script whose unique minimal segfaulting subset is the returned line indices."""
    names = [f"{rng.choice(WORDS)}{rng.randrange(10, 99)}" for _ in range(max(6, n_lines // 12))]
    names = list(dict.fromkeys(names))
    x = names.pop(rng.randrange(len(names)))
    src = rng.choice(names)
    kinds = TRIGGERS[level]
    crash_at = int(n_lines * rng.uniform(0.6, 0.85))
    pos = sorted(rng.sample(range(2, crash_at), len(kinds) - 1)) + [crash_at]
    trig = {}
    for kind, p in zip(kinds, pos):
        trig[p] = {"mode": "mode batch", "open": f"open {x} {rng.randint(10, 900)}", "hold": f"hold {x}",
                   "close": f"close {x}", "sweep": "sweep", "send": f"send {src} {x} {rng.randint(1, 500)}"}[kind]
    # The script runs on as if the crash line were harmless, so that decoys after it are checked too.
    model = Model(level)
    lines: list[str] = []
    closed_x = False
    for i in range(n_lines):
        if i in trig:
            lines.append(trig[i])
            model.step(trig[i], harmless=True)
            closed_x = closed_x or trig[i].startswith("close")
            continue
        live = [name for name, acct in model.slots.items() if acct and name != x]
        fresh = [name for name in names if name not in model.slots]
        with_x = live + ([x] if model.slots.get(x) else [])
        for _ in range(50):
            r = rng.random()
            if r < 0.06:
                cand = rng.choice(["# nightly replay", "", "audit", f"# ticket {rng.randrange(1000, 9999)}"])
            elif (r < 0.2 and fresh) or len(live) < 2:
                cand = f"open {rng.choice(fresh or names)} {rng.randint(1, 900)}"
            elif r < 0.3:
                cand = f"hold {rng.choice(live)}"
            elif r < 0.38:
                cand = f"close {rng.choice(live)}"
            elif r < 0.43 and level >= 4:
                cand = "sweep"
            elif r < 0.65:
                cand = f"deposit {rng.choice(with_x)} {rng.randint(1, 300)}"
            elif r < 0.7 and level >= 3 and i < pos[0]:
                cand = "mode online"
            else:
                a, b = rng.choice(with_x), rng.choice(live + ([] if closed_x else with_x[len(live):]))
                if a == b:
                    continue
                cand = f"send {a} {b} {rng.randint(1, 400)}"
            # Each trigger role occurs once: no second open/hold/close of x, no second batch switch, no
            # mode change after it, no other sweep between close(x) and the crash.
            if cand.startswith((f"open {x} ", f"hold {x}", f"close {x}", "mode batch")):
                continue
            if (cand.startswith("mode") and i > pos[0]) or (cand == "sweep" and closed_x and i < crash_at):
                continue
            if model.would_segv(cand):
                continue
            lines.append(cand)
            model.step(cand)
            break
        else:
            lines.append("audit")
    if tail_traps:  # failures of another kind, after the crash point
        for _ in range(2):
            at = rng.randrange(crash_at + 1, len(lines) + 1)
            some = [name for name, acct in model.slots.items() if acct] or [src]
            lines.insert(at, rng.choice([f"send {rng.choice(some)} {rng.choice(some)} -{rng.randint(1, 50)}",
                                         f"deposit {rng.choice(some)} 0", "rollback", f"open {x}"]))
    return lines, sorted(trig)


def upload_name(ticket: str) -> str:
    """The file the intake service makes of a ticket's script: named by a digest of the ticket."""
    return f"script-{key_of(ticket, 12)}.txl"


@dataclass(frozen=True)
class Knobs:
    lines: int  # lines of the customer's script
    source: bool  # is the tool's C source in the environment?
    tail_traps: bool  # failures of another kind after the crash point
    others: int  # other customers' crashing scripts beside it


@register
class CrashInputMinimize(Family):
    name = "crash_input_minimize"
    domain = "debugging"
    skill_types = ("Failure Reproduction", "Crash Analysis")
    primitive_skills = ("minimising a failing input", "delta debugging", "black-box probing of a binary",
                        "classifying failure signatures", "reproducing a failure")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("reproducer", "crash_line", "after_crash")
    languages = ("Bash", "Python")
    levels = {0: Knobs(lines=12, source=True, tail_traps=False, others=2),
              1: Knobs(lines=40, source=True, tail_traps=False, others=4),
              2: Knobs(lines=250, source=True, tail_traps=False, others=5),
              3: Knobs(lines=900, source=False, tail_traps=True, others=5),
              4: Knobs(lines=2500, source=False, tail_traps=True, others=6)}

    def output_case(self, t: TaskBuilder) -> None:
        # Level 0 keeps level 1's crash (open, close, send) on a script short enough to read at a glance.
        k, rng, level = t.knobs, t.rng, max(t.level, 1)
        lines, needed = make_script(rng, level, k.lines, k.tail_traps)
        # The truth, checked against the model: the full script segfaults at the crash line, the needed
        # lines alone segfault, and dropping any candidate line from the full script loses the crash.
        if simulate(lines, level)[0] != "segv" or simulate([lines[i] for i in needed], level)[0] != "segv":
            raise FamilyError("crash_input_minimize: the script does not reproduce the crash")
        crash = simulate(lines, level)[1]
        x = lines[needed[-1]].split()[2]
        cands = [i for i, line in enumerate(lines[:crash + 1]) if x in line.split() or line.split()[:1] in
                 (["mode"], ["sweep"])]
        cands += rng.sample(range(crash), min(25, crash))
        for i in sorted(set(cands)):
            dropped = simulate(lines[:i] + lines[i + 1:], level)[0] == "segv"
            if dropped == (i in needed):
                raise FamilyError(f"crash_input_minimize: line {i} breaks the uniqueness of the reproducer")
        truth = "".join(lines[i] + "\n" for i in needed)

        # Other customers' scripts crash txreplay too (each on its own account), so only the ticket tells
        # which upload is this one; uploads are filed under a digest of the ticket, never the ticket itself.
        others = []
        for _ in range(20 * k.others):
            if len(others) == k.others:
                break
            text = make_script(rng, level, max(30, k.lines // 4), k.tail_traps)[0]
            if simulate(text, level)[0] == "segv":
                others.append(text)
        if len(others) < k.others:
            raise FamilyError("crash_input_minimize: too few other crashing scripts")
        src = fill(SOURCE, HOLD="1" if level >= 2 else "0", BATCH="1" if level >= 3 else "0",
                   SWEEP="1" if level >= 4 else "0")
        scripts = ["\n".join(text) + "\n" for text in [lines, *others]]

        def draw() -> str:
            return str(rng.randrange(10000, 99999))

        ticket = unseen(t, draw, src, *scripts)
        tickets = [ticket, *distinct(draw, len(others), taken=[ticket])]
        names = [upload_name(tk) for tk in tickets]
        if len(set(names)) != len(names):
            raise FamilyError("crash_input_minimize: two tickets share a digest")
        for name, text in zip(names, scripts):
            t.add_file(f"/app/incoming/{name}", text)
        where = "/app/src/txreplay.c" if k.source else "/tmp/tmax-dbg/txreplay.c"
        t.add_file(where, src)
        t.add_setup(f"mkdir -p /app/bin && gcc -O2 -o /app/bin/txreplay {where} && strip /app/bin/txreplay"
                    + ("" if k.source else " && rm -rf /tmp/tmax-dbg"))

        have = "Its source is in `/app/src/txreplay.c`." if k.source else \
            "Only the stripped binary is available; its source is lost."
        t.say(f"`/app/bin/txreplay` replays ledger scripts (`txreplay FILE`, or the script on standard input). "
              f"{have} Customers' scripts arrive in `/app/incoming/`; the intake service files each one as "
              "`script-<digest>.txl`, where the digest is the first 12 hex digits of the SHA-256 of the ticket "
              "number (its decimal digits, nothing else). The script from the ticket given below makes txreplay "
              "die with a segmentation fault.")
        if t.variant != "reproducer":
            return self._stop_point(t, lines, level, ticket)
        t.say("Before anyone can debug this we need the smallest reproducer: a subset of that script's lines, "
              "unchanged and in their original order, that still makes txreplay crash with a segmentation fault, "
              "and from which no single line can be removed without losing that crash (there is exactly one such "
              "subset). Write it as a script: one line per line, nothing else."
              + (" The script is short: the crash is a `send` into an account after it was closed." if t.level == 0
                 else ""))
        var = t.deliver(ticket, "the ticket number")
        t.add_solution_file("ddmin.py", DDMIN)
        t.solve(f'mkdir -p /app/out\nh={key_cmd(var, 12)}\n'
                'python3 /solution/ddmin.py /app/bin/txreplay "/app/incoming/script-$h.txl" > /app/out/reproducer.txl')
        t.expect_output("/app/out/reproducer.txl", truth, "the minimal reproducer")

    def _stop_point(self, t: TaskBuilder, lines: list[str], level: int, ticket: str) -> None:
        """crash_line: the line txreplay dies on; after_crash: where and how it stops once that line is gone."""
        crash = simulate(lines, level)[1]
        if t.variant == "crash_line":
            ask = ("I need the line it crashes on: write one line, its line number in the script (counting from 1, "
                   "every line counts, comments and blank lines included), a space, and that line exactly as it "
                   "stands in the script.")
            truth = f"{crash + 1} {lines[crash]}\n"
            out = "/app/out/crash_line.txt"
        else:
            how, at = simulate(lines[:crash] + lines[crash + 1:], level)
            if how == "segv":
                raise FamilyError("crash_input_minimize: the script still crashes without its crash line")
            status = {"ok": 0, "parse": 2, "abort": 134}[how]
            # a line number of the original script: the ones after the deleted line move up by one
            stop = len(lines) if how == "ok" else at + 1 + (at >= crash)
            ask = ("Delete the one line it crashes on (and nothing else) and replay the rest: what happens then? "
                   "Write one line: txreplay's exit status as the shell reports it (128 plus the signal number "
                   "when a signal kills it), a space, and the number of the line (counting from 1 in the "
                   "original script, every line counts, comments and blank lines included) where the replay "
                   "stops: the line it fails on, or the script's last line when it runs to the end.")
            truth = f"{status} {stop}\n"
            out = "/app/out/after_crash.txt"
        t.say(ask + f" Write it to `{out}`."
              + (" The script is short: the crash is a `send` into an account after it was closed." if t.level == 0
                 else ""))
        var = t.deliver(ticket, "the ticket number")
        t.add_solution_file("stop_point.py", STOP_POINT)
        t.solve(f'mkdir -p /app/out\nh={key_cmd(var, 12)}\npython3 /solution/stop_point.py /app/bin/txreplay '
                f'{t.variant} "/app/incoming/script-$h.txl" > {out}')
        t.expect_output(out, truth, "the stop point")
