"""Was the web root tampered with? Compare the live tree against one of several integrity baselines
(mode + keyed HMAC-SHA256 per file, under the site integrity key), and report modified, missing and added files and permission changes.
Variants: the per-file findings against the trusted baseline (findings), how far the live tree drifted
from every snapshot's baseline as counts per snapshot (drift), or a fresh baseline of the live tree under
a new, delivered key after the old one leaked (rekey).
Traps: the right baseline is not the newest, files that were only touched (same content), hidden
webshells, ignore globs, file names with spaces, renames, and a file whose content and mode both
changed (reported once, as modified)."""

from __future__ import annotations

import hashlib
import hmac
import random
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, unseen, visible_numbers

REFERENCE = r'''
import fnmatch
import hashlib
import hmac
import os
import stat
import sys

IGNORE = @IGNORE@


def digest(key, data):
    return hmac.new(key.encode(), data, hashlib.sha256).hexdigest()


def parse_baseline(text, key):
    entries, checked = {}, False
    for line in text.splitlines():
        line = line.rstrip("\r")
        if line.startswith("# key check: "):
            if line.split(": ", 1)[1].strip() != digest(key, b""):
                raise SystemExit("the baseline was not made with this key")
            checked = True
            continue
        if not line.strip() or line.startswith("#"):
            continue
        mode, mac, path = line.split(" ", 2)
        entries[path] = (mode, mac)
    if not checked:
        raise SystemExit("the baseline has no key check")
    return entries


def ignored(path, patterns):
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def audit(baseline_text, current, key, patterns=None):
    """current: relative path -> (4-digit octal mode, keyed digest hex)."""
    patterns = IGNORE if patterns is None else patterns
    base = {p: v for p, v in parse_baseline(baseline_text, key).items() if not ignored(p, patterns)}
    now = {p: v for p, v in current.items() if not ignored(p, patterns)}
    rows = []
    for path in sorted(set(base) | set(now), key=lambda p: p.encode()):
        if path not in now:
            rows.append(f"MISSING {path}")
        elif path not in base:
            rows.append(f"ADDED {path}")
        elif base[path][1] != now[path][1]:
            rows.append(f"MODIFIED {path}")
        elif base[path][0] != now[path][0]:
            rows.append(f"MODE {base[path][0]} {now[path][0]} {path}")
    return "".join(r + "\n" for r in rows)


def scan(root, key):
    current = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode):
                continue
            with open(full, "rb") as f:
                current[os.path.relpath(full, root)] = ("%04o" % stat.S_IMODE(st.st_mode), digest(key, f.read()))
    return current


def read_patterns(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


if __name__ == "__main__":  # KEY BASELINE ROOT [IGNOREFILE]
    key = sys.argv[1]
    with open(sys.argv[2]) as f:
        text = f.read()
    sys.stdout.write(audit(text, scan(sys.argv[3], key), key,
                           read_patterns(sys.argv[4] if len(sys.argv) > 4 else "")))
'''

# The drift and rekey variants' program: REFERENCE's parsing and scanning, another question at the end.
VARIANT_TAIL = r'''
import glob

VARIANT = @VARIANT@
CHECK_LINE = @CHECK_LINE@


def drift(baselines, current, key, patterns=None):
    """baselines: (snapshot, date, text) each; one line per snapshot, oldest first."""
    patterns = IGNORE if patterns is None else patterns
    now = {p: v for p, v in current.items() if not ignored(p, patterns)}
    rows = []
    for code, date, text in sorted(baselines, key=lambda b: (b[1], b[0].encode())):
        base = {p: v for p, v in parse_baseline(text, key).items() if not ignored(p, patterns)}
        same = sum(1 for p in base if now.get(p) == base[p])
        missing = sum(1 for p in base if p not in now)
        added = sum(1 for p in now if p not in base)
        rows.append(f"{code} {same} {len(base) - same - missing} {missing} {added}")
    return "".join(r + "\n" for r in rows)


def rekey(current, key, patterns=None):
    """The baseline of ``current`` (already digested under ``key``), sorted by path."""
    patterns = IGNORE if patterns is None else patterns
    rows = [f"# key check: {digest(key, b'')}"] if CHECK_LINE else []
    rows += [f"{m} {d} {p}" for p, (m, d) in sorted(current.items(), key=lambda x: x[0].encode())
             if not ignored(p, patterns)]
    return "".join(r + "\n" for r in rows)


def date_of(text):
    for line in text.splitlines():
        if line.startswith("# taken "):
            return line.split()[2][:10]
    return ""


if __name__ == "__main__":
    if VARIANT == "drift":  # KEY BASELINE_DIR ROOT [IGNOREFILE]
        key, found = sys.argv[1], []
        for path in sorted(glob.glob(os.path.join(sys.argv[2], "*.baseline"))):
            with open(path) as f:
                text = f.read()
            found.append((os.path.basename(path)[:-len(".baseline")], date_of(text), text))
        sys.stdout.write(drift(found, scan(sys.argv[3], key), key,
                               read_patterns(sys.argv[4] if len(sys.argv) > 4 else "")))
    else:  # rekey: NEW_KEY ROOT [IGNOREFILE]
        key = sys.argv[1]
        sys.stdout.write(rekey(scan(sys.argv[2], key), key, read_patterns(sys.argv[3] if len(sys.argv) > 3 else "")))
'''


