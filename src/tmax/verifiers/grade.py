#!/usr/bin/env python3
"""tmax grader: runs inside the verifier sandbox as /tests/grade.py SPEC.json (standard library only).

Writes /logs/verifier/reward.json with "reward" in [0, 1] and the metric behind it. Modes:
exact (exact text), lines (fraction of expected lines), number (relative error), protocol (HTTP +
TCP against a service the agent's /app/start.sh brings up), fuzz (program vs hidden reference
outputs), classifier (program vs hidden benign and malicious corpora).

The agent's programs are suspects: every build, program and service of theirs runs as SUSPECT, an
unprivileged uid of the sandbox that cannot read /tests (0700) nor write /logs/verifier, gets hidden
data only as its input, and is killed, with everything it started, before the reward is written.
"""

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter

LOGS = "/logs/verifier"
SUSPECT = 65532  # the uid the agent's code runs as
_started = []  # set once a suspect ran: kill them all before the reward


def _mapped(uid):
    """Whether this sandbox's user namespace has ``uid`` (a single-uid namespace does not)."""
    try:
        with open("/proc/self/uid_map") as f:
            return any(int(a) <= uid < int(a) + int(n) for a, _, n in (line.split() for line in f))
    except (OSError, ValueError):
        return False


ISOLATE = os.geteuid() == 0 and _mapped(SUSPECT)


def as_suspect():
    """preexec_fn: become SUSPECT (no groups, no capabilities: the uid change drops them)."""
    if ISOLATE:
        os.setgroups([])
        os.setresgid(SUSPECT, SUSPECT, SUSPECT)
        os.setresuid(SUSPECT, SUSPECT, SUSPECT)


def suspect_env(**extra):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TERM")}
    env.update(HOME="/tmp", **extra)
    return env


def hand_over(top="/app"):
    """The agent's work area belongs to the suspect (its service may write there); links not followed."""
    if not ISOLATE:
        return
    _started.append(True)
    for root, dirs, files in os.walk(top):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            try:
                os.lchown(name, SUSPECT, SUSPECT)
            except OSError:
                pass


def kill_suspects():
    """SIGKILL every process of SUSPECT (kill(-1) from a process of that uid), a few times over."""
    if not (ISOLATE and _started):
        return
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            try:
                as_suspect()
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
RUNNERS = {  # language -> (source file, build command or None, run command)
    "Python": ("solution.py", None, ["python3", "/app/solution.py"]),
    "Bash": ("solution.sh", None, ["bash", "/app/solution.sh"]),
    "C": ("solution.c", ["gcc", "-O2", "-o", "/tmp/prog_c", "/app/solution.c", "-lm"], ["/tmp/prog_c"]),
    "C++": ("solution.cpp", ["g++", "-O2", "-o", "/tmp/prog_cpp", "/app/solution.cpp"], ["/tmp/prog_cpp"]),
    "Rust": ("solution.rs", ["rustc", "-O", "-o", "/tmp/prog_rs", "/app/solution.rs"], ["/tmp/prog_rs"]),
    "Go": ("solution.go", ["go", "build", "-o", "/tmp/prog_go", "/app/solution.go"], ["/tmp/prog_go"]),
}


def norm(text):
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def finish(reward, **info):
    """reward.json holds numbers only (Harbor's flat object of named rewards); the rest goes to details.json."""
    kill_suspects()
    os.makedirs(LOGS, exist_ok=True)
    info["reward"] = round(max(0.0, min(1.0, float(reward))), 6)
    numbers = {k: float(v) for k, v in info.items() if isinstance(v, (int, float)) and v is not None}
    with open(os.path.join(LOGS, "reward.json"), "w") as f:
        json.dump(numbers, f, sort_keys=True)
    with open(os.path.join(LOGS, "details.json"), "w") as f:
        json.dump(info, f, sort_keys=True)
    print(json.dumps(info, sort_keys=True))
    sys.exit(0)


def lines_score(expected, got):
    exp, have = Counter(norm(expected).split("\n")), Counter(norm(got).split("\n"))
    matched = sum((exp & have).values())
    return matched / max(sum(exp.values()), sum(have.values()), 1)


def grade_exact(spec):
    got = read(spec["path"])
    if got is None:
        finish(0.0, error=f"{spec['path']} not found")
    finish(1.0 if norm(got) == norm(spec["expected"]) else 0.0)


def grade_lines(spec):
    got = read(spec["path"])
    if got is None:
        finish(0.0, error=f"{spec['path']} not found")
    score = lines_score(spec["expected"], got)
    finish(1.0 if score >= spec.get("threshold", 1.0) else score, metric=score)


