"""Hidden checks for find-leaked-secrets.

1. /app/leaks.txt must list exactly the expected findings (order-insensitive, no
   duplicates, no extras).
2. The tree /app/repo must match expected_tree.sha256 exactly: every token redacted,
   every other byte untouched, no files added (e.g. sed backups) or removed.
Exit code 0 only if both hold.
"""
import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = "/app/repo"


def main():
    ok = True
    with open(os.path.join(HERE, "expected_leaks.txt")) as f:
        want = sorted(l.strip() for l in f if l.strip())
    try:
        with open("/app/leaks.txt", encoding="utf-8", errors="replace") as f:
            got = sorted(l.strip() for l in f if l.strip())
    except OSError as e:
        print("FAIL leaks.txt:", e)
        got, ok = None, False
    if got is not None and got != want:
        print("FAIL leaks.txt")
        print("  missing:", sorted(set(want) - set(got)))
        print("  unexpected:", sorted(set(got) - set(want)))
        if len(got) != len(set(got)):
            print("  duplicate lines present")
        ok = False
    elif got is not None:
        print("ok   leaks.txt (%d findings)" % len(want))

    expected = {}
    with open(os.path.join(HERE, "expected_tree.sha256")) as f:
        for line in f:
            digest, rel = line.rstrip("\n").split("  ", 1)
            expected[rel] = digest
    actual = {}
    for dirpath, dirnames, filenames in os.walk(ROOT):
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, ROOT)
            if os.path.islink(path) or not os.path.isfile(path):
                actual[rel] = "not-a-regular-file"
                continue
            with open(path, "rb") as f:
                actual[rel] = hashlib.sha256(f.read()).hexdigest()
    if actual != expected:
        print("FAIL repository tree")
        print("  missing files:", sorted(set(expected) - set(actual)))
        print("  extra files:", sorted(set(actual) - set(expected)))
        print("  wrong content:", sorted(k for k in expected if k in actual and actual[k] != expected[k]))
        ok = False
    else:
        print("ok   repository tree (%d files)" % len(expected))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
