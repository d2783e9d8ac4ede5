"""Leaked credentials in git history: scan every commit reachable from one release branch (not the
others) for AWS key IDs, GitHub tokens, Slack webhooks and Stripe live keys, and say whether each is
still live at the branch tip or only in history. Traps: secrets on unrelated or later branches,
deleted files, merged feature branches, documented example keys, allow pragmas and near-miss
strings. Variants: the leak report (type, keyed fingerprint, live or removed); each secret's origin
(the oldest reachable commit holding it, by date, and its file); or a `git filter-repo --replace-text`
file that redacts every leaked secret to a fingerprinted marker. Under adversarial_corpus the same
variants are a pre-commit detector on whole files, a pre-receive check on a commit's diff (added lines
only), and a review check that a diff is a clean scrub (removes a secret, adds none)."""

from __future__ import annotations

import difflib
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
MODE = @MODE@  # what the pre-commit mode judges: file, added (a diff's + lines) or scrub (a diff)


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


def origins(versions, key):
    """versions: (commit date, path, text) of every file version reachable; per secret, the oldest."""
    first = {}
    for date, path, text in sorted(versions):
        for _, v in scan(text):
            first.setdefault(v, (date[:10], path))
    return "".join(f"{f} {d} {p}\n" for d, f, p in sorted((d, fingerprint(key, v), p) for v, (d, p) in first.items()))


def replacements(history_texts, key):
    seen = set()
    for t in history_texts:
        seen |= scan(t)
    return "".join(f"{v}==>REDACTED-{fingerprint(key, v)}\n" for v in sorted({v for _, v in seen}))


def side(diff, sign):
    """The added (+) or removed (-) lines of a unified diff, without the file headers."""
    return "\n".join(line[1:] for line in diff.splitlines()
                     if line.startswith(sign) and not line.startswith(sign * 3 + " "))


def rejected(text):
    if MODE == "file":
        return bool(scan(text))
    added = scan(side(text, "+"))
    return bool(added) if MODE == "added" else bool(added) or not scan(side(text, "-"))


def blobs(repo, args):
    out = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout
    return sorted({line.split()[2] for line in out.splitlines() if line.split()[1] == "blob"})


def contents(repo, ids):
    texts = []
    for oid in ids:
        raw = subprocess.run(["git", "-C", repo, "cat-file", "blob", oid], capture_output=True, check=True).stdout
        texts.append(raw.decode("utf-8", "replace"))
    return texts


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout


def audit(repo, branch, key, variant="leaks"):
    listing = git(repo, "rev-list", branch).split()
    if variant == "origins":
        versions = []
        for commit in listing:
            date = git(repo, "show", "-s", "--format=%aI", commit).strip()
            for line in git(repo, "ls-tree", "-r", commit).splitlines():
                meta, path = line.split("\t", 1)
                versions.append((date, path, contents(repo, [meta.split()[2]])[0]))
        return origins(versions, key)
    history = set()
    for commit in listing:
        history.update(blobs(repo, ["ls-tree", "-r", commit]))
    if variant == "purge":
        return replacements(contents(repo, sorted(history)), key)
    tip = blobs(repo, ["ls-tree", "-r", branch])
    return report(contents(repo, sorted(history)), contents(repo, tip), key)


