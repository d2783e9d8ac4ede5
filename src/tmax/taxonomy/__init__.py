"""The nine axes as data, the corpus kinds, and the sampler.

Domain files (``taxonomy/domains/*.toml``) hold each domain's skill types, primitive skills and
personas. The global axes (languages with the paper's weights, complexities, fixture and verifier
kinds) are below. :func:`sample` draws one coherent combination from (seed, index) alone, so any
item of a corpus is random-access and reproducible.

Compatibility rules (each keeps a drawn task realisable and honest):

1. A family must exist for (domain, skill type): families declare the skill types they realise.
2. The verifier kind is drawn by the corpus kind's weights among the kinds that some family of that
   (domain, skill type) supports; then the family among those that support it.
3. The fixture kind is drawn among the kinds the family supports (by default all seven: fixtures
   are channels that deliver a piece of information, orthogonal to what the task computes).
4. Command complexity follows the verifier and fixture: a running service (multi_protocol verifier
   or multi_service fixture) needs "bash+code+services"; a program graded by fuzzing or by an
   adversarial corpus needs at least "bash+code"; otherwise drawn among the family's.
5. Language: a program-writing task (fuzz_equivalence, adversarial_corpus) draws among the
   languages the family has reference programs for, by the paper's weights; a bash-only task is
   Bash; any other draws by weight among the family's languages.
6. Primitive skills: 3 to 5 of the skills the family realises, so the recorded skills are real.
7. Persona: one of the domain's personas, who voices the instruction.
"""

from __future__ import annotations

import math
import random
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

DOMAINS = ("security", "software_engineering", "file_operations", "data_querying", "data_science", "debugging",
           "scientific_computing", "data_processing", "system_administration")
LANGUAGE_WEIGHTS = {"Python": 0.35, "C": 0.15, "Bash": 0.15, "C++": 0.10, "Rust": 0.07, "Go": 0.07,
                    "multi-language": 0.06, "any": 0.05}
LANGUAGES = tuple(LANGUAGE_WEIGHTS)
# Task complexity is the level: atomic = 0 (one or two commands, the bottom of the curriculum) ... intricate = 4.
# The corpus kinds draw the recipe's four (RECIPE_COMPLEXITIES); atomic tasks come from a calibration or an
# explicit level.
TASK_COMPLEXITIES = ("atomic", "short", "moderate", "complex", "intricate")
RECIPE_COMPLEXITIES = TASK_COMPLEXITIES[1:]
COMMAND_COMPLEXITIES = ("bash", "bash+code", "bash+code+services")
FIXTURE_KINDS = ("text_only", "image", "audio", "video", "stripped_binary", "vendored_package", "multi_service")
VERIFIER_KINDS = ("exact_text", "metric_threshold", "adversarial_corpus", "fuzz_equivalence", "multi_protocol")
PROGRAM_VERIFIERS = ("adversarial_corpus", "fuzz_equivalence")
# The file a program in each language is written to, in the task's /app.
PROGRAM_FILES = {"Python": "solution.py", "Bash": "solution.sh", "C": "solution.c", "C++": "solution.cpp",
                 "Rust": "solution.rs", "Go": "solution.go"}
CORPUS_KINDS = ("legacy", "sft_v2", "rl_v2", "balanced")
DOMAINS_DIR = Path(__file__).parent / "domains"


@dataclass(frozen=True)
class Persona:
    role: str
    opening: str
    closing: str


@dataclass(frozen=True)
class Domain:
    name: str
    skill_types: tuple[str, ...]
    primitive_skills: tuple[str, ...]
    personas: tuple[Persona, ...]


@dataclass(frozen=True)
class Axes:
    domain: str
    skill_type: str
    primitive_skills: tuple[str, ...]
    persona: str
    language: str
    task_complexity: str
    command_complexity: str
    fixture: str
    verifier: str
    family: str

    def to_json(self) -> dict:
        d = asdict(self)
        d["primitive_skills"] = list(self.primitive_skills)
        return d


