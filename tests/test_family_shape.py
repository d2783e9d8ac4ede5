"""Every family has the one shape: typed knobs, case methods the base dispatches to (no family looks at
the verifier kind), templates filled only by ``fill``, bounded redraws, and arrows that point one way
(families use verifiers; verifiers never import families)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tmax.families import load_all
from tmax.families.base import CASE_METHODS, Family, FamilyError, register
from tmax.families.programs import fill
from tmax.families.unseen import distinct

FAMILIES = Path(__file__).parents[1] / "src" / "tmax" / "families"


def _family_sources() -> list[Path]:
    return sorted(p for p in FAMILIES.glob("*/*.py") if p.name != "__init__.py")


def test_every_family_has_typed_knobs_and_no_build_of_its_own():
    for name, fam in sorted(load_all().items()):
        knobs = list(fam.levels.values())
        assert all(dataclasses.is_dataclass(k) and type(k) is type(knobs[0]) for k in knobs), name
        assert type(knobs[0]).__dataclass_params__.frozen, name
        assert type(fam).build is Family.build, f"{name} overrides build(): the base dispatches"
        for v in fam.verifiers:
            assert getattr(type(fam), CASE_METHODS[v]) is not getattr(Family, CASE_METHODS[v]), (name, v)


@pytest.mark.parametrize("path", _family_sources(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_family_branches_on_the_kind_formats_a_template_or_redraws_forever(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute) and node.attr == "verifier":
            raise AssertionError(f"{where}: looks at the verifier kind (use the case methods, t.partial_credit)")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            raise AssertionError(f"{where}: .format() (templates are filled by programs.fill, prose by f-strings)")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "exec":
            raise AssertionError(f"{where}: exec() (run a reference with programs.run_python)")
        if isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and node.test.value is True:
            raise AssertionError(f"{where}: while True (a redraw must be bounded)")


def test_fill_refuses_a_name_left_unfilled_or_a_value_unused():
    assert fill("x = @N@\ns = '@@V@@'\nt = @T@\n", N=3, T=("a",)) == "x = 3\ns = '@@V@@'\nt = ('a',)\n"
    with pytest.raises(FamilyError, match=r"no value for \['M'\]"):
        fill("@N@ @M@", N=1)
    with pytest.raises(FamilyError, match=r"no @NAME@ uses \['X'\]"):
        fill("@N@", N=1, X=2)


def test_a_family_with_untyped_knobs_or_a_missing_case_is_refused():
    @dataclass(frozen=True)
    class K:
        n: int

    base = dict(domain="data_processing", skill_types=("Parsing",),
                primitive_skills=("record validation", "field extraction", "regular expressions"),
                verifiers=("exact_text",))
    with pytest.raises(FamilyError, match="frozen dataclass"):
        register(type("Untyped", (Family,), {**base, "name": "shape_untyped", "levels": {i: [i] for i in (1, 2, 3, 4)},
                                             "output_case": lambda self, t: None}))
    with pytest.raises(FamilyError, match="has no output_case"):
        register(type("NoCase", (Family,), {**base, "name": "shape_no_case", "levels": {i: K(i) for i in (1, 2, 3, 4)}}))


def test_a_redraw_that_cannot_succeed_is_an_error_not_a_hang():
    with pytest.raises(FamilyError, match="only 2 different values"):
        distinct(iter(["A", "B"] * 50).__next__, 3, tries=50)
    assert distinct(iter("AABAC").__next__, 2, taken=("A",)) == ["B", "C"]


def test_verifiers_and_fixtures_never_import_the_families():
    code = ("import sys, tmax.verifiers, tmax.fixtures; "
            "print(sorted(m for m in sys.modules if m.startswith('tmax.families')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    src = inspect.getsource(sys.modules["tmax.verifiers"])
    assert "tmax.families" not in src


def test_level_zero_and_variants_reach_the_builder_and_the_manifest(tmp_path):
    from tmax.families.base import REGISTRY, build_task
    from tmax.families.check import cases
    from tmax.generate import axes_for_family
    from tmax.task import load_task

    @dataclass(frozen=True)
    class K:
        n: int

    class Toy(Family):
        name, domain, skill_types = "shape_toy_variants", "data_processing", ("Parsing",)
        primitive_skills = ("record validation", "field extraction", "regular expressions")
        verifiers, fixtures = ("exact_text",), ("text_only",)
        levels = {i: K(i) for i in range(5)}
        variants = ("count", "list", "sum")

        def output_case(self, t):
            t.say(f"Variant {t.variant}, level {t.level}: write the answer to /app/out.txt, as asked here. " * 5)
            t.solve(f"echo {t.variant}-{t.knobs.n} > /app/out.txt")
            t.expect_output("/app/out.txt", f"{t.variant}-{t.knobs.n}\n")

    class NoZero(Toy):
        name = "shape_toy_no_zero"
        levels = {i: K(i) for i in range(1, 5)}
        variants = ()

    try:
        register(Toy), register(NoZero)
        toy, no_zero = REGISTRY["shape_toy_variants"], REGISTRY["shape_toy_no_zero"]
        assert "atomic" in toy.task_complexities and "atomic" not in no_zero.task_complexities
        assert axes_for_family(no_zero, 0, 0, level=0).task_complexity == "short"  # the nearest level it has
        built = cases(toy, None, seeds=3)
        assert sorted({c.level for c in built}) == [0, 1, 2, 3, 4]
        assert {c.variant for c in built} == set(Toy.variants)
        for variant in Toy.variants:
            dest = tmp_path / variant
            t = build_task(toy, axes_for_family(toy, 1, 0, level=0), 1, 0, dest, variant=variant)
            assert (t.variant, t.level) == (variant, 0)
            assert load_task(dest).metadata["variant"] == variant
            assert f"echo {variant}-0" in (dest / "solution" / "solve.sh").read_text()
        drawn = {build_task(toy, axes_for_family(toy, 1, i, level=2), 1, i, tmp_path / f"d{i}").variant
                 for i in range(12)}
        assert drawn == set(Toy.variants)  # the builder draws every variant over a corpus
        with pytest.raises(FamilyError, match="unknown variant"):
            build_task(toy, axes_for_family(toy, 1, 0, level=1), 1, 0, tmp_path / "bad", variant="median")
    finally:
        REGISTRY.pop("shape_toy_variants", None), REGISTRY.pop("shape_toy_no_zero", None)
    with pytest.raises(FamilyError, match="variants must be distinct"):
        register(type("Twice", (Toy,), {"name": "shape_toy_twice", "variants": ("a", "a")}))
    with pytest.raises(FamilyError, match="levels must be exactly"):
        register(type("Gap", (Toy,), {"name": "shape_toy_gap", "levels": {i: K(i) for i in (0, 2, 3, 4)}}))


def test_a_composed_family_chains_registered_families_of_its_own():
    fams = load_all()
    for name, fam in sorted(fams.items()):
        if fam.stages:
            assert all(s in fams and s != name for s in fam.stages), (name, fam.stages)
            assert fam.variants, f"{name}: a composed family offers variants"
    base = next(f for f in fams.values() if not f.stages)
    with pytest.raises(FamilyError, match="stages must name at least 2 distinct families"):
        register(type("One", (type(base),), {"name": "shape_toy_one_stage", "stages": ("csv_column_profile",)}))
