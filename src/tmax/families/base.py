"""The shape every procedural family has, the builder it writes a task through, and the registry.

A family is one class in one file::

    @register
    class LogStatusCount(Family):
        name = "log_status_count"
        domain = "data_processing"
        skill_types = ("Text Processing",)
        primitive_skills = ("log parsing", "filtering by field", "aggregation")
        verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
        levels = {1: {"lines": 40}, 2: {"lines": 200}, 3: {...}, 4: {...}}

        levels = {1: Knobs(lines=40), 2: Knobs(lines=200), 3: ..., 4: ...}   # a frozen dataclass

        def output_case(self, t: TaskBuilder) -> None:     # graded as a file or a served result
            ...fixtures first (t.add_file), truth derived from them, then t.say / t.solve and
            t.expect_output or t.expect_number
        def program_case(self, t: TaskBuilder) -> None:    # fuzz_equivalence: t.expect_program
        def corpus_case(self, t: TaskBuilder) -> None:     # adversarial_corpus: t.expect_classifier

The base's :meth:`Family.build` is the one place that looks at the sampled verifier kind: it calls
the case method for it, and ``expect_output`` / ``expect_number`` pick exact, partial-credit or
served grading. A family never branches on the kind; where a case must differ under partial credit
it asks ``t.partial_credit``. Reference programs are templates filled by
:func:`tmax.families.programs.fill` only. Values delivered through a fixture are drawn with
:mod:`tmax.families.unseen`.

Levels map to task complexity (short=1 ... intricate=4); a family may add level 0 (atomic: one or two
commands, a short instruction), the bottom rung of the curriculum. A family may also name ``variants``:
structurally different tasks (another sub-problem, output form or tool chain) that every case method
honours by reading ``t.variant``; the builder draws one per task. Everything random comes from ``t.rng``,
which is seeded by (seed, index): the same arguments give byte-identical tasks. Never iterate over
a set or rely on hash order.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from tmax import verifiers
from tmax.fixtures import deliver as deliver_value
from tmax.taxonomy import (FIXTURE_KINDS, LANGUAGES, PROGRAM_FILES, PROGRAM_VERIFIERS, TASK_COMPLEXITIES,
                           VERIFIER_KINDS, Axes, FamilyError, Persona, domains)

__all__ = ["PROGRAM_FILES", "Family", "FamilyError", "TaskBuilder", "build_task", "register"]
FIXTURE_COST = {"text_only": 0.0, "image": 0.05, "audio": 0.1, "video": 0.1, "stripped_binary": 0.1,
                "vendored_package": 0.1, "multi_service": 0.12}
VERIFIER_COST = {"exact_text": 0.0, "metric_threshold": 0.0, "adversarial_corpus": 0.05, "fuzz_equivalence": 0.05,
                 "multi_protocol": 0.08}
LEVEL_BASE = {0: 0.02, 1: 0.15, 2: 0.35, 3: 0.55, 4: 0.75}
CODE_WORDS = tuple("AMBER ANCHOR APPLE ARROW ASPEN BADGER BASALT BEACON BIRCH BISON CANYON CARBON CEDAR COBALT COMET "
                   "CORAL CRANE DELTA DUNE EAGLE EMBER FALCON FERN FJORD FOREST GARNET GLACIER GRANITE HARBOR HAWK "
                   "HAZEL HERON ISLAND IVORY JADE JASPER KESTREL LAGOON LANTERN LEMON LINDEN MAPLE MARBLE MEADOW "
                   "MERCURY NEBULA NORTH OCEAN ORBIT OTTER PEBBLE PEPPER PLANET POPLAR QUARTZ RAVEN RIVER SABLE "
                   "SAGE SALMON SPRUCE SUMMIT TIGER TULIP VALLEY VIOLET WALNUT WILLOW ZEPHYR".split())


class Family:
    name: ClassVar[str]
    domain: ClassVar[str]
    skill_types: ClassVar[tuple[str, ...]]
    primitive_skills: ClassVar[tuple[str, ...]]
    verifiers: ClassVar[tuple[str, ...]] = ("exact_text", "metric_threshold", "multi_protocol")
    fixtures: ClassVar[tuple[str, ...]] = FIXTURE_KINDS
    languages: ClassVar[tuple[str, ...]] = LANGUAGES
    command_complexities: ClassVar[tuple[str, ...]] = ("bash", "bash+code")
    task_complexities: ClassVar[tuple[str, ...]] = TASK_COMPLEXITIES
    # Reference programs by language for program-writing verifiers ("Python" required there).
    programs: ClassVar[dict[str, str]] = {}
    # One frozen dataclass instance per level (the same class for every level): the typed knobs.
    levels: ClassVar[dict[int, object]]
    # Structurally different tasks of the family (names; empty: one shape). t.variant says which.
    variants: ClassVar[tuple[str, ...]] = ()
    # A composed family chains stages of other families' kinds of work in one environment, the output of
    # one stage being the next one's input: the names of those families, in stage order (empty: not composed).
    stages: ClassVar[tuple[str, ...]] = ()

    def program_languages(self) -> tuple[str, ...]:
        langs = [lang for lang in LANGUAGES if lang in self.programs]
        if "Python" in self.programs:
            langs.append("any")
            if len(self.programs) > 1:
                langs.append("multi-language")
        return tuple(langs)

    def build(self, t: "TaskBuilder") -> None:
        """The one dispatch on the sampled verifier kind: the case method that kind grades."""
        case = CASE_METHODS[t.axes.verifier]
        getattr(self, case)(t)

    def output_case(self, t: "TaskBuilder") -> None:
        """The task graded on a file or a served result (exact_text, metric_threshold, multi_protocol)."""
        raise NotImplementedError

    def program_case(self, t: "TaskBuilder") -> None:
        """The task graded by running the agent's program on hidden inputs (fuzz_equivalence)."""
        raise NotImplementedError

    def corpus_case(self, t: "TaskBuilder") -> None:
        """The task graded by the agent's classifier on hidden corpora (adversarial_corpus)."""
        raise NotImplementedError

    @classmethod
    def validate(cls) -> None:
        where = f"family {getattr(cls, 'name', cls.__name__)}"
        doms = domains()
        if cls.domain not in doms:
            raise FamilyError(f"{where}: domain {cls.domain!r} has no taxonomy file")
        dom = doms[cls.domain]
        for s in cls.skill_types:
            if s not in dom.skill_types:
                raise FamilyError(f"{where}: skill type {s!r} is not one of {cls.domain}'s {dom.skill_types}")
        if len(cls.primitive_skills) < 3:
            raise FamilyError(f"{where}: needs at least 3 primitive skills")
        for s in cls.primitive_skills:
            if s not in dom.primitive_skills:
                raise FamilyError(f"{where}: primitive skill {s!r} is not in taxonomy/domains/{cls.domain}.toml")
        for v in cls.verifiers:
            if v not in VERIFIER_KINDS:
                raise FamilyError(f"{where}: unknown verifier kind {v!r}")
            if v in PROGRAM_VERIFIERS and "Python" not in cls.programs:
                raise FamilyError(f"{where}: verifier {v} needs a Python reference program in `programs`")
        if sorted(cls.levels) not in ([1, 2, 3, 4], [0, 1, 2, 3, 4]):
            raise FamilyError(f"{where}: levels must be exactly 1, 2, 3, 4, or 0, 1, 2, 3, 4")
        if len(set(cls.variants)) != len(cls.variants) or not all(isinstance(v, str) and v for v in cls.variants):
            raise FamilyError(f"{where}: variants must be distinct non-empty names, got {cls.variants!r}")
        if cls.stages and (len(cls.stages) < 2 or len(set(cls.stages)) != len(cls.stages)):
            raise FamilyError(f"{where}: stages must name at least 2 distinct families, got {cls.stages!r}")
        knob_types = {type(k) for k in cls.levels.values()}
        if len(knob_types) != 1:
            raise FamilyError(f"{where}: every level's knobs must be the same class, got "
                              f"{sorted(k.__name__ for k in knob_types)}")
        knobs = next(iter(cls.levels.values()))
        if not (dataclasses.is_dataclass(knobs) and type(knobs).__dataclass_params__.frozen):
            raise FamilyError(f"{where}: levels must map to instances of a frozen dataclass (typed knobs), "
                              f"got {type(knobs).__name__}")
        for v in cls.verifiers:
            case = CASE_METHODS[v]
            if getattr(cls, case) is getattr(Family, case) and cls.build is Family.build:
                raise FamilyError(f"{where}: verifier {v} is listed but the family has no {case}()")


