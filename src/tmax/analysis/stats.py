"""Corpus and job statistics: composition and balance per axis, pass@k overall and by axis,
difficulty buckets from measured pass rates, turns, tokens and command mix."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections import Counter
from pathlib import Path

from tmax.jobs import episode_summary, load_results, pass_at_k
from tmax.taxonomy import (COMMAND_COMPLEXITIES, DOMAINS, FIXTURE_KINDS, LANGUAGES, RECIPE_COMPLEXITIES,
                           VERIFIER_KINDS, balance)

AXES = ("domain", "skill_type", "persona", "language", "task_complexity", "command_complexity", "fixture",
        "verifier", "family")
KNOWN_BUCKETS = {"domain": len(DOMAINS), "language": len(LANGUAGES), "task_complexity": len(RECIPE_COMPLEXITIES),
                 "command_complexity": len(COMMAND_COMPLEXITIES), "fixture": len(FIXTURE_KINDS),
                 "verifier": len(VERIFIER_KINDS)}
BUCKETS = (("unsolved", lambda p: p == 0), ("hard", lambda p: 0 < p <= 0.25), ("medium", lambda p: 0.25 < p < 0.75),
           ("easy", lambda p: 0.75 <= p < 1), ("trivial", lambda p: p == 1))


def corpus_rows(corpus: Path) -> list[dict]:
    """One row of axis values per task: the manifest if there is one, else each task.toml's metadata."""
    manifest = corpus / "manifest.jsonl"
    if manifest.exists():
        return [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    rows = []
    for d in sorted(p for p in corpus.iterdir() if p.is_dir()):
        f = d / "task.toml"
        if f.exists():
            try:
                meta = tomllib.loads(f.read_text()).get("metadata", {})
            except tomllib.TOMLDecodeError:
                continue
            rows.append({"task": d.name, **meta})
    return rows


def composition(rows: list[dict]) -> dict:
    out = {}
    for axis in AXES:
        values = [str(r[axis]) for r in rows if r.get(axis) not in (None, "")]
        if not values:
            continue
        counts = Counter(values)
        n_buckets = KNOWN_BUCKETS.get(axis) or len(counts)
        out[axis] = {"counts": dict(counts.most_common()), "balance": round(balance(values, n_buckets), 4),
                     "buckets": n_buckets}
    if any("skill_type" in r for r in rows):  # skill types are per domain: balance over (domain, skill type)
        pairs = [f"{r.get('domain')}/{r.get('skill_type')}" for r in rows if r.get("skill_type")]
        out["skill_type"]["balance"] = round(balance(pairs), 4)
    return out


def first_program(command: str) -> str:
    """The program a command runs first ('cat', 'python3', ...), for the command mix."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    for w in words:
        if "=" in w and not w.startswith(("-", "/")) and re.match(r"^\w+=", w):
            continue  # VAR=value prefix
        if w in ("sudo", "timeout", "nohup", "env", "time") or re.match(r"^\d+[smh]?$", w):
            continue
        return w.split("/")[-1][:24]
    return "(empty)"


def job_stats(job: Path, meta_by_task: dict[str, dict]) -> dict:
    results = load_results(job)
    by_task: dict[str, list[dict]] = {}
    for r in results:
        by_task.setdefault(r["task"], []).append(r)
    tasks = {}
    for name, rs in by_task.items():
        scored = [r for r in rs if r["outcome"] != "infra_error" and r["reward"] is not None]
        n, c = len(scored), sum(r["reward"] >= 1.0 for r in scored)
        meta = {**(rs[0].get("metadata") or {}), **meta_by_task.get(name, {})}
        tasks[name] = {"n": n, "c": c, "meta": meta}
    k_max = min((t["n"] for t in tasks.values() if t["n"]), default=0)
    curve = {k: _mean([pass_at_k(t["n"], t["c"], k) for t in tasks.values() if t["n"] >= k])
             for k in range(1, k_max + 1)}
    by_axis: dict[str, dict[str, dict]] = {}
    for axis in AXES + ("level",):
        groups: dict[str, list[dict]] = {}
        for t in tasks.values():
            if t["n"] and axis in t["meta"]:
                groups.setdefault(str(t["meta"][axis]), []).append(t)
        if groups:
            by_axis[axis] = {v: {"tasks": len(ts), **{f"pass@{k}": _mean([pass_at_k(t["n"], t["c"], k) for t in ts])
                                                       for k in range(1, k_max + 1)}}
                             for v, ts in sorted(groups.items())}
    buckets = Counter()
    for t in tasks.values():
        if t["n"]:
            p = t["c"] / t["n"]
            buckets[next(name for name, test in BUCKETS if test(p))] += 1
    infos = [episode_summary(r) for r in results]
    steps = [i["steps"] for i in infos if "steps" in i]
    tokens = [i.get("completion_tokens", 0) for i in infos if "steps" in i]
    mix = Counter(first_program(c) for i in infos for c in i.get("commands", []))
    return {"job": str(job), "trials": len(results), "tasks": len(tasks),
            "outcomes": dict(Counter(r["outcome"] for r in results)),
            "pass_at_k": {f"pass@{k}": v for k, v in curve.items()}, "by_axis": by_axis,
            "difficulty_buckets": {name: buckets.get(name, 0) for name, _ in BUCKETS},
            "turns": steps, "completion_tokens": tokens, "command_mix": dict(mix.most_common(25)),
            "submitted_fraction": _mean([1.0 if i.get("submitted") else 0.0 for i in infos if "steps" in i]),
            "mean_turns": _mean(steps), "mean_completion_tokens": _mean(tokens)}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None
