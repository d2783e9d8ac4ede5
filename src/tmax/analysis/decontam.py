"""Decontamination: find corpus tasks that reproduce a benchmark's tasks, so that they can be dropped
before a corpus is trained on or published.

A task is flagged against a benchmark item when any of these holds:

- 13-gram: its instruction shares a word 13-gram with the item's (the exact test of the
  contamination literature);
- paraphrase: its instruction covers at least ``THRESHOLD`` of the item instruction's TF-IDF mass.
  Terms are word 1- and 2-grams plus names (paths, file names, ports, versions), idf is fitted on the
  corpus and the benchmark together with no floor, so what every generated task says weighs nothing;
  coverage is the sum of the squared weights of the item's terms that the task also has. Unlike a
  cosine or a Jaccard it is not diluted when the task wraps the item's text in other text;
- contained: at least ``CONTAINMENT`` of the distinctive lines and sentences of some text of the item
  (its instruction, a test, an environment or solution file) occur somewhere in the task (instruction
  and every file under it), so a benchmark test copied into ``tests/`` or ``environment/`` is caught.
  Lines several benchmark items share (a harness's test.sh, a base Dockerfile) are scaffolding, not
  any one task's content, and do not count.

Calibration of ``THRESHOLD`` (the controls are in tests/test_decontam.py): eight benchmark-like tasks,
one hand-written paraphrase of each (same paths, ports and names, other words), each also wrapped in
a generated task's opening and closing paragraphs and appended to a whole generated instruction.
Beside a generated rl_v2 corpus of 1,443 tasks (2,000 drawn, near-duplicates dropped) the paraphrases
cover 0.26-0.46 of their item, plain, wrapped or appended alike, and no generated task covers more
than 0.09 of any item; beside 58 generated tasks (idf from fewer documents) paraphrases cover
0.24-0.46 and generated tasks at most 0.15 (a read-through cache simulator against the key-value
server item: same topic, another task). 0.2 lies between, with a margin on both sides. A benchmark
instruction of a dozen words has few terms to cover and is matched less surely than these.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tmax.analysis.text import shingles, terms, tfidf, tokens

NGRAM = 13
THRESHOLD = 0.2  # TF-IDF coverage of a benchmark instruction by a task's; see the calibration above
CONTAINMENT = 0.5  # fraction of a benchmark text's distinctive lines and sentences found in a task
UNIT_WORDS = 4  # a line or sentence of fewer words ("import json", "fi") is too generic to count
MIN_UNITS = 3  # a benchmark text with fewer distinctive units is too short to match on containment
MAX_FILE_BYTES = 1_000_000  # larger files (data, binaries) are not compared
NAME = re.compile(r"[/:]|\w\.\w|\d")
NAME_EDGES = "`'\"()[]{}<>,;.!?*"
INSTRUCTION_FILES = ("instruction.md", "task.yaml")
SKIPPED_FILES = {"task.toml"}  # metadata: names and numbers, not task content
LOOSE_SUFFIXES = (".md", ".txt", ".json", ".jsonl")
INSTRUCTION_KEYS = ("instruction", "prompt", "task", "question", "problem")


class DecontamError(ValueError):
    """The user's input cannot be checked (no benchmark items, no tasks): names the path and what was expected."""


@dataclass
class Item:
    """A benchmark task or a corpus task: its instruction and its other text files (path -> text)."""

    name: str
    instruction: str
    files: dict[str, str] = field(default_factory=dict)


# -- reading ----------------------------------------------------------------------------------

def benchmark_items(root: Path) -> list[Item]:
    """A benchmark's tasks: every task dir under ``root`` (instruction.md or task.yaml, with its tests,
    environment and solution files), else every .md/.txt file and every instruction in .json/.jsonl."""
    root = Path(root)
    if not root.is_dir():
        raise DecontamError(f"--against {root}: not a directory; expected a folder of benchmark task dirs "
                            "(instruction.md or task.yaml) or of .md/.txt/.json/.jsonl instruction files")
    dirs = _task_dirs(root)
    items = [read_task(d, _relative_name(d, root)) for d in dirs] if dirs else _loose_items(root)
    items = [i for i in items if i.instruction.strip() or i.files]
    if not items:
        raise DecontamError(f"--against {root}: no benchmark items found; expected task directories holding "
                            "instruction.md or task.yaml, or .md/.txt/.json/.jsonl files of instructions")
    return items


def read_task(task_dir: Path, name: str | None = None) -> Item:
    """A task dir's instruction and every other text file under it (tests, environment, solution)."""
    instruction = ""
    for marker in INSTRUCTION_FILES:
        f = task_dir / marker
        if f.is_file():
            instruction = _instruction_of(f)
            break
    files = {}
    for f in sorted(task_dir.rglob("*")):
        rel = str(f.relative_to(task_dir))
        if rel in INSTRUCTION_FILES or rel in SKIPPED_FILES or not f.is_file() or f.is_symlink():
            continue
        text = _text_file(f)
        if text is not None:
            files[rel] = text
    return Item(name or task_dir.name, instruction, files)