REGISTRY: dict[str, Family] = {}


def register(cls: type[Family]) -> type[Family]:
    cls.validate()
    if 0 not in cls.levels:  # no atomic rung: the family never draws it
        cls.task_complexities = tuple(c for c in cls.task_complexities if c != TASK_COMPLEXITIES[0])
    if cls.name in REGISTRY:
        raise FamilyError(f"family {cls.name} registered twice")
    REGISTRY[cls.name] = cls()
    return cls


@dataclass
class TaskBuilder:
    """Collects one task's parts; :meth:`files` renders them as a Harbor task directory."""

    axes: Axes
    rng: random.Random
    persona: Persona
    level: int
    knobs: object  # the family's typed knobs for this level (a frozen dataclass)
    seed: int = 0
    index: int = 0
    variant: str = ""  # one of the family's variants ("" when it has none)
    body: list[str] = field(default_factory=list)
    env_files: dict[str, str] = field(default_factory=dict)  # absolute sandbox path -> text
    setup: list[str] = field(default_factory=list)
    solution: list[str] = field(default_factory=list)
    solution_files: dict[str, str] = field(default_factory=dict)
    test_files: dict[str, str] = field(default_factory=dict)
    requirements: list[str] = field(default_factory=list)
    grading: dict | None = None
    _n_values: int = 0

    # -- the environment ---------------------------------------------------------------------
    def add_file(self, path: str, content: str) -> None:
        """A fixture file placed in the environment at ``path`` (absolute, e.g. /app/data/x.csv)."""
        if not path.startswith("/"):
            raise FamilyError(f"add_file: expected an absolute path, got {path!r}")
        self.env_files[path] = content

    def add_setup(self, bash: str) -> None:
        """Commands run once at environment build time (as root, cwd /app, no network)."""
        self.setup.append(bash.strip("\n"))

    # -- the instruction and the oracle ------------------------------------------------------
    def say(self, text: str) -> None:
        self.body.append(text.strip())

    def solve(self, bash: str) -> None:
        self.solution.append(bash.strip("\n"))

    def add_solution_file(self, name: str, content: str) -> None:
        self.solution_files[name] = content

    def add_test_file(self, name: str, content: str) -> None:
        """A hidden file beside tests/test.sh (truth, corpora, reference outputs)."""
        self.test_files[name] = content

    def deliver(self, value: str, what: str) -> str:
        """Deliver ``value`` (a short code from :func:`code` or digits) to the agent through the sampled
        fixture kind. Adds the fixture and the instruction sentence; returns a shell variable (``$V1``)
        that the oracle's commands can use."""
        self._n_values += 1
        var = f"V{self._n_values}"
        deliver_value(self, self.axes.fixture, value, what, var)
        return f"${var}"

    def code(self, words: int = 2) -> str:
        """A code that survives OCR, Morse and video: capital words run together (e.g. FALCONMAPLE).
        For numbers, deliver digits only (str(n)); never mix letters and digits."""
        return "".join(self.rng.choice(CODE_WORDS) for _ in range(words))

    # -- what is graded ----------------------------------------------------------------------
    @property
    def partial_credit(self) -> bool:
        """Is the answer graded with partial credit (line F1, number error)? A case that would hand
        out credit for lines every answer shares (a constant header) leaves them out then."""
        return self.axes.verifier == "metric_threshold"

    def expect_output(self, path: str, content: str, what: str = "the result", ordered: bool = True) -> None:
        """The agent must produce ``content`` (text) at ``path``. Graded by exact_text,
        metric_threshold (F1 of matched lines, partial credit; ``ordered=False`` when the instruction
        leaves the line order open) or multi_protocol (served)."""
        verifiers.grade_output(self, path, content, what, ordered)

    def expect_number(self, path: str, value: float, rel_tol: float = 1e-6, what: str = "the value") -> None:
        """A single number at ``path``; metric_threshold gives partial credit by relative error."""
        verifiers.grade_number(self, path, value, rel_tol, what)

    def expect_program(self, spec: str, cases: list[tuple[str, str]], programs: dict[str, str]) -> None:
        """fuzz_equivalence: a program (stdin -> stdout) matching the hidden reference outputs on
        ``cases`` (seeded random inputs, made with ``t.rng``; the first two are shown as examples).
        ``programs``: reference sources by language (the family's, formatted with this task's values)."""
        verifiers.grade_program(self, spec, cases, programs)

    def expect_classifier(self, spec: str, clean: list[str], malicious: list[str], programs: dict[str, str]) -> None:
        """adversarial_corpus: a program that exits 0 on every clean item and non-zero on every
        malicious one (each item on stdin); corpora hidden in tests/."""
        verifiers.grade_classifier(self, spec, clean, malicious, programs)

    # -- rendering ---------------------------------------------------------------------------
    def difficulty(self) -> float:
        d = LEVEL_BASE[self.level] + FIXTURE_COST[self.axes.fixture] + VERIFIER_COST[self.axes.verifier]
        return round(min(1.0, d), 3)

    def instruction(self) -> str:
        parts = [self.persona.opening.strip(), *self.body, *self.requirements, self.persona.closing.strip()]
        return "\n\n".join(p for p in parts if p) + "\n"

    def files(self) -> dict[str, str]:
        if self.grading is None:
            raise FamilyError(f"family {self.axes.family}: build() set no expectation (expect_*)")
        out: dict[str, str] = {}
        setup = ["#!/bin/bash", "# Environment setup: runs once at build time (root, cwd /app, no network).",
                 "set -euo pipefail", "mkdir -p /app"]
        if self.env_files:
            setup.append("cp -a /environment/files/. /")
        setup += self.setup
        out["environment/setup.sh"] = "\n".join(setup) + "\n"
        for path, content in sorted(self.env_files.items()):
            out["environment/files" + path] = content
        out["solution/solve.sh"] = "\n".join(["#!/bin/bash", "# Reference solution.", "set -euo pipefail",
                                              "cd /app", *self.solution]) + "\n"
        for name, content in sorted(self.solution_files.items()):
            out[f"solution/{name}"] = content
        for name, content in sorted(self.test_files.items()):
            out[f"tests/{name}"] = content
        return out

    def metadata(self) -> dict:
        meta = {"image": "default", "seed": self.seed, "index": self.index, "level": self.level,
                "variant": self.variant, "difficulty": self.difficulty(), "knobs": json.dumps(knobs_dict(self.knobs), sort_keys=True)}
        for k, v in self.axes.to_json().items():
            meta[k] = v
        return meta