class TaxonomyError(ValueError):
    pass


class FamilyError(ValueError):
    """A family's case broke a rule (the family's fault, never the agent's): raised while building."""


def load_domain(path: Path) -> Domain:
    try:
        doc = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, OSError) as e:
        raise TaxonomyError(f"{path}: {e}") from None
    try:
        personas = tuple(Persona(p["role"], p["opening"], p["closing"]) for p in doc["personas"])
        d = Domain(doc["name"], tuple(doc["skill_types"]), tuple(doc["primitive_skills"]), personas)
    except (KeyError, TypeError) as e:
        raise TaxonomyError(f"{path}: missing or malformed field {e}") from None
    if d.name not in DOMAINS:
        raise TaxonomyError(f"{path}: name: expected one of {DOMAINS}, got {d.name!r}")
    for field, lo, hi, values in (("skill_types", 4, 7, d.skill_types), ("primitive_skills", 20, 40, d.primitive_skills),
                                  ("personas", 6, 18, d.personas)):
        if not lo <= len(values) <= hi or len(set(values)) != len(values):
            raise TaxonomyError(f"{path}: {field}: expected {lo}-{hi} distinct entries, got {len(values)}")
    return d


_DOMAINS: dict[str, Domain] = {}


def domains() -> dict[str, Domain]:
    if not _DOMAINS:
        for name in DOMAINS:
            path = DOMAINS_DIR / f"{name}.toml"
            if path.exists():
                _DOMAINS[name] = load_domain(path)
    return _DOMAINS


# -- corpus kinds ---------------------------------------------------------------------------------

def _legacy_vs_new(legacy: str, new: Sequence[str], m: float | None) -> dict[str, float]:
    """Legacy weight 1, each new value M/K (P(new) = M/(M+1)); M=None: new values only, uniform."""
    if m is None:
        return {v: 1.0 / len(new) for v in new}
    return {legacy: 1.0, **{v: m / len(new) for v in new}}


def kind_weights(kind: str) -> dict[str, dict[str, float]]:
    """Per-axis weights for a corpus kind: the recipe's legacy, SFT-v2 and RL-v2 mixes (legacy values weigh
    1, the new ones M in all), and a uniform balanced one."""
    if kind not in CORPUS_KINDS:
        raise TaxonomyError(f"unknown corpus kind {kind!r}; expected one of {', '.join(CORPUS_KINDS)}")
    legacy_cx = RECIPE_COMPLEXITIES[:3]
    if kind == "legacy":
        return {"verifier": {"exact_text": 1.0}, "fixture": {"text_only": 1.0},
                "task_complexity": {c: 1.0 for c in legacy_cx}}
    if kind == "balanced":
        return {"verifier": {v: 1.0 for v in VERIFIER_KINDS}, "fixture": {f: 1.0 for f in FIXTURE_KINDS},
                "task_complexity": {c: 1.0 for c in RECIPE_COMPLEXITIES}}
    m_cx = 2.0 if kind == "sft_v2" else 3.0
    m_vf = 2.0 if kind == "sft_v2" else None  # rl_v2: verifier and fixture always non-legacy
    return {"verifier": _legacy_vs_new("exact_text", VERIFIER_KINDS[1:], m_vf),
            "fixture": _legacy_vs_new("text_only", FIXTURE_KINDS[1:], m_vf),
            "task_complexity": {**{c: 1.0 / 3 for c in legacy_cx}, "intricate": m_cx}}


def _pick(rng: random.Random, weights: dict[str, float], allowed: Iterable[str] | None = None) -> str:
    allowed_set = None if allowed is None else set(allowed)
    items = [(k, w) for k, w in weights.items() if w > 0 and (allowed_set is None or k in allowed_set)]
    if not items:
        raise TaxonomyError("no value allowed")
    total = sum(w for _, w in items)
    x = rng.random() * total
    for k, w in items:
        x -= w
        if x < 0:
            return k
    return items[-1][0]


