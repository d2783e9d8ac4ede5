#!/usr/bin/env python3
"""tmax grader: runs inside the verifier sandbox as /tests/grade.py SPEC.json (standard library only).

Writes /logs/verifier/reward.json with "reward" in [0, 1] and the metric behind it. Modes:
exact (exact text), lines (F1 of matched lines, in order or as a multiset), number (relative error,
partial credit to 0 at ten times the tolerance), protocol (HTTP + TCP against a service the agent's
/app/start.sh brings up), fuzz (program vs hidden reference outputs), classifier (program vs hidden
benign and malicious corpora). The reward curves are in README.md beside this file.

Everything the agent made is hostile input: an output file is read only if it is a regular file
reached without a symlink (FIFOs never block), and at most MAX_BYTES of it; a program's output is
capped the same way. Run as ``python3 -I`` from a directory that is not the agent's.

The agent's programs are suspects: every build, program and service of theirs runs as SUSPECT, an
unprivileged uid of the sandbox that cannot read /tests (0700) nor write /logs/verifier, gets hidden
data only as its input, and is killed, with everything it started, before the reward is written.
"""

import errno
import json
import math
import os
import resource
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from itertools import zip_longest

LOGS = "/logs/verifier"
MAX_BYTES = 16 << 20  # the most of any one answer (file, HTTP body, TCP reply, program output) read
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


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def read_output(path, limit=MAX_BYTES):
    """(text, None) or (None, error) for an answer file the agent wrote.

    Opened one component at a time with O_NOFOLLOW from directory descriptors, so no symlink anywhere
    on the path is followed (not even one swapped in after a check), with O_NONBLOCK so a FIFO cannot
    hang the grader; only a regular file of at most ``limit`` bytes is read."""
    parts = [p for p in os.path.normpath(path).split("/") if p]
    if not path.startswith("/") or not parts:
        return None, f"{path}: not an absolute file path"
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            where = "/" + "/".join(parts[:i + 1])
            try:
                st = os.lstat(name, dir_fd=fd)
            except FileNotFoundError:
                return None, f"{path} not found"
            except OSError as e:
                return None, f"{where}: {e.strerror}"
            if stat.S_ISLNK(st.st_mode):
                return None, f"{where} is a symbolic link (not followed)"
            if not last and not stat.S_ISDIR(st.st_mode):
                return None, f"{where} is not a directory"
            if last and not stat.S_ISREG(st.st_mode):
                return None, f"{path} is {_kind(st.st_mode)}, not a regular file"
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                nfd = os.open(name, flags, dir_fd=fd)
            except OSError as e:  # replaced since the lstat: ELOOP is a symlink now
                why = "is a symbolic link (not followed)" if e.errno in (errno.ELOOP, errno.ENOTDIR) else e.strerror
                return None, f"{where} {why}"
            os.close(fd)
            fd = nfd
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"{path} is {_kind(st.st_mode)}, not a regular file"
        if st.st_size > limit:
            return None, f"{path} is too large ({st.st_size} bytes; at most {limit})"
        chunks, size = [], 0
        while size <= limit:
            data = os.read(fd, min(1 << 20, limit + 1 - size))
            if not data:
                break
            chunks.append(data)
            size += len(data)
        if size > limit:  # grew while being read
            return None, f"{path} is too large (over {limit} bytes)"
        return b"".join(chunks).decode("utf-8", "replace"), None
    finally:
        os.close(fd)


