"""Corpus diversity in ``tmax analyze``: templates, near-identical sibling fraction, TF-IDF diversity and
effective clusters tell a corpus of number-swapped siblings from a varied one, land in stats.json and
stand side by side in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tmax.analysis import analyze
from tmax.analysis.diversity import cluster_count, corpus_diversity, sibling_fraction
from tmax.analysis.stats import corpus_rows
from tmax.families import load_all
from tmax.families.base import build_task
from tmax.generate import axes_for_family, generate_corpus

SIBLING_FAMILIES = ("cron_next_runs", "semver_resolve")

VARIED = [
    "Rotate the nginx access logs in /var/log/nginx every night at midnight, keep fourteen compressed "
    "copies and make sure nginx reopens its log files after each rotation.",
    "Our Postgres replica lags behind the primary by several minutes. Find out why from the server logs "
    "in /srv/pg/logs and write the root cause to /app/answer.txt.",
    "Train a logistic regression on /data/train.csv to predict churn, report the ROC AUC on the held-out "
    "split and save the fitted coefficients as JSON.",
    "A Rust crate in /work/parser fails to compile after a dependency upgrade; update the code to the new "
    "trait signatures without pinning the old version.",
    "Extract every email address from the mailbox export /inbox/export.mbox, deduplicate them ignoring "
    "case and print them sorted, one per line.",
    "Harden the SSH daemon: disable password logins and root login, allow only the group admins, and "
    "reload sshd without dropping the current session.",
    "Compute the eigenvalues of the stiffness matrix stored in matrix.npy and plot the first ten mode "
    "shapes of the cantilever beam to modes.png.",
    "Write a Makefile for the C project in /src so that make builds the library and the tests, and make "
    "check runs the test binary under valgrind.",
    "Resize every JPEG image under /photos to at most 1024 pixels on the long side, keep the EXIF "
    "orientation and write the results next to the originals.",
    "Find which commit between v1.2 and v1.3 made the benchmark in bench/sort.py twice as slow, using git "
    "bisect with a script that times it.",
]


def _write_task(d: Path, instruction: str, family: str, files: dict[str, str] | None = None) -> None:
    d.mkdir(parents=True)
    (d / "instruction.md").write_text(instruction)
    (d / "task.toml").write_text(f'[task]\nname = "{d.name}"\n\n[metadata]\nfamily = "{family}"\nvariant = ""\n')
    for rel, text in (files or {}).items():
        f = d / "environment" / "files" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("diversity")
    siblings = root / "siblings"  # one family build per index, same axes: only the drawn numbers differ
    families = load_all()
    for name in SIBLING_FAMILIES:
        fam = families[name]
        axes, variant = axes_for_family(fam, 0, 0, level=1), (fam.variants[0] if fam.variants else None)
        for index in range(6):
            build_task(fam, axes, 0, index, siblings / f"{index:02d}-{name}", variant=variant)
    varied = root / "varied"
    generate_corpus(14, 11, "rl_v2", varied, jobs=1)
    hand_siblings, hand_varied = root / "hand-siblings", root / "hand-varied"
    for i in range(10):
        n = 100 + 37 * i
        _write_task(hand_siblings / f"t{i:02d}",
                    f"Count the lines of /app/logs/app-{n}.log that contain ERROR {n % 7} and write the count to "
                    f"/app/out-{n}.txt. Only lines from port {8000 + n} count; ignore lines older than {n} days.",
                    "count_errors", {f"logs/app-{n}.log": "".join(f"{d} ERROR {d % 7} port {8000 + n}\n"
                                                                   for d in range(n, n + 40))})
        _write_task(hand_varied / f"t{i:02d}", VARIED[i], f"family_{i}")
    return {"siblings": siblings, "varied": varied, "hand-siblings": hand_siblings, "hand-varied": hand_varied}


def _diversity(corpus: Path) -> dict:
    return corpus_diversity(corpus, corpus_rows(corpus))


def test_number_swapped_siblings_read_as_siblings_with_low_diversity(corpora):
    d = _diversity(corpora["siblings"])
    assert d["tasks_read"] == 12
    assert d["templates"] == 2
    assert d["near_identical_sibling_fraction"] == 1.0
    assert d["tfidf_diversity"] < 0.45  # two templates: cross-template pairs keep it above 0
    assert d["effective_clusters"] <= 2.2  # two templates: at most about two clusters, not k = 5


def test_a_generated_corpus_reads_varied(corpora):
    d = _diversity(corpora["varied"])
    rows = corpus_rows(corpora["varied"])
    assert d["templates"] == len({(r["family"], r["variant"]) for r in rows}) >= 8
    # Generation drops near-duplicates with analysis's own estimator, so none is left; what it dropped
    # is the generator's breadth, read from its summary.
    assert d["near_identical_sibling_fraction"] == 0.0
    summary = json.loads((corpora["varied"] / "generate-summary.json").read_text())
    assert d["siblings_dropped_of_draws"] == round(summary["near_duplicates"] / summary["drawn"], 4)
    assert d["tfidf_diversity"] > 0.6
    assert d["effective_clusters"] >= 3.5
    sib = _diversity(corpora["siblings"])
    assert d["tfidf_diversity"] > sib["tfidf_diversity"] + 0.3
    assert d["effective_clusters"] > sib["effective_clusters"] + 1.5


def test_hand_written_corpora_order_the_same_way(corpora):
    sib, var = _diversity(corpora["hand-siblings"]), _diversity(corpora["hand-varied"])
    assert (sib["templates"], var["templates"]) == (1, 10)
    assert sib["near_identical_sibling_fraction"] == 1.0
    assert var["near_identical_sibling_fraction"] == 0.0
    assert sib["tfidf_diversity"] < 0.05 < 0.8 < var["tfidf_diversity"]  # digits masked: the siblings are one text
    assert sib["effective_clusters"] == pytest.approx(1.0)
    assert var["effective_clusters"] >= 4.0  # k = 5 for 10 tasks; unrelated instructions spread over them


def test_generation_drops_exactly_the_siblings_analysis_counts(corpora):
    from tmax.analysis.diversity import _agent_view, sibling_fraction
    from tmax.generate import near_duplicates

    dirs = sorted(p for c in ("siblings", "varied") for p in corpora[c].iterdir() if p.is_dir())
    dups = near_duplicates(dirs)
    assert dups  # the number-swapped builds
    assert sibling_fraction(_agent_view(d) for d in dirs if d.name not in dups) == 0.0
    assert sibling_fraction(_agent_view(d) for d in dirs) > 0.0


def test_sibling_fraction_counts_every_task_of_a_pair():
    base = ("Parse the access log at /srv/www/access.log, find the client address with the most requests "
            "between the two timestamps given and write it to /app/answer.txt with its request count.")
    other = ("Build a static site from the markdown notes in /notes with a table of contents per page and "
             "serve it on a local port so that every internal link resolves without a 404.")
    assert sibling_fraction([base + " Port 8080.", base + " Port 8081.", other]) == pytest.approx(2 / 3)
    assert sibling_fraction([base, other]) == 0.0
    assert sibling_fraction([base]) == 0.0


def test_cluster_count_follows_corpus_size():
    assert [cluster_count(n) for n in (10, 250, 400, 2000, 10_000)] == [5, 5, 8, 40, 50]


def test_figures_are_deterministic(corpora):
    assert _diversity(corpora["varied"]) | {"seconds": 0} == _diversity(corpora["varied"]) | {"seconds": 0}


def test_stats_json_and_report_show_two_corpora_side_by_side(corpora, tmp_path):
    out = tmp_path / "report"
    analyze([corpora["siblings"], corpora["varied"]], [], out)
    stats = json.loads((out / "stats.json").read_text())
    for name in ("siblings", "varied"):
        d = stats["corpora"][name]["diversity"]
        assert {"templates", "near_identical_sibling_fraction", "tfidf_diversity", "effective_clusters"} <= set(d)
    assert stats["corpora"]["siblings"]["diversity"]["near_identical_sibling_fraction"] == 1.0
    page = (out / "report.html").read_text()
    table = page[page.index("<h3>Diversity</h3>"):]
    table = table[:table.index("</table>")]
    assert "<th>metric</th><th>siblings</th><th>varied</th>" in table
    sib, var = stats["corpora"]["siblings"]["diversity"], stats["corpora"]["varied"]["diversity"]
    assert (f"<td>near-identical sibling fraction</td><td>{1.0:.3f}</td>"
            f"<td>{var['near_identical_sibling_fraction']:.3f}</td>") in table
    assert (f"<td>TF-IDF diversity</td><td>{sib['tfidf_diversity']:.3f}</td>"
            f"<td>{var['tfidf_diversity']:.3f}</td>") in table
    assert f"<td>templates (family, variant)</td><td>2</td><td>{var['templates']}</td>" in table
