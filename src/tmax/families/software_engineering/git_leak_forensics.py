"""When was a leaked string in the repository? A reproducible git history (fixed authors and dates) in
which a secret is added, moved between files, removed and (at higher levels) re-added, beside other
credentials of the same look. Variants: every window during which it was in the tree (the adding
commit, the removing commit, the author's email); every file that ever held it, with the number of
commits whose version of the file did; or the total exposure in seconds between the committer dates
that open and close its windows. Commit hashes are computed on the host from the same objects git
writes, and the oracle uses git. The repository is a bare clone: no file shows the secret in plain
text, and only the delivered string says which of the credentials leaked."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.unseen import distinct, unseen

# Builds /app/repo at environment build time from the planned history (hidden plan is deleted after).
BUILDER = r'''
import json, os, subprocess, sys

plan = json.load(open(sys.argv[1]))
dest = sys.argv[2]
repo = "/tmp/tmax-git/work"
os.makedirs(repo, exist_ok=True)
subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
prev = {}
for c in plan:
    for path in prev:
        if path not in c["files"]:
            os.remove(os.path.join(repo, path))
    for path, text in c["files"].items():
        full = os.path.join(repo, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    prev = c["files"]
    env = dict(os.environ, GIT_AUTHOR_NAME=c["name"], GIT_AUTHOR_EMAIL=c["email"], GIT_AUTHOR_DATE=c["date"],
               GIT_COMMITTER_NAME=c["name"], GIT_COMMITTER_EMAIL=c["email"], GIT_COMMITTER_DATE=c["date"])
    with open("/tmp/tmax-msg", "w") as f:
        f.write(c["message"])
    subprocess.run(["git", "-C", repo, "add", "-A"], check=True)
    subprocess.run(["git", "-C", repo, "-c", "commit.gpgsign=false", "commit", "-q", "--cleanup=verbatim",
                    "-F", "/tmp/tmax-msg"], check=True, env=env)
os.remove("/tmp/tmax-msg")
# Only history: a bare clone (packed, compressed objects), without sample hooks and description.
subprocess.run(["git", "clone", "-q", "--bare", "--no-local", repo, dest], check=True)
subprocess.run(["git", "-C", dest, "remote", "remove", "origin"], check=True)
subprocess.run(["rm", "-rf", os.path.join(dest, "hooks"), os.path.join(dest, "description")], check=True)
'''

# The oracle: walk the history oldest first and record when the string enters and leaves the tree.
ORACLE = r'''
import subprocess, sys

token, repo, variant = sys.argv[1], sys.argv[2], sys.argv[3]
def git(*a):
    return subprocess.run(["git", "-C", repo, *a], capture_output=True, text=True).stdout
def when(c):
    return int(git("log", "-1", "--format=%ct", c))
present, start, out, paths, exposed = False, None, [], {}, 0
commits = git("rev-list", "--reverse", "HEAD").split()
for c in commits:
    holding = [line.split(":", 1)[1] for line in git("grep", "-l", "-F", token, c).splitlines()]
    for p in holding:
        paths[p] = paths.get(p, 0) + 1
    has = bool(holding)
    if has and not present:
        start = c
    if present and not has:
        out.append(f"{start} {c} {git('log', '-1', '--format=%ae', start).strip()}")
        exposed += when(c) - when(start)
    present = has
if present:
    out.append(f"{start} STILL-PRESENT {git('log', '-1', '--format=%ae', start).strip()}")
    exposed += when(commits[-1]) - when(start)
if variant == "paths":
    out = [f"{p} {n}" for p, n in sorted(paths.items())]
if variant == "exposure":
    out = [str(exposed)]
print("\n".join(out))
'''

AUTHORS = [("Mara Lindqvist", "mara@devco.example"), ("Tomasz Wrobel", "tomasz.w@devco.example"),
           ("Priya Natarajan", "priya@devco.example"), ("Kenji Aoyama", "kaoyama@devco.example"),
           ("Lucia Ferraro", "lferraro@contractors.example"), ("Sam Okafor", "sam.okafor@devco.example"),
           ("deploy-bot", "bot@ci.devco.example")]
FILES = ["README.md", "src/service/app.py", "src/service/handlers.py", "src/service/db.py", "config/default.ini",
         "config/staging.ini", "scripts/deploy.sh", "docs/operations.md", "src/service/auth.py", "tests/test_app.py"]
VERBS = ["fix", "add", "refactor", "tidy", "document", "bump", "rework", "speed up", "harden", "rename"]
NOUNS = ["retry loop", "session cache", "db pool", "health check", "login flow", "deploy script", "config loader",
         "error pages", "rate limits", "metrics", "readme", "staging settings", "auth middleware", "test fixtures"]


def filler(rng, path: str, i: int) -> str:
    n = rng.randrange(1000)
    if path.endswith(".py"):
        return rng.choice([f"TIMEOUT_{n} = {rng.randrange(1, 90)}", f"def step_{n}(ctx):\n    return ctx.get({n})",
                           f"# TODO({i}): revisit this", f"RETRIES_{n} = {rng.randrange(1, 9)}"])
    if path.endswith(".ini"):
        return rng.choice([f"pool_size_{n} = {rng.randrange(2, 64)}", f"host_{n} = db{n % 7}.internal",
                           f"; changed in change {i}"])
    if path.endswith(".sh"):
        return rng.choice([f"echo 'step {n}'", f"sleep {rng.randrange(1, 5)}", f"# rev {i}"])
    return rng.choice([f"Note {n}: restart the workers after deploy.", f"See runbook section {n % 12}.",
                       f"Changed in revision {i}."])


def secret_line(rng, path: str, token: str) -> str:
    if path.endswith(".py"):
        return rng.choice([f'LEGACY_API_KEY = "{token}"', f'client = Client(token="{token}")'])
    if path.endswith(".ini"):
        return f"api_token = {token}"
    if path.endswith(".sh"):
        return f"export DEPLOY_TOKEN={token}"
    return f"Temporary staging token: {token}"


def git_hashes(plan: list[dict]) -> list[str]:
    """The commit ids git will compute for ``plan`` (sha1 objects, linear history, one author=committer)."""
    def obj(kind: bytes, data: bytes) -> bytes:
        return hashlib.sha1(kind + b" " + str(len(data)).encode() + b"\0" + data).digest()

    def tree(files: dict[str, str]) -> bytes:
        top: dict[str, object] = {}
        for path, text in files.items():
            node = top
            parts = path.split("/")
            for d in parts[:-1]:
                node = node.setdefault(d, {})  # type: ignore[assignment]
            node[parts[-1]] = text  # type: ignore[index]

        def enc(node: dict) -> bytes:
            entries = []
            for name, val in node.items():
                if isinstance(val, dict):
                    entries.append((name + "/", b"40000 " + name.encode() + b"\0" + enc(val)))
                else:
                    entries.append((name, b"100644 " + name.encode() + b"\0" + obj(b"blob", val.encode())))
            return obj(b"tree", b"".join(e for _, e in sorted(entries)))
        return enc(top)

    out, parent = [], None
    for c in plan:
        ts = c["date"].split()[0].lstrip("@")
        who = f"{c['name']} <{c['email']}> {ts} +0000"
        body = f"tree {tree(c['files']).hex()}\n" + (f"parent {parent}\n" if parent else "") + \
            f"author {who}\ncommitter {who}\n\n{c['message']}"
        parent = obj(b"commit", body.encode()).hex()
        out.append(parent)
    return out


@dataclass(frozen=True)
class Knobs:
    commits: int  # commits in the history
    windows: int  # times the secret is added (and removed)
    moves: int  # commits that move it to another file inside a window
    decoys: int  # near misses (other case, half of it, spaced out)
    end_present: bool | None  # still in main's latest commit (None: either)
    others: int  # other credentials of the same look, with their own windows


REPO = "The repository is `/app/repo`, a bare clone (branch `main`, linear history). "
WINDOW = ("Find every window of history during which the exact string (case-sensitive) was present anywhere in "
          "the tracked files: it begins at the commit whose tree contains it while its parent's tree does not, "
          "and ends at the first later commit whose tree no longer contains it. Moving it from one file to "
          "another within a single commit does not end a window, and near-misses (other case, partial copies) "
          "do not count; other credentials in the history are not the leaked one.")
SAY = ("A credential string was found in a public paste, and security wants to know exactly when it was "
       "part of our code base. " + REPO + WINDOW)
FORMAT = ("The report has one line per window, oldest first: the full 40-character hash of the commit that added "
          "it, a space, the full hash of the commit that removed it (or `STILL-PRESENT` if it is still in `main`'s "
          "latest commit), a space, and the author email of the adding commit.")
# The other variants: (what they ask at levels 1-4, what level 0 asks, output path, what is graded).
ASKS = {
    "paths": ("A credential string was found in a public paste, and security must rotate it everywhere it was "
              "ever checked in. " + REPO + "Which tracked files held the exact string (case-sensitive) in any "
              "commit of `main`? Near-misses (other case, partial copies) do not count; other credentials in the "
              "history are not the leaked one. The report has one line per file, sorted by path in byte order "
              "(`LC_ALL=C sort`): the path, a space, and the number of commits of `main` whose version of that "
              "file contains the string.",
              "`/app/repo` is a bare git clone (branch `main`, linear history). Which tracked files contained the "
              "exact string given above in any commit? One path per line, sorted in byte order (`LC_ALL=C sort`).",
              "/app/out/leak_paths.txt", "the file list"),
    "exposure": ("A credential string was found in a public paste, and security wants to know for how long it was "
                 "exposed in our code base. " + REPO + WINDOW + " The exposure of a window is the time from the "
                 "committer date of the commit that opens it to that of the commit that closes it; a window still "
                 "open at `main`'s latest commit lasts until that commit's date. Give the total exposure over all "
                 "windows, in seconds.",
                 "`/app/repo` is a bare git clone (branch `main`, linear history). The exact string given above "
                 "was added to the tracked files once and is still there. How many seconds passed from the "
                 "committer date of the commit that added it to the committer date of `main`'s latest commit?",
                 "/app/out/exposure.txt", "the exposure in seconds"),
}


def insert_line(rng, cur: dict[str, str], path: str, line: str) -> None:
    lines = cur.get(path, "").splitlines()
    lines.insert(rng.randrange(len(lines) + 1), line)
    cur[path] = "\n".join(lines) + "\n"


def drop_line(cur: dict[str, str], path: str, line: str) -> None:
    cur[path] = "".join(x + "\n" for x in cur.get(path, "").splitlines() if x != line)


@register
class GitLeakForensics(Family):
    name = "git_leak_forensics"
    domain = "software_engineering"
    skill_types = ("Version Control",)
    primitive_skills = ("git history search", "git log filtering", "commit message parsing", "text report formatting",
                        "regular expressions")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("windows", "paths", "exposure")
    levels = {0: Knobs(commits=5, windows=1, moves=0, decoys=0, end_present=True, others=1),
              1: Knobs(commits=8, windows=1, moves=0, decoys=0, end_present=True, others=1),
              2: Knobs(commits=16, windows=1, moves=0, decoys=1, end_present=False, others=1),
              3: Knobs(commits=26, windows=2, moves=1, decoys=2, end_present=False, others=2),
              4: Knobs(commits=42, windows=3, moves=2, decoys=3, end_present=None, others=2)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        # Only fixed texts are shown (the history lives compressed in the bare clone).
        token = unseen(t, lambda: t.code(2), *((SAY, FORMAT) if variant == "windows" else ASKS[variant][:2]))
        others = distinct(lambda: t.code(2), k.others, taken=[token])
        n = k.commits
        files = {p: "" for p in FILES[:4]}
        files["README.md"] = "# service\n\nInternal service.\n"
        # Plan the windows: (add index, remove index or None); never in commit 0.
        slots = sorted(rng.sample(range(1, n), 2 * k.windows))
        windows = [(slots[2 * i], slots[2 * i + 1]) for i in range(k.windows)]
        end_present = k.end_present if k.end_present is not None else rng.random() < 0.5
        if end_present:
            windows[-1] = (windows[-1][0], None)
        inside = [i for a, b in windows for i in range(a + 1, b if b is not None else n)]
        # A file list with one file is no question: that variant always moves the secret once more.
        n_moves = k.moves + (variant == "paths")
        moves = sorted(rng.sample(inside, min(n_moves, len(inside)))) if inside else []
        decoy_at = sorted(rng.sample(range(1, n), k.decoys))
        # Other credentials, each in one file from one commit to another (or to the end).
        other_at = []
        for o in others:
            a = rng.randrange(1, n)
            b = rng.choice([None, *range(a + 1, n)]) if a + 1 < n else None
            path = rng.choice(FILES[1:])
            other_at.append((a, b, path, secret_line(rng, path, o)))
        where: str | None = None  # file holding the secret, when present
        secret: str = ""
        plan = []
        day = 1_700_000_000 + rng.randrange(10**6)
        for i in range(n):
            cur = dict(files)
            msgs = []
            # ordinary churn
            for p in rng.sample(sorted(set(FILES)), rng.randint(1, 2)):
                lines = cur.get(p, "").splitlines()
                if lines and rng.random() < 0.3:
                    lines.pop(rng.randrange(len(lines)))
                lines.insert(rng.randrange(len(lines) + 1), filler(rng, p, i))
                if where == p and secret not in lines:  # never drop the secret by accident
                    lines.append(secret)
                cur[p] = "\n".join(lines) + "\n"
            msgs.append(f"{rng.choice(VERBS)} {rng.choice(NOUNS)}")
            for a, b, path, line in other_at:
                if i == a:
                    insert_line(rng, cur, path, line)
                if i == b:
                    drop_line(cur, path, line)
            for a, b in windows:
                if i == a:
                    where = rng.choice(FILES[1:])
                    secret = secret_line(rng, where, token)
                    insert_line(rng, cur, where, secret)
                if i == b and where is not None:
                    drop_line(cur, where, secret)
                    where = None
            if i in moves and where is not None:
                drop_line(cur, where, secret)
                where = rng.choice([p for p in FILES[1:] if p != where])
                secret = secret_line(rng, where, token)
                insert_line(rng, cur, where, secret)
                msgs = [f"move settings into {where.rsplit('/', 1)[-1]}"]
            if i in decoy_at:  # near misses: other case, one word of it, a spaced-out copy
                p = rng.choice(FILES[1:])
                half = token[:len(token) // 2]
                decoy = rng.choice([f"# old key was {token.lower()}", f"# key prefix {half}",
                                    f"# {token[:3]} {token[3:]} is not a key"])
                cur[p] = cur.get(p, "") + decoy + "\n"
            cur = {p: v for p, v in cur.items() if v}
            who = rng.choice(AUTHORS)
            day += rng.randrange(3600, 86400 * 3)
            plan.append({"name": who[0], "email": who[1], "date": f"@{day} +0000",
                         "message": f"DEV-{100 + i * 7 + rng.randrange(7)}: {msgs[0]}\n", "files": dict(sorted(cur.items()))})
            files = cur
        hashes = git_hashes(plan)
        # truth: walk snapshots, as the oracle walks git
        spans, start = [], None  # (opening index, closing index or None)
        for i, c in enumerate(plan):
            has = any(token in text for text in c["files"].values())
            was = i > 0 and any(token in text for text in plan[i - 1]["files"].values())
            if has and not was:
                start = i
            if was and not has:
                spans.append((start, i))
        if any(token in text for text in plan[-1]["files"].values()):
            spans.append((start, None))
        t.add_file("/tmp/tmax-git/plan.json", json.dumps(plan, sort_keys=True) + "\n")
        t.add_file("/tmp/tmax-git/build.py", BUILDER)
        t.add_setup("python3 /tmp/tmax-git/build.py /tmp/tmax-git/plan.json /app/repo && rm -rf /tmp/tmax-git")
        var = t.deliver(token, "the leaked string")
        if variant == "windows":
            rows = [f"{hashes[a]} {'STILL-PRESENT' if b is None else hashes[b]} {plan[a]['email']}" for a, b in spans]
            self._windows(t, var, "\n".join(rows) + "\n")
            return
        ask, atomic, out, what = ASKS[variant]
        t.say(atomic if t.level == 0 else ask)
        if variant == "paths":
            held = sorted({p for c in plan for p, text in c["files"].items() if token in text})
            counts = [sum(token in c["files"].get(p, "") for c in plan) for p in held]
            truth = "".join(f"{p}\n" if t.level == 0 else f"{p} {n}\n" for p, n in zip(held, counts))
            t.solve(f'mkdir -p /app/out\ngit -C /app/repo log --format= --name-only -S "{var}" main | sed "/^$/d" | '
                    f"LC_ALL=C sort -u > {out}" if t.level == 0 else self._oracle(t, var, variant, out))
            t.expect_output(out, truth, what)
            return
        exposure = sum(self._time(plan[len(plan) - 1 if b is None else b]) - self._time(plan[a]) for a, b in spans)
        t.solve(f"mkdir -p /app/out\necho $(( $(git -C /app/repo log -1 --format=%ct main) - "
                f'$(git -C /app/repo log --reverse --format=%ct -S "{var}" main | head -n 1) )) > {out}'
                if t.level == 0 else self._oracle(t, var, variant, out))
        t.expect_number(out, exposure, rel_tol=1e-9, what=what)

    @staticmethod
    def _time(commit: dict) -> int:
        return int(commit["date"].split()[0].lstrip("@"))

    @staticmethod
    def _oracle(t: TaskBuilder, var: str, variant: str, out: str) -> str:
        t.add_solution_file("windows.py", ORACLE)
        return f'mkdir -p /app/out\npython3 /solution/windows.py "{var}" /app/repo {variant} > {out}'

    def _windows(self, t: TaskBuilder, var: str, truth: str) -> None:
        if t.level == 0:  # one window, never removed: only the commit that added it (one `git log -S`)
            t.say("`/app/repo` is a bare git clone (branch `main`, linear history). Which commit added the exact "
                  "string given above to the tracked files? Give its full 40-character hash.")
            t.solve(f'mkdir -p /app/out\ngit -C /app/repo log --reverse --format=%H -S "{var}" main | head -n 1 '
                    "> /app/out/commit.txt")
            t.expect_output("/app/out/commit.txt", truth.split()[0] + "\n", "the commit hash")
            return
        t.say(SAY)
        t.say(FORMAT)
        t.solve(self._oracle(t, var, "windows", "/app/out/leak_windows.txt"))
        t.expect_output("/app/out/leak_windows.txt", truth, "the report")
