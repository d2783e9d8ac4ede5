"""Decontamination: word 13-gram overlap (stride 1, as in the paper) plus a fuzzy MinHash similarity
of task instructions against a directory of benchmark instructions."""

from __future__ import annotations

import re
from pathlib import Path

from tmax.generate import minhash

NGRAM = 13
FUZZY_THRESHOLD = 0.5


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def ngrams(text: str, n: int = NGRAM) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def benchmark_texts(root: Path) -> dict[str, str]:
    """Instructions of a benchmark: every instruction.md / task.yaml under root, else every .md/.txt file."""
    found = {str(p.parent.relative_to(root)) or p.name: p.read_text(errors="replace")
             for p in sorted(root.rglob("instruction.md"))}
    for p in sorted(root.rglob("task.yaml")):
        found.setdefault(str(p.parent.relative_to(root)), p.read_text(errors="replace"))
    if not found:
        found = {str(p.relative_to(root)): p.read_text(errors="replace")
                 for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in (".md", ".txt", ".json", ".jsonl")}
    return found


def decontaminate(corpus: list[Path], against: Path, fuzzy_threshold: float = FUZZY_THRESHOLD) -> dict:
    bench = benchmark_texts(against)
    index: dict[tuple[str, ...], str] = {}
    for name, text in bench.items():
        for g in ngrams(text):
            index.setdefault(g, name)
    sigs = {name: minhash(" ".join(words(text))) for name, text in bench.items()}
    flagged = []
    for task_dir in corpus:
        f = task_dir / "instruction.md"
        if not f.exists():
            continue
        text = f.read_text(errors="replace")
        hits = sorted({index[g] for g in ngrams(text) if g in index})
        sig = minhash(" ".join(words(text)))
        best, best_sim = None, 0.0
        for name, other in sigs.items():
            sim = sum(a == b for a, b in zip(sig, other)) / len(sig)
            if sim > best_sim:
                best, best_sim = name, sim
        if hits or best_sim >= fuzzy_threshold:
            flagged.append({"task": task_dir.name, "ngram_matches": hits, "fuzzy_match": best,
                            "fuzzy_similarity": round(best_sim, 3)})
    return {"tasks": len(corpus), "benchmark_items": len(bench), "flagged": flagged,
            "flagged_fraction": len(flagged) / len(corpus) if corpus else 0.0}
