"""Whose SSH keys can log in to one server? A fleet export holds every host's `authorized_keys` files
under a folder named by a hash of the host name (delivered). Variants: `revoked` lists each account that
still accepts a key from the incident's revocation list, `weak` lists keys the key policy forbids (short
RSA moduli; higher up, root keys without a `from=` restriction), `access` joins the keys with the key
registry to say which person can log in to which account. Fingerprints are OpenSSH's SHA256 ones, so
the comments (which lie) decide nothing. Higher levels add blank and comment lines, option prefixes with
quoted commas and spaces, disabled (commented-out) keys, the root account, repeated keys and
`expiry-time` options that have run out."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.security import _fleet as fleet

REFERENCE = r'''
import base64
import hashlib
import os
import sys

NOW = @NOW@  # the audit time, YYYYMMDDHHMM (UTC); a key whose expiry-time is not after it is off
MIN_BITS = @MIN_BITS@  # RSA moduli shorter than this are weak
ROOT_FROM = @ROOT_FROM@  # weak also: a root key without a from= option
TYPES = ("ssh-rsa", "ssh-ed25519")


def options(text):
    """The comma-separated options, commas inside double quotes kept."""
    out, cur, q = [], "", False
    for c in text:
        if c == '"':
            q = not q
        if c == "," and not q:
            out.append(cur)
            cur = ""
        else:
            cur += c
    return out + [cur] if text else out


def parse(line):
    """(options, type, blob) of an active key line, or None."""
    s = line.strip()
    if not s or s.startswith("#"):
        return None
    opts = ""
    if not s.startswith(TYPES):
        i, q = 0, False
        while i < len(s) and (q or s[i] not in " \t"):
            q = q != (s[i] == '"')
            i += 1
        opts, s = s[:i], s[i:].lstrip()
    ktype, b64 = s.split()[:2]
    opts = options(opts)
    for o in opts:
        if o.startswith("expiry-time=") and int(o.split("=", 1)[1].strip('"').ljust(12, "0")) <= NOW:
            return None
    return opts, ktype, base64.b64decode(b64)


def fingerprint(blob):
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def bits(blob):
    if not blob.startswith(b"\x00\x00\x00\x07ssh-rsa"):
        return 256
    p = 11
    for _ in range(2):  # e, then n
        n = int.from_bytes(blob[p:p + 4], "big")
        val = blob[p + 4:p + 4 + n]
        p += 4 + n
    return int.from_bytes(val, "big").bit_length()


def audit(files, variant, listing):
    """files: account -> authorized_keys text; listing: the revocation list or the key registry."""
    rows = set()
    table = {}
    for line in listing.splitlines():
        f = line.split()
        if len(f) >= 2 and not line.startswith("#"):
            fp, who = (f[0], f[1]) if f[0].startswith("SHA256:") else (f[1], f[0])
            table[fp] = who
    for acct in sorted(files):
        for line in files[acct].splitlines():
            got = parse(line)
            if got is None:
                continue
            opts, ktype, blob = got
            fp = fingerprint(blob)
            if variant == "revoked" and fp in table:
                rows.add(f"{acct} {fp}")
            elif variant == "weak":
                if ktype == "ssh-rsa" and bits(blob) < MIN_BITS:
                    rows.add(f"{acct} {fp} short-rsa")
                if ROOT_FROM and acct == "root" and not any(o.startswith("from=") for o in opts):
                    rows.add(f"{acct} {fp} unrestricted-root")
            elif variant == "access":
                rows.add(f"{table.get(fp, 'unknown:' + fp)} {acct}")
    return "".join(r + "\n" for r in sorted(rows))


def read_host(root):
    files = {}
    for acct, path in [("root", "root")] + [(u, "home/" + u) for u in sorted(os.listdir(root + "/home"))]:
        p = f"{root}/{path}/.ssh/authorized_keys"
        if os.path.isfile(p):
            files[acct] = open(p).read()
    return files


if __name__ == "__main__":  # keys.py HOST_ROOT revoked|weak|access [LIST]
    listing = open(sys.argv[3]).read() if len(sys.argv) > 3 else ""
    sys.stdout.write(audit(read_host(sys.argv[1]), sys.argv[2], listing))
'''

ACCOUNTS = ("deploy", "alice", "bob", "carol", "backup", "ci", "git", "dmitri", "erin", "svc-metrics")
PEOPLE = ("alice", "bob", "carol", "dmitri", "erin", "farid", "grace", "hiro", "ines", "jon")
FROMS = ('from="10.20.0.0/16"', 'from="192.168.1.*,10.0.0.5"', 'from="!10.9.9.9,10.0.0.0/8"')
CMDS = ('command="/usr/bin/rrsync -ro /srv/backup"', 'command="echo no shell, sorry; exit 1"',
        'command="/usr/local/bin/deploy --env prod, staging"')


def _s(b: bytes) -> bytes:
    return len(b).to_bytes(4, "big") + b


def _key(rng, rsa_bits):
    """(type, base64 blob): a key of the given RSA size, or ed25519 for 0."""
    if not rsa_bits:
        return "ssh-ed25519", base64.b64encode(_s(b"ssh-ed25519") + _s(rng.randbytes(32))).decode()
    n = rng.getrandbits(rsa_bits) | (1 << (rsa_bits - 1)) | 1
    nb = b"\x00" + n.to_bytes(rsa_bits // 8, "big")  # mpint: a leading zero keeps it positive
    return "ssh-rsa", base64.b64encode(_s(b"ssh-rsa") + _s(b"\x01\x00\x01") + _s(nb)).decode()


def _fp(b64: str) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(base64.b64decode(b64)).digest()).decode().rstrip("=")


@dataclass(frozen=True)
class Knobs:
    accounts: int  # accounts with an authorized_keys file on each host
    keys: tuple[int, int]  # key lines per file (range)
    decoys: int  # other hosts of the fleet, built the same way
    traps: int  # 1: blank/comment lines; 2: options, disabled keys; 3: root, repeats; 4: expiry-time


@register
class SshAuthorizedKeysAudit(Family):
    name = "ssh_authorized_keys_audit"
    domain = "security"
    skill_types = ("Access Control", "Secrets Management")
    primitive_skills = ("SSH key fingerprinting", "config file parsing", "credential audit reporting",
                        "allowlist and denylist matching")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("revoked", "weak", "access")
    levels = {0: Knobs(accounts=1, keys=(3, 5), decoys=2, traps=0),
              1: Knobs(accounts=3, keys=(2, 5), decoys=2, traps=1),
              2: Knobs(accounts=4, keys=(3, 6), decoys=3, traps=2),
              3: Knobs(accounts=5, keys=(3, 7), decoys=3, traps=3),
              4: Knobs(accounts=7, keys=(4, 8), decoys=3, traps=4)}

    def _pool(self, t):
        """Every key of the fleet: (person or None, type, blob, comment)."""
        rng = t.rng
        pool = []
        for p in PEOPLE:
            for _ in range(rng.choice([1, 1, 2])):
                ktype, blob = _key(rng, rng.choice([0, 0, 1024, 2048, 3072, 4096]))
                pool.append((p, ktype, blob, f"{p}@{rng.choice(['laptop', 'desk', 'yubikey', 'old-mac'])}"))
        for _ in range(4):  # keys nobody registered
            ktype, blob = _key(rng, rng.choice([0, 1024, 2048]))
            pool.append((None, ktype, blob, rng.choice(["temp", "jenkins", "root@build", "alice@laptop"])))
        return pool

    def _host(self, t, pool, now):
        """account -> authorized_keys text for one host."""
        k, rng = t.knobs, t.rng
        accts = (["root"] if k.traps >= 3 else []) + rng.sample(ACCOUNTS, k.accounts)
        files = {}
        for acct in accts:
            lines = []
            for key in rng.sample(pool, rng.randrange(*k.keys)):
                _, ktype, blob, comment = key
                # a copied key keeps a lying comment now and then: only the fingerprint identifies it
                comment = rng.choice(pool)[3] if rng.random() < 0.2 else comment
                opts = []
                if k.traps >= 2 and rng.random() < 0.4:
                    opts = rng.sample([*FROMS[:1], *CMDS, "no-pty", "no-port-forwarding"], rng.randrange(1, 3))
                if acct == "root" and rng.random() < 0.5:
                    opts.insert(0, rng.choice(FROMS))
                if k.traps >= 4 and rng.random() < 0.3:
                    when = now + dt.timedelta(hours=rng.choice([-1, 1]) * rng.randrange(1, 2000))
                    opts.append(f'expiry-time="{when:%Y%m%d%H%M}"')
                line = (",".join(opts) + " " if opts else "") + f"{ktype} {blob} {comment}"
                if k.traps >= 2 and rng.random() < 0.15:
                    line = "# " + line  # disabled: sshd ignores it
                lines.append(line)
                if k.traps >= 3 and rng.random() < 0.1:
                    lines.append(line)
            if k.traps >= 1:
                lines.insert(rng.randrange(len(lines) + 1), f"# managed by ops, ticket {rng.randrange(1000, 9999)}")
                lines.insert(rng.randrange(len(lines) + 1), "")
            files[acct] = "".join(x + "\n" for x in lines)
        return files

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        now = dt.datetime(2026, 1, 1, 9, 30) + dt.timedelta(hours=rng.randrange(8000))
        min_bits = 2048 if k.traps < 2 else rng.choice([2048, 3072])
        src = fill(REFERENCE, NOW=int(f"{now:%Y%m%d%H%M}"), MIN_BITS=min_bits, ROOT_FROM=k.traps >= 3)
        ref = run_python(src)
        pool = self._pool(t)
        if variant == "revoked":  # a third of the fleet's keys, wherever they are
            listing = "".join(f"{_fp(blob)} revoked {rng.choice(['lost laptop', 'left company', 'leaked'])}\n"
                              for _, _, blob, _ in rng.sample(pool, len(pool) // 3))
        else:
            listing = "".join(f"{p} {_fp(blob)}\n" for p, _, blob, _ in pool if p) if variant == "access" else ""
        hosts, truth = fleet.pick(t, lambda: [self._host(t, pool, now) for _ in range(1 + k.decoys)],
                                  lambda h: ref["audit"](h, variant, listing))
        target = fleet.ship(t, "/app/fleet", [{("root" if a == "root" else f"home/{a}") + "/.ssh/authorized_keys": x
                                               for a, x in h.items()} for h in hosts], listing)
        lfile = {"revoked": "/app/revoked_keys.txt", "access": "/app/key_registry.txt"}.get(variant)
        if lfile:
            t.add_file(lfile, listing)
        who = fleet.intro(t, "/app/fleet", "last night's export of our servers' SSH access (`root/.ssh/authorized_keys` "
                          "for root, `home/<account>/.ssh/authorized_keys` for the others), each server's", "server",
                          target)
        rules = ["A key is identified by its OpenSSH SHA256 fingerprint (`ssh-keygen -lf` prints it: `SHA256:` and "
                 "the unpadded base64 of the SHA-256 of the decoded key blob); the comment after the key proves "
                 "nothing."]
        if k.traps >= 1:
            rules.append("Blank lines and lines starting with `#` are not keys (a commented-out key is disabled).")
        if k.traps >= 2:
            rules.append("A key line may start with sshd options (`from=`, `command=`, `no-pty`, ...), separated by "
                         "commas; a quoted option value can contain commas and spaces.")
        if k.traps >= 4:
            rules.append(f'A key with an option `expiry-time="YYYYMMDDHHMM"` (UTC) is no longer accepted once that '
                         f"time is not after the audit time, {now:%Y%m%d%H%M}.")
        t.say(" ".join(rules))
        if variant == "revoked":
            t.say("`/app/revoked_keys.txt` is the incident's revocation list: a fingerprint per line, then a note. "
                  "List every account on that server that still accepts a revoked key, one line "
                  "`<account> <fingerprint>` per account and revoked key (once, however often it appears).")
        elif variant == "weak":
            extra = (" Also flag every root key that has no `from=` option, as `<account> <fingerprint> "
                     "unrestricted-root` (a key can get both lines)." if k.traps >= 3 else "")
            t.say(f"Our key policy forbids RSA keys whose modulus is shorter than {min_bits} bits (ed25519 keys are "
                  f"fine). List every forbidden key an account on that server accepts, one line `<account> "
                  f"<fingerprint> short-rsa` per account and key (once, however often it appears).{extra}")
        else:
            t.say("`/app/key_registry.txt` maps people to their keys: `<person> <fingerprint>` per line. Who can log "
                  "in where? Write one line `<person> <account>` for each account on that server and each person "
                  "with a key it accepts; a key missing from the registry counts as the person "
                  "`unknown:<fingerprint>`. Each line once.")
        t.say("Sort the lines in byte order (`LC_ALL=C sort -u`).")
        fleet.solve(t, who, "keys.py", src, "/app/fleet/{KEY}", f"{variant} {lfile or ''}", "/app/out/keys.txt")
        t.expect_output("/app/out/keys.txt", truth, "the key audit")
