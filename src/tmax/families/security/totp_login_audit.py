"""Time-based one-time passwords (RFC 6238) for one token whose base32 secret is delivered. Variants:
`codes` computes the token's code at given instants, `verify` replays the server's check over an auth log
(window of accepted time steps, malformed codes, the no-reuse rule) and lists the accepted attempts with
their step offset, `drift` estimates each hardware token's clock offset in steps from the codes its owner
typed. Higher levels add other users' lines, local-time stamps with UTC offsets, an unsorted log, 8-digit
codes and HMAC-SHA-256."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import base64
import datetime as dt
import hashlib
import hmac
import re
import sys

DIGITS = @DIGITS@
ALGO = "@ALGO@"  # sha1 or sha256
STEP = 30
WINDOW = @WINDOW@  # verify: steps accepted either side of the server's current step
SEARCH = @SEARCH@  # drift: steps searched either side
USER = "@USER@"
LINE = re.compile(r"^(\S+) attempt=(\S+) user=(\S+) device=(\S+) otp=(\S*)$")


def key_of(secret):
    return base64.b32decode(secret + "=" * (-len(secret) % 8))


def code(key, counter):
    h = hmac.new(key, counter.to_bytes(8, "big"), getattr(hashlib, ALGO)).digest()
    o = h[-1] & 15
    return str((int.from_bytes(h[o:o + 4], "big") & 0x7FFFFFFF) % 10 ** DIGITS).zfill(DIGITS)


def epoch(stamp):
    return int(dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())


def offsets(n):
    """0, -1, 1, -2, 2, ...: the order in which steps are tried (the nearest match wins)."""
    out = [0]
    for i in range(1, n + 1):
        out += [-i, i]
    return out


def match(key, counter, otp, n):
    for off in offsets(n):
        if code(key, counter + off) == otp:
            return off
    return None


def attempts(text):
    """(epoch, attempt, device, otp) of USER's lines, in time order (ties in log order)."""
    rows = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m and m.group(3) == USER:
            rows.append((epoch(m.group(1)), m.group(2), m.group(4), m.group(5)))
    return sorted(rows, key=lambda r: r[0])


def codes(secret, text):
    key = key_of(secret)
    return "".join(f"{s} {code(key, epoch(s) // STEP)}\n" for s in text.split())