def number_score(expected, text, rel_tol):
    try:
        value = float(text.strip().split()[0])
    except (ValueError, IndexError, AttributeError):
        return 0.0, None
    if not math.isfinite(value):
        return 0.0, None
    err = abs(value - expected) / max(abs(expected), 1e-12)
    if err <= rel_tol:
        return 1.0, err
    if rel_tol <= 0:
        return 0.0, err
    # Partial credit falls off with each decade of error past the tolerance, to 0 at 1000x.
    return max(0.0, 1.0 - math.log10(err / rel_tol) / 3.0), err


def grade_number(spec):
    got = read(spec["path"])
    if got is None:
        finish(0.0, error=f"{spec['path']} not found")
    score, err = number_score(spec["expected"], got, spec["rel_tol"])
    finish(score, metric=err)


def wait_port(port, deadline):
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def grade_protocol(spec):
    start = "/app/start.sh"
    if not os.path.exists(start):
        finish(0.0, error="/app/start.sh not found")
    hand_over()
    subprocess.Popen(["bash", start], cwd="/app", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=as_suspect, env=suspect_env())
    expected = norm(spec["expected"])
    deadline = time.time() + 20
    results = {}
    http_port, tcp_port = spec["http_port"], spec["tcp_port"]
    if wait_port(http_port, deadline):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/result", timeout=10) as r:
                results["http"] = norm(r.read().decode("utf-8", "replace")) == expected
        except Exception as e:  # noqa: BLE001 - any failure is a wrong answer
            results["http"] = False
            results["http_error"] = str(e)[:200]
    else:
        results["http"] = False
    if wait_port(tcp_port, deadline):
        try:
            with socket.create_connection(("127.0.0.1", tcp_port), timeout=10) as s:
                s.sendall(b"RESULT\n")
                chunks = []
                while True:
                    data = s.recv(65536)
                    if not data:
                        break
                    chunks.append(data)
            results["tcp"] = norm(b"".join(chunks).decode("utf-8", "replace")) == expected
        except Exception as e:  # noqa: BLE001
            results["tcp"] = False
            results["tcp_error"] = str(e)[:200]
    else:
        results["tcp"] = False
    ok = [results["http"], results["tcp"]]
    finish(sum(ok) / len(ok), **{k: v for k, v in results.items()})


def build(lang):
    src, cmd, run = RUNNERS[lang]
    if not os.path.exists("/app/" + src):
        return None, f"/app/{src} not found"
    hand_over()
    if cmd:
        env = suspect_env(GOCACHE="/tmp/gocache", GOPATH="/tmp/gopath", GO111MODULE="off")
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, preexec_fn=as_suspect,
                           cwd="/tmp")  # not the grader's /tests, which the suspect cannot enter
        if p.returncode != 0:
            return None, f"build failed: {p.stderr[-500:]}"
    return run, ""


def run_prog(run, data, timeout=10):
    try:
        p = subprocess.run(run, input=data.encode(), capture_output=True, timeout=timeout, cwd="/tmp",
                           preexec_fn=as_suspect, env=suspect_env())
        return p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return None, ""


def languages(spec):
    langs = spec["languages"]
    if langs == ["any"]:
        found = [lang for lang, (src, _, _) in RUNNERS.items() if os.path.exists("/app/" + src)]
        return found[:1] or ["Python"]
    return langs


def grade_fuzz(spec):
    info = {}
    total_ok = True
    for lang in languages(spec):
        run, err = build(lang)
        if run is None:
            finish(0.0, error=f"{lang}: {err}")
        matched = 0
        for inp, out in spec["cases"]:
            code, got = run_prog(run, inp)
            if code == 0 and got.rstrip("\n") == out.rstrip("\n"):
                matched += 1
        info[f"{lang}_matched"] = matched / len(spec["cases"])
        total_ok = total_ok and matched == len(spec["cases"])
    finish(1.0 if total_ok else 0.0, **info)


def grade_classifier(spec):
    info = {}
    total_ok = True
    for lang in languages(spec):
        run, err = build(lang)
        if run is None:
            finish(0.0, error=f"{lang}: {err}")
        kept = sum(1 for item in spec["clean"] if run_prog(run, item)[0] == 0)
        caught = sum(1 for item in spec["malicious"] if run_prog(run, item)[0] not in (0, None))
        info[f"{lang}_benign_kept"] = kept / len(spec["clean"])
        info[f"{lang}_malicious_rejected"] = caught / len(spec["malicious"])
        total_ok = total_ok and kept == len(spec["clean"]) and caught == len(spec["malicious"])
    finish(1.0 if total_ok else 0.0, **info)


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    {"exact": grade_exact, "lines": grade_lines, "number": grade_number, "protocol": grade_protocol,
     "fuzz": grade_fuzz, "classifier": grade_classifier}[spec["mode"]](spec)


if __name__ == "__main__":
    main()
