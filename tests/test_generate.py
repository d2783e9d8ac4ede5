"""Corpus generation: byte-reproducible, manifest complete, near-duplicates found, every family
builds at every level, and generated tasks pass the gate in the default image."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tmax.families import LOAD_ERRORS, build_task, load_all
from tmax.gate import check_many
from tmax.generate import axes_for_family, generate_corpus, near_duplicates, prune_failed, tree_digest
from tmax.images import ImageError, get_environment


@pytest.fixture(scope="module")
def default_image():
    try:
        return get_environment("default", build=False)
    except ImageError:
        if os.geteuid() != 0:
            pytest.skip("the default image is not built and building needs root")
        return get_environment("default", build=True)


def test_no_family_fails_to_load():
    load_all()
    assert LOAD_ERRORS == {}


def test_generation_is_byte_identical(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    generate_corpus(12, 3, "rl_v2", a, jobs=2)
    generate_corpus(12, 3, "rl_v2", b, jobs=1)
    assert tree_digest(a) == tree_digest(b)
    c = tmp_path / "c"
    generate_corpus(12, 4, "rl_v2", c, jobs=2)
    assert tree_digest(a) != tree_digest(c)


def test_manifest_has_every_axis(tmp_path):
    summary = generate_corpus(10, 0, "sft_v2", tmp_path, jobs=2)
    lines = [json.loads(x) for x in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    assert len(lines) == summary["written"] > 0
    for m in lines:
        for key in ("domain", "skill_type", "primitive_skills", "persona", "language", "task_complexity",
                    "command_complexity", "fixture", "verifier", "family", "seed", "difficulty", "env_hash"):
            assert key in m, key
        assert (tmp_path / m["task"] / "task.toml").exists()
        assert 0.0 <= m["difficulty"] <= 1.0


def test_near_duplicates_are_found(tmp_path):
    generate_corpus(3, 0, "balanced", tmp_path / "c", jobs=1)
    dirs = sorted(p for p in (tmp_path / "c").iterdir() if p.is_dir())
    clone = tmp_path / "c" / (dirs[0].name + "-copy")
    shutil.copytree(dirs[0], clone)
    dups = near_duplicates(dirs + [clone])
    assert dups == {clone.name: dirs[0].name}


def test_siblings_that_differ_in_numbers_or_hidden_data_are_near_duplicates(tmp_path):
    """Compared on what the agent sees (instruction, environment files), digits masked: a sibling
    whose numbers, ports and hidden test data all differ is still found."""
    import re

    generate_corpus(2, 5, "balanced", tmp_path / "c", jobs=1)
    dirs = sorted(p for p in (tmp_path / "c").iterdir() if p.is_dir())
    sib = tmp_path / "c" / (dirs[0].name + "-sibling")
    shutil.copytree(dirs[0], sib)
    for f in [sib / "instruction.md", *(sib / "environment").rglob("*"), *(sib / "tests").rglob("*")]:
        if f.is_file():
            text = f.read_text(errors="replace")
            f.write_text(re.sub(r"\d", lambda m: str((int(m.group()) + 3) % 10), text))
    for f in (sib / "tests").rglob("*"):
        if f.is_file():
            f.write_text(f.read_text() + "\n" + "hidden case data that differs entirely " * 200)
    assert near_duplicates(dirs + [sib]) == {sib.name: dirs[0].name}
    summary = generate_corpus(3, 5, "balanced", tmp_path / "d", jobs=1)
    assert "near_duplicate_siblings" in summary


def test_prune_removes_failed_tasks(tmp_path):
    generate_corpus(3, 0, "balanced", tmp_path, jobs=1)
    names = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    gate = tmp_path / "gate.jsonl"
    gate.write_text("".join(json.dumps({"task": str(tmp_path / n), "ok": i != 1}) + "\n" for i, n in enumerate(names)))
    assert prune_failed(tmp_path, gate) == [names[1]]
    assert not (tmp_path / names[1]).exists()
    assert names[1] not in (tmp_path / "manifest.jsonl").read_text()


@pytest.mark.timeout(1500)
def test_every_family_builds_at_every_level_reproducibly(tmp_path):
    for name, fam in sorted(load_all().items()):
        for level in (1, 2, 3, 4):
            for seed in range(2):
                axes = axes_for_family(fam, seed, level, level=level)
                d = tmp_path / f"{name}-{level}-{seed}"
                build_task(fam, axes, seed, level, d)
                first = tree_digest(d)
                build_task(fam, axes, seed, level, d)
                assert tree_digest(d) == first, f"{d.name} is not reproducible"
                instruction = (d / "instruction.md").read_text()
                assert len(instruction) > 200


def _family_tasks(out: Path, per_family: int, seeds: int) -> list[Path]:
    dirs = []
    for idx, (name, fam) in enumerate(sorted(load_all().items())):
        combos = [(fx, vf) for vf in fam.verifiers for fx in fam.fixtures]
        i = 0
        levels = (1, 2, 3, 4) if per_family >= 4 else tuple(1 + (idx + k) % 4 for k in range(per_family))
        for level in levels:
            for seed in range(seeds):
                fx, vf = combos[(level * 7 + seed * 3 + i + len(name)) % len(combos)]
                i += 1
                axes = axes_for_family(fam, seed, level, level=level, fixture=fx, verifier=vf)
                d = out / f"{name}-L{level}-s{seed}"
                build_task(fam, axes, seed, level, d)
                dirs.append(d)
    return dirs


def _gate_all(dirs: list[Path]) -> None:
    failures = [f"{Path(r.task).name}: {r.reason}" for r in check_many(dirs, repeat=1, jobs=2) if not r.ok]
    assert not failures, "\n".join(failures)


def test_one_task_per_family_passes_the_gate(tmp_path, default_image):
    _gate_all(_family_tasks(tmp_path, per_family=1, seeds=1))


@pytest.mark.slow
def test_registry_every_family_every_level_three_seeds_pass_the_gate(tmp_path, default_image):
    _gate_all(_family_tasks(tmp_path, per_family=4, seeds=3))
