"""Reference programs of planted_bug_repair's wrong_lines variant: the shipped tool's output checked line
by line against the fixed tool's. Both tools are embedded as their Python renders (every language's
template behaves as its Python render); the C, Go and Rust references hand the same check to python3,
which the grader's machine has (the agent writes its own program in that language)."""

from __future__ import annotations

import json

from tmax.families.programs import fill

DIFF_PY = r'''import sys

SHIPPED = @SHIPPED@
FIXED = @FIXED@


def output(src, text):
    ns = {"__name__": "tool"}
    exec(src, ns)
    return ns["run"](text).splitlines()


def run(text):
    """`<n>: <shipped line> -> <right line>` for every output line the shipped tool gets wrong."""
    got, want = output(SHIPPED, text), output(FIXED, text)
    out = []
    for n in range(max(len(got), len(want))):
        g = got[n] if n < len(got) else "(missing)"
        w = want[n] if n < len(want) else "(missing)"
        if g != w:
            out.append(f"{n + 1}: {g} -> {w}\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(run(sys.stdin.read()))
'''

# The check run by python3 from another language: standard input and output pass straight through.
WRAPPERS = {
    "C": r'''#include <unistd.h>

static const char SRC[] = @SRC@;

int main(void) {
    execlp("python3", "python3", "-c", SRC, (char *)0);
    return 127;
}
''',
    "Go": r'''package main

import (
	"os"
	"os/exec"
)

const src = @SRC@

func main() {
	c := exec.Command("python3", "-c", src)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if c.Run() != nil {
		os.Exit(1)
	}
}
''',
    "Rust": r'''use std::process::{exit, Command};

fn main() {
    let src = @SRC@;
    let ok = Command::new("python3").arg("-c").arg(src).status().map(|s| s.success()).unwrap_or(false);
    if !ok {
        exit(1);
    }
}
''',
}


def diff_program(shipped: str, fixed: str) -> str:
    """The Python check of ``shipped`` (a Python render) against ``fixed`` (one, perhaps with @@PARAM@@)."""
    return fill(DIFF_PY, SHIPPED=repr(shipped), FIXED=repr(fixed))


def in_language(lang: str, python_src: str) -> str:
    """The check as a ``lang`` program (JSON string syntax is a valid C, Go and Rust literal for ASCII)."""
    return python_src if lang == "Python" else fill(WRAPPERS[lang], SRC=json.dumps(python_src))
