"""PNG plots for the report (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

COMPOSITION_AXES = ("domain", "verifier", "fixture", "task_complexity", "language", "command_complexity")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def make_all(stats: dict, out: Path) -> list[tuple[str, Path]]:
    images: list[tuple[str, Path]] = []
    for name, c in stats["corpora"].items():
        images.append((f"Composition of {name}", composition(name, c["composition"], out / f"composition-{name}.png")))
    if stats["jobs"]:
        images.append(("pass@k", pass_at_k(stats["jobs"], out / "pass_at_k.png")))
        for axis in ("domain", "level", "verifier", "fixture"):
            if any(axis in j["by_axis"] for j in stats["jobs"].values()):
                images.append((f"pass@1 by {axis}", by_axis(stats["jobs"], axis, out / f"pass1_by_{axis}.png")))
        images.append(("Difficulty buckets (measured pass rate per task)", buckets(stats["jobs"], out / "buckets.png")))
        images.append(("Turns and completion tokens per trial", turns_tokens(stats["jobs"], out / "turns_tokens.png")))
        images.append(("Command mix (first program of each command)", command_mix(stats["jobs"], out / "commands.png")))
    return images


def composition(name: str, comp: dict, path: Path) -> Path:
    plt = _plt()
    axes = [a for a in COMPOSITION_AXES if a in comp]
    fig, grid = plt.subplots(2, 3, figsize=(15, 8))
    for ax, axis in zip(grid.flat, axes):
        counts = comp[axis]["counts"]
        ax.barh(list(counts)[::-1], list(counts.values())[::-1], color="#4c72b0")
        ax.set_title(f"{axis} (balance {comp[axis]['balance']:.3f})", fontsize=10)
        ax.tick_params(labelsize=8)
    for ax in list(grid.flat)[len(axes):]:
        ax.axis("off")
    fig.suptitle(name)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def pass_at_k(jobs: dict, path: Path) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, j in jobs.items():
        ks = sorted(j["pass_at_k"], key=lambda s: int(s.split("@")[1]))
        ax.plot([int(k.split("@")[1]) for k in ks], [j["pass_at_k"][k] for k in ks], marker="o", label=name)
    ax.set_xlabel("k")
    ax.set_ylabel("pass@k")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def by_axis(jobs: dict, axis: str, path: Path) -> Path:
    plt = _plt()
    values = sorted({v for j in jobs.values() for v in j["by_axis"].get(axis, {})})
    fig, ax = plt.subplots(figsize=(max(7, 0.6 * len(values) * len(jobs)), 4.5))
    width = 0.8 / max(1, len(jobs))
    for i, (name, j) in enumerate(jobs.items()):
        data = j["by_axis"].get(axis, {})
        ax.bar([x + i * width for x in range(len(values))], [data.get(v, {}).get("pass@1") or 0 for v in values],
               width=width, label=name)
    ax.set_xticks([x + width * (len(jobs) - 1) / 2 for x in range(len(values))])
    ax.set_xticklabels(values, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("pass@1")
    ax.set_ylim(0, 1)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def buckets(jobs: dict, path: Path) -> Path:
    plt = _plt()
    names = ("unsolved", "hard", "medium", "easy", "trivial")
    colors = ("#c44e52", "#dd8452", "#ccb974", "#55a868", "#4c72b0")
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.6 * len(jobs)))
    for row, (jname, j) in enumerate(jobs.items()):
        left = 0
        total = max(1, sum(j["difficulty_buckets"].values()))
        for b, col in zip(names, colors):
            w = j["difficulty_buckets"][b] / total
            ax.barh(row, w, left=left, color=col, label=b if row == 0 else None)
            left += w
    ax.set_yticks(range(len(jobs)))
    ax.set_yticklabels(list(jobs))
    ax.set_xlabel("fraction of tasks")
    ax.legend(ncol=5, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def turns_tokens(jobs: dict, path: Path) -> Path:
    plt = _plt()
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4))
    for name, j in jobs.items():
        if j["turns"]:
            a.hist(j["turns"], bins=20, alpha=0.6, label=name)
        if j["completion_tokens"]:
            b.hist(j["completion_tokens"], bins=20, alpha=0.6, label=name)
    a.set_xlabel("turns")
    b.set_xlabel("completion tokens")
    for ax in (a, b):
        ax.set_ylabel("trials")
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def command_mix(jobs: dict, path: Path) -> Path:
    plt = _plt()
    fig, axes = plt.subplots(1, max(1, len(jobs)), figsize=(6 * max(1, len(jobs)), 5), squeeze=False)
    for ax, (name, j) in zip(axes[0], jobs.items()):
        mix = list(j["command_mix"].items())[:15]
        ax.barh([m[0] for m in mix][::-1], [m[1] for m in mix][::-1], color="#55a868")
        ax.set_title(name, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