def _task_dirs(root: Path) -> list[Path]:
    found = sorted({f.parent for marker in INSTRUCTION_FILES for f in root.rglob(marker)})
    # a dir inside another task dir (a fixture that happens to hold an instruction.md) is that task's file
    return [d for d in found if not any(p in found for p in d.parents)]


def _relative_name(d: Path, root: Path) -> str:
    return str(d.relative_to(root)) if d != root else root.name


def _instruction_of(f: Path) -> str:
    text = f.read_text(errors="replace")
    if f.suffix != ".yaml":
        return text
    import yaml  # Terminal-Bench 1 keeps the instruction in task.yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(doc, dict):
        if isinstance(doc.get("instruction"), str):
            return doc["instruction"]
        descriptions = doc.get("descriptions")
        if isinstance(descriptions, list) and descriptions and isinstance(descriptions[0], dict):
            return str(descriptions[0].get("description", text))
    return text


def _loose_items(root: Path) -> list[Item]:
    items = []
    for f in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in LOOSE_SUFFIXES):
        name = str(f.relative_to(root))
        if f.suffix in (".json", ".jsonl"):
            items += [Item(f"{name}:{i}", text) for i, text in enumerate(_json_instructions(f))]
        else:
            items.append(Item(name, f.read_text(errors="replace")))
    return items


def _json_instructions(f: Path) -> list[str]:
    """Instructions in a .json (a list, or an object) or .jsonl file: strings, or objects' instruction
    (prompt, task, question, problem) field; a file of neither is one instruction, its whole text."""
    text = f.read_text(errors="replace")
    try:
        docs = [json.loads(line) for line in text.splitlines() if line.strip()] if f.suffix == ".jsonl" \
            else json.loads(text)
    except json.JSONDecodeError:
        return [text]
    docs = docs if isinstance(docs, list) else [docs]
    out = []
    for d in docs:
        if isinstance(d, str):
            out.append(d)
        elif isinstance(d, dict):
            out += [d[k] for k in INSTRUCTION_KEYS if isinstance(d.get(k), str)][:1]
    return out or [text]


def _text_file(f: Path) -> str | None:
    try:
        if f.stat().st_size > MAX_FILE_BYTES:
            return None
        data = f.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None  # binary
    return data.decode(errors="replace")


# -- scoring ----------------------------------------------------------------------------------

class Index:
    """A benchmark ready to compare tasks against: its 13-grams, TF-IDF vectors and text units."""

    def __init__(self, bench: list[Item], corpus_instructions: list[str]):
        self.bench = bench
        self.ngrams: dict[tuple[str, ...], set[int]] = {}
        for i, item in enumerate(bench):
            for g in _ngrams(item.instruction):
                self.ngrams.setdefault(g, set()).add(i)
        self.postings = self._term_postings(corpus_instructions)
        self.texts: list[tuple[int, str, int]] = []  # (item, file, distinctive units) of each text long enough
        self.unit_texts: dict[str, list[int]] = {}  # unit -> the texts holding it
        self._index_units()

    def _term_postings(self, corpus_instructions: list[str]) -> dict[str, list[tuple[int, float]]]:
        """term -> [(item, the term's share of the item's TF-IDF mass)], idf from corpus and benchmark."""
        docs = [instruction_terms(t) for t in corpus_instructions + [b.instruction for b in self.bench]]
        postings: dict[str, list[tuple[int, float]]] = {}
        for i, v in enumerate(tfidf(docs, idf_offset=0.0)[len(corpus_instructions):]):
            for t, w in v.items():
                postings.setdefault(t, []).append((i, w * w))
        return postings

    def _index_units(self) -> None:
        per_item = [{rel: units(text) for rel, text in [("instruction.md", item.instruction), *item.files.items()]}
                    for item in self.bench]
        items_holding = Counter(u for files in per_item for u in set().union(*files.values()))
        for i, files in enumerate(per_item):
            for rel, found in files.items():
                distinctive = {u for u in found if items_holding[u] == 1 and len(tokens(u)) >= UNIT_WORDS}
                if len(distinctive) >= MIN_UNITS:
                    for u in distinctive:
                        self.unit_texts.setdefault(u, []).append(len(self.texts))
                    self.texts.append((i, rel, len(distinctive)))

    def score(self, task: Item) -> dict:
        ngram_hits = sorted({self.bench[i].name for g in _ngrams(task.instruction) & self.ngrams.keys()
                             for i in self.ngrams[g]})
        coverage: Counter = Counter()
        for t in set(instruction_terms(task.instruction)):
            for i, mass in self.postings.get(t, ()):
                coverage[i] += mass
        best, best_cov = max(coverage.items(), key=lambda kv: (kv[1], -kv[0]), default=(None, 0.0))
        return {"task": task.name, "ngram_matches": ngram_hits,
                "fuzzy_match": self.bench[best].name if best is not None else None,
                "fuzzy_similarity": round(best_cov, 3), "contained": self._contained(task)}

    def _contained(self, task: Item) -> list[dict]:
        """Benchmark texts at least CONTAINMENT of whose distinctive units occur somewhere in the task."""
        found: set[str] = set()
        for text in [task.instruction, *task.files.values()]:
            found |= units(text) & self.unit_texts.keys()
        hits: Counter = Counter(t for u in found for t in self.unit_texts[u])
        out = []
        for t, n in hits.most_common():
            item, rel, total = self.texts[t]
            if n / total >= CONTAINMENT:
                out.append({"benchmark": self.bench[item].name, "file": rel, "containment": round(n / total, 3)})
        return out


