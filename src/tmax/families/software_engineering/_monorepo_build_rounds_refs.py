"""Program texts of monorepo_build_rounds' package_rounds and slot_waits variants, in every language the
family ships. Each is the build_rounds planner (its text untouched there) with splices at fixed anchors:
the planner also records the round each package is built in and the round it first was ready, and
prints a per-package report instead of the rounds."""

from __future__ import annotations

from tmax.families.base import FamilyError


def splice(src: str, edits: list[tuple[str, str]], what: str) -> str:
    """``src`` with each anchor (which must occur exactly once) replaced by its text."""
    for anchor, text in edits:
        if src.count(anchor) != 1:
            raise FamilyError(f"monorepo_build_rounds: the {what} anchor {anchor.strip()[:40]!r} is not there once")
        src = src.replace(anchor, text)
    return src


PY_EDITS = [
    ("    done, rounds = set(), []\n", "    done, rounds, first = set(), [], {}\n"),
    ("        batch = ready[:slots]\n", "        for p in ready:  # the round in which each package first is ready\n"
                                        "            first.setdefault(p, len(rounds) + 1)\n"
                                        "        batch = ready[:slots]\n"),
    ('''    out = [f"round {i}: {' '.join(b)}" for i, b in enumerate(rounds, 1)]
    blocked = sorted(target - done)
    if blocked:
        out.append("blocked: " + " ".join(blocked))
    return "".join(x + "\\n" for x in out)
''', "    return @REPORT@(target, rounds, first)\n"),
    ('\n\nif __name__ == "__main__":', '''

def by_package(target, rounds, first):
    """Each package to build with its round (or `blocked`), in name order."""
    built = {p: i for i, b in enumerate(rounds, 1) for p in b}
    return "".join(f"{p} {built.get(p, 'blocked')}\\n" for p in sorted(target))


def waits(target, rounds, first):
    """Each package that was ready but found no free slot, with the rounds it waited, in name order."""
    built = {p: i for i, b in enumerate(rounds, 1) for p in b}
    return "".join(f"{p} {built[p] - first[p]}\\n" for p in sorted(built) if built[p] > first[p])


if __name__ == "__main__":'''),
]
PY_REPORT = {"package_rounds": "by_package", "slot_waits": "waits"}

C_EDITS = [
    ("    int target[MAXP] = {0}, done[MAXP] = {0};\n",
     "    int target[MAXP] = {0}, done[MAXP] = {0}, first[MAXP] = {0}; /* done: the round built in */\n"),
    ("            if (ok) ready[nr++] = i;\n",
     "            if (ok) { ready[nr++] = i; if (!first[i]) first[i] = round + 1; }\n"),
    ('''        printf("round %d:", ++round);
        for (int i = 0; i < nr; i++) { printf(" %s", names[ready[i]]); done[ready[i]] = 1; }
        printf("\\n");
''', '''        ++round;
        for (int i = 0; i < nr; i++) done[ready[i]] = round;
'''),
    ('''    int blocked[MAXP], nb = 0;
    for (int i = 0; i < np; i++) if (target[i] && !done[i]) blocked[nb++] = i;
    if (nb) {
        qsort(blocked, nb, sizeof(int), cmp);
        printf("blocked:");
        for (int i = 0; i < nb; i++) printf(" %s", names[blocked[i]]);
        printf("\\n");
    }
''', '''    int all[MAXP], na = 0;
    for (int i = 0; i < np; i++) if (target[i]) all[na++] = i;
    qsort(all, na, sizeof(int), cmp);
    for (int j = 0; j < na; j++) {
        int i = all[j];
        @LINE@
    }
'''),
]
C_LINE = {"package_rounds": 'if (done[i]) printf("%s %d\\n", names[i], done[i]); '
                            'else printf("%s blocked\\n", names[i]);',
          "slot_waits": 'if (done[i] > first[i]) printf("%s %d\\n", names[i], done[i] - first[i]);'}

