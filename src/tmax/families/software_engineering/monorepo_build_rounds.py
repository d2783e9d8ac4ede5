"""Plan a monorepo CI build: workspace packages (package.json) depend on each other through
dependencies and devDependencies (peer and external ones do not count); CI builds in rounds with a
limited number of parallel slots. Higher levels build only what a change affects (changed files ->
packages -> everything depending on them) and contain a dependency cycle whose packages are blocked.
The slot count is the delivered value: graphs are drawn so that every other count gives another plan,
and under partial credit every line carries the count. Level 0 asks for the first round only.
Variants: build_rounds (the plan, round by round), package_rounds (each package with the round it is
built in, or `blocked`) and slot_waits (the packages that were ready but found no free slot, with how
many rounds they waited); at level 0 the dependency-free packages' first round, their rounds, or those
left out of the first round."""

from __future__ import annotations

import json

from dataclasses import dataclass, replace

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import C_TRIM, fill, run_python
from tmax.families.software_engineering._monorepo_build_rounds_refs import (VARIANT_ATOMIC, VARIANT_BLOCKED,
                                                                            VARIANT_EXAMPLE, VARIANT_FMT, VARIANT_OUT,
                                                                            atomic_programs, variant_programs)

REFERENCE = r'''
import sys

SLOTS = @SLOTS@


def schedule(text, slots=None):
    slots = max(1, slots or SLOTS)
    deps, changed = {}, None
    for line in text.splitlines():
        if not line.strip():
            continue
        name, _, rest = line.partition(":")
        if name.strip() == "changed":
            changed = rest.split()
        else:
            deps[name.strip()] = rest.split()
    for p in deps:
        deps[p] = [d for d in deps[p] if d in deps and d != p]
    if changed is None:
        target = set(deps)
    else:  # the changed packages and everything that depends on them, directly or not
        target = set(c for c in changed if c in deps)
        grew = True
        while grew:
            grew = False
            for p in deps:
                if p not in target and any(d in target for d in deps[p]):
                    target.add(p)
                    grew = True
    done, rounds = set(), []
    for _ in range(len(target)):  # each round builds at least one package
        ready = sorted(p for p in target - done if all(d in done or d not in target for d in deps[p]))
        if not ready:
            break
        batch = ready[:slots]
        rounds.append(batch)
        done.update(batch)
    out = [f"round {i}: {' '.join(b)}" for i, b in enumerate(rounds, 1)]
    blocked = sorted(target - done)
    if blocked:
        out.append("blocked: " + " ".join(blocked))
    return "".join(x + "\n" for x in out)


if __name__ == "__main__":
    sys.stdout.write(schedule(sys.stdin.read(), int(sys.argv[1]) if len(sys.argv) > 1 else None))
'''