CASE_METHODS = {"exact_text": "output_case", "metric_threshold": "output_case", "multi_protocol": "output_case",
                "fuzz_equivalence": "program_case", "adversarial_corpus": "corpus_case"}


def knobs_dict(knobs: object) -> dict:
    """The knobs as plain JSON-able values (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(knobs)))


def level_of(task_complexity: str) -> int:
    return TASK_COMPLEXITIES.index(task_complexity)


def pick_variant(family: Family, seed: int, index: int) -> str:
    """The variant task (seed, index) of ``family`` builds: drawn on a stream of its own, so adding
    variants to a family changes no other draw."""
    if not family.variants:
        return ""
    return random.Random(f"tmax:{seed}:{index}:variant:{family.name}").choice(family.variants)


def build_task(family: Family, axes: Axes, seed: int, index: int, dest: Path, variant: str | None = None) -> TaskBuilder:
    """Run ``family.build`` for ``axes`` and write the task directory at ``dest``. ``variant``: one of the
    family's variants (default: drawn from (seed, index))."""
    from tmax.task import write_task

    dom = domains()[axes.domain]
    persona = next(p for p in dom.personas if p.role == axes.persona)
    level = level_of(axes.task_complexity)
    rng = random.Random(f"tmax:{seed}:{index}:build:{family.name}")
    if variant is None:
        variant = pick_variant(family, seed, index)
    elif variant not in family.variants:
        raise FamilyError(f"family {family.name}: unknown variant {variant!r}; expected one of {family.variants}")
    t = TaskBuilder(axes=axes, rng=rng, persona=persona, level=level, knobs=family.levels[level],
                    seed=seed, index=index, variant=variant)
    family.build(t)
    files = t.files()
    if dest.exists():  # a rebuild must not keep files the new build no longer writes
        import shutil

        shutil.rmtree(dest)
    timeout = 600.0 + 300.0 * max(0, level - 1)
    write_task(dest, name=dest.name, instruction=t.instruction(), files=files, metadata=t.metadata(),
               agent_timeout=timeout, verifier_timeout=300.0)
    return t
