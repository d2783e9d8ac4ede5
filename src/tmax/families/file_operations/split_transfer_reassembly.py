"""Reassemble a file that arrived in numbered parts over a flaky transfer: pick, for every part, the
copy whose checksum matches the manifest (resends, corrupted and truncated copies, several delivery
attempts), decompress gzipped parts, dig a straggler out of a tarball, order the parts numerically
(not lexically), decrypt the whole with the passphrase sent out of band (the delivered value) and
verify it before delivering it.
Variants: restore_export (deliver the decrypted export itself), station_summary (from it, each station's
reading count and mean temperature) and reading_gaps (from it, every gap of more than ten minutes between
consecutive readings). Each needs the decrypted export, so each needs the passphrase."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import struct
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import run_python
from tmax.families.unseen import distinct, unseen

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
    """The reassembled, still encrypted export, checked against the manifest."""
    base = f"{code}.csv.enc"
    with open(os.path.join(root, f"{code}.sha256")) as f:
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
    if hashlib.sha256(whole).hexdigest() != want[base] or len(good) != len(want) - 2:
        raise SystemExit("could not restore " + base)
    return whole


if __name__ == "__main__":
    sys.stdout.buffer.write(restore(sys.argv[1], sys.argv[2]))
'''

EXPORTS = ("weather-hourly", "station-daily", "sensor-raw", "calibration", "field-log", "gauge-readings")
STATIONS = ("north-ridge", "harbor-gate", "mill-creek", "old-quarry", "pine-hollow", "river-bend", "salt-marsh")


def _rotl(v, c):
    return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))


def _chacha20(key: bytes, iv: bytes, data: bytes) -> bytes:
    """ChaCha20 as `openssl enc -chacha20` applies it: the 16-byte IV is a little-endian block counter
    followed by the 12-byte nonce."""
    counter = struct.unpack("<I", iv[:4])[0]
    const = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)
    k, nonce = struct.unpack("<8I", key), struct.unpack("<3I", iv[4:])
    out = bytearray()
    for off in range(0, len(data), 64):
        st = [*const, *k, counter & 0xFFFFFFFF, *nonce]
        w = st[:]
        for _ in range(10):
            for a, b, c, d in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                               (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
                w[a] = (w[a] + w[b]) & 0xFFFFFFFF
                w[d] = _rotl(w[d] ^ w[a], 16)
                w[c] = (w[c] + w[d]) & 0xFFFFFFFF
                w[b] = _rotl(w[b] ^ w[c], 12)
                w[a] = (w[a] + w[b]) & 0xFFFFFFFF
                w[d] = _rotl(w[d] ^ w[a], 8)
                w[c] = (w[c] + w[d]) & 0xFFFFFFFF
                w[b] = _rotl(w[b] ^ w[c], 7)
        block = struct.pack("<16I", *[(x + y) & 0xFFFFFFFF for x, y in zip(w, st)])
        out += bytes(x ^ y for x, y in zip(data[off:off + 64], block))
        counter += 1
    return bytes(out)


def _encrypt(rng, passphrase: str, plain: bytes) -> bytes:
    """`openssl enc -chacha20 -pbkdf2 -pass pass:<passphrase>` with a salt from ``rng``."""
    salt = bytes(rng.randrange(256) for _ in range(8))
    dk = hashlib.pbkdf2_hmac("sha256", passphrase.encode(), salt, 10000, 48)
    return b"Salted__" + salt + _chacha20(dk[:32], dk[32:], plain)


def _csv(rng, rows):
    out = ["timestamp,station,temperature_c,humidity_pct,pressure_hpa"]
    when = dt.datetime(2025, 1, 1) + dt.timedelta(seconds=rng.randrange(300 * 86400))
    for _ in range(rows):
        when += dt.timedelta(seconds=rng.randrange(30, 900))
        out.append(f"{when:%Y-%m-%dT%H:%M:%S}Z,"
                   f"{rng.choice(STATIONS)},{rng.uniform(-5, 35):.2f},{rng.uniform(10, 99):.1f},"
                   f"{rng.uniform(980, 1040):.1f}")
    return "\n".join(out) + "\n"


def _split(data, n, rng):
    cuts = sorted(rng.sample(range(1, len(data)), n - 1))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _corrupt(rng, b):
    if rng.random() < 0.5 and len(b) > 10:
        return b[:rng.randrange(len(b) // 2, len(b) - 1)]  # truncated
    i = rng.randrange(len(b))
    return b[:i] + bytes([b[i] ^ (1 << rng.randrange(8))]) + b[i + 1:]


# Parts are binary: they travel as base64 and are written in place at build time.
UNPACK = r'''
import base64
import json
import os
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    for path, blob in json.load(f):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(base64.b64decode(blob))
'''


# What the non-restore variants derive from the decrypted CSV: (the ask, the output file, the shell step that
# reads the CSV on stdin). The host computes the same with _summary / _gaps.
SUMMARY_SH = ("awk -F, 'NR > 1 { n[$2]++; s[$2] += $3 } END { for (k in n) printf \"%s %d %.2f\\n\", k, n[k], "
              "s[k] / n[k] }' | LC_ALL=C sort")
GAPS_SH = """python3 -c '
import datetime as dt, sys
rows = [line.split(",")[0] for line in sys.stdin.read().splitlines()[1:]]
ts = [dt.datetime.strptime(r, "%Y-%m-%dT%H:%M:%SZ") for r in rows]
for a, b, x, y in zip(rows, rows[1:], ts, ts[1:]):
    if (y - x).total_seconds() > 600:
        print(a, b, int((y - x).total_seconds()))
