"""Is the treatment arm better than control? Join experiment assignments to purchase events, clean the
exposure log (duplicates, users seen in two arms, internal testers, events before exposure, a
conversion window, mixed timestamp units at higher levels) and report a pooled two-proportion z-test.
Variants: readout (that z-test of one treatment arm against CONTROL, as key=value lines), arm_table (a
CSV table of every arm against CONTROL with Bonferroni-corrected verdicts) and conversion_latency (the
median and mean time from exposure to first counted purchase in CONTROL and one treatment arm). Level 0
asks one sub-question each: users exposed since the restart, each arm's first exposure after it, each
buyer's first purchase after it. The new variants' program texts are in _ab_test_readout_refs.py."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families import unseen
from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.data_science import _ab_test_readout_refs as refs
from tmax.families.programs import C_SPLIT, C_TRIM, fill, run_python

# One source of truth: the oracle ships it, the truth is computed with it on the host, and the
# program-writing variant uses it as the hidden reference. @NAME@ is filled per task; the oracle puts the
# delivered restart time in for @@RESTART@@ (the output case passes it on the command line instead).
REFERENCE = r'''
import calendar
import math
import sys
import time

ARM = "@ARM@"
RESTART = "@@RESTART@@"  # YYYYMMDDHHMM (UTC): users first exposed before then are out of the analysis
WINDOW_DAYS = @WINDOW@  # 0: no conversion window
SRM = @SRM@  # also report the sample-ratio-mismatch statistic
QA_PREFIX = "qa_"


def parse_ts(text):
    text = text.strip()
    if text.isdigit():
        return int(text)
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def restart_epoch(date):
    if len(date) != 12 or not date.isdigit():
        raise SystemExit("the restart time must be written YYYYMMDDHHMM, got %r" % date)
    return calendar.timegm(time.strptime(date, "%Y%m%d%H%M"))


def fmt(x):
    s = "%.4f" % x
    return "0.0000" if s == "-0.0000" else s


def rows(text):
    lines = text.splitlines()
    for line in lines[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and all(parts):
            yield parts


def readout(assign_text, events_text, restart=None, arm=None):
    arm = arm or ARM
    cutoff = restart_epoch(restart or RESTART)
    first = {}
    arms = {}
    for user, a, ts in rows(assign_text):
        if user.startswith(QA_PREFIX):
            continue
        t = parse_ts(ts)
        seen = arms.setdefault(user, [])
        if a not in seen:
            seen.append(a)
        if user not in first or t < first[user]:
            first[user] = t
    members = {u: al[0] for u, al in arms.items() if len(al) == 1 and first[u] >= cutoff}
    converted = set()
    for user, event, ts in rows(events_text):
        if event != "purchase" or user not in members:
            continue
        t = parse_ts(ts)
        if t < first[user]:
            continue
        if WINDOW_DAYS and t >= first[user] + WINDOW_DAYS * 86400:
            continue
        converted.add(user)
    n = {"CONTROL": 0, arm: 0}
    x = {"CONTROL": 0, arm: 0}
    for user, a in members.items():
        if a in n:
            n[a] += 1
            if user in converted:
                x[a] += 1
    n1, x1, n2, x2 = n["CONTROL"], x["CONTROL"], n[arm], x[arm]
    r1 = x1 / n1 if n1 else 0.0
    r2 = x2 / n2 if n2 else 0.0
    z, p = 0.0, 1.0
    if n1 and n2:
        pool = (x1 + x2) / (n1 + n2)
        se = math.sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2))
        if se > 0:
            z = (r2 - r1) / se
            p = math.erfc(abs(z) / math.sqrt(2))
    out = ["control_users=%d" % n1, "control_conversions=%d" % x1,
           "treatment_users=%d" % n2, "treatment_conversions=%d" % x2,
           "control_rate=" + fmt(r1), "treatment_rate=" + fmt(r2), "absolute_lift=" + fmt(r2 - r1),
           "z_score=" + fmt(z), "p_value=" + fmt(p)]
    if SRM:
        chi2 = (n1 - n2) ** 2 / (n1 + n2) if n1 + n2 else 0.0
        out.append("srm_chi2=" + fmt(chi2))
    return "\n".join(out) + "\n"


def split_stream(text):
    head, _, tail = text.partition("\n---\n")
    return head + "\n", tail


if __name__ == "__main__":
    if len(sys.argv) > 2:
        with open(sys.argv[1]) as fa, open(sys.argv[2]) as fe:
            sys.stdout.write(readout(fa.read(), fe.read(), sys.argv[3] if len(sys.argv) > 3 else None))
    else:
        sys.stdout.write(readout(*split_stream(sys.stdin.read())))
'''

C_REFERENCE = r'''
/* Conversion experiment readout: treatment arm vs CONTROL (see the task statement). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_DAYS @WINDOW@
#define SRM @SRM@
static const char *ARM = "@ARM@";
static const char *RESTART = "@@RESTART@@"; /* YYYYMMDDHHMM, UTC */

typedef struct {
    char *id;
    char *arms[2]; /* the first two distinct arms are enough to know "more than one" */
    int narms;
    long long first;
    int converted;
} User;

@C_TRIM@

@C_SPLIT@

static long long days_from_civil(long long y, unsigned m, unsigned d) {
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

static long long parse_ts(const char *t) {
    int digits = *t != 0;
    for (const char *p = t; *p; p++) digits &= isdigit((unsigned char)*p) != 0;
    if (digits) return atoll(t);
    int y, mo, d, h, mi, s;
    sscanf(t, "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &s);
    return days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s;
}

/* Calls fn(fields) for every data line (header skipped) with exactly 3 non-empty fields. */
static void rows(char *text, void (*fn)(char **)) {
    int line = 0;
    for (char *p = text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        if (line++ > 0) {
            char *f[3];
            int n = split(p, f, 3);
            if (n == 3 && *f[0] && *f[1] && *f[2]) fn(f);
        }
        p = nl ? nl + 1 : NULL;
    }
}

static User *users;
static int nusers, ucap;

static User *find(const char *id) {
    for (int i = 0; i < nusers; i++)
        if (!strcmp(users[i].id, id)) return &users[i];
    return NULL;
}

static void on_assign(char **f) {
    if (!strncmp(f[0], "qa_", 3)) return;
    long long t = parse_ts(f[2]);
    User *u = find(f[0]);
    if (!u) {
        if (nusers == ucap) users = realloc(users, (ucap = ucap ? ucap * 2 : 256) * sizeof(User));
        u = &users[nusers++];
        u->id = f[0];
        u->narms = 0;
        u->first = t;
        u->converted = 0;
    }
    int known = 0;
    for (int i = 0; i < u->narms && i < 2; i++) known |= !strcmp(u->arms[i], f[1]);
    if (!known) {
        if (u->narms < 2) u->arms[u->narms] = f[1];
        u->narms++;
    }
    if (t < u->first) u->first = t;
}

static long long cutoff;

static void on_event(char **f) {
    if (strcmp(f[1], "purchase")) return;
    User *u = find(f[0]);
    if (!u || u->narms != 1 || u->first < cutoff) return;
    long long t = parse_ts(f[2]);
    if (t < u->first) return;
    if (WINDOW_DAYS && t >= u->first + (long long)WINDOW_DAYS * 86400) return;
    u->converted = 1;
}

static void fmt(const char *key, double x) {
    char buf[64];
    sprintf(buf, "%.4f", x);
    printf("%s=%s\n", key, strcmp(buf, "-0.0000") ? buf : "0.0000");
}

int main(void) {
    size_t cap = 1 << 16, len = 0, r;
    char *buf = malloc(cap);
    while ((r = fread(buf + len, 1, cap - len - 1, stdin)) > 0) {
        len += r;
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[len] = 0;
    char *sep = strstr(buf, "\n---\n"), *events = "";
    if (sep) {
        sep[1] = 0;
        events = sep + 5;
    }
    int ry, rm, rd, rh, rmin;
    if (strlen(RESTART) != 12 || sscanf(RESTART, "%4d%2d%2d%2d%2d", &ry, &rm, &rd, &rh, &rmin) != 5) return 2;
    cutoff = days_from_civil(ry, (unsigned)rm, (unsigned)rd) * 86400 + rh * 3600 + rmin * 60;
    rows(buf, on_assign);
    rows(events, on_event);
    long n1 = 0, x1 = 0, n2 = 0, x2 = 0;
    for (int i = 0; i < nusers; i++) {
        User *u = &users[i];
        if (u->narms != 1 || u->first < cutoff) continue;
        if (!strcmp(u->arms[0], "CONTROL")) { n1++; x1 += u->converted; }
        else if (!strcmp(u->arms[0], ARM)) { n2++; x2 += u->converted; }
    }
    double r1 = n1 ? (double)x1 / (double)n1 : 0.0, r2 = n2 ? (double)x2 / (double)n2 : 0.0, z = 0.0, p = 1.0;
    if (n1 && n2) {
        double pool = (double)(x1 + x2) / (double)(n1 + n2);
        double se = sqrt(pool * (1 - pool) * (1.0 / n1 + 1.0 / n2));
        if (se > 0) {
            z = (r2 - r1) / se;
            p = erfc(fabs(z) / sqrt(2.0));
        }
    }
    printf("control_users=%ld\ncontrol_conversions=%ld\ntreatment_users=%ld\ntreatment_conversions=%ld\n", n1, x1,
           n2, x2);
    fmt("control_rate", r1);
    fmt("treatment_rate", r2);
    fmt("absolute_lift", r2 - r1);
    fmt("z_score", z);
    fmt("p_value", p);
    if (SRM) fmt("srm_chi2", n1 + n2 ? (double)((n1 - n2) * (n1 - n2)) / (double)(n1 + n2) : 0.0);
    return 0;
}
'''

# Level 0: the one sub-question of who is in the analysis, answered with one awk | sort -u | wc -l.
ATOMIC = r'''
import sys

RESTART = "@@RESTART@@"  # YYYYMMDDHHMM (UTC)


def count(text, restart=None):
    cut = restart or RESTART
    users = set()
    for line in text.splitlines()[1:]:
        parts = line.strip().split(",")
        # ISO 8601 digits in order are YYYYMMDDHHMMSS: the first 12 compare with the restart time.
        if len(parts) >= 3 and "".join(c for c in parts[2] if c.isdigit())[:12] >= cut:
            users.add(parts[0])
    return "%d\n" % len(users)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        with open(sys.argv[1]) as f:
            sys.stdout.write(count(f.read(), sys.argv[2]))
    else:
        sys.stdout.write(count(sys.stdin.read()))
'''

C_ATOMIC = r'''
/* Distinct users assigned at or after the restart time (see the task statement). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *RESTART = "@@RESTART@@"; /* YYYYMMDDHHMM, UTC */

int main(void) {
    static char line[4096];
    char **ids = NULL;
    int n = 0, cap = 0, header = 1;
    while (fgets(line, sizeof line, stdin)) {
        if (header) { header = 0; continue; }
        line[strcspn(line, "\r\n")] = 0;
        char *c1 = strchr(line, ',');
        char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (!c2) continue;
        *c1 = 0;
        char stamp[13];
        int k = 0;
        for (char *p = c2 + 1; *p && k < 12; p++)
            if (*p >= '0' && *p <= '9') stamp[k++] = *p;
        stamp[k] = 0;
        if (strcmp(stamp, RESTART) < 0) continue;
        int known = 0;
        for (int i = 0; i < n && !known; i++) known = !strcmp(ids[i], line);
        if (!known) {
            if (n == cap) ids = realloc(ids, (cap = cap ? cap * 2 : 64) * sizeof *ids);
            ids[n++] = strdup(line);
        }
    }
    printf("%d\n", n);
    return 0;
}
'''

# The new variants reuse the readout's own parsing code, sliced out of the texts above.
PY_HELPERS = REFERENCE[REFERENCE.index("def parse_ts("):REFERENCE.index("def readout(")]
PY_TIME = REFERENCE[REFERENCE.index("def parse_ts("):REFERENCE.index("def fmt(")]
PY_MAIN = REFERENCE[REFERENCE.index("def split_stream("):]
C_PARSE = C_REFERENCE[C_REFERENCE.index("@C_TRIM@"):C_REFERENCE.index("static long long cutoff;")]
C_TIME = C_REFERENCE[C_REFERENCE.index("static long long days_from_civil("):C_REFERENCE.index("/* Calls fn(")]
REPORTS = {"arm_table": (refs.PY_ARM_TABLE, refs.C_ARM_TABLE, "Every arm against CONTROL"),
           "conversion_latency": (refs.PY_LATENCY, refs.C_LATENCY, "Time to convert, CONTROL and one arm")}
# Level 0 of the new variants: (grouping column, counted event, what a line is about, its column's name).
FIRST_AFTER = {"arm_table": (1, "", "arm", "arm"), "conversion_latency": (0, "purchase", "buyer", "user_id")}


def sources(variant: str, window: int, srm: bool, arm: str) -> dict[str, str]:
    """The variant's filled reference programs by language (readout: today's texts, unchanged)."""
    if variant == "readout":
        return {"Python": fill(REFERENCE, WINDOW=window, SRM=srm, ARM=arm),
                "C": fill(C_REFERENCE, WINDOW=str(window), SRM="1" if srm else "0", ARM=arm, C_TRIM=C_TRIM,
                          C_SPLIT=C_SPLIT)}
    py, c, title = REPORTS[variant]
    named = {"ARM": arm} if variant == "conversion_latency" else {}  # arm_table reports every arm
    py_src = refs.PY_HEAD + ('ARM = "@ARM@"\n' if named else "") + refs.PY_CONSTS + PY_HELPERS + refs.PY_COHORT
    return {"Python": fill(py_src + py + PY_MAIN, WINDOW=window, **named),
            "C": fill(refs.C_HEAD + C_PARSE + refs.C_COHORT + c, TITLE=title, WINDOW=str(window), C_TRIM=C_TRIM,
                      C_SPLIT=C_SPLIT, **named)}


def atomic_sources(variant: str) -> tuple[dict[str, str], str]:
    """(the level-0 reference programs by language, the Python function that answers)."""
    if variant == "readout":
        return {"Python": fill(ATOMIC), "C": fill(C_ATOMIC)}, "count"
    key, event, what, _ = FIRST_AFTER[variant]
    py = fill(refs.PY_FIRST_AFTER_HEAD + PY_TIME + refs.PY_FIRST_AFTER, KEY=key, EVENT=repr(event))
    c = fill(refs.C_FIRST_AFTER_HEAD + "@C_TRIM@\n\n@C_SPLIT@\n\n" + C_TIME + refs.C_FIRST_AFTER, WHAT=what, KEY=key,
             EVENT=event, C_TRIM=C_TRIM, C_SPLIT=C_SPLIT)
    return {"Python": py, "C": c}, "first_after"


EVENTS = ("page_view", "page_view", "add_to_cart", "search")
RESTART_WHAT = "the restart time (YYYYMMDDHHMM, UTC)"


@dataclass(frozen=True)
class Knobs:
    users: int  # users in the output case's assignment log
    arms: int  # treatment arms besides CONTROL
    traps: int  # 1: re-exposures; 2: + purchases before exposure, shuffled events; 3: + contamination, qa_ testers
    window: int  # conversion window in days (0: none)
    epoch: bool  # some event timestamps written as epoch seconds
    srm: bool  # also report the sample-ratio-mismatch statistic


def iso(ts: int) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts))


def stamp12(ts: int) -> str:
    import time

    return time.strftime("%Y%m%d%H%M", time.gmtime(ts))


def make_data(rng, k: Knobs, arms: list[str], n_users: int, start: int, first_day: int = 0) -> tuple[str, str]:
    """Assignment and event CSVs with the level's traps; exposures from ``first_day`` days after ``start``
    (midnight UTC) to the end of the 14-day run."""
    base = rng.uniform(0.08, 0.2)
    rates = {a: (base if a == "CONTROL" else max(0.02, base + rng.uniform(-0.03, 0.07))) for a in arms}
    assign: list[tuple[int, str, str]] = []
    events: list[tuple[int, str, str]] = []
    for uid in (f"u{i}" for i in rng.sample(range(100000, 999999), n_users)):
        if k.traps >= 3 and rng.random() < 0.03:
            uid = "qa_" + uid[1:]
        arm = rng.choice(arms)
        t0 = start + rng.randrange(first_day * 86400, 14 * 86400)
        assign.append((t0, uid, arm))
        if rng.random() < 0.06:  # re-exposure: same arm, later (or identical) row
            assign.append((t0 + (rng.randrange(3600, 5 * 86400) if k.traps >= 3 else 0), uid, arm))
        if k.traps >= 3 and rng.random() < 0.03:  # contaminated: also exposed to another arm
            other = rng.choice([a for a in arms if a != arm])
            assign.append((t0 + rng.randrange(600, 3 * 86400), uid, other))
        for _ in range(rng.randrange(0, 4)):
            events.append((t0 + rng.randrange(0, 10 * 86400), uid, rng.choice(EVENTS)))
        rate = rates[arm] * (3 if uid.startswith("qa_") else 1)
        if rng.random() < rate:
            if k.window:
                delay = rng.randrange(0, 6 * 86400) if rng.random() < 0.8 else rng.randrange(7 * 86400, 20 * 86400)
            else:
                delay = rng.randrange(0, 9 * 86400)
            events.append((t0 + delay, uid, "purchase"))
            if rng.random() < 0.2:
                events.append((t0 + delay + rng.randrange(60, 86400), uid, "purchase"))
        if k.traps >= 2 and rng.random() < 0.05:  # bought before being exposed: not a conversion
            events.append((t0 - rng.randrange(3600, 5 * 86400), uid, "purchase"))
    # A few events from users outside the experiment.
    for _ in range(max(3, n_users // 40)):
        events.append((start + rng.randrange(0, 14 * 86400), f"u{rng.randrange(100000, 999999)}", "purchase"))
    assign.sort()
    events.sort()
    if k.traps >= 2:
        rng.shuffle(events)

    def stamp(ts: int) -> str:
        return str(ts) if k.epoch and rng.random() < 0.12 else iso(ts)

    a_text = "user_id,arm,assigned_at\n" + "".join(f"{u},{a},{iso(ts)}\n" for ts, u, a in assign)
    e_text = "user_id,event,ts\n" + "".join(f"{u},{e},{stamp(ts)}\n" for ts, u, e in events)
    return a_text, e_text


@register
class AbTestReadout(Family):
    name = "ab_test_readout"
    domain = "data_science"
    skill_types = ("Experimentation", "Statistical Inference")
    primitive_skills = ("two-proportion z-test", "p-value from the normal distribution", "duplicate record removal",
                        "cohort filtering", "sample ratio mismatch check", "group-by aggregation")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    variants = ("readout", "arm_table", "conversion_latency")
    levels = {0: Knobs(users=40, arms=1, traps=0, window=0, epoch=False, srm=False),
              1: Knobs(users=300, arms=1, traps=1, window=0, epoch=False, srm=True),
              2: Knobs(users=800, arms=2, traps=2, window=0, epoch=False, srm=True),
              3: Knobs(users=1500, arms=3, traps=3, window=0, epoch=False, srm=True),
              4: Knobs(users=2500, arms=3, traps=3, window=7, epoch=True, srm=True)}

    def setup(self, t: TaskBuilder) -> tuple[list[str], str, int, dict[str, str], dict]:
        """(the arms, the compared treatment arm, the run's first day, the variant's filled reference programs,
        the Python one's namespace)."""
        k, rng = t.knobs, t.rng
        self.skew(t)
        arms = ["CONTROL", *unseen.distinct(lambda: t.code(1), k.arms, taken=("CONTROL",))]
        arm = arms[1 + rng.randrange(k.arms)]
        start = 1704067200 + rng.randrange(0, 300) * 86400  # the run's first day (midnight UTC), 2024-2025
        srcs = sources(t.variant, k.window, k.srm, arm)
        return arms, arm, start, srcs, run_python(srcs["Python"])

    def skew(self, t: TaskBuilder) -> None:
        """A seed's data differ between the variants (readout's draws stay as they were)."""
        for _ in range(self.variants.index(t.variant)):
            t.rng.random()

    @staticmethod
    def restart_at(t: TaskBuilder, start: int, day: int) -> int:
        return start + day * 86400 + t.rng.randrange(0, 1440) * 60

    @staticmethod
    def alternatives(start: int, at: int) -> list[str]:
        """Restart times a guess would land on: hours and days around the true one, and none at all."""
        return [stamp12(at + d) for d in (-86400, -21600, 21600, 86400)] + [stamp12(start - 86400)]

    SCOPE = {"readout": "Only `{arm}` and `CONTROL` are compared.",
             "arm_table": "Every arm is reported against `CONTROL`.",
             "conversion_latency": "Only `CONTROL` and `{arm}` are reported."}

    def rules(self, k: Knobs, arm: str, variant: str = "readout") -> tuple[str, str]:
        """(the analysis rules, the output format): both cases state them alike."""
        rules = [self.SCOPE[variant].replace("{arm}", arm) + " A user counts once, in the arm they were assigned "
                 "to; their assignment time is their earliest row in the assignment log (it has repeated rows for "
                 "some users: re-exposures)."]
        rules.append("The experiment was restarted after a bug fix at the restart time given below (UTC, written "
                     "`YYYYMMDDHHMM`, to the minute): only users whose assignment time is at or after that moment are "
                     "in the analysis; users first assigned earlier are dropped entirely, whatever they did later.")
        if k.traps >= 3:
            rules.append("Users who were assigned to more than one arm are contaminated: drop them entirely. "
                         "Accounts whose `user_id` starts with `qa_` are internal testers: drop them too.")
        conv = "A user converts if they have at least one `purchase` event at or after their assignment time"
        if k.window:
            conv += (f" and strictly less than {k.window} days ({k.window * 86400} seconds) after it "
                     "(the conversion window)")
        rules.append(conv + ". Other event types never count, and events of users who are not in the "
                     "analysis are ignored.")
        if k.epoch:
            rules.append("Beware: the event exporter wrote some `ts` values as Unix epoch seconds instead of "
                         "ISO 8601; both denote UTC.")
        if variant == "arm_table":
            return " ".join(rules), self.table_fields()
        if variant == "conversion_latency":
            return " ".join(rules), self.latency_fields(arm)
        fields = ("`key=value` lines in exactly this order: `control_users`, `control_conversions`, "
                  "`treatment_users`, `treatment_conversions` (integers; treatment is `" + arm + "`), then "
                  "`control_rate` and `treatment_rate` (conversions / users), `absolute_lift` (treatment rate "
                  "minus control rate, from the unrounded rates), `z_score` (pooled two-proportion z statistic, "
                  "treatment minus control; 0 if the pooled standard error is 0) and `p_value` (two-sided, from "
                  "the standard normal distribution; 1 if the standard error is 0)")
        if k.srm:
            fields += (", and last `srm_chi2`: the sample-ratio-mismatch chi-square statistic of the two arms' "
                       "user counts against an even 50/50 split")
        fields += (". Every non-integer value is rounded to exactly 4 decimal places (e.g. `0.1250`; write "
                   "`0.0000`, never `-0.0000`)")
        return " ".join(rules), fields

    @staticmethod
    def table_fields() -> str:
        return ("CSV lines without a header: first `CONTROL`, then every other arm that has at least one user in "
                "the analysis, in byte order of the arm name, each as `arm,users,conversions,rate,relative_lift,"
                "p_value,verdict`. `users` and `conversions` are integers and `rate` is conversions / users (0 for "
                "no users); for a treatment arm, `relative_lift` is (arm rate - CONTROL rate) / CONTROL rate (0 if "
                "CONTROL's rate is 0), `p_value` the two-sided p-value of the pooled two-proportion z-test of the "
                "arm against CONTROL (from the standard normal distribution; 1 if the pooled standard error is 0 "
                "or CONTROL has no users), and `verdict` is `better` or `worse` (the arm's rate above or below "
                "CONTROL's) when the unrounded p-value is below 0.05 divided by the number of treatment arms "
                "listed (Bonferroni), else `flat`. CONTROL's line always ends `0.0000,1.0000,baseline`. Every "
                "non-integer value is rounded to exactly 4 decimal places (e.g. `0.1250`; write `0.0000`, never "
                "`-0.0000`)")

    @staticmethod
    def latency_fields(arm: str) -> str:
        return (f"exactly two CSV lines without a header, first for `CONTROL`, then for `{arm}`, each as "
                "`arm,users,converters,median_hours,mean_hours`: the arm's users in the analysis and how many of "
                "them converted (integers), then the median and the mean time to convert of those converters, in "
                "hours (seconds / 3600). A converter's time to convert runs from their assignment time to their "
                "earliest purchase that counts; the median of an even number of times is the mean of the middle "
                "two. Both times are rounded to exactly 2 decimal places (e.g. `36.25`), and are `0.00` for an arm "
                "without converters")

    # What the tool of each variant reports (program case), and what the output case asks for.
    TOOL = {"readout": "The tool compares the treatment arm `{arm}` with CONTROL",
            "arm_table": "The tool reports every arm against CONTROL",
            "conversion_latency": "The tool reports how long users of CONTROL and of `{arm}` took to convert"}
    ASK = {"readout": "I need the readout of `{arm}` against CONTROL since the experiment's restart.",
           "arm_table": "I need a table of every arm against CONTROL since the experiment's restart.",
           "conversion_latency": "I need to know how long users of CONTROL and of `{arm}` took to convert since "
                                 "the experiment's restart."}
    # (solution script, output file, what it holds) per variant.
    OUTPUT = {"readout": ("readout.py", "/app/out/readout.txt", "the readout (format above)"),
              "arm_table": ("arm_table.py", "/app/out/arm_table.csv", "the arm table (format above)"),
              "conversion_latency": ("latency.py", "/app/out/latency.csv", "the latency report (format above)")}

    def program_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_program(t)
        k, rng = t.knobs, t.rng
        arms, arm, start, srcs, ns = self.setup(t)
        rules, fields = self.rules(k, arm, t.variant)
        names = ", ".join(f"`{a}`" for a in arms[1:])
        intro = ("We run a lot of conversion experiments with a control arm called `CONTROL` and one or more "
                 f"treatment arms ({names}), and I want a reusable readout tool. Its input (standard input) is one "
                 "stream: the assignment log (CSV with header `user_id,arm,assigned_at`), a line holding just `---`, "
                 "then the event log (CSV with header `user_id,event,ts`). Times are UTC, written "
                 f"`YYYY-MM-DDTHH:MM:SS`. {self.TOOL[t.variant].replace('{arm}', arm)}, for the "
                 "experiment whose restart time is given below.")
        for _ in range(50):
            day = rng.randrange(3, 9)
            at = self.restart_at(t, start, day)
            restart = stamp12(at)
            # The worked examples only hold users exposed after the restart: they show the rules, not the time.
            cases = [make_data(rng, k, arms, rng.randrange(25, 80), start, day + 1) for _ in range(2)]
            cases += [make_data(rng, k, arms, rng.randrange(60, 160), start) for _ in range(8)]
            cases = [(a + "---\n" + e, ns["readout"](a, e, restart)) for a, e in cases]
            hidden = [c[0].partition("\n---\n") for c in cases[2:]]
            if unseen.visible(t, restart, intro, rules, fields, *(x for c in cases[:2] for x in c)):
                continue
            if all(any(ns["readout"](a + "\n", e, alt) != out for (a, _, e), (_, out) in zip(hidden, cases[2:]))
                   for alt in self.alternatives(start, at)):
                break
        else:
            raise FamilyError("ab_test_readout: no restart time that every near miss gets wrong in 50 draws")
        t.say(intro)
        v = t.deliver(restart, RESTART_WHAT)
        t.say(f"{rules} The output is {fields}.")
        t.expect_program("The restart time is always the one given above: hard-code it.", cases, srcs)
        # The shipped references have a placeholder; the oracle fills it with the delivered time.
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@RESTART@@/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_output(t)
        k, rng = t.knobs, t.rng
        arms, arm, start, srcs, ns = self.setup(t)
        rules, fields = self.rules(k, arm, t.variant)
        names = ", ".join(f"`{a}`" for a in arms[1:])
        for _ in range(20):
            a_text, e_text = make_data(rng, k, arms, k.users, start)
            good = []
            for day in range(3, 9):
                at = self.restart_at(t, start, day)
                truth = ns["readout"](a_text, e_text, stamp12(at))
                # Every line must move under a near-miss time, or a guess would earn line credit.
                if all(not set(truth.splitlines()) & set(ns["readout"](a_text, e_text, alt).splitlines())
                       for alt in self.alternatives(start, at)):
                    good.append(stamp12(at))
            if good:
                break
        else:
            raise FamilyError("ab_test_readout: no restart time that every near miss gets wrong in 20 data draws")
        t.add_file("/app/data/assignments.csv", a_text)
        t.add_file("/app/data/events.csv", e_text)
        t.say(f"Our checkout experiment split users between a control arm (`CONTROL`) and "
              f"{'a treatment arm' if k.arms == 1 else 'several treatment arms'} ({names}). The exposure log is "
              "`/app/data/assignments.csv` (`user_id,arm,assigned_at`) and the product events are in "
              "`/app/data/events.csv` (`user_id,event,ts`); times are UTC, written `YYYY-MM-DDTHH:MM:SS`. "
              + self.ASK[t.variant].replace("{arm}", arm))
        restart = unseen.unseen(t, lambda: rng.choice(good), f"Rules: {rules}", f"Output format: {fields}.")
        truth = ns["readout"](a_text, e_text, restart)
        v = t.deliver(restart, RESTART_WHAT)
        t.say(f"Rules: {rules}")
        t.say(f"Output format: {fields}.")
        script, out, what = self.OUTPUT[t.variant]
        t.add_solution_file(script, srcs["Python"])  # the restart time comes on the command line
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/{script} /app/data/assignments.csv /app/data/events.csv "{v}" > {out}')
        t.expect_output(out, truth, what)

    ATOMIC_RULE = ("The exposure log has a header line, then `user_id,arm,assigned_at` rows (UTC, written "
                   "`YYYY-MM-DDTHH:MM:SS`); some users have repeated rows. Count the distinct users with at least "
                   "one row assigned at or after the restart time given below (UTC, written `YYYYMMDDHHMM`, to the "
                   "minute).")
    FIRST_RULE = {"arm_table": "The exposure log has a header line, then `user_id,arm,assigned_at` rows",
                  "conversion_latency": "The event log has a header line, then `user_id,event,ts` rows"}
    FIRST_ASK = {"arm_table": "For each arm, take its earliest row at or after the restart time",
                 "conversion_latency": "For each buyer (a user with a `purchase` row at or after the restart "
                                       "time), take their earliest such `purchase` row"}

    def atomic_rule(self, variant: str) -> str:
        if variant == "readout":
            return self.ATOMIC_RULE
        _, _, noun, field = FIRST_AFTER[variant]
        missing = "; an arm with no such row gets no line" if noun == "arm" else ""
        return (f"{self.FIRST_RULE[variant]} (UTC, written `YYYY-MM-DDTHH:MM:SS`); the restart time is given below "
                f"(UTC, written `YYYYMMDDHHMM`, to the minute). {self.FIRST_ASK[variant]} and write one line "
                f"`<{field}> <minutes>`: the whole minutes (rounded down) from the restart time to that row. One "
                f"line per {noun}, in byte order of `{field}`{missing}.")

    def atomic_setup(self, t: TaskBuilder) -> tuple[list[str], int, dict[str, str], object]:
        """(the arms, the run's first day, the level-0 reference programs, the Python function answering)."""
        k, rng = t.knobs, t.rng
        self.skew(t)
        arms = ["CONTROL", *unseen.distinct(lambda: t.code(1), k.arms, taken=("CONTROL",))]
        start = 1704067200 + rng.randrange(0, 300) * 86400
        srcs, fn = atomic_sources(t.variant)
        return arms, start, srcs, run_python(srcs["Python"])[fn]

    # (input file, solution script, output file, what it holds) of level 0 per variant.
    ATOMIC_OUT = {"readout": ("assignments", "count.py", "/app/out/count.txt", "the user count"),
                  "arm_table": ("assignments", "arm_starts.py", "/app/out/arm_starts.txt", "the arm lines"),
                  "conversion_latency": ("events", "first_purchases.py", "/app/out/first_purchases.txt",
                                         "the buyer lines")}

    def atomic_output(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        arms, start, srcs, answer = self.atomic_setup(t)
        log, script, out, what = self.ATOMIC_OUT[t.variant]
        for _ in range(20):
            texts = dict(zip(("assignments", "events"), make_data(rng, k, arms, k.users, start)))
            good = []
            for day in range(3, 9):
                at = self.restart_at(t, start, day)
                truth = answer(texts[log], stamp12(at))
                # Lines must all move under a near-miss time (line credit), and there must be some.
                if truth.strip() and all(not set(truth.splitlines()) & set(answer(texts[log], alt).splitlines())
                                         for alt in self.alternatives(start, at)):
                    good.append(stamp12(at))
            if good:
                break
        else:
            raise FamilyError("ab_test_readout: no restart time that every near miss gets wrong in 20 data draws")
        path = f"/app/data/{log}.csv"
        t.add_file(path, texts[log])
        rule = self.atomic_rule(t.variant)
        t.say(f"Our checkout experiment's {'exposure' if log == 'assignments' else 'event'} log is `{path}`. {rule}")
        restart = unseen.unseen(t, lambda: rng.choice(good))
        truth = answer(texts[log], restart)
        v = t.deliver(restart, RESTART_WHAT)
        t.add_solution_file(script, srcs["Python"])
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/{script} {path} "{v}" > {out}')
        t.expect_output(out, truth, what)

    def atomic_program(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        arms, start, srcs, answer = self.atomic_setup(t)
        log = self.ATOMIC_OUT[t.variant][0]
        which = 0 if log == "assignments" else 1
        prints = "one integer" if t.variant == "readout" else f"one line per {FIRST_AFTER[t.variant][2]}"
        intro = (f"I want a small tool that reads an experiment's {'exposure' if which == 0 else 'event'} log on "
                 f"standard input and prints {prints}. {self.atomic_rule(t.variant)}")
        for _ in range(50):
            day = rng.randrange(3, 9)
            at = self.restart_at(t, start, day)
            restart = stamp12(at)
            logs = [make_data(rng, k, arms, rng.randrange(10, 30), start, day + 1)[which] for _ in range(2)]
            logs += [make_data(rng, k, arms, rng.randrange(20, 60), start)[which] for _ in range(8)]
            cases = [(a, answer(a, restart)) for a in logs]
            if unseen.visible(t, restart, intro, *(x for c in cases[:2] for x in c)):
                continue
            if all(any(answer(a, alt) != out for a, out in cases[2:]) for alt in self.alternatives(start, at)):
                break
        else:
            raise FamilyError("ab_test_readout: no restart time that every near miss gets wrong in 50 draws")
        t.say(intro)
        v = t.deliver(restart, RESTART_WHAT)
        t.expect_program("The restart time is always the one given above: hard-code it.", cases, srcs)
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@RESTART@@/{v}/" "$f"; done')