C_TEMPLATE = r'''
/* CI build planner: rounds of at most SLOTS ready packages, byte order; affected set; blocked. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS @@SLOTS@@
#define MAXP 512
#define MAXD 64

static char names[MAXP][128];
static int ndep[MAXP], dep[MAXP][MAXD], np;
static char rawdep[MAXP][MAXD][128];
static int nraw[MAXP];
static char changed[MAXP][128];
static int nchanged = -1;

static int find(const char *s) {
    for (int i = 0; i < np; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

static int cmp(const void *a, const void *b) {
    return strcmp(names[*(const int *)a], names[*(const int *)b]);
}

@C_TRIM@

int main(void) {
    static char line[65536];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        char *t = trim(line);
        if (!*t) continue;
        char *colon = strchr(line, ':');
        char *rest = "";
        if (colon) { *colon = 0; rest = colon + 1; }
        char *name = trim(line);
        char *tok;
        if (strcmp(name, "changed") == 0) {
            nchanged = 0;
            for (tok = strtok(rest, " \t\r"); tok; tok = strtok(NULL, " \t\r")) strcpy(changed[nchanged++], tok);
            continue;
        }
        int i = find(name);
        if (i < 0) { i = np++; strcpy(names[i], name); }
        nraw[i] = 0;
        for (tok = strtok(rest, " \t\r"); tok; tok = strtok(NULL, " \t\r")) strcpy(rawdep[i][nraw[i]++], tok);
    }
    for (int i = 0; i < np; i++) {
        ndep[i] = 0;
        for (int j = 0; j < nraw[i]; j++) {
            int d = find(rawdep[i][j]);
            if (d >= 0 && d != i) dep[i][ndep[i]++] = d;
        }
    }
    int target[MAXP] = {0}, done[MAXP] = {0};
    if (nchanged < 0) {
        for (int i = 0; i < np; i++) target[i] = 1;
    } else {
        for (int c = 0; c < nchanged; c++) { int d = find(changed[c]); if (d >= 0) target[d] = 1; }
        int grew = 1;
        while (grew) {
            grew = 0;
            for (int i = 0; i < np; i++) {
                if (target[i]) continue;
                for (int j = 0; j < ndep[i]; j++)
                    if (target[dep[i][j]]) { target[i] = 1; grew = 1; break; }
            }
        }
    }
    int round = 0, ready[MAXP];
    for (;;) {
        int nr = 0;
        for (int i = 0; i < np; i++) {
            if (!target[i] || done[i]) continue;
            int ok = 1;
            for (int j = 0; j < ndep[i]; j++) {
                int d = dep[i][j];
                if (target[d] && !done[d]) { ok = 0; break; }
            }
            if (ok) ready[nr++] = i;
        }
        if (!nr) break;
        qsort(ready, nr, sizeof(int), cmp);
        if (nr > SLOTS) nr = SLOTS;
        printf("round %d:", ++round);
        for (int i = 0; i < nr; i++) { printf(" %s", names[ready[i]]); done[ready[i]] = 1; }
        printf("\n");
    }
    int blocked[MAXP], nb = 0;
    for (int i = 0; i < np; i++) if (target[i] && !done[i]) blocked[nb++] = i;
    if (nb) {
        qsort(blocked, nb, sizeof(int), cmp);
        printf("blocked:");
        for (int i = 0; i < nb; i++) printf(" %s", names[blocked[i]]);
        printf("\n");
    }
    return 0;
}
'''

GO_REFERENCE = r'''
// CI build planner: rounds of at most slots ready packages, byte order; affected set; blocked.
package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
)

const slots = @@SLOTS@@

func main() {
	var order []string
	raw := map[string][]string{}
	var changed []string
	hasChanged := false
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, rest := line, ""
		if i := strings.Index(line, ":"); i >= 0 {
			name, rest = line[:i], line[i+1:]
		}
		name = strings.TrimSpace(name)
		if name == "changed" {
			hasChanged = true
			changed = strings.Fields(rest)
			continue
		}
		if _, ok := raw[name]; !ok {
			order = append(order, name)
		}
		raw[name] = strings.Fields(rest)
	}
	deps := map[string][]string{}
	for _, p := range order {
		for _, d := range raw[p] {
			if _, ok := raw[d]; ok && d != p {
				deps[p] = append(deps[p], d)
			}
		}
	}
	target := map[string]bool{}
	if !hasChanged {
		for _, p := range order {
			target[p] = true
		}
	} else {
		for _, c := range changed {
			if _, ok := raw[c]; ok {
				target[c] = true
			}
		}
		for grew := true; grew; {
			grew = false
			for _, p := range order {
				if target[p] {
					continue
				}
				for _, d := range deps[p] {
					if target[d] {
						target[p] = true
						grew = true
						break
					}
				}
			}
		}
	}
	done := map[string]bool{}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for round := 1; ; round++ {
		var ready []string
		for _, p := range order {
			if !target[p] || done[p] {
				continue
			}
			ok := true
			for _, d := range deps[p] {
				if target[d] && !done[d] {
					ok = false
					break
				}
			}
			if ok {
				ready = append(ready, p)
			}
		}
		if len(ready) == 0 {
			break
		}
		sort.Strings(ready)
		if len(ready) > slots {
			ready = ready[:slots]
		}
		for _, p := range ready {
			done[p] = true
		}
		fmt.Fprintf(w, "round %d: %s\n", round, strings.Join(ready, " "))
	}
	var blocked []string
	for _, p := range order {
		if target[p] && !done[p] {
			blocked = append(blocked, p)
		}
	}
	if len(blocked) > 0 {
		sort.Strings(blocked)
		fmt.Fprintf(w, "blocked: %s\n", strings.Join(blocked, " "))
	}
}
'''

RUST_REFERENCE = r'''
// CI build planner: rounds of at most SLOTS ready packages, byte order; affected set; blocked.
use std::collections::HashMap;
use std::io::{self, Read, Write};

const SLOTS: usize = @@SLOTS@@;

fn main() {
    let mut input = String::new();
    io::stdin().read_to_string(&mut input).unwrap();
    let mut order: Vec<String> = Vec::new();
    let mut raw: HashMap<String, Vec<String>> = HashMap::new();
    let mut changed: Option<Vec<String>> = None;
    for line in input.split('\n') {
        if line.trim().is_empty() {
            continue;
        }
        let (name, rest) = match line.find(':') {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (line, ""),
        };
        let name = name.trim().to_string();
        let toks: Vec<String> = rest.split_whitespace().map(|s| s.to_string()).collect();
        if name == "changed" {
            changed = Some(toks);
            continue;
        }
        if !raw.contains_key(&name) {
            order.push(name.clone());
        }
        raw.insert(name, toks);
    }
    let mut deps: HashMap<String, Vec<String>> = HashMap::new();
    for p in &order {
        let ds: Vec<String> = raw[p].iter().filter(|d| raw.contains_key(*d) && *d != p).cloned().collect();
        deps.insert(p.clone(), ds);
    }
    let mut target: HashMap<String, bool> = HashMap::new();
    match &changed {
        None => {
            for p in &order {
                target.insert(p.clone(), true);
            }
        }
        Some(cs) => {
            for c in cs {
                if raw.contains_key(c) {
                    target.insert(c.clone(), true);
                }
            }
            let mut grew = true;
            while grew {
                grew = false;
                for p in &order {
                    if target.contains_key(p) {
                        continue;
                    }
                    if deps[p].iter().any(|d| target.contains_key(d)) {
                        target.insert(p.clone(), true);
                        grew = true;
                    }
                }
            }
        }
    }
    let mut done: HashMap<String, bool> = HashMap::new();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut round = 0;
    loop {
        let mut ready: Vec<String> = order
            .iter()
            .filter(|p| target.contains_key(*p) && !done.contains_key(*p))
            .filter(|p| deps[*p].iter().all(|d| done.contains_key(d) || !target.contains_key(d)))
            .cloned()
            .collect();
        if ready.is_empty() {
            break;
        }
        ready.sort();
        ready.truncate(SLOTS);
        for p in &ready {
            done.insert(p.clone(), true);
        }
        round += 1;
        writeln!(out, "round {}: {}", round, ready.join(" ")).unwrap();
    }
    let mut blocked: Vec<String> =
        order.iter().filter(|p| target.contains_key(*p) && !done.contains_key(*p)).cloned().collect();
    if !blocked.is_empty() {
        blocked.sort();
        writeln!(out, "blocked: {}", blocked.join(" ")).unwrap();
    }
}
'''

C_REFERENCE = fill(C_TEMPLATE, C_TRIM=C_TRIM)

# Level 0: only the first round, the dependency-free packages in byte order up to the slot count.
ATOMIC = r'''
import sys

SLOTS = @SLOTS@


def first_round(text, slots=None):
    rows = [line.partition(":") for line in text.splitlines() if line.strip()]
    free = sorted(name.strip() for name, _, rest in rows if not rest.split())
    return "".join(n + "\n" for n in free[:max(1, slots or SLOTS)])


if __name__ == "__main__":
    sys.stdout.write(first_round(sys.stdin.read()))
'''

C_ATOMIC = r'''
/* The first CI round: packages without dependencies, byte order, at most SLOTS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS @@SLOTS@@

static char names[1024][256];

static int cmp(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

int main(void) {
    static char line[65536];
    int n = 0;
    while (fgets(line, sizeof line, stdin) && n < 1024) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        *colon = 0;
        if (strspn(colon + 1, " \t\r\n") == strlen(colon + 1)) snprintf(names[n++], sizeof names[0], "%s", line);
    }
    qsort(names, n, sizeof names[0], cmp);
    for (int i = 0; i < n && i < SLOTS; i++) printf("%s\n", names[i]);
    return 0;
}
'''

GO_ATOMIC = r'''
// The first CI round: packages without dependencies, byte order, at most slots.
package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
)

const slots = @@SLOTS@@

func main() {
	var free []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, ":")
		if i >= 0 && len(strings.Fields(line[i+1:])) == 0 {
			free = append(free, strings.TrimSpace(line[:i]))
		}
	}
	sort.Strings(free)
	for i, p := range free {
		if i < slots {
			fmt.Println(p)
		}
	}
}
'''

RUST_ATOMIC = r'''
// The first CI round: packages without dependencies, byte order, at most SLOTS.
use std::io::{self, Read};

const SLOTS: usize = @@SLOTS@@;

fn main() {
    let mut input = String::new();
    io::stdin().read_to_string(&mut input).unwrap();
    let mut free: Vec<&str> = input
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            if rest.split_whitespace().next().is_none() { Some(name.trim()) } else { None }
        })
        .collect();
    free.sort();
    for p in free.iter().take(SLOTS) {
        println!("{}", p);
    }
}
'''


def atomic_graph(rng, n):
    """(scope, names, deps by name): a small DAG where about half the packages depend on nothing."""
    scope = rng.choice(["@acme", "@northwind", "@initech", "@globex"])
    names = rng.sample(NAMES, n)
    deps = {x: sorted(rng.sample(names[:i], min(i, rng.randint(1, 2)))) if i and rng.random() < 0.5 else []
            for i, x in enumerate(names)}
    return scope, names, deps

NAMES = ["core", "utils", "logger", "config", "http", "db", "auth", "ui", "icons", "theme", "forms", "charts",
         "api-client", "cli", "server", "worker", "billing", "search", "analytics", "docs-site", "e2e", "testkit",
         "i18n", "cache", "events", "mailer"]
FOLDER_ALIASES = {"ui": "design-system", "api-client": "sdk", "e2e": "integration-tests", "docs-site": "website",
                  "testkit": "test-helpers", "http": "net"}
EXTERNAL = {"react": "^18.2.0", "lodash": "^4.17.21", "express": "^4.18.2", "zod": "^3.22.4", "typescript": "~5.3.3",
            "vitest": "^1.2.0", "eslint": "^8.56.0", "pg": "^8.11.3"}
SRC_FILES = ["src/index.ts", "src/lib.ts", "README.md", "package.json", "src/util/helpers.ts", "test/main.test.ts"]


def graph(rng, k):
    """(scope, names in build order, deps by name as (kind, target) pairs, a package on the cycle or None)
    for a random DAG (+ a cycle)."""
    scope = rng.choice(["@acme", "@northwind", "@initech", "@globex"])
    names = rng.sample(NAMES, k.pkgs)
    deps: dict[str, list[tuple[str, str]]] = {}
    for i, n in enumerate(names):
        ds = []
        for d in rng.sample(names[:i], min(i, rng.randint(0, 3))):
            ds.append((rng.choice(["dependencies"] * 3 + (["devDependencies"] if k.dev else [])), d))
        if k.peer and 0 < i < len(names) - 1 and rng.random() < 0.3:
            ds.append(("peerDependencies", rng.choice(names[i + 1:])))
        deps[n] = ds
    on_cycle = None
    if k.cycle:
        # a late package gains a dependency from an early one it (transitively) depends on
        late = names[-rng.randint(1, 3)]
        seen, stack = [], [late]
        while stack:
            x = stack.pop()
            for kind, d in deps[x]:
                if kind != "peerDependencies" and d not in seen:
                    seen.append(d)
                    stack.append(d)
        if seen:
            early = rng.choice(sorted(seen))
            deps[early].append(("devDependencies", late))
            on_cycle = early
        else:
            other = rng.choice([n for n in names if n != late])
            deps[late].append(("dependencies", other))
            deps[other].append(("devDependencies", late))
            on_cycle = other
    return scope, names, deps, on_cycle


