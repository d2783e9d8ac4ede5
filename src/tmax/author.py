"""The LLM task author: sample the nine axes, ask an OpenAI-compatible model for a whole task (instruction,
fixtures, setup, hidden truth, tests, reference solution), build it, gate it, and feed failures back in
the same conversation for a few rounds. Every prompt, reply, token and cent is recorded.

Reply format: tagged sections (``<instruction>...</instruction>``, ``<file path="P">``, ``<setup>``,
``<truth>``, ``<test>`` or ``<test_py>``, ``<solution>``). Tags survive weak models better than JSON
(no escaping of scripts); a missing closing tag ends at the next section; code fences inside a section
are dropped; a JSON object with the same keys is accepted too.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tmax.sandbox import DEFAULT_BACKEND
from tmax.task import write_task
from tmax.taxonomy import Axes

PROMPTS = tomllib.loads((Path(__file__).parent / "author_prompts.toml").read_text())
SECTIONS = ("instruction", "file", "setup", "truth", "test", "test_py", "solution")
ALIASES = {"tests": "test", "test.sh": "test", "test_sh": "test", "pytest": "test_py", "tests_py": "test_py",
           "solve": "solution", "solve.sh": "solution", "reference_solution": "solution", "hidden_truth": "truth",
           "answer": "truth", "environment": "setup", "setup.sh": "setup", "files": "file"}
_NAMES = "|".join(re.escape(n) for n in sorted({*SECTIONS, *ALIASES}, key=len, reverse=True))
OPEN_TAG = re.compile(rf"<\s*({_NAMES})((?:\s+\w+\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))*)\s*>", re.I)
FENCED = re.compile(r"^\s*```[\w.+-]*[ \t]*\n(.*?)\n?```\s*$", re.S)
PLACEHOLDER = re.compile(r"^\s*(\.\.\.|\u2026)?\s*$")
CHARS_PER_TOKEN = 4  # a tokenizer-free estimate, used when the API reports no usage

# List prices in USD per 1M (input, output) tokens, for provider strings; override with --price-in/--price-out.
PRICES = {"openai/gpt-4o": (2.50, 10.00), "openai/gpt-4o-mini": (0.15, 0.60), "openai/gpt-4.1": (2.00, 8.00),
          "openai/gpt-4.1-mini": (0.40, 1.60), "openai/gpt-4.1-nano": (0.10, 0.40),
          "anthropic/claude-3-5-sonnet": (3.00, 15.00), "anthropic/claude-3-5-haiku": (0.80, 4.00),
          "deepseek/deepseek-chat": (0.27, 1.10)}


class ParseError(ValueError):
    pass


@dataclass
class Draft:
    """A task as the model wrote it."""

    instruction: str
    solution: str
    test: str = ""
    test_py: str = ""
    setup: str = ""
    truth: str = ""
    files: dict[str, str] = field(default_factory=dict)


def _clean(text: str) -> str:
    m = FENCED.match(text)
    return (m.group(1) if m else text).strip("\n")


def parse_reply(text: str) -> Draft:
    """The task in a reply, or ParseError saying which section is missing or malformed."""
    found: dict[str, str] = {}
    files: dict[str, str] = {}
    tags = list(OPEN_TAG.finditer(text))
    for i, m in enumerate(tags):
        name = ALIASES.get(m.group(1).lower(), m.group(1).lower())
        end = tags[i + 1].start() if i + 1 < len(tags) else len(text)
        body = text[m.end():end]
        close = re.search(rf"<\s*/\s*{re.escape(m.group(1))}\s*>", body, re.I)
        body = _clean(body[:close.start()] if close else re.sub(r"<\s*/\s*\w[\w.]*\s*>\s*$", "", body.rstrip()))
        if name == "file":
            path = re.search(r"""(?:path|name)\s*=\s*["']?([^"'\s>]+)""", m.group(2) or "")
            if not path:
                raise ParseError(f"<file> section {len(files) + 1}: expected a path attribute, "
                                 'as in <file path="input.txt">')
            files[path.group(1).lstrip("/").removeprefix("app/")] = body + "\n"
        elif name not in found or not found[name].strip():
            found[name] = body
    if not tags:
        found, files = _parse_json(text)
    # weak models echo the format with "..." in each section: that is no content
    found = {k: ("" if PLACEHOLDER.match(v) else v) for k, v in found.items()}
    missing = [s for s in ("instruction", "solution") if not found.get(s, "").strip()]
    if not (found.get("test", "").strip() or found.get("test_py", "").strip()):
        missing.append("test (or test_py)")
    if missing:
        raise ParseError(f"missing or empty section(s): {', '.join(missing)}; expected <instruction>, <test> or "
                         "<test_py>, and <solution>, each with real content (not a placeholder like ...)")
    for path in files:
        if ".." in Path(path).parts or not path:
            raise ParseError(f"<file path={path!r}>: expected a relative path inside /app")
    return Draft(instruction=found["instruction"].strip(), solution=found["solution"], test=found.get("test", ""),
                 test_py=found.get("test_py", ""), setup=found.get("setup", ""), truth=found.get("truth", ""),
                 files=files)


def _parse_json(text: str) -> tuple[dict[str, str], dict[str, str]]:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ParseError("no tagged sections (<instruction>, <test>, <solution>, ...) and no JSON object found")
    try:
        doc = json.loads(text[start:end + 1])
    except json.JSONDecodeError as e:
        raise ParseError(f"no tagged sections, and the JSON object is invalid ({e.msg}); use the tagged format") \
            from None
    if not isinstance(doc, dict):
        raise ParseError("expected tagged sections or a JSON object")
    found = {ALIASES.get(k.lower(), k.lower()): v for k, v in doc.items() if isinstance(v, str)}
    files = doc.get("files") if isinstance(doc.get("files"), dict) else {}
    return found, {str(k).lstrip("/"): str(v) for k, v in files.items()}


def _script(body: str, header: str = "") -> str:
    lines = body.strip("\n").splitlines()
    shebang = lines.pop(0) if lines and lines[0].startswith("#!") else "#!/bin/bash"
    return "\n".join([shebang, *([header] if header else []), *lines]) + "\n"


PYTEST_RUNNER = """#!/bin/bash
# Reward 1 iff every test in test_outputs.py passes.
mkdir -p /logs/verifier
cd /tests && if python3 -m pytest -q -p no:cacheprovider test_outputs.py; then echo 1; else echo 0; fi \\
  > /logs/verifier/reward.txt
"""


def task_files(d: Draft) -> dict[str, str]:
    """The Harbor files of a draft. Fixtures reach /app through setup; the truth only lives in tests/."""
    files: dict[str, str] = {f"environment/files/{p}": c for p, c in d.files.items()}
    setup = ["mkdir -p /app", "if [ -d /environment/files ]; then cp -a /environment/files/. /app/; fi"]
    files["environment/setup.sh"] = _script(d.setup, "\n".join(["# Fixtures first, then the author's setup.",
                                                                 *setup]))
    if d.test.strip():
        files["tests/test.sh"] = _script(d.test, "mkdir -p /logs/verifier")
    else:
        files["tests/test.sh"] = PYTEST_RUNNER
        files["tests/test_outputs.py"] = d.test_py.strip("\n") + "\n"
    if d.truth.strip():
        files["tests/truth.txt"] = d.truth.strip("\n") + "\n"
    files["solution/solve.sh"] = _script(d.solution)
    return files


# -- accounting ---------------------------------------------------------------------------------

def estimate_tokens(text: str) -> int:
    return max(1, (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)


def messages_tokens(messages: list[dict]) -> int:
    return sum(estimate_tokens(m.get("content") or "") + 4 for m in messages)  # +4: role and separators


def price_for(model: str, price_in: float | None = None, price_out: float | None = None) -> dict:
    """USD per 1M tokens: explicit prices win, then the built-in table (with or without provider prefix)."""
    if price_in is not None or price_out is not None:
        return {"in": price_in or 0.0, "out": price_out or 0.0, "source": "given"}
    key = model.lower()
    hit = PRICES.get(key) or next((v for k, v in PRICES.items() if k.split("/", 1)[1] == key), None)
    if hit:
        return {"in": hit[0], "out": hit[1], "source": "table"}
    return {"in": 0.0, "out": 0.0, "source": "unpriced (no --price-in/--price-out and not in the table)"}


def cost(prompt_tokens: int, completion_tokens: int, price: dict) -> float:
    return (prompt_tokens * price["in"] + completion_tokens * price["out"]) / 1e6


# -- prompts ------------------------------------------------------------------------------------

def first_messages(axes: Axes) -> list[dict]:
    a = axes.to_json()
    user = PROMPTS["task"].format(**{**a, "primitive_skills": "; ".join(a["primitive_skills"]),
                                     "complexity_hint": PROMPTS["complexity_hints"][axes.task_complexity]})
    return [{"role": "system", "content": PROMPTS["system"]}, {"role": "user", "content": user}]


def sample_axes(seed: int, n: int, kind: str) -> list[Axes]:
    from tmax.families import load_all
    from tmax.taxonomy import sample

    fams = sorted(load_all().values(), key=lambda f: f.name)
    return [sample(seed, i, kind, fams) for i in range(n)]


def dry_run(n: int, seed: int, kind: str, model: str, rounds: int, max_tokens: int,
            price: dict, reply_tokens: int = 1500) -> dict:
    """Tokens and cost before any call: one round per task (expected) and every round failing (bound).
    A reply is assumed to be ``reply_tokens`` long (at most max_tokens); feedback about 200 tokens."""
    reply = min(reply_tokens, max_tokens)
    first = [messages_tokens(first_messages(a)) for a in sample_axes(seed, n, kind)]
    one = {"prompt_tokens": sum(first), "completion_tokens": reply * n}
    # round k re-sends the whole conversation: the first prompt plus (k-1) replies and feedbacks
    bound_prompt = sum(p * rounds + (reply + 200) * rounds * (rounds - 1) // 2 for p in first)
    worst = {"prompt_tokens": bound_prompt, "completion_tokens": reply * n * rounds}
    for d in (one, worst):
        d["cost_usd"] = round(cost(d["prompt_tokens"], d["completion_tokens"], price), 6)
    return {"dry_run": True, "n": n, "model": model, "rounds": rounds, "price_per_1m": price,
            "assumed_reply_tokens": reply, "one_round_each": one, "all_rounds_fail": worst}


# -- the loop -----------------------------------------------------------------------------------

@dataclass
class AuthorConfig:
    base_url: str
    model: str
    rounds: int = 3
    max_tokens: int = 4096
    temperature: float = 0.7
    kind: str = "rl_v2"
    backend: str = DEFAULT_BACKEND
    repeat: int = 2
    image: str = "default"
    price: dict = field(default_factory=lambda: price_for(""))
    retries: int = 3
    timeout: float = 600.0


def _gate_feedback(task_dir: Path, gate, backend: str) -> tuple[str, str]:
    """(kind of failure, feedback text) for a task that failed the gate, with the test output's tail."""
    from tmax.task import load_task
    from tmax.trial import NopAgent, OracleAgent, run_trial

    if not gate.oracle_rewards:
        kind, tail = "build_failed", ""
    else:
        oracle_failed = gate.oracle_rewards[-1] is None or gate.oracle_rewards[-1] < 1.0
        kind = "oracle_failed" if oracle_failed else "nop_not_zero"
        try:  # one more run of the failing side, for its verifier output
            tr = run_trial(load_task(task_dir), OracleAgent() if oracle_failed else NopAgent(), backend=backend)
            out = "\n".join(tr.verifier_output.strip().splitlines()[-25:]) or "(no output)"
            tail = PROMPTS["verifier_tail"].format(which="oracle" if oracle_failed else "do-nothing", output=out)
        except Exception as e:  # noqa: BLE001 - the feedback is best effort; the gate verdict stands
            tail = f"(test output unavailable: {type(e).__name__}: {e})"
    text = PROMPTS["gate_error"].format(reason=gate.reason, oracle=gate.oracle_rewards, nop=gate.nop_reward,
                                        tail=tail)
    return kind, text


def author_one(index: int, axes: Axes, cfg: AuthorConfig, out: Path, seed: int) -> dict:
    """Up to cfg.rounds rounds for one task; returns its log record (accepted or dropped with a reason)."""
    from tmax.agent.harness import PolicyError
    from tmax.agent.policies import OpenAIPolicy
    from tmax.gate import check_task

    client = OpenAIPolicy(base_url=cfg.base_url, model_name=cfg.model, tool_calling=False,
                          temperature=cfg.temperature, retries=cfg.retries, timeout=cfg.timeout)
    name = f"{index:05d}-author-{axes.domain.replace('_', '-')}"
    staging = out / ".staging" / name
    messages = first_messages(axes)
    rec: dict = {"index": index, "task": name, "axes": axes.to_json(), "rounds": [], "accepted": False,
                 "reason": "", "reason_kind": "", "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
    t0 = time.monotonic()
    for rnd in range(1, cfg.rounds + 1):
        sent = len(messages)
        r: dict = {"round": rnd, "prompt": messages[-1]["content"] if rnd > 1 else messages}
        try:
            reply = client.act(messages, None, cfg.max_tokens)
        except PolicyError as e:
            r.update(outcome="api_error", reason=str(e))
            rec["rounds"].append(r)
            rec["reason"], rec["reason_kind"] = str(e), "api_error"
            break
        pt, ct, estimated = reply.prompt_tokens, reply.completion_tokens, False
        if not pt and not ct:  # no usage from the API: estimate, and say so
            pt, ct, estimated = messages_tokens(messages[:sent]), estimate_tokens(reply.content), True
        r.update(response=reply.content, finish_reason=reply.finish_reason, prompt_tokens=pt, completion_tokens=ct,
                 estimated=estimated, cost_usd=cost(pt, ct, cfg.price))
        rec["prompt_tokens"] += pt
        rec["completion_tokens"] += ct
        rec["cost_usd"] += r["cost_usd"]
        messages.append({"role": "assistant", "content": reply.content})
        try:
            draft = parse_reply(reply.content)
        except ParseError as e:
            why = str(e) + (" (the reply was cut off at max_tokens)" if reply.finish_reason == "length" else "")
            r.update(outcome="parse_error", reason=why)
            rec["reason"], rec["reason_kind"] = why, "parse_error"
            messages.append({"role": "user", "content": PROMPTS["parse_error"].format(reason=why)})
            rec["rounds"].append(r)
            continue
        shutil.rmtree(staging, ignore_errors=True)
        meta = {"image": cfg.image, "source": "author", "author_model": cfg.model, "seed": seed, "index": index,
                "author_rounds": rnd, **{k: v for k, v in axes.to_json().items() if k != "family"},
                "family": "llm_author"}
        write_task(staging, name=name, instruction=draft.instruction, files=task_files(draft), metadata=meta)
        gate = check_task(staging, repeat=cfg.repeat, backend=cfg.backend)
        r.update(gate={"ok": gate.ok, "reason": gate.reason, "oracle": gate.oracle_rewards, "nop": gate.nop_reward})
        if gate.ok:
            r["outcome"] = "accepted"
            rec["rounds"].append(r)
            dest = out / name
            shutil.rmtree(dest, ignore_errors=True)
            staging.rename(dest)
            rec.update(accepted=True, reason="", reason_kind="")
            break
        kind, feedback = _gate_feedback(staging, gate, cfg.backend)
        r.update(outcome=kind, reason=gate.reason, feedback=feedback)
        rec["reason"], rec["reason_kind"] = gate.reason, kind
        messages.append({"role": "user", "content": feedback})
        rec["rounds"].append(r)
    shutil.rmtree(staging, ignore_errors=True)
    rec["n_rounds"] = len(rec["rounds"])
    rec["seconds"] = round(time.monotonic() - t0, 2)
    return rec


def author_corpus(n: int, seed: int, cfg: AuthorConfig, out: Path, jobs: int = 1, progress=None) -> dict:
    """Author ``n`` tasks into ``out``; writes author_log.jsonl, manifest.jsonl and author_summary.json."""
    out.mkdir(parents=True, exist_ok=True)
    axes = sample_axes(seed, n, cfg.kind)
    lock = threading.Lock()
    records: list[dict] = []
    t0 = time.monotonic()
    with open(out / "author_log.jsonl", "w") as log, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        def one(i: int) -> None:
            rec = author_one(i, axes[i], cfg, out, seed)
            with lock:
                records.append(rec)
                log.write(json.dumps(rec, sort_keys=True) + "\n")
                log.flush()
            if progress:
                progress(rec)

        list(pool.map(one, range(n)))
    shutil.rmtree(out / ".staging", ignore_errors=True)
    records.sort(key=lambda r: r["index"])
    with open(out / "manifest.jsonl", "w") as f:
        for r in records:
            if r["accepted"]:
                f.write(json.dumps({"index": r["index"], "task": r["task"], "seed": seed, "kind": cfg.kind,
                                    **r["axes"], "family": "llm_author", "author_rounds": r["n_rounds"]},
                                   sort_keys=True) + "\n")
    dropped: dict[str, int] = {}
    for r in records:
        if not r["accepted"]:
            dropped[r["reason_kind"]] = dropped.get(r["reason_kind"], 0) + 1
    pt = sum(r["prompt_tokens"] for r in records)
    ct = sum(r["completion_tokens"] for r in records)
    summary = {"requested": n, "accepted": sum(r["accepted"] for r in records), "dropped": sum(dropped.values()),
               "dropped_by_reason": dropped, "model": cfg.model, "rounds": cfg.rounds,
               "rounds_used": {str(k): sum(1 for r in records if r["n_rounds"] == k) for k in range(1, cfg.rounds + 1)},
               "accepted_at_round": {str(k): sum(1 for r in records if r["accepted"] and r["n_rounds"] == k)
                                     for k in range(1, cfg.rounds + 1)},
               "calls": sum(len(r["rounds"]) for r in records),
               "estimated_calls": sum(1 for r in records for x in r["rounds"] if x.get("estimated")),
               "tokens": {"prompt": pt, "completion": ct, "total": pt + ct},
               "price_per_1m": cfg.price, "cost_usd": round(cost(pt, ct, cfg.price), 6),
               "seconds": round(time.monotonic() - t0, 2)}
    (out / "author_summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary
