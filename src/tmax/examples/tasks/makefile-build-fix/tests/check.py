"""Checks for makefile-build-fix (all must pass).

1. src/ and include/ are unchanged (sha256 in sources.sha256).
2. `make clean` removes build/; `make -j8` from scratch builds build/calc and the four
   objects build/{main,lexer,eval,format}.o; the binary gives the known answers.
3. `make -q` reports up to date after a build.
4. Minimal incremental rebuilds. Mtimes are set explicitly (sources old, build outputs
   newer), then one input is touched and `make` is run; the set of recompiled objects
   must be exactly the expected one (include graph: main.c -> eval.h -> lexer.h,
   main.c -> format.h, eval.c -> eval.h, lexer.c -> lexer.h, format.c -> format.h).
"""
import hashlib
import os
import subprocess
import sys
import time

ROOT = "/app/calc"
OBJS = ["main", "lexer", "eval", "format"]
CASES = [("1+2*3", "7"), ("2^3^2 + sqrt(16)", "516"), ("-(3-5)*4/8", "1"), ("10/4", "2.5"),
         ("ln(2.718281828459045)*3", "3"), ("2^0.5", "1.414213562")]
INCREMENTAL = [
    (None, set()),
    ("include/lexer.h", {"main", "lexer", "eval"}),
    ("include/eval.h", {"main", "eval"}),
    ("include/format.h", {"main", "format"}),
    ("src/format.c", {"format"}),
    ("src/main.c", {"main"}),
]
problems = []
SUSPECT = "65532"  # the agent's code runs as this uid: no /tests, no /logs/verifier, killed before we return
AS_SUSPECT = ["setpriv", f"--reuid={SUSPECT}", f"--regid={SUSPECT}", "--clear-groups", "--inh-caps=-all",
              "env", "HOME=/tmp"]


def kill_suspects():
    for _ in range(3):
        subprocess.run(["pkill", "-9", "-U", SUSPECT], check=False)


def make(*args):
    """The agent's Makefile runs as the suspect, which owns the project tree."""
    subprocess.run(["chown", "-R", "-h", f"{SUSPECT}:{SUSPECT}", ROOT], check=False)
    return subprocess.run(AS_SUSPECT + ["make", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def sha(rel):
    with open(os.path.join(ROOT, rel), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    expected = {}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sources.sha256")) as f:
        for line in f:
            d, rel = line.split()
            expected[rel] = d
    for rel, d in expected.items():
        if not os.path.isfile(os.path.join(ROOT, rel)) or sha(rel) != d:
            problems.append("%s was modified or removed" % rel)
    if problems:
        return

    r = make("clean")
    if r.returncode != 0 or os.path.exists(os.path.join(ROOT, "build")):
        problems.append("`make clean` failed or left build/ behind: %s" % r.stderr[-300:])
        return
    r = make("-j8")
    if r.returncode != 0:
        problems.append("`make -j8` from scratch failed:\n%s" % (r.stdout + r.stderr)[-1500:])
        return
    missing = [o for o in ["calc"] + [x + ".o" for x in OBJS] if not os.path.isfile(os.path.join(ROOT, "build", o))]
    if missing:
        problems.append("missing build outputs: %s" % missing)
        return
    for expr, want in CASES:
        r = subprocess.run(AS_SUSPECT + [os.path.join(ROOT, "build/calc"), expr], capture_output=True, text=True, timeout=10)
        if r.returncode != 0 or r.stdout.strip() != want:
            problems.append("calc %r -> %r (rc %d), want %r" % (expr, r.stdout.strip(), r.returncode, want))
    r = subprocess.run(AS_SUSPECT + [os.path.join(ROOT, "build/calc"), "(1+2"], capture_output=True, text=True, timeout=10)
    if r.returncode != 1:
        problems.append("calc '(1+2' should fail with exit code 1")
    if make("-q").returncode != 0:
        problems.append("`make -q` says not up to date right after a build")

    for touched, want in INCREMENTAL:
        now = time.time()
        for dirpath, _, files in os.walk(ROOT):
            for n in files:
                p = os.path.join(dirpath, n)
                t = now - 500 if os.path.relpath(p, ROOT).startswith("build" + os.sep) else now - 1000
                os.utime(p, (t, t), follow_symlinks=False)
        if touched:
            os.utime(os.path.join(ROOT, touched), (now - 10, now - 10))
        r = make()
        if r.returncode != 0:
            problems.append("`make` after touching %s failed: %s" % (touched, r.stderr[-500:]))
            continue
        rebuilt = {o for o in OBJS if os.path.getmtime(os.path.join(ROOT, "build", o + ".o")) > now - 100}
        relinked = os.path.getmtime(os.path.join(ROOT, "build", "calc")) > now - 100
        if rebuilt != want or relinked != bool(want):
            problems.append("after touching %s: recompiled %s (want %s), relinked %s (want %s)" % (
                touched, sorted(rebuilt), sorted(want), relinked, bool(want)))
        if make("-q").returncode != 0:
            problems.append("`make -q` not up to date after incremental build (%s)" % touched)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001
        problems.append("checker error: %r" % e)
    for p in problems:
        print("FAIL", p)
    if not problems:
        print("ok   clean build, outputs, incremental rebuilds, clean")
    sys.exit(1 if problems else 0)
