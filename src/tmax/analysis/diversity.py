"""How varied a corpus is, four ways: templates (distinct family and variant), the fraction of tasks
with a near-identical sibling (MinHash with LSH banding over what the agent sees), TF-IDF diversity of
instructions (1 - mean pairwise cosine) and effective clusters (exp of the entropy of a k-means
assignment of those TF-IDF vectors).

Digits are masked everywhere here: a task whose numbers were swapped is the same task to a learner.
numpy does the arithmetic (it comes with matplotlib, the ``analysis`` extra)."""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from tmax.analysis.text import tfidf, tokens
from tmax.discover import is_task_dir
from tmax.generate import NEAR_DUP_JACCARD, task_text
from tmax.minhash import LSH_BANDS, MINHASH_PERMS, signature

# A sibling is what generation itself drops as a near-duplicate, with the same estimator
# (:mod:`tmax.minhash`): estimated Jaccard of the word 5-shingles (digits masked) of the instruction
# plus environment files at least 0.7. A corpus straight from ``tmax generate`` therefore reads 0; tasks
# added or imported afterwards show up, and generation's summary says how many draws it dropped.
SIBLING_JACCARD = NEAR_DUP_JACCARD
MAX_CLUSTERS, MIN_CLUSTERS, TASKS_PER_CLUSTER = 50, 5, 50
# k-means++ opens a new cluster only at a point farther than this (squared distance between unit
# vectors, 2 - 2 cos; 0.2 is cosine 0.9) from every centre: near-identical instructions are one cluster,
# not k clusters split by noise.
NEW_CLUSTER_DISTANCE = 0.2
KMEANS_SEED, KMEANS_ITERATIONS = 0, 100


def corpus_diversity(corpus: Path, rows: list[dict]) -> dict:
    """The diversity figures of one corpus folder (its task dirs on disk; ``rows``: its manifest rows)."""
    start = time.perf_counter()
    dirs = [d for d in sorted(corpus.iterdir()) if is_task_dir(d)] if corpus.is_dir() else []
    instructions = [_instruction(d) for d in dirs]
    k = cluster_count(len(dirs))
    vectors = tfidf([tokens(t, mask_digits=True) for t in instructions])
    return {"tasks_read": len(dirs), "templates": templates(rows),
            "near_identical_sibling_fraction": round(sibling_fraction(map(_agent_view, dirs)), 4),
            "sibling_jaccard": SIBLING_JACCARD, "siblings_dropped_of_draws": dropped_while_drawing(corpus),
            "tfidf_diversity": _round(tfidf_diversity(vectors)),
            "effective_clusters": _round(effective_clusters(_dense(vectors), k)), "clusters_k": k,
            "seconds": round(time.perf_counter() - start, 2)}


def dropped_while_drawing(corpus: Path) -> float | None:
    """The fraction of generation's draws it dropped as near-identical siblings (from its
    ``generate-summary.json``): the generator's own breadth, since the kept corpus has none by
    construction. None for a corpus without that summary."""
    f = corpus / "generate-summary.json"
    try:
        summary = json.loads(f.read_text())
        return round(summary["near_duplicates"] / summary["drawn"], 4) if summary["drawn"] else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def templates(rows: list[dict]) -> int | None:
    """Distinct (family, variant) pairs, variant "" for a family without variants; None when no row
    names a family (a corpus not made by a generator)."""
    pairs = {(r["family"], r.get("variant") or "") for r in rows if r.get("family")}
    return len(pairs) if pairs else None


