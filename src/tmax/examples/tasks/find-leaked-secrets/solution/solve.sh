#!/bin/bash
# Reference solution: regex scan in Python (handles spaces in names, dotfiles, binaries),
# write the sorted inventory, then redact token values in place.
set -euo pipefail
python3 - <<'PY'
import os, re

root = "/app/repo"
patterns = [
    ("aws_access_key", re.compile(r"AKIA[A-Z0-9]{16}")),
    ("github_token", re.compile(r"ghp_[A-Za-z0-9]{36}")),
    ("slack_token", re.compile(r"xox[bp]-[0-9]+-[0-9]+-[A-Za-z0-9]+")),
    ("private_key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")),
]
placeholder = "AKIAIOSFODNN7EXAMPLE"
findings = []
for dirpath, dirnames, filenames in os.walk(root):
    for name in filenames:
        path = os.path.join(dirpath, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue
        text = data.decode("latin-1")
        rel = os.path.relpath(path, root)
        changed = False
        lines = text.split("\n")
        for i, line in enumerate(lines, 1):
            for kind, pat in patterns:
                hits = [m for m in pat.findall(line) if m != placeholder]
                if hits:
                    findings.append("%s:%d:%s" % (rel, i, kind))
                    if kind != "private_key":
                        for h in hits:
                            line = line.replace(h, "REDACTED")
                        changed = True
            lines[i - 1] = line
        if changed:
            st = os.stat(path)
            with open(path, "wb") as f:
                f.write("\n".join(lines).encode("latin-1"))
            os.chmod(path, st.st_mode & 0o7777)
with open("/app/leaks.txt", "w") as f:
    f.write("".join(l + "\n" for l in sorted(findings)))
PY
