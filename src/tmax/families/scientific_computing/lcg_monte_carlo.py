"""Reproduce a Monte Carlo result exactly: a specified linear congruential generator seeded with a
delivered seed drives hit-or-miss estimation of pi, a sample-mean integral with its standard error, or
a one-dimensional slab transport simulation (absorption, isotropic scattering, a collision cap) whose
draws must be consumed in exactly the stated order. Variants: the point results (estimate), a 95%
confidence interval around the main estimate (interval), or the running value at five checkpoints of
the run (checkpoints)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import C_TRIM, fill, run_python
from tmax.families.unseen import unseen, visible

REFERENCE = r'''
import math
import sys

SEED = "@@SEED@@"  # the oracle writes the delivered seed here
A, C, M = @LCG@
MODE = "@MODE@"
FUNC = @FUNC@


class Lcg:
    def __init__(self, seed):
        self.x = seed % M

    def next(self):
        self.x = (A * self.x + C) % M
        return (self.x + 0.5) / M


def parse(text):
    p = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            p[key.strip()] = float(value)
    return p


def run(p, seed):
    rng = Lcg(seed)
    n = int(p["samples"] if "samples" in p else p["particles"])
    if MODE == "pi":
        hits = 0
        for _ in range(n):
            u = rng.next()
            v = rng.next()
            if u * u + v * v <= 1.0:
                hits += 1
        return {"hits": hits, "pi_estimate": 4 * hits / n}
    if MODE == "integral":
        a, b = p["a"], p["b"]
        vals = []
        for _ in range(n):
            x = a + (b - a) * rng.next()
            vals.append((b - a) * FUNC(x))
        mean = sum(vals) / n
        var = sum((v - mean) ** 2 for v in vals) / (n - 1)
        return {"estimate": mean, "std_error": math.sqrt(var / n)}
    thick, st, sa = p["thickness"], p["sigma_t"], p["sigma_a"]
    cap = int(p.get("max_collisions", 0))
    out = {"transmitted": 0, "reflected": 0, "absorbed": 0, "terminated": 0}
    collisions_of_transmitted = 0
    depth_of_absorbed = 0.0
    for _ in range(n):
        x, mu, coll = 0.0, 1.0, 0
        while True:
            x += mu * (-math.log(rng.next()) / st)
            if x >= thick:
                out["transmitted"] += 1
                collisions_of_transmitted += coll
                break
            if x < 0:
                out["reflected"] += 1
                break
            coll += 1
            if rng.next() < sa / st:
                out["absorbed"] += 1
                depth_of_absorbed += x
                break
            if coll == cap:
                out["terminated"] += 1
                break
            mu = 2 * rng.next() - 1
    tr = out["transmitted"] / n
    out["transmission"] = tr
    out["std_error"] = math.sqrt(tr * (1 - tr) / n)
    out["mean_collisions"] = collisions_of_transmitted / out["transmitted"] if out["transmitted"] else 0.0
    out["mean_absorption_depth"] = depth_of_absorbed / out["absorbed"] if out["absorbed"] else 0.0
    return out


FORMATS = {"hits": "%d", "pi_estimate": "%.6f", "estimate": "%.6f", "std_error": "%.6f", "transmitted": "%d",
           "reflected": "%d", "absorbed": "%d", "terminated": "%d", "transmission": "%.6f",
           "mean_collisions": "%.4f"}
FIELDS = @FIELDS@


def measure(text, seed=None):
    return run(parse(text), int(SEED if seed is None else seed))


def report(text, seed=None):
    m = measure(text, seed)
    return "".join("%s=%s\n" % (k, FORMATS[k] % m[k]) for k in FIELDS)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--value"]:
        print(repr(measure(sys.stdin.read(), int(args[2]))[args[1]]))
    else:
        sys.stdout.write(report(sys.stdin.read(), int(args[0]) if args else None))
'''

C_REFERENCE = r'''
/* Monte Carlo driven by a linear congruential generator (see the task statement). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODE_PI 0
#define MODE_INTEGRAL 1
#define MODE_SLAB 2
static const int MODE = @CMODE@;
static const unsigned long long SEED = @@SEED@@ULL;
static const unsigned long long A = @A@ULL, C = @C@ULL, M = @M@ULL;
static unsigned long long state;

static double next_u(void) {
    state = (A * state + C) % M; /* A < 2^31 and state < 2^32: no overflow */
    return ((double)state + 0.5) / (double)M;
}

static double func(double x) { return @CFUNC@; }

static double param(char keys[][64], double *vals, int n, const char *key, double dflt) {
    for (int i = 0; i < n; i++)
        if (strcmp(keys[i], key) == 0) return vals[i];
    return dflt;
}

@C_TRIM@

int main(void) {
    char line[256], keys[32][64];
    double vals[32];
    int nk = 0;
    while (fgets(line, sizeof line, stdin) && nk < 32) {
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        snprintf(keys[nk], 64, "%s", trim(line));
        vals[nk++] = atof(trim(eq + 1));
    }
    state = SEED % M;
    if (MODE == MODE_PI) {
        long n = (long)param(keys, vals, nk, "samples", 0), hits = 0;
        for (long i = 0; i < n; i++) {
            double u = next_u();
            double v = next_u();
            if (u * u + v * v <= 1.0) hits++;
        }
        printf("hits=%ld\npi_estimate=%.6f\n", hits, 4.0 * hits / n);
        return 0;
    }
    if (MODE == MODE_INTEGRAL) {
        long n = (long)param(keys, vals, nk, "samples", 0);
        double a = param(keys, vals, nk, "a", 0), b = param(keys, vals, nk, "b", 0);
        double *ys = malloc(sizeof(double) * n), sum = 0, ss = 0;
        for (long i = 0; i < n; i++) {
            double x = a + (b - a) * next_u();
            ys[i] = (b - a) * func(x);
            sum += ys[i];
        }
        double mean = sum / n;
        for (long i = 0; i < n; i++) ss += (ys[i] - mean) * (ys[i] - mean);
        printf("estimate=%.6f\nstd_error=%.6f\n", mean, sqrt(ss / (n - 1) / n));
        return 0;
    }
    long n = (long)param(keys, vals, nk, "particles", 0);
    double thick = param(keys, vals, nk, "thickness", 0), st = param(keys, vals, nk, "sigma_t", 1);
    double sa = param(keys, vals, nk, "sigma_a", 0);
    long cap = (long)param(keys, vals, nk, "max_collisions", 0);
    long tr = 0, rf = 0, ab = 0, te = 0, coll_tr = 0;
    for (long p = 0; p < n; p++) {
        double x = 0, mu = 1;
        long coll = 0;
        for (;;) {
            x += mu * (-log(next_u()) / st);
            if (x >= thick) { tr++; coll_tr += coll; break; }
            if (x < 0) { rf++; break; }
            coll++;
            if (next_u() < sa / st) { ab++; break; }
            if (coll == cap) { te++; break; }
            mu = 2 * next_u() - 1;
        }
    }
    double t = (double)tr / n;
    printf("transmitted=%ld\nreflected=%ld\nabsorbed=%ld\n", tr, rf, ab);
    if (cap) printf("terminated=%ld\n", te);
    printf("transmission=%.6f\n", t);
    if (cap) printf("std_error=%.6f\nmean_collisions=%.4f\n", sqrt(t * (1 - t) / n), tr ? (double)coll_tr / tr : 0.0);
    return 0;
}
'''

# The interval and checkpoints variants: the same simulation (the slab also tracks the spread of the
# absorption depths), reported another way.
VARIANT_REFERENCE = REFERENCE.replace(
    "    depth_of_absorbed = 0.0\n", "    depth_of_absorbed = 0.0\n    depth_sq = 0.0\n").replace(
    "                depth_of_absorbed += x\n",
    "                depth_of_absorbed += x\n                depth_sq += x * x\n").replace(
    "    return out\n\n\nFORMATS", r'''    ab = out["absorbed"]
    mean_depth = out["mean_absorption_depth"]
    out["depth_high"] = (mean_depth + 1.96 * math.sqrt(max(0.0, depth_sq - ab * mean_depth ** 2) / (ab - 1) / ab)
                         if ab > 1 else 0.0)
    return out


VARIANT = "@VARIANT@"
KEY = "@KEY@"  # checkpoints: the running value reported
PC_KEY = "@PC_KEY@"  # checkpoints: the continuous value of the first checkpoint ("first")


def size_key(p):
    return "samples" if "samples" in p else "particles"


def interval(p, seed):
    m = run(p, seed)
    n = int(p[size_key(p)])
    if MODE == "pi":
        q = m["hits"] / n
        est, se = m["pi_estimate"], 4 * math.sqrt(q * (1 - q) / n)
    elif MODE == "integral":
        est, se = m["estimate"], m["std_error"]
    else:
        est, se = m["transmission"], m["std_error"]
    m["low"], m["high"] = est - 1.96 * se, est + 1.96 * se
    return m


def checkpoints(p, seed):
    key = size_key(p)
    n = int(p[key])
    out = {"counts": []}
    for i in range(1, 6):
        q = dict(p)
        q[key] = n * i // 5
        m = run(q, seed)
        out["counts"].append(n * i // 5)
        out[str(n * i // 5)] = m[KEY]
        if i == 1:
            out["first"] = m[PC_KEY]
    return out


FORMATS''').replace(
    "    return run(parse(text), int(SEED if seed is None else seed))\n",
    '    f = interval if VARIANT == "interval" else checkpoints\n'
    "    return f(parse(text), int(SEED if seed is None else seed))\n").replace(
    '    return "".join("%s=%s\\n" % (k, FORMATS[k] % m[k]) for k in FIELDS)\n',
    '    if VARIANT == "interval":\n'
    '        return "".join("%s=%s\\n" % (k, FORMATS[k] % m[k]) for k in FIELDS)\n'
    '    return "".join("%d %s\\n" % (c, FORMATS[KEY] % m[str(c)]) for c in m["counts"])\n').replace(
    '"mean_collisions": "%.4f"}', '"mean_collisions": "%.4f", "low": "%.6f", "high": "%.6f"}')

C_VARIANT = r"""
/* Monte Carlo driven by a linear congruential generator (see the task statement). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODE_PI 0
#define MODE_INTEGRAL 1
#define MODE_SLAB 2
static const int MODE = @CMODE@;
static const int INTERVAL = @INTERVAL@; /* 1: the interval, 0: the checkpoints */
static const int SHOW_EST = @SHOW_EST@; /* interval: print the estimate before the bounds */
static const int CKEY = @CKEY@; /* checkpoints: 0 hits, 1 pi_estimate, 2 estimate, 3 transmitted, 4 transmission */
static const unsigned long long SEED = @@SEED@@ULL;
static const unsigned long long A = @A@ULL, C = @C@ULL, M = @M@ULL;
static unsigned long long state;

