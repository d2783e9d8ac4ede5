"""Corpus generation: sample axes per index, build each task with its family, deduplicate, write a
manifest; optionally gate every task and keep only those that pass."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import signal
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tmax.families import load_all
from tmax.families.base import build_task, knobs_dict, pick_variant
from tmax.sandbox import DEFAULT_BACKEND
from tmax.taxonomy import sample

if TYPE_CHECKING:
    from tmax.gate import GateResult, Watch

BUILD_CPU_SECONDS = 120  # one task's build, in its own CPU time; past it the index is a build error
BUILD_WALL_SECONDS = 900  # and in wall time, for a build that hangs without using CPU
NEAR_DUP_JACCARD = 0.7  # on what the agent sees, digits masked: siblings differing in persona or numbers
MAX_DRAW_FACTOR = 3  # indices drawn to fill n tasks past near-duplicates and build errors, at most n times this


@dataclass
class Generated:
    index: int
    dir: str
    manifest: dict = field(default_factory=dict)
    error: str = ""


class BuildTimeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(cpu_seconds: float, wall_seconds: float):
    """Stop a build that spends more than ``cpu_seconds`` of its process's CPU (a family redrawing
    forever) or waits past ``wall_seconds`` (a hang) with BuildTimeout. CPU time, not wall time, is the
    main budget so that a build on a loaded machine is not cut for waiting its turn. Only in a process's
    main thread, where signals can be used (generation workers are processes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        what = f"{cpu_seconds:g} s of CPU" if signum == signal.SIGPROF else f"{wall_seconds:g} s"
        raise BuildTimeout(f"the build took longer than {what}")

    old = signal.signal(signal.SIGPROF, expire), signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    signal.setitimer(signal.ITIMER_REAL, wall_seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, old[0])
        signal.signal(signal.SIGALRM, old[1])


def task_dir_name(index: int, family: str) -> str:
    return f"{index:05d}-{family.replace('_', '-')}"


def generate_one(seed: int, index: int, kind: str, out: str, calibration: dict | None = None,
                 band_only: bool = False) -> Generated:
    families = load_all()
    pool = sorted(families.values(), key=lambda f: f.name)
    if calibration and band_only:
        from tmax.calibrate import in_band_families

        pool = in_band_families(calibration, pool)
    axes = sample(seed, index, kind, pool)
    fam = families[axes.family]
    variant = pick_variant(fam, seed, index)
    if calibration:
        from tmax.calibrate import adjust
        from tmax.taxonomy import rng_for

        axes = adjust(axes, calibration, rng_for(seed, index, "calibrate"), fam.task_complexities, variant)
    dest = Path(out) / task_dir_name(index, axes.family)
    if dest.exists():
        shutil.rmtree(dest)
    try:
        with _time_limit(BUILD_CPU_SECONDS, BUILD_WALL_SECONDS):
            t = build_task(fam, axes, seed, index, dest, variant=variant or None)
    except Exception as e:  # a bad family must not stop the corpus; it is reported with where it failed
        shutil.rmtree(dest, ignore_errors=True)
        return Generated(index, str(dest), {"index": index, **axes.to_json()},
                         f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-4)}")
    from tmax.images import environment_key
    from tmax.task import load_task

    task = load_task(dest)
    manifest = {"index": index, "task": dest.name, "seed": seed, "kind": kind, **axes.to_json(),
                "level": t.level, "variant": t.variant, "difficulty": t.difficulty(), "knobs": knobs_dict(t.knobs),
                "env_hash": environment_key(task)}
    if calibration:  # the measured figure beside the formula's
        from tmax.calibrate import estimates

        cell = estimates(calibration, fam.name, variant).get(str(t.level))
        manifest["measured_pass_rate"] = None if cell is None else cell["estimate"]
    return Generated(index, str(dest), manifest)


def tree_digest(root: Path) -> str:
    """A digest of every file's path and bytes under ``root`` (regeneration must not change it)."""
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


# -- near-duplicate detection -------------------------------------------------------------------

