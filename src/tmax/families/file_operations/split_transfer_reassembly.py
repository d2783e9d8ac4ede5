"""Reassemble a file that arrived in numbered parts over a flaky transfer: pick, for every part, the
copy whose checksum matches the manifest (resends, corrupted and truncated copies, several delivery
attempts), decompress gzipped parts, dig a straggler out of a tarball, order the parts numerically
(not lexically) and verify the whole before delivering it."""

from __future__ import annotations

import datetime as dt
import hashlib

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.file_operations._common import run_ref

REFERENCE = r'''
import gzip
import hashlib
import io
import os
import re
import sys
import tarfile


def candidates(root):
    """(name, bytes) for every file under root, and for every member of a .tar / .tar.gz there."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            with open(full, "rb") as f:
                data = f.read()
            if name.endswith((".tar", ".tar.gz", ".tgz")):
                with tarfile.open(fileobj=io.BytesIO(data)) as tf:
                    for m in tf.getmembers():
                        if m.isfile():
                            yield m.name.rsplit("/", 1)[-1], tf.extractfile(m).read()
            else:
                yield name, data


def restore(root, code):
    base = f"{code}.csv"
    with open(os.path.join(root, f"{base}.sha256")) as f:
        want = {}
        for line in f:
            digest, name = line.rstrip("\n").split("  ", 1)
            want[name] = digest
    part = re.compile(r"^" + re.escape(base) + r"\.part(\d+)(\.gz)?$")
    good = {}
    for name, data in candidates(root):
        m = part.match(name)
        if not m:
            continue
        if m.group(2):
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError):
                continue
        canonical = name[:-3] if m.group(2) else name
        if hashlib.sha256(data).hexdigest() == want.get(canonical):
            good[int(m.group(1))] = data
    whole = b"".join(good[n] for n in sorted(good))
    if hashlib.sha256(whole).hexdigest() != want[base] or len(good) != len(want) - 1:
        raise SystemExit("could not restore " + base)
    return whole


if __name__ == "__main__":
    sys.stdout.buffer.write(restore(sys.argv[1], sys.argv[2]))
'''

STATIONS = ("north-ridge", "harbor-gate", "mill-creek", "old-quarry", "pine-hollow", "river-bend", "salt-marsh")


def _csv(rng, rows):
    out = ["timestamp,station,temperature_c,humidity_pct,pressure_hpa"]
    when = dt.datetime(2025, 1, 1) + dt.timedelta(seconds=rng.randrange(300 * 86400))
    for _ in range(rows):
        when += dt.timedelta(seconds=rng.randrange(30, 900))
        out.append(f"{when:%Y-%m-%dT%H:%M:%S}Z,"
                   f"{rng.choice(STATIONS)},{rng.uniform(-5, 35):.2f},{rng.uniform(10, 99):.1f},"
                   f"{rng.uniform(980, 1040):.1f}")
    return "\n".join(out) + "\n"


