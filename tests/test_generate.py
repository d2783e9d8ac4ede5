"""Corpus generation: byte-reproducible, manifest complete, near-duplicates found, every family
builds at every level, and generated tasks pass the gate in the default image."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tmax.families import LOAD_ERRORS, load_all
from tmax.families.check import build_case, build_twice, cases, check_families
from tmax.gate import check_many, stream_jsonl
from tmax.generate import (MAX_DRAW_FACTOR, build_family_tasks, gate_corpus, generate_corpus, near_duplicates,
                           prune_failed, tree_digest)


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


@pytest.fixture
def number_swapped_family():
    """A real family, registered for one test, whose tasks differ only in one drawn number: every draw of
    it after the first is a near-duplicate. (Generation's pool forks, so its workers see it too.)"""
    from dataclasses import dataclass

    from tmax.families.base import REGISTRY, Family, register

    @dataclass(frozen=True)
    class Knobs:
        lines: int

    class NumberSwapped(Family):
        name = "number_swapped_line_count"
        domain = "data_processing"
        skill_types = ("Text Processing",)
        primitive_skills = ("log parsing", "filtering by field", "aggregation")
        verifiers = ("exact_text",)
        fixtures = ("text_only",)
        levels = {lv: Knobs(lines=200 + lv) for lv in range(5)}  # the file outweighs the persona text

        def output_case(self, t):
            n = t.rng.randrange(10**6)
            t.add_file("/app/data/events.log", "".join(f"event {_word(i)} status {_word(i * 7)} code {n}\n"
                                                          for i in range(t.knobs.lines)))
            t.say(f"Count the lines of /app/data/events.log that end in the code {n} and write the count to "
                  "/app/out/count.txt, one number followed by a newline. Only that file is read.")
            t.solve(f"mkdir -p /app/out\ngrep -c ' {n}$' /app/data/events.log > /app/out/count.txt")
            t.expect_output("/app/out/count.txt", f"{t.knobs.lines}\n", "the count")

    def _word(i):  # the same words in every task (digits are masked when tasks are compared)
        return "abcdefghijklmnopqrstuvwxyz"[i % 26] + "aeiou"[i // 26 % 5] + "klmnp"[i // 130 % 5]

    register(NumberSwapped)
    yield NumberSwapped.name
    del REGISTRY[NumberSwapped.name]


def test_near_duplicates_are_replaced_by_further_draws_up_to_a_bound(tmp_path, number_swapped_family):
    """A corpus asked for n tasks gets n: indices past n are drawn until n distinct tasks are kept. A
    family whose tasks differ only in a number needs refills in a mix, and alone it stops at
    MAX_DRAW_FACTOR * n draws instead of drawing forever."""
    def band(*names):
        return {"band": [0.2, 0.8], "families": {n: {"0": {"estimate": 0.5}} for n in names}}

    mixed = generate_corpus(8, 0, "legacy", tmp_path / "mixed", jobs=2, calibration=band(
        number_swapped_family, "archive_member_audit"), band_only=True)
    assert mixed["written"] == 8 and mixed["drawn"] > 8 and mixed["near_duplicates"] > 0
    assert mixed["drawn"] == mixed["written"] + mixed["near_duplicates"] + len(mixed["errors"])
    assert set(mixed["near_duplicate_siblings"]) == {number_swapped_family.replace("_", "-")}
    rows = [json.loads(x) for x in (tmp_path / "mixed" / "manifest.jsonl").read_text().splitlines()]
    assert sorted(r["task"] for r in rows) == sorted(p.name for p in (tmp_path / "mixed").iterdir() if p.is_dir())
    assert not set(mixed["duplicates"]) & {r["task"] for r in rows}
    alone = generate_corpus(8, 0, "legacy", tmp_path / "alone", jobs=2, calibration=band(number_swapped_family),
                            band_only=True)
    assert alone["drawn"] == MAX_DRAW_FACTOR * 8 and alone["written"] == 1 and not alone["errors"]


def test_a_build_is_timed_by_its_own_cpu_so_waiting_on_a_loaded_machine_is_not_cut():
    """The build budget counts the build's CPU: waiting (as on a loaded machine) does not use it up, a
    busy loop does; a wait past the wall-clock backstop is cut too."""
    import time

    from tmax.generate import BuildTimeout, _time_limit

    with _time_limit(0.2, 5):
        time.sleep(0.6)  # three times the CPU budget in wall time, without using the CPU
    with pytest.raises(BuildTimeout, match="0.2 s of CPU"):
        with _time_limit(0.2, 5):
            while True:
                pass
    with pytest.raises(BuildTimeout, match="longer than 0.5 s$"):
        with _time_limit(5, 0.5):
            time.sleep(3)


def test_benchmark_tasks_pin_the_first_variant_so_new_variants_leave_them_alone(tmp_path):
    def variants(first_variant: bool) -> list[str]:
        dirs = build_family_tasks(tmp_path / str(first_variant), ["git_leak_forensics"], range(4),
                                  first_variant=first_variant)
        return [next(ln for ln in (d / "task.toml").read_text().splitlines() if ln.startswith("variant ="))
                for d in dirs]

    first = load_all()["git_leak_forensics"].variants[0]
    assert variants(True) == [f'variant = "{first}"'] * 4
    assert len(set(variants(False))) > 1  # generation's own draw mixes them


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
        for case in cases(fam, None, seeds=2):  # every level the family offers, 0 included
            d = tmp_path / case.dir_name
            assert build_twice(fam, case, d), f"{d.name} is not reproducible"
            instruction = (d / "instruction.md").read_text()
            assert len(instruction) > 200


def test_family_cases_cycle_the_family_s_own_kinds():
    fam = load_all()["log_error_paths"]
    built = cases(fam, [1, 2, 3, 4], seeds=3)
    assert [(c.level, c.seed) for c in built] == [(lv, s) for lv in (1, 2, 3, 4) for s in range(3)]
    assert all(c.fixture in fam.fixtures and c.verifier in fam.verifiers for c in built)
    assert len({c.dir_name for c in built}) == len(built)  # no build overwrites another
    assert len({(c.fixture, c.verifier) for c in built}) > 1
    shifted = cases(fam, [1], seeds=1, start=1)[0]
    assert (shifted.fixture, shifted.verifier) != (built[0].fixture, built[0].verifier)


def _family_tasks(out: Path, per_family: int, seeds: int) -> list[Path]:
    dirs = []
    for idx, (name, fam) in enumerate(sorted(load_all().items())):
        levels = [1, 2, 3, 4] if per_family >= 4 else [1 + (idx + k) % 4 for k in range(per_family)]
        for case in cases(fam, levels, seeds, start=len(name)):  # each family starts at a different pair
            build_case(fam, case, out / case.dir_name)
            dirs.append(out / case.dir_name)
    return dirs


def _gate_all(dirs: list[Path]) -> None:
    failures = [f"{Path(r.task).name}: {r.reason}" for r in check_many(dirs, repeat=1, jobs=2) if not r.ok]
    assert not failures, "\n".join(failures)


@pytest.mark.timeout(1500)  # grows with the registry: about 6 s of gating per family on 2 cores
def test_one_task_per_family_passes_the_gate(tmp_path, default_image):
    _gate_all(_family_tasks(tmp_path, per_family=1, seeds=1))


@pytest.mark.slow
def test_registry_every_family_every_level_three_seeds_pass_the_gate(tmp_path, default_image):
    _gate_all(_family_tasks(tmp_path, per_family=4, seeds=3))


def test_jsonl_lines_are_on_disk_as_each_record_passes(tmp_path):
    out = tmp_path / "r.jsonl"
    seen = []
    for rec in stream_jsonl(({"i": i, "b": "x"} for i in range(3)), out):
        seen.append(rec)
        assert len(out.read_text().splitlines()) == len(seen)  # flushed before the next one is made
    assert [json.loads(x) for x in out.read_text().splitlines()] == seen


def test_gate_corpus_prunes_what_fails_and_keeps_the_reasons(tmp_path, default_image):
    corpus = tmp_path / "c"
    fam = load_all()["log_error_paths"]  # quick to gate
    for case in cases(fam, [1], seeds=2):
        build_case(fam, case, corpus / case.dir_name)
    good, broken = sorted(p.name for p in corpus.iterdir())
    (corpus / "manifest.jsonl").write_text("".join(json.dumps({"task": n}) + "\n" for n in (good, broken)))
    (corpus / broken / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")  # the oracle does nothing
    results, dropped = gate_corpus(corpus, repeat=1, jobs=2)
    assert dropped == [broken]
    assert [Path(r.task).name for r in results] == [good, broken] and results[0].ok and not results[1].ok
    assert sorted(p.name for p in corpus.iterdir() if p.is_dir()) == [good]
    assert [json.loads(x)["task"] for x in (corpus / "manifest.jsonl").read_text().splitlines()] == [good]
    lines = {Path(json.loads(x)["task"]).name: json.loads(x) for x in (corpus / "gate.jsonl").read_text().splitlines()}
    assert lines[good]["ok"] and "oracle run 1 scored 0" in lines[broken]["reason"]


def test_families_check_builds_twice_gates_and_checks_the_channel(tmp_path, default_image):
    fam = load_all()["log_error_paths"]
    found = check_families([fam], tmp_path, levels=[1], seeds=1, repeat=1, jobs=2)
    assert found.ok, found.problems + [r.reason for r in found.gate]
    assert [d.name for d in found.dirs] == [c.dir_name for c in cases(fam, [1], 1)]
    assert len((tmp_path / "gate.jsonl").read_text().splitlines()) == 1
    channel = [json.loads(x) for x in (tmp_path / "channel-skip.jsonl").read_text().splitlines()]
    assert [c["ok"] for c in channel] == [True] and channel[0]["task"] == str(found.dirs[0])
