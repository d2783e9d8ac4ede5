"""How varied a corpus is, four ways: templates (distinct family and variant), the fraction of tasks
with a near-identical sibling (MinHash with LSH banding over what the agent sees), TF-IDF diversity of
instructions (1 - mean pairwise cosine) and effective clusters (exp of the entropy of a k-means
assignment of those TF-IDF vectors).

Digits are masked everywhere here: a task whose numbers were swapped is the same task to a learner.
numpy does the arithmetic (it comes with matplotlib, the ``analysis`` extra)."""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from tmax.analysis.text import tfidf, tokens
from tmax.discover import is_task_dir
from tmax.generate import MINHASH_PERMS, NEAR_DUP_JACCARD, SHINGLE, task_text

# A sibling is what generation itself drops as a near-duplicate: estimated Jaccard of the word
# 5-shingles (digits masked) of the instruction plus environment files at least 0.7. A corpus straight
# from ``tmax generate`` therefore reads near 0; tasks added or imported afterwards show up.
SIBLING_JACCARD = NEAR_DUP_JACCARD
LSH_BANDS = 16  # 16 bands of 4 rows: a pair at Jaccard 0.7 is a candidate with probability 0.99
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
            "sibling_jaccard": SIBLING_JACCARD,
            "tfidf_diversity": _round(tfidf_diversity(vectors)),
            "effective_clusters": _round(effective_clusters(_dense(vectors), k)), "clusters_k": k,
            "seconds": round(time.perf_counter() - start, 2)}


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


def signature(text: str):
    """A MinHash signature (MINHASH_PERMS uint64) of the word SHINGLE-grams of ``text``, digits masked.

    All in numpy: the pure-Python ``tmax.generate.minhash`` takes ~0.1 s for a task with large fixtures
    (minutes for a corpus), this a few milliseconds. Hashes are fixed functions of the bytes, so the
    figures do not depend on the interpreter's hash seed."""
    words = word_hashes(text)
    if len(words) == 0:
        words = np.zeros(1, dtype=np.uint64)
    width = min(SHINGLE, len(words))
    acc = np.zeros(len(words) - width + 1, dtype=np.uint64)
    for j in range(width):  # position-dependent: "a b" and "b a" differ
        acc = _mix(acc * np.uint64(0x100000001B3) + words[j:len(words) - width + 1 + j])
    shingle_hashes = np.unique(acc)
    return (shingle_hashes[None, :] * _PERM_MUL[:, None] + _PERM_ADD[:, None]).min(axis=1)


def word_hashes(text: str):
    """One uint64 per word of ``text`` (a maximal run of ASCII letters, digits and _; letters folded to
    lower case; every run of digits read as one 0), computed on the bytes without a Python loop."""
    b = np.frombuffer(text.encode("utf-8", "replace"), dtype=np.uint8)
    if len(b) == 0:
        return np.zeros(0, dtype=np.uint64)
    b = b + ((b >= 65) & (b <= 90)).astype(np.uint8) * 32  # A-Z to a-z
    digit = (b >= 48) & (b <= 57)
    word = digit | ((b >= 97) & (b <= 122)) | (b == 95)
    begins = word & ~np.r_[False, word[:-1]]
    word_id = np.cumsum(begins) - 1
    keep = np.flatnonzero(word & ~(digit & np.r_[False, digit[:-1]]))  # first digit of each run only
    if len(keep) == 0:
        return np.zeros(0, dtype=np.uint64)
    chars = np.where(digit[keep], 48, b[keep]).astype(np.uint64)
    ids = word_id[keep]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    pos = np.arange(len(keep)) - np.repeat(starts, np.diff(np.r_[starts, len(keep)]))
    per_char = _mix((chars << np.uint64(32)) | pos.astype(np.uint64))
    return _mix(np.add.reduceat(per_char, starts))


def _mix(x):
    """splitmix64's finaliser: every input bit moves every output bit (uint64 arithmetic wraps)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _blake(s: str) -> int:
    return int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "big")


# One hash a*x + b (mod 2^64, a odd) per permutation, over shingle hashes that are already mixed.
_PERM_MUL = np.array([_blake(f"mul:{p}") | 1 for p in range(MINHASH_PERMS)], dtype=np.uint64)
_PERM_ADD = np.array([_blake(f"add:{p}") for p in range(MINHASH_PERMS)], dtype=np.uint64)


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
