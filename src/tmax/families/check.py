"""Checking families (``tmax families check``): build each at every level with several seeds, cycling
its fixture and verifier kinds; every build must regenerate byte-identical, pass the gate (oracle,
nop, the adversarial battery) and pass the channel-skip check in full (more candidates than the gate
runs, the setup's leftovers replayed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tmax.families.base import Family, build_task
from tmax.gate import GateResult, Watch, gate_tasks, stream_jsonl
from tmax.generate import axes_for_family, tree_digest
from tmax.sandbox import DEFAULT_BACKEND

if TYPE_CHECKING:
    from tmax.channels import ChannelSkipResult

CHANNEL_RUNS = 5  # candidates run through the verifier per task (the gate's own leg runs fewer)


@dataclass(frozen=True)
class Case:
    """One build of a family: its level, seed, variant and the fixture and verifier kinds it is built with."""

    family: str
    level: int
    seed: int
    fixture: str
    verifier: str
    variant: str = ""

    @property
    def dir_name(self) -> str:
        tail = f"-{self.variant}" if self.variant else ""
        return f"{self.family}-L{self.level}-s{self.seed}-{self.fixture}-{self.verifier}{tail}"


@dataclass
class FamilyCheck:
    dirs: list[Path] = field(default_factory=list)  # the builds that succeeded
    gate: list[GateResult] = field(default_factory=list)
    channel: list[ChannelSkipResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # one line per failure, naming the build

    @property
    def ok(self) -> bool:
        return not self.problems and all(r.ok for r in self.gate)


def cases(fam: Family, levels: list[int] | None, seeds: int, start: int = 0) -> list[Case]:
    """``seeds`` builds per level (None: every level the family offers; a level it lacks is skipped);
    each takes the next (fixture, verifier) pair of the family, from a stride that spreads the pairs
    over levels and seeds, and the next of its variants. ``start`` shifts where the cycles begin (so a
    registry-wide sample does not give every family the same pair)."""
    combos = [(fx, vf) for vf in fam.verifiers for fx in fam.fixtures]
    variants = fam.variants or ("",)
    out, i = [], 0
    for level in sorted(fam.levels) if levels is None else [lv for lv in levels if lv in fam.levels]:
        for seed in range(seeds):
            fx, vf = combos[(level * 7 + seed * 3 + i + start) % len(combos)]
            out.append(Case(fam.name, level, seed, fx, vf, variants[(i + start) % len(variants)]))
            i += 1
    return out


def build_case(fam: Family, case: Case, dest: Path) -> None:
    axes = axes_for_family(fam, case.seed, case.level, level=case.level, fixture=case.fixture,
                           verifier=case.verifier)
    build_task(fam, axes, case.seed, case.level, dest, variant=case.variant or None)


def build_twice(fam: Family, case: Case, dest: Path) -> bool:
    """Build ``case`` into ``dest`` twice: did both builds give the same bytes?"""
    build_case(fam, case, dest)
    first = tree_digest(dest)
    build_case(fam, case, dest)
    return tree_digest(dest) == first


def channel_skip_all(dirs: list[Path], jsonl: Path, *, backend: str = DEFAULT_BACKEND, jobs: int = 2,
                     watch: Watch | None = None) -> list[ChannelSkipResult]:
    """The channel-skip check on every task, one JSON line per task in ``jsonl`` as each finishes."""
    from tmax.channels import channel_skip

    if watch:
        watch.start("channel-skip", len(dirs))
    results = []
    for r in stream_jsonl((channel_skip(d, backend=backend, max_runs=CHANNEL_RUNS, jobs=jobs) for d in dirs), jsonl):
        results.append(r)
        if watch:
            watch.advance("channel-skip", r)
    return results


def check_families(fams: list[Family], out: Path, *, levels: list[int] | None, seeds: int, repeat: int = 1, jobs: int = 2,
                   backend: str = DEFAULT_BACKEND, channels: bool = True, watch: Watch | None = None) -> FamilyCheck:
    """Build, compare, gate (out/gate.jsonl) and channel-check (out/channel-skip.jsonl) ``fams``."""
    check = FamilyCheck()
    for fam in fams:
        for case in cases(fam, levels, seeds):
            dest = out / case.dir_name
            try:
                reproducible = build_twice(fam, case, dest)
            except Exception as e:  # one family's bug is reported; the others still run
                check.problems.append(f"{dest.name}: build failed: {type(e).__name__}: {e}")
                continue
            check.dirs.append(dest)
            if not reproducible:
                check.problems.append(f"{dest.name}: regenerating gave different bytes")
    if not check.dirs:
        return check
    # The gate's own channel leg is short; the full check runs below instead.
    check.gate = gate_tasks(check.dirs, out / "gate.jsonl", repeat=repeat, backend=backend, jobs=jobs,
                            channels=False, watch=watch)
    if channels:
        check.channel = channel_skip_all(check.dirs, out / "channel-skip.jsonl", backend=backend, jobs=jobs,
                                         watch=watch)
        check.problems += [f"{Path(r.task).name}: channel skipped: {r.reason}" for r in check.channel if not r.ok]
    return check
