"""Fixture channels are honest: the delivered value can be had only through the channel.

Static tests check the candidate collector on the leaks it exists for (a blob beside its mask, a
shift table, single-byte XOR in a binary, a leftover render input) and that generated tasks are
byte-reproducible. Image tests build one real task per fixture kind, gate it, and run the
channel-skip check on it, whose candidates go through the real trial machinery."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tmax.channels import ADD_TABLES_BIN, MIN_PROTECTED, XOR_TABLES_BIN, channel_skip, collect, ranked, with_candidate
from tmax.families import build_task, load_all
from tmax.generate import axes_for_family, tree_digest
from tmax.taxonomy import FIXTURE_KINDS

LETTERS = "password_hash_audit"  # delivers a code (two capital words); not otherwise in its files
DIGITS = "service_downtime_report"  # delivers a 10-digit Unix time


def _build(out: Path, family: str, kind: str, level: int = 1, seed: int = 0) -> Path:
    fam = load_all()[family]
    axes = axes_for_family(fam, seed, level, level=level, fixture=kind, verifier="exact_text")
    d = out / f"{family}-{kind}-L{level}-s{seed}"
    build_task(fam, axes, seed, level, d)
    return d


def _env_files(d: Path) -> list[tuple[str, bytes]]:
    root = d / "environment" / "files"
    return [("/" + str(p.relative_to(root)), p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()]


# -- the collector finds the shortcuts it is meant to -------------------------------------------------

def test_collector_finds_a_blob_beside_its_mask():
    value, mask = "FALCONMAPLE", 77
    ini = f"[data]\nfalcon = {','.join(str(ord(c) ^ mask) for c in value)}\nmask = {mask}\n".encode()
    assert value in collect([("/app/services/vault.ini", ini)], value)


def test_collector_finds_a_shift_table_and_digits():
    for value, shift in (("CEDARHAWK", 96), ("1780151685", 205)):
        src = f"SHIFT = {shift}\nTABLE = {[ord(c) + shift for c in value]!r}\n".encode()
        cands = collect([("/app/vendor/x/codes.py", src)], value)
        assert value in cands, sorted(cands)[:20]


def test_collector_finds_single_byte_xor_in_a_binary_and_padding_does_not_hide_it():
    value, key = "GLACIERTIGER", ord("Q")  # the key is a capital: decoded zero padding would extend the run
    pointer, length = (0x402004).to_bytes(8, "little"), len(value).to_bytes(4, "little")
    blob = b"\x7fELF\x02\x01\x01\x00" + pointer + bytes(ord(c) ^ key for c in value) + b"\x00" * 20 + length
    assert value in collect([("/app/bin/tool", blob)], value)


def test_a_short_value_spelled_by_chance_in_compressed_media_is_not_a_shortcut():
    import random

    rng = random.Random(7)
    media = bytes(rng.randrange(1, 256) for _ in range(200_000))  # as dense as an mp4's payload
    # Hundreds of 4-digit runs are spelled by chance under the 510 decodings.
    spelled = {run[i:i + 4].decode() for t in XOR_TABLES_BIN[1:] + ADD_TABLES_BIN[1:]
               for run in re.findall(rb"[0-9]{4,}", media.translate(t)) for i in range(len(run) - 3)}
    assert len(spelled) > 100
    assert not set(spelled) & set(collect([("/app/inbox/rec.mp4", media)], "0000"))
    # A value long enough that chance would not spell it is still found when it is really there.
    value, key = "48213977", 0x50
    hidden = media[:1000] + bytes(ord(c) ^ key for c in value) + media[1000:]
    assert value in collect([("/app/inbox/rec.mp4", hidden)], value)


def test_collector_finds_plain_and_lightly_disguised_tokens():
    assert "OTTERJADE" in collect([("/tmp/tmax-fixture/card.json", b'{"value": "OTTERJADE"}')], "OTTERJADE")
    assert "OTTERJADE" in collect([("/app/x.txt", b"code: otterjade\n")], "OTTERJADE")
    assert "OTTERJADE" in collect([("/app/x.txt", b"code: PUUFSKBEF\n")], "OTTERJADE")  # Caesar 1
    assert "OTTERJADE" in collect([("/app/x.txt", b"blob = " + b"OTTERJADE".hex().encode() + b"\n")], "OTTERJADE")


def test_ranking_puts_same_length_tokens_first_and_never_the_value():
    cands = collect([("/app/a.txt", b"AB FALCONMAPLA ZEPHYRCEDARS FALCONMAPLE")], "FALCONMAPLE")
    order = [c.text for c in ranked(cands, "FALCONMAPLE")]
    assert "FALCONMAPLE" not in order and order[0] == "FALCONMAPLA"


def test_with_candidate_rewrites_only_the_value_line(tmp_path):
    src = tmp_path / "t"
    (src / "solution").mkdir(parents=True)
    (src / "solution" / "solve.sh").write_text("#!/bin/bash\nV1=$(decode x)\ntest -n \"$V1\"\necho \"$V1\" > out\n")
    out = with_candidate(src, "V1", "GUESS", tmp_path / "c" / "t")
    assert (out / "solution" / "solve.sh").read_text() == ("#!/bin/bash\nV1=GUESS\ntest -n \"$V1\"\n"
                                                           "echo \"$V1\" > out\n")


# -- what generation writes -------------------------------------------------------------------------

@pytest.mark.parametrize("kind", FIXTURE_KINDS)
def test_each_kind_is_byte_reproducible_and_its_setup_removes_the_render_inputs(tmp_path, kind):
    d = _build(tmp_path, LETTERS, kind)
    first = tree_digest(d)
    _build(tmp_path, LETTERS, kind)
    assert tree_digest(d) == first
    setup = (d / "environment" / "setup.sh").read_text()
    for scratch in sorted({m for m in re.findall(r"/tmp/tmax-fixture/ch\d+", setup)}):
        assert f"rm -rf {scratch}" in setup, setup
    assert not re.search(r"/tmp/tmax-fixture/(?!ch\d+\b)", setup), "a fixture input outside its scratch folder"


@pytest.mark.parametrize("kind", FIXTURE_KINDS)
def test_no_file_that_outlives_the_build_holds_the_value(tmp_path, monkeypatch, kind):
    """Statically, on the task directory: apart from the scratch inputs that the setup removes (and the
    inbox file that is the text_only channel), no file nor the instruction yields the value by any of
    the check's decodings. The built environment is checked by the image tests below."""
    import tmax.families.base

    seen: list[str] = []
    real = tmax.families.base.deliver_value

    def recording(t, kind_, value, what, var):
        seen.append(value)
        real(t, kind_, value, what, var)

    monkeypatch.setattr(tmax.families.base, "deliver_value", recording)  # where the builder calls it
    for family in (LETTERS, DIGITS):
        seen.clear()
        d = _build(tmp_path, family, kind, seed=1)
        assert len(seen) == 1 and len(seen[0]) >= MIN_PROTECTED
        kept = [(p, b) for p, b in _env_files(d) if not p.startswith("/tmp/tmax-fixture/")
                and not (kind == "text_only" and p.startswith("/app/inbox/"))]
        kept.append(("instruction.md", (d / "instruction.md").read_bytes()))
        cands = collect(kept, seen[0])
        assert seen[0] not in cands, cands.get(seen[0])