if __name__ == "__main__":
    if len(sys.argv) >= 4:  # REPO BRANCH KEY [VARIANT]
        sys.stdout.write(audit(*sys.argv[1:5]))
    else:  # pre-commit mode: one file or diff on stdin
        sys.exit(1 if rejected(sys.stdin.read()) else 0)
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

    def __init__(self, day=0):
        self.ops: list[dict] = []
        self.tree: dict[str, dict[str, str]] = {}
        self.seen: dict[str, list[str]] = {}
        self.versions: dict[str, list[tuple[str, str, str]]] = {}  # (commit date, path, text) reachable
        self.day = day

    def date(self):
        self.day += 1
        return f"2026-{1 + (self.day // 28) % 12:02d}-{1 + self.day % 28:02d}T09:{self.day % 60:02d}:00+00:00"

    def commit(self, branch, files, msg):
        tree = self.tree.setdefault(branch, {})
        self.seen.setdefault(branch, [])
        date = self.date()
        for p, text in files.items():
            if text is None:
                tree.pop(p, None)
            else:
                tree[p] = text
                self.seen[branch].append(text)
                self.versions.setdefault(branch, []).append((date, p, text))
        self.ops.append({"op": "commit", "branch": branch, "files": files, "msg": msg, "date": date})

    def branch(self, name, base):
        self.tree[name] = dict(self.tree[base])
        self.seen[name] = list(self.seen[base])
        self.versions[name] = list(self.versions[base])
        self.ops.append({"op": "branch", "name": name, "from": base})

    def merge(self, into, frm, touched):
        for p in touched:
            if p in self.tree[frm]:
                self.tree[into][p] = self.tree[frm][p]
            else:
                self.tree[into].pop(p, None)
        self.seen[into] += self.seen[frm]
        self.versions[into] += self.versions[frm]
        self.ops.append({"op": "merge", "into": into, "from": frm, "msg": f"Merge branch '{frm}'",
                         "date": self.date()})


# Level 0's detector: the internal token alone, in a file or in a diff's added or removed lines.
ATOMIC_DETECTOR = r'''
import re
import sys

TOKEN = re.compile(r"(?<![A-Za-z0-9])@PREFIX@_[0-9a-f]{32}(?![A-Za-z0-9])")
MODE = @MODE@
text = sys.stdin.read()


def holds(sign):
    return any(TOKEN.search(x) for x in text.splitlines() if x.startswith(sign) and not x.startswith(sign * 3 + " "))


bad = TOKEN.search(text) if MODE == "file" else holds("+") if MODE == "added" else holds("+") or not holds("-")
sys.exit(1 if bad else 0)
'''
MSGS = ["Fix typo", "Bump retries", "Add region", "Tidy config", "Update runbook", "Hotfix deploy script",
        "Wire up notifications", "Rotate settings", "Add payments config", "CI tweaks"]
MODES = {"leaks": "file", "origins": "added", "purge": "scrub"}  # what each variant's detector judges
TOPS = {"app": ("app", "shop", "service", "backend", "api"), "deploy": ("deploy", "ops", "scripts"),
        "ci": ("ci", "build", "pipelines"), "config": ("config", "conf", "settings"), "docs": ("docs", "doc", "wiki")}
NOTES = ("owner", "payments", "team", "review", "quarterly", "legacy", "staging", "rotate", "vendor", "audit",
         "billing", "cleanup", "oncall", "migration", "region", "cache", "queue", "retry", "export", "nightly")
# Level 0's leak: one kind, its grep pattern and its description.
ATOMIC_KINDS = {"aws": ("AWS access key ID", "AKIA[0-9A-Z]{16}", "`AKIA` followed by 16 characters from `A-Z0-9`"),
                "gh": ("GitHub token", "ghp_[A-Za-z0-9]{36}", "`ghp_` followed by 36 characters from `A-Za-z0-9`"),
                "stripe": ("Stripe live key", "sk_live_[A-Za-z0-9]{24}",
                           "`sk_live_` followed by 24 characters from `A-Za-z0-9`")}
STOCK = "\n".join("\n".join(v) for v in FILES.values())


def _stock(rng, n):
    """``n`` stock files, moved under drawn top directories, each with a drawn note line where the format has
    comments: small repositories of different seeds differ in more than the secret."""
    out = {}
    for path in rng.sample(sorted(p for p in FILES if p not in ("README.md", ".env.example")), n):
        top, _, rest = path.partition("/")
        lines = list(FILES[path])
        if not path.endswith(".json"):
            note = " ".join(rng.sample(NOTES, rng.randrange(2, 5)))
            lines.insert(rng.randrange(1, len(lines) + 1), note.capitalize() + "." if path.endswith(".md") else f"# {note}")
        out[f"{rng.choice(TOPS[top])}/{rest}"] = lines
    return out