'"""
DERIVED = {
    "station_summary": ("Write a summary of the decrypted export to `/app/out/stations.txt`: one line per station "
                        "as `<station> <readings> <mean temperature_c>` (the mean with exactly 2 decimals, as "
                        "`printf \"%.2f\"` prints it), sorted by station name (byte order).",
                        "/app/out/stations.txt", SUMMARY_SH),
    "reading_gaps": ("The readings in the decrypted export are in time order. Write to `/app/out/gaps.txt` every gap "
                     "of more than 600 seconds between two consecutive readings, one line each in file order: "
                     "`<earlier timestamp> <later timestamp> <seconds>`, the timestamps exactly as in the file.",
                     "/app/out/gaps.txt", GAPS_SH),
}


def _summary(text: str) -> str:
    stats: dict = {}
    for line in text.splitlines()[1:]:
        f = line.split(",")
        n, total = stats.get(f[1], (0, 0.0))
        stats[f[1]] = (n + 1, total + float(f[2]))
    return "".join(f"{k} {n} {total / n:.2f}\n" for k, (n, total) in sorted(stats.items()))


def _gaps(text: str) -> str:
    rows = [line.split(",")[0] for line in text.splitlines()[1:]]
    ts = [dt.datetime.strptime(r, "%Y-%m-%dT%H:%M:%SZ") for r in rows]
    return "".join(f"{a} {b} {int((y - x).total_seconds())}\n"
                   for a, b, x, y in zip(rows, rows[1:], ts, ts[1:]) if (y - x).total_seconds() > 600)


@dataclass(frozen=True)
class Knobs:
    parts: int  # parts the target export is split into
    rows: int  # CSV rows of the target export
    bad: int  # parts whose first copy is damaged (a good copy was resent)
    pad: bool  # zero-padded part numbers
    gz: int  # parts gzipped in transit
    attempts: bool  # several attempt folders, extra damaged copies
    tar: bool  # a straggler in a tarball, a stale manifest


