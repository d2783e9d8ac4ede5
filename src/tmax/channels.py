"""Channel-skip check: can a task's delivered value be had without going through its fixture channel?

A fixture (``tmax.fixtures``) hands the agent a value through a channel: OCR of an image, decoding a
recording, probing a binary, fixing a package, starting services. If the same value can be read off
the built environment (a leftover render input, a plaintext table, a blob next to its mask), a policy
learns to skip the channel. :func:`channel_skip`:

1. finds the delivered values by running the reference solution up to its last ``V<n>=`` line in
   the built environment;
2. collects every plausible candidate of the same shape (runs of capital letters, or of digits) from
   what the agent sees: the instruction and every file the task's setup added to the image, with the
   decodings a shortcut-seeking agent would try (single-byte XOR and additive shifts over binaries,
   integer lists, hex and base64 blobs; Caesar shifts and upper-casing of words);
3. fails at once if a true value is among them (no run needed: that candidate wins);
4. otherwise runs the reference solution with each delivered value replaced by each of the most
   plausible candidates, through the real trial machinery (agent sandbox, then the verifier on the
   pristine environment); any reward above 0 means the value does not gate the reward.

For ``text_only`` the file the oracle reads the value from is the channel itself and is not a source.
Values under :data:`MIN_PROTECTED` characters are guessable by enumeration whatever the channel, so
their presence among the candidates is reported but not counted. Byte-wise decodings of a binary
count only runs long enough that chance would rarely spell them (:func:`chance_floor`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import re
import shlex
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tmax.images import ImageError, task_environment
from tmax.sandbox import DEFAULT_BACKEND, Bind, SandboxError, get_backend
from tmax.task import TaskError, load_task

MIN_PROTECTED = 4
MAX_FILE_BYTES = 4 << 20  # read at most this much of one file
MAX_BRUTE_BYTES = 256 << 10  # byte-wise XOR/shift brute force only on blobs up to this size
CHANCE_ODDS = 1e-3  # runs that byte-wise decodings of a binary spell by chance this often are not evidence
MAX_LISTS = 400  # integer lists decoded per file
MAX_VALUE_LEN = 24
VAR_LINE = re.compile(r"^(V\d+)=")
MARK = "TMAXVALUE"

CAPS = re.compile(rb"[A-Z]+")
DIGITS = re.compile(rb"[0-9]+")
WORDS = re.compile(rb"[A-Za-z]{4,}")
INT_LIST = re.compile(rb"\d{1,5}(?:\s*[,;]\s*\d{1,5}|[ \t]+\d{1,5}){2,}")
HEX_BLOB = re.compile(rb"\b(?:[0-9a-fA-F]{2}){4,}\b")
B64_BLOB = re.compile(rb"[A-Za-z0-9+/]{12,}={0,2}")
XOR_TABLES = [bytes(i ^ k for i in range(256)) for k in range(256)]
ADD_TABLES = [bytes((i + k) & 0xFF for i in range(256)) for k in range(256)]
# For whole binaries zero bytes stay zero: they pad and separate data there, and a decoded filler must
# not run into the value.
XOR_TABLES_BIN = [b"\0" + t[1:] for t in XOR_TABLES]
ADD_TABLES_BIN = [b"\0" + t[1:] for t in ADD_TABLES]


@dataclass
class ChannelSkipResult:
    task: str
    ok: bool
    fixture: str = ""
    values: dict[str, str] = field(default_factory=dict)  # V1 -> the delivered value
    candidates_tried: list[str] = field(default_factory=list)  # "V1=CANDIDATE" run through the verifier
    n_candidates: int = 0  # distinct candidates collected, all values together
    beaten_by: str = ""  # the candidate that got a reward without the channel
    beaten_how: str = ""  # where it came from (file and decoding), or the reward it scored
    rewards: dict[str, float | None] = field(default_factory=dict)
    reason: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Candidate:
    text: str
    how: str  # first source: "<file>: <decoding>"
    count: int = 1
    rank: int = 0  # 0: read as is, 1: simple decoding


# -- candidate collection ----------------------------------------------------------------------

def _shape_re(value: str) -> re.Pattern:
    return DIGITS if value.isdigit() else CAPS


def _trimmed(run: bytes) -> Iterator[bytes]:
    """A run and the run without a repeated filler at either end: a decoded fixed-size buffer pads the
    value with copies of the key byte, which may fall in the shape too."""
    yield run
    for r in (run.rstrip(run[-1:]), run.lstrip(run[:1])):
        if r and r != run:
            yield r


class _Pool:
    def __init__(self, shape: re.Pattern):
        self.shape = shape
        self.found: dict[str, Candidate] = {}

    def add(self, text: bytes | str, how: str, rank: int) -> None:
        s = text.decode("ascii") if isinstance(text, bytes) else text
        if not 1 <= len(s) <= MAX_VALUE_LEN:
            return
        c = self.found.get(s)
        if c is None:
            self.found[s] = Candidate(s, how, 1, rank)
        else:
            c.count += 1
            c.rank = min(c.rank, rank)

    def runs(self, data: bytes, how: str, rank: int, minlen: int = 1) -> None:
        for m in self.shape.findall(data):
            if len(m) >= minlen:
                for r in _trimmed(m):
                    if len(r) >= minlen:
                        self.add(r, how, rank)

    def brute(self, data: bytes, how: str, binary: bool = False) -> None:
        """Every single-byte XOR and additive shift of ``data``: the encodings a quick look tries."""
        if not data or len(data) > MAX_BRUTE_BYTES:
            return
        xor, add = (XOR_TABLES_BIN, ADD_TABLES_BIN) if binary else (XOR_TABLES, ADD_TABLES)
        minlen = chance_floor(len(data)) if binary else MIN_PROTECTED
        xor_hits, add_hits = self._hits(data, binary)
        for k in range(1, 256):
            if xor_hits[k] >= minlen:
                self.runs(data.translate(xor[k]), f"{how} xor {k}", 1, minlen)
            if add_hits[k] >= minlen:
                self.runs(data.translate(add[k]), f"{how} +{k} mod 256", 1, minlen)

    def _hits(self, data: bytes, binary: bool) -> tuple[list[int], list[int]]:
        """For each key k, how many bytes of ``data`` XOR k (and + k) land in the shape's alphabet: a
        key with fewer than a run's length cannot spell one, so its decoding need not be tried."""
        alphabet = b"0123456789" if self.shape is DIGITS else b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        xor_hits, add_hits = [0] * 256, [0] * 256
        for b, n in Counter(data).items():
            if not (binary and b == 0):  # a binary's zero bytes stay zero
                for a in alphabet:
                    xor_hits[a ^ b] += n
                    add_hits[(a - b) & 0xFF] += n
        return xor_hits, add_hits

    def ints(self, nums: list[int], how: str) -> None:
        if max(nums) < 256:
            self.brute(bytes(nums), how)
            return
        # Code points stored with an offset k: every n - k must be a byte, so k lies in
        # [max - 255, min] (at most 256 offsets, not one per value up to the largest number).
        lo, hi = max(1, max(nums) - 255), min(min(nums), 1 << 16)
        for k in range(lo, hi + 1):
            self.runs(bytes(n - k for n in nums), f"{how} -{k}", 1, MIN_PROTECTED)


