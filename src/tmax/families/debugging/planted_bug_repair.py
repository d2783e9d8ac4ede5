"""Repair a small command-line tool with planted bugs. The tool (Python or C, or both) reads standard
input and writes standard output; its documented behaviour is given in full. Besides one to four
planted defects (off-by-one ranges, a wrong comparator, a bad initial value, truncating instead of
flooring division, a dropped final group...), it still hard-codes an outdated parameter whose
correct value is delivered separately. Graded by running the fixed tool against the reference on
hidden inputs (fuzz_equivalence), or by the combined output of the fixed tool over a batch of inputs.
Variants: repair_tool (fix it in place), port_fix (the tool ships in another language: rewrite it, fixed,
in the one asked for) and wrong_lines (leave the shipped tool alone and report, line by line, the output
it gets wrong with the right line; as a program, that check)."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import PROGRAM_FILES, Family, FamilyError, TaskBuilder, register
from tmax.families.debugging._planted_bug_repair_refs import diff_program, in_language
from tmax.families.programs import PLACEHOLDER, fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

PARAM = "@@PARAM@@"  # the parameter in the oracle's copy: its commands put the delivered value in

# --------------------------------------------------------------------------------------------------
# Kernel 1: interval merging
# --------------------------------------------------------------------------------------------------
INTERVALS_PY = r'''import sys

GAP = @PARAM@


def parse(text):
    pairs = []
    for line in text.split("\n"):
        parts = line.split()
        if len(parts) == 2:
            pairs.append((int(parts[0]), int(parts[1])))
    return pairs


def merge(pairs):
    pairs = @B_SORT@
    merged = []
    if not pairs:
        return merged
    cur_start, cur_end = pairs[0]
    for start, end in pairs[1:]:
        if @B_CMP@:
            @B_MAX@
        else:
            merged.append((cur_start, cur_end))
            cur_start, cur_end = start, end
    @B_FLUSH@
    return merged


def run(text):
    merged = merge(parse(text))
    out = [f"{s} {e}" for s, e in merged]
    out.append(f"count {len(merged)}")
    out.append(f"covered {@B_LEN@}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(run(sys.stdin.read()))
'''

INTERVALS_C = r'''#include <stdio.h>
#include <stdlib.h>

#define GAP @PARAM@L

typedef struct {
    long start, end;
} Interval;

static int by_start(const void *a, const void *b) {
    const Interval *x = a, *y = b;
@B_SORT@
    return 0;
}

int main(void) {
    size_t cap = 16, n = 0, m = 0;
    Interval *v = malloc(cap * sizeof *v);
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        long s, e;
        char extra;
        if (sscanf(line, "%ld %ld %c", &s, &e, &extra) != 2)
            continue;
        if (n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
        }
        v[n].start = s;
        v[n].end = e;
        n++;
    }
    qsort(v, n, sizeof *v, by_start);
    Interval *out = malloc((n + 1) * sizeof *out);
    if (n > 0) {
        long cur_start = v[0].start, cur_end = v[0].end;
        for (size_t i = 1; i < n; i++) {
            if (@B_CMP@) {
                @B_MAX@
            } else {
                out[m].start = cur_start;
                out[m].end = cur_end;
                m++;
                cur_start = v[i].start;
                cur_end = v[i].end;
            }
        }
        @B_FLUSH@
    }
    long covered = 0;
    for (size_t i = 0; i < m; i++) {
        printf("%ld %ld\n", out[i].start, out[i].end);
        covered += @B_LEN@;
    }
    printf("count %zu\ncovered %ld\n", m, covered);
    free(out);
    free(v);
    return 0;
}
'''

INTERVALS_GO = r'''package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

const gap = @PARAM@

type interval struct {
	start, end int64
}

func main() {
	var v []interval
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		s, err1 := strconv.ParseInt(f[0], 10, 64)
		e, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		v = append(v, interval{s, e})
	}
	sort.Slice(v, func(i, j int) bool {
@B_SORT@
	})
	var out []interval
	if len(v) > 0 {
		curStart, curEnd := v[0].start, v[0].end
		for _, iv := range v[1:] {
			if @B_CMP@ {
				@B_MAX@
			} else {
				out = append(out, interval{curStart, curEnd})
				curStart, curEnd = iv.start, iv.end
			}
		}
		@B_FLUSH@
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	var covered int64
	for _, iv := range out {
		fmt.Fprintf(w, "%d %d\n", iv.start, iv.end)
		covered += @B_LEN@
	}
	fmt.Fprintf(w, "count %d\ncovered %d\n", len(out), covered)
}
'''

INTERVALS_RS = r'''use std::io::{self, BufRead, Write};

const GAP: i64 = @PARAM@;

fn main() {
    let stdin = io::stdin();
    let mut v: Vec<(i64, i64)> = Vec::new();
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 2 {
            continue;
        }
        if let (Ok(s), Ok(e)) = (f[0].parse::<i64>(), f[1].parse::<i64>()) {
            v.push((s, e));
        }
    }
    @B_SORT@
    let mut out: Vec<(i64, i64)> = Vec::new();
    if !v.is_empty() {
        let (mut cur_start, mut cur_end) = v[0];
        for &(start, end) in &v[1..] {
            if @B_CMP@ {
                @B_MAX@
            } else {
                out.push((cur_start, cur_end));
                cur_start = start;
                cur_end = end;
            }
        }
        @B_FLUSH@
    }
    let stdout = io::stdout();
    let mut w = io::BufWriter::new(stdout.lock());
    let mut covered: i64 = 0;
    for &(s, e) in &out {
        writeln!(w, "{} {}", s, e).unwrap();
        covered += @B_LEN@;
    }
    writeln!(w, "count {}\ncovered {}", out.len(), covered).unwrap();
}
'''

INTERVALS_BUGS = {
    "B_SORT": {"Python": ("sorted(pairs)", "sorted(pairs, key=lambda p: (p[1], p[0]))"),
               "C": ("    if (x->start != y->start) return x->start < y->start ? -1 : 1;\n"
                     "    if (x->end != y->end) return x->end < y->end ? -1 : 1;",
                     "    if (x->end != y->end) return x->end < y->end ? -1 : 1;\n"
                     "    if (x->start != y->start) return x->start < y->start ? -1 : 1;"),
               "Go": ("\t\tif v[i].start != v[j].start {\n\t\t\treturn v[i].start < v[j].start\n\t\t}\n"
                      "\t\treturn v[i].end < v[j].end",
                      "\t\tif v[i].end != v[j].end {\n\t\t\treturn v[i].end < v[j].end\n\t\t}\n"
                      "\t\treturn v[i].start < v[j].start"),
               "Rust": ("v.sort();", "v.sort_by_key(|&(s, e)| (e, s));")},
    "B_CMP": {"Python": ("start - cur_end <= GAP", "start - cur_end < GAP"),
              "C": ("v[i].start - cur_end <= GAP", "v[i].start - cur_end < GAP"),
              "Go": ("iv.start-curEnd <= gap", "iv.start-curEnd < gap"),
              "Rust": ("start - cur_end <= GAP", "start - cur_end < GAP")},
    "B_MAX": {"Python": ("cur_end = max(cur_end, end)", "cur_end = end"),
              "C": ("if (v[i].end > cur_end) cur_end = v[i].end;", "cur_end = v[i].end;"),
              "Go": ("if iv.end > curEnd {\n\t\t\t\t\tcurEnd = iv.end\n\t\t\t\t}", "curEnd = iv.end"),
              "Rust": ("cur_end = cur_end.max(end);", "cur_end = end;")},
    "B_FLUSH": {"Python": ("merged.append((cur_start, cur_end))",
                           "if merged:\n        merged.append((cur_start, cur_end))"),
                "C": ("out[m].start = cur_start;\n        out[m].end = cur_end;\n        m++;",
                      "if (m > 0) {\n            out[m].start = cur_start;\n            out[m].end = cur_end;\n"
                      "            m++;\n        }"),
                "Go": ("out = append(out, interval{curStart, curEnd})",
                       "if len(out) > 0 {\n\t\t\tout = append(out, interval{curStart, curEnd})\n\t\t}"),
                "Rust": ("out.push((cur_start, cur_end));",
                         "if !out.is_empty() {\n            out.push((cur_start, cur_end));\n        }")},
    "B_LEN": {"Python": ("sum(e - s for s, e in merged)", "sum(e - s + 1 for s, e in merged)"),
              "C": ("out[i].end - out[i].start", "out[i].end - out[i].start + 1"),
              "Go": ("iv.end - iv.start", "iv.end - iv.start + 1"), "Rust": ("e - s", "e - s + 1")},
}


def gen_intervals(rng, size, param):
    n = rng.choice([rng.randrange(1, 4), rng.randrange(3, 9), size])
    span = max(4, n * rng.choice([1, 3, 8]))
    maxlen = rng.choice([3, 8, 25])
    lines = []
    for _ in range(n):
        s = rng.randrange(0, span)
        lines.append(f"{s} {s + rng.randrange(1, maxlen + 1)}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# Kernel 2: bracket checker
# --------------------------------------------------------------------------------------------------
BRACKETS_PY = r'''import sys

MAX_DEPTH = @PARAM@
OPENERS = "([{"
PARTNER = {")": "(", "]": "[", "}": @B_PAIRS@}


def check(line):
    stack = []
    quote_col = 0
    for i, ch in enumerate(line):
        col = @B_COL@
        if quote_col:
            if ch == '"':
                quote_col = 0
            continue
        if ch == '"':
            quote_col = col
        elif ch in OPENERS:
            stack.append((ch, col))
            if @B_DEPTH@:
                return f"error {col} depth"
        elif ch in PARTNER:
            if not stack:
                return f"error {col} unexpected"
            if stack[-1][0] != PARTNER[ch]:
                return f"error {col} mismatch"
            stack.pop()
@B_END@
    return "ok"


def run(text):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return "".join(check(line) + "\n" for line in lines)


if __name__ == "__main__":
    sys.stdout.write(run(sys.stdin.read()))
'''

BRACKETS_C = r'''#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH @PARAM@

static char partner(char c) {
    switch (c) {
    case ')': return '(';
    case ']': return '[';
    case '}': return @B_PAIRS@;
    }
    return 0;
}

static void check(const char *line, size_t len) {
    char stack[64];
    size_t cols[64];
    size_t depth = 0, quote_col = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = line[i];
        size_t col = @B_COL@;
        if (quote_col) {
            if (ch == '"')
                quote_col = 0;
            continue;
        }
        if (ch == '"') {
            quote_col = col;
        } else if (ch == '(' || ch == '[' || ch == '{') {
            stack[depth] = ch;
            cols[depth] = col;
            depth++;
            if (@B_DEPTH@) {
                printf("error %zu depth\n", col);
                return;
            }
        } else if (ch == ')' || ch == ']' || ch == '}') {
            if (depth == 0) {
                printf("error %zu unexpected\n", col);
                return;
            }
            if (stack[depth - 1] != partner(ch)) {
                printf("error %zu mismatch\n", col);
                return;
            }
            depth--;
        }
    }
@B_END@
    printf("ok\n");
}

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, stdin)) != -1) {
        size_t len = (size_t)got;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        check(line, len);
    }
    free(line);
    return 0;
}
'''

BRACKETS_GO = r'''package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

const maxDepth = @PARAM@

func partner(c byte) byte {
	switch c {
	case ')':
		return '('
	case ']':
		return '['
	case '}':
		return @B_PAIRS@
	}
	return 0
}

func check(line string) string {
	var stack []byte
	var cols []int
	quoteCol := 0
	for i := 0; i < len(line); i++ {
		ch := line[i]
		col := @B_COL@
		if quoteCol != 0 {
			if ch == '"' {
				quoteCol = 0
			}
			continue
		}
		if ch == '"' {
			quoteCol = col
		} else if strings.IndexByte("([{", ch) >= 0 {
			stack = append(stack, ch)
			cols = append(cols, col)
			if @B_DEPTH@ {
				return fmt.Sprintf("error %d depth", col)
			}
		} else if strings.IndexByte(")]}", ch) >= 0 {
			if len(stack) == 0 {
				return fmt.Sprintf("error %d unexpected", col)
			}
			if stack[len(stack)-1] != partner(ch) {
				return fmt.Sprintf("error %d mismatch", col)
			}
			stack = stack[:len(stack)-1]
			cols = cols[:len(cols)-1]
		}
	}
@B_END@
	return "ok"
}

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for sc.Scan() {
		fmt.Fprintln(w, check(sc.Text()))
	}
}
'''

BRACKETS_RS = r'''use std::io::{self, Read, Write};

const MAX_DEPTH: usize = @PARAM@;

fn partner(c: u8) -> u8 {
    match c {
        b')' => b'(',
        b']' => b'[',
        b'}' => @B_PAIRS@,
        _ => 0,
    }
}

fn check(line: &[u8]) -> String {
    let mut stack: Vec<u8> = Vec::new();
    let mut cols: Vec<usize> = Vec::new();
    let mut quote_col: usize = 0;
    for (i, &ch) in line.iter().enumerate() {
        let col = @B_COL@;
        if quote_col != 0 {
            if ch == b'"' {
                quote_col = 0;
            }
            continue;
        }
        if ch == b'"' {
            quote_col = col;
        } else if b"([{".contains(&ch) {
            stack.push(ch);
            cols.push(col);
            if @B_DEPTH@ {
                return format!("error {} depth", col);
            }
        } else if b")]}".contains(&ch) {
            if stack.is_empty() {
                return format!("error {} unexpected", col);
            }
            if *stack.last().unwrap() != partner(ch) {
                return format!("error {} mismatch", col);
            }
            stack.pop();
            cols.pop();
        }
    }
@B_END@
    "ok".to_string()
}

fn main() {
    let mut data = Vec::new();
    io::stdin().lock().read_to_end(&mut data).unwrap();
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if lines.last().map_or(false, |l| l.is_empty()) {
        lines.pop();
    }
    let stdout = io::stdout();
    let mut w = io::BufWriter::new(stdout.lock());
    for line in lines {
        writeln!(w, "{}", check(line)).unwrap();
    }
}
'''

_BR_END_PY_GOOD = ('    if quote_col:\n        return f"error {quote_col} quote"\n'
                   '    if stack:\n        return f"error {@B_UNCLOSED@} unclosed"')
_BR_END_PY_BAD = ('    if stack:\n        return f"error {@B_UNCLOSED@} unclosed"\n'
                  '    if quote_col:\n        return f"error {quote_col} quote"')
_BR_END_C_GOOD = ('    if (quote_col) {\n        printf("error %zu quote\\n", quote_col);\n        return;\n    }\n'
                  '    if (depth > 0) {\n        printf("error %zu unclosed\\n", @B_UNCLOSED@);\n        return;\n    }')
_BR_END_C_BAD = ('    if (depth > 0) {\n        printf("error %zu unclosed\\n", @B_UNCLOSED@);\n        return;\n    }\n'
                 '    if (quote_col) {\n        printf("error %zu quote\\n", quote_col);\n        return;\n    }')

_BR_END_GO_GOOD = ('\tif quoteCol != 0 {\n\t\treturn fmt.Sprintf("error %d quote", quoteCol)\n\t}\n'
                   '\tif len(stack) > 0 {\n\t\treturn fmt.Sprintf("error %d unclosed", @B_UNCLOSED@)\n\t}')
_BR_END_GO_BAD = ('\tif len(stack) > 0 {\n\t\treturn fmt.Sprintf("error %d unclosed", @B_UNCLOSED@)\n\t}\n'
                  '\tif quoteCol != 0 {\n\t\treturn fmt.Sprintf("error %d quote", quoteCol)\n\t}')

_BR_END_RS_GOOD = ('    if quote_col != 0 {\n        return format!("error {} quote", quote_col);\n    }\n'
                   '    if !stack.is_empty() {\n        return format!("error {} unclosed", @B_UNCLOSED@);\n    }')
_BR_END_RS_BAD = ('    if !stack.is_empty() {\n        return format!("error {} unclosed", @B_UNCLOSED@);\n    }\n'
                  '    if quote_col != 0 {\n        return format!("error {} quote", quote_col);\n    }')

BRACKETS_BUGS = {
    "B_END": {"Python": (_BR_END_PY_GOOD, _BR_END_PY_BAD), "C": (_BR_END_C_GOOD, _BR_END_C_BAD),
              "Go": (_BR_END_GO_GOOD, _BR_END_GO_BAD), "Rust": (_BR_END_RS_GOOD, _BR_END_RS_BAD)},
    "B_PAIRS": {"Python": ('"{"', '"["'), "C": ("'{'", "'['"), "Go": ("'{'", "'['"), "Rust": ("b'{'", "b'['")},
    "B_COL": {"Python": ("i + 1", "i"), "C": ("i + 1", "i"), "Go": ("i + 1", "i"), "Rust": ("i + 1", "i")},
    "B_DEPTH": {"Python": ("len(stack) > MAX_DEPTH", "len(stack) >= MAX_DEPTH"),
                "C": ("depth > MAX_DEPTH", "depth >= MAX_DEPTH"),
                "Go": ("len(stack) > maxDepth", "len(stack) >= maxDepth"),
                "Rust": ("stack.len() > MAX_DEPTH", "stack.len() >= MAX_DEPTH")},
    "B_UNCLOSED": {"Python": ("stack[-1][1]", "stack[0][1]"), "C": ("cols[depth - 1]", "cols[0]"),
                   "Go": ("cols[len(cols)-1]", "cols[0]"), "Rust": ("cols[cols.len() - 1]", "cols[0]")},
}

_FILLER = "abcxyz0123 ,;:+=-"


def gen_brackets(rng, size, param):
    closer = {"(": ")", "[": "]", "{": "}"}
    lines = []
    for _ in range(rng.choice([rng.randrange(1, 5), size])):
        stack, parts = [], []
        maxd = param + rng.choice([-1, 0, 1, 2])
        for _ in range(rng.randrange(0, 30)):
            r = rng.random()
            if r < 0.25 and len(stack) < maxd:
                b = rng.choice("([{")
                stack.append(b)
                parts.append(b)
            elif r < 0.5 and stack:
                c = closer[stack.pop()]
                parts.append(rng.choice(")]}") if rng.random() < 0.08 else c)
            elif r < 0.56:
                word = "".join(rng.choice(_FILLER + "([{}])") for _ in range(rng.randrange(0, 6)))
                parts.append('"' + word + ('"' if rng.random() < 0.75 else ""))
            elif r < 0.58:
                parts.append(rng.choice(")]}"))
            else:
                parts.append(rng.choice(_FILLER))
        if rng.random() < 0.6:
            parts.extend(closer[b] for b in reversed(stack))
        lines.append("".join(parts))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# Kernel 3: sliding-window statistics
# --------------------------------------------------------------------------------------------------
WINDOW_PY = r'''import sys

WINDOW = @PARAM@


def run(text):
    values = [int(tok) for tok in text.split()]
    n = len(values)
    out = []
    count = 0
    if n >= WINDOW:
        total = sum(values[:WINDOW])
        for i in range(@B_RANGE@):
            if i > 0:
                total += values[i + WINDOW - 1] - @B_SLIDE@
            lo = hi = @B_INIT@
            for v in values[i:i + WINDOW]:
                if v < lo:
                    lo = v
                if v > hi:
                    hi = v
            out.append(f"{i} {lo} {hi} {@B_DIV@}")
            count += 1
    out.append(f"windows {count}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(run(sys.stdin.read()))
'''

WINDOW_C = r'''#include <stdio.h>
#include <stdlib.h>

#define WINDOW @PARAM@

static long floor_div(long a, long b) {
    long q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        q--;
    return q;
}

int main(void) {
    size_t cap = 64, n = 0, count = 0;
    long *v = malloc(cap * sizeof *v);
    long x;
    while (scanf("%ld", &x) == 1) {
        if (n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
        }
        v[n++] = x;
    }
    if (n >= WINDOW) {
        long total = 0;
        for (size_t i = 0; i < WINDOW; i++)
            total += v[i];
        for (size_t i = 0; i < @B_RANGE@; i++) {
            if (i > 0)
                total += v[i + WINDOW - 1] - @B_SLIDE@;
            long lo = @B_INIT@, hi = lo;
            for (size_t j = i; j < i + WINDOW; j++) {
                if (v[j] < lo)
                    lo = v[j];
                if (v[j] > hi)
                    hi = v[j];
            }
            printf("%zu %ld %ld %ld\n", i, lo, hi, @B_DIV@);
            count++;
        }
    }
    printf("windows %zu\n", count);
    free(v);
    return 0;
}
'''

WINDOW_GO = r'''package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
)

const window = @PARAM@

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sc.Split(bufio.ScanWords)
	var v []int64
	for sc.Scan() {
		x, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			continue
		}
		v = append(v, x)
	}
	n := len(v)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	count := 0
	if n >= window {
		var total int64
		for i := 0; i < window; i++ {
			total += v[i]
		}
		for i := 0; i < @B_RANGE@; i++ {
			if i > 0 {
				total += v[i+window-1] - @B_SLIDE@
			}
			lo := @B_INIT@
			hi := lo
			for _, x := range v[i : i+window] {
				if x < lo {
					lo = x
				}
				if x > hi {
					hi = x
				}
			}
			fmt.Fprintf(w, "%d %d %d %d\n", i, lo, hi, @B_DIV@)
			count++
		}
	}
	fmt.Fprintf(w, "windows %d\n", count)
}
'''

WINDOW_RS = r'''use std::io::{self, Read, Write};

const WINDOW: usize = @PARAM@;

fn floor_div(a: i64, b: i64) -> i64 {
    let mut q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q -= 1;
    }
    q
}

fn main() {
    let mut text = String::new();
    io::stdin().read_to_string(&mut text).unwrap();
    let v: Vec<i64> = text.split_whitespace().filter_map(|t| t.parse().ok()).collect();
    let n = v.len();
    let stdout = io::stdout();
    let mut w = io::BufWriter::new(stdout.lock());
    let mut count = 0;
    if n >= WINDOW {
        let mut total: i64 = v[..WINDOW].iter().sum();
        for i in 0..@B_RANGE@ {
            if i > 0 {
                total += v[i + WINDOW - 1] - @B_SLIDE@;
            }
            let mut lo: i64 = @B_INIT@;
            let mut hi = lo;
            for &x in &v[i..i + WINDOW] {
                if x < lo {
                    lo = x;
                }
                if x > hi {
                    hi = x;
                }
            }
            writeln!(w, "{} {} {} {}", i, lo, hi, @B_DIV@).unwrap();
            count += 1;
        }
    }
    writeln!(w, "windows {}", count).unwrap();
}
'''

WINDOW_BUGS = {
    "B_RANGE": {"Python": ("n - WINDOW + 1", "n - WINDOW"), "C": ("n - WINDOW + 1", "n - WINDOW"),
                "Go": ("n-window+1", "n-window"), "Rust": ("n - WINDOW + 1", "n - WINDOW")},
    "B_SLIDE": {"Python": ("values[i - 1]", "values[i]"), "C": ("v[i - 1]", "v[i]"), "Go": ("v[i-1]", "v[i]"),
                "Rust": ("v[i - 1]", "v[i]")},
    "B_INIT": {"Python": ("values[i]", "0"), "C": ("v[i]", "0"), "Go": ("v[i]", "int64(0)"),
               "Rust": ("v[i]", "0")},
    "B_DIV": {"Python": ("total // WINDOW", "int(total / WINDOW)"),
              "C": ("floor_div(total, WINDOW)", "total / WINDOW"),
              "Go": ("floorDiv(total, window)", "total / window"),
              "Rust": ("floor_div(total, WINDOW as i64)", "total / WINDOW as i64")},
}


def gen_window(rng, size, param):
    n = rng.choice([rng.randrange(0, param + 3), size, size // 2 + 1])
    lo, hi = rng.choice([(-20, 20), (1, 99), (-99, -1), (-1000, 1000)])
    vals = [str(rng.randint(lo, hi)) for _ in range(n)]
    per = rng.choice([1, 8])
    return "".join(v + ("\n" if (i + 1) % per == 0 else " ") for i, v in enumerate(vals)).rstrip(" ") + "\n"


# Per kernel: its templates and bug slots, the generator, the parameter's range, and "alts": the one-digit
# values a guess could use instead of the delivered one (the inputs must tell each from the right one).
KERNELS = {
    "intervals": {
        "py": INTERVALS_PY, "c": INTERVALS_C, "go": INTERVALS_GO, "rs": INTERVALS_RS, "bugs": INTERVALS_BUGS, "gen": gen_intervals,
        "param": (1, 9), "alts": range(0, 10),
        "param_name": "merge gap", "base": "merge_intervals", "dir": "spans",
        "what": "merges integer intervals from a scheduling export",
        "spec": ("It reads intervals from standard input, one per line as two integers `start end` "
                 "(0 <= start < end), in any order. It sorts them by start (then by end) and merges them into "
                 "groups: an interval joins the current group when its start minus the group's end is at most "
                 "the merge gap G (so overlapping intervals always merge, and with G = 2 the intervals `1 4` and "
                 "`6 9` merge too); a group's end is the largest end of its members. It prints one line "
                 "`start end` per group in ascending order, then `count <number of groups>`, then "
                 "`covered <sum of end - start over the groups>`."),
    },
    "brackets": {
        "py": BRACKETS_PY, "c": BRACKETS_C, "go": BRACKETS_GO, "rs": BRACKETS_RS, "bugs": BRACKETS_BUGS, "gen": gen_brackets,
        "param": (2, 6), "alts": range(0, 10),
        "param_name": "maximum nesting depth", "base": "bracket_lint", "dir": "snippets",
        "what": "lints bracket nesting in template snippets",
        "spec": ("It checks each line of standard input (every line, empty ones included) and prints exactly one "
                 "result line per input line. Columns are 1-based character positions. Scanning left to right: "
                 "a double quote `\"` opens a quoted section that ends at the next double quote, and everything "
                 "inside it is ignored. Outside quotes `(`, `[`, `{` open and `)`, `]`, `}` close. At the first "
                 "problem it prints `error <col> <kind>` and stops looking at that line: kind `depth` when an "
                 "opening bracket makes more than D brackets open at once (D is the maximum nesting depth; col: that "
                 "bracket), `unexpected` for "
                 "a closing bracket while nothing is open, `mismatch` for a closing bracket whose type differs "
                 "from the most recently opened one. At the end of the line: if a quoted section is still open, "
                 "`error <col> quote` with the column of its opening quote; otherwise, if brackets are still "
                 "open, `error <col> unclosed` with the column of the most recently opened one. Otherwise it "
                 "prints `ok`."),
    },
    "window": {
        "py": WINDOW_PY, "c": WINDOW_C, "go": WINDOW_GO, "rs": WINDOW_RS, "bugs": WINDOW_BUGS, "gen": gen_window,
        "param": (3, 9), "alts": range(1, 10),
        "param_name": "window size", "base": "window_stats", "dir": "series",
        "what": "summarises sensor readings over sliding windows",
        "spec": ("It reads whitespace-separated integers from standard input (n values). For every window of W "
                 "consecutive values (W is the window size), at positions i = 0, 1, ..., n - W, it prints `i min max avg`, where avg is "
                 "the window's sum divided by W and rounded down (towards negative infinity, so -7/2 gives -4). "
                 "It ends with the line `windows <number of windows printed>` (0 when there are fewer than W "
                 "values)."),
    },
}


KEY = {"Python": "py", "C": "c", "Go": "go", "Rust": "rs"}  # language -> template key and file extension


def render(ker: dict, lang: str, planted: list[str], param: str) -> str:
    """The kernel's tool in ``lang``: each bug slot gets the buggy snippet if planted, the correct one
    otherwise. A snippet may name another slot (B_END holds B_UNCLOSED): that one is filled into it."""
    snippets = {bug: variants[lang][1 if bug in planted else 0] for bug, variants in ker["bugs"].items()}
    inner = {name for s in snippets.values() for name in PLACEHOLDER.findall(s)}
    outer = {bug: fill(s, **{name: snippets[name] for name in PLACEHOLDER.findall(s)})
             for bug, s in snippets.items() if bug not in inner}
    return fill(ker[KEY[lang]], PARAM=param, **outer)


def runner(src: str):
    """The ``run`` (stdin text -> stdout text) of a filled Python tool."""
    return run_python(src)["run"]


@dataclass(frozen=True)
class Knobs:
    bugs: int  # planted defects (at most the kernel's slots)
    cases: int  # hidden fuzz cases (fuzz_equivalence)
    files: int  # input files in the batch (output case)
    size: int  # items per generated input, at most


@register
class PlantedBugRepair(Family):
    name = "planted_bug_repair"
    domain = "debugging"
    skill_types = ("Program Repair", "Fault Localization")
    primitive_skills = ("off-by-one diagnosis", "boundary-value testing", "differential testing against a reference",
                        "comparing expected and actual output", "fixing comparator and ordering bugs",
                        "print-debugging intermediate state")
    verifiers = ("fuzz_equivalence", "exact_text", "metric_threshold", "multi_protocol")
    variants = ("repair_tool", "port_fix", "wrong_lines")
    programs = {lang: render(KERNELS["intervals"], lang, [], PARAM) for lang in KEY}
    languages = ("Python", "C", "Go", "Rust")
    command_complexities = ("bash+code",)
    levels = {0: Knobs(bugs=0, cases=6, files=1, size=8),
              1: Knobs(bugs=1, cases=8, files=3, size=12), 2: Knobs(bugs=2, cases=10, files=4, size=25),
              3: Knobs(bugs=3, cases=14, files=6, size=40), 4: Knobs(bugs=4, cases=18, files=8, size=60)}

    def draw(self, t: TaskBuilder):
        """(kernel name, kernel, parameter, stale parameter, planted bugs, the reference's run, inputs(n,
        shown)): inputs(n, shown) makes n inputs on which, past the first ``shown``, every planted defect
        and every other parameter value a digit could spell shows on its own in the variant's answer (and,
        for the other variants, the shipped tool left as it is)."""
        k, rng = t.knobs, t.rng
        kname = rng.choice(sorted(KERNELS))
        ker = KERNELS[kname]
        lo, hi = ker["param"]
        param = rng.randint(lo, hi)
        stale = rng.choice([v for v in range(lo, hi + 1) if v != param])
        planted = sorted(rng.sample(sorted(ker["bugs"]), min(k.bugs, len(ker["bugs"]))))
        shipped = render(ker, "Python", planted, str(stale))

        def answer(bugs: list[str], p: int):
            src = render(ker, "Python", bugs, str(p))
            return runner(diff_program(shipped, src) if t.variant == "wrong_lines" else src)

        ref = answer([], param)
        # Each planted defect, and the stale parameter, must show on the hidden inputs on its own; so must
        # every other one-digit parameter (a digit read off the task instead of the channel must lose).
        checks = [answer([b], param) for b in planted]
        alts = [stale] + [p for p in ker["alts"] if p not in (param, stale)]
        checks += [answer([], p) for p in alts]
        if t.variant != self.variants[0]:
            checks.append(answer(planted, stale))

        def inputs(n: int, shown: int) -> list[str]:
            xs = [ker["gen"](rng, k.size, param) for _ in range(n)]
            for _ in range(60):
                outs = [ref(x) for x in xs[shown:]]
                if all(any(run(x) != out for x, out in zip(xs[shown:], outs)) for run in checks):
                    return xs
                xs.append(ker["gen"](rng, k.size, param))
            raise FamilyError(f"{kname}: could not find inputs that expose every planted bug")

        return kname, ker, param, stale, planted, ref, inputs

    def program_case(self, t: TaskBuilder) -> None:
        kname, ker, param, stale, planted, ref, inputs = self.draw(t)
        langs = [t.axes.language] if t.axes.language in ("C", "Go", "Rust") else ["Python", "C"] \
            if t.axes.language == "multi-language" else ["Python"]
        if t.variant != "repair_tool":
            return self._program_variant(t, ker, param, stale, planted, ref, inputs, langs)
        for lang in langs:
            t.add_file(f"/app/{PROGRAM_FILES[lang]}", render(ker, lang, planted, str(stale)))
        cases = [(x, ref(x)) for x in inputs(t.knobs.cases, 2)]
        where = " and ".join(f"`/app/{PROGRAM_FILES[lang]}`" for lang in langs)
        twice = " (two implementations that must behave identically)" if len(langs) == 2 else ""
        t.say(f"{where}{twice} is our little tool that {ker['what']}. {ker['spec']}")
        if t.level == 0:  # no planted defect: only the parameter is out of date
            t.say(f"The tool is correct except that it still hard-codes an outdated {ker['param_name']} ({stale}); "
                  "set it to the correct value, given below.")
        else:
            t.say(f"Users report wrong output. The tool has bugs, and it also still hard-codes an outdated "
                  f"{ker['param_name']} ({stale}); use the correct value, given below. Find and fix the "
                  "defects so the tool does exactly what is described above, for any valid input.")
        var = t.deliver(str(param), f"the {ker['param_name']}")
        progs = {lang: render(ker, lang, [], PARAM) for lang in KEY}
        t.expect_program("Fix the tool in place: the fixed file itself is what gets tested.", cases, progs)
        for lang in (["Python"] if t.axes.language == "any" else langs):
            t.solve(f'sed -i "s/{PARAM}/{var}/" /app/{PROGRAM_FILES[lang]}')

    def output_case(self, t: TaskBuilder) -> None:
        """Fix the tool, run it over a batch of inputs, report the combined output. Under partial credit a
        wrong parameter would still earn every line it leaves alone: there the parameter is stated, and the
        delivered value is the code of our batch, filed among other teams' batches under a digest of it."""
        kname, ker, param, stale, planted, ref, inputs = self.draw(t)
        rng = t.rng
        lang = t.axes.language if t.axes.language in KEY else "Python"
        if t.variant == "port_fix" and lang == "Python":  # the tool ships in a language to port it from
            lang = "C"
        tool = f"/app/tool/{ker['base']}.{KEY[lang]}"
        t.add_file(tool, render(ker, lang, planted, str(stale)))
        xs = inputs(t.knobs.files, 0)

        def named(texts: list[str]) -> list[tuple[str, str]]:
            names = [f"{kname}-{i:02d}.txt" for i in range(1, len(texts) + 1)]
            rng.shuffle(names)
            return sorted(zip(names, texts))

        batch = named(xs)
        truth = "".join(f"== {name}\n" + ref(text) for name, text in batch)
        data = f"/app/data/{ker['dir']}"
        if t.partial_credit:
            others = [named([ker["gen"](rng, t.knobs.size, param) for _ in xs]) for _ in range(2)]
            code = unseen(t, t.code, *(text for b in [batch, *others] for _, text in b))
            keys = [key_of(c) for c in [code, *distinct(t.code, len(others), taken=[code])]]
            for key, files in zip(keys, [batch, *others]):
                for name, text in files:
                    t.add_file(f"{data}/{key}/{name}", text)
            where = (f"`{data}/<digest>/`, where the digest is the first 16 hex digits of the SHA-256 of the "
                     "batch code given below (the other folders there are other teams' batches)")
            value = (f"the correct {ker['param_name']} is {param}.", code, "our batch code")
        else:
            for name, text in batch:
                t.add_file(f"{data}/{name}", text)
            where = f"`{data}/`"
            value = ("use the correct value, given below.", str(param), f"the {ker['param_name']}")
        how = {"Python": "run it with `python3`", "C": f"build it with `gcc -O2 -o /app/tool/{ker['base']} {tool}`",
               "Go": f"build it with `go build -o /app/tool/{ker['base']} {tool}`",
               "Rust": f"build it with `rustc -O -o /app/tool/{ker['base']} {tool}`"}[lang]
        if t.variant == "port_fix":
            how = f"the only copy left: we are retiring the {lang} build"
        t.say(f"`{tool}` is our little tool that {ker['what']} ({how}). {ker['spec']}")
        if t.variant != "repair_tool":
            t.say(self._output_ask(t, ker, stale, value[0], where))
        elif t.level == 0:  # no planted defect: update the parameter and run the one file
            t.say(f"The tool is correct except that it still hard-codes an outdated {ker['param_name']} ({stale}); "
                  f"{value[0]} Update it, then run the tool on the file of our batch in {where}: write a line "
                  "`== <file name>` followed by the tool's output for that file.")
        else:
            t.say(f"Users report wrong output. The tool has bugs, and it also still hard-codes an outdated "
                  f"{ker['param_name']} ({stale}); {value[0]} Fix it so it does exactly what is described above, "
                  f"then run the fixed tool on every file of our batch in {where}, in file name order, and combine "
                  "the results: for each file, a line `== <file name>` followed by the tool's output for that file.")
        var = t.deliver(value[1], value[2])
        wrong = t.variant == "wrong_lines"
        prog, out = ("wrong_lines.py", "/app/out/wrong_lines.txt") if wrong else ("reference.py", "/app/out/report.txt")
        shipped = render(ker, "Python", planted, str(stale))

        def reference(p: str) -> str:
            fixed = render(ker, "Python", [], p)
            return diff_program(shipped, fixed) if wrong else fixed

        if t.partial_credit:
            t.add_solution_file(prog, reference(str(param)))
            fetch = f'test -n "{var}"\nd={data}/{key_cmd(var)}\ntest -d "$d"\ncp /solution/{prog} /tmp/{prog}\n'
        else:
            t.add_solution_file(prog, reference(PARAM))
            fetch = f'd={data}\nsed "s/{PARAM}/{var}/" /solution/{prog} > /tmp/{prog}\n'
        t.solve(fetch + f'mkdir -p /app/out\n: > {out}\nfor f in $(ls "$d"/ | LC_ALL=C sort); do\n'
                f'  echo "== $f" >> {out}\n'
                f'  python3 /tmp/{prog} < "$d/$f" >> {out}\ndone')
        t.expect_output(out, truth, "the combined wrong lines" if wrong else "the combined report")

    @staticmethod
    def _problem(t: TaskBuilder, ker: dict, stale: int, deployed: str) -> str:
        """What is wrong with the shipped tool (the other variants' wording), and the correct value's sentence."""
        if t.level == 0:
            return (f"The tool is correct except that it still hard-codes an outdated {ker['param_name']} ({stale}); "
                    + deployed)
        return (f"Users report wrong output. The tool has bugs, and it also still hard-codes an outdated "
                f"{ker['param_name']} ({stale}); {deployed}")

    @staticmethod
    def _wrong_lines(t: TaskBuilder) -> str:
        """wrong_lines' ask: how the shipped output is checked, line by line."""
        right = "the tool with the value updated" if t.level == 0 else \
            "a tool that does exactly what is described above with the correct value"
        return (f" Compare the shipped tool's output line by line with that of {right}: for each line number n "
                "at which they differ, in order, write a line `<n>: <shipped line> -> <right line>` (n from 1; "
                "where one output has no line n, `(missing)` stands for it).")

    def _output_ask(self, t: TaskBuilder, ker: dict, stale: int, deployed: str, where: str) -> str:
        """What port_fix and wrong_lines ask of the batch in ``where``."""
        one = t.level == 0
        files = f"the file of our batch in {where}" if one else f"every file of our batch in {where} (file name order)"
        if t.variant == "port_fix":
            return self._problem(t, ker, stale, deployed) + (
                f" Port it to Python as `/app/tool/{ker['base']}.py`" + ("," if one else ", without the defects,")
                + f" then run the port on {files} and combine the results: for each file, a line `== <file name>` "
                "followed by the port's output for that file.")
        return self._problem(t, ker, stale, deployed) + (
            f" The tool is deployed and stays as it is. For {files}, I need the lines of its output that are wrong; "
            "combine the results: for each file, a line `== <file name>`, then its wrong lines.") + self._wrong_lines(t)

    def _program_variant(self, t: TaskBuilder, ker: dict, param: int, stale: int, planted: list[str], ref,
                         inputs, langs: list[str]) -> None:
        """port_fix: rewrite the tool, fixed, from its copy in another language; wrong_lines: a program that
        checks the shipped tool's output line by line."""
        port = t.variant == "port_fix"
        shipped_lang = next(x for x in KEY if x not in langs) if port else langs[0]
        tool = f"/app/{'legacy' if port else 'tool'}/{ker['base']}.{KEY[shipped_lang]}"
        t.add_file(tool, render(ker, shipped_lang, planted, str(stale)))
        cases = [(x, ref(x)) for x in inputs(t.knobs.cases, 2)]
        t.say(f"`{tool}` is " + (f"the old {shipped_lang} version of " if port else "") + f"our little tool that "
              f"{ker['what']}. {ker['spec']}")
        problem = self._problem(t, ker, stale, "the correct value is given below.")
        if port:
            new = "the language of your choice" if t.axes.language == "any" else " and ".join(langs)
            t.say(problem + f" We are moving the tool to {new}: write it anew"
                  + (" with the correct value." if t.level == 0 else ", with the correct value and without the "
                     "defects, so that it does exactly what is described above, for any valid input."))
            how = "Leave the old version where it is: the new program is what gets tested."
            progs = {lang: render(ker, lang, [], PARAM) for lang in KEY}
        else:
            t.say(problem + f" The tool is deployed and stays as it is (your program may run it). For an input of "
                  "the tool, I need the lines of its output that are wrong." + self._wrong_lines(t))
            how = "Write a program that reads an input of the tool and prints those lines (nothing if all are right)."
            check = diff_program(render(ker, "Python", planted, str(stale)), render(ker, "Python", [], PARAM))
            progs = {lang: in_language(lang, check) for lang in KEY}
        var = t.deliver(str(param), f"the {ker['param_name']}")
        t.expect_program(how, cases, progs)
        for lang in (["Python"] if t.axes.language == "any" else langs):
            t.solve(f'sed -i "s/{PARAM}/{var}/" /app/{PROGRAM_FILES[lang]}')
