"""Was the web root tampered with? Compare the live tree against one of several integrity baselines
(mode + keyed HMAC-SHA256 per file, under the site integrity key), and report modified, missing and added files and permission changes.
Traps: the right baseline is not the newest, files that were only touched (same content), hidden
webshells, ignore globs, file names with spaces, renames, and a file whose content and mode both
changed (reported once, as modified)."""

from __future__ import annotations

import hashlib
import hmac
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
    levels = {0: Knobs(files=5, changes=1, baselines=1, modes=False, ignore=False, spaces=False),
              1: Knobs(files=14, changes=4, baselines=2, modes=False, ignore=False, spaces=False),
              2: Knobs(files=28, changes=7, baselines=3, modes=True, ignore=False, spaces=False),
              3: Knobs(files=55, changes=10, baselines=3, modes=True, ignore=True, spaces=False),
              4: Knobs(files=110, changes=16, baselines=4, modes=True, ignore=True, spaces=True)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
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
            tree["cron.sh"] = ["0750", "#!/bin/sh\nphp /app/srv/www/cron.php\n"]
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
            lines = [f"# integrity baseline of /app/srv/www, snapshot {code}", f"# taken {date}T03:00:00Z",
                     "# <mode> <HMAC-SHA256 of the content, keyed with the site integrity key> <path relative to "
                     "/app/srv/www>", f"# key check: {_mac(key, '')}"]
            lines += [f"{state[p][0]} {_mac(key, state[p][1])} {p}" for p in order]
            return "\n".join(lines) + "\n"

        # The live tree: apply the attacker's and admins' changes.
        live = {p: list(v) for p, v in tree.items()}
        kinds = ["modified", "missing", "added", "touched"]
        if k.modes:
            kinds += ["mode", "mode_and_content"]
        if k.spaces:
            kinds += ["rename"]
        victims = rng.sample([p for p in paths if not p.startswith(("cache/", "logs/"))], k.changes)
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
            t.add_file(f"/app/srv/www/{p}", live[p][1])
        modes = "".join(f"{live[p][0]} {p}\n" for p in sorted(live))
        t.add_file("/tmp/tmax-fixture/modes.txt", modes)
        t.add_setup("while read -r m p; do chmod \"$m\" \"/app/srv/www/$p\"; done < /tmp/tmax-fixture/modes.txt\n"
                    "rm -f /tmp/tmax-fixture/modes.txt")
        if touched:
            t.add_setup("touch -d '2026-11-02 03:14:00' " + " ".join(f"'/app/srv/www/{p}'" for p in touched))
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
