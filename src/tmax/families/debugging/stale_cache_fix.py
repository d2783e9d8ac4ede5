"""A read-through LRU cache with expiry in front of a key-value store serves stale or wrong answers.
The simulator replays operation scripts (put / del / tick / get / stats); planted defects are the
classic caching mistakes: no invalidation on write or delete, an off-by-one expiry, a hit that does
not refresh recency, sliding instead of absolute expiry, evicting the newest entry, a cache keyed
by the raw instead of the normalised key. The capacity it hard-codes is stale as well. Graded by
fuzzing the fixed simulator against the reference, or by its replies over recorded sessions.
Variants: repair_simulator (fix it; its replies are the answer), event_trace (fix it and instrument it:
every get also prints the stale entry it dropped and the entry it evicted) and wrong_replies (keep the
shipped simulator and report, script line by script line, the replies it gets wrong and the right ones)."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import PROGRAM_FILES, Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

PARAM = "@@PARAM@@"  # the capacity in the oracle's copy: its commands put the delivered value in

# A slot at the start of a line (B_LRU, B_SLIDE, B_STALE, B_DEL) holds whole lines, each ending in a
# newline, or nothing.
CACHE_PY = r'''import sys
from collections import OrderedDict

CAPACITY = @PARAM@
TTL = @TTL@


class ReadThroughCache:
    def __init__(self, store):
        self.store = store
        self.entries = OrderedDict()  # cache key -> (value, load time); oldest use first
        self.now = 0
        self.hits = self.misses = self.evictions = 0

    def get(self, key):
        ckey = @B_CASE@
        key = key.lower()
        entry = self.entries.get(ckey)
        if entry is not None:
            value, loaded_at = entry
            if @B_TTL@:
@B_SLIDE@                self.hits += 1
@B_LRU@                return f"{key} {value} hit"
            del self.entries[ckey]
        if key not in self.store:
            return f"{key} none"
        self.misses += 1
        value = self.store[key]
        self.entries[ckey] = (value, self.now)
        if len(self.entries) > CAPACITY:
            @B_EVICT@
            self.evictions += 1
        return f"{key} {value} miss"

    def put(self, key, value):
        key = key.lower()
        self.store[key] = value
@B_STALE@
    def delete(self, key):
        key = key.lower()
        self.store.pop(key, None)
@B_DEL@
    def stats(self):
        return f"stats hits={self.hits} misses={self.misses} evictions={self.evictions}"


def run(text):
    cache = ReadThroughCache({})
    out = []
    for line in text.split("\n"):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        op = parts[0]
        if op == "get":
            out.append(cache.get(parts[1]))
        elif op == "put":
            cache.put(parts[1], parts[2])
        elif op == "del":
            cache.delete(parts[1])
        elif op == "tick":
            cache.now += int(parts[1])
        elif op == "stats":
            out.append(cache.stats())
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    sys.stdout.write(run(sys.stdin.read()))
'''

BUGS = {
    "B_CASE": ("key.lower()", "key"),
    "B_TTL": ("self.now - loaded_at < TTL", "self.now - loaded_at <= TTL"),
    "B_LRU": ("                self.entries.move_to_end(ckey)\n", ""),
    "B_SLIDE": ("", "                self.entries[ckey] = (value, self.now)  # keep hot keys fresh\n"),
    "B_EVICT": ("self.entries.popitem(last=False)", "self.entries.popitem()"),
    "B_STALE": ("        self.entries.pop(key, None)\n", ""),
    "B_DEL": ("        self.entries.pop(key, None)\n", ""),
}



def _traced(src: str) -> str:
    """The simulator that also prints, after a get's reply, the get's events (event_trace's answer)."""
    after = {  # an anchor line of CACHE_PY -> the lines put after it
        "        self.hits = self.misses = self.evictions = 0\n": "        self.events = []  # the current get's trace\n",
        "            del self.entries[ckey]\n": '            self.events.append(f"  expire {key}")\n',
        "            out.append(cache.get(parts[1]))\n": "            out += cache.events\n            cache.events = []\n"}
    evict = "            @B_EVICT@\n"
    for anchor, lines in after.items():
        assert src.count(anchor) == 1, anchor
        src = src.replace(anchor, anchor + lines)
    return src.replace(evict, '            self.events.append(f"  evict {@B_EVICT@[0]}")\n')


TRACE_PY = _traced(CACHE_PY)

# wrong_replies' answer: the shipped simulator's replies checked against the fixed one's, both embedded.
DIFF_PY = r'''import sys

SHIPPED = @SHIPPED@
FIXED = @FIXED@


def replies(src, text):
    ns = {"__name__": "simulator"}
    exec(src, ns)
    return ns["run"](text).splitlines()


def run(text):
    """`<script line>: <shipped reply> -> <right reply>` for every get or stats the shipped simulator gets wrong."""
    asks = [n for n, line in enumerate(text.split("\n"), 1) if line.split() and line.split()[0] in ("get", "stats")]
    out = []
    for n, got, want in zip(asks, replies(SHIPPED, text), replies(FIXED, text)):
        if got != want:
            out.append(f"{n}: {got} -> {want}\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(run(sys.stdin.read()))
'''

KEYS = ["user", "cart", "price", "stock", "promo", "session", "profile", "rates", "menu", "quota", "token",
        "region", "banner", "locale"]
VALUES = ["red", "blue", "green", "gold", "ivory", "jade", "onyx", "ruby", "teal", "amber"]


def render(planted: list[str], capacity: str, ttl: int, template: str = CACHE_PY) -> str:
    """The simulator: each bug slot gets the buggy snippet if planted, the correct one otherwise."""
    slots = {bug: bad if bug in planted else good for bug, (good, bad) in BUGS.items()}
    return fill(template, PARAM=capacity, TTL=ttl, **slots)


def answer_program(variant: str, planted: list[str], capacity: str, ttl: int, shipped: str) -> str:
    """The program whose output is the variant's answer, with ``planted`` left in (the reference: none)."""
    if variant == "event_trace":
        return render(planted, capacity, ttl, TRACE_PY)
    if variant == "wrong_replies":
        return fill(DIFF_PY, SHIPPED=repr(shipped), FIXED=repr(render(planted, capacity, ttl)))
    return render(planted, capacity, ttl)


def witnesses(capacity: int, ttl: int) -> list[str]:
    """Scripts made to show each defect and the capacity (0..9) whatever the draw: a fallback for redraws."""
    few = KEYS[:capacity + 1]
    fill_up = [f"put {k} red{i}" for i, k in enumerate(few)] + [f"get {k}" for k in few[:-1]]
    ten = [f"put {k} blue{i}" for i, k in enumerate(KEYS[:10])] + [f"get {k}" for k in KEYS[:10]] * 2
    scripts = [["put user red1", "get user", "get USER"],  # B_CASE
               ["put user red1", "get user", f"tick {ttl}", "get user"],  # B_TTL
               fill_up + [f"get {few[0]}", f"get {few[-1]}", f"get {few[0]}"],  # B_LRU
               ["put user red1", "get user", f"tick {ttl - 1}", "get user", "tick 1", "get user"],  # B_SLIDE
               fill_up + [f"get {few[-1]}", f"get {few[0]}"],  # B_EVICT
               ["put user red1", "get user", "put user blue2", "get user"],  # B_STALE
               ["put user red1", "get user", "del user", "get user"],  # B_DEL
               ten + ["stats"]]  # the capacity: evictions = 20 - capacity
    return ["\n".join(lines) + "\n" for lines in scripts]


def runner(src: str):
    """The ``run`` (script text -> replies) of a filled simulator."""
    return run_python(src)["run"]


def gen_script(rng, n_ops: int, capacity: int, ttl: int) -> str:
    keys = rng.sample(KEYS, min(len(KEYS), capacity + rng.randint(1, 4)))
    lines = []
    for k in keys[: rng.randint(1, len(keys))]:
        lines.append(f"put {k} {rng.choice(VALUES)}{rng.randrange(100)}")
    for _ in range(n_ops):
        r = rng.random()
        key = rng.choice(keys)
        if rng.random() < 0.25:
            key = "".join(c.upper() if rng.random() < 0.5 else c for c in key)
        if r < 0.5:
            lines.append(f"get {key}")
        elif r < 0.68:
            lines.append(f"put {key} {rng.choice(VALUES)}{rng.randrange(100)}")
        elif r < 0.74:
            lines.append(f"del {key}")
        elif r < 0.9:
            lines.append(f"tick {rng.choice([1, 1, 2, ttl - 1, ttl, ttl + 1])}")
        elif r < 0.95:
            lines.append("stats")
        else:
            lines.append(rng.choice(["", "# replayed from the gateway", "#note"]))
    lines.append("stats")
    return "\n".join(lines) + "\n"


def spec(ttl: int) -> str:
    """The simulator's documented behaviour."""
    return ("It replays a script of cache operations, one per line (blank lines and lines starting with `#` are "
            "ignored), against a read-through cache of capacity C in front of a key-value store that starts empty. "
            "Keys are case-insensitive: they are lower-cased on input and always printed lower-case. A clock starts "
            "at 0. `put <key> <value>` stores the value, and any cached copy of the key is dropped. `del <key>` "
            "removes the key from the store (if present) and drops any cached copy. `tick <n>` advances the clock by "
            f"n. `get <key>`: an entry cached at time t is fresh while now - t < TTL, with TTL = {ttl}. If the key "
            "has a fresh entry, print `<key> <value> hit`; the entry becomes the most recently used (its load "
            "time does not change). "
            "Otherwise a stale entry is dropped and the store is consulted: if the key is missing print `<key> none` "
            "(nothing is cached); else print `<key> <value> miss` and cache the value with load time now as the most "
            "recently used entry, and if the cache then holds more than C entries, evict the least recently used one. "
            "`stats` prints `stats hits=<h> misses=<m> evictions=<e>` (counts so far; a `none` answer is neither a hit "
            "nor a miss). A `get` or `stats` prints exactly one line; other operations print nothing.")


TRACE_SPEC = ("Event trace: right after the reply line of a `get`, print that get's events, each on a line of "
              "its own indented by two spaces: `  expire <key>` if it dropped a stale entry, then `  evict <key>` "
              "(the key of the entry evicted) if it evicted one.")
WRONG_LINE = ("a line `<n>: <shipped reply> -> <right reply>`, where n is the line's number in the script (from 1, "
              "blank and comment lines included)")
# Per variant: the oracle's program under /solution, the answer file and what it holds (output case).
ANSWER = {"repair_simulator": ("readcache.py", "/app/out/replay.txt", "the combined replay output"),
          "event_trace": ("readcache.py", "/app/out/trace.txt", "the combined replay output with its trace"),
          "wrong_replies": ("wrong_replies.py", "/app/out/wrong_replies.txt", "the combined wrong replies")}


@dataclass(frozen=True)
class Knobs:
    bugs: int  # planted defects
    cases: int  # hidden fuzz cases (fuzz_equivalence)
    ops: int  # operations per generated script
    sessions: int  # recorded sessions to replay (output case)


@register
class StaleCacheFix(Family):
    name = "stale_cache_fix"
    domain = "debugging"
    skill_types = ("Program Repair", "Fault Localization")
    primitive_skills = ("diagnosing stale cache reads", "cache invalidation and expiry logic",
                        "state leaking between calls", "print-debugging intermediate state",
                        "off-by-one diagnosis", "differential testing against a reference")
    verifiers = ("fuzz_equivalence", "exact_text", "metric_threshold", "multi_protocol")
    variants = ("repair_simulator", "event_trace", "wrong_replies")
    programs = {"Python": render([], PARAM, 5)}
    languages = ("Python",)
    command_complexities = ("bash+code",)
    levels = {0: Knobs(bugs=0, cases=6, ops=20, sessions=1),
              1: Knobs(bugs=1, cases=8, ops=25, sessions=3), 2: Knobs(bugs=2, cases=10, ops=50, sessions=4),
              3: Knobs(bugs=3, cases=14, ops=90, sessions=5), 4: Knobs(bugs=5, cases=18, ops=150, sessions=6)}

    def draw(self, t: TaskBuilder):
        """(capacity, stale capacity, TTL, planted bugs, the reference's run, inputs(n, shown), the shipped
        simulator): inputs(n, shown) makes n scripts on which, past the first ``shown``, every planted defect,
        the stale capacity and every other one-digit capacity (a digit read off the task instead of the
        channel) show in the variant's answer (and, for the other variants, the shipped simulator left as it is)."""
        k, rng = t.knobs, t.rng
        capacity = rng.randint(2, 6)
        stale = rng.choice([c for c in range(2, 9) if c != capacity])
        ttl = rng.randint(3, 9)
        planted = sorted(rng.sample(sorted(BUGS), k.bugs))
        first = t.variant == self.variants[0]
        traced = t.variant == "event_trace" and not t.level  # level 0 ships the trace: only the capacity is off
        shipped = render(planted, str(stale), ttl, TRACE_PY if traced else CACHE_PY)

        def answer(bugs: list[str], cap: int):
            return runner(answer_program(t.variant, bugs, str(cap), ttl, shipped))

        ref = answer([], capacity)
        checks = [answer([b], capacity) for b in planted]
        alts = [stale] + [c for c in range(10) if c not in (capacity, stale)]
        checks += [answer([], c) for c in alts]
        if not first:
            checks.append(answer(planted, stale))

        def exposed(xs: list[str], shown: int) -> bool:
            outs = [ref(x) for x in xs[shown:]]
            return all(any(run(x) != out for x, out in zip(xs[shown:], outs)) for run in checks)

        def inputs(n: int, shown: int) -> list[str]:
            xs = [gen_script(rng, rng.choice([k.ops // 3, k.ops]), capacity, ttl) for _ in range(n)]
            for _ in range(40):
                if exposed(xs, shown):
                    return xs
                xs.append(gen_script(rng, k.ops, capacity, ttl))
            if not first:  # random scripts can miss a rare defect: add the ones made to show each
                xs += witnesses(capacity, ttl)
                if exposed(xs, shown):
                    return xs
            raise FamilyError("stale_cache_fix: could not expose every planted defect")

        return capacity, stale, ttl, planted, ref, inputs, shipped

    @staticmethod
    def problem(t: TaskBuilder, stale: int, deployed: str) -> str:
        """What is wrong with the shipped simulator, and the deployed capacity's sentence."""
        if t.level == 0:  # no planted defect: only the capacity is out of date
            note = " (it also prints each get's events)" if t.variant == "event_trace" else ""
            return (f"The simulator{note} is correct except that it still hard-codes the old capacity C ({stale}); "
                    + deployed)
        return ("Since the last refactor the simulator disagrees with production: stale values, odd hit counts. "
                f"It also still hard-codes the old capacity C ({stale}); {deployed}")

    @staticmethod
    def described(t: TaskBuilder, ttl: int) -> str:
        if not t.level:
            return ""
        return f" {spec(ttl)}" + (f" {TRACE_SPEC}" if t.variant == "event_trace" else "")

    def program_case(self, t: TaskBuilder) -> None:
        capacity, stale, ttl, planted, ref, inputs, shipped = self.draw(t)
        wrong = t.variant == "wrong_replies"
        where = "/app/cachesim/readcache.py" if wrong else "/app/solution.py"
        t.add_file(where, shipped)
        cases = [(x, ref(x)) for x in inputs(t.knobs.cases, 2)]
        t.say(f"`{where}` simulates the read-through cache that sits in front of our settings store."
              + self.described(t, ttl))
        problem = self.problem(t, stale, "the capacity now deployed is given below.")
        if wrong:
            t.say(problem + f" Leave `{where}` as it is (your program may run it). For a script, I need every "
                  "reply the shipped simulator gets wrong, against one that "
                  + ("has the capacity updated" if t.level == 0 else "follows the description exactly at the "
                     "deployed capacity") + f": for each `get` or `stats` line whose reply differs, in order, "
                  f"{WRONG_LINE}.")
            how = "Write a program that reads a script and prints those lines (nothing if every reply is right)."
        elif t.level == 0:
            t.say(problem + " Update it.")
            how = "Fix the simulator in place: the fixed file itself is what gets tested."
        else:
            t.say(problem + " Find and fix the defects so the simulator follows the description exactly"
                  + (", and add the event trace described above (it prints none yet)." if t.variant == "event_trace"
                     else "."))
            how = "Fix the simulator in place: the fixed file itself is what gets tested."
        var = t.deliver(str(capacity), "the cache capacity")
        t.expect_program(how, cases, {"Python": answer_program(t.variant, [], PARAM, ttl, shipped)})
        t.solve(f'sed -i "s/{PARAM}/{var}/" /app/{PROGRAM_FILES["Python"]}')

    def output_case(self, t: TaskBuilder) -> None:
        """Fix the simulator, replay recorded sessions, report the combined replies (or trace, or wrong replies).
        Under partial credit a wrong capacity would still earn every reply it leaves alone: there the capacity
        is stated, and the delivered value is the code of our gateway, whose sessions are filed among other
        gateways' under a digest of it."""
        capacity, stale, ttl, planted, ref, inputs, shipped = self.draw(t)
        k, rng = t.knobs, t.rng

        def named(texts: list[str]) -> list[tuple[str, str]]:
            return sorted(zip((f"session-{rng.randrange(1000, 9999)}-{i}.ops" for i in range(len(texts))), texts))

        batch = named(inputs(k.sessions, 0))
        t.add_file("/app/cachesim/readcache.py", shipped)
        truth = "".join(f"== {name}\n" + ref(text) for name, text in batch)
        data = "/app/data/sessions"
        if t.partial_credit:
            others = [named([gen_script(rng, k.ops, capacity, ttl) for _ in batch]) for _ in range(2)]
            code = unseen(t, t.code, *(text for b in [batch, *others] for _, text in b))
            keys = [key_of(c) for c in [code, *distinct(t.code, len(others), taken=[code])]]
            for key, files in zip(keys, [batch, *others]):
                for name, text in files:
                    t.add_file(f"{data}/{key}/{name}", text)
            where = (f"`{data}/<digest>/`, where the digest is the first 16 hex digits of the SHA-256 of our "
                     "gateway's code, given below (the other folders there are other gateways' sessions)")
            value = (f"the capacity now deployed is {capacity}.", code, "our gateway's code")
        else:
            for name, text in batch:
                t.add_file(f"{data}/{name}", text)
            where = f"`{data}/`"
            value = ("the capacity now deployed is given below.", str(capacity), "the cache capacity")
        t.say(f"`/app/cachesim/readcache.py` simulates the read-through cache that sits in front of our settings "
              f"store (it reads a script on standard input)." + self.described(t, ttl))
        t.say(self.problem(t, stale, value[0]) + self.ask(t, where))
        var = t.deliver(value[1], value[2])
        prog, out, what = ANSWER[t.variant]
        if t.partial_credit:
            t.add_solution_file(prog, answer_program(t.variant, [], str(capacity), ttl, shipped))
            fetch = f'test -n "{var}"\nd={data}/{key_cmd(var)}\ntest -d "$d"\ncp /solution/{prog} /tmp/{prog}\n'
        else:
            t.add_solution_file(prog, answer_program(t.variant, [], PARAM, ttl, shipped))
            fetch = f'd={data}\nsed "s/{PARAM}/{var}/" /solution/{prog} > /tmp/{prog}\n'
        t.solve(fetch + f'mkdir -p /app/out\n: > {out}\nfor f in $(ls "$d"/ | LC_ALL=C sort); do\n'
                f'  echo "== $f" >> {out}\n'
                f'  python3 /tmp/{prog} < "$d/$f" >> {out}\ndone')
        t.expect_output(out, truth, what)

    @staticmethod
    def ask(t: TaskBuilder, where: str) -> str:
        """What to do with the sessions in ``where``, after the problem sentence."""
        one = t.level == 0
        if t.variant == "wrong_replies":
            sessions = (f"the session of our gateway in {where}" if one else
                        f"every session of our gateway in {where} (file name order, each on a fresh cache)")
            right = "the one with the capacity updated" if one else "the one the description gives"
            return (f" Leave the simulator as it is and find the replies it gets wrong in {sessions}: for each "
                    "session, a line `== <file name>`, then, for each `get` or `stats` line whose reply from the "
                    f"shipped simulator differs from {right}, in order, "
                    + WRONG_LINE.replace("script", "session file") + ".")
        sessions = (f"the session of our gateway in {where}" if one else
                    f"every session of our gateway in {where} (file name order), each on a fresh cache,")
        trace = t.variant == "event_trace"
        if one:
            return (f" Update it, then replay {sessions}: write a line `== <file name>` followed by the "
                    "simulator's output for it" + (", trace lines included." if trace else "."))
        return (" Fix the simulator" + (" and add the event trace described above (it prints none yet)" if trace
                                        else "")
                + f", then replay {sessions} and combine the results: for each session, a line `== <file name>` "
                "followed by the simulator's output for it" + (", trace lines included." if trace else "."))
