"""Arrows one way: no import cycle between tmax's modules, counting imports inside functions (a lazy
import is still an arrow; only ``if TYPE_CHECKING:`` imports, for annotations, are not). The checker
itself is shown to find a cycle that is added."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def modules(src: Path = SRC) -> dict[str, Path]:
    out = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _package(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the tmax modules it imports anywhere in its body. ``from pkg import name`` is an
    arrow to ``pkg.name`` when that is a module, else to ``pkg``."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = _package(name, path).split(".")
                    pkg = pkg[:len(pkg) - node.level + 1]
                    base = ".".join(pkg + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                while t and t not in mods:  # `import a.b.c` names a.b.c; an attribute falls back to its module
                    t = t.rpartition(".")[0]
                if t and t != name:
                    graph[name].add(t)
    return graph


def _runtime_nodes(tree: ast.AST):
    """Every node but those under ``if TYPE_CHECKING:`` (annotations only: no arrow at run time)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                todo.extend(child.orelse)
                continue
            todo.append(child)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_cycle_between_tmax_modules():
    found = cycles(edges(modules()))
    assert not found, "import cycles (each a set of modules that import one another):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_the_checker_finds_an_added_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.c import g  # a lazy import is an arrow too\n")
    (pkg / "c.py").write_text("import pkg.a\ndef g():\n    pass\n")
    (pkg / "d.py").write_text("from . import a\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\n")
    (pkg / "e.py").write_text("import pkg.d\n")
    graph = edges(modules(tmp_path))
    assert graph["pkg.d"] == {"pkg.a"} and graph["pkg.e"] == {"pkg.d"}  # the annotation-only import is no arrow
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    (pkg / "c.py").write_text("def g():\n    pass\n")
    assert cycles(edges(modules(tmp_path))) == []