static double next_u(void) {
    state = (A * state + C) % M; /* A < 2^31 and state < 2^32: no overflow */
    return ((double)state + 0.5) / (double)M;
}

static double func(double x) { return @CFUNC@; }

static char keys[32][64];
static double vals[32];
static int nk = 0;

static double param(const char *key, double dflt) {
    for (int i = 0; i < nk; i++)
        if (strcmp(keys[i], key) == 0) return vals[i];
    return dflt;
}

@C_TRIM@

typedef struct { long count; double est, se; } Res; /* count: hits or transmitted */

static Res simulate(long n) {
    Res r = {0, 0, 0};
    state = SEED % M;
    if (MODE == MODE_PI) {
        for (long i = 0; i < n; i++) {
            double u = next_u();
            double v = next_u();
            if (u * u + v * v <= 1.0) r.count++;
        }
        double q = (double)r.count / n;
        r.est = 4.0 * r.count / n;
        r.se = 4 * sqrt(q * (1 - q) / n);
        return r;
    }
    if (MODE == MODE_INTEGRAL) {
        double a = param("a", 0), b = param("b", 0);
        double *ys = malloc(sizeof(double) * n), sum = 0, ss = 0;
        for (long i = 0; i < n; i++) {
            double x = a + (b - a) * next_u();
            ys[i] = (b - a) * func(x);
            sum += ys[i];
        }
        double mean = sum / n;
        for (long i = 0; i < n; i++) ss += (ys[i] - mean) * (ys[i] - mean);
        free(ys);
        r.est = mean;
        r.se = sqrt(ss / (n - 1) / n);
        return r;
    }
    double thick = param("thickness", 0), st = param("sigma_t", 1), sa = param("sigma_a", 0);
    long cap = (long)param("max_collisions", 0);
    for (long p = 0; p < n; p++) {
        double x = 0, mu = 1;
        long coll = 0;
        for (;;) {
            x += mu * (-log(next_u()) / st);
            if (x >= thick) { r.count++; break; }
            if (x < 0) break;
            coll++;
            if (next_u() < sa / st) break;
            if (coll == cap) break;
            mu = 2 * next_u() - 1;
        }
    }
    r.est = (double)r.count / n;
    r.se = sqrt(r.est * (1 - r.est) / n);
    return r;
}

