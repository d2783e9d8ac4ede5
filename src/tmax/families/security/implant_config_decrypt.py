"""What does the implant's encrypted string table say? A reverser extracted the RC4-encrypted strings of a
malware sample (each keyed with the sample's key, delivered, followed by a per-string nonce). Variants:
`dump` decrypts the table into an id/plaintext listing, `iocs` pulls the network indicators out of the
decrypted strings and writes them defanged, `carve` finds the config block inside the binary sample
itself (a magic marker, big-endian lengths) and lists its strings. Higher levels take the decryptor
away, add comment lines, base64-wrapped and disabled entries, UTF-16LE strings, mixed-case hosts and a
stale config block."""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen, visible

REFERENCE = r'''
import base64
import re
import sys

TLDS = @TLDS@  # last labels that make a dotted name a domain
MAGIC = b"\x89CFG"
HOST = re.compile(r"^(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)$")


def rc4(key, data):
    s = list(range(256))
    j = 0
    for i in range(256):
        j = (j + s[i] + key[i % len(key)]) % 256
        s[i], s[j] = s[j], s[i]
    out = bytearray()
    i = j = 0
    for b in data:
        i = (i + 1) % 256
        j = (j + s[i]) % 256
        s[i], s[j] = s[j], s[i]
        out.append(b ^ s[(s[i] + s[j]) % 256])
    return bytes(out)


def plain(key, flags, nonce, ct):
    """One entry's string: RC4 under key + nonce, then base64 (flag 1), then UTF-16LE (flag 2) or UTF-8."""
    raw = rc4(key.encode() + nonce, ct)
    if flags & 1:
        raw = base64.b64decode(raw)
    return raw.decode("utf-16-le" if flags & 2 else "utf-8")


def table(text):
    """(id, flags, nonce, ciphertext) of each line of the TSV table."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        sid, flags, nonce, ct = line.split("\t")
        out.append((int(sid), int(flags), bytes.fromhex(nonce), bytes.fromhex(ct)))
    return out


def carve(blob):
    """The entries of the version-2 config block: MAGIC, version, count, then per record
    flags (1 byte), id (2, big-endian), nonce (4), length (2, big-endian), ciphertext."""
    at = 0
    while True:
        at = blob.index(MAGIC, at)
        if blob[at + 4] == 2:
            break
        at += 1
    count, pos, out = blob[at + 5], at + 6, []
    for _ in range(count):
        flags, sid = blob[pos], int.from_bytes(blob[pos + 1:pos + 3], "big")
        nonce, n = blob[pos + 3:pos + 7], int.from_bytes(blob[pos + 7:pos + 9], "big")
        out.append((sid, flags, nonce, blob[pos + 9:pos + 9 + n]))
        pos += 9 + n
    return out


def strings(key, entries):
    """id -> plaintext of every enabled entry (flag 128 marks an entry disabled in the build)."""
    return {sid: plain(key, flags, nonce, ct) for sid, flags, nonce, ct in entries if not flags & 128}


def host_of(s):
    m = re.match(r"^https?://([^/:]+)(?::[0-9]+)?(?:/.*)?$", s)
    h = m.group(1) if m else s.rsplit(":", 1)[0] if re.match(r"^[^:/ ]+:[0-9]+$", s) else s
    if not HOST.match(h):
        return None
    if not h[0].isdigit() and h.rsplit(".", 1)[1].lower() not in TLDS:
        return None
    return h.lower()


def dump(found, only=None):
    return "".join(f"{sid}\t{found[sid]}\n" for sid in sorted(found) if only in (None, sid))


def iocs(found, only=None):
    hosts = {host_of(found[sid]) for sid in found if only in (None, sid)} - {None}
    return "".join(h.replace(".", "[.]") + "\n" for h in sorted(hosts))


if __name__ == "__main__":  # KEY dump|iocs FILE [ID]; a FILE ending in .bin is carved
    key, mode, path = sys.argv[1:4]
    only = int(sys.argv[4]) if len(sys.argv) > 4 else None
    with open(path, "rb") as f:
        data = f.read()
    entries = carve(data) if path.endswith(".bin") else table(data.decode())
    sys.stdout.write((dump if mode == "dump" else iocs)(strings(key, entries), only))
'''

# The analyst's decryptor the lower levels ship (one string at a time).
TOOL = r'''#!/usr/bin/env python3
"""rc4dec.py KEY NONCE_HEX CIPHERTEXT_HEX: RC4-decrypt one string keyed with KEY + nonce bytes (raw bytes out)."""
import sys
key, nonce, ct = sys.argv[1].encode() + bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
s, j = list(range(256)), 0
for i in range(256):
    j = (j + s[i] + key[i % len(key)]) % 256
    s[i], s[j] = s[j], s[i]
i = j = 0
out = bytearray()
for b in ct:
    i = (i + 1) % 256
    j = (j + s[i]) % 256
    s[i], s[j] = s[j], s[i]
    out.append(b ^ s[(s[i] + s[j]) % 256])
sys.stdout.buffer.write(bytes(out))
'''