# -- real tasks, the gate and the channel-skip check -----------------------------------------------


@pytest.fixture(scope="module")
def tasks(tmp_path_factory, default_image) -> dict[tuple[str, str], Path]:
    """One task per fixture kind with a letter code, plus the digit paths (DTMF, digits in a binary,
    in a package, from a service); each built environment is shared by the gate and the check."""
    out = tmp_path_factory.mktemp("channels")
    want = [(LETTERS, k) for k in FIXTURE_KINDS] + [(DIGITS, k) for k in ("audio", "stripped_binary",
                                                                          "vendored_package", "multi_service")]
    return {(f, k): _build(out, f, k) for f, k in want}


CASES = [(LETTERS, k) for k in FIXTURE_KINDS] + [(DIGITS, k) for k in ("audio", "stripped_binary",
                                                                      "vendored_package", "multi_service")]


@pytest.mark.image
@pytest.mark.parametrize("family, kind", CASES, ids=[f"{k}-{'letters' if f == LETTERS else 'digits'}"
                                                     for f, k in CASES])
def test_oracle_passes_and_no_candidate_skips_the_channel(tasks, family, kind):
    from tmax.gate import check_task

    d = tasks[(family, kind)]
    gate = check_task(d, repeat=1)
    assert gate.ok, gate.reason
    res = channel_skip(d, max_runs=2)
    assert res.ok, (res.reason, res.beaten_by, res.beaten_how)
    assert res.values and all(len(v) >= MIN_PROTECTED for v in res.values.values())
    assert res.n_candidates > 0 and len(res.candidates_tried) == 2
    assert all(r == 0.0 for r in res.rewards.values()), res.rewards


@pytest.mark.image
def test_the_check_catches_a_leftover_copy_of_the_value(tasks, tmp_path):
    """A planted leak in the spirit of the old fixtures (a sealed blob beside its mask) fails the check
    statically and names its source; the untouched task passes."""
    src = tasks[(LETTERS, "multi_service")]
    d = tmp_path / src.name
    shutil.copytree(src, d)
    value = channel_skip(src, max_runs=0).values["V1"]
    mask = 91
    (d / "environment/files/app/services/vault.ini.bak").write_text(
        f"[data]\nold = {','.join(str(ord(c) ^ mask) for c in value)}\nmask = {mask}\n")
    res = channel_skip(d, max_runs=0)
    assert not res.ok and res.beaten_by == f"V1={value}", res.reason
    assert "vault.ini.bak" in res.beaten_how and "xor 91" in res.beaten_how


@pytest.mark.image
def test_a_wrong_value_that_still_scores_is_reported(tasks, tmp_path):
    """If the reward does not depend on the delivered value, any candidate beats the channel."""
    src = tasks[(LETTERS, "text_only")]
    d = tmp_path / src.name
    shutil.copytree(src, d)
    solve = d / "solution" / "solve.sh"
    value = channel_skip(src, max_runs=0).values["V1"]
    # The solution keeps its value line but computes with the true value regardless of V1.
    solve.write_text(solve.read_text().replace('"$V1"', f'"{value}"'))
    res = channel_skip(d, max_runs=1)
    assert not res.ok and res.beaten_by and res.rewards[res.beaten_by] == 1.0, res.reason


@pytest.mark.slow
@pytest.mark.image
@pytest.mark.parametrize("kind", FIXTURE_KINDS)
def test_every_level_two_seeds_two_families_pass(tmp_path, default_image, kind):
    from tmax.gate import check_task

    failures = []
    for family in (LETTERS, DIGITS):
        for level in (1, 2, 3, 4):
            for seed in (0, 1):
                d = _build(tmp_path, family, kind, level, seed)
                gate = check_task(d, repeat=1)
                res = channel_skip(d, max_runs=3)
                if not gate.ok or not res.ok:
                    failures.append(f"{d.name}: gate {gate.reason or 'ok'}; skip {res.reason or 'ok'}")
    assert not failures, "\n".join(failures)
