"""What several data_querying families share: the target's rows or folder sit among decoys under the
SHA-256 prefix of a name that only the fixture channel gives, and the instruction and oracle are built
around that name the same way. No family is registered here."""

from __future__ import annotations

from tmax.families.unseen import distinct, key_cmd, key_of, unseen



def key_how(what: str) -> str:
    """How a key is made from the name of ``what`` (e.g. "tenant's name")."""
    return f"the first 16 hex digits of the SHA-256 of the {what} (`printf %s <name> | sha256sum | cut -c1-16`)"


def keyed(t, decoys: int, *shown: str) -> tuple[str, list[str]]:
    """The delivered name, drawn once the data exist so that it shows nowhere in ``shown``, and the keys
    of it and of ``decoys`` other names (``keys[0]`` is the target's)."""
    target = unseen(t, lambda: t.code(2), *shown)
    return target, [key_of(n) for n in [target, *distinct(lambda: t.code(2), decoys, [target])]]


def rules_at(level: int, rules: list[tuple[int, str]]) -> list[str]:
    """The rules (from-level, text) that apply at ``level``, in order."""
    return [text for lv, text in rules if level >= lv]


def pose(t, intro: str, rules: list[str], ask: str, target: str, what: str, script: str, src: str, args: str,
         out: str) -> None:
    """The instruction (level 0: one paragraph with the first rule; above it the rules as a list), the
    delivered name, and the oracle: ``script`` (``src``) run with ``args`` (``$key`` is the name's key)
    writing ``out``."""
    if t.level == 0:
        t.say(f"{intro} {rules[0]} {ask}")
    else:
        t.say(intro + "\n\n" + "\n".join(f"- {r}" for r in rules) + f"\n\n{ask}")
    var = t.deliver(target, what)
    t.add_solution_file(script, src)
    t.solve(f'test -n "{var}"\nmkdir -p /app/out\nkey={key_cmd(var)}\npython3 /solution/{script} {args} > {out}')