GO_EDITS = [
    ("\tdone := map[string]bool{}\n", "\tdone := map[string]bool{}\n\tbuilt := map[string]int{}\n"
                                      "\tfirst := map[string]int{}\n"),
    ("\t\t\tif ok {\n\t\t\t\tready = append(ready, p)\n\t\t\t}\n",
     "\t\t\tif ok {\n\t\t\t\tready = append(ready, p)\n\t\t\t\tif _, seen := first[p]; !seen {\n"
     "\t\t\t\t\tfirst[p] = round\n\t\t\t\t}\n\t\t\t}\n"),
    ('\t\tfor _, p := range ready {\n\t\t\tdone[p] = true\n\t\t}\n'
     '\t\tfmt.Fprintf(w, "round %d: %s\\n", round, strings.Join(ready, " "))\n',
     "\t\tfor _, p := range ready {\n\t\t\tdone[p] = true\n\t\t\tbuilt[p] = round\n\t\t}\n"),
    ('''	var blocked []string
	for _, p := range order {
		if target[p] && !done[p] {
			blocked = append(blocked, p)
		}
	}
	if len(blocked) > 0 {
		sort.Strings(blocked)
		fmt.Fprintf(w, "blocked: %s\\n", strings.Join(blocked, " "))
	}
''', '''	var all []string
	for _, p := range order {
		if target[p] {
			all = append(all, p)
		}
	}
	sort.Strings(all)
	for _, p := range all {
		@LINE@
	}
'''),
]
GO_LINE = {"package_rounds": 'if done[p] {\n\t\t\tfmt.Fprintf(w, "%s %d\\n", p, built[p])\n\t\t} else {\n'
                             '\t\t\tfmt.Fprintf(w, "%s blocked\\n", p)\n\t\t}',
           "slot_waits": 'if done[p] && built[p] > first[p] {\n\t\t\tfmt.Fprintf(w, "%s %d\\n", p, built[p]-first[p])\n'
                         '\t\t}'}

RUST_EDITS = [
    ("    let mut done: HashMap<String, bool> = HashMap::new();\n",
     "    let mut done: HashMap<String, bool> = HashMap::new();\n"
     "    let mut built: HashMap<String, usize> = HashMap::new();\n"
     "    let mut first: HashMap<String, usize> = HashMap::new();\n"),
    ("        ready.sort();\n        ready.truncate(SLOTS);\n",
     "        for p in &ready {\n            first.entry(p.clone()).or_insert(round + 1);\n        }\n"
     "        ready.sort();\n        ready.truncate(SLOTS);\n"),
    ('''        for p in &ready {
            done.insert(p.clone(), true);
        }
        round += 1;
        writeln!(out, "round {}: {}", round, ready.join(" ")).unwrap();
''', '''        round += 1;
        for p in &ready {
            done.insert(p.clone(), true);
            built.insert(p.clone(), round);
        }
'''),
    ('''    let mut blocked: Vec<String> =
        order.iter().filter(|p| target.contains_key(*p) && !done.contains_key(*p)).cloned().collect();
    if !blocked.is_empty() {
        blocked.sort();
        writeln!(out, "blocked: {}", blocked.join(" ")).unwrap();
    }
''', '''    let mut all: Vec<String> = order.iter().filter(|p| target.contains_key(*p)).cloned().collect();
    all.sort();
    for p in &all {
        @LINE@
    }
'''),
]
RUST_LINE = {"package_rounds": 'match built.get(p) {\n            Some(r) => writeln!(out, "{} {}", p, r).unwrap(),\n'
                               '            None => writeln!(out, "{} blocked", p).unwrap(),\n        }',
             "slot_waits": 'if let Some(r) = built.get(p) {\n            if *r > first[p] {\n'
                           '                writeln!(out, "{} {}", p, r - first[p]).unwrap();\n            }\n        }'}