def task_text(task_dir: Path) -> str:
    """What the agent sees: the instruction and the environment's files (never the hidden tests,
    whose random data would make siblings look different)."""
    parts = [(task_dir / "instruction.md").read_text()]
    files = task_dir / "environment" / "files"
    for f in sorted(files.rglob("*")) if files.is_dir() else []:
        if f.is_file() and not f.is_symlink():
            parts.append(str(f.relative_to(files)) + "\n" + f.read_text(errors="replace")[:200_000])
    return "\n".join(parts)


def near_duplicates(dirs: list[Path], threshold: float = NEAR_DUP_JACCARD,
                    signatures: dict[str, object] | None = None) -> dict[str, str]:
    """{duplicate dir name: the earlier dir it duplicates}, by :mod:`tmax.minhash` (the estimator
    ``tmax analyze`` counts siblings with). ``signatures`` caches them by dir across calls."""
    from tmax.minhash import band_keys, jaccard, signature

    cache = {} if signatures is None else signatures
    buckets: dict[tuple[int, bytes], list[int]] = {}
    dups: dict[str, str] = {}
    sigs = []
    for i, d in enumerate(dirs):
        if str(d) not in cache:
            cache[str(d)] = signature(task_text(d))
        sig = cache[str(d)]
        sigs.append(sig)
        cands: set[int] = set()
        for key in band_keys(sig):
            cands.update(buckets.get(key, []))
            buckets.setdefault(key, []).append(i)
        for j in sorted(cands):
            if dirs[j].name not in dups and jaccard(sig, sigs[j]) >= threshold:
                dups[d.name] = dirs[j].name
                break
    return dups


