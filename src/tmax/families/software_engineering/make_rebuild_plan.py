"""What would `make` rebuild? A Makefile with module bundles unlocked by a licence key (ifeq on the
key's fingerprint; one output tree per bundle), libraries, generated headers and order-only directory
prerequisites over a tree with fixed timestamps (some sources edited after the last build, some
outputs deleted); list the targets whose recipes would run for the customer's key, in make's order. Truth is
a model of GNU make's update algorithm; the oracle asks the real make (dry run), so the gate proves
they agree.
Variants: rebuild_list (the targets `make all` rebuilds now, in make's order), edit_impact (what the
next `make all` rebuilds after a full build and then one edited file: the oracle builds a copy and
asks `make -n -W`) and rebuild_reasons (why each target is rebuilt: missing, a newer prerequisite, or
only a remade one; the oracle reads make's database `make -p` and compares timestamps)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.unseen import distinct, unseen, visible

CORE = ["util", "config", "log", "strbuf", "arena", "hashmap"]
NET = ["socket", "http", "router", "codec", "pool"]
EXTRAS = ["tls", "gzip", "metrics", "trace", "quota", "audit"]
BINS = ["server", "cli", "worker"]
HEADERS = ["include/common.h", "include/net.h", "include/config.h", "include/compat.h"]
GENERATED = ["gen/version.h", "gen/proto.h"]
BUNDLES = ["cloud", "edge", "plus", "pro", "studio", "suite"]
MAKE_HEAD = ("# Service build. Optional modules come in bundles, unlocked by the customer's licence key\n"
             "# (make LICENSE=<key>); only the keys' fingerprints (first 16 hex digits of their SHA-256) are\n"
             "# kept here. Each bundle builds into its own tree under out/.\n"
             "CC := ./tools/cc\nAR := ./tools/ar\nLD := ./tools/ld\nGEN := ./tools/gen\nLICENSE ?=\n"
             "KEY := $(shell printf '%s' '$(LICENSE)' | sha256sum | cut -c1-16)\n")
SAY = ("The service in `/app/build` was fully built a while ago, for every bundle; since then some sources changed "
       "and some build outputs may have been deleted. Before kicking off the release build for a customer I need to "
       "know exactly what `make LICENSE=<key> all` (run in `/app/build`, serially) is going to rebuild with the "
       "file timestamps exactly as they are now, for the customer's licence key given here. Do not change the "
       "tree's state: the answer is about the tree as it is.")
TOOL = "#!/bin/sh\n# stand-in for the real toolchain: records what it would produce\nout=\"\"\n" \
       "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then out=$2; fi; shift; done\n" \
       "[ -n \"$out\" ] && touch \"$out\"\n"
# The recipe lines of `make -n` reduced to the targets they make (the oracles' shared parser).
TARGETS_AWK = ("awk '{for (i = 1; i <= NF; i++) if ($i == \"-o\") {print $(i + 1); next}} "
               "$1 == \"./tools/ar\" || $1 == \"mkdir\" {print $3}'")
FORMAT = ("one target per line, exactly as make names it (for example `out/<bundle>/obj/util.o`), in the order "
          "make would run their recipes; phony targets are not listed, directories created by a recipe are")
BUNDLE_OF = 'grep -A1 "$fp" /app/build/Makefile | sed -n "s/^BUNDLE := //p"'  # after fingerprint()
ASK_FP = ("`/app/build/Makefile` picks a bundle from a licence key by the key's fingerprint: the first 16 hex "
          "digits of the SHA-256 of the key (`printf '%s' <key> | sha256sum`).")


def plan_make(rules: dict, mtimes: dict, goal: str) -> list[str]:
    """GNU make's (serial) update order for ``goal``: prerequisites depth-first in order, each target
    considered once; remade if missing, phony, older than a normal prerequisite, or a normal
    prerequisite was remade. Order-only prerequisites are brought up to date but never force a remake."""
    done: dict[str, bool] = {}
    order: list[str] = []

    def upd(x: str) -> bool:
        if x in done:
            return done[x]
        if x not in rules:
            if x not in mtimes:
                raise ValueError(f"no rule for missing {x}")
            done[x] = False
            return False
        normal, oo, phony = rules[x]
        changed = False
        for p in normal:
            changed = upd(p) or changed
        for p in oo:
            upd(p)
        must = phony or x not in mtimes or changed or any(p in mtimes and mtimes[p] > mtimes[x] for p in normal)
        if must and not phony:
            order.append(x)
        done[x] = must
        return must

    upd(goal)
    return order


def fingerprint(var: str) -> str:
    """The shell line that sets ``fp`` to the fingerprint of the key in ``var``, as the Makefile computes it."""
    return f'fp=$(printf %s "{var}" | sha256sum | cut -c1-16)\n'


def after_edit(rules: dict, edited: str) -> list[str]:
    """What ``all`` rebuilds once every target is up to date and then ``edited`` alone changes."""
    mtimes = {p: 0 for n, oo, ph in rules.values() for p in n + oo if p not in rules}
    mtimes.update({x: 1 for x, (n, oo, ph) in rules.items() if not ph})
    mtimes[edited] = 2
    return plan_make(rules, mtimes, "all")


def rebuild_reasons(rules: dict, mtimes: dict, order: list[str]) -> list[str]:
    """Why each target of ``order`` is remade: missing, a normal prerequisite on disk is newer, or
    only because a normal prerequisite is remade first."""
    def why(x: str) -> str:
        if x not in mtimes:
            return "missing"
        return "newer" if any(p in mtimes and mtimes[p] > mtimes[x] for p in rules[x][0]) else "remade"
    return [f"{x} {why(x)}" for x in order]


@dataclass(frozen=True)
class Knobs:
    core: int  # modules in libcore
    net: int  # modules in libnet (0: no libnet)
    bins: int  # binaries linked
    extras: int  # optional modules the bundles turn on
    edits: int  # sources edited since the last build
    gen: bool  # generated headers from specs
    missing: int  # build outputs deleted since, per bundle tree
    dir_trap: bool  # the object directory is newer than its objects (order-only prerequisite)
    backdated: int  # sources restored from a backup, older than their objects


@register
class MakeRebuildPlan(Family):
    name = "make_rebuild_plan"
    domain = "software_engineering"
    skill_types = ("Build Systems",)
    primitive_skills = ("makefile dependency graphs", "file timestamp comparison", "incremental rebuild analysis",
                        "conditional build configuration", "graph traversal and dependency resolution")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("rebuild_list", "edit_impact", "rebuild_reasons")
    levels = {0: Knobs(core=2, net=0, bins=1, extras=2, edits=1, gen=False, missing=0, dir_trap=False, backdated=0),
              1: Knobs(core=3, net=0, bins=1, extras=2, edits=1, gen=False, missing=0, dir_trap=False, backdated=0),
              2: Knobs(core=4, net=3, bins=2, extras=3, edits=2, gen=False, missing=1, dir_trap=False, backdated=0),
              3: Knobs(core=5, net=4, bins=2, extras=4, edits=3, gen=True, missing=1, dir_trap=True, backdated=1),
              4: Knobs(core=6, net=5, bins=3, extras=6, edits=4, gen=True, missing=2, dir_trap=True, backdated=2)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        for _ in range(self.variants.index(t.variant)):  # a seed's tree differs between the variants
            rng.random()
        # Module bundles are unlocked by a licence key; the Makefile keeps only key fingerprints and
        # every bundle builds into its own tree, so the key (delivered) decides every line of the answer
        # and is readable nowhere else.
        bundles = sorted(rng.sample(BUNDLES, 4))
        chosen = rng.choice(bundles)
        key = unseen(t, lambda: t.code(2), MAKE_HEAD, SAY)
        keys = distinct(lambda: t.code(2), len(bundles) - 1, taken=[key])
        keys.insert(bundles.index(chosen), key)
        core = rng.sample(CORE, k.core)
        net = rng.sample(NET, k.net)
        bins = BINS[:k.bins]
        extras = rng.sample(EXTRAS, k.extras)
        # each bundle turns on a few extras (a subset; they may overlap); no key: none
        fl_extras = {f: sorted(rng.sample(extras, rng.randint(1, min(3, len(extras))))) for f in bundles}
        fl_extras["basic"] = []
        gens = [f"{{O}}/{g}" for g in GENERATED] if k.gen else []
        headers = HEADERS[:2 + k.core // 3]
        # Rules with "{O}" standing for the bundle's output tree ($(O) in the Makefile).
        rules: dict[str, tuple[list[str], list[str], bool]] = {}
        text_rules: list[str] = []

        def mk(x: str) -> str:
            return x.replace("{O}", "$(O)")

        def obj_rule(m: str) -> None:
            deps = [f"src/{m}.c"] + sorted(rng.sample(headers, rng.randint(1, 2)))
            if gens and rng.random() < 0.5:
                deps.append(rng.choice(gens))
            oo = ["{O}/obj"]
            rules[f"{{O}}/obj/{m}.o"] = (deps, oo, False)
            text_rules.append(f"$(O)/obj/{m}.o: {mk(' '.join(deps))} | {mk(' '.join(oo))}\n"
                              "\t$(CC) $(CFLAGS) -c -o $@ $<\n")

        libs = {"{O}/lib/libcore.a": core}
        if net:
            libs["{O}/lib/libnet.a"] = net
        for lib, mods in libs.items():
            objs = [f"{{O}}/obj/{m}.o" for m in mods]
            rules[lib] = (objs, [], False)
            text_rules.append(f"{mk(lib)}: {mk(' '.join(objs))}\n\t$(AR) rcs $@ $^\n")
            for m in mods:
                obj_rule(m)
        for b in bins:
            obj_rule(b)
        for e in extras:
            obj_rule(e)
        for b in bins:
            normal = [f"{{O}}/obj/{b}.o"] + (["$(EXTRA)"] if b == bins[0] else []) + sorted(libs, reverse=True)
            rules[f"{{O}}/bin/{b}"] = (normal, [], False)
            text_rules.append(f"$(O)/bin/{b}: {mk(' '.join(normal))}\n\t$(LD) -o $@ $^\n")
        for g in gens:
            spec = "specs/" + g.split("/")[-1].replace(".h", ".def")
            rules[g] = ([spec], ["{O}/gen"], False)
            text_rules.append(f"{mk(g)}: {spec} | $(O)/gen\n\t$(GEN) $< -o $@\n")
        dirs = ["{O}/obj"] + (["{O}/gen"] if gens else [])
        for d in dirs:
            rules[d] = ([], [], False)
        text_rules.append(f"{mk(' '.join(dirs))}:\n\tmkdir -p $@\n")
        rules["all"] = ([f"{{O}}/bin/{b}" for b in bins], [], True)
        rng.shuffle(text_rules)
        cond = []
        for i, f in enumerate(bundles):
            fp = hashlib.sha256(keys[i].encode()).hexdigest()[:16]
            cond.append(f"{'ifeq' if i == 0 else 'else ifeq'} ($(KEY),{fp})\nBUNDLE := {f}\nMODULES := "
                        + " ".join(fl_extras[f]))
        makefile = (MAKE_HEAD + "\n" + "\n".join(cond) + "\nelse\nBUNDLE := basic\nMODULES :=\nendif\n\n"
                    "O := out/$(BUNDLE)\nEXTRA := $(patsubst %,$(O)/obj/%.o,$(MODULES))\n"
                    "CFLAGS := -O2 -Iinclude" + (" -I$(O)/gen" if gens else "") + "\n\n.PHONY: all clean\n\n"
                    f"all: {' '.join(f'$(O)/bin/{b}' for b in bins)}\n\n" + "\n".join(text_rules)
                    + "\nclean:\n\trm -rf $(O)\n")

        def tree(f: str) -> dict:
            """The rules as make sees them for bundle ``f``."""
            out = f"out/{f}"
            extra = [f"{out}/obj/{e}.o" for e in fl_extras[f]]

            def sub(xs: list[str]) -> list[str]:
                return [y for x in xs for y in (extra if x == "$(EXTRA)" else [x.replace("{O}", out)])]
            return {x.replace("{O}", out): (sub(n), sub(oo), ph) for x, (n, oo, ph) in rules.items()}

        trees = {f: tree(f) for f in bundles + ["basic"]}
        # -- the state of the tree: every bundle built once, in dependency order, then edits ---------
        mtimes: dict[str, int] = {}
        clock = 1_750_000_000 + rng.randrange(10**6)

        def tick() -> int:
            nonlocal clock
            clock += rng.randrange(30, 600)
            return clock

        sources = sorted({p for n, oo, ph in rules.values() for p in n if p not in rules and "{O}" not in p
                          and p != "$(EXTRA)"})
        for s in sources:
            mtimes[s] = tick()
        built_order: dict[str, list[str]] = {}
        order = bundles + ["basic"]
        rng.shuffle(order)
        for f in order:
            rs, done = trees[f], []

            def visit(x: str) -> None:
                if x in done or x not in rs:
                    return
                for p in rs[x][0] + rs[x][1]:
                    visit(p)
                done.append(x)

            visit("all")
            built_order[f] = done
            for x in done:
                if not rs[x][2]:
                    mtimes[x] = tick()
        clock += 86400
        c_files = [s for s in sources if s.endswith(".c")]
        edited = rng.sample(c_files, k.edits)
        if k.gen and rng.random() < 0.4:  # now and then a header or a spec, which fans out
            edited.append(rng.choice([s for s in sources if not s.endswith(".c")]))
        used = {p for n, oo, ph in trees[chosen].values() for p in n}
        if not any(s in used for s in edited):  # an edit the chosen bundle sees: never an empty plan
            edited.append(rng.choice([s for s in c_files if s in used]))
        for s in edited:
            mtimes[s] = tick()
        # a stale module of a bundle that is not built now (a trap for "everything newer")
        others = [e for e in extras if e not in fl_extras[chosen]]
        if others:
            mtimes[f"src/{rng.choice(others)}.c"] = tick()
        for s in rng.sample([s for s in sources if s not in edited], min(k.backdated, len(sources) - len(edited))):
            mtimes[s] = 1_600_000_000 + rng.randrange(10**6)  # restored from an old backup: older than its object
        all_dirs = [d.replace("{O}", f"out/{f}") for f in order for d in dirs]
        for f in order:  # outputs deleted since, the directory trap, generated headers cleaned
            rs = trees[f]
            built = [x for x in built_order[f] if not rs[x][2] and x not in all_dirs]
            for x in rng.sample(built, k.missing):
                del mtimes[x]
            if k.dir_trap:
                mtimes[f"out/{f}/obj"] = tick()  # the directory changed after the objects (order-only)
            if gens and rng.random() < 0.5:
                for g in gens:
                    mtimes.pop(g.replace("{O}", f"out/{f}"), None)
                mtimes.pop(f"out/{f}/gen", None)
        truth_list = plan_make(trees[chosen], mtimes, "all")
        if not truth_list:  # nothing the chosen bundle sees changed: its last output was deleted since
            rs = trees[chosen]
            last = [x for x in built_order[chosen] if not rs[x][2] and x not in all_dirs and x in mtimes][-1]
            del mtimes[last]
            truth_list = plan_make(rs, mtimes, "all")
        truth = "".join(x + "\n" for x in truth_list)
        # -- fixture files with their timestamps -------------------------------------------------------
        t.add_file("/app/build/Makefile", makefile)
        for tool in ("cc", "ar", "ld", "gen"):
            t.add_file(f"/app/build/tools/{tool}", TOOL)
        stamps = []
        for path in sorted(mtimes):
            if path in all_dirs:
                continue
            if path.startswith("src/"):
                body = f"/* {path} */\n#include \"common.h\"\nint {path[4:-2]}_init(void) {{ return 0; }}\n"
            elif path.endswith(".h") and not path.startswith("out/"):
                body = f"/* {path} */\n#pragma once\n"
            elif path.startswith("specs/"):
                body = f"# {path}\nfield id int\nfield name str\n"
            else:
                body = f"placeholder build output for {path}\n"
            t.add_file(f"/app/build/{path}", body)
            stamps.append(f"touch -d @{mtimes[path]} {path}")
        for d in sorted(all_dirs):
            if d in mtimes:
                stamps.append(f"mkdir -p {d} && touch -d @{mtimes[d]} {d}")
            elif d.endswith("/gen"):
                stamps.append(f"rm -rf {d}")
        t.add_setup("cd /app/build && chmod +x tools/*\n" + "\n".join(stamps))
        if visible(t, key):  # only fingerprints are written: this would be a bug, not bad luck
            raise FamilyError("make_rebuild_plan: the licence key is visible in the tree")
        var = t.deliver(key, "the customer's licence key")
        if t.variant == "edit_impact":
            return self._edit_impact(t, var, chosen, trees[chosen], fl_extras[chosen])
        if t.variant == "rebuild_reasons":
            return self._reasons(t, var, chosen, trees[chosen], mtimes, truth_list)
        if t.level == 0:  # one lookup: the key's fingerprint, then the bundle the Makefile maps it to
            t.say(ASK_FP + " Which bundle (the value of `BUNDLE`) does the key given above select? Write just the "
                  "bundle name.")
            t.solve(f'mkdir -p /app/out\n{fingerprint(var)}{BUNDLE_OF} > /app/out/bundle.txt')
            t.expect_output("/app/out/bundle.txt", chosen + "\n", "the bundle name")
            return
        t.say(SAY)
        t.say(f"The answer lists {FORMAT}.")
        t.solve(f'mkdir -p /app/out\ncd /app/build && make -n LICENSE="{var}" all | {TARGETS_AWK} '
                '> /app/out/rebuild.txt\ntest -s /app/out/rebuild.txt')
        t.expect_output("/app/out/rebuild.txt", truth, "the rebuild list")

    def _edit_impact(self, t: TaskBuilder, var: str, chosen: str, rules: dict, extras: list[str]) -> None:
        """What one edit costs on an up-to-date tree (level 0: the objects the key's modules add)."""
        if t.level == 0:
            t.say("`/app/build/Makefile` turns on optional modules from a licence key (by the key's fingerprint); "
                  "`EXTRA` holds their object files. What is the value of `EXTRA` when make runs in `/app/build` "
                  "with `LICENSE=<key>` for the key given above? Write the object files one per line, in the order "
                  "of that value.")
            t.solve(f'mkdir -p /app/out\ncd /app/build && make -pn LICENSE="{var}" all 2>/dev/null '
                    '| sed -n "s/^EXTRA := //p" | tr " " "\\n" > /app/out/extra.txt')
            t.expect_output("/app/out/extra.txt", "".join(f"out/{chosen}/obj/{e}.o\n" for e in extras),
                            "the object list")
            return
        used = sorted({p for n, oo, ph in rules.values() for p in n if p not in rules})
        headers = [p for p in used if not p.endswith(".c")]  # a header or a spec fans out
        edited = t.rng.choice(headers if headers and t.rng.random() < 0.5 else used)
        t.say(f"The service in `/app/build` builds with `make LICENSE=<key> all` (run in `/app/build`, serially). "
              f"Suppose that, for the customer's licence key given here, the tree is first brought fully up to date "
              f"by that command, and then a developer edits `{edited}` and nothing else. I need to know exactly "
              "what the next `make LICENSE=<key> all` would rebuild then. Do not change `/app/build` itself "
              "(work on a copy if you want to try things).")
        t.say(f"The answer lists {FORMAT}.")
        # The oracle builds a copy for real (an ar stand-in that does write its archive), then asks make
        # what the edit would redo.
        t.solve(f'mkdir -p /app/out\nrm -rf /tmp/impact && cp -a /app/build /tmp/impact && cd /tmp/impact\n'
                'printf \'#!/bin/sh\\ntouch "$2"\\n\' > /tmp/impact-ar && chmod +x /tmp/impact-ar\n'
                f'make -s LICENSE="{var}" AR=/tmp/impact-ar all >/dev/null\n'
                f'make -n -W {edited} LICENSE="{var}" all | {TARGETS_AWK} > /app/out/impact.txt\n'
                'test -s /app/out/impact.txt')
        t.expect_output("/app/out/impact.txt", "".join(x + "\n" for x in after_edit(rules, edited)),
                        "the rebuild list")

    def _reasons(self, t: TaskBuilder, var: str, chosen: str, rules: dict, mtimes: dict, order: list[str]) -> None:
        """Why each target is rebuilt (level 0: the key's objects older than their own source)."""
        if t.level == 0:
            objs = sorted(x for x in rules if x.endswith(".o") and x in mtimes
                          and mtimes[x] < mtimes[f"src/{x.split('/')[-1][:-2]}.c"])
            t.say(ASK_FP + " Each bundle builds into `out/<bundle>/`. Which object files `out/<bundle>/obj/<m>.o` "
                  "of the bundle the key given above selects are older (by modification time) than their own "
                  "source `src/<m>.c`? Write their paths, relative to `/app/build`, one per line in name order "
                  "(byte order).")
            t.solve(f'export LC_ALL=C\nmkdir -p /app/out\n{fingerprint(var)}b=$({BUNDLE_OF})\n'
                    'cd /app/build && for o in out/"$b"/obj/*.o; do '
                    'if [ "src/$(basename "$o" .o).c" -nt "$o" ]; then echo "$o"; fi; done > /app/out/stale.txt')
            t.expect_output("/app/out/stale.txt", "".join(x + "\n" for x in objs), "the stale objects")
            return
        t.say(SAY)
        t.say("For every target it would rebuild, say why: `missing` if the target does not exist now; otherwise "
              "`newer` if at least one of its normal (not order-only) prerequisites exists and was modified later "
              "than the target; otherwise `remade` (it is rebuilt only because a prerequisite is rebuilt first).")
        t.say("The answer lists one line per target, `<target> <reason>`, the target exactly as make names it (for "
              "example `out/<bundle>/obj/util.o newer`), in the order make would run their recipes; phony targets "
              "are not listed, directories created by a recipe are.")
        # make's own database gives each target's prerequisites as this key expands them.
        t.solve(f'mkdir -p /app/out\ncd /app/build && make -n LICENSE="{var}" all | {TARGETS_AWK} > /tmp/rebuild.txt\n'
                f'make -pn LICENSE="{var}" all > /tmp/make-db.txt 2>/dev/null\n'
                'while read -r x; do\n  r=missing\n  if [ -e "$x" ]; then\n    r=remade\n'
                '    for p in $(awk -v x="$x:" \'$1 == x {sub(/^[^:]*:/, ""); sub(/[|].*/, ""); print; exit}\' '
                '/tmp/make-db.txt); do\n      if [ "$p" -nt "$x" ]; then r=newer; fi\n    done\n  fi\n'
                '  echo "$x $r"\ndone < /tmp/rebuild.txt > /app/out/reasons.txt\ntest -s /app/out/reasons.txt')
        t.expect_output("/app/out/reasons.txt", "".join(x + "\n" for x in rebuild_reasons(rules, mtimes, order)),
                        "the rebuild reasons")
