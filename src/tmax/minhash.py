"""Near-identical texts by MinHash with LSH banding: the one estimator that generation drops
near-duplicates with and that ``tmax analyze`` counts siblings with, so a corpus straight from
``tmax generate`` has no pair that analysis would call siblings.

A signature is MINHASH_PERMS uint64 minima over the word SHINGLE-grams of a text, digits masked (a task
whose numbers were swapped is the same task to a learner). All in numpy: a task with large fixtures
takes a few milliseconds. Hashes are fixed functions of the bytes, so nothing depends on the
interpreter's hash seed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np

MINHASH_PERMS = 64
SHINGLE = 5
LSH_BANDS = 16  # 16 bands of 4 rows: a pair at Jaccard 0.7 is a candidate with probability 0.99


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


def signature(text: str):
    """The MinHash signature (MINHASH_PERMS uint64) of the word SHINGLE-grams of ``text``."""
    words = word_hashes(text)
    if len(words) == 0:
        words = np.zeros(1, dtype=np.uint64)
    width = min(SHINGLE, len(words))
    acc = np.zeros(len(words) - width + 1, dtype=np.uint64)
    for j in range(width):  # position-dependent: "a b" and "b a" differ
        acc = _mix(acc * np.uint64(0x100000001B3) + words[j:len(words) - width + 1 + j])
    shingle_hashes = np.unique(acc)
    return (shingle_hashes[None, :] * _PERM_MUL[:, None] + _PERM_ADD[:, None]).min(axis=1)


def jaccard(a, b) -> float:
    """The Jaccard similarity two signatures estimate."""
    return float((np.asarray(a) == np.asarray(b)).mean())


def band_keys(sig) -> Iterator[tuple[int, bytes]]:
    """The LSH buckets a signature falls in: texts that share one are compared."""
    rows = MINHASH_PERMS // LSH_BANDS
    for band in range(LSH_BANDS):
        yield band, np.asarray(sig[band * rows:(band + 1) * rows], dtype=np.uint64).tobytes()
