"""Leaked credentials in git history: scan every commit reachable from one release branch (not the
others) for AWS key IDs, GitHub tokens, Slack webhooks and Stripe live keys, and say whether each is
still live at the branch tip or only in history. Traps: secrets on unrelated or later branches,
deleted files, merged feature branches, documented example keys, allow pragmas and near-miss
strings. Variant: a pre-commit secret detector judged on hidden benign and malicious files."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, unseen

REFERENCE = r'''
import hashlib
import hmac
import re
import subprocess
import sys

PATTERNS = [
    ("aws_access_key_id", re.compile(r"(?<![A-Za-z0-9])AKIA[0-9A-Z]{16}(?![A-Za-z0-9])")),
    ("github_token", re.compile(r"(?<![A-Za-z0-9])ghp_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    ("slack_webhook", re.compile(r"(?<![A-Za-z0-9])https://hooks\.slack\.com/services/T[A-Z0-9]{8}/B[A-Z0-9]{8}/"
                                 r"[A-Za-z0-9]{24}(?![A-Za-z0-9])")),
    ("stripe_live_key", re.compile(r"(?<![A-Za-z0-9])sk_live_[A-Za-z0-9]{24}(?![A-Za-z0-9])")),
    ("internal_token", re.compile(r"(?<![A-Za-z0-9])@PREFIX@_[0-9a-f]{32}(?![A-Za-z0-9])")),
]
ALLOWED = {"AKIAIOSFODNN7EXAMPLE"}
PRAGMA = @PRAGMA@


def scan(text):
    found = set()
    for line in text.splitlines():
        if PRAGMA and PRAGMA in line:
            continue
        for kind, rx in PATTERNS:
            for m in rx.finditer(line):
                if m.group(0) not in ALLOWED:
                    found.add((kind, m.group(0)))
    return found


def fingerprint(key, secret):
    return hmac.new(key.encode(), secret.encode(), hashlib.sha256).hexdigest()[:16]


def report(history_texts, tip_texts, key):
    seen, live = set(), set()
    for t in history_texts:
        seen |= scan(t)
    for t in tip_texts:
        live |= scan(t)
    rows = sorted((k, fingerprint(key, v), (k, v) in live) for k, v in seen)
    return "".join(f"{k} {f} {'live' if is_live else 'removed'}\n" for k, f, is_live in rows)


def blobs(repo, args):
    out = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout
    return sorted({line.split()[2] for line in out.splitlines() if line.split()[1] == "blob"})


def contents(repo, ids):
    texts = []
    for oid in ids:
        raw = subprocess.run(["git", "-C", repo, "cat-file", "blob", oid], capture_output=True, check=True).stdout
        texts.append(raw.decode("utf-8", "replace"))
    return texts


def audit(repo, branch, key):
    listing = subprocess.run(["git", "-C", repo, "rev-list", branch], capture_output=True, text=True,
                             check=True).stdout.split()
    history = set()
    for commit in listing:
        history.update(blobs(repo, ["ls-tree", "-r", commit]))
    tip = blobs(repo, ["ls-tree", "-r", branch])
    return report(contents(repo, sorted(history)), contents(repo, tip), key)


if __name__ == "__main__":
    if len(sys.argv) == 4:  # REPO BRANCH KEY
        sys.stdout.write(audit(sys.argv[1], sys.argv[2], sys.argv[3]))
    else:  # pre-commit mode: one file on stdin
        sys.exit(1 if scan(sys.stdin.read()) else 0)
'''

MKREPO = r'''
import json
import os
import subprocess
import sys

spec = json.load(open(sys.argv[1]))
repo = spec["repo"]
base_env = dict(os.environ, GIT_AUTHOR_NAME="Build Bot", GIT_AUTHOR_EMAIL="build@example.com",
                GIT_COMMITTER_NAME="Build Bot", GIT_COMMITTER_EMAIL="build@example.com", GIT_CONFIG_NOSYSTEM="1",
                HOME="/tmp")


def git(*args, date=None):
    env = dict(base_env)
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    subprocess.run(["git", "-C", repo, *args], check=True, env=env, stdout=subprocess.DEVNULL)


os.makedirs(repo)
git("init", "-q", "-b", "main")
born = False
for op in spec["ops"]:
    if op["op"] == "branch":
        git("branch", op["name"], op["from"])
    elif op["op"] == "commit":
        if born:
            git("checkout", "-q", op["branch"])
        born = True
        for path, text in sorted(op["files"].items()):
            full = os.path.join(repo, path)
            if text is None:
                os.remove(full)
            else:
                os.makedirs(os.path.dirname(full) or repo, exist_ok=True)
                with open(full, "w") as f:
                    f.write(text)
        git("add", "-A")
        git("commit", "-q", "-m", op["msg"], date=op["date"])
    elif op["op"] == "merge":
        git("checkout", "-q", op["into"])
        git("merge", "-q", "--no-ff", "-m", op["msg"], op["from"], date=op["date"])
git("checkout", "-q", "main")
'''

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


class _Secrets:
    def __init__(self, rng, prefix):
        self.rng, self.prefix = rng, prefix

    def s(self, alphabet, n):
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def real(self, kind=None):
        kind = kind or self.rng.choice(["aws", "gh", "slack", "stripe", "internal"])
        if kind == "internal":
            return f"{self.prefix}_" + self.s("0123456789abcdef", 32)
        if kind == "aws":
            return "AKIA" + self.s(UPNUM, 16)
        if kind == "gh":
            return "ghp_" + self.s(ALNUM, 36)
        if kind == "slack":
            return f"https://hooks.slack.com/services/T{self.s(UPNUM, 8)}/B{self.s(UPNUM, 8)}/{self.s(ALNUM, 24)}"
        return "sk_live_" + self.s(ALNUM, 24)

    def near(self):
        rng = self.rng
        return rng.choice([lambda: "AKIA" + self.s(UPNUM, 15), lambda: "AKIA" + self.s(UPNUM, 17),
                           lambda: "akia" + self.s(UPNUM, 16).lower(), lambda: "ghp_" + self.s(ALNUM, 35),
                           lambda: "sk_test_" + self.s(ALNUM, 24), lambda: "AKIAIOSFODNN7EXAMPLE",
                           lambda: "XAKIA" + self.s(UPNUM, 16), lambda: "ghp_" + self.s(ALNUM, 36) + "x9",
                           lambda: "https://hooks.slack.com/services/T" + self.s(UPNUM, 8) + "/B" + self.s(UPNUM, 8)
                           + "/XXXXXXXXXXXXXXXXXXXXXXX", lambda: f"{self.prefix}_" + self.s("0123456789ABCDEF", 32),
                           lambda: f"{self.prefix}_" + self.s("0123456789abcdef", 31),
                           lambda: f"{self.prefix.lower()}_" + self.s("0123456789abcdef", 32)])()


def _line(rng, secret, path):
    key = rng.choice(["API_KEY", "TOKEN", "ACCESS_KEY", "WEBHOOK", "SECRET", "CREDENTIAL"])
    if path.endswith(".py"):
        return f'{key} = "{secret}"'
    if path.endswith((".yml", ".yaml")):
        return f"  {key.lower()}: {secret}"
    if path.endswith(".json"):
        return f'  "{key.lower()}": "{secret}",'
    if path.endswith(".sh"):
        return f'export {key}="{secret}"'
    if path.endswith(".md"):
        return f"Use `{secret}` for the staging account."
    return f"{key}={secret}"


FILES = {"app/settings.py": ["import os", "", "DEBUG = False", 'DATABASE_URL = os.environ["DATABASE_URL"]',
                             'REGION = "eu-west-1"'],
         "deploy/notify.sh": ["#!/bin/sh", "set -e", 'curl -fsS -X POST -d "{\\"text\\": \\"deployed\\"}" "$HOOK"'],
         "ci/pipeline.yml": ["stages:", "  - test", "  - deploy", "vars:", "  region: eu-west-1"],
         "config/payments.json": ["{", '  "currency": "EUR",', '  "retries": 3', "}"],
         ".env.example": ["DATABASE_URL=postgres://localhost/app", "STRIPE_KEY=", "AWS_ACCESS_KEY_ID="],
         "README.md": ["# shop", "", "Run `make dev` to start.",
                       "Example AWS credentials from the docs: AKIAIOSFODNN7EXAMPLE (not real)."],
         "docs/runbook.md": ["# Runbook", "", "Page the on-call if the queue backs up."]}


class _Repo:
    """Simulates the history on the host: each branch's tree and every file text reachable from it."""

    def __init__(self):
        self.ops: list[dict] = []
        self.tree: dict[str, dict[str, str]] = {}
        self.seen: dict[str, list[str]] = {}
        self.day = 0

    def date(self):
        self.day += 1
        return f"2026-{1 + (self.day // 28) % 12:02d}-{1 + self.day % 28:02d}T09:{self.day % 60:02d}:00+00:00"

    def commit(self, branch, files, msg):
        tree = self.tree.setdefault(branch, {})
        self.seen.setdefault(branch, [])
        for p, text in files.items():
            if text is None:
                tree.pop(p, None)
            else:
                tree[p] = text
                self.seen[branch].append(text)
        self.ops.append({"op": "commit", "branch": branch, "files": files, "msg": msg, "date": self.date()})

    def branch(self, name, base):
        self.tree[name] = dict(self.tree[base])
        self.seen[name] = list(self.seen[base])
        self.ops.append({"op": "branch", "name": name, "from": base})

    def merge(self, into, frm, touched):
        for p in touched:
            if p in self.tree[frm]:
                self.tree[into][p] = self.tree[frm][p]
            else:
                self.tree[into].pop(p, None)
        self.seen[into] += self.seen[frm]
        self.ops.append({"op": "merge", "into": into, "from": frm, "msg": f"Merge branch '{frm}'",
                         "date": self.date()})