def chance_floor(n_bytes: int) -> int:
    """The shortest run that the 510 byte-wise decodings of ``n_bytes`` of compressed media would
    spell by chance with odds under :data:`CHANCE_ODDS`. Each decoding maps one byte to each symbol,
    so a given run of length L turns up at a position with probability 256**-L: a 4-digit value is
    spelled somewhere in 200 KB of an mp4 about once in 13 draws, which is luck, not a shortcut (an
    agent trying every decoding would face hundreds of such runs)."""
    length = MIN_PROTECTED
    while 510 * n_bytes * 256.0 ** -length > CHANCE_ODDS:
        length += 1
    return length


def _is_text(data: bytes) -> bool:
    if b"\0" in data[:8192]:
        return False
    try:
        data[:8192].decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start > 8180  # cut inside a multi-byte character
    return True


def scan(pool: _Pool, name: str, data: bytes) -> None:
    """Add every candidate that ``data`` (one file) offers."""
    pool.runs(data, f"{name}: as is", 0)
    if not _is_text(data):
        pool.brute(data, f"{name}: bytes", binary=True)
        return
    caps = pool.shape is CAPS
    if caps:
        for w in WORDS.findall(data):
            pool.add(w.upper(), f"{name}: upper-cased word", 1)
        for run in set(CAPS.findall(data)):
            if MIN_PROTECTED <= len(run) <= MAX_VALUE_LEN:
                pool.add(run[::-1], f"{name}: reversed", 1)
                for k in range(1, 26):
                    pool.add(bytes((c - 65 + k) % 26 + 65 for c in run), f"{name}: caesar {k}", 1)
    for i, m in enumerate(INT_LIST.finditer(data)):
        if i >= MAX_LISTS:
            break
        nums = [int(x) for x in re.findall(rb"\d+", m.group())]
        pool.ints(nums, f"{name}: integer list at byte {m.start()}")
    for m in HEX_BLOB.finditer(data):
        with contextlib.suppress(ValueError):
            pool.brute(binascii.unhexlify(m.group()), f"{name}: hex blob at byte {m.start()}")
            pool.runs(binascii.unhexlify(m.group()), f"{name}: hex blob at byte {m.start()}", 1)
    for m in B64_BLOB.finditer(data):
        blob = m.group()
        if len(blob) % 4 == 0 and re.search(rb"[a-z]", blob) and re.search(rb"[A-Z0-9+/]", blob):
            with contextlib.suppress(ValueError):
                raw = base64.b64decode(blob, validate=True)
                pool.runs(raw, f"{name}: base64 at byte {m.start()}", 1)
                pool.brute(raw, f"{name}: base64 at byte {m.start()}")


