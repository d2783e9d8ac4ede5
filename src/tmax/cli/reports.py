"""Verbs that read corpora and jobs: analyze, decontam, calibrate."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from tmax.cli.common import console, main, rate_band
from tmax.term import text


@main.command()
@click.argument("corpus", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--job", "jobs_", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="A job directory (repeatable): several side by side.")
@click.option("--out", type=click.Path(path_type=Path), required=True)
def analyze(corpus, jobs_, out) -> None:
    """Composition, balance, pass@k by axis, difficulty buckets, turns, tokens and command mix.

    Writes PNG plots, report.html (self-contained) and stats.json (every figure) to --out. Several
    corpora and jobs appear side by side.

    \b
    Examples:
      tmax analyze corpus --out report
      tmax analyze corpus --job jobs/base --job jobs/trained --out report
    """
    from tmax.analysis import analyze as run_analyze

    if not corpus and not jobs_:
        raise click.UsageError("give at least one CORPUS or --job")
    stats = run_analyze(list(corpus), list(jobs_), out)
    for name, c in stats["corpora"].items():
        bal = ", ".join(f"{a} {v['balance']:.3f}" for a, v in c["composition"].items())
        console.print(text(f"corpus {name}: {c['tasks']} tasks; balance: {bal}"), highlight=False)
        d = c["diversity"]
        console.print(text(f"  diversity: templates {d['templates']}, near-identical siblings "
                           f"{d['near_identical_sibling_fraction']:.3f}, TF-IDF {d['tfidf_diversity']}, effective "
                           f"clusters {d['effective_clusters']} (k={d['clusters_k']})"), highlight=False)
    for name, j in stats["jobs"].items():
        console.print(text(f"job {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in j["pass_at_k"].items()
                                                     if v is not None)), highlight=False)
    console.print(text(f"report: {out / 'report.html'}"))


@main.command()
@click.argument("corpus", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--against", type=click.Path(path_type=Path), required=True,
              help="A benchmark: task dirs (instruction.md, task.yaml, tests, environment) or .md/.txt/.json/.jsonl files.")
@click.option("--threshold", type=float, default=None,
              help="TF-IDF coverage of a benchmark instruction that flags a paraphrase (default 0.2, calibrated).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path("decontam.json"), show_default=True,
              help="The JSON report; drop.txt (the tasks to drop, one per line) is written beside it.")
def decontam(corpus, against, threshold, out) -> None:
    """Flag tasks that overlap a benchmark: a shared word 13-gram, a paraphrase (TF-IDF coverage of
    the benchmark instruction), or a benchmark file's distinctive lines found in the task's
    instruction, tests, environment or solution. Exit 0 if nothing is flagged, 1 if anything is,
    2 on bad input (an empty or unreadable benchmark).

    \b
    Example:
      tmax decontam corpus --against benchmarks/tb2 --out decontam/report.json
    """
    from tmax.analysis.decontam import decontam_main

    sys.exit(decontam_main(list(corpus), against, out, threshold))


@main.command()
@click.option("--job", "jobs_", multiple=True, required=True, type=click.Path(exists=True, path_type=Path),
              help="Job directories whose trials measure pass rates (repeatable).")
@click.option("--band", default="0.2,0.8", show_default=True, callback=rate_band, help="Target pass-rate band lo,hi.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path("calibration.json"),
              show_default=True)
def calibrate(jobs_, band, out) -> None:
    """Measure pass rates per family and level from jobs; write a table for `generate --calibration`.

    \b
    Example:
      tmax solve corpus --policy openai:m --base-url URL -k 8 --job jobs/probe
      tmax calibrate --job jobs/probe --band 0.2,0.8 --out calibration.json
      tmax generate --n 1000 --out corpus2 --calibration calibration.json
    """
    from tmax.calibrate import write

    lo, hi = band
    doc = write(list(jobs_), out, band)
    table = Table(title=f"pass rate estimates (band {lo}-{hi})")
    for col in ("family", "level", "passed/trials", "estimate"):
        table.add_column(col)
    for fam, levels in sorted(doc["families"].items()):
        for level, cell in sorted(levels.items()):
            table.add_row(text(fam), text(level), f"{cell['passed']}/{cell['trials']}", f"{cell['estimate']:.2f}")
    console.print(table)
    console.print(f"wrote {out}")