def _diff(path, before, after):
    return "".join(difflib.unified_diff(_text(before).splitlines(True), _text(after).splitlines(True),
                                        f"a/{path}", f"b/{path}"))


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
    variants = ("leaks", "origins", "purge")
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
        """Level 0: our internal tokens only (other teams' tokens pass), in a staged file or in a commit's diff:
        a token added is rejected; a scrub must remove one and add none."""
        k, rng, mode = t.knobs, t.rng, MODES[t.variant]
        prefix = unseen(t, lambda: t.code(2), STOCK)
        others = distinct(lambda: t.code(2), 3, [prefix])
        paths = sorted(p for p in FILES if p != "README.md")  # its documented example key is no finding here

        def token(p):
            return f"{p}_" + "".join(rng.choice("0123456789abcdef") for _ in range(32))

        def item(tok):
            path = rng.choice(paths)
            lines = list(FILES[path])
            if tok:
                lines.insert(rng.randrange(1, len(lines) + 1), _line(rng, token(tok), path))
            return _text(lines)

        def change(add, remove):
            """A diff of a stock file that replaces a line holding a ``remove`` token by a vault reference and
            adds a line holding an ``add`` token (None: not that part; neither: a note is added)."""
            path = rng.choice(paths)
            before = list(FILES[path])
            after = list(before)
            if remove:
                at = rng.randrange(1, len(before) + 1)
                before.insert(at, _line(rng, token(remove), path))
                after.insert(at, _line(rng, "${FROM_VAULT}", path))
            if add or not remove:
                after.insert(rng.randrange(1, len(after) + 1),
                             _line(rng, token(add), path) if add else f"# {' '.join(rng.sample(NOTES, 3))}")
            return _diff(path, before, after)

        def anyone(*extra):
            return rng.choice([None, *others, *extra])

        if mode == "file":
            clean = [item(anyone()) for _ in range(k.items)]
            bad = [item(prefix) for _ in range(k.items)]
            what = ("reads one staged file on standard input and rejects it if it contains an internal token")
        elif mode == "added":
            clean = [change(anyone(), anyone(prefix)) for _ in range(k.items)]
            bad = [change(prefix, anyone(prefix)) for _ in range(k.items)]
            what = ("reads one commit's change as a unified diff on standard input and rejects it if a line the "
                    "commit adds (starting with `+`, not the `+++` file header) contains an internal token; removed "
                    "and unchanged lines do not count. An internal token is")
        else:
            clean = [change(anyone(), prefix) for _ in range(k.items)]
            bad = [change(prefix, anyone(prefix)) if rng.random() < 0.5 else change(anyone(), anyone())
                   for _ in range(k.items)]
            what = ("reviews cleanup commits: it reads one commit's change as a unified diff on standard input and "
                    "accepts it only if a line the commit removes (starting with `-`, not the `---` file header) "
                    "contains an internal token and no line it adds (`+`, not the `+++` header) contains one; it "
                    "rejects every other diff. An internal token is")
        who = t.deliver(prefix, "the internal token prefix")
        t.say(f"Write a {'pre-commit' if mode == 'file' else 'pre-receive'} check for our internal API tokens. It "
              f"{what}{':' if mode == 'file' else ''} the token prefix given above, then `_`, then 32 lowercase hex "
              "digits (no ASCII letter or digit just before or after). Other teams' tokens (another prefix) are "
              "fine.")
        t.expect_classifier("Reject (exit 1) " + ("files with an internal token" if mode == "file" else
                                                  "diffs that add an internal token" if mode == "added" else
                                                  "every diff that is not a clean scrub")
                            + ", accept (exit 0) the rest.", clean, bad,
                            {"Python": fill(ATOMIC_DETECTOR, PREFIX="@@PREFIX@@", MODE=repr(mode))})
        t.solve(f'test -n "{who}"\nsed -i "s/@@PREFIX@@/{who}/" /app/solution.py')

    def _atomic_output(self, t: TaskBuilder) -> None:
        """Level 0: one secret in one file of a small history; its fingerprint is one grep and one HMAC (its
        origin one `git log -S` more)."""
        rng, v = t.rng, t.variant
        kind = rng.choice(sorted(ATOMIC_KINDS))
        what, rx, shape = ATOMIC_KINDS[kind]
        secret = _Secrets(rng, "").real(kind)
        files = _stock(rng, rng.randrange(3, 6))
        path = rng.choice(sorted(files))
        repo = _Repo(day=rng.randrange(300))
        repo.commit("main", {p: _text(x) for p, x in files.items()}, rng.choice(["Initial import", "First commit"]))

        def chore():
            p = rng.choice(sorted(x for x in files if not x.endswith(".json")))
            lines = repo.tree["main"][p].splitlines()
            lines.insert(rng.randrange(1, len(lines) + 1), f"# {' '.join(rng.sample(NOTES, 3))}")
            repo.commit("main", {p: _text(lines)}, rng.choice(MSGS))

        for _ in range(rng.randrange(3)):
            chore()
        lines = repo.tree["main"][path].splitlines()
        lines.insert(rng.randrange(1, len(lines) + 1), _line(rng, secret, path))
        repo.commit("main", {path: _text(lines)}, rng.choice(["Wire up credentials", "Add the client config"]))
        added = repo.ops[-1]["date"][:10]
        for _ in range(rng.randrange(3)):
            chore()
        t.add_file("/tmp/tmax-fixture/history.json",
                   json.dumps({"repo": "/app/repo", "ops": repo.ops}, indent=0, sort_keys=True) + "\n")
        t.add_file("/tmp/tmax-fixture/mkrepo.py", MKREPO)
        t.add_setup("python3 /tmp/tmax-fixture/mkrepo.py /tmp/tmax-fixture/history.json && "
                    "rm -f /tmp/tmax-fixture/history.json /tmp/tmax-fixture/mkrepo.py")
        key = unseen(t, lambda: t.code(2))  # keys the fingerprint: nothing shown may spell it
        fp = hmac.new(key.encode(), secret.encode(), hashlib.sha256).hexdigest()[:16]
        who = t.deliver(key, "the report key")
        hmac_cmd = ("$(python3 -c 'import hashlib, hmac, sys; print(hmac.new(sys.argv[1].encode(), sys.argv[2].encode(), "
                    f"hashlib.sha256).hexdigest()[:16])' \"{who}\" \"$s\")")
        fingerprint = ("its fingerprint, the first 16 hex digits (lowercase) of the HMAC-SHA256 of the secret's exact "
                       "text keyed with the report key given above (its ASCII bytes)")
        t.say(f"`/app/repo` is our git repository. Its file `{path}` leaks one {what} ({shape}).")
        if v == "leaks":
            t.say(f"Report it without repeating it: write {fingerprint}, as one line.")
            out, truth, line = "/app/out/leaks.txt", fp, hmac_cmd
        elif v == "origins":
            t.say(f"When did it get in? Write {fingerprint}, a space, and the author date (`YYYY-MM-DD`) of the "
                  "commit that added it, as one line.")
            out, truth = "/app/out/origins.txt", f"{fp} {added}"
            line = hmac_cmd + f' $(git -C /app/repo log --format=%ad --date=short -S"$s" | tail -1)'
        else:
            t.say("We will scrub it from history with `git filter-repo --replace-text`. Write the replacements "
                  f"line for it, `<secret>==>REDACTED-<fingerprint>`, where the fingerprint is {fingerprint.split(', ', 1)[1]}.")
            out, truth, line = "/app/out/replacements.txt", f"{secret}==>REDACTED-{fp}", "$s==>REDACTED-" + hmac_cmd
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\ns=$(grep -oE \'{rx}\' /app/repo/{path})\n'
                f'echo "{line}" > {out}')
        t.expect_output(out, truth + "\n", {"leaks": "the fingerprint", "origins": "the fingerprint and date",
                                            "purge": "the replacements line"}[v])

    def corpus_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self._atomic_corpus(t)
        k, rng, mode = t.knobs, t.rng, MODES[t.variant]
        pragma = "secretscan:allow" if k.pragma else ""
        patterns = self.patterns(None, pragma)
        # The delivered prefix must be a word that no stock file (the clean example among them) spells.
        prefix = unseen(t, lambda: t.code(2), STOCK, patterns)
        sec = _Secrets(rng, prefix)
        ns = run_python(fill(REFERENCE, PRAGMA=repr(pragma), PREFIX=prefix, MODE=repr(mode)))
        clean, bad = [], []
        paths = sorted(FILES)

        def secret(path, kind=None):
            line = _line(rng, sec.real(kind), path)
            return line + f"  # {pragma}" if pragma and rng.random() < 0.25 else line

        def staged(path):
            lines = list(FILES[path])
            for _ in range(rng.randrange(1, 4)):
                lines.insert(rng.randrange(len(lines) + 1), _line(rng, sec.near(), path))
            if rng.random() < 0.5:
                lines.insert(rng.randrange(len(lines) + 1), secret(path))
            return lines

        def change(path, held=0.5, vault=0.6, new=0.4, kind=None):
            """A diff of a staged-like file: lines holding secrets go to the vault (each with chance ``vault``),
            new lines come in (secrets with chance ``new``)."""
            before = staged(path) if rng.random() < held else list(FILES[path])
            if kind:
                before.insert(rng.randrange(1, len(before) + 1), _line(rng, sec.real(kind), path))
            after = []
            for line in before:
                found = sorted(ns["scan"](line))
                after.append(line.replace(found[0][1], "${FROM_VAULT}") if found and rng.random() < vault else line)
            for _ in range(rng.randrange(0 if after != before else 1, 3)):
                after.insert(rng.randrange(len(after) + 1), secret(path) if rng.random() < new else
                             _line(rng, sec.near(), path))
            return _diff(path, before, after)

        for _ in range(100 * k.items):
            if len(clean) >= k.items and len(bad) >= k.items:
                break
            path = rng.choice(paths)
            item = (_text(staged(path)) if mode == "file" else
                    change(path) if mode == "added" else change(path, held=0.9, new=0.2))
            (bad if ns["rejected"](item) else clean).append(item)
        else:
            raise FamilyError("git_secret_scan: too few clean or secret files drawn")
        clean, bad = clean[:k.items], bad[:k.items]
        # Items whose only secret is an internal token: a detector with any other prefix gets them wrong.
        for i in range(min(3, len(bad))):
            path = rng.choice(paths)
            if mode == "file":
                lines = list(FILES[path])
                lines.insert(rng.randrange(1, len(lines) + 1), _line(rng, sec.real("internal"), path))
                bad[i] = _text(lines)
            elif mode == "added":  # adds the token, and nothing else that counts
                before = list(FILES[path])
                after = before + [_line(rng, sec.real("internal"), path)]
                bad[i] = _diff(path, before, after)
            else:  # a clean scrub of the token alone
                clean[i] = change(path, held=0, vault=1, new=0, kind="internal")
        for _ in range(100):  # the example must not show the prefix
            near = sec.near()
            if prefix.lower() not in near.lower():
                break
        else:
            raise FamilyError("git_secret_scan: every near miss drawn showed the prefix")
        stock = FILES["app/settings.py"]
        if mode == "file":
            example, ask = "/app/examples/clean_settings.py", ("a pre-commit secret detector. It reads one staged "
                                                               "file's full text on standard input and must reject it "
                                                               "if it contains a secret, and accept it otherwise")
            t.add_file(example, _text(stock + [_line(rng, near, "x.py")]))
        elif mode == "added":
            example, ask = "/app/examples/clean.diff", (
                "a pre-receive secret check. It reads one commit's change as a unified diff (as `git diff` prints "
                "it) on standard input and must reject it if a line the commit adds (starting with `+`, not the "
                "`+++` file header) contains a secret, and accept it otherwise: removed and unchanged lines do not "
                "count, so a commit that scrubs a secret is welcome")
            t.add_file(example, _diff("app/settings.py", stock, stock + [_line(rng, near, "x.py")]))
        else:
            example, ask = "/app/examples/clean.diff", (
                "the check that reviews our secret-cleanup commits. It reads one commit's change as a unified diff "
                "(as `git diff` prints it) on standard input and must accept it only if it is a clean scrub: at "
                "least one line the commit removes (starting with `-`, not the `---` file header) contains a "
                "secret, and no line it adds (`+`, not `+++`) contains one; it rejects every other diff")
            leak = _line(rng, sec.real("aws"), "x.py")
            t.add_file(example, _diff("app/settings.py", stock + [leak],
                                      stock + [leak.replace(leak.split('"')[1], "${FROM_VAULT}")]))
        who = t.deliver(prefix, "the internal token prefix")
        t.say(f"We keep leaking credentials into git. Write {ask}. Secrets are: {patterns} Near misses (wrong "
              f"length, wrong case, test keys) are not secrets and never count; `{example}` must pass.")
        # The oracle's detector gets the delivered prefix, not a copy with it baked in.
        t.expect_classifier("Reject (exit 1) " + {"file": "files with a secret", "added": "diffs that add a secret",
                                                  "scrub": "every diff that is not a clean scrub"}[mode]
                            + ", accept (exit 0) the rest.", clean, bad,
                            {"Python": fill(REFERENCE, PRAGMA=repr(pragma), PREFIX="@@PREFIX@@", MODE=repr(mode))})
        t.solve(f'test -n "{who}"\nsed -i "s/@@PREFIX@@/{who}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self._atomic_output(t)
        k, rng, v = t.knobs, t.rng, t.variant
        pragma = "secretscan:allow" if k.pragma else ""
        prefix = unseen(t, lambda: t.code(1), STOCK)  # stated, not delivered: no stock line may spell it
        patterns = self.patterns(prefix, pragma)
        sec = _Secrets(rng, prefix)
        ref_src = fill(REFERENCE, PRAGMA=repr(pragma), PREFIX=prefix, MODE=repr(MODES[v]))
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
        msgs = MSGS
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
        if v == "leaks":
            truth = ns["report"](repo.seen[target], [repo.tree[target][p] for p in sorted(repo.tree[target])], key)
        elif v == "origins":
            truth = ns["origins"](repo.versions[target], key)
        else:
            truth = ns["replacements"](repo.seen[target], key)
        t.add_setup("python3 /tmp/tmax-fixture/mkrepo.py /tmp/tmax-fixture/history.json && "
                    "rm -f /tmp/tmax-fixture/history.json /tmp/tmax-fixture/mkrepo.py")
        who = t.deliver(key, "the report key")
        t.say(f"Before we open-source our shop, we must know which credentials ever leaked into it. `/app/repo` is the "
              f"git repository. Audit the branch `{target}`: every commit "
              f"reachable from its tip (merged branches included, other branches excluded), every file in every "
              f"such commit. Secrets are: {patterns}")
        out = {"leaks": "/app/out/leaks.txt", "origins": "/app/out/origins.txt", "purge": "/app/out/replacements.txt"}[v]
        t.add_solution_file("secrets_audit.py", ref_src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/secrets_audit.py /app/repo "{target}" "{who}" {v} > {out}')
        fp = ("the first 16 hex digits (lowercase) of the HMAC-SHA256 of the secret's exact text, keyed with the "
              "report key given above (its ASCII bytes)")
        fmt = {"leaks": ("one line per distinct secret: `<type> <fingerprint> <status>`; the report must not repeat "
                         f"the secrets themselves, so the fingerprint is {fp}; the status is `live` if the secret is "
                         "still in some file at the branch tip and `removed` if it is only in history; sorted by "
                         "type, then fingerprint (byte order)"),
               "origins": ("one line per distinct secret: `<fingerprint> <date> <path>`, where the fingerprint is "
                           f"{fp} (the report must not repeat the secrets), the date is the author date "
                           "(`YYYY-MM-DD`) of the oldest commit reachable from the branch tip in which some file "
                           "holds the secret, and the path is that file's path in that commit; sorted by date, then "
                           "fingerprint (byte order)"),
               "purge": ("a replacements file for `git filter-repo --replace-text` that redacts every distinct "
                         "secret: one line per secret, `<secret>==>REDACTED-<fingerprint>`, where the fingerprint "
                         f"is {fp}; sorted by the secret (byte order)")}[v]
        t.say(f"Report format: {fmt}.")
        t.expect_output(out, truth, {"leaks": "the leak report", "origins": "the origins report",
                                     "purge": "the replacements file"}[v])