def layer_files(layer: Path) -> Iterator[tuple[str, bytes]]:
    """(absolute path in the sandbox, first bytes) of every regular file a setup layer adds."""
    for root, dirs, files in os.walk(layer):
        dirs.sort()
        for f in sorted(files):
            p = Path(root) / f
            rel = "/" + str(p.relative_to(layer))
            if rel == "/.tmax-done":
                continue
            try:
                if not p.is_file() or p.is_symlink():  # whiteouts are character devices
                    continue
                with open(p, "rb") as fh:
                    yield rel, fh.read(MAX_FILE_BYTES)
            except OSError:
                continue


def setup_leftovers(task, backend: str = DEFAULT_BACKEND, image: str | None = None) -> list[tuple[str, bytes]]:
    """What the task's setup leaves in /tmp. The native sandboxes keep /tmp out of the cached layer, but
    an image built from the exported Dockerfile (one RUN of setup.sh) keeps it, and an agent there sees
    it: the setup is replayed on the base image and its /tmp copied out."""
    from tmax.images import SETUP_TIMEOUT, get_environment
    from tmax.trial import limits_for

    if task.setup_script is None:
        return []
    base = get_environment(image or task.image)
    with tempfile.TemporaryDirectory(prefix="tmax-chan-tmp-") as out:
        spec = base.spec(workdir="/app", work_areas=task.work_areas, limits=limits_for(task),
                         binds=[Bind(str(task.environment_dir.resolve()), "/environment", readonly=True),
                                Bind(out, "/tmax-leftovers", readonly=False)])
        with get_backend(backend if backend in ("bwrap", "unshare") else "bwrap").start(spec) as sb:
            r = sb.exec(f"bash /environment/{Path(task.setup_script).name} >/dev/null 2>&1; "
                        "cp -a /tmp/. /tmax-leftovers/", timeout=SETUP_TIMEOUT)
        if not r.ok:
            raise RuntimeError(f"replaying the setup to see /tmp failed: {r.output[-500:]}")
        return [("/tmp" + p, d) for p, d in layer_files(Path(out))]