def deps_text(scope, names, deps, changed=None):
    lines = []
    for n in names:
        real = [f"{scope}/{d}" for kind, d in deps[n] if kind != "peerDependencies"]
        lines.append(f"{scope}/{n}: " + " ".join(real + (["react"] if n.startswith("u") else [])))
    if changed is not None:
        lines.append("changed: " + " ".join(f"{scope}/{c}" for c in changed))
    return "\n".join(lines) + "\n"


def slots_bind(schedule, text: str, slots: int) -> bool:
    """Does the slot count decide the plan: does every other count give another one?"""
    out = schedule(text, slots)
    return all(schedule(text, c) != out for c in range(1, 64) if c != slots)


@dataclass(frozen=True)
class Knobs:
    pkgs: int  # workspace packages
    dev: bool  # devDependencies count too
    peer: bool  # peerDependencies (which do not count)
    externals: bool  # non-workspace dependencies (which do not count)
    changed: int  # packages with a changed file (0: build everything)
    cycle: bool  # a dependency cycle whose packages are blocked
    aliases: bool  # folder names that differ from package names


FMT = ("one line per round, `round <n>: <package names>` (numbered from 1, full scoped names separated "
       "by single spaces, in byte order)")
PLANNERS = {"Python": REFERENCE, "C": C_REFERENCE, "Go": GO_REFERENCE, "Rust": RUST_REFERENCE}
FIRSTS = {"Python": ATOMIC, "C": C_ATOMIC, "Go": GO_ATOMIC, "Rust": RUST_ATOMIC}
BLOCKED = {"build_rounds": " but listed on a final line `blocked: <names>` (byte order); omit that line if there are "
                           "none.", **VARIANT_BLOCKED}  # what the rules say of blocked packages
EXAMPLE = {"build_rounds": "round 1: ...", **VARIANT_EXAMPLE}  # a tagged line under partial credit
OUT = {"build_rounds": "/app/out/build_plan.txt", **VARIANT_OUT}