def cluster_count(n: int) -> int:
    return min(MAX_CLUSTERS, max(MIN_CLUSTERS, n // TASKS_PER_CLUSTER))


# -- near-identical siblings ----------------------------------------------------------------------

def sibling_fraction(texts: Iterable[str], threshold: float = SIBLING_JACCARD) -> float:
    """The fraction of texts with at least one other text whose estimated Jaccard is >= threshold
    (read one at a time: only signatures are kept)."""
    sigs = np.array([signature(t) for t in texts], dtype=np.uint64)
    if len(sigs) < 2:
        return 0.0
    rows = MINHASH_PERMS // LSH_BANDS
    has_sibling = np.zeros(len(sigs), dtype=bool)
    for b in range(LSH_BANDS):
        buckets: dict[bytes, list[int]] = {}
        for i, band in enumerate(sigs[:, b * rows:(b + 1) * rows]):
            buckets.setdefault(band.tobytes(), []).append(i)
        for members in buckets.values():
            if len(members) > 1:
                _mark_siblings(sigs, np.array(members), has_sibling, threshold)
    return float(has_sibling.mean())


def _mark_siblings(sigs, members, has_sibling, threshold: float) -> None:
    """Compare each member of one LSH bucket not yet known to have a sibling with the others."""
    for pos, i in enumerate(members):
        if has_sibling[i]:
            continue
        others = np.delete(members, pos)
        agree = (sigs[others] == sigs[i]).mean(axis=1) >= threshold
        if agree.any():
            has_sibling[i] = True
            has_sibling[others[agree]] = True


# -- TF-IDF diversity and clusters ----------------------------------------------------------------

def tfidf_diversity(vectors: list[dict[str, float]]) -> float | None:
    """1 - the mean cosine over all pairs of distinct documents. For unit vectors the sum of all
    pairwise cosines is |sum of vectors|^2 minus the self-pairs, so no N x N matrix is needed."""
    n = len(vectors)
    if n < 2:
        return None
    total: Counter = Counter()
    for v in vectors:
        total.update(v)
    self_pairs = sum(1 for v in vectors if v)  # a zero vector (empty instruction) adds 0, not 1
    mean = (sum(w * w for w in total.values()) - self_pairs) / (n * (n - 1))
    return min(1.0, max(0.0, 1.0 - mean))  # rounding can step just outside


def _dense(vectors: list[dict[str, float]]):
    """Rows of the terms at least two documents share, renormalised: a term one document holds cannot
    put two documents in one cluster, and dropping it keeps the matrix small."""
    df = Counter(t for v in vectors for t in v)
    vocab = {t: i for i, t in enumerate(sorted(t for t, c in df.items() if c >= 2))}
    x = np.zeros((len(vectors), len(vocab)))
    for row, v in enumerate(vectors):
        for t, w in v.items():
            if t in vocab:
                x[row, vocab[t]] = w
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def effective_clusters(x, k: int, seed: int = KMEANS_SEED) -> float | None:
    """exp(entropy) of the cluster sizes of a seeded spherical k-means of the rows of ``x``."""
    if len(x) == 0:
        return None
    labels = kmeans(x, k, seed)
    p = np.bincount(labels) / len(labels)
    p = p[p > 0]
    return float(math.exp(-(p * np.log(p)).sum()))


def kmeans(x, k: int, seed: int = KMEANS_SEED):
    """Cluster labels: k-means++ seeding (new centres only beyond NEW_CLUSTER_DISTANCE), then Lloyd
    steps on cosine similarity until no label changes. Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    sq = (x * x).sum(axis=1)  # 1, or 0 for an empty row

    def dist2(c):
        return np.maximum(sq + c @ c - 2 * (x @ c), 0.0)

    centres = [x[int(rng.integers(len(x)))]]
    d2 = dist2(centres[0])
    while len(centres) < k:
        far = d2 > NEW_CLUSTER_DISTANCE
        if not far.any():
            break
        weights = np.where(far, d2, 0.0)
        pick = int(rng.choice(len(x), p=weights / weights.sum()))
        centres.append(x[pick])
        d2 = np.minimum(d2, dist2(x[pick]))
    c = np.stack(centres)
    labels = np.full(len(x), -1)
    for _ in range(KMEANS_ITERATIONS):
        new = np.argmax(x @ c.T, axis=1)
        if (new == labels).all():
            break
        labels = new
        for j in range(len(c)):
            members = x[labels == j]
            if len(members):
                mean = members.mean(axis=0)
                norm = np.linalg.norm(mean)
                c[j] = mean / norm if norm else mean
    return labels


# -- reading a task -------------------------------------------------------------------------------

def _instruction(task_dir: Path) -> str:
    for name in ("instruction.md", "task.yaml"):
        f = task_dir / name
        if f.is_file():
            return f.read_text(errors="replace")
    return ""


def _agent_view(task_dir: Path) -> str:
    """What the agent sees: instruction and environment files (never tests or solution)."""
    if (task_dir / "instruction.md").is_file():
        return task_text(task_dir)
    return _instruction(task_dir)


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)