def _split(text, n, rng):
    cuts = sorted(rng.sample(range(1, len(text)), n - 1))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def _sha(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


def _corrupt(rng, s):
    if rng.random() < 0.5 and len(s) > 10:
        return s[:rng.randrange(len(s) // 2, len(s) - 1)]  # truncated
    i = rng.randrange(len(s))
    c = s[i]
    return s[:i] + ("0" if c != "0" else "1") + s[i + 1:]


@register
class SplitTransferReassembly(Family):
    name = "split_transfer_reassembly"
    domain = "file_operations"
    skill_types = ("Integrity Verification", "Bulk Transformation", "Archive Handling")
    primitive_skills = ("splitting and joining files", "checksum verification", "natural sort ordering",
                        "compressed stream handling", "archive extraction", "recursive directory traversal")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    levels = {1: {"parts": 4, "rows": 60, "bad": 1, "pad": True, "gz": 0, "attempts": False, "tar": False},
              2: {"parts": 11, "rows": 160, "bad": 3, "pad": False, "gz": 0, "attempts": False, "tar": False},
              3: {"parts": 12, "rows": 260, "bad": 4, "pad": False, "gz": 3, "attempts": True, "tar": False},
              4: {"parts": 14, "rows": 380, "bad": 6, "pad": False, "gz": 4, "attempts": True, "tar": True}}

    def build(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        codes = []
        while len(codes) < 3:
            c = t.code(1)
            if c not in codes:
                codes.append(c)
        target = codes[0]
        tar_members = []
        truth = ""
        for bi, code in enumerate(codes):
            is_target = bi == 0
            text = _csv(rng, k["rows"] if is_target else k["rows"] // 3)
            n = k["parts"] if is_target else max(3, k["parts"] // 3)
            parts = _split(text, n, rng)
            base = f"{code}.csv"
            width = 2 if k["pad"] else 0
            names = [f"{base}.part{i + 1:0{width}d}" for i in range(n)]
            manifest = "".join(f"{_sha(p)}  {nm}\n" for p, nm in zip(parts, names)) + f"{_sha(text)}  {base}\n"
            t.add_file(f"/app/transfer/{base}.sha256", manifest)
            if not is_target:
                for p, nm in zip(parts, names):
                    t.add_file(f"/app/transfer/{nm}", p)
                continue
            truth = text
            if k["tar"]:  # an outdated manifest from an earlier export
                stale = _split(_csv(rng, k["rows"]), n, rng)
                t.add_file(f"/app/transfer/{base}.sha256.old",
                           "".join(f"{_sha(p)}  {nm}\n" for p, nm in zip(stale, names)))
            bad = set(rng.sample(range(n), k["bad"]))
            gz = set(rng.sample(range(n), k["gz"]))
            straggler = rng.choice(sorted(set(range(n)) - bad - gz)) if k["tar"] else -1
            for i, (p, nm) in enumerate(zip(parts, names)):
                first = "attempt1/" if k["attempts"] else ""
                second = "attempt2/" if k["attempts"] else "resend/"
                if i == straggler:
                    tar_members.append((nm, p))
                    t.add_file(f"/app/transfer/{first}{nm}", _corrupt(rng, p))
                    continue
                if i in bad:  # the first copy is damaged; a good one was resent
                    t.add_file(f"/app/transfer/{first}{nm}", _corrupt(rng, p))
                    good_at = f"/app/transfer/{second}{nm}"
                else:
                    good_at = f"/app/transfer/{first}{nm}"
                if i in gz:
                    t.add_file(good_at + ".src", p)
                    t.add_setup(f"gzip -n '{good_at}.src' && mv '{good_at}.src.gz' '{good_at}.gz'")
                else:
                    t.add_file(good_at, p)
                if k["attempts"] and i not in bad and rng.random() < 0.3:  # an extra, damaged copy
                    t.add_file(f"/app/transfer/{second}{nm}", _corrupt(rng, p))
        if tar_members:
            for nm, p in tar_members:
                t.add_file(f"/tmp/fo-fixture/stragglers/{nm}", p)
            t.add_setup("tar -C /tmp/fo-fixture/stragglers -czf /app/transfer/stragglers.tar.gz . && "
                        "rm -rf /tmp/fo-fixture")
        t.say("A partner pushed exports to us over a flaky link; everything that arrived is under `/app/transfer/`. "
              "Each export `<NAME>.csv` was split into numbered parts `<NAME>.csv.part<N>`, and "
              "`<NAME>.csv.sha256` (sha256sum format) lists the checksum of every part and of the whole file. Rebuild "
              "the export named below.")
        var = t.deliver(target, "the export name")
        hints = ["Some parts arrived more than once and not every copy is intact: use, for each part, a copy that "
                 "matches the manifest."]
        if not k["pad"]:
            hints.append("Part numbers are not zero-padded; parts go in numeric order.")
        if k["attempts"]:
            hints.append("The transfer ran in several attempts (one folder each). Some parts were gzipped in "
                         "transit (`.gz` appended to the name); the manifest is about their decompressed content.")
        if k["tar"]:
            hints.append("A few late parts were bundled into a tarball by the partner. `<NAME>.csv.sha256` is the "
                         "current manifest; anything else is stale.")
        t.say(" ".join(hints) + " Deliver the rebuilt file only if its checksum matches the manifest; it must be "
              "byte-for-byte the original export.")
        t.add_solution_file("reassemble.py", REFERENCE)
        t.solve(f'mkdir -p /app/out\npython3 /solution/reassemble.py /app/transfer "{var}" > /app/out/restored.csv')
        run_ref(REFERENCE)  # the reference must at least load on the host
        t.expect_output("/app/out/restored.csv", truth, "the rebuilt export")
