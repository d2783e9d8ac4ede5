"""What would `make` rebuild? A Makefile with build flavours (ifeq), libraries, generated headers and
order-only directory prerequisites over a tree with fixed timestamps (some sources edited after the
last build, some outputs deleted); list the targets whose recipes would run, in make's order. Truth is
a model of GNU make's update algorithm; the oracle asks the real make (dry run), so the gate proves
they agree."""

from __future__ import annotations

from tmax.families.base import Family, TaskBuilder, register

CORE = ["util", "config", "log", "strbuf", "arena", "hashmap"]
NET = ["socket", "http", "router", "codec", "pool"]
EXTRAS = ["tls", "gzip", "metrics", "trace", "quota", "audit"]
BINS = ["server", "cli", "worker"]
HEADERS = ["include/common.h", "include/net.h", "include/config.h", "include/compat.h"]
GENERATED = ["gen/version.h", "gen/proto.h"]
TOOL = "#!/bin/sh\n# stand-in for the real toolchain: records what it would produce\nout=\"\"\n" \
       "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then out=$2; fi; shift; done\n" \
       "[ -n \"$out\" ] && touch \"$out\"\n"


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


@register
class MakeRebuildPlan(Family):
    name = "make_rebuild_plan"
    domain = "software_engineering"
    skill_types = ("Build Systems",)
    primitive_skills = ("makefile dependency graphs", "file timestamp comparison", "incremental rebuild analysis",
                        "conditional build configuration", "graph traversal and dependency resolution")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    levels = {1: {"core": 3, "net": 0, "bins": 1, "extras": 2, "edits": 1, "gen": False, "missing": 0,
                  "dir_trap": False, "backdated": 0},
              2: {"core": 4, "net": 3, "bins": 2, "extras": 3, "edits": 2, "gen": False, "missing": 1,
                  "dir_trap": False, "backdated": 0},
              3: {"core": 5, "net": 4, "bins": 2, "extras": 4, "edits": 3, "gen": True, "missing": 1,
                  "dir_trap": True, "backdated": 1},
              4: {"core": 6, "net": 5, "bins": 3, "extras": 6, "edits": 4, "gen": True, "missing": 2,
                  "dir_trap": True, "backdated": 2}}

    def build(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        flavours: list[str] = []
        while len(flavours) < 3:
            w = t.code(1)
            if w not in flavours and w != "BASIC":
                flavours.append(w)
        chosen = rng.choice(flavours)
        core = rng.sample(CORE, k["core"])
        net = rng.sample(NET, k["net"])
        bins = BINS[:k["bins"]]
        extras = rng.sample(EXTRAS, k["extras"])
        # each flavour turns on a few extras (a subset; they may overlap)
        fl_extras = {f: sorted(rng.sample(extras, rng.randint(1, min(3, len(extras))))) for f in flavours}
        gens = GENERATED if k["gen"] else []
        headers = HEADERS[:2 + k["core"] // 3]
        rules: dict[str, tuple[list[str], list[str], bool]] = {}
        text_rules: list[str] = []

        def obj_rule(m: str) -> None:
            deps = [f"src/{m}.c"] + sorted(rng.sample(headers, rng.randint(1, 2)))
            if gens and rng.random() < 0.5:
                deps.append(rng.choice(gens))
            oo = ["obj"]
            rules[f"obj/{m}.o"] = (deps, oo, False)
            text_rules.append(f"obj/{m}.o: {' '.join(deps)} | {' '.join(oo)}\n\t$(CC) $(CFLAGS) -c -o $@ $<\n")

        libs = {"lib/libcore.a": core}
        if net:
            libs["lib/libnet.a"] = net
        for lib, mods in libs.items():
            objs = [f"obj/{m}.o" for m in mods]
            rules[lib] = (objs, [], False)
            text_rules.append(f"{lib}: {' '.join(objs)}\n\t$(AR) rcs $@ $^\n")
            for m in mods:
                obj_rule(m)
        for b in bins:
            obj_rule(b)
        for e in extras:
            obj_rule(e)
        extra_objs = [f"obj/{e}.o" for e in fl_extras[chosen]]
        for b in bins:
            normal = [f"obj/{b}.o"] + (extra_objs if b == bins[0] else []) + sorted(libs, reverse=True)
            rules[f"bin/{b}"] = (normal, [], False)
            text_rules.append(f"bin/{b}: obj/{b}.o {'$(EXTRA) ' if b == bins[0] else ''}"
                              f"{' '.join(sorted(libs, reverse=True))}\n\t$(LD) -o $@ $^\n")
        for g in gens:
            spec = "specs/" + g.split("/")[1].replace(".h", ".def")
            rules[g] = ([spec], ["gen"], False)
            text_rules.append(f"{g}: {spec} | gen\n\t$(GEN) $< -o $@\n")
        dirs = ["obj"] + (["gen"] if gens else [])
        for d in dirs:
            rules[d] = ([], [], False)
        text_rules.append(f"{' '.join(dirs)}:\n\tmkdir -p $@\n")
        rules["all"] = ([f"bin/{b}" for b in bins], [], True)
        rng.shuffle(text_rules)
        cond = []
        for i, f in enumerate(flavours):
            cond.append(f"{'ifeq' if i == 0 else 'else ifeq'} ($(FLAVOR),{f})\nEXTRA := "
                        + " ".join(f"obj/{e}.o" for e in fl_extras[f]))
        makefile = ("# Service build. FLAVOR selects the optional modules linked into the main binary.\n"
                    "CC := ./tools/cc\nAR := ./tools/ar\nLD := ./tools/ld\nGEN := ./tools/gen\n"
                    "CFLAGS := -O2 -Iinclude" + (" -Igen" if gens else "") + "\nFLAVOR ?= BASIC\n\n"
                    + "\n".join(cond) + "\nelse\nEXTRA :=\nendif\n\n.PHONY: all clean\n\n"
                    f"all: {' '.join(f'bin/{b}' for b in bins)}\n\n" + "\n".join(text_rules)
                    + "\nclean:\n\trm -rf obj lib bin" + (" gen" if gens else "") + "\n")
        # -- the state of the tree: everything built once, in dependency order, then edits -----------
        mtimes: dict[str, int] = {}
        clock = 1_750_000_000 + rng.randrange(10**6)

        def tick() -> int:
            nonlocal clock
            clock += rng.randrange(30, 600)
            return clock

        sources = sorted({p for n, oo, ph in rules.values() for p in n if p not in rules})
        for s in sources:
            mtimes[s] = tick()
        built_order: list[str] = []

        def visit(x: str) -> None:
            if x in built_order or x not in rules:
                return
            for p in rules[x][0] + rules[x][1]:
                visit(p)
            built_order.append(x)

        for f in flavours:  # every flavour was built at some point, so all extras exist
            visit(f"obj/{fl_extras[f][0]}.o")
        for x in sorted(rules):
            visit(x)
        for x in built_order:
            if not rules[x][2]:
                mtimes[x] = tick()
        clock += 86400
        c_files = [s for s in sources if s.endswith(".c")]
        edited = rng.sample(c_files, k["edits"])
        if k["gen"] and rng.random() < 0.4:  # now and then a header or a spec, which fans out
            edited.append(rng.choice([s for s in sources if not s.endswith(".c")]))
        for s in edited:
            mtimes[s] = tick()
        # a stale module of a flavour that is not built now (a trap for "everything newer")
        others = [e for e in extras if e not in fl_extras[chosen]]
        if others:
            mtimes[f"src/{rng.choice(others)}.c"] = tick()
        for s in rng.sample([s for s in sources if s not in edited], min(k["backdated"], len(sources) - len(edited))):
            mtimes[s] = 1_600_000_000 + rng.randrange(10**6)  # restored from an old backup: older than its object
        built = [x for x in built_order if not rules[x][2] and x not in dirs]
        for x in rng.sample(built, k["missing"]):
            del mtimes[x]
        if k["dir_trap"]:
            mtimes["obj"] = tick()  # the directory changed after the objects (order-only: must not matter)
        if gens and rng.random() < 0.5:
            for g in gens:
                mtimes.pop(g, None)
            mtimes.pop("gen", None)
        truth_list = plan_make(rules, mtimes, "all")
        truth = "".join(x + "\n" for x in truth_list)
        # -- fixture files with their timestamps -------------------------------------------------------
        t.add_file("/app/build/Makefile", makefile)
        for tool in ("cc", "ar", "ld", "gen"):
            t.add_file(f"/app/build/tools/{tool}", TOOL)
        stamps = []
        for path in sorted(mtimes):
            if path in dirs:
                continue
            if path.startswith("src/"):
                body = f"/* {path} */\n#include \"common.h\"\nint {path[4:-2]}_init(void) {{ return 0; }}\n"
            elif path.endswith(".h"):
                body = f"/* {path} */\n#pragma once\n"
            elif path.startswith("specs/"):
                body = f"# {path}\nfield id int\nfield name str\n"
            else:
                body = f"placeholder build output for {path}\n"
            t.add_file(f"/app/build/{path}", body)
            stamps.append(f"touch -d @{mtimes[path]} {path}")
        for d in dirs:
            if d in mtimes:
                stamps.append(f"mkdir -p {d} && touch -d @{mtimes[d]} {d}")
        if "gen" not in mtimes and gens:
            stamps.append("rm -rf gen")
        t.add_setup("cd /app/build && chmod +x tools/*\n" + "\n".join(stamps))
        var = t.deliver(chosen, "the build flavour")
        t.say("The service in `/app/build` was fully built a while ago; since then some sources changed and some "
              "build outputs may have been deleted. Before kicking off the release build I need to know exactly what "
              "`make FLAVOR=<flavour> all` (run in `/app/build`, serially) is going to rebuild with the file "
              "timestamps exactly as they are now, for the build flavour given here. Do not change the tree's "
              "state: the answer is about the tree as it is.")
        t.say("The answer lists one target per line, exactly as the Makefile names it (for example `obj/util.o`), in the order "
               "make would run their recipes; phony targets are not listed, directories created by a recipe are.")
        t.solve(f'mkdir -p /app/out\ncd /app/build && make -n FLAVOR="{var}" all | awk \'{{for (i = 1; i <= NF; i++) '
                'if ($i == "-o") {print $(i + 1); next}} $1 == "./tools/ar" || $1 == "mkdir" {print $3}\' '
                '> /app/out/rebuild.txt\ntest -s /app/out/rebuild.txt')
        t.expect_output("/app/out/rebuild.txt", truth, "the rebuild list")