def collect(sources: Iterable[tuple[str, bytes]], value: str) -> dict[str, Candidate]:
    """Candidates of ``value``'s shape in ``sources`` ((name, bytes) pairs)."""
    pool = _Pool(_shape_re(value))
    for name, data in sources:
        scan(pool, name, data)
    return pool.found


def ranked(cands: dict[str, Candidate], value: str) -> list[Candidate]:
    """Most plausible first: the value's length, read as is, seen often."""
    return sorted((c for c in cands.values() if c.text != value),
                  key=lambda c: (abs(len(c.text) - len(value)), c.rank, -c.count, c.text))


# -- the reference solution, cut and rewritten ---------------------------------------------------

def _solve_lines(task) -> list[str]:
    return (task.path / task.solution_script).read_text().splitlines()


def _value_prefix(lines: list[str]) -> tuple[list[str], list[str]]:
    """(the solution up to its last value line and that line's ``test -n`` checks, the value vars)."""
    idx = [i for i, ln in enumerate(lines) if VAR_LINE.match(ln)]
    if not idx:
        return [], []
    end = idx[-1] + 1
    while end < len(lines) and lines[end].startswith("test -n "):
        end += 1
    names = list(dict.fromkeys(VAR_LINE.match(lines[i]).group(1) for i in idx))
    return lines[:end], names


def delivered_values(task, env, backend: str = DEFAULT_BACKEND, timeout: float = 600.0) -> dict[str, str]:
    """Run the reference solution up to its value lines in the built environment; {var: value}."""
    from tmax.trial import limits_for

    prefix, names = _value_prefix(_solve_lines(task))
    if not names:
        return {}
    script = "\n".join(prefix + [f"printf '\\n{MARK} {n}=%s\\n' \"${n}\"" for n in names]) + "\n"
    with tempfile.TemporaryDirectory(prefix="tmax-chan-") as tmp:
        sol = Path(tmp) / "solution"
        shutil.copytree(task.path / Path(task.solution_script).parent, sol)
        (sol / "tmax-values.sh").write_text(script)
        spec = env.spec(workdir="/app", work_areas=task.work_areas, binds=[Bind(str(sol), "/solution", True)],
                        limits=limits_for(task))
        with get_backend(backend).start(spec) as sb:
            r = sb.exec("bash /solution/tmax-values.sh", timeout=timeout)
    out = {}
    for ln in r.output.splitlines():
        if ln.startswith(MARK + " ") and "=" in ln:
            k, _, v = ln[len(MARK) + 1:].partition("=")
            out[k] = v.strip()
    missing = [n for n in names if not out.get(n)]
    if missing:
        raise RuntimeError(f"the reference solution did not produce {', '.join(missing)} "
                           f"(exit {r.exit_code}): {r.output[-800:]}")
    return out


def _channel_files(lines: list[str]) -> set[str]:
    """Absolute paths the value lines read: for text_only these files are the channel."""
    return {p for ln in lines if VAR_LINE.match(ln) for p in re.findall(r"(/app/[^\s'\"|)]+)", ln)}


def with_candidate(task_dir: Path, var: str, candidate: str, dest: Path) -> Path:
    """A private copy of the task whose reference solution sets ``var`` to ``candidate`` instead of
    reading it from the channel (everything else, channel set-up included, runs as before)."""
    shutil.copytree(task_dir, dest, symlinks=True)
    solve = dest / "solution" / "solve.sh"
    lines = solve.read_text().splitlines()
    lines = [f"{var}={shlex.quote(candidate)}" if ln.startswith(f"{var}=") else ln for ln in lines]
    solve.write_text("\n".join(lines) + "\n")
    return dest


# -- the check -----------------------------------------------------------------------------------

