"""Reproduce a Monte Carlo result exactly: a specified linear congruential generator seeded with a
delivered seed drives hit-or-miss estimation of pi, a sample-mean integral with its standard error, or
a one-dimensional slab transport simulation (absorption, isotropic scattering, a collision cap) whose
draws must be consumed in exactly the stated order."""

from __future__ import annotations

import math

from tmax.families.base import Family, TaskBuilder, register

REFERENCE = r'''
import math
import sys

SEED = __SEED__
A, C, M = __LCG__
MODE = "__MODE__"
FUNC = __FUNC__


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
                break
            if coll == cap:
                out["terminated"] += 1
                break
            mu = 2 * rng.next() - 1
    tr = out["transmitted"] / n
    out["transmission"] = tr
    out["std_error"] = math.sqrt(tr * (1 - tr) / n)
    out["mean_collisions"] = collisions_of_transmitted / out["transmitted"] if out["transmitted"] else 0.0
    return out


FORMATS = {"hits": "%d", "pi_estimate": "%.6f", "estimate": "%.6f", "std_error": "%.6f", "transmitted": "%d",
           "reflected": "%d", "absorbed": "%d", "terminated": "%d", "transmission": "%.6f",
           "mean_collisions": "%.4f"}
FIELDS = __FIELDS__


def measure(text, seed=None):
    return run(parse(text), SEED if seed is None else seed)


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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODE_PI 0
#define MODE_INTEGRAL 1
#define MODE_SLAB 2
static const int MODE = __CMODE__;
static const unsigned long long SEED = __SEED__ULL;
static const unsigned long long A = __A__ULL, C = __C__ULL, M = __M__ULL;
static unsigned long long state;

static double next_u(void) {
    state = (A * state + C) % M; /* A < 2^31 and state < 2^32: no overflow */
    return ((double)state + 0.5) / (double)M;
}

static double func(double x) { return __CFUNC__; }

static double param(char keys[][64], double *vals, int n, const char *key, double dflt) {
    for (int i = 0; i < n; i++)
        if (strcmp(keys[i], key) == 0) return vals[i];
    return dflt;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
    return s;
}

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


@register
class LcgMonteCarlo(Family):
    name = "lcg_monte_carlo"
    domain = "scientific_computing"
    skill_types = ("Stochastic Methods", "Simulation")
    primitive_skills = ("linear congruential generators", "Monte Carlo estimation", "particle transport sampling",
                        "standard error estimation", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    levels = {1: {"mode": "pi", "n": (10000, 20000, 25000, 40000), "fields": ["hits", "pi_estimate"]},
              2: {"mode": "integral", "n": (10000, 20000, 25000), "fields": ["estimate", "std_error"]},
              3: {"mode": "slab", "n": (2000, 4000, 5000), "cap": False,
                  "fields": ["transmitted", "reflected", "absorbed", "transmission"]},
              4: {"mode": "slab", "n": (5000, 8000, 10000), "cap": True,
                  "fields": ["transmitted", "reflected", "absorbed", "terminated", "transmission", "std_error",
                             "mean_collisions"]}}

    def params(self, rng, k: dict, n: int) -> str:
        if k["mode"] == "pi":
            return f"samples = {n}\n"
        if k["mode"] == "integral":
            a = rng.randrange(0, 20) / 10
            return f"samples = {n}\na = {a:g}\nb = {a + rng.randrange(5, 30) / 10:g}\n"
        st = rng.randrange(5, 30) / 10
        text = (f"particles = {n}\nthickness = {rng.randrange(10, 40) / 10:g}\nsigma_t = {st:g}\n"
                f"sigma_a = {st * rng.randrange(10, 60) / 100:.3g}\n")
        if k["cap"]:
            text += f"max_collisions = {rng.randint(3, 8)}\n"
        return text

    def rules(self, k: dict, lcg: tuple[int, int, int], func: str) -> str:
        a, c, m = lcg
        s = (f"The generator is the linear congruential generator x_(i+1) = ({a} * x_i + {c}) mod {m}, with x_0 the "
             f"seed (given below); every draw advances it once and yields u = (x_(i+1) + 0.5) / {m}, so 0 < u < 1. "
             "Use exact integer arithmetic for the recurrence and double precision for everything else, and "
             "consume the draws in exactly the order described. ")
        if k["mode"] == "pi":
            s += ("Estimate pi by hit-or-miss: for each of `samples` points draw u, then v; the point is a hit when "
                  "u*u + v*v <= 1.")
        elif k["mode"] == "integral":
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
            if k["cap"]:
                s += (" Otherwise, if this was its `max_collisions`-th collision it is terminated (ends, no more "
                      "draws).")
            s += (" Otherwise it scatters: draw u and set mu = 2 * u - 1, then continue. Particles are simulated one "
                  "after another from the same generator.")
            if "std_error" in k["fields"]:
                s += " `std_error` is sqrt(transmission * (1 - transmission) / particles)."
        return s

    def build(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        lcg = rng.choice(LCGS)
        seed = rng.randrange(1000, 2 ** 31)
        func, func_text, c_func = rng.choice(FUNCS)
        src = (REFERENCE.replace("__LCG__", repr(lcg)).replace("__MODE__", k["mode"]).replace("__FUNC__", func)
               .replace("__FIELDS__", repr(k["fields"])))
        ns: dict = {}
        exec(src.replace("__SEED__", str(seed)), ns)  # noqa: S102 - our own reference program

        def config(n: int) -> str:
            while True:
                text = self.params(rng, k, n)
                m = ns["measure"](text)
                if all(safe(m[f], DECIMALS[f]) for f in k["fields"] if f in DECIMALS) and \
                        (k["mode"] != "slab" or min(m["transmitted"], m["reflected"], m["absorbed"]) > 0):
                    return text

        keys = {"pi": "`samples`", "integral": "`samples`, `a`, `b`",
                "slab": "`particles`, `thickness`, `sigma_t`, `sigma_a`"
                        + (", `max_collisions`" if k.get("cap") else "")}
        fmt = "`key=value` lines, in this order: " + ", ".join(FIELD_TEXT[f] for f in k["fields"]) + "."
        what = "the generator seed"
        if t.axes.verifier == "fuzz_equivalence":
            cases = []
            for _ in range(10):
                text = config(rng.choice([n // 5 for n in k["n"]]))
                cases.append((text, ns["report"](text)))
            t.say("Our group reruns the same Monte Carlo calculations with different parameters and wants them "
                  "bit-for-bit reproducible. Write the calculation as a program that reads the parameters on standard "
                  f"input (`key = value` lines, keys {keys[k['mode']]}). " + self.rules(k, lcg, func_text))
            v = t.deliver(str(seed), what)
            t.say(f"Output: {fmt}")
            c_mode = {"pi": "MODE_PI", "integral": "MODE_INTEGRAL", "slab": "MODE_SLAB"}[k["mode"]]
            c_src = (C_REFERENCE.replace("__CMODE__", c_mode).replace("__CFUNC__", c_func)
                     .replace("__A__", str(lcg[0])).replace("__C__", str(lcg[1])).replace("__M__", str(lcg[2])))
            t.expect_program("Every run uses the seed given above: hard-code it.", cases,
                             {"Python": src, "C": c_src})
            t.solve(f'test -n "{v}"\nfor f in /app/solution.*; do sed -i "s/__SEED__/{v}/" "$f"; done')
            return
        text = config(rng.choice(k["n"]))
        t.add_file("/app/mc/params.txt", text)
        t.say("We need to reproduce a Monte Carlo result from our notebook exactly. The parameters are in "
              f"`/app/mc/params.txt` (`key = value` lines, keys {keys[k['mode']]}). " + self.rules(k, lcg, func_text))
        v = t.deliver(str(seed), what)
        t.add_solution_file("mc.py", src.replace("__SEED__", "None"))
        if t.axes.verifier == "metric_threshold":
            key = {"pi": "pi_estimate", "integral": "estimate", "slab": "transmission"}[k["mode"]]
            label = {"pi": "the pi estimate", "integral": "the integral estimate",
                     "slab": "the transmission fraction (transmitted / particles)"}[k["mode"]]
            t.say(f"I need {label}.")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/mc.py --value {key} "{v}" '
                    f'< /app/mc/params.txt > /app/out/{key}.txt')
            t.expect_number(f"/app/out/{key}.txt", ns["measure"](text)[key], 1e-7, f"{label} (unrounded)")
            return
        t.say(f"Output format: {fmt}")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/mc.py "{v}" < /app/mc/params.txt '
                '> /app/out/mc_result.txt')
        t.expect_output("/app/out/mc_result.txt", ns["report"](text), "the result (format above)")
