"""Closed-loop difficulty: measured pass rates per (family, level) steer the levels that generation
draws, so a corpus' pass rate lands in a target band instead of splitting into trivial and unsolvable.

The estimate per (family, level) is the posterior mean of a Beta(1, 1) prior updated with the trials'
passes and failures (infrastructure errors excluded). Generation keeps a sampled level whose estimate
is inside the band; otherwise it redraws among the family's in-band levels, or takes the level whose
estimate is closest to the band's centre. With ``band_only``, only families with an in-band level are
drawn at all.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

from tmax.jobs import load_results
from tmax.taxonomy import TASK_COMPLEXITIES, Axes


def measure(jobs: list[Path]) -> dict[str, dict[str, dict]]:
    """{family: {level: {"passed": c, "trials": n, "estimate": p}}} from job results; a family with
    variants also gets a row per variant, keyed ``family/variant``."""
    table: dict[str, dict[str, dict]] = {}
    for job in jobs:
        for r in load_results(job):
            meta = r.get("metadata") or {}
            fam, level, variant = meta.get("family"), meta.get("level"), meta.get("variant")
            if fam is None or level is None or r["reward"] is None:
                continue  # infrastructure errors and bugs measure nothing
            for key in [fam, f"{fam}/{variant}"] if variant else [fam]:
                cell = table.setdefault(key, {}).setdefault(str(level), {"passed": 0, "trials": 0})
                cell["trials"] += 1
                cell["passed"] += int(r["reward"] >= 1.0)
    for levels in table.values():
        for cell in levels.values():
            cell["estimate"] = (cell["passed"] + 1) / (cell["trials"] + 2)
    return table


def write(jobs: list[Path], out: Path, band: tuple[float, float]) -> dict:
    doc = {"band": list(band), "families": measure(jobs)}
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return doc


def load(path: Path) -> dict:
    doc = json.loads(path.read_text())
    if not isinstance(doc.get("band"), list) or len(doc["band"]) != 2 or "families" not in doc:
        raise ValueError(f"{path}: expected {{'band': [lo, hi], 'families': {{...}}}} as written by tmax calibrate")
    return doc


def estimates(calibration: dict, family: str, variant: str = "") -> dict[str, dict]:
    """The measured cells of one family (its variant's own where measured)."""
    table = calibration["families"]
    return (table.get(f"{family}/{variant}") if variant else None) or table.get(family) or {}


def in_band_families(calibration: dict, families: list) -> list:
    """The families with a measured level inside the band (on their own row or a variant's): what a
    corpus for one policy's band draws from when unmeasured families and families the policy always or
    never solves are left out (``generate --band-only``)."""
    lo, hi = calibration["band"]
    table = calibration["families"]

    def in_band(name: str) -> bool:
        rows = [v for k, v in table.items() if k == name or k.startswith(name + "/")]
        return any(lo <= cell["estimate"] <= hi for row in rows for cell in row.values())

    return [f for f in families if in_band(f.name)]


def adjust(axes: Axes, calibration: dict, rng: random.Random, allowed: tuple[str, ...], variant: str = "") -> Axes:
    """Redraw the task complexity of ``axes`` so its measured pass rate falls in the band."""
    levels = estimates(calibration, axes.family, variant)
    if not levels:
        return axes
    lo, hi = calibration["band"]
    est = {int(k): v["estimate"] for k, v in levels.items() if TASK_COMPLEXITIES[int(k)] in allowed}
    current = TASK_COMPLEXITIES.index(axes.task_complexity)
    if current in est and lo <= est[current] <= hi:
        return axes
    in_band = sorted(lvl for lvl, p in est.items() if lo <= p <= hi)
    if in_band:
        level = rng.choice(in_band)
    elif est:
        centre = (lo + hi) / 2
        level = min(sorted(est), key=lambda lvl: abs(est[lvl] - centre))
    else:
        return axes
    return replace(axes, task_complexity=TASK_COMPLEXITIES[level])