int main(void) {
    char line[256];
    while (fgets(line, sizeof line, stdin) && nk < 32) {
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        snprintf(keys[nk], 64, "%s", trim(line));
        vals[nk++] = atof(trim(eq + 1));
    }
    long n = (long)param(MODE == MODE_SLAB ? "particles" : "samples", 0);
    if (INTERVAL) {
        Res r = simulate(n);
        const char *name = MODE == MODE_PI ? "pi_estimate" : MODE == MODE_INTEGRAL ? "estimate" : "transmission";
        if (SHOW_EST) printf("%s=%.6f\n", name, r.est);
        printf("low=%.6f\nhigh=%.6f\n", r.est - 1.96 * r.se, r.est + 1.96 * r.se);
        return 0;
    }
    for (int i = 1; i <= 5; i++) {
        long c = n * i / 5;
        Res r = simulate(c);
        if (CKEY == 0 || CKEY == 3) printf("%ld %ld\n", c, r.count);
        else printf("%ld %.6f\n", c, r.est);
    }
    return 0;
}
"""
# Per level: the reported keys (interval) and the running value (checkpoints).
INTERVAL_FIELDS = {0: ("low", "high"), 1: ("pi_estimate", "low", "high"), 2: ("estimate", "low", "high"),
                   3: ("transmission", "low", "high"), 4: ("transmission", "low", "high")}
CHECK_KEYS = {0: "hits", 1: "pi_estimate", 2: "estimate", 3: "transmitted", 4: "transmission"}
CKEYS = {"hits": 0, "pi_estimate": 1, "estimate": 2, "transmitted": 3, "transmission": 4}
PC_KEYS = {"pi": "pi_estimate", "integral": "estimate", "slab": "mean_absorption_depth"}

LCGS = ((1103515245, 12345, 2 ** 31), (1664525, 1013904223, 2 ** 32), (22695477, 1, 2 ** 32), (69069, 1, 2 ** 32),
        (134775813, 1, 2 ** 32))
FUNCS = (("lambda x: math.exp(-x * x)", "exp(-x^2)", "exp(-x * x)"),
         ("lambda x: 1 / (1 + x * x)", "1 / (1 + x^2)", "1 / (1 + x * x)"),
         ("lambda x: math.sin(x) ** 2", "sin(x)^2", "pow(sin(x), 2)"),
         ("lambda x: x * math.exp(-x)", "x * exp(-x)", "x * exp(-x)"),
         ("lambda x: math.sqrt(x) * math.cos(x)", "sqrt(x) * cos(x)", "sqrt(x) * cos(x)"))
DECIMALS = {"pi_estimate": 6, "estimate": 6, "std_error": 6, "transmission": 6, "mean_collisions": 4,
            "low": 6, "high": 6}
FIELD_TEXT = {"hits": "`hits` (an integer)", "pi_estimate": "`pi_estimate` = 4 * hits / samples (6 decimals)",
              "estimate": "`estimate` (6 decimals)", "std_error": "`std_error` (6 decimals)",
              "transmitted": "`transmitted` (a count)", "reflected": "`reflected` (a count)",
              "absorbed": "`absorbed` (a count)", "terminated": "`terminated` (a count)",
              "transmission": "`transmission` = transmitted / particles (6 decimals)",
              "mean_collisions": "`mean_collisions` (the average number of collisions the transmitted particles had "
                                 "before leaving, 4 decimals)"}


def safe(x: float, d: int) -> bool:
    f = abs(x) * 10 ** d
    return abs(f - math.floor(f) - 0.5) > 1e-3


@dataclass(frozen=True)
class Knobs:
    mode: str  # pi (hit-or-miss), integral (sample mean) or slab (particle transport)
    n: tuple[int, ...]  # sample or particle counts to choose from
    fields: tuple[str, ...]  # the reported keys, in order
    cap: bool = False  # slab: a collision cap (max_collisions)


WHAT = "the generator seed"
C_MODES = {"pi": "MODE_PI", "integral": "MODE_INTEGRAL", "slab": "MODE_SLAB"}


class Setup:
    """One task's draws: the generator, the integrand and the reference filled with them. The seed (the
    delivered value) is drawn with the data, since what counts as a safe configuration depends on it."""

    def __init__(self, t: TaskBuilder):
        k, rng = t.knobs, t.rng
        self.k, self.rng = k, rng
        self.lcg = rng.choice(LCGS)
        self.func, self.func_text, self.c_func = rng.choice(FUNCS)
        self.variant, self.level = t.variant, t.level
        self.fields = INTERVAL_FIELDS[t.level] if t.variant == "interval" else k.fields
        self.key = CHECK_KEYS[t.level]  # checkpoints: the running value
        if t.variant in ("interval", "checkpoints"):
            self.src = fill(VARIANT_REFERENCE, LCG=self.lcg, MODE=k.mode, FUNC=self.func, FIELDS=self.fields,
                            VARIANT=t.variant, KEY=self.key, PC_KEY=PC_KEYS[k.mode])
        else:
            self.src = fill(REFERENCE, LCG=self.lcg, MODE=k.mode, FUNC=self.func, FIELDS=k.fields)
        self.ns = run_python(self.src)

    def c_src(self) -> str:
        a, c, m = self.lcg
        if self.variant in ("interval", "checkpoints"):
            return fill(C_VARIANT, CMODE=C_MODES[self.k.mode], CFUNC=self.c_func, A=a, C=c, M=m, C_TRIM=C_TRIM,
                        INTERVAL=int(self.variant == "interval"), SHOW_EST=int(len(self.fields) == 3),
                        CKEY=CKEYS[self.key])
        return fill(C_REFERENCE, CMODE=C_MODES[self.k.mode], CFUNC=self.c_func, A=a, C=c, M=m, C_TRIM=C_TRIM)

    def rounded(self, m: dict) -> list[tuple[float, int]]:
        """The rounded numbers of a result, with their decimals."""
        if self.variant == "checkpoints":
            return [(m[str(c)], DECIMALS[self.key]) for c in m["counts"] if self.key in DECIMALS]
        return [(m[f], DECIMALS[f]) for f in self.fields if f in DECIMALS]

    def config(self, n: int, seed: int) -> str:
        """Parameters whose rounded results are safe from float noise (and, for the slab, every outcome
        occurs)."""
        k = self.k
        for _ in range(1000):
            text = params(self.rng, k, n)
            m = self.ns["measure"](text, seed)
            # the slab's outcome counts of the whole run (checkpoints: measured apart; more than one absorbed
            # particle for the spread of their depths)
            slab = self.ns["run"](self.ns["parse"](text), seed) if self.variant == "checkpoints" and \
                k.mode == "slab" else m
            least = 0 if self.variant == "estimate" else 1
            if all(safe(x, dd) for x, dd in self.rounded(m)) and \
                    (k.mode != "slab" or min(slab["transmitted"], slab["reflected"], slab["absorbed"]) > least):
                return text
        raise FamilyError("lcg_monte_carlo: no configuration with safely rounded results in 1000 draws")

    def seeded(self, t: TaskBuilder, sizes: list[int], shown: int, *extra: str) -> tuple[int, list[str]]:
        """The seed and configurations of the given sizes made with it: the seed shows neither in the
        task so far (``extra`` included) nor in the first ``shown`` configurations and their results."""
        for _ in range(20):
            seed = int(unseen(t, lambda: str(self.rng.randrange(1000, 2 ** 31)), *extra))
            texts = [self.config(n, seed) for n in sizes]
            if not visible(t, str(seed), *extra, *texts[:shown],
                           *(self.ns["report"](x, seed) for x in texts[:shown])):
                return seed, texts
        raise FamilyError("lcg_monte_carlo: the seed shows in the configurations in 20 draws")


def params(rng, k: Knobs, n: int) -> str:
    if k.mode == "pi":
        return f"samples = {n}\n"
    if k.mode == "integral":
        a = rng.randrange(0, 20) / 10
        return f"samples = {n}\na = {a:g}\nb = {a + rng.randrange(5, 30) / 10:g}\n"
    st = rng.randrange(5, 30) / 10
    text = (f"particles = {n}\nthickness = {rng.randrange(10, 40) / 10:g}\nsigma_t = {st:g}\n"
            f"sigma_a = {st * rng.randrange(10, 60) / 100:.3g}\n")
    if k.cap:
        text += f"max_collisions = {rng.randint(3, 8)}\n"
    return text


@register
class LcgMonteCarlo(Family):
    name = "lcg_monte_carlo"
    domain = "scientific_computing"
    skill_types = ("Stochastic Methods", "Simulation")
    primitive_skills = ("linear congruential generators", "Monte Carlo estimation", "particle transport sampling",
                        "standard error estimation", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    variants = ("estimate", "interval", "checkpoints")
    levels = {0: Knobs(mode="pi", n=(10000, 20000, 25000, 40000), fields=("hits",)),
              1: Knobs(mode="pi", n=(10000, 20000, 25000, 40000), fields=("hits", "pi_estimate")),
              2: Knobs(mode="integral", n=(10000, 20000, 25000), fields=("estimate", "std_error")),
              3: Knobs(mode="slab", n=(2000, 4000, 5000), cap=False,
                       fields=("transmitted", "reflected", "absorbed", "transmission")),
              4: Knobs(mode="slab", n=(5000, 8000, 10000), cap=True,
                       fields=("transmitted", "reflected", "absorbed", "terminated", "transmission", "std_error",
                               "mean_collisions"))}

    def rules(self, k: Knobs, lcg: tuple[int, int, int], func: str, variant: str = "estimate") -> str:
        if variant == "interval":
            return self.rules_interval(k, lcg, func)
        if variant == "checkpoints":
            return self.rules_steps(k, lcg, func)
        a, c, m = lcg
        s = (f"The generator is the linear congruential generator x_(i+1) = ({a} * x_i + {c}) mod {m}, with x_0 the "
             f"seed (given below); every draw advances it once and yields u = (x_(i+1) + 0.5) / {m}, so 0 < u < 1. "
             "Use exact integer arithmetic for the recurrence and double precision for everything else, and "
             "consume the draws in exactly the order described. ")
        if k.mode == "pi":
            s += ("Estimate pi by hit-or-miss: for each of `samples` points draw u, then v; the point is a hit when "
                  "u*u + v*v <= 1.")
        elif k.mode == "integral":
            s += (f"Estimate the integral of f(x) = {func} from x = a to x = b by the sample mean: for each of "
                  "`samples` draws u, take x = a + (b - a) * u and the value y = (b - a) * f(x); the estimate is the "
                  "mean of the y values and `std_error` is their sample standard deviation (dividing by samples - 1) "
                  "divided by sqrt(samples).")
        else:
            s += ("Simulate neutral particles in a one-dimensional slab occupying 0 <= x < `thickness`, total cross "
                  "section `sigma_t`, absorption cross section `sigma_a`. Each particle starts at x = 0 moving in "
                  "direction mu = 1. Repeat: draw u and move by mu * (-ln(u) / sigma_t) (ln is the natural "
                  "logarithm); if now x >= thickness the "
                  "particle is transmitted, if x < 0 it is reflected (either ends it). Otherwise it collides: draw u; "
                  "if u < sigma_a / sigma_t it is absorbed (ends).")
            if k.cap:
                s += (" Otherwise, if this was its `max_collisions`-th collision it is terminated (ends, no more "
                      "draws).")
            s += (" Otherwise it scatters: draw u and set mu = 2 * u - 1, then continue. Particles are simulated one "
                  "after another from the same generator.")
            if "std_error" in k.fields:
                s += " `std_error` is sqrt(transmission * (1 - transmission) / particles)."
        return s

    def rules_interval(self, k: Knobs, lcg: tuple[int, int, int], func: str) -> str:
        a, c, m = lcg
        s = (f"Random numbers come from a linear congruential generator whose state starts at the seed given below: "
             f"each draw replaces the state x by ({a} * x + {c}) mod {m} and returns the uniform deviate "
             f"(x + 0.5) / {m}, which lies strictly between 0 and 1. Keep the state an exact integer, do all other "
             "arithmetic in double precision, and take the draws in precisely the sequence laid out here. ")
        if k.mode == "pi":
            return s + ("The run throws `samples` random points into the unit square, the first coordinate from "
                        "one draw and the second from the next; a point lands inside the quarter circle (a hit) when "
                        "the sum of the squared coordinates is at most 1.")
        if k.mode == "integral":
            return s + (f"The run estimates the definite integral of f(x) = {func} over [a, b]: each of the `samples` "
                        "draws gives a point x = a + (b - a) * deviate and a weighted value y = (b - a) * f(x), and "
                        "the estimate is the average of those y values.")
        s += ("The run follows `particles` neutral particles, one after the other on the same stream, through a "
              "one-dimensional slab spanning 0 <= x < `thickness` (total cross section `sigma_t`, absorption "
              "cross section `sigma_a`). A particle is born at x = 0 heading in the direction mu = 1. Its flight "
              "length is -ln(deviate) / sigma_t (natural logarithm), travelled along mu; landing at x >= thickness "
              "it escapes through the far face (transmitted), at x < 0 it escapes back through the near face "
              "(reflected). Otherwise it collides, and the next deviate below sigma_a / sigma_t absorbs it.")
        if k.cap:
            s += (" A particle not absorbed at its `max_collisions`-th collision is dropped there (terminated, no "
                  "further draws).")
        return s + (" A surviving particle takes a new direction mu = 2 * deviate - 1 from the next draw and flies "
                    "again.")

    def rules_steps(self, k: Knobs, lcg: tuple[int, int, int], func: str) -> str:
        a, c, m = lcg
        s = (f"Generator: the state update is x <- ({a} * x + {c}) mod {m} in exact integer arithmetic, the initial "
             f"state is the seed (given below), and after each update the draw is u = (x + 0.5) / {m}, in (0, 1). "
             "Everything else is IEEE double precision. The order of the draws matters: follow the steps to the "
             "letter. ")
        if k.mode == "pi":
            return s + ("Steps, repeated `samples` times: (1) draw u; (2) draw v; (3) count a hit if u*u + v*v <= 1.")
        if k.mode == "integral":
            return s + (f"Integrand f(x) = {func} on the interval from `a` to `b`. Steps, repeated `samples` times: "
                        "(1) draw u; (2) set x = a + (b - a) * u; (3) record y = (b - a) * f(x). The estimate over "
                        "the first n samples is the mean of their n y values.")
        s += ("Transport model: a slab 0 <= x < `thickness`, total cross section `sigma_t`, absorption cross section "
              "`sigma_a`; the particles go through it one at a time on one generator. Each particle starts at "
              "x = 0 with direction mu = 1 and loops over: (1) flight: draw u, x += mu * (-ln(u) / sigma_t) with "
              "ln the natural log; (2) escape: stop as transmitted if x >= thickness, as reflected if x < 0; "
              "(3) collision: draw u, stop as absorbed if u < sigma_a / sigma_t;")
        if k.cap:
            s += " (4) cap: stop as terminated if that was collision number `max_collisions` (no more draws);"
        return s + " then scatter: draw u, set mu = 2 * u - 1 and go back to (1)."

    def texts(self, k: Knobs, d: Setup) -> tuple[str, str, str]:
        """(the parameter keys, the rules, the output format) as the instruction states them."""
        keys = {"pi": "`samples`", "integral": "`samples`, `a`, `b`",
                "slab": "`particles`, `thickness`, `sigma_t`, `sigma_a`" + (", `max_collisions`" if k.cap else "")}
        rules = self.rules(k, d.lcg, d.func_text, d.variant)
        size = "particles" if k.mode == "slab" else "samples"
        if d.variant == "interval":
            est = {"pi": "pi_estimate = 4 * hits / samples", "integral": "the sample-mean estimate",
                   "slab": "transmission = transmitted / particles"}[k.mode]
            se = {"pi": "4 * sqrt(p * (1 - p) / samples) with p = hits / samples",
                  "integral": "the sample standard deviation of the y values (dividing by samples - 1) divided by "
                              "sqrt(samples)",
                  "slab": "sqrt(transmission * (1 - transmission) / particles)"}[k.mode]
            rules += (f" Report a 95% confidence interval around {est}: its standard error is {se}, and the "
                      "interval is `low` = estimate - 1.96 * standard error to `high` = estimate + 1.96 * standard "
                      "error.")
            text = {"pi_estimate": "`pi_estimate`", "estimate": "`estimate`", "transmission": "`transmission`",
                    "low": "`low`", "high": "`high`"}
            fmt = ("`key=value` lines, in this order: " + ", ".join(text[f] for f in d.fields) +
                   " (each with 6 decimals).")
            return keys[k.mode], rules, fmt
        if d.variant == "checkpoints":
            value = {"hits": "the number of hits so far (an integer)",
                     "pi_estimate": "the pi estimate 4 * hits / n over the first n samples (6 decimals)",
                     "estimate": "the sample-mean estimate over the first n samples (6 decimals)",
                     "transmitted": "the number of the first n particles that were transmitted (an integer)",
                     "transmission": "the transmitted fraction of the first n particles (6 decimals)"}[d.key]
            rules += (f" We watch the run converge: report the running result at five checkpoints, after the first "
                      f"1/5, 2/5, 3/5, 4/5 and all of the `{size}` (n = {size} * i / 5 for i = 1..5; the run does "
                      "not restart at a checkpoint, it is the same stream of draws).")
            fmt = f"five lines, one per checkpoint in order, each `n value` (space-separated), value being {value}."
            return keys[k.mode], rules, fmt
        fmt = "`key=value` lines, in this order: " + ", ".join(FIELD_TEXT[f] for f in k.fields) + "."
        return keys[k.mode], rules, fmt

    def program_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        d = Setup(t)
        keys, rules, fmt = self.texts(k, d)
        opening = {"estimate": "Our group reruns the same Monte Carlo calculations with different parameters and wants "
                               "them bit-for-bit reproducible.",
                   "interval": "Our error-bar plots need confidence intervals from Monte Carlo runs we can repeat "
                               "exactly.",
                   "checkpoints": "For a convergence study we need the running Monte Carlo result at fixed "
                                  "checkpoints, reproducible to the last digit."}[t.variant]
        t.say(f"{opening} Write the calculation as a program that reads the parameters on standard "
              f"input (`key = value` lines, keys {keys}). " + rules)
        seed, texts = d.seeded(t, [d.rng.choice([n // 5 for n in k.n]) for _ in range(10)], 2, fmt)
        cases = [(text, d.ns["report"](text, seed)) for text in texts]
        v = t.deliver(str(seed), WHAT)
        t.say(f"Output: {fmt}")
        t.expect_program("Every run uses the seed given above: hard-code it.", cases,
                         {"Python": d.src, "C": d.c_src()})
        t.solve(f'test -n "{v}"\nfor f in /app/solution.*; do sed -i "s/@@SEED@@/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        d = Setup(t)
        keys, rules, fmt = self.texts(k, d)
        seed, (text,) = d.seeded(t, [d.rng.choice(k.n)], 1, rules, fmt)
        where, out = {"estimate": ("/app/mc/params.txt", "/app/out/mc_result.txt"),
                      "interval": ("/app/mc/interval_run.txt", "/app/out/interval.txt"),
                      "checkpoints": ("/app/convergence/run.params", "/app/out/checkpoints.txt")}[t.variant]
        t.add_file(where, text)
        opening = {"estimate": "We need to reproduce a Monte Carlo result from our notebook exactly.",
                   "interval": "A report needs a confidence interval from a Monte Carlo run, reproduced exactly.",
                   "checkpoints": "We are checking how a Monte Carlo run converges and need its running result "
                                  "reproduced exactly."}[t.variant]
        t.say(f"{opening} The parameters are in "
              f"`{where}` (`key = value` lines, keys {keys}). " + rules)
        v = t.deliver(str(seed), WHAT)
        t.add_solution_file("mc.py", d.src)
        if t.partial_credit:  # one number graded by its relative error, not report lines
            # A slab's counts repeat for many seeds (a seed read off the fixture would often win): its number
            # is a continuous one instead.
            key = {"pi": "pi_estimate", "integral": "estimate", "slab": "mean_absorption_depth"}[k.mode]
            label = {"pi": "the pi estimate", "integral": "the integral estimate",
                     "slab": "the mean absorption depth (the average of the positions x at which the absorbed "
                             "particles were absorbed)"}[k.mode]
            if t.variant == "interval":
                key = "depth_high" if k.mode == "slab" else "high"
                label = {"pi": "the upper end `high` of the interval", "integral": "the upper end `high` of the "
                         "interval",
                         "slab": "instead of the transmission interval, the upper end of the 95% confidence "
                                 "interval of the mean absorption depth (the average of the positions x at which the "
                                 "absorbed particles were absorbed): that mean plus 1.96 times the sample standard "
                                 "deviation of those positions (dividing by absorbed - 1) divided by "
                                 "sqrt(absorbed)"}[k.mode]
            elif t.variant == "checkpoints":
                key = "first"
                label = {"pi": "only the pi estimate 4 * hits / n at the first checkpoint",
                         "integral": "only the integral estimate at the first checkpoint",
                         "slab": "only the mean absorption depth (the average of the positions x at which the "
                                 "absorbed particles were absorbed) over the particles up to the first "
                                 "checkpoint"}[k.mode]
            t.say(f"I need {label}.")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/mc.py --value {key} "{v}" '
                    f'< {where} > /app/out/{key}.txt')
            t.expect_number(f"/app/out/{key}.txt", d.ns["measure"](text, seed)[key], 1e-7, f"{label} (unrounded)")
            return
        t.say(f"Output format: {fmt}")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/mc.py "{v}" < {where} > {out}')
        t.expect_output(out, d.ns["report"](text, seed), "the result (format above)")
