"""Measured difficulty: pass rates from real solve jobs per (family, variant, level), and a corpus
generated for a band, whose manifest carries the measured figure beside the formula's."""

from __future__ import annotations

import json

import pytest

from tmax.calibrate import adjust, estimates, measure
from tmax.families import load_all
from tmax.generate import generate_corpus
from tmax.jobs import JobSpec, solve
from tmax.taxonomy import rng_for, sample


def _manifest(corpus) -> list[dict]:
    return [json.loads(x) for x in (corpus / "manifest.jsonl").read_text().splitlines() if x]


def test_calibrate_measures_real_jobs_and_generation_targets_the_band(tmp_path, default_image, bwrap):
    corpus = tmp_path / "corpus"
    generate_corpus(4, 3, "rl_v2", corpus, jobs=2)
    dirs = sorted(p for p in corpus.iterdir() if (p / "task.toml").exists())
    solve(JobSpec(corpus=dirs, policy="oracle", k=1, jobs=2), tmp_path / "oracle")
    solve(JobSpec(corpus=dirs, policy="nop", k=1, jobs=2), tmp_path / "nop")
    table = measure([tmp_path / "oracle", tmp_path / "nop"])
    for row in _manifest(corpus):
        cell = table[row["family"]][str(row["level"])]
        assert cell["trials"] >= 2 and cell["passed"] == cell["trials"] // 2  # the oracle's half
        assert cell["estimate"] == pytest.approx((cell["passed"] + 1) / (cell["trials"] + 2))
        if row["variant"]:
            assert table[f"{row['family']}/{row['variant']}"][str(row["level"])]["trials"] >= 2

    # Measured: level 2 is in the band for every family, the others are not; generation lands there.
    band = [0.3, 0.7]
    calibration = {"band": band, "families": {
        name: {str(lv): {"estimate": 0.5 if lv == 2 else (0.95 if lv < 2 else 0.05)} for lv in fam.levels}
        for name, fam in load_all().items()}}
    out = tmp_path / "banded"
    generate_corpus(8, 5, "rl_v2", out, jobs=2, calibration=calibration)
    rows = _manifest(out)
    assert len(rows) >= 6
    assert all(r["level"] == 2 and r["measured_pass_rate"] == 0.5 for r in rows)


def test_a_variant_measured_on_its_own_steers_its_own_level():
    fams = sorted(load_all().values(), key=lambda f: f.name)
    axes = sample(0, 0, "rl_v2", fams)
    calibration = {"band": [0.4, 0.6], "families": {
        axes.family: {"1": {"estimate": 0.5}, "3": {"estimate": 0.0}},
        f"{axes.family}/hard": {"1": {"estimate": 0.0}, "3": {"estimate": 0.5}}}}
    allowed = ("short", "moderate", "complex", "intricate")
    assert adjust(axes, calibration, rng_for(0, 0), allowed).task_complexity == "short"
    assert adjust(axes, calibration, rng_for(0, 0), allowed, "hard").task_complexity == "complex"
    assert estimates(calibration, axes.family, "unmeasured") == calibration["families"][axes.family]


def test_band_only_draws_the_families_measured_in_the_band_and_refuses_an_empty_band(tmp_path):
    fams = load_all()
    with_level_0 = [name for name in sorted(fams) if 0 in fams[name].levels]
    chosen = with_level_0[:3]
    calibration = {"band": [0.2, 0.8], "families": {
        **{name: {"0": {"estimate": 0.5}, "1": {"estimate": 0.0}} for name in chosen},
        with_level_0[3]: {"0": {"estimate": 1.0}, "1": {"estimate": 0.0}}}}  # measured, never in band
    out = tmp_path / "band"
    generate_corpus(9, 0, "legacy", out, jobs=2, calibration=calibration, band_only=True)
    rows = _manifest(out)
    assert len(rows) >= 6
    assert {r["family"] for r in rows} <= set(chosen)
    assert all(r["level"] == 0 and r["measured_pass_rate"] == 0.5 for r in rows)
    nowhere = {"band": [0.2, 0.8], "families": {chosen[0]: {"0": {"estimate": 0.0}}}}
    with pytest.raises(ValueError, match="no family has a measured level inside the band"):
        generate_corpus(2, 0, "legacy", tmp_path / "none", calibration=nowhere, band_only=True)
