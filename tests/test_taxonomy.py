"""The nine axes as data, corpus-kind weights, the sampler's determinism, coverage and rules."""

from __future__ import annotations

from collections import Counter

import pytest

from tmax.families import load_all
from tmax.taxonomy import (COMMAND_COMPLEXITIES, DOMAINS, FIXTURE_KINDS, LANGUAGE_WEIGHTS, PROGRAM_VERIFIERS,
                           VERIFIER_KINDS, balance, domains, kind_weights, sample)


@pytest.fixture(scope="module")
def families():
    return sorted(load_all().values(), key=lambda f: f.name)


def test_language_weights_are_the_papers():
    assert LANGUAGE_WEIGHTS["Python"] == 0.35 and LANGUAGE_WEIGHTS["any"] == 0.05
    assert abs(sum(LANGUAGE_WEIGHTS.values()) - 1.0) < 1e-9


def test_domain_files_respect_cardinalities():
    for name, dom in domains().items():
        assert name in DOMAINS
        assert 4 <= len(dom.skill_types) <= 7
        assert 20 <= len(dom.primitive_skills) <= 40
        assert 6 <= len(dom.personas) <= 18
        assert all(p.opening and p.closing for p in dom.personas)


def test_kind_weights_follow_the_formula():
    sft = kind_weights("sft_v2")
    new = sum(w for k, w in sft["verifier"].items() if k != "exact_text")
    assert abs(new / (new + sft["verifier"]["exact_text"]) - 2 / 3) < 1e-9  # P(new) = M/(M+1), M=2
    rl = kind_weights("rl_v2")
    assert "exact_text" not in rl["verifier"] and "text_only" not in rl["fixture"]
    cx = rl["task_complexity"]
    assert abs(cx["intricate"] / sum(cx.values()) - 0.75) < 1e-9  # M=3
    legacy = kind_weights("legacy")
    assert set(legacy["verifier"]) == {"exact_text"} and "intricate" not in legacy["task_complexity"]
    with pytest.raises(ValueError):
        kind_weights("nope")


def test_sampling_is_random_access_and_reproducible(families):
    a = [sample(7, i, "rl_v2", families) for i in range(50)]
    b = [sample(7, i, "rl_v2", families) for i in reversed(range(50))][::-1]
    assert a == b
    assert a != [sample(8, i, "rl_v2", families) for i in range(50)]


def test_sampled_axes_are_coherent(families):
    by_name = {f.name: f for f in families}
    for i in range(400):
        ax = sample(0, i, "balanced", families)
        fam = by_name[ax.family]
        assert ax.domain == fam.domain and ax.skill_type in fam.skill_types
        assert ax.verifier in fam.verifiers and ax.fixture in fam.fixtures
        assert set(ax.primitive_skills) <= set(fam.primitive_skills) and 3 <= len(ax.primitive_skills) <= 5
        if ax.verifier == "multi_protocol" or ax.fixture == "multi_service":
            assert ax.command_complexity == COMMAND_COMPLEXITIES[2]
        if ax.verifier in PROGRAM_VERIFIERS:
            assert ax.command_complexity != COMMAND_COMPLEXITIES[0]
            assert ax.language in fam.program_languages()
        if ax.command_complexity == COMMAND_COMPLEXITIES[0]:
            assert ax.language == "Bash"
        assert ax.persona in [p.role for p in domains()[ax.domain].personas]


def test_rl_v2_never_draws_legacy_fixture_or_verifier(families):
    axes = [sample(1, i, "rl_v2", families) for i in range(300)]
    assert not any(a.fixture == "text_only" for a in axes)
    assert Counter(a.verifier for a in axes)["exact_text"] == 0


def test_balance_score():
    assert balance(["a", "b", "c"] * 10) == pytest.approx(1.0)
    assert balance(["a"] * 9 + ["b"], n_buckets=2) < 0.8
    assert balance([]) == 0.0


def test_every_skill_type_has_a_family(families):
    for name, dom in domains().items():
        realised = {s for f in families if f.domain == name for s in f.skill_types}
        missing = set(dom.skill_types) - realised
        assert not missing, f"{name}: no family realises {sorted(missing)}"


def test_kinds_present_in_registry(families):
    assert {v for f in families for v in f.verifiers} == set(VERIFIER_KINDS)
    assert {x for f in families for x in f.fixtures} == set(FIXTURE_KINDS)
