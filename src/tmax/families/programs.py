"""Reference programs: the one way a template is filled, running a Python reference on the host, and
the C pieces that several families' references share.

A template names its values as ``@NAME@`` (capitals, digits, underscores). :func:`fill` replaces each
with a value and refuses a template with a name left unfilled or a value nothing uses, so a typo
never ships a task whose reference silently differs from its truth. ``@@NAME@@`` is left alone: it
marks a value the oracle's commands put in at solve time (a delivered value the host never writes).
Also the small host-side helpers that references and fixtures share (CSV text, fixtures written to a
host directory). No family is registered here.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tmax.taxonomy import FamilyError

PLACEHOLDER = re.compile(r"(?<!@)@([A-Z][A-Z0-9_]*)@(?!@)")


def fill(template: str, **values: object) -> str:
    """``template`` with every ``@NAME@`` replaced by ``values[NAME]``: a str as it is (source text,
    e.g. a C snippet or a quoted literal the caller wrote), anything else as its Python ``repr``
    (numbers, booleans, tuples, lists, dicts, None)."""
    names = set(PLACEHOLDER.findall(template))
    missing = sorted(names - set(values))
    unused = sorted(set(values) - names)
    if missing or unused:
        raise FamilyError(f"fill: the template names {missing} that no value fills, and values {unused} "
                          "that no @NAME@ uses" if missing and unused else
                          f"fill: no value for {missing}" if missing else f"fill: no @NAME@ uses {unused}")
    return PLACEHOLDER.sub(lambda m: _text(values[m.group(1)]), template)


def _text(v: object) -> str:
    return v if isinstance(v, str) else repr(v)


def run_python(src: str) -> dict:
    """Execute a (filled) Python reference program as a module that is not ``__main__`` and return its
    namespace, so the host computes the truth with the very functions the oracle ships."""
    ns: dict = {"__name__": "tmax_reference"}
    exec(compile(src, "<reference>", "exec"), ns)  # noqa: S102 - our own reference program
    return ns


def csv_text(header: list[str], rows: list[list[str]]) -> str:
    """A CSV fixture as Python's csv module writes it (LF line ends), header first."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


@contextlib.contextmanager
def host_files(files: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """Fixture texts written to a temporary host directory, each under its base name, for a reference
    to read as the oracle will: yields the directory and the files' paths in the order given."""
    with tempfile.TemporaryDirectory(prefix="tmax-ref-") as d:
        paths = []
        for name, text in files.items():
            path = Path(d) / Path(name).name
            path.write_bytes(text.encode())
            paths.append(str(path))
        yield d, paths


# -- C pieces (insert with fill: ``@C_TRIM@``) -------------------------------------------------------

C_TRIM = r'''static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}'''

# Needs C_TRIM. Splits a line in place at commas (no quoting); returns the field count, fills at most max.
C_SPLIT = r'''static int split(char *line, char **f, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        char *c = strchr(p, ',');
        if (c) *c = 0;
        if (n < max) f[n] = trim(p);
        n++;
        if (!c) break;
        p = c + 1;
    }
    return n;
}'''

# One CSV line into fields with double quotes and "" escapes (fields up to 127 bytes, MAXF of them).
C_SPLIT_QUOTED = r'''static int split_quoted(const char *line, char f[MAXF][128]) {
    int n = 0, k = 0, q = 0;
    f[0][0] = 0;
    for (const char *p = line; *p && *p != '\n' && *p != '\r'; p++) {
        if (q) {
            if (*p == '"' && p[1] == '"') { if (k < 127) f[n][k++] = '"'; p++; }
            else if (*p == '"') q = 0;
            else if (k < 127) f[n][k++] = *p;
        } else if (*p == '"') q = 1;
        else if (*p == ',') { f[n][k] = 0; if (n < MAXF - 1) n++; k = 0; f[n][0] = 0; }
        else if (k < 127) f[n][k++] = *p;
    }
    f[n][k] = 0;
    return n + 1;
}'''