def variant_source(variant: str, ignore: list, check_line: bool) -> str:
    """The drift / rekey program: REFERENCE without its main, then VARIANT_TAIL."""
    head = REFERENCE.split("\nif __name__", 1)[0]
    return fill(head + "\n" + VARIANT_TAIL, IGNORE=ignore, VARIANT=repr(variant), CHECK_LINE=check_line)


DIRS = ["", "admin/", "assets/css/", "assets/js/", "includes/", "uploads/", "vendor/mailer/", "api/", "templates/"]
STEMS = ["index", "login", "logout", "config", "db", "session", "upload", "search", "profile", "settings",
         "orders", "invoice", "helpers", "router", "auth", "cart", "report", "export", "users", "theme", "main",
         "reset", "verify", "notify", "cron", "footer", "header", "sidebar", "widgets", "captcha"]
EXT = {"": ".php", "admin/": ".php", "assets/css/": ".css", "assets/js/": ".js", "includes/": ".inc.php",
       "uploads/": ".txt", "vendor/mailer/": ".php", "api/": ".php", "templates/": ".html"}
SPACED = ["Terms of Service.html", "price list 2026.txt", "Team Photo caption.txt", "old backup notes.txt"]
# One-line webshells, each given the name of its request parameter.
WEBSHELLS = [lambda k: "<?php if(isset($_REQUEST['c'])){system($_REQUEST['c']);} ?>",
             lambda k: f"<?php @eval(base64_decode($_POST['{k}'])); ?>",
             lambda k: f"<?php $f=$_GET['{k}'];@assert($f); ?>"]


def _content(rng, path):
    ext = path.rsplit(".", 1)[-1]
    n = rng.randrange(3, 14)
    words = ["user", "order", "total", "session", "token", "price", "name", "email", "id", "status", "limit"]
    if ext == "php":
        body = ["$%s = $_GET['%s'] ?? %d;" % (rng.choice(words), rng.choice(words), rng.randrange(100))
                for _ in range(n)]
        return "<?php\n// " + path + "\n" + "\n".join(body) + "\n"
    if ext == "css":
        return "".join(f".{rng.choice(words)}-{rng.randrange(99)} {{ margin: {rng.randrange(20)}px; }}\n"
                       for _ in range(n))
    if ext == "js":
        return "".join(f"const {rng.choice(words)}{i} = {rng.randrange(1000)};\n" for i in range(n))
    if ext == "html":
        return "<div>\n" + "".join(f"  <p>{rng.choice(words)} {rng.randrange(1000)}</p>\n" for _ in range(n)) + "</div>\n"
    return "".join(f"{rng.choice(words)} {rng.randrange(10000)}\n" for _ in range(n))


def _mac(key, text):
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Knobs:
    files: int  # files in the web root when the trusted baseline was taken
    changes: int  # changes applied to the live tree since
    baselines: int  # baselines to choose from (the right one is never the newest)
    modes: bool  # permission bits count (MODE findings, setuid)
    ignore: bool  # an ignore file of volatile globs
    spaces: bool  # file names with spaces, and renames


