"""Shared pieces of the data_science families whose datasets are keyed by a delivered name (no family
is registered here)."""

from __future__ import annotations

from tmax.families.base import TaskBuilder
from tmax.families.programs import host_files
from tmax.families.unseen import distinct, key_cmd, key_of, unseen


def on_host(files: dict[str, str], fn):
    """``fn`` run on fixture texts written to a host folder: given the folder, or a lone file's path."""
    with host_files(files) as (folder, paths):
        return fn(paths[0] if len(paths) == 1 else folder)


def keyed_case(t: TaskBuilder, sets: list[dict[str, str]], *, where: str, intro: str, thing: str, rules: list[str],
               ask: str, src: str, script: str, out: str, truth: str, number: str = "") -> None:
    """The tail the keyed data_science families share. Each dataset's files (the first dataset is the target)
    go to `/app/<where>/<KEY>.csv` (one file) or `/app/<where>/<KEY>/` (several), KEY being a SHA-256 prefix
    of the dataset's name, the delivered value, so the neighbours are indistinguishable decoys without it.
    Then the task is stated and the answer at ``out`` graded (``number``: what a single number is called;
    empty: a text result)."""
    target = unseen(t, lambda: t.code(2), *(x for files in sets for x in files.values()))
    keys = [key_of(n) for n in [target, *distinct(lambda: t.code(2), len(sets) - 1, [target])]]
    lone = len(sets[0]) == 1
    for key, files in zip(keys, sets):
        for name, text in files.items():
            t.add_file(f"/app/{where}/{key}.csv" if lone else f"/app/{where}/{key}/{name}", text)
    place = f"`/app/{where}/<KEY>.csv`" if lone else f"`/app/{where}/<KEY>/`"
    t.say(f"{intro} {place}, where KEY is the first 16 hex digits of the SHA-256 of the {thing}'s name (`printf %s "
          f"<name> | sha256sum | cut -c1-16`); the other {'files' if lone else 'folders'} are other {thing}s.\n\n"
          + "\n".join(f"- {r}" for r in rules) + f"\n\nFor the {thing} named below I need {ask}.")
    v = t.deliver(target, f"the {thing}'s name")
    t.add_solution_file(script, src)
    arg = f"/app/{where}/$key.csv" if lone else f"/app/{where}/$key"
    t.solve(f'test -n "{v}"\nmkdir -p /app/out\nkey={key_cmd(v)}\n'
            f'python3 /solution/{script} "{arg}" {t.variant} > {out}')
    if number:
        t.expect_number(out, float(truth), rel_tol=1e-6, what=number)
    else:
        t.expect_output(out, truth, "the result")
