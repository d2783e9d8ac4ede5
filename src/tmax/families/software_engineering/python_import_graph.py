"""Which modules of a Python project import which? Each project's source is checked out under a folder
named by a hash of the project name (the delivered value), beside other projects. Variants: the
import edges between the project's own modules, each module's fan-in (how many modules import it), or
the import cycles (strongly connected groups). Truth comes from Python's own parser (`ast`), so
imports quoted in docstrings and comments never count. Traps by level: relative imports, aliases,
stdlib and third-party imports, then subpackages, names imported from a package, `*`, guarded imports
and removed modules, then `if TYPE_CHECKING:` imports that do not count, and finally deferred imports
inside functions (which do not count either) and `..` relative imports."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.software_engineering._common import finish_keyed, report_on_tree, ship_keyed

REFERENCE = r'''
import ast
import os
import sys

MODE = @MODE@  # "edges", "fan_in" or "cycles"
SKIP_TYPING = @SKIP_TYPING@  # imports under `if TYPE_CHECKING:` do not count
SKIP_DEFERRED = @SKIP_DEFERRED@  # imports inside function bodies do not count


def modules(root):
    """Dotted module name -> (path, is a package's __init__)."""
    mods = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(".py"):
                parts = os.path.relpath(os.path.join(dirpath, f), root)[:-3].split(os.sep)
                init = parts[-1] == "__init__"
                mods[".".join(parts[:-1] if init else parts)] = (os.path.join(dirpath, f), init)
    return mods


def typing_guard(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_nodes(node):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and SKIP_DEFERRED:
            continue
        if isinstance(child, ast.If) and SKIP_TYPING and typing_guard(child.test):
            for c in child.orelse:
                yield from import_nodes(ast.Module(body=[c], type_ignores=[]))
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        yield from import_nodes(child)


def targets(node, name, init, mods):
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in mods]
    if node.level:
        parts = (name if init else name.rpartition(".")[0]).split(".")
        base = ".".join(parts[:len(parts) - (node.level - 1)])
        base = f"{base}.{node.module}" if node.module else base
    else:
        base = node.module
    out = []
    for a in node.names:  # a submodule if there is one, else a name defined in the module
        full = f"{base}.{a.name}"
        out += [full] if full in mods else [base] if base in mods else []
    return out


def graph(root):
    mods = modules(root)
    edges = set()
    for name, (path, init) in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in import_nodes(tree):
            edges |= {(name, tgt) for tgt in targets(node, name, init, mods) if tgt != name}
    return sorted(mods), sorted(edges)


def cycles(names, edges):
    """Tarjan's strongly connected components with more than one module."""
    succ = {n: [b for a, b in edges if a == n] for n in names}
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(" ".join(sorted(comp)))

    for v in names:
        if v not in index:
            visit(v)
    return sorted(out)


def report(root):
    names, edges = graph(root)
    if MODE == "edges":
        lines = [f"{a} -> {b}" for a, b in edges]
    elif MODE == "fan_in":
        fan = {n: 0 for n in names}
        for _, b in edges:
            fan[b] += 1
        lines = [f"{n} {c}" for n, c in sorted(fan.items(), key=lambda kv: (-kv[1], kv[0]))]
    else:
        lines = cycles(names, edges)
    return "".join(line + "\n" for line in lines)


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    sys.stdout.write(report(sys.argv[1]))
'''

PKGS = ("shop", "ledger", "relay", "atlas", "harbor", "quill")
LEAVES = ("models", "views", "utils", "config", "cache", "auth", "billing", "events", "schema", "client",
          "tasks", "storage", "search", "mailer", "metrics", "routes", "session", "errors", "jobs", "cli")
SUBS = ("api", "db", "core")
FUNCS = ("connect", "Settings", "helper", "render", "Base", "load", "dispatch", "get_logger")
STDLIB = ("os", "json", "logging", "re", "datetime", "typing")
THIRD = ("requests", "sqlalchemy", "pydantic", "redis")


@dataclass(frozen=True)
class Knobs:
    modules: int  # modules of the project (packages' __init__ included)
    edges: int  # import edges drawn
    traps: int  # 1: relative, aliases, noise; 2: subpackages, names, *, guarded, removed; 3: TYPE_CHECKING;
    #             4: deferred imports, `..`
    decoys: int  # other projects


@register
class PythonImportGraph(Family):
    name = "python_import_graph"
    domain = "software_engineering"
    skill_types = ("Dependency Management", "Build Systems")
    primitive_skills = ("graph traversal and dependency resolution", "cycle detection", "sorting with tie-breaks",
                        "text report formatting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("edges", "fan_in", "cycles")
    levels = {0: Knobs(modules=5, edges=5, traps=0, decoys=2),
              1: Knobs(modules=8, edges=10, traps=1, decoys=3),
              2: Knobs(modules=12, edges=16, traps=2, decoys=3),
              3: Knobs(modules=16, edges=24, traps=3, decoys=3),
              4: Knobs(modules=22, edges=34, traps=4, decoys=3)}

    def _names(self, t: TaskBuilder) -> list[str]:
        k, rng = t.knobs, t.rng
        pkg = rng.choice(PKGS)
        packages = [pkg] + ([f"{pkg}.{s}" for s in SUBS] if k.traps >= 2 else [])
        if k.traps >= 4:
            packages.append(f"{pkg}.api.v2")
        names = list(packages)
        while len(names) < k.modules:
            m = f"{rng.choice(packages)}.{rng.choice(LEAVES)}"
            if m not in names:
                names.append(m)
        return names

    def _line(self, t: TaskBuilder, src: str, dst: str, packages: set[str]) -> str:
        """One import statement that makes ``src`` import ``dst``, in a style the level allows."""
        k, rng = t.knobs, t.rng
        parent, _, leaf = dst.rpartition(".")
        here = src if src in packages else src.rpartition(".")[0]
        styles = ["import", "from_parent"] if parent else ["import"]
        if k.traps >= 1:
            styles += ["alias"] + (["relative"] if parent == here else [])
        if k.traps >= 2:
            styles += ["name"] + (["star"] if dst in packages else [])
        if k.traps >= 4 and "." in parent and "." in here and parent != here and \
                here.rpartition(".")[0] == parent.rpartition(".")[0]:  # `..` reaches a sibling package
            styles.append("up")
        style = rng.choice(styles)
        if style == "import":
            return f"import {dst}"
        if style == "alias":
            return f"import {dst} as {leaf}_mod"
        if style == "from_parent":
            return f"from {parent} import {leaf}"
        if style == "relative":
            return f"from . import {leaf}" if rng.random() < 0.5 else f"from .{leaf} import {rng.choice(FUNCS)}"
        if style == "up":
            return f"from ..{parent.rpartition('.')[2]}.{leaf} import {rng.choice(FUNCS)}"
        return f"from {dst} import *" if style == "star" else f"from {dst} import {rng.choice(FUNCS)}"

    def _project(self, t: TaskBuilder) -> dict[str, str]:
        k, rng = t.knobs, t.rng
        names = self._names(t)
        packages = {n for n in names if n.count(".") == 0 or n.rpartition(".")[2] in SUBS + ("v2",)}
        cyc = rng.sample(names, 2 + (k.traps >= 2))  # one real cycle, always
        edges = [(cyc[i], cyc[(i + 1) % len(cyc)], "top") for i in range(len(cyc))]
        while len(edges) < k.edges:
            a, b = rng.sample(names, 2)
            edges.append((a, b, rng.choice(["top"] * 4 + ["typing"] * (k.traps >= 3) + ["deferred"] * (k.traps >= 4))))
        body = {n: {"top": [], "typing": [], "deferred": []} for n in names}
        for a, b, kind in edges:
            body[a][kind].append(self._line(t, a, b, packages))
        tree = {}
        for n in names:
            lines = [f'"""The {n} module.']
            if k.traps >= 1:  # quoted, not executed
                lines.append(f"Usage: import {rng.choice(names)} and call it.")
            lines += ['"""', "", "from __future__ import annotations", ""]
            lines += [f"import {m}" for m in rng.sample(STDLIB, 2)]
            if k.traps >= 1:
                lines += [f"import {rng.choice(THIRD)}", f"# import {rng.choice(names)}  (removed in 2.0)"]
            if k.traps >= 2 and rng.random() < 0.4:
                lines.append(f"import {names[0]}.legacy_{rng.choice(LEAVES)}  # a module that no longer exists")
            top = body[n]["top"]
            if k.traps >= 2 and top and rng.random() < 0.4:  # guarded: still an import
                lines += ["try:", f"    {top[0]}", "except ImportError:", "    pass"]
                top = top[1:]
            lines += top
            if body[n]["typing"]:
                lines += ["from typing import TYPE_CHECKING", "", "if TYPE_CHECKING:"] + \
                    [f"    {x}" for x in body[n]["typing"]]
            lines += ["", "", f"def {rng.choice(FUNCS).lower()}_{rng.randrange(10, 99)}():"]
            lines += [f"    {x}" for x in body[n]["deferred"]] + ["    return None", ""]
            parts = n.split(".")
            path = "/".join(parts) + "/__init__.py" if n in packages else "/".join(parts) + ".py"
            tree[path] = "\n".join(lines)
        return dict(sorted(tree.items()))

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        src = fill(REFERENCE, MODE=repr(v), SKIP_TYPING=k.traps >= 3, SKIP_DEFERRED=k.traps >= 4)
        report = run_python(src)["report"]
        projects = [self._project(t) for _ in range(1 + k.decoys)]
        name = ship_keyed(t, "projects", projects)
        truth = report_on_tree(report, projects[0])
        t.say("Every project's source is checked out under `/app/projects/<KEY>/`, where KEY is the first 16 hex "
              "digits of the SHA-256 of the project name (`printf %s <name> | sha256sum`); the folder is the "
              "import root (a `.py` file's dotted module name is its path from there, a package is named by its "
              "folder's `__init__.py`).")
        t.deliver(name, "the project name")
        notes = ["Only imports between the project's own modules count (standard library, third-party and "
                 "modules that do not exist are left out), and only real import statements (not text in "
                 "docstrings or comments). `import a.b` imports `a.b`; `from a import b` imports the module `a.b` "
                 "if there is one, else (a name defined in `a`) `a` itself."]
        if k.traps >= 1:
            notes.append("Relative imports (`from . import x`, `from .x import y`"
                         + (", `from ..x import y`" if k.traps >= 4 else "") + ") count from the importing "
                         "module's package (for a package's `__init__.py`, that package).")
        if k.traps >= 3:
            notes.append("Imports under `if TYPE_CHECKING:` never run, so they do not count"
                         + ("; neither do imports inside function bodies (deferred until called)." if k.traps >= 4
                            else "."))
        ask = {"edges": "List every module-to-module import once as `<importer> -> <imported>` (dotted names), "
                        "sorted in byte order; a module importing itself does not count.",
               "fan_in": "For every module of the project, count the distinct modules that import it: one line "
                         "`<module> <count>` (zero included), the largest count first, ties by name in byte order.",
               "cycles": "Find the import cycles: each group of modules that can all reach one another through "
                         "imports (a strongly connected group of two or more) is one line, its dotted names "
                         "sorted in byte order and separated by single spaces; sort the lines in byte order."}[v]
        t.say(" ".join(notes + [ask]))
        finish_keyed(t, "projects", "imports.py", src, "/app/out/imports.txt", truth, "the import report")