# Level 0's detector: the internal token alone.
ATOMIC_DETECTOR = r'''
import re
import sys

TOKEN = re.compile(r"(?<![A-Za-z0-9])@PREFIX@_[0-9a-f]{32}(?![A-Za-z0-9])")
sys.exit(1 if TOKEN.search(sys.stdin.read()) else 0)
'''
# Level 0's leak: one kind, its grep pattern and its description.
ATOMIC_KINDS = {"aws": ("AWS access key ID", "AKIA[0-9A-Z]{16}", "`AKIA` followed by 16 characters from `A-Z0-9`"),
                "gh": ("GitHub token", "ghp_[A-Za-z0-9]{36}", "`ghp_` followed by 36 characters from `A-Za-z0-9`"),
                "stripe": ("Stripe live key", "sk_live_[A-Za-z0-9]{24}",
                           "`sk_live_` followed by 24 characters from `A-Za-z0-9`")}
STOCK = "\n".join("\n".join(v) for v in FILES.values())


@dataclass(frozen=True)
class Knobs:
    commits: int  # commits of ordinary work (about)
    removed: bool  # secrets scrubbed later (only in history)
    decoy_branch: bool  # an experiment branch with its own secrets
    pragma: bool  # an allow pragma that silences a line
    merge: bool  # a merged feature branch
    deleted_file: bool  # a file with a secret, added and deleted again
    items: int  # benign and malicious files each (the detector variant)