def generate_corpus(n: int, seed: int, kind: str, out: Path, jobs: int = 2,
                    progress: Callable[[Generated], None] | None = None, calibration: dict | None = None,
                    band_only: bool = False) -> dict:
    """Write ``n`` tasks and ``manifest.jsonl`` under ``out`` (fewer only when ``MAX_DRAW_FACTOR * n`` draws
    do not give ``n`` distinct tasks that build). Returns a summary. ``band_only``: draw only
    the families that ``calibration`` measured inside its band."""
    if band_only:
        from tmax.calibrate import in_band_families

        if not calibration:
            raise ValueError("band_only needs a calibration table")
        if not in_band_families(calibration, list(load_all().values())):
            lo, hi = calibration["band"]
            raise ValueError(f"no family has a measured level inside the band [{lo}, {hi}]: widen the band or "
                             "measure more families or levels")
    out.mkdir(parents=True, exist_ok=True)
    # Near-duplicates and build errors leave gaps; further indices are drawn until n tasks are kept
    # (bounded: a family mix that yields few distinct tasks stops at MAX_DRAW_FACTOR * n draws).
    kept: list[Generated] = []
    errors: list[Generated] = []
    dups: dict[str, str] = {}
    signatures: dict[str, object] = {}  # kept tasks are not re-read each round
    drawn = 0
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        while len(kept) < n and drawn < MAX_DRAW_FACTOR * n:
            want = min(n - len(kept), MAX_DRAW_FACTOR * n - drawn)
            new: list[Generated] = []
            for g in pool.map(generate_one, [seed] * want, range(drawn, drawn + want), [kind] * want,
                              [str(out)] * want, [calibration] * want, [band_only] * want, chunksize=8):
                (errors if g.error else new).append(g)
                if progress:
                    progress(g)
            drawn += want
            # kept tasks are pairwise distinct and come first, so only new ones can be flagged
            found = near_duplicates([Path(g.dir) for g in kept + new], signatures=signatures)
            for g in new:
                if Path(g.dir).name in found:
                    shutil.rmtree(g.dir, ignore_errors=True)
            kept += [g for g in new if Path(g.dir).name not in found]
            dups.update(found)
    with open(out / "manifest.jsonl", "w") as f:
        for g in kept:
            f.write(json.dumps(g.manifest, sort_keys=True) + "\n")
    summary = {"requested": n, "drawn": drawn, "written": len(kept),
               "errors": [{"index": g.index, "error": g.error} for g in errors],
               "near_duplicates": len(dups), "near_duplicate_siblings": _siblings(dups), "duplicates": dups}
    (out / "generate-summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary


def _siblings(dups: dict[str, str]) -> dict[str, int]:
    """Near-identical siblings dropped, per family (task dir names end in the family's name)."""
    per: dict[str, int] = {}
    for name in dups:
        fam = name.split("-", 1)[1] if "-" in name else name
        per[fam] = per.get(fam, 0) + 1
    return dict(sorted(per.items()))


def axes_for_family(family, seed: int, index: int, level: int | None = None, fixture: str | None = None,
                    verifier: str | None = None):
    """Coherent axes for one family with chosen level / fixture / verifier (for checks and sweeps); the
    rest follows the sampler's own rules (:func:`tmax.taxonomy.complete_axes`)."""
    from tmax.taxonomy import TASK_COMPLEXITIES, complete_axes, rng_for

    rng = rng_for(seed, index, "forced")
    allowed = [i for i, c in enumerate(TASK_COMPLEXITIES) if c in family.task_complexities]
    if level is not None and level not in allowed:  # a level the family does not offer: its nearest one
        level = min(allowed, key=lambda lv: abs(lv - level))
    verifier = verifier or rng.choice(family.verifiers)
    fixture = fixture or rng.choice(family.fixtures)
    complexity = TASK_COMPLEXITIES[rng.choice(allowed) if level is None else level]
    return complete_axes(rng, family, rng.choice(family.skill_types), verifier, fixture, complexity)


def build_family_tasks(dest: Path, names: list[str] | tuple[str, ...], seeds: range, level: int = 0,
                       fixture: str = "text_only", verifier: str = "exact_text",
                       first_variant: bool = True) -> list[Path]:
    """One task per (family, seed) at a chosen level, fixture and verifier, built as generation builds
    them, into ``dest/<family>-<seed>`` (a task already there is kept). ``first_variant`` pins each
    family's first variant, so a benchmark's tasks stay the same when a family gains variants; False
    draws the variant as generation does."""
    families = load_all()
    dirs = []
    for name in names:
        fam = families[name]
        variant = fam.variants[0] if first_variant and fam.variants else None
        for seed in seeds:
            d = dest / f"{name}-{seed}"
            if not (d / "task.toml").exists():
                axes = axes_for_family(fam, seed, 0, level=level, fixture=fixture, verifier=verifier)
                build_task(fam, axes, seed, 0, d, variant=variant)
            dirs.append(d)
    return dirs


def prune_failed(out: Path, gate_jsonl: Path) -> list[str]:
    """Remove tasks that failed the gate from ``out`` and its manifest; return their names."""
    failed = []
    for line in gate_jsonl.read_text().splitlines():
        r = json.loads(line)
        if not r["ok"]:
            failed.append(Path(r["task"]).name)
    for name in failed:
        shutil.rmtree(out / name, ignore_errors=True)
    manifest = out / "manifest.jsonl"
    if manifest.exists():
        keep = [ln for ln in manifest.read_text().splitlines() if json.loads(ln)["task"] not in set(failed)]
        manifest.write_text("".join(ln + "\n" for ln in keep))
    return failed


def gate_corpus(corpus: Path, *, repeat: int = 2, backend: str = DEFAULT_BACKEND, jobs: int = 2,
                image: str | None = None, channels: bool = True, watch: Watch | None = None
                ) -> tuple[list[GateResult], list[str]]:
    """Gate every task of ``corpus`` (reasons in its gate.jsonl), then prune those that failed from it
    and its manifest: (the gate's results, the names pruned)."""
    from tmax.discover import corpus_task_dirs
    from tmax.gate import gate_tasks

    results = gate_tasks(corpus_task_dirs(corpus), corpus / "gate.jsonl", repeat=repeat, backend=backend, jobs=jobs,
                         image=image, channels=channels, watch=watch)
    return results, prune_failed(corpus, corpus / "gate.jsonl")
