"""Do the users we sign up come back? Weekly signup cohorts of one product (a folder among several, named
by a SHA-256 prefix of the product's name, the delivered value) and their activity in the weeks after
signing up. Variants: active users per cohort and week offset, the retention matrix as fractions of
each cohort, and the users who churned after their first week. Traps by level: events stamped with a
time of day and unsorted files, then system events that are not activity, then events of unknown users
and events dated before the user's signup, then users who signed up twice (the first signup counts)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from fractions import Fraction

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.data_science._common import keyed_case, on_host
from tmax.families.programs import csv_text, fill, run_python
from tmax.families.unseen import distinct

REFERENCE = r'''
import csv
import datetime as dt
import sys

FIRST = dt.date.fromisoformat(@FIRST@)  # the Monday that starts the first cohort week
COHORTS, OFFSETS = @COHORTS@, @OFFSETS@  # cohort weeks, and week offsets 0 .. OFFSETS-1 after signing up
ACTIVE = @ACTIVE@  # event types that are user activity


def monday(d):
    return d - dt.timedelta(days=d.weekday())


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def cohorts(folder):
    """user -> cohort index, and user -> set of week offsets with activity."""
    signup = {}
    for r in rows(folder + "/signups.csv"):
        u, d = r["user_id"].strip(), dt.date.fromisoformat(r["signup_date"].strip()[:10])
        if u not in signup or d < signup[u]:
            signup[u] = d
    member = {u: (monday(d) - FIRST).days // 7 for u, d in signup.items()}
    member = {u: c for u, c in member.items() if 0 <= c < COHORTS}
    active = {u: set() for u in member}
    for r in rows(folder + "/events.csv"):
        u = r["user_id"].strip()
        if u not in member or r["event"].strip() not in ACTIVE:
            continue
        d = dt.date.fromisoformat(r["ts"].strip()[:10])
        off = (monday(d) - monday(signup[u])).days // 7
        if d >= signup[u] and off < OFFSETS:
            active[u].add(off)
    return member, active


def report(folder, variant):
    member, active = cohorts(folder)
    if variant == "churned":
        return "".join(u + "\n" for u in sorted(member) if active[u] == {0})
    out = []
    for c in range(COHORTS):
        users = [u for u in member if member[u] == c]
        start = FIRST + dt.timedelta(weeks=c)
        counts = [sum(1 for u in users if w in active[u]) for w in range(OFFSETS)]
        if variant == "counts":
            out += [f"{start},{w},{n}\n" for w, n in enumerate(counts)]
        else:
            out.append(f"{start},{len(users)}," + ",".join(f"{n / len(users):.4f}" for n in counts) + "\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

ACTIVITY = ("login", "purchase", "search", "share")
SYSTEM = ("email_sent", "push_sent", "invoice_generated")


@dataclass(frozen=True)
class Knobs:
    users: int  # signups per product
    cohorts: int  # cohort weeks
    offsets: int  # week offsets reported
    decoys: int  # other products' folders
    traps: int  # 1: times of day, unsorted; 2: system events; 3: unknown users, pre-signup events; 4: re-signups


@register
class CohortRetentionMatrix(Family):
    name = "cohort_retention_matrix"
    domain = "data_science"
    skill_types = ("Experimentation", "Time Series")
    primitive_skills = ("cohort filtering", "group-by aggregation", "duplicate record removal",
                        "descriptive statistics")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("counts", "rates", "churned")
    levels = {0: Knobs(users=8, cohorts=1, offsets=3, decoys=1, traps=0),
              1: Knobs(users=30, cohorts=3, offsets=4, decoys=2, traps=1),
              2: Knobs(users=60, cohorts=4, offsets=5, decoys=3, traps=2),
              3: Knobs(users=100, cohorts=5, offsets=6, decoys=3, traps=3),
              4: Knobs(users=160, cohorts=6, offsets=8, decoys=3, traps=4)}

    def _product(self, t, first):
        """(signups.csv, events.csv) of one product: activity that fades week by week after signing up."""
        k, rng = t.knobs, t.rng
        users = distinct(lambda: f"usr{rng.randrange(10000, 100000)}", k.users + 3)
        strangers, users = users[k.users:], users[:k.users]
        fade = rng.uniform(0.55, 0.8)
        signups, events = [], []

        def when(d):
            if k.traps >= 1:
                return f"{d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
            return str(d)

        for i, u in enumerate(users):
            c = i % k.cohorts if i < k.cohorts else rng.randrange(k.cohorts)  # no cohort is empty
            joined = first + dt.timedelta(days=7 * c + rng.randrange(7))
            signups.append([u, str(joined)])
            if k.traps >= 4 and rng.random() < 0.08:  # signed up again later: the first signup counts
                signups.append([u, str(joined + dt.timedelta(days=rng.randrange(3, 30)))])
            for w in range(k.offsets + 2):  # two weeks past the reported offsets, which must be cut off
                if rng.random() > (0.85 if w == 0 else 0.9 * fade ** w):
                    continue
                lo = joined if w == 0 else joined - dt.timedelta(days=joined.weekday()) + dt.timedelta(weeks=w)
                for _ in range(rng.choice([1, 1, 2, 3])):
                    d = lo + dt.timedelta(days=rng.randrange(7 - lo.weekday()))
                    events.append([u, when(d), rng.choice(ACTIVITY)])
            if k.traps >= 2:  # the system writes to every user, active or not
                for _ in range(rng.randrange(1, 4)):
                    d = joined + dt.timedelta(days=rng.randrange(7 * k.offsets))
                    events.append([u, when(d), rng.choice(SYSTEM)])
            if k.traps >= 3 and rng.random() < 0.1:  # a device clock set in the past
                events.append([u, when(joined - dt.timedelta(days=rng.randrange(1, 20))), rng.choice(ACTIVITY)])
        if k.traps >= 3:  # users that never signed up (staff, deleted accounts)
            for u in strangers:
                events.append([u, when(first + dt.timedelta(days=rng.randrange(7 * k.cohorts))), "login"])
        if k.traps >= 1:
            rng.shuffle(signups)
            rng.shuffle(events)
        else:
            events.sort(key=lambda e: e[1])
        return (csv_text(["user_id", "signup_date"], signups), csv_text(["user_id", "ts", "event"], events))

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        first = dt.date(2025, 1, 6) + dt.timedelta(weeks=rng.randrange(80))
        src = fill(REFERENCE, FIRST=repr(str(first)), COHORTS=k.cohorts, OFFSETS=k.offsets, ACTIVE=ACTIVITY)
        ref = run_python(src)
        for _ in range(30):  # redraw a target with nobody churned or a fraction exactly on a rounding tie
            products = [self._product(t, first) for _ in range(1 + k.decoys)]
            member, truth, churned = on_host(dict(zip(("signups.csv", "events.csv"), products[0])), lambda d: (
                ref["cohorts"](d)[0], ref["report"](d, variant), ref["report"](d, "churned")))
            sizes = [sum(1 for c in member.values() if c == i) for i in range(k.cohorts)]
            if churned and all(Fraction(n * 10 ** 4, s).denominator != 2 for s in sizes for n in range(s + 1)):
                break
        last = first + dt.timedelta(weeks=k.cohorts, days=-1)
        span = (f"the cohorts are the {k.cohorts} weeks from Monday {first} to Sunday {last}, each named by its Monday"
                if k.cohorts > 1 else f"there is one cohort, the week from Monday {first} to Sunday {last}, named by "
                "its Monday")
        rules = [f"A user's cohort is the week (Monday to Sunday) of their signup date; {span}."
                 " Week offset w of a user is the w-th week after the week they signed up in (offset 0 is "
                 f"the signup week itself); only offsets 0 to {k.offsets - 1} matter. A user is active at an offset "
                 "when they have at least one event in that week."]
        rules += [  # one more rule per trap level
            "Event timestamps carry a time of day; the date part is what counts. The files are not "
                "sorted.",
            f"Only these event types are activity: {', '.join(f'`{a}`' for a in ACTIVITY)}; the rest "
                "are sent by our systems.",
            "Ignore events of users who have no signup, and events dated before the user's signup "
                "date.",
            "Some users signed up twice: their earliest signup date counts.",
        ][:k.traps]
        ask = {"counts": ("the active users of every cohort at every offset, as CSV lines `cohort,offset,users` "
                          "(zeros included) by cohort, then offset, without a header"),
               "rates": ("the retention matrix: one CSV line per cohort, `cohort,users,r0,r1,...`, with the cohort's "
                         "size and, for each offset, the fraction of the cohort active then (4 decimals), by cohort, "
                         "without a header"),
               "churned": ("the users of the cohorts who churned after their first week: active at offset 0 and at "
                           "no later offset, one user id per line, sorted in byte order")}[variant]
        out = "/app/out/churned.txt" if variant == "churned" else f"/app/out/{variant}.csv"
        keyed_case(t, [dict(zip(("signups.csv", "events.csv"), p)) for p in products], where="products",
                   thing="product", intro="Each product's data (`signups.csv` and `events.csv`) is in", rules=rules,
                   ask=ask, src=src, script="retention.py", out=out, truth=truth)