TLDS = ("com", "net", "org", "info", "io", "ru", "top", "xyz", "biz")
SYL = ("up", "cdn", "sync", "mail", "lab", "node", "soft", "data", "cloud", "micro", "win", "get", "fast", "secure",
       "zone", "link", "host", "web", "dns", "edge")
NOISE = ("svchost.exe", "update.dat", "config.bin", "cmd.exe /c whoami", "Mozilla/5.0 (Windows NT 10.0; Win64; x64)",
         "Software\\Microsoft\\Windows\\CurrentVersion\\Run", "%APPDATA%\\Intel\\igfx.dll", "rundll32.exe",
         "POST", "application/octet-stream", "schtasks /create /sc minute", "kernel32.dll", "version.txt")


def _domain(rng, mixed):
    d = f"{rng.choice(SYL)}{rng.choice(['-', ''])}{rng.choice(SYL)}{rng.randrange(2, 99)}.{rng.choice(TLDS)}"
    if rng.random() < 0.3:
        d = rng.choice(["api.", "www.", "static."]) + d
    return "".join(c.upper() if mixed and rng.random() < 0.3 else c for c in d)


def _indicator(rng, mixed):
    kind = rng.randrange(4)
    ip = ".".join(str(rng.randrange(1, 255)) for _ in range(4))
    host = ip if kind == 3 else _domain(rng, mixed)
    if kind <= 1:
        return f"http{'s' if kind else ''}://{host}/{rng.choice(['gate.php', 'api/v2/beacon', 'upd', 'c/index.html'])}"
    return f"{host}:{rng.choice([443, 8080, 8443, 4444, 53])}" if kind == 2 or rng.random() < 0.5 else host


@dataclass(frozen=True)
class Knobs:
    entries: int  # strings in the table (enabled ones)
    one: bool  # ask about one entry only (the atomic rung)
    tool: bool  # the decryptor ships in /app/tools
    comments: bool  # comment and blank lines in the table
    wrapped: bool  # base64-wrapped and disabled entries, a stale config block in the sample
    wide: bool  # UTF-16LE strings and mixed-case hosts