def instruction_terms(text: str) -> list[str]:
    """Word 1- and 2-grams and the instruction's names: paths, file names, ports, versions (a token with
    a / . : or a digit). A paraphrase keeps the names of what it asks about while it changes the words;
    a generated task on the same topic names other files."""
    names = ["=" + n for n in (w.strip(NAME_EDGES).lower() for w in text.split()) if NAME.search(n)]
    return terms(tokens(text), 2) + names


def units(text: str) -> set[str]:
    """A text's lines and sentences, lower case, stripped: a copied file keeps them whatever wraps it
    or however it is indented. Plain string methods, so that megabytes of fixtures read fast."""
    return {u.strip() for u in text.lower().replace(". ", ".\n").splitlines()} - {""}


def _ngrams(text: str) -> set[tuple[str, ...]]:
    words = tokens(text)
    return shingles(words, NGRAM) if len(words) >= NGRAM else set()


def decontaminate(corpus: list[Path], against: Path, threshold: float | None = None) -> dict:
    """Compare every task dir of ``corpus`` with the benchmark under ``against``: the report (which
    tasks are flagged and why, and ``drop``: their dir names). Raises DecontamError when there is
    nothing to compare."""
    threshold = THRESHOLD if threshold is None else threshold
    bench = benchmark_items(against)
    tasks = [read_task(Path(d)) for d in corpus if Path(d).is_dir()]
    if not tasks:
        raise DecontamError(f"corpus {', '.join(map(str, corpus)) or '(none)'}: no task directories to check")
    index = Index(bench, [t.instruction for t in tasks])
    flagged = []
    for task in tasks:
        s = index.score(task)
        reasons = (["13-gram"] if s["ngram_matches"] else []) + \
                  (["paraphrase"] if s["fuzzy_similarity"] >= threshold else []) + \
                  (["contained"] if s["contained"] else [])
        if reasons:
            flagged.append({**s, "reasons": reasons})
    return {"tasks": len(tasks), "benchmark": str(against), "benchmark_items": len(bench),
            "threshold": threshold, "containment_threshold": CONTAINMENT, "flagged": flagged,
            "flagged_fraction": len(flagged) / len(tasks), "drop": [f["task"] for f in flagged]}


def decontam_main(corpus: list[str | Path], against: Path, out: Path | None = None,
                  threshold: float | None = None) -> int:
    """``tmax decontam``: print what is flagged and a summary, write the JSON report to ``out`` and the
    names of the tasks to drop to drop.txt beside it; the exit code: 0 clean, 1 flagged, 2 bad input."""
    from tmax.discover import expand_task_dirs
    from tmax.term import safe

    try:
        report = decontaminate(expand_task_dirs(corpus), Path(against), threshold)
    except DecontamError as e:
        print(safe(f"error: {e}"), file=sys.stderr)
        return 2
    for f in report["flagged"]:
        why = [f"13-gram with {', '.join(f['ngram_matches'][:3])}"] if f["ngram_matches"] else []
        why += [f"paraphrase of {f['fuzzy_match']} ({f['fuzzy_similarity']})"] if "paraphrase" in f["reasons"] else []
        why += [f"contains {c['benchmark']}/{c['file']} ({c['containment']})" for c in f["contained"][:3]]
        print(safe(f"flagged {f['task']}: {'; '.join(why)}", oneline=True))  # names are the corpus author's
    print(f"{len(report['flagged'])}/{report['tasks']} tasks flagged ({100 * report['flagged_fraction']:.2f}%) "
          + safe(f"against {report['benchmark_items']} benchmark items in {report['benchmark']}", oneline=True))
    if out:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1) + "\n")
        drop = out.parent / "drop.txt"
        drop.write_text("".join(name + "\n" for name in report["drop"]))
        print(safe(f"report: {out}; tasks to drop: {drop}", oneline=True))
    return 1 if report["flagged"] else 0