# Level 0: the dependency-free packages in byte order, SLOTS per round; the print changes.
ATOMIC_EDITS = {
    "Python": ('    return "".join(n + "\\n" for n in free[:max(1, slots or SLOTS)])\n',
               {"package_rounds": '    slots = max(1, slots or SLOTS)\n'
                                  '    return "".join(f"{n} {i // slots + 1}\\n" for i, n in enumerate(free))\n',
                "slot_waits": '    return "".join(n + "\\n" for n in free[max(1, slots or SLOTS):])\n'}),
    "C": ('    for (int i = 0; i < n && i < SLOTS; i++) printf("%s\\n", names[i]);\n',
          {"package_rounds": '    for (int i = 0; i < n; i++) printf("%s %d\\n", names[i], i / SLOTS + 1);\n',
           "slot_waits": '    for (int i = SLOTS; i < n; i++) printf("%s\\n", names[i]);\n'}),
    "Go": ("\t\tif i < slots {\n\t\t\tfmt.Println(p)\n\t\t}\n",
           {"package_rounds": "\t\tfmt.Println(p, i/slots+1)\n",
            "slot_waits": "\t\tif i >= slots {\n\t\t\tfmt.Println(p)\n\t\t}\n"}),
    "Rust": ('    for p in free.iter().take(SLOTS) {\n        println!("{}", p);\n    }\n',
             {"package_rounds": '    for (i, p) in free.iter().enumerate() {\n'
                                '        println!("{} {}", p, i / SLOTS + 1);\n    }\n',
              "slot_waits": '    for p in free.iter().skip(SLOTS) {\n        println!("{}", p);\n    }\n'}),
}


def variant_programs(variant: str, planners: dict[str, str]) -> dict[str, str]:
    """The variant's planners (Python still a template: @SLOTS@ unfilled), from build_rounds' ``planners``."""
    if variant == "build_rounds":
        return planners
    return {"Python": splice(planners["Python"], PY_EDITS, "Python").replace("@REPORT@", PY_REPORT[variant]),
            "C": splice(planners["C"], C_EDITS, "C").replace("@LINE@", C_LINE[variant]),
            "Go": splice(planners["Go"], GO_EDITS, "Go").replace("@LINE@", GO_LINE[variant]),
            "Rust": splice(planners["Rust"], RUST_EDITS, "Rust").replace("@LINE@", RUST_LINE[variant])}


def atomic_programs(variant: str, firsts: dict[str, str]) -> dict[str, str]:
    """The variant's level-0 programs, from build_rounds' first-round programs ``firsts``."""
    if variant == "build_rounds":
        return firsts
    return {lang: splice(src, [(ATOMIC_EDITS[lang][0], ATOMIC_EDITS[lang][1][variant])], lang)
            for lang, src in firsts.items()}


# The variants' texts: the report's lines, what the rules say of blocked packages, the output path and a
# tagged line under partial credit (build_rounds' own are in the family file).
VARIANT_FMT = {"package_rounds": "one line per package CI builds, `<package name> <round number>` (full scoped "
                                 "names, in byte order of the names; rounds numbered from 1)",
               "slot_waits": "one line per package that had to wait for a free slot, `<package name> <rounds "
                             "waited>` (full scoped names, in byte order of the names): a package is ready from the "
                             "first round in which everything it needs is built, and it waited the number of rounds "
                             "between that round and the one it is built in; leave out packages that never waited"}
VARIANT_BLOCKED = {"package_rounds": ": list each of them as `<package name> blocked` in its place in the name order.",
                   "slot_waits": " and never wait for a slot: leave them out."}
VARIANT_OUT = {"package_rounds": "/app/out/package_rounds.txt", "slot_waits": "/app/out/slot_waits.txt"}
VARIANT_EXAMPLE = {"package_rounds": "@scope/name 2", "slot_waits": "@scope/name 1"}
# Level 0: what to list (after the family's ATOMIC_RULE), where, the shell step after the sorted names
# (@V@: the slot count's variable), an example line.
VARIANT_ATOMIC = {
    "package_rounds": ("If CI built only those packages, that many per round (round 1, then round 2, and so on), in "
                       "which round would each be built? List them in that order, one per line as `<full package "
                       "name> <round>`.", "/app/out/free_rounds.txt",
                       "awk -v s=\"$@V@\" '{print $0, int((NR-1)/s)+1}'", "@scope/name 2"),
    "slot_waits": ("List the dependency-free packages that do not fit into that first round and must wait, one full "
                   "package name per line, in byte order.", "/app/out/waiting.txt", 'tail -n "+$(($@V@ + 1))"',
                   "@scope/name")}