def channel_skip(task_dir: str | Path, backend: str = DEFAULT_BACKEND, max_runs: int = 30, jobs: int = 2,
                 image: str | None = None, values: dict[str, str] | None = None,
                 replay_tmp: bool = True) -> ChannelSkipResult:
    """Does any candidate visible without the channel score? ``ok`` iff none does (see module doc).

    ``max_runs`` caps the candidates run through the verifier (most plausible first, spread over the
    values); ``values`` ({"V1": ...}) skips finding the delivered values by running the oracle;
    ``replay_tmp`` also scans what the setup leaves in /tmp (see :func:`setup_leftovers`)."""
    from tmax.trial import OracleAgent, run_trial

    t0 = time.monotonic()
    res = ChannelSkipResult(task=str(task_dir), ok=False)
    try:
        task = load_task(task_dir)
        res.fixture = str(task.metadata.get("fixture", ""))
        env = task_environment(task, backend, image=image)
        res.values = dict(values) if values else delivered_values(task, env, backend)
    except (TaskError, ImageError, SandboxError, RuntimeError, OSError) as e:
        res.reason = f"{type(e).__name__}: {e}"
        res.seconds = time.monotonic() - t0
        return res
    if not res.values:
        res.ok, res.reason = True, "the task delivers no value"
        res.seconds = time.monotonic() - t0
        return res
    lines = _solve_lines(task)
    skip = _channel_files(lines) if res.fixture == "text_only" else set()
    sources = [("instruction.md", task.instruction.encode())]
    try:
        if task.setup_script is not None and isinstance(env.layers[0], Path):
            sources += [(p, d) for p, d in layer_files(env.layers[0]) if p not in skip]
        if replay_tmp:
            sources += setup_leftovers(task, backend, image)
        # File names are seen too (ls, find): a value may name a file.
        sources.append(("file names", "\n".join(p for p, _ in sources[1:]).encode()))
    except (ImageError, SandboxError, RuntimeError, OSError) as e:
        res.reason = f"{type(e).__name__}: {e}"
        res.seconds = time.monotonic() - t0
        return res
    notes, plans = [], []
    for var, value in res.values.items():
        cands = collect(sources, value)
        res.n_candidates += len(cands)
        if value in cands:
            if len(value) >= MIN_PROTECTED:
                res.beaten_by, res.beaten_how = f"{var}={value}", cands[value].how
                res.reason = f"{var}'s value {value!r} is visible without the channel ({cands[value].how})"
                res.seconds = time.monotonic() - t0
                return res
            notes.append(f"{var}={value!r} is too short to protect and is seen in {cands[value].how}")
        plans.append([(var, c) for c in ranked(cands, value)])
    sample = [x for group in _interleave(plans) for x in group][:max_runs]
    res.candidates_tried = [f"{var}={c.text}" for var, c in sample]
    with tempfile.TemporaryDirectory(prefix="tmax-chan-") as tmp:
        def one(i_item):
            i, (var, c) = i_item
            copy = with_candidate(task.path, var, c.text, Path(tmp) / f"c{i}" / task.path.name)
            tr = run_trial(load_task(copy), OracleAgent(), backend=backend, env=env)
            shutil.rmtree(copy.parent, ignore_errors=True)
            return var, c, tr

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for var, c, tr in pool.map(one, enumerate(sample)):
                key = f"{var}={c.text}"
                res.rewards[key] = tr.reward
                if tr.reward is None:
                    notes.append(f"{key}: not scored ({tr.outcome.value}: {tr.reason[:200]})")
                elif tr.reward > 0 and not res.beaten_by:
                    res.beaten_by, res.beaten_how = key, f"reward {tr.reward} ({c.how})"
    if res.beaten_by:
        res.reason = f"{res.beaten_by} scored without the channel: {res.beaten_how}"
    elif any(v is None for v in res.rewards.values()):
        res.reason = "; ".join(notes)
    else:
        res.ok = True
        res.reason = "; ".join(notes)
    res.seconds = time.monotonic() - t0
    return res


def _interleave(plans: list[list]) -> Iterator[list]:
    """Round-robin over the values' candidate lists, so every value gets its share of the runs."""
    for i in range(max((len(p) for p in plans), default=0)):
        yield [p[i] for p in plans if i < len(p)]