@register
class ImplantConfigDecrypt(Family):
    name = "implant_config_decrypt"
    domain = "security"
    skill_types = ("Forensics", "Cryptography")
    primitive_skills = ("stream cipher decryption", "malware string extraction", "indicator of compromise defanging",
                        "binary record carving", "URL parsing and normalisation", "regular expressions")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("dump", "iocs", "carve")
    levels = {0: Knobs(entries=3, one=True, tool=True, comments=False, wrapped=False, wide=False),
              1: Knobs(entries=6, one=False, tool=True, comments=False, wrapped=False, wide=False),
              2: Knobs(entries=10, one=False, tool=False, comments=True, wrapped=False, wide=False),
              3: Knobs(entries=16, one=False, tool=False, comments=True, wrapped=True, wide=False),
              4: Knobs(entries=24, one=False, tool=False, comments=True, wrapped=True, wide=True)}

    @staticmethod
    def _entries(t, ns, key):
        """(id, flags, nonce, ciphertext, plaintext) rows: indicators and noise strings, encrypted under key."""
        k, rng = t.knobs, t.rng
        ids = sorted(rng.sample(range(1, 400), k.entries + (3 if k.wrapped else 0)))
        rows = []
        for n, sid in enumerate(ids):
            text = _indicator(rng, k.wide) if n % 2 == 0 else rng.choice(NOISE)
            flags = 0
            if k.wide and rng.random() < 0.3:
                flags |= 2
            if k.wrapped and rng.random() < 0.3:
                flags |= 1
            if k.wrapped and n >= k.entries:
                flags |= 128
            raw = text.encode("utf-16-le" if flags & 2 else "utf-8")
            if flags & 1:
                raw = base64.b64encode(raw)
            nonce = bytes(rng.randrange(256) for _ in range(4))
            rows.append((sid, flags, nonce, ns["rc4"](key.encode() + nonce, raw), text))
        rng.shuffle(rows)  # table order is not id order
        return rows

    @staticmethod
    def _block(version, rows):
        """The config block's bytes and each record's offset in it."""
        out, at = b"\x89CFG" + bytes([version, len(rows)]), {}
        for sid, flags, nonce, ct, _ in rows:
            at[sid] = len(out)
            out += bytes([flags]) + struct.pack(">H", sid) + nonce + struct.pack(">H", len(ct)) + ct
        return out, at

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        ns = run_python(fill(REFERENCE, TLDS=TLDS))
        # The key is drawn first (the ciphertexts depend on it); ciphertext is random bytes, so a draw
        # that shows in them is vanishingly rare, and is redrawn (bounded) all the same.
        for _ in range(20):
            key = unseen(t, lambda: t.code(2))
            rows = self._entries(t, ns, key)
            if variant == "carve":
                junk = [bytes(rng.randrange(256) for _ in range(rng.randrange(200, 900))) for _ in range(3)]
                blob = b"MZ\x90\x00" + junk[0]
                if k.wrapped:  # an older config the loader no longer reads
                    blob += self._block(1, self._entries(t, ns, key))[0] + junk[1]
                block, at = self._block(2, rows)
                offsets = {sid: len(blob) + off for sid, off in at.items()}
                blob += block + junk[2]
                shown = base64.b64encode(blob).decode()
            else:
                lines = [f"{sid}\t{flags}\t{nonce.hex()}\t{ct.hex()}\n" for sid, flags, nonce, ct, _ in rows]
                if k.comments:
                    for note in ("# strings extracted from .rdata, id<TAB>flags<TAB>nonce<TAB>ciphertext\n", "\n",
                                 "# second section (resources)\n"):
                        lines.insert(rng.randrange(len(lines) + 1), note)
                shown = "".join(lines)
            if not visible(t, key, shown):
                break
        else:
            raise FamilyError("implant_config_decrypt: the key showed in the ciphertexts 20 times")
        entries = [r[:4] for r in rows]
        found = ns["strings"](key, entries)
        only = None
        if k.one:  # the atomic rung asks about one entry: for iocs an indicator, for dump/carve any string
            pool = [r[0] for r in rows if variant != "iocs" or ns["host_of"](r[4])]
            only = rng.choice(pool)
        truth = (ns["iocs"] if variant == "iocs" else ns["dump"])(found, only)
        if not truth:
            raise FamilyError("implant_config_decrypt: an empty answer")
        where = "/app/case/sample.bin" if variant == "carve" else "/app/case/strings.tsv"
        if variant == "carve":
            t.add_file("/tmp/tmax-fixture/sample.b64", shown + "\n")
            t.add_setup("mkdir -p /app/case && base64 -d /tmp/tmax-fixture/sample.b64 > /app/case/sample.bin && "
                        "rm -f /tmp/tmax-fixture/sample.b64 && (rmdir /tmp/tmax-fixture 2>/dev/null || true)")
            t.say("`/app/case/sample.bin` is the unpacked implant. Its config block starts with the 4 bytes `89 43 46 "
                  "47` (`\\x89CFG`), then a version byte, a record count byte, then the records back to back: flags "
                  "(1 byte), string id (2 bytes, big-endian), nonce (4 bytes), ciphertext length (2 bytes, "
                  "big-endian), ciphertext."
                  + (" The sample also carries an old version-1 block the loader ignores: use the version-2 block."
                     if k.wrapped else ""))
        else:
            t.add_file(where, shown)
            notes = " (lines starting with `#` and blank lines are notes, not strings)." if k.comments else "."
            t.say("`/app/case/strings.tsv` holds the implant's encrypted string table, one string per line: "
                  "`<id>\\t<flags>\\t<nonce hex>\\t<ciphertext hex>`" + notes)
        t.say("Each string is RC4-encrypted with a key made of the sample's key (ASCII, given below) followed by the "
              "string's 4 nonce bytes; RC4 starts fresh for every string.")
        v = t.deliver(key, "the sample's RC4 key")
        if k.tool:
            t.add_file("/app/tools/rc4dec.py", TOOL)
            t.say("Our decryptor is `/app/tools/rc4dec.py KEY NONCE_HEX CIPHERTEXT_HEX` (raw bytes out).")
        rules = []
        if k.wrapped:
            rules.append("Flags are a bit set: bit 1 means the decrypted bytes are base64 to decode once more; "
                         "bit 128 marks a string disabled in this build: leave it out.")
        if k.wide:
            rules.append("Bit 2 means the final bytes are UTF-16LE text; otherwise they are UTF-8.")
        if not k.wrapped:
            rules.append("Every string's flags are 0 here: the decrypted bytes are UTF-8 text.")
        t.say(" ".join(rules))
        if variant == "iocs":
            t.say((f"String {only} is a network indicator (a URL `http(s)://HOST[:PORT][/path]`, `HOST:PORT` or a "
                   "bare HOST)." if k.one else
                   "Some strings are network indicators: a URL `http(s)://HOST[:PORT][/path]`, `HOST:PORT`, or a bare "
                   "HOST, where HOST is a dotted IPv4 address or a domain whose last label is one of "
                   f"{', '.join(TLDS)}. Everything else (file names, commands, registry paths, user agents) is not.")
                  + (" Write its host" if k.one else " Write their hosts, each once, lower-cased, sorted in byte "
                     "order, one per line,")
                  + " defanged for the report: every `.` becomes `[.]`.")
        elif k.one:
            at = f" (its record starts at byte offset {offsets[only]})" if variant == "carve" else ""
            t.say(f"I only need string {only}{at}: write one line, `<id><TAB><plaintext>`.")
        else:
            t.say("Write every " + ("enabled " if k.wrapped else "") + "string as `<id><TAB><plaintext>`, one per "
                  "line, sorted by id as a number.")
        t.add_solution_file("decrypt.py", fill(REFERENCE, TLDS=TLDS))
        tail = f" {only}" if only is not None else ""
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/decrypt.py "{v}" '
                f"{'iocs' if variant == 'iocs' else 'dump'} {where}{tail} > /app/out/strings.txt")
        what = "the decrypted " + ("indicator" if variant == "iocs" else "string") + ("" if k.one else "s")
        t.expect_output("/app/out/strings.txt", truth, what)