def rng_for(seed: int, index: int, salt: str = "") -> random.Random:
    """A generator that depends on (seed, index) only (string seeding is stable across runs)."""
    return random.Random(f"tmax:{seed}:{index}:{salt}")


def sample(seed: int, index: int, kind: str, families: Sequence) -> Axes:
    """Draw item ``index`` of a corpus. ``families``: registered family objects (see families.base)."""
    rng = rng_for(seed, index, "axes")
    w = kind_weights(kind)
    doms = domains()
    by_domain = {d: [f for f in families if f.domain == d] for d in DOMAINS}
    domain_names = [d for d in DOMAINS if d in doms and by_domain[d]]
    domain = rng.choice(domain_names)
    dom = doms[domain]
    skill_types = [s for s in dom.skill_types if any(s in f.skill_types for f in by_domain[domain])]
    skill_type = rng.choice(skill_types)
    cands = [f for f in by_domain[domain] if skill_type in f.skill_types]
    supported = {v for f in cands for v in f.verifiers}
    if not supported & set(w["verifier"]):  # the kind's verifiers are not realisable here: widen
        verifier = _pick(rng, {v: 1.0 for v in VERIFIER_KINDS}, supported)
    else:
        verifier = _pick(rng, w["verifier"], supported)
    cands = sorted((f for f in cands if verifier in f.verifiers), key=lambda f: f.name)
    fam = rng.choice(cands)
    fixture_w = w["fixture"] if set(w["fixture"]) & set(fam.fixtures) else {f: 1.0 for f in FIXTURE_KINDS}
    fixture = _pick(rng, fixture_w, fam.fixtures)
    task_complexity = _pick(rng, w["task_complexity"], fam.task_complexities)
    return complete_axes(rng, fam, skill_type, verifier, fixture, task_complexity)


def complete_axes(rng: random.Random, fam, skill_type: str, verifier: str, fixture: str, task_complexity: str) -> Axes:
    """The axes that follow from a family and its drawn skill type, verifier, fixture and complexity:
    the command complexity and language they allow, a persona and the primitive skills. The one place
    these rules live (the corpus sampler and forced builds both end here)."""
    if verifier == "multi_protocol" or fixture == "multi_service":
        command = COMMAND_COMPLEXITIES[2]
    elif verifier in PROGRAM_VERIFIERS:
        command = rng.choice([c for c in COMMAND_COMPLEXITIES[1:] if c in fam.command_complexities]
                             or [COMMAND_COMPLEXITIES[1]])
    else:
        command = rng.choice([c for c in fam.command_complexities if c != COMMAND_COMPLEXITIES[2]]
                             or [COMMAND_COMPLEXITIES[0]])
    if verifier in PROGRAM_VERIFIERS:
        language = _pick(rng, LANGUAGE_WEIGHTS, fam.program_languages())
    elif command == COMMAND_COMPLEXITIES[0]:
        language = "Bash"
    else:
        language = _pick(rng, LANGUAGE_WEIGHTS, fam.languages)
    persona = rng.choice(domains()[fam.domain].personas).role
    k = min(len(fam.primitive_skills), rng.randint(3, 5))
    skills = tuple(sorted(rng.sample(list(fam.primitive_skills), k)))
    return Axes(domain=fam.domain, skill_type=skill_type, primitive_skills=skills, persona=persona, language=language,
                task_complexity=task_complexity, command_complexity=command, fixture=fixture, verifier=verifier,
                family=fam.name)


def balance(values: Iterable[str], n_buckets: int | None = None) -> float:
    """exp(H)/N over N buckets (default: the distinct values seen); 1 = uniform."""
    counts = Counter(values)
    total = sum(counts.values())
    if not total:
        return 0.0
    n = n_buckets or len(counts)
    h = -sum(c / total * math.log(c / total) for c in counts.values())
    return math.exp(h) / n