def _write_json(name, data):
    """Write LOGS/name whole or not at all: a temp file beside it, then rename over it."""
    fd, tmp = tempfile.mkstemp(dir=LOGS, prefix=f".{name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, sort_keys=True)
        os.chmod(tmp, 0o644)  # as a plain write would leave it (mkstemp makes 0600)
        os.replace(tmp, os.path.join(LOGS, name))
    except BaseException:
        os.unlink(tmp)
        raise


def finish(reward, **info):
    """reward.json holds numbers only (Harbor's flat object of named rewards); the rest goes to details.json.
    Every suspect is dead before either is written."""
    kill_suspects()
    os.makedirs(LOGS, exist_ok=True)
    info["reward"] = round(max(0.0, min(1.0, float(reward))), 6)
    numbers = {k: float(v) for k, v in info.items() if isinstance(v, (int, float)) and v is not None}
    _write_json("details.json", info)
    _write_json("reward.json", numbers)
    print(json.dumps(info, sort_keys=True))
    sys.exit(0)


def _lines(text):
    """The normalised lines of ``text`` (as norm() splits them), one at a time: a 16 MiB answer of
    short lines is never held as a list."""
    text = text.replace("\r\n", "\n").rstrip()  # == norm(): trailing blank lines and whitespace go
    if not text:
        return
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield text[start:].rstrip()
            return
        yield text[start:end].rstrip()
        start = end + 1


def lcs_length(expected, got):
    """Length of the longest common subsequence of two line sequences, with one bit per expected line
    (the bit-parallel LCS recurrence: a big-int addition per answer line that occurs in ``expected``)."""
    masks = {}
    for i, line in enumerate(expected):
        masks[line] = masks.get(line, 0) | (1 << i)
    full = (1 << len(expected)) - 1
    v = full  # a 0 bit marks a matched expected position
    for line in got:
        m = masks.get(line)
        if m:
            u = v & m
            v = ((v + u) | (v - u)) & full
    return len(expected) - bin(v).count("1")


def lines_score(expected, got, ordered=True):
    """(F1, precision, recall) of the answer's lines against the expected ones. Matched lines are the
    longest common subsequence when the order is graded, else the multiset intersection; so a superset
    loses precision, a subset recall, and only the exact line list scores 1."""
    exp = list(_lines(expected))
    need, have = Counter(exp), Counter()
    n_got = 0

    def answer():  # streamed: answer lines not in ``expected`` only count against precision
        nonlocal n_got
        for line in _lines(got):
            n_got += 1
            if line in need:
                have[line] += 1
                yield line

    if ordered:
        matched = lcs_length(exp, answer())
    else:
        for _ in answer():
            pass
        matched = sum((need & have).values())
    if not exp and not n_got:
        return 1.0, 1.0, 1.0
    precision = matched / n_got if n_got else 0.0
    recall = matched / len(exp) if exp else 0.0
    f1 = 2 * matched / (len(exp) + n_got)
    return f1, precision, recall


def grade_exact(spec):
    got, err = read_output(spec["path"])
    if got is None:
        finish(0.0, error=err)
    end = object()  # streamed, so a 16 MiB answer of empty lines is never held as a list
    same = all(a == b for a, b in zip_longest(_lines(got), _lines(spec["expected"]), fillvalue=end))
    finish(1.0 if same else 0.0)


def grade_lines(spec):
    got, err = read_output(spec["path"])
    if got is None:
        finish(0.0, error=err)
    f1, precision, recall = lines_score(spec["expected"], got, spec.get("ordered", True))
    finish(1.0 if f1 >= spec.get("threshold", 1.0) else f1, metric=f1, precision=precision, recall=recall)


def number_score(expected, text, rel_tol):
    try:
        value = float(text.split(None, 1)[0])  # the first token only
    except (ValueError, IndexError, AttributeError):
        return 0.0, None
    if not math.isfinite(value):
        return 0.0, None
    err = abs(value - expected) / max(abs(expected), 1e-12)
    if err <= rel_tol:
        return 1.0, err
    if rel_tol <= 0:
        return 0.0, err
    # Partial credit over one decade past the tolerance: 1 at rel_tol, 0.5 at ~3.2x, 0 from 10x on.
    return max(0.0, 1.0 - math.log10(err / rel_tol)), err


def grade_number(spec):
    got, err = read_output(spec["path"])
    if got is None:
        finish(0.0, error=err)
    score, err = number_score(spec["expected"], got, spec["rel_tol"])
    finish(score, metric=err)


def suspects_alive():
    """Whether any process of SUSPECT still runs (one that might yet open a port)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid == SUSPECT:
                return True
        except OSError:
            pass
    return False


def wait_port(port, deadline, starter=None):
    """Until ``deadline``, for something to listen on ``port``; stops early once ``starter`` (the
    agent's start.sh) has exited and left no process behind: nothing can listen later."""
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            if starter is not None and ISOLATE and starter.poll() is not None and not suspects_alive():
                return False
            time.sleep(0.2)
    return False


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a 3xx is the service's answer (a wrong one), not a pointer to follow


def _take(read, deadline):
    """Bytes from ``read(n)`` until EOF: at most MAX_BYTES, and only until ``deadline`` (a trickle of
    bytes cannot hold the grader past it)."""
    chunks, size = [], 0
    while True:
        if time.time() > deadline:
            raise TimeoutError("answer not complete in time")
        data = read(65536)
        if not data:
            return b"".join(chunks)
        chunks.append(data)
        size += len(data)
        if size > MAX_BYTES:
            raise ValueError(f"answer larger than {MAX_BYTES} bytes")


def answer_matches(body, expected):
    """The answer equals the expected text (trailing whitespace aside). Where the expected text is not
    empty, neither may the answer be: an empty reply is never taken for a result."""
    want, got = norm(expected), norm(body)
    return got == want and (got != "" or want == "")


def http_answer(port, deadline):
    """(status, body) of GET /result; redirects are not followed and no proxy is used."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)
    try:
        with opener.open(f"http://127.0.0.1:{port}/result", timeout=10) as r:
            return r.status, _take(r.read1, deadline).decode("utf-8", "replace")
    except urllib.error.HTTPError as e:  # 3xx, 4xx, 5xx: the body does not count
        e.close()
        return e.code, ""


def tcp_answer(port, deadline):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"RESULT\n")
        return _take(s.recv, deadline).decode("utf-8", "replace")


def grade_protocol(spec):
    start = "/app/start.sh"
    if not os.path.exists(start):
        finish(0.0, error="/app/start.sh not found")
    hand_over()
    starter = subprocess.Popen(["bash", start], cwd="/app", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=as_suspect,
                               env=suspect_env())
    expected = spec["expected"]
    deadline = time.time() + 20
    results = {"http": False, "tcp": False}
    http_port, tcp_port = spec["http_port"], spec["tcp_port"]
    if wait_port(http_port, deadline, starter):
        try:
            status, body = http_answer(http_port, time.time() + 15)
            # Right only with status 200 and the exact body.
            results["http"] = status == 200 and answer_matches(body, expected)
            if status != 200:
                results["http_error"] = f"HTTP status {status}, expected 200"
        except Exception as e:  # noqa: BLE001 - any failure is a wrong answer
            results["http_error"] = str(e)[:200]
    else:
        results["http_error"] = f"nothing listening on port {http_port}"
    if wait_port(tcp_port, deadline, starter):
        try:
            results["tcp"] = answer_matches(tcp_answer(tcp_port, time.time() + 15), expected)
        except Exception as e:  # noqa: BLE001
            results["tcp_error"] = str(e)[:200]
    else:
        results["tcp_error"] = f"nothing listening on port {tcp_port}"
    ok = [results["http"], results["tcp"]]
    finish(sum(ok) / len(ok), **results)


def _suspect_limited():
    """preexec_fn for an answer program: SUSPECT, and no file (its stdout included) over MAX_BYTES."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_BYTES, MAX_BYTES))
    as_suspect()


def build(lang):
    src, cmd, run = RUNNERS[lang]
    if not os.path.exists("/app/" + src):
        return None, f"/app/{src} not found"
    hand_over()
    if cmd:
        env = suspect_env(GOCACHE="/tmp/gocache", GOPATH="/tmp/gopath", GO111MODULE="off")
        # Compiler messages go to a file, of which only the tail is read: source can make them huge.
        with tempfile.TemporaryFile() as log:
            try:
                p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, timeout=300, env=env,
                                   preexec_fn=as_suspect, cwd="/tmp")  # not /tests, which the suspect cannot enter
            except subprocess.TimeoutExpired:
                return None, "build timed out"
            finally:
                kill_suspects()
            if p.returncode != 0:
                log.seek(max(0, log.tell() - 500))
                return None, f"build failed: {log.read().decode('utf-8', 'replace')}"
    return run, ""


def run_prog(run, data, timeout=10):
    """(exit status or None on timeout, stdout) of one run on ``data``. Input and output are unlinked
    files of the grader's, not pipes (a background child holding a pipe cannot stall the grader);
    the output is capped by RLIMIT_FSIZE; whatever the run left behind is killed before the next."""
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout:
        fin.write(data.encode())
        fin.seek(0)
        try:
            p = subprocess.run(run, stdin=fin, stdout=fout, stderr=subprocess.DEVNULL, timeout=timeout, cwd="/tmp",
                               preexec_fn=_suspect_limited, env=suspect_env(), start_new_session=True)
            code = p.returncode
        except subprocess.TimeoutExpired:
            code = None
        finally:
            kill_suspects()
        if code is None:
            return None, ""
        fout.seek(0)
        return code, fout.read(MAX_BYTES).decode("utf-8", "replace")


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
    os.chdir("/")  # never the agent's /app: nothing there is looked up relative to the grader
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    grade = {"exact": grade_exact, "lines": grade_lines, "number": grade_number, "protocol": grade_protocol,
             "fuzz": grade_fuzz, "classifier": grade_classifier}[spec["mode"]]
    try:
        grade(spec)
    except Exception as e:  # noqa: BLE001 - a crash is reward 0, still written after the suspects die
        finish(0.0, error=f"grader error: {type(e).__name__}: {str(e)[:300]}")


if __name__ == "__main__":
    main()
