"""Was the sealed audit log tampered with? Every record carries an HMAC-SHA256 chained over the previous
record's MAC, keyed with the logger's sealing key (delivered). Variants: `breaks` lists each record that
fails verification with the MAC it should carry, `anchor` reports how far the log can be trusted (the
verified prefix and its last MAC), `rotated` verifies a chain that runs across rotated, partly gzipped
files, oldest first. Higher levels add deleted and inserted records, upper-case MACs, logger restarts
that begin a new chain and a forged record sealed with the wrong key."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import gzip
import hashlib
import hmac
import sys

GENESIS = "0" * 64
RESTARTS = @RESTARTS@  # a record with restart=1 chains from GENESIS


def split(line):
    body, _, mac = line.rpartition(" mac=")
    return body, mac.lower()


def seal(key, prev, body):
    return hmac.new(key.encode(), (prev + "|" + body).encode(), hashlib.sha256).hexdigest()


def check(key, records):
    """records: (where, line). Yields (where, expected MAC, ok) in order; a record's predecessor is the
    record before it as stored, whatever that record's own verdict."""
    prev = GENESIS
    for where, line in records:
        body, mac = split(line)
        if RESTARTS and " restart=1 " in f" {body} ":
            prev = GENESIS
        want = seal(key, prev, body)
        yield where, want, want == mac
        prev = mac


def breaks(key, records):
    return "".join(f"{w} {m}\n" for w, m, ok in check(key, records) if not ok)


def anchor(key, records):
    n, last = 0, GENESIS
    for w, m, ok in check(key, records):
        if not ok:
            break
        n, last = n + 1, m
    return f"{n} {last}\n"


def lines_of(name, data):
    return [(f"{name}:{i}", line) for i, line in enumerate(data.decode().splitlines(), 1) if line.strip()]


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if path.endswith(".gz") else data


if __name__ == "__main__":  # KEY breaks|anchor|rotated FILE... (rotated: oldest file first)
    key, mode, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    recs = []
    for p in paths:
        recs += lines_of(p.rsplit("/", 1)[-1], read(p))
    if mode != "rotated":
        recs = [(w.split(":")[1], line) for w, line in recs]
    sys.stdout.write(anchor(key, recs) if mode == "anchor" else breaks(key, recs))
