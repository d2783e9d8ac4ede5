"""Text features shared by the diversity figures and decontamination: word tokens, word shingles and
TF-IDF vectors (sparse, as dicts), in plain Python so that neither needs an extra dependency."""

from __future__ import annotations

import math
import re
from collections import Counter

WORD = re.compile(r"[a-z0-9_]+")


def tokens(text: str, mask_digits: bool = False) -> list[str]:
    """Lower-case word tokens; with ``mask_digits`` every run of digits reads ``0`` (so siblings that
    differ only in numbers read the same)."""
    text = text.lower()
    if mask_digits:
        text = re.sub(r"\d+", "0", text)
    return WORD.findall(text)


def shingles(words: list[str], n: int) -> set[tuple[str, ...]]:
    """Every run of ``n`` consecutive words (a text shorter than ``n`` words is one shingle)."""
    if len(words) < n:
        return {tuple(words)} if words else set()
    return set(zip(*(words[i:] for i in range(n))))


def terms(words: list[str], max_n: int = 1) -> list[str]:
    """Word n-grams for n = 1..max_n, bigrams and longer joined by a space."""
    out = list(words)
    for n in range(2, max_n + 1):
        out += [" ".join(g) for g in zip(*(words[i:] for i in range(n)))]
    return out


def tfidf(docs: list[list[str]], idf_offset: float = 1.0) -> list[dict[str, float]]:
    """L2-normalised TF-IDF vectors of documents given as term lists: sublinear tf (1 + ln count) and
    smoothed idf ln((1 + N) / (1 + df)) + ``idf_offset``. With the offset 1 a term every document holds
    still counts (identical documents have cosine 1); with 0 it weighs nothing. A document without
    weighted terms is the zero vector."""
    df = Counter(t for doc in docs for t in set(doc))
    n = len(docs)
    idf = {t: math.log((1 + n) / (1 + d)) + idf_offset for t, d in df.items()}
    vectors = []
    for doc in docs:
        weights = {t: (1 + math.log(c)) * idf[t] for t, c in Counter(doc).items() if idf[t] > 0}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        vectors.append({t: w / norm for t, w in weights.items()})
    return vectors