@register
class MonorepoBuildRounds(Family):
    name = "monorepo_build_rounds"
    domain = "software_engineering"
    skill_types = ("Build Systems", "Dependency Management")
    primitive_skills = ("topological sorting", "cycle detection", "bounded parallel scheduling",
                        "graph traversal and dependency resolution", "JSON traversal", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    variants = ("build_rounds", "package_rounds", "slot_waits")
    programs = {"Python": REFERENCE, "C": C_REFERENCE, "Go": GO_REFERENCE, "Rust": RUST_REFERENCE}
    levels = {0: Knobs(pkgs=7, dev=False, peer=False, externals=False, changed=0, cycle=False, aliases=False),
              1: Knobs(pkgs=6, dev=False, peer=False, externals=False, changed=0, cycle=False, aliases=False),
              2: Knobs(pkgs=10, dev=True, peer=True, externals=True, changed=0, cycle=False, aliases=False),
              3: Knobs(pkgs=14, dev=True, peer=True, externals=True, changed=2, cycle=False, aliases=True),
              4: Knobs(pkgs=20, dev=True, peer=True, externals=True, changed=3, cycle=True, aliases=True)}

    def rules(self, k, variant: str = "build_rounds") -> str:
        r = ("A package needs every workspace package it lists under `dependencies`"
             + (" or `devDependencies`" if k.dev else "") + " to be built before it (in an earlier round)"
             + ("; `peerDependencies` do not count, and neither does anything that is not a workspace package"
                if k.peer or k.externals else "") + ". Each round, CI takes the packages that are ready and "
             "not built yet, in byte order of their names, up to the number of parallel slots given here; the "
             "rest wait for a later round.")
        if k.changed:
            r += (" Only the affected packages are built: those with a changed file, plus every package that "
                  "depends on one of them, directly or through others (through the dependency kinds that count); "
                  "other packages come from the cache and count as already built.")
        if k.cycle:
            r += (" Packages that can never become ready (a dependency cycle, or depending on one) are not built "
                  "at all" + BLOCKED[variant])
        return r

    @staticmethod
    def report_fmt(variant: str, k) -> str:
        return FMT + (", then the `blocked:` line if any" if k.cycle else "") if variant == "build_rounds" \
            else VARIANT_FMT[variant]

    def case_text(self, rng, k) -> str:
        """One planner input: a random workspace graph (and changed packages) as `name: deps` lines."""
        scope, names, deps, cyc = graph(rng, k)
        changed = sorted(rng.sample(names, rng.randint(1, k.changed))) if k.changed else None
        if cyc and changed and rng.random() < 0.6 and cyc not in changed:
            changed = sorted(changed[1:] + [cyc])
        return deps_text(scope, rng.sample(names, len(names)), deps, changed)

    def program_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_program(t)
        k, rng = t.knobs, t.rng
        demo = rng.choice([5, 6])  # the worked examples' slot count, named in the instruction
        progs = variant_programs(t.variant, PLANNERS)
        schedule = run_python(fill(progs["Python"], SLOTS=0))["schedule"]
        texts = [self.case_text(rng, replace(k, pkgs=rng.randint(3, k.pkgs))) for _ in range(10)]
        # Some hidden case must come out differently for every other slot count.
        for _ in range(100):
            fits = [s for s in (2, 3, 4) if any(slots_bind(schedule, text, s) for text in texts[2:])]
            if fits:
                slots = rng.choice(fits)
                break
            texts[2 + rng.randrange(8)] = self.case_text(rng, k)
        else:
            raise FamilyError("monorepo_build_rounds: no hidden case depends on the slot count")
        cases = [(text, schedule(text, demo if i < 2 else slots)) for i, text in enumerate(texts)]
        var = t.deliver(str(slots), "the number of parallel CI slots")
        extra = " and a last line `changed: <packages with a changed file>`" if k.changed else ""
        t.say("Our CI needs a build planner for the monorepo. Its input lists each workspace package as "
              "`<name>: <the names it depends on>` (only the dependency kinds that count, but the list may also "
              f"name packages outside the workspace, which never count){extra}. " + self.rules(k, t.variant)
              + f" Print {self.report_fmt(t.variant, k)}. The worked "
              f"examples were planned with {demo} slots; your planner must use ours.")
        t.expect_program("Hard-code the number of slots.", cases, {**progs, "Python": fill(progs["Python"],
                                                                                          SLOTS="@@SLOTS@@")})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@SLOTS@@/{var}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_output(t)
        k, rng = t.knobs, t.rng
        src = fill(variant_programs(t.variant, PLANNERS)["Python"], SLOTS=0)
        schedule = run_python(src)["schedule"]
        # A graph with a round wider than the slot count: every other count (any number the task shows)
        # gives another plan, so the delivered count decides the answer.
        for _ in range(100):
            scope, names, deps, cyc = graph(rng, k)
            changed = None
            if k.changed:
                changed = sorted(rng.sample(names, k.changed))
                if cyc and rng.random() < 0.75 and cyc not in changed:
                    changed = sorted(changed[1:] + [cyc])
            text = deps_text(scope, names, deps, changed)
            fits = [s for s in (2, 3, 4) if slots_bind(schedule, text, s)]
            if fits:
                slots = rng.choice(fits)
                break
        else:
            raise FamilyError("monorepo_build_rounds: no graph whose plan depends on the slot count")
        folders = {n: (FOLDER_ALIASES.get(n, n) if k.aliases else n) for n in names}
        for n in names:
            doc: dict = {"name": f"{scope}/{n}", "version": f"{rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
                         "private": True, "scripts": {"build": "tsc -b", "test": "vitest run"}}
            for kind in ("dependencies", "devDependencies", "peerDependencies"):
                entries = {f"{scope}/{d}": rng.choice(["workspace:*", "workspace:^", "^" + doc["version"]])
                           for kk_, d in deps[n] if kk_ == kind}
                if k.externals:
                    for ext in rng.sample(sorted(EXTERNAL), rng.randint(0, 2)):
                        if kind != "peerDependencies" or rng.random() < 0.3:
                            entries[ext] = EXTERNAL[ext]
                if entries:
                    doc[kind] = dict(sorted(entries.items()))
            t.add_file(f"/app/monorepo/packages/{folders[n]}/package.json", json.dumps(doc, indent=2) + "\n")
            t.add_file(f"/app/monorepo/packages/{folders[n]}/src/index.ts", f"export const name = \"{n}\";\n")
        t.add_file("/app/monorepo/package.json", json.dumps({"name": "monorepo", "private": True,
                                                             "workspaces": ["packages/*"]}, indent=2) + "\n")
        extra_cmd = ""
        if changed is not None:
            files = [f"packages/{folders[c]}/{rng.choice(SRC_FILES)}" for c in changed]
            files += rng.sample(["README.md", "docs/architecture.md", ".github/workflows/ci.yml", "tsconfig.base.json"], 2)
            rng.shuffle(files)
            t.add_file("/app/monorepo/CHANGED_FILES", "\n".join(files) + "\n")
            extra_cmd = ("; printf 'changed:'; for f in $(grep '^packages/' /app/monorepo/CHANGED_FILES | cut -d/ -f2 "
                         "| sort -u); do printf ' %s' \"$(jq -r .name /app/monorepo/packages/$f/package.json)\"; done; "
                         "echo")
        truth = schedule(text, slots)
        var = t.deliver(str(slots), "the number of parallel CI slots")
        where = ("The monorepo is `/app/monorepo` (workspaces under `packages/`, each with a `package.json`; the "
                 "folder name is not always the package name).")
        if k.changed:
            where += (" The pull request changed the files listed in `/app/monorepo/CHANGED_FILES` (paths relative "
                      "to the repository root).")
        t.say(f"{where} Plan the CI build. " + self.rules(k, t.variant)
              + (f" The plan has {FMT}" + (", then the `blocked:` line if any." if k.cycle else ".")
                 if t.variant == "build_rounds" else f" The report has {VARIANT_FMT[t.variant]}."))
        tag = ""
        if t.partial_credit:  # lines (the blocked one, late rounds) may not depend on the count: tag them
            t.say("The CI runner pool reads the plan with the slot count in front: start every line with "
                  "`slots=<N> ` (for example `slots=7 " + EXAMPLE[t.variant] + "`).")
            truth = "".join(f"slots={slots} {line}\n" for line in truth.splitlines())
            tag = f' | sed "s/^/slots={var} /"'
        t.add_solution_file("plan.py", src)
        t.solve("mkdir -p /app/out\n{ for f in /app/monorepo/packages/*/package.json; do jq -r '.name + \": \" + "
                "([(.dependencies // {}), (.devDependencies // {}) | keys[]] | join(\" \"))' \"$f\"; done"
                f'{extra_cmd}; }} | python3 /solution/plan.py "{var}"{tag} > {OUT[t.variant]}')
        t.expect_output(OUT[t.variant], truth, "the build plan" if t.variant == "build_rounds" else "the report")

    ATOMIC_RULE = ("CI builds first the packages that have no dependencies at all, taking them in byte order of "
                   "their names, at most the number of parallel slots given here.")
    # Level 0 by variant: what to list (after ATOMIC_RULE), where, the shell step after the sorted names, an example.
    ATOMIC_ASK = {"build_rounds": ("List the packages of that first round, one full package name per line.",
                                   "/app/out/round1.txt", 'sed -n "1,${@V@}p"', "@scope/name"), **VARIANT_ATOMIC}

    def atomic_output(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        for _ in range(100):  # more free packages than the largest count: every other count gives another round
            scope, names, deps = atomic_graph(rng, k.pkgs)
            if sum(1 for n in names if not deps[n]) > 3:
                break
        else:
            raise FamilyError("monorepo_build_rounds: no graph with enough dependency-free packages")
        slots = rng.choice([2, 3])
        for n in names:
            doc: dict = {"name": f"{scope}/{n}", "version": f"{rng.randint(0, 3)}.{rng.randint(0, 20)}.0",
                         "private": True, "scripts": {"build": "tsc -b"}}
            if deps[n]:
                doc["dependencies"] = {f"{scope}/{d}": "workspace:*" for d in deps[n]}
            t.add_file(f"/app/monorepo/packages/{n}/package.json", json.dumps(doc, indent=2) + "\n")
        ask, out, step, example = self.ATOMIC_ASK[t.variant]
        truth = run_python(fill(atomic_programs(t.variant, FIRSTS)["Python"], SLOTS=slots))["first_round"](
            "".join(f"{scope}/{n}: " + " ".join(f"{scope}/{d}" for d in deps[n]) + "\n" for n in names))
        var = t.deliver(str(slots), "the number of parallel CI slots")
        t.say("The monorepo `/app/monorepo` has its workspace packages under `packages/`, each with a `package.json`. "
              f"{self.ATOMIC_RULE} {ask}")
        tag = ""
        if t.partial_credit:  # every line then depends on the count
            t.say(f"Start every line with `slots=<N> ` (for example `slots=7 {example}`).")
            truth = "".join(f"slots={slots} {line}\n" for line in truth.splitlines())
            tag = f' | sed "s/^/slots={var} /"'
        t.solve("mkdir -p /app/out\njq -r 'select((.dependencies // {}) == {}) | .name' "
                f"/app/monorepo/packages/*/package.json | LC_ALL=C sort | {fill(step, V=var[1:])}{tag} > {out}")
        t.expect_output(out, truth, "the first round" if t.variant == "build_rounds" else "the list")

    def atomic_program(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        slots, demo = rng.choice([2, 3]), rng.choice([4, 5])
        progs = atomic_programs(t.variant, FIRSTS)
        first = run_python(fill(progs["Python"], SLOTS=0))["first_round"]
        texts: list[str] = []
        for _ in range(200):
            if len(texts) == 6:
                break
            scope, names, deps = atomic_graph(rng, rng.randint(5, k.pkgs))
            if sum(1 for n in names if not deps[n]) > 3:  # the slot count decides every output
                order = rng.sample(names, len(names))
                texts.append("".join(f"{scope}/{n}: " + " ".join(f"{scope}/{d}" for d in deps[n]) + "\n"
                                     for n in order))
        else:
            raise FamilyError("monorepo_build_rounds: too few graphs with enough dependency-free packages")
        cases = [(text, first(text, demo if i < 2 else slots)) for i, text in enumerate(texts)]
        var = t.deliver(str(slots), "the number of parallel CI slots")
        t.say("Our CI needs the first round of its build plan. The input lists each workspace package as "
              f"`<name>: <the names it depends on>`. {self.ATOMIC_RULE} "
              + ("Print the packages of that first round, one name per line." if t.variant == "build_rounds" else
                 self.ATOMIC_ASK[t.variant][0].replace("List", "Print", 1).replace("full package name", "name"))
              + f" The worked examples were planned with {demo} slots; your program must use ours.")
        t.expect_program("Hard-code the number of slots.", cases,
                         {**progs, "Python": fill(progs["Python"], SLOTS="@@SLOTS@@")})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@SLOTS@@/{var}/" "$f"; done')