@register
class FileIntegrityAudit(Family):
    name = "file_integrity_audit"
    domain = "security"
    skill_types = ("Forensics", "Cryptography")
    primitive_skills = ("checksum verification", "file integrity monitoring", "permission and setuid auditing",
                        "glob-based exclusions", "timeline reconstruction")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("findings", "drift", "rekey")
    levels = {0: Knobs(files=5, changes=1, baselines=1, modes=False, ignore=False, spaces=False),
              1: Knobs(files=14, changes=4, baselines=2, modes=False, ignore=False, spaces=False),
              2: Knobs(files=28, changes=7, baselines=3, modes=True, ignore=False, spaces=False),
              3: Knobs(files=55, changes=10, baselines=3, modes=True, ignore=True, spaces=False),
              4: Knobs(files=110, changes=16, baselines=4, modes=True, ignore=True, spaces=True)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, var = t.knobs, t.rng, t.variant
        if var != "findings":  # a stream of the variant's own, drawn from t.rng: its trees are not drift's, shifted
            rng = random.Random(f"{var}:{t.rng.getrandbits(64)}")
        # findings keeps its one web root; the other variants draw theirs, so seeds differ in more than numbers.
        root = "/app/srv/www" if var == "findings" else rng.choice(["/app/srv/www", "/app/srv/site", "/app/htdocs",
                                                                     "/app/var/www/shop"])
        # rekey names who reviewed the tree (a draw of its own: its fixtures then differ from drift's, seed for seed)
        reviewer = rng.choice(["the security team", "our incident responder", "the site owner", "two admins"]) \
            if var == "rekey" else ""
        # The tree as it was when the chosen baseline was taken: path -> [mode, content]
        tree: dict[str, list[str]] = {}

        def draw_path():
            d = rng.choice(DIRS)
            return f"{d}{rng.choice(STEMS)}{EXT[d]}"

        for path in distinct(draw_path, k.files):
            tree[path] = ["0644", _content(rng, path)]
        if k.spaces:
            for name in rng.sample(SPACED, 2):
                tree[rng.choice(["", "templates/", "uploads/"]) + name] = ["0644", _content(rng, name)]
        if k.modes:
            for p in sorted(tree):
                if p.startswith("admin/") and rng.random() < 0.5:
                    tree[p][0] = "0640"
            tree["cron.sh"] = ["0750", f"#!/bin/sh\nphp {root}/cron.php\n"]
        ignore = []
        if k.ignore:
            ignore = ["cache/*", "*.log", "uploads/tmp/*"]
            for i in range(rng.randrange(2, 5)):
                tree[f"cache/page-{rng.randrange(10 ** 6):06d}.html"] = ["0644", _content(rng, "x.html")]
            tree["logs/access.log"] = ["0644", _content(rng, "x.txt")]
        paths = sorted(tree)
        # Baselines: the chosen one matches `tree`; decoys are other snapshots (older and newer).
        n_base = k.baselines
        codes = distinct(t.code, n_base)
        chosen = rng.randrange(n_base - 1) if n_base > 1 else 0  # never the newest
        dates = sorted(f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}" for _ in range(n_base))

        snapshots = []  # (code, date, state, line order)
        for i, code in enumerate(codes):
            if i == chosen:
                state = tree
            else:
                state = {p: list(v) for p, v in tree.items()}
                for p in rng.sample(paths, max(2, len(paths) // 6)):
                    if rng.random() < 0.5:
                        state[p][1] = state[p][1] + f"// rev {rng.randrange(100)}\n"
                    else:
                        del state[p]
            order = sorted(state) if rng.random() < 0.5 else rng.sample(sorted(state), len(state))
            snapshots.append((code, dates[i], state, order))

        def baseline_text(key, code, date, state, order):
            lines = [f"# integrity baseline of {root}, snapshot {code}", f"# taken {date}T03:00:00Z",
                     "# <mode> <HMAC-SHA256 of the content, keyed with the site integrity key> <path relative to "
                     f"{root}>", f"# key check: {_mac(key, '')}"]
            lines += [f"{state[p][0]} {_mac(key, state[p][1])} {p}" for p in order]
            return "\n".join(lines) + "\n"

        # The live tree: apply the attacker's and admins' changes.
        live = {p: list(v) for p, v in tree.items()}
        kinds = ["modified", "missing", "added", "touched"]
        if k.modes:
            kinds += ["mode", "mode_and_content"]
        if k.spaces:
            kinds += ["rename"]
        # Level 0 of drift and rekey: one to three changes, so that no count is known beforehand.
        n_changes = k.changes if var == "findings" or t.level else rng.randint(1, 3)
        victims = rng.sample([p for p in paths if not p.startswith(("cache/", "logs/"))], n_changes)
        touched = []
        for i, p in enumerate(victims):
            kind = kinds[i % len(kinds)]
            if kind == "modified":
                shell = rng.choice(WEBSHELLS)(rng.choice(["x", "cmd", "q", "z"]))
                live[p][1] = (shell + "\n" + live[p][1]) if rng.random() < 0.5 else (live[p][1] + shell + "\n")
            elif kind == "missing":
                del live[p]
            elif kind == "added":
                d = rng.choice(["uploads/", "assets/js/", "", "vendor/mailer/"])
                name = rng.choice([".cache.php", ".htaccess", "wp-conf.php", "thumb.php", "jquery.min.js.php"])
                live.setdefault(d + name, ["0644", rng.choice(WEBSHELLS)("p") + "\n"])
            elif kind == "touched":
                touched.append(p)
            elif kind == "mode":
                live[p][0] = rng.choice(["0666", "0777", "4755", "0755"])
            elif kind == "mode_and_content":
                live[p][0] = "0777"
                live[p][1] = live[p][1] + "/* patched */\n"
            elif kind == "rename":
                d, _, base = p.rpartition("/")
                live[(d + "/" if d else "") + "old " + base] = live.pop(p)
        if k.ignore:  # churn inside ignored paths
            for p in [q for q in paths if q.startswith("cache/")][:2]:
                live[p][1] += "<!-- regenerated -->\n"
            live["logs/access.log"][1] += "GET / 200\n"
            live[f"cache/page-{rng.randrange(10 ** 6):06d}.html"] = ["0644", "<p>new</p>\n"]
            live["logs/error.log"] = ["0644", "PHP Warning\n"]
            live["uploads/tmp/upload-1.part"] = ["0600", "partial\n"]
            t.add_file("/app/integrity/ignore.txt", "# volatile paths, never alerted on\n" + "\n".join(ignore) + "\n")
        for p in sorted(live):
            t.add_file(f"{root}/{p}", live[p][1])
        modes = "".join(f"{live[p][0]} {p}\n" for p in sorted(live))
        t.add_file("/tmp/tmax-fixture/modes.txt", modes)
        t.add_setup(f"while read -r m p; do chmod \"$m\" \"{root}/$p\"; done < /tmp/tmax-fixture/modes.txt\n"
                    "rm -f /tmp/tmax-fixture/modes.txt")
        if touched:
            t.add_setup("touch -d '2026-11-02 03:14:00' " + " ".join(f"'{root}/{p}'" for p in touched))
        if var != "findings":
            return self.other_case(t, root, snapshots, baseline_text, live, ignore, reviewer)
        # The site key (delivered) keys every digest: without it no content can be checked. Drawn so that no
        # visible number spells it (the baselines' hex digests could show it only by chance: checked too).
        dates = "".join(f"{code} {date}\n" for code, date, _, _ in snapshots)
        for _ in range(50):
            key = unseen(t, lambda: str(rng.randrange(10 ** 11, 10 ** 12)), dates)
            texts = [baseline_text(key, *snap) for snap in snapshots]
            if int(key) not in visible_numbers(*texts):
                break
        else:
            raise FamilyError("file_integrity_audit: every site key drawn showed in its own baselines")
        chosen_text = texts[chosen]
        for (code, *_), text in zip(snapshots, texts):
            t.add_file(f"/app/integrity/{code}.baseline", text)
        ns = run_python(fill(REFERENCE, IGNORE=ignore))
        current = {p: (m, _mac(key, c)) for p, (m, c) in live.items()}
        truth = ns["audit"](chosen_text, current, key, ignore)
        key_var = t.deliver(key, "the site integrity key")
        mode_rule = ("`MODE <old> <new> <path>` when the content is unchanged but the permission bits differ (modes "
                     "as 4-digit octal, as in the baseline, e.g. `0644`, `4755`); a file whose content changed is "
                     "reported as MODIFIED only, whatever happened to its mode; " if k.modes else "")
        fmt = ("one line per finding, sorted by path (byte order): `MODIFIED <path>` when the content's digest differs, " + mode_rule + "`MISSING <path>` for a file in the baseline that is gone, "
               "`ADDED <path>` for a regular file that is not in the baseline; paths relative to `/app/srv/www`, "
               "exactly as the baseline writes them; unchanged files are not listed")
        ign = (" Paths matching any shell-style pattern in `/app/integrity/ignore.txt` (matched against the whole "
               "relative path; `*` also matches `/`) are volatile and must be left out on both sides." if ignore else "")
        if t.level == 0:  # one baseline, one edited file: a single HMAC loop finds it
            t.say(f"`/app/integrity/{codes[chosen]}.baseline` lists every file of the web root `/app/srv/www` as "
                  f"`<mode> <digest> <path>` (`#` lines are comments), where the digest is the HMAC-SHA256 "
                  f"(lowercase hex) of the file's content keyed with the site integrity key given above. Write "
                  f"`MODIFIED <path>` (path as the baseline writes it), one line per file whose content no longer "
                  f"matches its digest, sorted by path, to `/app/out/integrity.txt`.")
        else:
            t.say(f"We think someone got into the web server. `/app/srv/www` is the live web root, and "
                  f"`/app/integrity/` holds integrity baselines from several snapshots (`<snapshot>.baseline`, one "
                  f"line per regular file: `<mode> <digest> <path>`, `#` lines are comments; paths may contain "
                  f"spaces). So that an intruder cannot forge entries, each digest is the HMAC-SHA256 (lowercase hex) of "
                  f"the file's content keyed with the site integrity key given above (its ASCII bytes), and the "
                  f"`# key check:` line holds the HMAC of the empty string under that key. Compare the live tree with "
                  f"the baseline of snapshot `{codes[chosen]}` (the last one we trust), and only that one. Modification "
                  f"times mean nothing here; only content and permission bits count.{ign}")
        sol = fill(REFERENCE, IGNORE=[])
        t.add_solution_file("integrity.py", sol)
        t.solve(f'test -n "{key_var}"\nmkdir -p /app/out\n'
                f'python3 /solution/integrity.py "{key_var}" "/app/integrity/{codes[chosen]}.baseline" /app/srv/www '
                f'{"/app/integrity/ignore.txt" if ignore else ""} > /app/out/integrity.txt')
        if t.level > 0:
            t.say(f"Report format: {fmt}.")
        t.expect_output("/app/out/integrity.txt", truth, "the findings report")

    def other_case(self, t: TaskBuilder, root: str, snapshots: list, baseline_text, live: dict, ignore: list,
                   reviewer: str) -> None:
        """drift (counts against every snapshot, under the delivered key) and rekey (a new baseline under a new,
        delivered key; the snapshots were made with the old one)."""
        k, rng, var = t.knobs, t.rng, t.variant
        dates = "".join(f"{code} {date}\n" for code, date, _, _ in snapshots)
        draw = lambda: str(rng.randrange(10 ** 11, 10 ** 12))  # noqa: E731
        ign_arg = " /app/integrity/ignore.txt" if ignore else ""
        many = len(snapshots) > 1
        desc = (f"`/app/integrity/` holds integrity baselines {'from several snapshots' if many else 'of one snapshot'} "
                "(`<snapshot>.baseline`: `#` comment lines, among them `# taken <UTC time>`, then one line per regular "
                f"file, `<mode> <digest> <path>`, the path relative to `{root}`"
                + ("; paths may contain spaces" if k.spaces else "") + ")")
        if var == "drift":
            for _ in range(50):
                key = unseen(t, draw, dates)
                texts = [baseline_text(key, *snap) for snap in snapshots]
                if int(key) not in visible_numbers(*texts):
                    break
            else:
                raise FamilyError("file_integrity_audit: every site key drawn showed in its own baselines")
            for (code, *_), text in zip(snapshots, texts):
                t.add_file(f"/app/integrity/{code}.baseline", text)
            ns = run_python(variant_source("drift", ignore, True))
            current = {p: (m, _mac(key, c)) for p, (m, c) in live.items()}
            truth = ns["drift"]([(code, date, text) for (code, date, _, _), text in zip(snapshots, texts)], current,
                                key, ignore)
            key_var = t.deliver(key, "the site integrity key")
            counts = ("how many files the baseline lists whose content digest and mode both still match the live "
                      "tree, how many it lists that are still there but whose digest or mode differs, how many it "
                      "lists that are gone, and how many regular files of the live tree it does not list")
            if t.level == 0:
                code = snapshots[0][0]
                t.say(f"`/app/integrity/{code}.baseline` lists every file of the web root `{root}` as `<mode> <digest> "
                      "<path>` (`#` lines are comments), where the digest is the HMAC-SHA256 (lowercase hex) of the "
                      "file's content keyed with the site integrity key given above. Write one line `<snapshot> "
                      f"<unchanged> <changed> <missing> <added>` to `/app/out/drift.txt`: the snapshot's name (`{code}`), "
                      f"then {counts}.")
            else:
                ign = (" Paths matching any shell-style pattern in `/app/integrity/ignore.txt` (matched against the "
                       "whole relative path; `*` also matches `/`) are volatile and must be left out on both sides."
                       if ignore else "")
                t.say(f"Before we pick a snapshot to roll the web root `{root}` back to, I want to know how far the "
                      f"live tree has drifted from each of them. {desc}. So that an intruder cannot forge entries, each "
                      "digest is the HMAC-SHA256 (lowercase hex) of the file's content keyed with the site integrity key "
                      "given above (its ASCII bytes), and the `# key check:` line holds the HMAC of the empty string "
                      "under that key. Modification times mean nothing here; only content and permission bits "
                      f"count.{ign}")
                t.say("Report format: one line per snapshot, oldest first by its `# taken` time (equal times in "
                      "snapshot name order, byte order), as `<snapshot> <unchanged> <changed> <missing> <added>`: "
                      f"{counts}.")
            t.add_solution_file("integrity.py", variant_source("drift", [], True))
            t.solve(f'test -n "{key_var}"\nmkdir -p /app/out\n'
                    f'python3 /solution/integrity.py "{key_var}" /app/integrity "{root}"{ign_arg} > /app/out/drift.txt')
            t.expect_output("/app/out/drift.txt", truth, "the drift report")
            return
        # rekey: the snapshots were made with the old key (retired, never given); the new key is delivered.
        old = draw()
        texts = [baseline_text(old, *snap) for snap in snapshots]
        for (code, *_), text in zip(snapshots, texts):
            t.add_file(f"/app/integrity/{code}.baseline", text)
        for _ in range(50):
            key = unseen(t, draw, dates)
            if key != old:
                break
        else:
            raise FamilyError("file_integrity_audit: every new key drawn was the old one")
        check = t.level > 0
        ns = run_python(variant_source("rekey", ignore, check))
        truth = ns["rekey"]({p: (m, _mac(key, c)) for p, (m, c) in live.items()}, key, ignore)
        key_var = t.deliver(key, "the new site integrity key")
        line = ("`<mode> <digest> <path>`, sorted by path (byte order): the mode as the 4-digit octal permission "
                "bits (e.g. `0644`, `4755`), the digest the HMAC-SHA256 (lowercase hex) of the file's content keyed "
                f"with the new key given above (its ASCII bytes), the path relative to `{root}`")
        if t.level == 0:
            t.say(f"Write a fresh integrity baseline of the web root `{root}` to `/app/out/new.baseline`: one line per "
                  f"file, {line}; no comment lines. `/app/integrity/{snapshots[0][0]}.baseline` is an older baseline "
                  "in that format, made with a retired key.")
        else:
            ign = (" Paths matching any shell-style pattern in `/app/integrity/ignore.txt` (matched against the whole "
                   "relative path; `*` also matches `/`) are volatile: leave them out." if ignore else "")
            t.say(f"The site integrity key leaked in the break-in, and the live web root `{root}` has since been "
                  f"reviewed by {reviewer}: as it is now, it is our new reference. Write a fresh baseline of it under the new site "
                  f"integrity key given above. For the format, {desc}; they were made with the old key, now retired, "
                  f"so their digests are of no use.{ign}")
            t.say("Baseline format, exactly: first the line `# key check: <digest>` holding the HMAC-SHA256 (lowercase "
                  f"hex) of the empty string under the new key, then one line per regular file of the live tree, {line}; "
                  "no other comment lines.")
        t.add_solution_file("rebaseline.py", variant_source("rekey", [], check))
        t.solve(f'test -n "{key_var}"\nmkdir -p /app/out\n'
                f'python3 /solution/rebaseline.py "{key_var}" "{root}"{ign_arg} > /app/out/new.baseline')
        t.expect_output("/app/out/new.baseline", truth, "the new baseline")
