"""A read-through LRU cache with expiry in front of a key-value store serves stale or wrong answers.
The simulator replays operation scripts (put / del / tick / get / stats); planted defects are the
classic caching mistakes: no invalidation on write or delete, an off-by-one expiry, a hit that does
not refresh recency, sliding instead of absolute expiry, evicting the newest entry, a cache keyed
by the raw instead of the normalised key. The capacity it hard-codes is stale as well. Graded by
fuzzing the fixed simulator against the reference, or by its replies over recorded sessions."""

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

KEYS = ["user", "cart", "price", "stock", "promo", "session", "profile", "rates", "menu", "quota", "token",
        "region", "banner", "locale"]
VALUES = ["red", "blue", "green", "gold", "ivory", "jade", "onyx", "ruby", "teal", "amber"]


def render(planted: list[str], capacity: str, ttl: int) -> str:
    """The simulator: each bug slot gets the buggy snippet if planted, the correct one otherwise."""
    slots = {bug: bad if bug in planted else good for bug, (good, bad) in BUGS.items()}
    return fill(CACHE_PY, PARAM=capacity, TTL=ttl, **slots)


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
    programs = {"Python": render([], PARAM, 5)}
    languages = ("Python",)
    command_complexities = ("bash+code",)
    levels = {0: Knobs(bugs=0, cases=6, ops=20, sessions=1),
              1: Knobs(bugs=1, cases=8, ops=25, sessions=3), 2: Knobs(bugs=2, cases=10, ops=50, sessions=4),
              3: Knobs(bugs=3, cases=14, ops=90, sessions=5), 4: Knobs(bugs=5, cases=18, ops=150, sessions=6)}

    def draw(self, t: TaskBuilder):
        """(capacity, stale capacity, TTL, planted bugs, the reference's run, inputs(n, shown)): inputs(n,
        shown) makes n scripts on which, past the first ``shown``, every planted defect, the stale capacity
        and every other one-digit capacity (a digit read off the task instead of the channel) show."""
        k, rng = t.knobs, t.rng
        capacity = rng.randint(2, 6)
        stale = rng.choice([c for c in range(2, 9) if c != capacity])
        ttl = rng.randint(3, 9)
        planted = sorted(rng.sample(sorted(BUGS), k.bugs))
        ref = runner(render([], str(capacity), ttl))
        checks = [runner(render([b], str(capacity), ttl)) for b in planted]
        alts = [stale] + [c for c in range(10) if c not in (capacity, stale)]
        checks += [runner(render([], str(c), ttl)) for c in alts]

        def inputs(n: int, shown: int) -> list[str]:
            xs = [gen_script(rng, rng.choice([k.ops // 3, k.ops]), capacity, ttl) for _ in range(n)]
            for _ in range(40):
                outs = [ref(x) for x in xs[shown:]]
                if all(any(run(x) != out for x, out in zip(xs[shown:], outs)) for run in checks):
                    return xs
                xs.append(gen_script(rng, k.ops, capacity, ttl))
            raise FamilyError("stale_cache_fix: could not expose every planted defect")

        return capacity, stale, ttl, planted, ref, inputs

    def program_case(self, t: TaskBuilder) -> None:
        capacity, stale, ttl, planted, ref, inputs = self.draw(t)
        t.add_file("/app/solution.py", render(planted, str(stale), ttl))
        cases = [(x, ref(x)) for x in inputs(t.knobs.cases, 2)]
        t.say(f"`/app/solution.py` simulates the read-through cache that sits in front of our settings store."
              + (f" {spec(ttl)}" if t.level else ""))
        if t.level == 0:  # no planted defect: only the capacity is out of date
            t.say(f"The simulator is correct except that it still hard-codes the old capacity C ({stale}); the "
                  "capacity now deployed is given below. Update it.")
        else:
            t.say(f"Since the last refactor the simulator disagrees with production: stale values, odd hit counts. "
                  f"It also still hard-codes the old capacity C ({stale}); the capacity now deployed is given "
                  "below. Find and fix the defects so the simulator follows the description exactly.")
        var = t.deliver(str(capacity), "the cache capacity")
        t.expect_program("Fix the simulator in place: the fixed file itself is what gets tested.", cases,
                         {"Python": render([], PARAM, ttl)})
        t.solve(f'sed -i "s/{PARAM}/{var}/" /app/{PROGRAM_FILES["Python"]}')

    def output_case(self, t: TaskBuilder) -> None:
        """Fix the simulator, replay recorded sessions, report the combined replies. Under partial credit a
        wrong capacity would still earn every reply it leaves alone: there the capacity is stated, and the
        delivered value is the code of our gateway, whose sessions are filed among other gateways' under a
        digest of it."""
        capacity, stale, ttl, planted, ref, inputs = self.draw(t)
        k, rng = t.knobs, t.rng

        def named(texts: list[str]) -> list[tuple[str, str]]:
            return sorted(zip((f"session-{rng.randrange(1000, 9999)}-{i}.ops" for i in range(len(texts))), texts))

        batch = named(inputs(k.sessions, 0))
        t.add_file("/app/cachesim/readcache.py", render(planted, str(stale), ttl))
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
              f"store (it reads a script on standard input)." + (f" {spec(ttl)}" if t.level else ""))
        if t.level == 0:  # no planted defect: update the capacity and replay the one session
            t.say(f"The simulator is correct except that it still hard-codes the old capacity C ({stale}); "
                  f"{value[0]} Update it, then replay the session of our gateway in {where}: write a line "
                  "`== <file name>` followed by the simulator's output for it.")
        else:
            t.say(f"Since the last refactor the simulator disagrees with production: stale values, odd hit counts. "
                  f"It also still hard-codes the old capacity C ({stale}); {value[0]} Fix the simulator, then "
                  f"replay every session of our gateway in {where} (file name order), each on a fresh cache, and "
                  "combine the results: for each session, a line `== <file name>` followed by the simulator's "
                  "output for it.")
        var = t.deliver(value[1], value[2])
        if t.partial_credit:
            t.add_solution_file("readcache.py", render([], str(capacity), ttl))
            fetch = f'test -n "{var}"\nd={data}/{key_cmd(var)}\ntest -d "$d"\ncp /solution/readcache.py /tmp/readcache.py\n'
        else:
            t.add_solution_file("readcache.py", render([], PARAM, ttl))
            fetch = f'd={data}\nsed "s/{PARAM}/{var}/" /solution/readcache.py > /tmp/readcache.py\n'
        t.solve(fetch + 'mkdir -p /app/out\n: > /app/out/replay.txt\nfor f in $(ls "$d"/ | LC_ALL=C sort); do\n'
                '  echo "== $f" >> /app/out/replay.txt\n'
                '  python3 /tmp/readcache.py < "$d/$f" >> /app/out/replay.txt\ndone')
        t.expect_output("/app/out/replay.txt", truth, "the combined replay output")