def _text(lines):
    return "\n".join(lines) + "\n"


@register
class GitSecretScan(Family):
    name = "git_secret_scan"
    domain = "security"
    skill_types = ("Secrets Management", "Forensics")
    primitive_skills = ("secret pattern detection", "git history forensics", "false-positive suppression",
                        "regular expressions", "allowlist and denylist matching")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "adversarial_corpus")
    programs = {"Python": REFERENCE}
    levels = {0: Knobs(commits=2, removed=False, decoy_branch=False, pragma=False, merge=False, deleted_file=False,
                       items=10),
              1: Knobs(commits=6, removed=False, decoy_branch=False, pragma=False, merge=False, deleted_file=False,
                       items=20),
              2: Knobs(commits=10, removed=True, decoy_branch=False, pragma=False, merge=False, deleted_file=False,
                       items=30),
              3: Knobs(commits=14, removed=True, decoy_branch=True, pragma=True, merge=False, deleted_file=True,
                       items=40),
              4: Knobs(commits=20, removed=True, decoy_branch=True, pragma=True, merge=True, deleted_file=True,
                       items=60)}

    def patterns(self, prefix: str | None, pragma: str) -> str:
        """The secret patterns as the instruction states them (``prefix`` None: the delivered one)."""
        return ("`aws_access_key_id`: `AKIA` followed by 16 characters from `A-Z0-9`; `github_token`: `ghp_` "
                "followed by 36 characters from `A-Za-z0-9`; `slack_webhook`: `https://hooks.slack.com/services/"
                "T<8 of A-Z0-9>/B<8 of A-Z0-9>/<24 of A-Za-z0-9>`; `stripe_live_key`: `sk_live_` followed by 24 "
                "characters from `A-Za-z0-9`; `internal_token` (our own API tokens): "
                + ("the token prefix given above" if prefix is None else f"`{prefix}`")
                + ", then `_`, then 32 lowercase hex digits. A match counts only if the character just "
                "before it and the one "
                "just after it (where there is one) are not ASCII letters or digits. The AWS documentation "
                "example `AKIAIOSFODNN7EXAMPLE` is never a finding."
                + (f" A line containing `{pragma}` was reviewed and is ignored entirely." if pragma else ""))

    def _atomic_corpus(self, t: TaskBuilder) -> None:
        """Level 0: reject a file holding one of our internal tokens; other teams' tokens pass."""
        k, rng = t.knobs, t.rng
        prefix = unseen(t, lambda: t.code(2), STOCK)
        others = distinct(lambda: t.code(2), 3, [prefix])
        paths = sorted(p for p in FILES if p != "README.md")  # its documented example key is no finding here

        def item(token):
            path = rng.choice(paths)
            lines = list(FILES[path])
            if token:
                hexes = "".join(rng.choice("0123456789abcdef") for _ in range(32))
                lines.insert(rng.randrange(1, len(lines) + 1), _line(rng, f"{token}_{hexes}", path))
            return _text(lines)

        clean = [item(rng.choice([None, *others])) for _ in range(k.items)]
        bad = [item(prefix) for _ in range(k.items)]
        who = t.deliver(prefix, "the internal token prefix")
        t.say("Write a pre-commit check for our internal API tokens. It reads one staged file on standard input and "
              "rejects it if it contains an internal token: the token prefix given above, then `_`, then 32 "
              "lowercase hex digits (no ASCII letter or digit just before or after). Other teams' tokens (another "
              "prefix) are fine.")
        t.expect_classifier("Reject (exit 1) files with an internal token, accept (exit 0) the rest.", clean, bad,
                            {"Python": fill(ATOMIC_DETECTOR, PREFIX="@@PREFIX@@")})
        t.solve(f'test -n "{who}"\nsed -i "s/@@PREFIX@@/{who}/" /app/solution.py')

    def _atomic_output(self, t: TaskBuilder) -> None:
        """Level 0: one secret in one file at the tip; its fingerprint is one grep and one HMAC."""
        rng = t.rng
        kind = rng.choice(sorted(ATOMIC_KINDS))
        what, rx, shape = ATOMIC_KINDS[kind]
        secret = _Secrets(rng, "").real(kind)
        stock = ["app/settings.py", "ci/pipeline.yml", "config/payments.json", "deploy/notify.sh"]
        path = rng.choice(stock)
        repo = _Repo()
        repo.commit("main", {p: _text(FILES[p]) for p in stock}, "Initial import")
        lines = list(FILES[path])
        lines.insert(rng.randrange(1, len(lines) + 1), _line(rng, secret, path))
        repo.commit("main", {path: _text(lines)}, "Wire up credentials")
        t.add_file("/tmp/tmax-fixture/history.json",
                   json.dumps({"repo": "/app/repo", "ops": repo.ops}, indent=0, sort_keys=True) + "\n")
        t.add_file("/tmp/tmax-fixture/mkrepo.py", MKREPO)
        t.add_setup("python3 /tmp/tmax-fixture/mkrepo.py /tmp/tmax-fixture/history.json && "
                    "rm -f /tmp/tmax-fixture/history.json /tmp/tmax-fixture/mkrepo.py")
        key = unseen(t, lambda: t.code(2))  # keys the fingerprint: nothing shown may spell it
        truth = hmac.new(key.encode(), secret.encode(), hashlib.sha256).hexdigest()[:16] + "\n"
        who = t.deliver(key, "the report key")
        t.say(f"`/app/repo` is our git repository. Its file `{path}` leaks one {what} ({shape}). Report it "
              f"without repeating it: write its fingerprint, the first 16 hex digits (lowercase) of the HMAC-SHA256 "
              f"of the secret's exact text keyed with the report key given above (its ASCII bytes), as one line.")
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\ns=$(grep -oE \'{rx}\' /app/repo/{path})\n'
                "python3 -c 'import hashlib, hmac, sys; print(hmac.new(sys.argv[1].encode(), sys.argv[2].encode(), "
                f"hashlib.sha256).hexdigest()[:16])' \"{who}\" \"$s\" > /app/out/leaks.txt")
        t.expect_output("/app/out/leaks.txt", truth, "the fingerprint")

    def corpus_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self._atomic_corpus(t)
        k, rng = t.knobs, t.rng
        pragma = "secretscan:allow" if k.pragma else ""
        patterns = self.patterns(None, pragma)
        # The delivered prefix must be a word that no stock file (the clean example among them) spells.
        prefix = unseen(t, lambda: t.code(2), STOCK, patterns)
        sec = _Secrets(rng, prefix)
        ns = run_python(fill(REFERENCE, PRAGMA=repr(pragma), PREFIX=prefix))
        clean, bad = [], []
        paths = sorted(FILES)
        for _ in range(100 * k.items):
            if len(clean) >= k.items and len(bad) >= k.items:
                break
            path = rng.choice(paths)
            lines = list(FILES[path])
            for _ in range(rng.randrange(1, 4)):
                lines.insert(rng.randrange(len(lines) + 1), _line(rng, sec.near(), path))
            if rng.random() < 0.5:
                line = _line(rng, sec.real(), path)
                if pragma and rng.random() < 0.25:
                    line += f"  # {pragma}"
                lines.insert(rng.randrange(len(lines) + 1), line)
            text = _text(lines)
            (bad if ns["scan"](text) else clean).append(text)
        else:
            raise FamilyError("git_secret_scan: too few clean or secret files drawn")
        clean, bad = clean[:k.items], bad[:k.items]
        # Files whose only secret is an internal token: a detector with any other prefix lets them through.
        for i in range(min(3, len(bad))):
            path = rng.choice(paths)
            lines = list(FILES[path])
            lines.insert(rng.randrange(1, len(lines) + 1), _line(rng, sec.real("internal"), path))
            bad[i] = _text(lines)
        for _ in range(100):  # the example must not show the prefix
            near = sec.near()
            if prefix.lower() not in near.lower():
                break
        else:
            raise FamilyError("git_secret_scan: every near miss drawn showed the prefix")
        t.add_file("/app/examples/clean_settings.py", _text(FILES["app/settings.py"] + [_line(rng, near, "x.py")]))
        who = t.deliver(prefix, "the internal token prefix")
        t.say(f"We keep leaking credentials into git. Write a pre-commit secret detector. It reads one staged "
              f"file's full text on standard input and must reject it "
              f"if it contains a secret, and accept it otherwise. Secrets are: {patterns} Near misses (wrong "
              f"length, wrong case, test keys) are not secrets and must not block a commit; "
              f"`/app/examples/clean_settings.py` is a file that must pass.")
        # The oracle's detector gets the delivered prefix, not a copy with it baked in.
        t.expect_classifier("Reject (exit 1) files with a secret, accept (exit 0) the rest.", clean, bad,
                            {"Python": fill(REFERENCE, PRAGMA=repr(pragma), PREFIX="@@PREFIX@@")})
        t.solve(f'test -n "{who}"\nsed -i "s/@@PREFIX@@/{who}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self._atomic_output(t)
        k, rng = t.knobs, t.rng
        pragma = "secretscan:allow" if k.pragma else ""
        prefix = unseen(t, lambda: t.code(1), STOCK)  # stated, not delivered: no stock line may spell it
        patterns = self.patterns(prefix, pragma)
        sec = _Secrets(rng, prefix)
        ref_src = fill(REFERENCE, PRAGMA=repr(pragma), PREFIX=prefix)
        ns = run_python(ref_src)
        # -- the repository -----------------------------------------------------------------
        repo = _Repo()
        codes = distinct(lambda: t.code(1), 3)
        target = f"release/{codes[0]}"
        files = {p: list(v) for p, v in FILES.items()}

        def put(branch, path, line, msg, at=None):
            lines = list(repo.tree.get(branch, {}).get(path, _text(files.get(path, ["# " + path]))).splitlines())
            lines.insert(at if at is not None else rng.randrange(1, len(lines) + 1), line)
            repo.commit(branch, {path: _text(lines)}, msg)

        def scrub(branch, path, secret, msg):
            text = repo.tree[branch][path]
            lines = [(ln.replace(secret, "${FROM_VAULT}") if secret in ln else ln) for ln in text.splitlines()]
            repo.commit(branch, {path: _text(lines)}, msg)

        paths = sorted(FILES)
        repo.commit("main", {p: _text(v) for p, v in files.items()}, "Initial import")
        msgs = ["Fix typo", "Bump retries", "Add region", "Tidy config", "Update runbook", "Hotfix deploy script",
                "Wire up notifications", "Rotate settings", "Add payments config", "CI tweaks"]
        planted = []  # (branch, path, secret)

        def work(branch, n, allow_secret=True, removable=True):
            for _ in range(n):
                path = rng.choice(paths)
                r = rng.random()
                if allow_secret and r < 0.45:
                    s = sec.real()
                    line = _line(rng, s, path)
                    if pragma and rng.random() < 0.2:
                        line += f"  # {pragma}"
                    put(branch, path, line, rng.choice(msgs))
                    planted.append((branch, path, s))
                elif r < 0.65 and removable and k.removed and [p for p in planted if p[0] == branch]:
                    b, p, s = rng.choice([p for p in planted if p[0] == branch])
                    if p in repo.tree[branch] and s in repo.tree[branch][p]:
                        scrub(branch, p, s, "Move credentials to the vault")
                    else:
                        put(branch, path, _line(rng, sec.near(), path), rng.choice(msgs))
                else:
                    put(branch, path, _line(rng, sec.near(), path) if rng.random() < 0.5 else
                        f"# {rng.choice(msgs).lower()} ({rng.randrange(1000)})", rng.choice(msgs))

        n = k.commits
        work("main", n // 3)
        repo.branch(target, "main")
        repo.branch(f"release/{codes[1]}", "main")
        work(target, n // 3)
        s = sec.real()
        path = rng.choice(paths)
        put(target, path, _line(rng, s, path), "Temporary credentials for the demo")
        if k.removed and rng.random() < 0.5:
            scrub(target, path, s, "Remove demo credentials")
        if k.deleted_file:
            s = sec.real()
            repo.commit(target, {"scripts/bootstrap.sh": _text(["#!/bin/sh", _line(rng, s, "x.sh")])},
                        "Add bootstrap script")
            repo.commit(target, {"scripts/bootstrap.sh": None}, "Remove bootstrap script")
        if k.merge:
            feat = f"feature/{rng.choice(['sso', 'refunds', 'exports'])}"
            repo.branch(feat, target)
            s1, s2 = sec.real(), sec.real()
            fpath = f"{feat.split('/')[1]}/client.py"
            repo.commit(feat, {fpath: _text(["import os", _line(rng, s1, fpath), _line(rng, s2, fpath)])},
                        "Feature client")
            text = repo.tree[feat][fpath].replace(s1, "${FROM_VAULT}")
            repo.commit(feat, {fpath: text}, "Do not hard-code the key")
            work(target, 2, removable=False)
            repo.merge(target, feat, [fpath])
        work(target, n // 3)
        work("main", max(2, n // 4), removable=False)  # after the fork: not reachable from the target
        work(f"release/{codes[1]}", 2, removable=False)
        if k.decoy_branch:
            repo.branch("experiment", "main")
            work("experiment", 3, removable=False)
        history = json.dumps({"repo": "/app/repo", "ops": repo.ops}, indent=0, sort_keys=True) + "\n"
        t.add_file("/tmp/tmax-fixture/history.json", history)
        t.add_file("/tmp/tmax-fixture/mkrepo.py", MKREPO)
        # The report key keys every finding's fingerprint, so no visible text may spell it.
        key = unseen(t, lambda: t.code(2), patterns)
        truth = ns["report"](repo.seen[target], [repo.tree[target][p] for p in sorted(repo.tree[target])], key)
        t.add_setup("python3 /tmp/tmax-fixture/mkrepo.py /tmp/tmax-fixture/history.json && "
                    "rm -f /tmp/tmax-fixture/history.json /tmp/tmax-fixture/mkrepo.py")
        who = t.deliver(key, "the report key")
        t.say(f"Before we open-source our shop, we must know which credentials ever leaked into it. `/app/repo` is the "
              f"git repository. Audit the branch `{target}`: every commit "
              f"reachable from its tip (merged branches included, other branches excluded), every file in every "
              f"such commit. Secrets are: {patterns}")
        t.add_solution_file("secrets_audit.py", ref_src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/secrets_audit.py /app/repo "{target}" "{who}" > /app/out/leaks.txt')
        fmt = ("one line per distinct secret: `<type> <fingerprint> <status>`; the report must not repeat the "
               "secrets themselves, so the fingerprint is the first 16 hex digits (lowercase) of the HMAC-SHA256 "
               "of the secret's exact text, keyed with the report key given above (its ASCII bytes); the status is "
               "`live` if the secret is still in some file at the branch tip and `removed` if it is only in "
               "history; sorted by type, then fingerprint (byte order)")
        t.say(f"Report format: {fmt}.")
        t.expect_output("/app/out/leaks.txt", truth, "the leak report")
