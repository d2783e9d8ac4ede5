"""``tmax analyze``: composition, balance, diversity (templates, near-identical siblings, TF-IDF
diversity, effective clusters), pass@k by axis, difficulty buckets, turns, tokens and command mix for
one or several corpora and jobs side by side; PNG plots, one self-contained HTML report and
``stats.json`` holding every figure."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from tmax.analysis.stats import composition, corpus_rows, job_stats


def analyze(corpora: list[Path], jobs: list[Path], out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    from tmax.analysis.diversity import corpus_diversity

    stats: dict = {"corpora": {}, "jobs": {}}
    meta_by_task: dict[str, dict] = {}
    for c in corpora:
        rows = corpus_rows(c)
        for r in rows:
            if "task" in r:
                meta_by_task[r["task"]] = r
        stats["corpora"][_label(c)] = {"path": str(c), "tasks": len(rows), "composition": composition(rows),
                                       "diversity": corpus_diversity(c, rows)}
    for j in jobs:
        stats["jobs"][_label(j)] = job_stats(j, meta_by_task)
    from tmax.analysis import plots

    images = plots.make_all(stats, out)
    (out / "stats.json").write_text(json.dumps(stats, indent=1, sort_keys=True, default=str) + "\n")
    (out / "report.html").write_text(render_html(stats, images, out))
    return stats


def _label(p: Path) -> str:
    return p.resolve().name


def render_html(stats: dict, images: list[tuple[str, Path]], out: Path) -> str:
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>tmax report</title><style>",
             "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
             "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%}"
             "h2{border-bottom:2px solid #ddd;padding-bottom:4px}",
             "</style></head><body><h1>tmax report</h1>"]
    if stats["corpora"]:
        parts.append("<h2>Corpora</h2>")
        names = list(stats["corpora"])
        axes = sorted({a for c in stats["corpora"].values() for a in c["composition"]})
        rows = [[a] + [_fmt(stats["corpora"][n]["composition"].get(a, {}).get("balance")) for n in names]
                for a in axes]
        parts.append("<p>Balance exp(H)/N per axis (1 = uniform).</p>")
        parts.append(_table(["axis"] + names, [["tasks"] + [str(stats["corpora"][n]["tasks"]) for n in names]] + rows))
        parts.append("<h3>Diversity</h3>")
        jaccard = next(iter(stats["corpora"].values()))["diversity"]["sibling_jaccard"]
        parts.append(f"<p>{html.escape(DIVERSITY_LEGEND.format(jaccard=jaccard))}</p>")
        parts.append(_table(["metric"] + names, [[label] + [_fmt(stats["corpora"][n]["diversity"].get(key))
                                                            for n in names] for key, label in DIVERSITY_ROWS]))
    if stats["jobs"]:
        parts.append("<h2>Jobs</h2>")
        names = list(stats["jobs"])
        ks = sorted({k for j in stats["jobs"].values() for k in j["pass_at_k"]}, key=lambda s: int(s.split("@")[1]))
        rows = [[k] + [_fmt(stats["jobs"][n]["pass_at_k"].get(k)) for n in names] for k in ks]
        rows += [[m] + [_fmt(stats["jobs"][n].get(m)) for n in names]
                 for m in ("trials", "tasks", "mean_turns", "mean_completion_tokens", "submitted_fraction")]
        rows += [[f"bucket: {b}"] + [str(stats["jobs"][n]["difficulty_buckets"][b]) for n in names]
                 for b in ("unsolved", "hard", "medium", "easy", "trivial")]
        parts.append(_table(["metric"] + names, rows))
    for title, path in images:
        data = base64.b64encode(path.read_bytes()).decode()
        parts.append(f"<h3>{html.escape(title)}</h3><img alt='{html.escape(title)}' src='data:image/png;base64,{data}'>")
    parts.append("</body></html>")
    return "\n".join(parts)


DIVERSITY_ROWS = (("templates", "templates (family, variant)"),
                  ("near_identical_sibling_fraction", "near-identical sibling fraction"),
                  ("siblings_dropped_of_draws", "siblings dropped, of generation's draws"),
                  ("tfidf_diversity", "TF-IDF diversity"), ("effective_clusters", "effective clusters"),
                  ("clusters_k", "k-means k"))
DIVERSITY_LEGEND = ("Sibling fraction: tasks with another task whose instruction and environment files (digits "
                    "masked) have an estimated Jaccard of at least {jaccard}, what generation drops (lower is more "
                    "varied); the next row is the fraction of generation's draws it dropped so. TF-IDF diversity: "
                    "1 - mean pairwise cosine of the instructions' word TF-IDF vectors, digits masked (higher is "
                    "more varied). Effective clusters: exp(entropy) of a seeded k-means of those vectors (at most k).")


def _fmt(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def _table(header: list[str], rows: list[list[str]]) -> str:
    h = "".join(f"<th>{html.escape(x)}</th>" for x in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"