'''

HOSTS = ("db01", "web02", "vpn01", "bastion", "files03")
EVENTS = ("user={u} action=login result=ok", "user={u} action=sudo cmd=/usr/bin/systemctl",
          "user={u} action=logout", "user={u} action=passwd result=ok", "user={u} action=login result=fail",
          "user={u} action=scp dst=10.0.{a}.{b}", "user={u} action=key_added fp=SHA256:{h}")
USERS = ("root", "deploy", "alice", "bob", "carol", "dmitri", "eve", "backup")


@dataclass(frozen=True)
class Knobs:
    records: int  # records written by the logger
    tampers: int  # edits by the intruder
    kinds: tuple[str, ...]  # edits drawn from: modify, delete, insert, forge
    upper: bool  # some MACs written in upper-case hex
    restarts: bool  # logger restarts that begin a new chain
    files: int  # rotated variant: files the chain runs across (the older ones gzipped from 3 on)


@register
class AuditLogChainVerify(Family):
    name = "audit_log_chain_verify"
    domain = "security"
    skill_types = ("Forensics", "Cryptography")
    primitive_skills = ("HMAC signature verification", "hash chain verification", "log tamper detection",
                        "timeline reconstruction", "checksum verification")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("breaks", "anchor", "rotated")
    levels = {0: Knobs(records=6, tampers=1, kinds=("modify",), upper=False, restarts=False, files=2),
              1: Knobs(records=20, tampers=2, kinds=("modify", "delete"), upper=False, restarts=False, files=2),
              2: Knobs(records=40, tampers=3, kinds=("modify", "delete", "insert"), upper=True, restarts=False,
                       files=3),
              3: Knobs(records=60, tampers=4, kinds=("modify", "delete", "insert", "forge"), upper=True,
                       restarts=True, files=3),
              4: Knobs(records=90, tampers=5, kinds=("modify", "delete", "insert", "forge"), upper=True,
                       restarts=True, files=4)}

    @staticmethod
    def _event(rng):
        fp = "".join(rng.choice("abcdefghjkmnpqrstuvwxyz") for _ in range(12))
        return (rng.choice(EVENTS).replace("{u}", rng.choice(USERS)).replace("{a}", str(rng.randrange(256)))
                .replace("{b}", str(rng.randrange(256))).replace("{h}", fp))

    def _log(self, t, ns, key):
        """The records as stored (after the intruder's edits)."""
        k, rng = t.knobs, t.rng
        when = dt.datetime(2026, 1, 1) + dt.timedelta(minutes=rng.randrange(400000))
        bodies = []
        for seq in range(1, k.records + 1):
            when += dt.timedelta(seconds=rng.randrange(5, 900))
            restart = " restart=1" if k.restarts and seq > 3 and rng.random() < 0.06 else ""
            bodies.append(f"seq={seq} ts={when:%Y-%m-%dT%H:%M:%SZ} host={rng.choice(HOSTS)}{restart} "
                          f"{self._event(rng)}")
        lines, prev = [], "0" * 64
        for b in bodies:
            prev = hmac.new(key.encode(), (("0" * 64 if " restart=1 " in f" {b} " else prev) + "|" + b).encode(),
                            hashlib.sha256).hexdigest()
            lines.append([b, prev])
        # Edits never touch the first two records: the trusted prefix is never empty.
        spots = sorted(rng.sample(range(2, len(lines)), k.tampers), reverse=True)
        for i in spots:
            kind = rng.choice(k.kinds)
            if kind == "modify":
                lines[i][0] = lines[i][0].rsplit(" ", 1)[0] + " " + rng.choice(["result=fail", "action=logout",
                                                                                "cmd=/usr/bin/true"])
            elif kind == "delete":
                del lines[i]
            elif kind == "insert":
                lines.insert(i, [lines[i][0].replace("seq=", "seq=0"), "".join(rng.choice("0123456789abcdef")
                                                                              for _ in range(64))])
            else:  # resealed by the intruder with a key of their own
                lines[i][0] = lines[i][0].replace("result=fail", "result=ok") + " note=cleanup"
                lines[i][1] = hmac.new(b"guess", lines[i][0].encode(), hashlib.sha256).hexdigest()
        if k.upper:
            for line in rng.sample(lines, len(lines) // 5):
                line[1] = line[1].upper()
        return [f"{b} mac={m}" for b, m in lines]

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        src = fill(REFERENCE, RESTARTS=k.restarts)
        ns = run_python(src)
        # The key comes first (the MACs are made with it); MACs are hex, so no draw of capitals shows in them.
        key = unseen(t, lambda: t.code(2))
        for _ in range(20):
            lines = self._log(t, ns, key)
            if variant == "rotated":
                cuts = sorted(rng.sample(range(2, len(lines) - 1), k.files - 1))
                parts = [lines[a:b] for a, b in zip([0, *cuts], [*cuts, len(lines)])]
                names = ["audit.log" + (f".{i}" if i else "") + (".gz" if i >= 2 else "")
                         for i in range(k.files - 1, -1, -1)]  # oldest first
                recs = [r for name, part in zip(names, parts)
                        for r in ns["lines_of"](name, "".join(x + "\n" for x in part).encode())]
            else:
                recs = [(str(i), x) for i, x in enumerate(lines, 1)]
            truth = ns["anchor" if variant == "anchor" else "breaks"](key, recs)
            if truth.strip() and not truth.startswith("0 "):
                break
        else:
            raise FamilyError("audit_log_chain_verify: no log with a non-empty answer in 20 draws")
        if variant == "rotated":
            for name, part in zip(names, parts):
                text = "".join(x + "\n" for x in part)
                if name.endswith(".gz"):  # gzipped at build time, so the task directory stays text
                    t.add_file(f"/app/logs/{name[:-3]}", text)
                    t.add_setup(f"gzip -n /app/logs/{name[:-3]}")
                else:
                    t.add_file(f"/app/logs/{name}", text)
            files = " ".join(f"/app/logs/{n}" for n in names)
            t.say(f"The audit logger on our bastion seals every record; its log rotates, so the records are spread "
                  f"over {', '.join(f'`/app/logs/{n}`' for n in names)} (the highest number is the oldest; `.gz` "
                  "files are gzipped) and the chain runs on from each file into the next newer one.")
        else:
            t.add_file("/app/logs/audit.log", "".join(x + "\n" for x in lines))
            files = "/app/logs/audit.log"
            t.say("`/app/logs/audit.log` is the audit log of our bastion host, copied off the box after the "
                  "intrusion. The logger seals every record.")
        t.say("A record is a line `<body> mac=<hex>`, where `<body>` is everything before the last ` mac=`. Its MAC "
              "is the lower-case hex HMAC-SHA256, keyed with the ASCII sealing key given below, of the previous "
              "record's stored MAC (as lower-case hex), a `|`, and the body; the first record's previous MAC is 64 "
              "zeros. A record verifies when its stored MAC equals the one computed from the stored previous "
              "record, whatever that record's own verdict."
              + (" MACs may be written in upper-case hex: compare them case-insensitively." if k.upper else "")
              + (" When the logger restarts it writes a body with the field `restart=1`; that record chains from "
                 "64 zeros again." if k.restarts else ""))
        v = t.deliver(key, "the sealing key")
        where = "`<file name>:<line number>` (e.g. `audit.log.1:7`, 1-based)" if variant == "rotated" else \
            "its 1-based line number"
        if variant == "anchor":
            t.say("How much of the log can we still trust? Write one line `<n> <mac>`: n is the number of records "
                  "from the top that verify before the first one that does not, and mac is the computed (lower-case) "
                  "MAC of the last of them.")
        else:
            t.say(f"List every record that fails to verify, one per line, in log order: {where}, a space, and the "
                  "lower-case MAC it should carry (computed as above).")
        t.add_solution_file("chain.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/chain.py "{v}" {variant} {files} '
                "> /app/out/chain.txt")
        t.expect_output("/app/out/chain.txt", truth, "the verified prefix" if variant == "anchor" else
                        "the failing records")