@register
class SplitTransferReassembly(Family):
    name = "split_transfer_reassembly"
    domain = "file_operations"
    skill_types = ("Integrity Verification", "Bulk Transformation", "Archive Handling")
    primitive_skills = ("splitting and joining files", "checksum verification", "natural sort ordering",
                        "compressed stream handling", "archive extraction", "recursive directory traversal")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("restore_export", "station_summary", "reading_gaps")
    levels = {0: Knobs(parts=3, rows=20, bad=0, pad=True, gz=0, attempts=False, tar=False),
              1: Knobs(parts=4, rows=60, bad=1, pad=True, gz=0, attempts=False, tar=False),
              2: Knobs(parts=11, rows=160, bad=3, pad=False, gz=0, attempts=False, tar=False),
              3: Knobs(parts=12, rows=260, bad=4, pad=False, gz=3, attempts=True, tar=False),
              4: Knobs(parts=14, rows=380, bad=6, pad=False, gz=4, attempts=True, tar=True)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        for _ in range(self.variants.index(t.variant)):  # a seed's exports differ between the variants
            rng.random()
        # The partner encrypts every export before splitting it and sends the passphrase separately:
        # the passphrase is the delivered value, and without it no reassembly gives the export.
        names = rng.sample(EXPORTS, 3)
        files: list = []  # (path, bytes), in the order they are written

        def put(path, data):
            files.append([path, base64.b64encode(data).decode("ascii")])

        target = names[0]
        tar_members = []
        truth = ""
        plains = [_csv(rng, k.rows if bi == 0 else k.rows // 3) for bi in range(len(names))]
        passphrases = [unseen(t, lambda: t.code(3), *plains)]
        passphrases += distinct(lambda: t.code(3), len(names) - 1, passphrases)
        for bi, code in enumerate(names):
            is_target = bi == 0
            text = plains[bi]
            blob = _encrypt(rng, passphrases[bi], text.encode())
            n = k.parts if is_target else max(3, k.parts // 3)
            parts = _split(blob, n, rng)
            base = f"{code}.csv.enc"
            width = 2 if k.pad else 0
            names_ = [f"{base}.part{i + 1:0{width}d}" for i in range(n)]
            manifest = ("".join(f"{_sha(p)}  {nm}\n" for p, nm in zip(parts, names_)) + f"{_sha(blob)}  {base}\n"
                        + f"{_sha(text.encode())}  {code}.csv\n")
            t.add_file(f"/app/transfer/{code}.sha256", manifest)
            if not is_target:
                for p, nm in zip(parts, names_):
                    put(f"/app/transfer/{nm}", p)
                continue
            truth = text
            if k.tar:  # an outdated manifest from an earlier export
                stale = _split(_encrypt(rng, passphrases[0], _csv(rng, k.rows).encode()), n, rng)
                t.add_file(f"/app/transfer/{code}.sha256.old",
                           "".join(f"{_sha(p)}  {nm}\n" for p, nm in zip(stale, names_)))
            bad = set(rng.sample(range(n), k.bad))
            gz = set(rng.sample(range(n), k.gz))
            straggler = rng.choice(sorted(set(range(n)) - bad - gz)) if k.tar else -1
            gz_at = []
            for i, (p, nm) in enumerate(zip(parts, names_)):
                first = "attempt1/" if k.attempts else ""
                second = "attempt2/" if k.attempts else "resend/"
                if i == straggler:
                    tar_members.append((nm, p))
                    put(f"/app/transfer/{first}{nm}", _corrupt(rng, p))
                    continue
                if i in bad:  # the first copy is damaged; a good one was resent
                    put(f"/app/transfer/{first}{nm}", _corrupt(rng, p))
                    good_at = f"/app/transfer/{second}{nm}"
                else:
                    good_at = f"/app/transfer/{first}{nm}"
                if i in gz:
                    put(good_at + ".src", p)
                    gz_at.append(good_at)
                else:
                    put(good_at, p)
                if k.attempts and i not in bad and rng.random() < 0.3:  # an extra, damaged copy
                    put(f"/app/transfer/{second}{nm}", _corrupt(rng, p))
        for nm, p in tar_members:
            put(f"/tmp/fo-fixture/stragglers/{nm}", p)
        t.add_file("/tmp/fo-fixture/parts.json", json.dumps(files, separators=(",", ":")) + "\n")
        t.add_file("/tmp/fo-fixture/unpack.py", UNPACK.lstrip("\n"))
        t.add_setup("python3 /tmp/fo-fixture/unpack.py /tmp/fo-fixture/parts.json")
        for good_at in gz_at:
            t.add_setup(f"gzip -n '{good_at}.src' && mv '{good_at}.src.gz' '{good_at}.gz'")
        if tar_members:
            t.add_setup("tar -C /tmp/fo-fixture/stragglers -czf /app/transfer/stragglers.tar.gz .")
        t.add_setup("rm -rf /tmp/fo-fixture")
        t.say("A partner pushed exports to us over a flaky link; everything that arrived is under `/app/transfer/`. "
              "The partner encrypts each export `<NAME>.csv` before sending it (`openssl enc -chacha20 -pbkdf2 -pass "
              "pass:<PASSPHRASE> -in <NAME>.csv -out <NAME>.csv.enc`), then splits `<NAME>.csv.enc` into numbered "
              "parts `<NAME>.csv.enc.part<N>`; `<NAME>.sha256` (sha256sum format) lists the checksum of every part, "
              f"of the whole `<NAME>.csv.enc` and of the decrypted `<NAME>.csv`. Rebuild and decrypt `{target}.csv`; "
              "its passphrase was sent separately.")
        var = t.deliver(passphrases[0], "the passphrase")
        derived = DERIVED.get(t.variant)
        if derived:  # the answer is computed from the export, which only the passphrase opens
            truth = (_summary if t.variant == "station_summary" else _gaps)(truth)
        if t.level == 0:  # atomic: every part arrived once and intact, so one join and one decrypt do it
            decrypt = (f'cat /app/transfer/{target}.csv.enc.part* | openssl enc -d -chacha20 -pbkdf2 '
                       f'-pass "pass:{var}"')
            if derived:
                t.say("Every part arrived once, intact. " + derived[0])
                t.solve(f"set -o pipefail\nmkdir -p /app/out\n{decrypt} | {derived[2]} > {derived[1]}")
                return t.expect_output(derived[1], truth, "the report")
            t.say("Every part arrived once, intact. Deliver the decrypted file, byte-for-byte the original export.")
            t.solve(f'mkdir -p /app/out\n{decrypt} -out /app/out/restored.csv')
            t.expect_output("/app/out/restored.csv", truth, "the rebuilt export")
            return
        hints = ["Some parts arrived more than once and not every copy is intact: use, for each part, a copy that "
                 "matches the manifest."]
        if not k.pad:
            hints.append("Part numbers are not zero-padded; parts go in numeric order.")
        if k.attempts:
            hints.append("The transfer ran in several attempts (one folder each). Some parts were gzipped in "
                         "transit (`.gz` appended to the name); the manifest is about their decompressed content.")
        if k.tar:
            hints.append("A few late parts were bundled into a tarball by the partner. `<NAME>.sha256` is the "
                         "current manifest; anything else is stale.")
        if derived:
            t.say(" ".join(hints) + " Use the decrypted file only if its checksum matches the manifest. " + derived[0])
        else:
            t.say(" ".join(hints) + " Deliver the decrypted file only if its checksum matches the manifest; it must "
                  "be byte-for-byte the original export.")
        t.add_solution_file("reassemble.py", REFERENCE)
        t.solve(f'mkdir -p /app/out\npython3 /solution/reassemble.py /app/transfer {target} > /tmp/{target}.csv.enc\n'
                f'openssl enc -d -chacha20 -pbkdf2 -pass "pass:{var}" -in /tmp/{target}.csv.enc '
                f'-out /tmp/{target}.csv\n'
                f"want=$(awk '$2 == \"{target}.csv\" {{print $1}}' /app/transfer/{target}.sha256)\n"
                f'test "$(sha256sum < /tmp/{target}.csv | cut -c1-64)" = "$want"\n'
                + (f"< /tmp/{target}.csv {derived[2]} > {derived[1]}" if derived else
                   f"cp /tmp/{target}.csv /app/out/restored.csv"))
        run_python(REFERENCE)  # the reference must at least load on the host
        if derived:
            return t.expect_output(derived[1], truth, "the report")
        t.expect_output("/app/out/restored.csv", truth, "the rebuilt export")
