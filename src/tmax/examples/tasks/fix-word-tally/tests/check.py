"""Hidden checks for fix-word-tally.

Compiles the agent's /app/tally/tally.c from scratch with gcc, runs it on a set of
inputs generated here (none of them exist in the sandbox), and compares stdout exactly
with a Python reference implementation of the documented behaviour.
Exit code 0 only if every case passes.
"""
import collections
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile


def reference(data: bytes, n: int) -> bytes:
    counts = collections.Counter(w.lower() for w in re.findall(rb"[A-Za-z]+", data))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return b"".join(b"%d %s\n" % (c, w) for w, c in ranked)


def cases():
    yield "sample", b"The cat and THE dog. the Cat sat; a dog ran, and ran and ran\nZebra zebra zEbRa", None
    yield "ties", b"pear apple Pear APPLE fig kiwi FIG kiwi date\n", 3
    yield "no-trailing-newline", b"one two two three three three four four four four", 5
    yield "exactly-n", b"a b c d e f g h i j k l m\n", 4
    yield "fewer-than-n", b"alpha beta beta\n", 10
    yield "empty", b"", None
    yield "only-separators", b" ,.;!?\n\t 123 456 \n", None
    yield "long-words", (b"x" * 10000 + b" b " + b"X" * 10000 + b"\nb\n" + b"Q" * 5000), 2
    yield "non-ascii", "café naïve résumé\n".encode() + b"\xffresume\xff end RESUME \xc3\xa9t\xc3\xa9 end\n" + b"tail", 10
    yield "digits-split", b"abc1abc2ABC_def-def'ghi\n", None

    rng = random.Random(4242)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    vocab = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(1, 12))) for _ in range(25000)})
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    rng.shuffle(weights)
    words = rng.choices(vocab, weights, k=200000)
    seps = [" ", " ", " ", "\n", ", ", ". ", "--", "\t", " 42 ", "\u00e9".encode("utf-8").decode("latin-1")]
    text = "".join(w + rng.choice(seps) for w in words).encode("latin-1")
    yield "large", text, 25
    yield "large-default", text[:400001], None


SUSPECT = "65532"  # the agent's code runs as this uid: no /tests, no /logs/verifier, killed before we return
AS_SUSPECT = ["setpriv", f"--reuid={SUSPECT}", f"--regid={SUSPECT}", "--clear-groups", "--inh-caps=-all",
              "env", "HOME=/tmp"]


def kill_suspects():
    for _ in range(3):
        subprocess.run(["pkill", "-9", "-U", SUSPECT], check=False)


def main() -> int:
    try:
        return check()
    finally:
        kill_suspects()


def check() -> int:
    src = "/app/tally/tally.c"
    if not os.path.isfile(src):
        print("missing", src)
        return 1
    work = tempfile.mkdtemp()
    shutil.copy(src, work)
    exe = os.path.join(work, "tally")
    # The agent's source is built and run as the suspect (cases are written before it runs).
    build = subprocess.run(AS_SUSPECT + ["gcc", "-O2", "-o", exe, os.path.join(work, "tally.c")],
                           capture_output=True, text=True, timeout=60, cwd="/tmp",
                           preexec_fn=lambda: os.chown(work, int(SUSPECT), int(SUSPECT)))
    if build.returncode != 0:
        print("compile failed:\n", build.stderr[-2000:])
        return 1
    failed = 0
    for name, data, n in cases():
        path = os.path.join(work, name + ".txt")
        with open(path, "wb") as f:
            f.write(data)
        argv = AS_SUSPECT + [exe, path] + ([] if n is None else [str(n)])
        want = reference(data, 10 if n is None else n)
        try:
            got = subprocess.run(argv, capture_output=True, timeout=20)
        except subprocess.TimeoutExpired:
            print("FAIL %s: timeout" % name)
            failed += 1
            continue
        if got.returncode != 0 or got.stdout != want:
            print("FAIL %s: rc=%d\n  want %r\n  got  %r" % (name, got.returncode, want[:300], got.stdout[:300]))
            failed += 1
        else:
            print("ok   %s" % name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
