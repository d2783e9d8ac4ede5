"""Reproduce a Monte Carlo result exactly: a specified linear congruential generator seeded with a
delivered seed drives hit-or-miss estimation of pi, a sample-mean integral with its standard error, or
a one-dimensional slab transport simulation (absorption, isotropic scattering, a collision cap) whose
draws must be consumed in exactly the stated order."""

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

LCGS = ((1103515245, 12345, 2 ** 31), (1664525, 1013904223, 2 ** 32), (22695477, 1, 2 ** 32), (69069, 1, 2 ** 32),
        (134775813, 1, 2 ** 32))
FUNCS = (("lambda x: math.exp(-x * x)", "exp(-x^2)", "exp(-x * x)"),
         ("lambda x: 1 / (1 + x * x)", "1 / (1 + x^2)", "1 / (1 + x * x)"),
         ("lambda x: math.sin(x) ** 2", "sin(x)^2", "pow(sin(x), 2)"),
         ("lambda x: x * math.exp(-x)", "x * exp(-x)", "x * exp(-x)"),
         ("lambda x: math.sqrt(x) * math.cos(x)", "sqrt(x) * cos(x)", "sqrt(x) * cos(x)"))
DECIMALS = {"pi_estimate": 6, "estimate": 6, "std_error": 6, "transmission": 6, "mean_collisions": 4}
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
        self.src = fill(REFERENCE, LCG=self.lcg, MODE=k.mode, FUNC=self.func, FIELDS=k.fields)
        self.ns = run_python(self.src)

    def c_src(self) -> str:
        a, c, m = self.lcg
        return fill(C_REFERENCE, CMODE=C_MODES[self.k.mode], CFUNC=self.c_func, A=a, C=c, M=m, C_TRIM=C_TRIM)

    def config(self, n: int, seed: int) -> str:
        """Parameters whose rounded results are safe from float noise (and, for the slab, every outcome
        occurs)."""
        k = self.k
        for _ in range(1000):
            text = params(self.rng, k, n)
            m = self.ns["measure"](text, seed)
            if all(safe(m[f], DECIMALS[f]) for f in k.fields if f in DECIMALS) and \
                    (k.mode != "slab" or min(m["transmitted"], m["reflected"], m["absorbed"]) > 0):
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
    levels = {0: Knobs(mode="pi", n=(10000, 20000, 25000, 40000), fields=("hits",)),
              1: Knobs(mode="pi", n=(10000, 20000, 25000, 40000), fields=("hits", "pi_estimate")),
              2: Knobs(mode="integral", n=(10000, 20000, 25000), fields=("estimate", "std_error")),
              3: Knobs(mode="slab", n=(2000, 4000, 5000), cap=False,
                       fields=("transmitted", "reflected", "absorbed", "transmission")),
              4: Knobs(mode="slab", n=(5000, 8000, 10000), cap=True,
                       fields=("transmitted", "reflected", "absorbed", "terminated", "transmission", "std_error",
                               "mean_collisions"))}

    def rules(self, k: Knobs, lcg: tuple[int, int, int], func: str) -> str:
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

    def texts(self, k: Knobs, d: Setup) -> tuple[str, str, str]:
        """(the parameter keys, the rules, the output format) as the instruction states them."""
        keys = {"pi": "`samples`", "integral": "`samples`, `a`, `b`",
                "slab": "`particles`, `thickness`, `sigma_t`, `sigma_a`" + (", `max_collisions`" if k.cap else "")}
        fmt = "`key=value` lines, in this order: " + ", ".join(FIELD_TEXT[f] for f in k.fields) + "."
        return keys[k.mode], self.rules(k, d.lcg, d.func_text), fmt

    def program_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        d = Setup(t)
        keys, rules, fmt = self.texts(k, d)
        t.say("Our group reruns the same Monte Carlo calculations with different parameters and wants them "
              "bit-for-bit reproducible. Write the calculation as a program that reads the parameters on standard "
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
        t.add_file("/app/mc/params.txt", text)
        t.say("We need to reproduce a Monte Carlo result from our notebook exactly. The parameters are in "
              f"`/app/mc/params.txt` (`key = value` lines, keys {keys}). " + rules)
        v = t.deliver(str(seed), WHAT)
        t.add_solution_file("mc.py", d.src)
        if t.partial_credit:  # one number graded by its relative error, not report lines
            # A slab's counts repeat for many seeds (a seed read off the fixture would often win): its number
            # is a continuous one instead.
            key = {"pi": "pi_estimate", "integral": "estimate", "slab": "mean_absorption_depth"}[k.mode]
            label = {"pi": "the pi estimate", "integral": "the integral estimate",
                     "slab": "the mean absorption depth (the average of the positions x at which the absorbed "
                             "particles were absorbed)"}[k.mode]
            t.say(f"I need {label}.")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/mc.py --value {key} "{v}" '
                    f'< /app/mc/params.txt > /app/out/{key}.txt')
            t.expect_number(f"/app/out/{key}.txt", d.ns["measure"](text, seed)[key], 1e-7, f"{label} (unrounded)")
            return
        t.say(f"Output format: {fmt}")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/mc.py "{v}" < /app/mc/params.txt '
                '> /app/out/mc_result.txt')
        t.expect_output("/app/out/mc_result.txt", d.ns["report"](text, seed), "the result (format above)")