def verify(secret, text):
    key, last, ok = key_of(secret), None, []
    for when, attempt, device, otp in attempts(text):
        if not re.fullmatch(r"[0-9]{%d}" % DIGITS, otp):
            continue
        off = match(key, when // STEP, otp, WINDOW)
        if off is None or (last is not None and when // STEP + off <= last):
            continue  # no step matches, or a step at or before the last accepted one (reuse)
        last = when // STEP + off
        ok.append((attempt, off))
    return "".join(f"{a} {off:+d}\n" for a, off in sorted(ok))


def drift(secret, text):
    key, votes = key_of(secret), {}
    for when, attempt, device, otp in attempts(text):
        off = match(key, when // STEP, otp, SEARCH) if re.fullmatch(r"[0-9]+", otp) else None
        votes.setdefault(device, {})
        if off is not None:
            votes[device][off] = votes[device].get(off, 0) + 1
    out = []
    for device in sorted(votes):
        v = votes[device]
        best = min(v, key=lambda o: (-v[o], abs(o), o)) if v else None
        out.append(f"{device} {'none' if best is None else f'{best:+d}'}\n")
    return "".join(out)


if __name__ == "__main__":  # SECRET codes|verify|drift FILE
    with open(sys.argv[3]) as f:
        sys.stdout.write({"codes": codes, "verify": verify, "drift": drift}[sys.argv[2]](sys.argv[1], f.read()))
'''

USERS = ("svc-deploy", "amira", "bjorn", "chidi", "dana", "emeka", "farah", "goran")


@dataclass(frozen=True)
class Knobs:
    rows: int  # timestamps (codes) or USER's attempts (verify, drift)
    window: int  # verify: accepted steps either side
    search: int  # drift: steps searched either side; devices drift up to this
    devices: int  # drift: hardware tokens of the user
    others: bool  # other users' lines in the log
    local: bool  # stamps in local time with a UTC offset
    reuse: bool  # the no-reuse rule (replayed codes in the log); unsorted log
    strong: bool  # 8 digits, HMAC-SHA-256


@register
class TotpLoginAudit(Family):
    name = "totp_login_audit"
    domain = "security"
    skill_types = ("Cryptography", "Access Control")
    primitive_skills = ("one-time password computation", "HMAC signature verification", "base32 decoding",
                        "syslog timestamp parsing", "auth log analysis", "timeline reconstruction")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("codes", "verify", "drift")
    levels = {0: Knobs(rows=1, window=0, search=3, devices=1, others=False, local=False, reuse=False, strong=False),
              1: Knobs(rows=6, window=1, search=6, devices=2, others=False, local=False, reuse=False, strong=False),
              2: Knobs(rows=12, window=1, search=10, devices=3, others=True, local=True, reuse=False, strong=False),
              3: Knobs(rows=18, window=2, search=20, devices=3, others=True, local=True, reuse=True, strong=False),
              4: Knobs(rows=24, window=2, search=30, devices=4, others=True, local=True, reuse=True, strong=True)}

    @staticmethod
    def _stamp(rng, when: int, local: bool) -> str:
        minutes = rng.choice([-300, -240, 60, 120, 330, 540])
        tz = dt.timezone(dt.timedelta(minutes=minutes)) if local else dt.timezone.utc
        s = dt.datetime.fromtimestamp(when, tz).isoformat()
        return s.replace("+00:00", "Z")

    def _log(self, t, ns, key, user):
        """Log lines (as written) for the verify and drift variants."""
        k, rng, variant = t.knobs, t.rng, t.variant
        now = 1767225600 + rng.randrange(300 * 86400)
        devices = [f"{rng.choice(['yubi', 'otp', 'hwtok'])}-{rng.randrange(100, 999)}" for _ in range(k.devices)]
        skew = {d: rng.choice([s for s in range(-k.search, k.search + 1) if abs(s) > k.search // 3 or k.search < 4])
                for d in devices}
        rows, used = [], []
        n = 4 if k.rows == 1 else k.rows
        ids = [f"a{i}" for i in rng.sample(range(10000, 99999), 2 * n + 2)]
        for i in range(n):
            r = rng.random()
            replay = variant == "verify" and k.reuse and used and 0.45 <= r < 0.6
            now += rng.randrange(3, 20) if replay else rng.randrange(40, 4000)  # a replay follows within seconds
            device = devices[i % len(devices)] if variant == "drift" else devices[0]
            step = now // 30
            if variant == "drift":
                off = skew[device] + (rng.choice([-1, 1]) if rng.random() < 0.15 and i >= len(devices) else 0)
                typo = rng.random() < 0.15 and i >= 2 * len(devices)  # a mistyped code matches no step
                otp = "".join(rng.choice("0123456789") for _ in range(8 if k.strong else 6)) if typo else \
                    ns["code"](key, step + off)
            else:
                if replay:  # the previous code again, still inside its window
                    otp = used[-1]
                elif i == 0 or r < 0.45:  # typed in time: within the window
                    otp = ns["code"](key, step + rng.randrange(-k.window, k.window + 1))
                elif r < 0.75:  # a code from too far away
                    otp = ns["code"](key, step + rng.choice([-1, 1]) * (k.window + rng.randrange(1, 4)))
                elif r < 0.85 and k.others:
                    otp = rng.choice(["", "12345", "abcdef", "0" * 9])
                else:
                    otp = "".join(rng.choice("0123456789") for _ in range(8 if k.strong else 6))
                used.append(otp)
            rows.append((now, ids.pop(), user, device, otp))
        if k.others:
            for _ in range(n // 2 + 1):
                w = rows[rng.randrange(len(rows))][0] + rng.randrange(-600, 600)
                rows.append((w, ids.pop(), rng.choice([u for u in USERS if u != user]),
                             f"otp-{rng.randrange(100, 999)}", "".join(rng.choice("0123456789") for _ in range(6))))
        rows.sort()
        if k.reuse:
            rng.shuffle(rows)
        return "".join(f"{self._stamp(rng, w, k.local)} attempt={a} user={u} device={d} otp={o}\n"
                       for w, a, u, d, o in rows)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        user = rng.choice(USERS)
        src = fill(REFERENCE, DIGITS=8 if k.strong else 6, ALGO="sha256" if k.strong else "sha1", WINDOW=k.window,
                   SEARCH=k.search, USER=user)
        ns = run_python(src)
        # The secret: 16 base32 letters (10 key bytes), read off the channel; the fixtures are made with it,
        # and the codes they show are digits, so it is drawn first.
        secret = unseen(t, lambda: t.code(5)[:16])
        key = ns["key_of"](secret)
        for _ in range(30):
            if variant == "codes":
                base = 1767225600 + rng.randrange(300 * 86400)
                stamps = [self._stamp(rng, base + rng.randrange(0, 40 * 86400), k.local) for _ in range(k.rows)]
                text = "".join(s + "\n" for s in stamps)
                truth = ns["codes"](secret, text)
            else:
                text = self._log(t, ns, key, user)
                truth = ns[variant](secret, text)
            if truth and " none" not in truth:
                break
        else:
            raise FamilyError("totp_login_audit: no fixture with a non-empty answer in 30 draws")
        path = "/app/audit/instants.txt" if variant == "codes" else "/app/audit/otp.log"
        t.add_file(path, text)
        profile = (f"{'8' if k.strong else '6'} digits, {'HMAC-SHA-256' if k.strong else 'HMAC-SHA-1'}, 30-second "
                   "steps counted from the Unix epoch, the usual dynamic truncation")
        t.say(f"We are auditing the one-time-password token of the account `{user}`. It is a standard RFC 6238 "
              f"TOTP token ({profile}); its secret is the base32 string given below (decode it as RFC 4648 base32, "
              "padding it with `=` to a multiple of 8 characters).")
        v = t.deliver(secret, "the token secret")
        stamp = ("Timestamps are ISO 8601 with a UTC offset; the step is taken from the instant they name."
                 if k.local else "Timestamps are ISO 8601 in UTC.")
        if variant == "codes":
            t.say(f"`{path}` lists instants, one per line. {stamp} Write `<instant as given> <code>` for each, in "
                  "the same order (codes keep their leading zeros).")
        else:
            who = (f" Lines of other users are not ours: take only `user={user}`." if k.others else "")
            t.say(f"`{path}` is the server's auth log, lines `<timestamp> attempt=<id> user=<user> device=<token> "
                  f"otp=<what was typed>`. {stamp}{who}")
        if variant == "verify":
            rule = (f"An attempt is accepted when the typed value is exactly {8 if k.strong else 6} digits and equals "
                    f"the code of the step its timestamp falls in or of a step at most {k.window} away from it"
                    if k.window else
                    "An attempt is accepted when the typed value equals the code of the step its timestamp falls in")
            reuse = (" Go through the attempts in time order: once an attempt is accepted at a step, a later "
                     "attempt that matches that step or an earlier one is refused (no reuse)." if k.reuse else "")
            t.say(f"{rule}; its offset is the matched step minus the timestamp's step (when several steps match, "
                  f"the nearest wins, and -n before +n).{reuse} List the accepted attempts as `<attempt id> "
                  "<offset>` (signed, e.g. `+0`, `-1`), sorted by attempt id.")
        elif variant == "drift":
            t.say(f"The user's hardware tokens have drifting clocks. For each attempt, find the offset o in "
                  f"-{k.search}..+{k.search} steps for which the code of (the timestamp's step + o) equals what was "
                  "typed (try 0, -1, +1, -2, +2, ... and take the first match; attempts that match none are typos). "
                  "A token's drift is the offset matched most often (a tie goes to the smaller absolute offset, then "
                  "to the negative one). Write `<token> <drift>` (signed, e.g. `+3`, `-12`, `+0`) for every token "
                  "in the log, sorted by token name.")
        t.add_solution_file("totp.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/totp.py "{v}" {variant} {path} '
                "> /app/out/totp.txt")
        t.expect_output("/app/out/totp.txt", truth, {"codes": "the codes", "verify": "the accepted attempts",
                                                    "drift": "the token drifts"}[variant])
