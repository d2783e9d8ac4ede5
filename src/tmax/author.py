"""The LLM task author: sample the nine axes, ask an OpenAI-compatible model for a whole task (instruction,
fixtures, setup, hidden truth, tests, reference solution, the outputs and the fixture value the answer
depends on), build it, check it, and feed failures back in the same conversation for a few rounds.
Every prompt, reply, token and cent is recorded.

A task is accepted when it passes the gate (``tmax.gate``: oracle 1.0 on every run, nop 0.0, the hacks
below the gate's threshold, the channel-skip check) and the author's own checks
(``tmax.author_checks``): every hack scores exactly 0 at the declared outputs, and changing the
declared fixture value changes the oracle's output.

Reply format: tagged sections (``<instruction>``, ``<file path="P">``, ``<setup>``, ``<truth>``,
``<test>`` or ``<test_py>``, ``<solution>``, ``<outputs>``, ``<depends file="F">``). Tags survive weak
models better than JSON (no escaping of scripts). A section ends only at its own closing tag, and only
where the next section (or the end of the reply) follows it. Section tags are first read only where
they begin a line, so tag-like text indented inside a fixture (XML, HTML) is content; then anywhere.
A section left open, or given twice, is an error that names it: never a silently different task.
Code fences around a section's body are dropped; a JSON object with the same keys is accepted too.

The reply format, its parser, the prompts that teach it and the loop that feeds its errors back
change together, so they share this module (a little over 500 lines); the checks live apart.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tmax.author_checks import PROMPTS, Dependency, judge
from tmax.sandbox import DEFAULT_BACKEND
from tmax.task import write_task
from tmax.taxonomy import Axes

SECTIONS = ("instruction", "file", "setup", "truth", "test", "test_py", "solution", "outputs", "depends")
ALIASES = {"tests": "test", "test.sh": "test", "test_sh": "test", "pytest": "test_py", "tests_py": "test_py",
           "solve": "solution", "solve.sh": "solution", "reference_solution": "solution", "hidden_truth": "truth",
           "answer": "truth", "environment": "setup", "setup.sh": "setup", "files": "file", "output": "outputs",
           "depends_on": "depends"}
REPEATABLE = ("file", "depends")
_NAMES = "|".join(re.escape(n) for n in sorted({*SECTIONS, *ALIASES}, key=len, reverse=True))
OPEN_TAG = re.compile(rf"<\s*({_NAMES})((?:\s+\w+\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))*)\s*>", re.I)
FENCED = re.compile(r"^\s*```[\w.+-]*[ \t]*\n(.*?)\n?```\s*$", re.S)
PLACEHOLDER = re.compile(r"^\s*(\.\.\.|\u2026|VALUE)?\s*$")
# Without a tokenizer: 4 characters per token (right for English prose) undercounts code, scripts
# and data fixtures by up to about 1.8x; 2.5 errs on the high side for a whole task.
CHARS_PER_TOKEN = 2.5
MAX_REPLY_TOKENS = 16384  # a whole task (several fixtures, test and solution) with room to spare

# List prices in USD per 1M (input, output) tokens, for provider strings; override with --price-in/--price-out.
PRICES = {"openai/gpt-4o": (2.50, 10.00), "openai/gpt-4o-mini": (0.15, 0.60), "openai/gpt-4.1": (2.00, 8.00),
          "openai/gpt-4.1-mini": (0.40, 1.60), "openai/gpt-4.1-nano": (0.10, 0.40),
          "anthropic/claude-3-5-sonnet": (3.00, 15.00), "anthropic/claude-3-5-haiku": (0.80, 4.00),
          "deepseek/deepseek-chat": (0.27, 1.10)}


class ParseError(ValueError):
    pass


class DuplicateSection(ParseError):
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
    outputs: list[str] = field(default_factory=list)  # absolute paths the agent writes
    depends: list[Dependency] = field(default_factory=list)


@dataclass
class Section:
    name: str  # canonical
    attrs: str
    body: str
    line: int


def _clean(text: str) -> str:
    m = FENCED.match(text)
    return (m.group(1) if m else text).strip("\n")


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


WHITESPACE = re.compile(r"\s*")


def _next_start(text: str, pos: int, at_line_start: bool) -> int | None:
    """Where the next section starts if only whitespace comes first; len(text) if no section follows
    at all (closing prose holds no section tag); None if something else comes next. ``at_line_start``:
    only a tag that begins a line starts a section."""
    m = OPEN_TAG.match(text, WHITESPACE.match(text, pos).end())
    if m and (not at_line_start or _begins_line(text, m.start())):
        return m.start()
    return len(text) if OPEN_TAG.search(text, pos) is None else None


def _begins_line(text: str, pos: int) -> bool:
    return pos == 0 or text[pos - 1] == "\n"


def _sections(text: str, pos: int, seen: frozenset[str], memo: dict, at_line_start: bool) -> list[Section]:
    """The sections from the opening tag at ``pos`` on, ``seen`` holding the single sections already
    found. A section ends at the first of its closing tags after which the rest parses (each single
    section once); a failure raises the error of the last reading tried. ``memo`` keeps each outcome, so a
    fixture full of tag-like text costs one parse per position."""
    key = (pos, seen)
    if key in memo:
        hit = memo[key]
        if isinstance(hit, ParseError):
            raise hit
        return hit
    m = OPEN_TAG.match(text, pos)
    raw, line = m.group(1), _line(text, pos)
    name = ALIASES.get(raw.lower(), raw.lower())
    closings = list(re.finditer(rf"<\s*/\s*{re.escape(raw)}\s*>", text[m.end():], re.I))
    if name in seen:  # never read around: a reply with two is malformed, not a puzzle
        raise DuplicateSection(f"<{raw}> (line {line}): a second <{name}> section; give each section once "
                               "(text like this inside a fixture must not begin a line)")
    if not closings:
        error = ParseError(f"<{raw}> (line {line}) is never closed: expected </{raw}> (was the reply cut off?)")
    else:
        error = ParseError(f"<{raw}> (line {line}): no </{raw}> is followed by the next section or the end of "
                           "the reply; put nothing but whitespace between sections")
    rest_seen = seen if name in REPEATABLE else seen | {name}
    for c in closings:
        here = Section(name, m.group(2) or "", _clean(text[m.end():m.end() + c.start()]), line)
        nxt = _next_start(text, m.end() + c.end(), at_line_start)
        if nxt is None:
            continue
        try:
            memo[key] = [here, *(_sections(text, nxt, rest_seen, memo, at_line_start) if nxt < len(text) else [])]
            return memo[key]
        except DuplicateSection:
            raise
        except ParseError as e:
            error = e
    memo[key] = error
    raise error


def _split(text: str) -> list[Section]:
    """The reply's sections: first read with every section tag beginning a line (so tag-like text
    indented inside a fixture never ends a section), else with tags anywhere. The error is the first
    reading's when it had a tag to start from."""
    first_at_line = next((t.start() for t in OPEN_TAG.finditer(text) if _begins_line(text, t.start())), None)
    strict: ParseError | None = None
    if first_at_line is not None:
        try:
            return _sections(text, first_at_line, frozenset(), {}, True)
        except DuplicateSection:
            raise
        except ParseError as e:
            strict = e
    try:
        return _sections(text, OPEN_TAG.search(text).start(), frozenset(), {}, False)
    except ParseError as e:
        raise strict or e from None


def parse_reply(text: str) -> Draft:
    """The task in a reply, or ParseError naming the section that is missing, open or malformed."""
    first = OPEN_TAG.search(text)
    if first is None:
        found, files, outputs, depends = _parse_json(text)
    else:
        found, files, outputs, depends = _collect(_split(text))
    # weak models echo the format with "..." in each section: that is no content
    found = {k: ("" if PLACEHOLDER.match(v) else v) for k, v in found.items()}
    missing = [s for s in ("instruction", "solution") if not found.get(s, "").strip()]
    if not (found.get("test", "").strip() or found.get("test_py", "").strip()):
        missing.append("test (or test_py)")
    if not outputs:
        missing.append("outputs")
    if missing:
        raise ParseError(f"missing or empty section(s): {', '.join(missing)}; expected <instruction>, <test> or "
                         "<test_py>, <solution> and <outputs>, each with real content (not a placeholder like ...)")
    for path in files:
        if ".." in Path(path).parts or not path:
            raise ParseError(f"<file path={path!r}>: expected a relative path inside /app")
    if (files or found.get("setup", "").strip()) and not depends:
        raise ParseError('missing <depends file="...">VALUE</depends>: a task with fixtures must declare the '
                         "fixture value its answer is computed from")
    return Draft(instruction=found["instruction"].strip(), solution=found["solution"], test=found.get("test", ""),
                 test_py=found.get("test_py", ""), setup=found.get("setup", ""), truth=found.get("truth", ""),
                 files=files, outputs=outputs, depends=depends)


def _attr(attrs: str, *names: str) -> str | None:
    for n in names:
        m = re.search(rf"""\b{n}\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", attrs)
        if m:
            return next(g for g in m.groups() if g is not None)
    return None


def _collect(sections: list[Section]) -> tuple[dict[str, str], dict[str, str], list[str], list[Dependency]]:
    found: dict[str, str] = {}
    files: dict[str, str] = {}
    depends: list[Dependency] = []
    for s in sections:
        if s.name == "file":
            path = _attr(s.attrs, "path", "name")
            if not path:
                raise ParseError(f"<file> (line {s.line}): expected a path attribute, as in <file path=\"input.txt\">")
            rel = path.lstrip("/").removeprefix("app/")
            if rel in files:
                raise ParseError(f'<file path="{path}"> (line {s.line}): a second file with that path')
            files[rel] = s.body + "\n"
        elif s.name == "depends":
            f = _attr(s.attrs, "file", "path")
            if not f or not s.body.strip():
                raise ParseError(f'<depends> (line {s.line}): expected <depends file="FIXTURE">VALUE</depends>')
            runtime = (_attr(s.attrs, "runtime") or "").lower() in ("yes", "true", "1")
            depends.append(Dependency(f, s.body.strip(), runtime))
        else:
            found[s.name] = s.body
    return found, files, _output_paths(found.pop("outputs", "")), depends


def _output_paths(body: str) -> list[str]:
    out = []
    for raw in body.splitlines():
        p = raw.strip().strip("`").removeprefix("- ").strip()
        if not p or p.startswith("#") or PLACEHOLDER.match(p):
            continue
        p = p if p.startswith("/") else f"/app/{p}"
        if ".." in Path(p).parts or " " in p:
            raise ParseError(f"<outputs>: {raw.strip()!r}: expected one absolute path per line, as /app/result.txt")
        out.append(p)
    return out


def _parse_json(text: str) -> tuple[dict[str, str], dict[str, str], list[str], list[Dependency]]:
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
    outs = doc.get("outputs")
    outputs = _output_paths("\n".join(outs) if isinstance(outs, list) else found.pop("outputs", ""))
    depends = [Dependency(str(d["file"]), str(d["value"])) for d in doc.get("depends") or []
               if isinstance(d, dict) and d.get("file") and d.get("value")]
    return found, {str(k).lstrip("/"): str(v) for k, v in files.items()}, outputs, depends


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

def estimate_tokens(text: str, tokenizer=None) -> int:
    """Tokens in ``text``: counted by ``tokenizer`` (anything with ``encode``) when given, else a
    conservative characters-per-token estimate."""
    if tokenizer is not None:
        return max(1, len(tokenizer.encode(text, add_special_tokens=False)))
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def messages_tokens(messages: list[dict], tokenizer=None) -> int:
    return sum(estimate_tokens(m.get("content") or "", tokenizer) + 4 for m in messages)  # +4: role, separators


def tokenizer_for(policy=None, name: str = ""):
    """The tokenizer to count with: the policy's own (an in-process model has one), else ``name``
    loaded from a local Hugging Face tokenizer, else None (estimate)."""
    tok = getattr(policy, "tokenizer", None)
    if tok is not None and hasattr(tok, "encode"):
        return tok
    if not name:
        return None
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise ValueError(f"tokenizer {name!r}: counting with it needs transformers ({e})") from None
    try:
        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError) as e:
        raise ValueError(f"tokenizer {name!r}: expected a local tokenizer directory or cached name ({e})") from None


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

def _hint(table: str, value: str) -> str:
    text = PROMPTS[table].get(value, "")
    return f": {text}" if text else ""


def first_messages(axes: Axes) -> list[dict]:
    a = axes.to_json()
    hints = {"complexity_hint": PROMPTS["complexity_hints"].get(axes.task_complexity, "as the level asks"),
             "command_hint": _hint("command_hints", axes.command_complexity),
             "language_hint": _hint("language_hints", axes.language),
             "fixture_hint": _hint("fixture_hints", axes.fixture),
             "verifier_hint": _hint("verifier_hints", axes.verifier)}
    user = PROMPTS["task"].format(**{**a, "primitive_skills": "; ".join(a["primitive_skills"]), **hints})
    return [{"role": "system", "content": PROMPTS["system"]}, {"role": "user", "content": user}]


def sample_axes(seed: int, n: int, kind: str) -> list[Axes]:
    from tmax.families import load_all
    from tmax.taxonomy import sample

    fams = sorted(load_all().values(), key=lambda f: f.name)
    return [sample(seed, i, kind, fams) for i in range(n)]


def dry_run(n: int, seed: int, kind: str, model: str, rounds: int, max_tokens: int,
            price: dict, reply_tokens: int = 3000) -> dict:
    """Tokens and cost before any call: one round per task (expected) and every round failing (bound).
    A reply is assumed to be ``reply_tokens`` long (at most max_tokens); feedback about 300 tokens."""
    reply = min(reply_tokens, max_tokens)
    first = [messages_tokens(first_messages(a)) for a in sample_axes(seed, n, kind)]
    one = {"prompt_tokens": sum(first), "completion_tokens": reply * n}
    # round k re-sends the whole conversation: the first prompt plus (k-1) replies and feedbacks
    bound_prompt = sum(p * rounds + (reply + 300) * rounds * (rounds - 1) // 2 for p in first)
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
    max_tokens: int = MAX_REPLY_TOKENS
    temperature: float = 0.7
    kind: str = "rl_v2"
    backend: str = DEFAULT_BACKEND
    repeat: int = 2
    image: str = "default"
    price: dict = field(default_factory=lambda: price_for(""))
    retries: int = 3
    timeout: float = 600.0
    tokenizer: str = ""  # a local Hugging Face tokenizer to count tokens with when the API reports none


def _count(reply, messages: list[dict], tokenizer) -> tuple[int, int, str]:
    """(prompt, completion tokens, how they were counted): the API's usage, else the tokenizer, else
    the estimate."""
    if reply.prompt_tokens or reply.completion_tokens:
        return reply.prompt_tokens, reply.completion_tokens, "api"
    how = "tokenizer" if tokenizer is not None else "estimate"
    return messages_tokens(messages, tokenizer), estimate_tokens(reply.content, tokenizer), how


def author_one(index: int, axes: Axes, cfg: AuthorConfig, out: Path, seed: int, policy=None) -> dict:
    """Up to cfg.rounds rounds for one task; returns its log record (accepted or dropped with a reason).
    ``policy`` (anything with ``act``) replaces the HTTP client of cfg.base_url."""
    from tmax.agent.harness import PolicyError
    from tmax.agent.policies import OpenAIPolicy
    from tmax.gate import check_task

    client = policy or OpenAIPolicy(base_url=cfg.base_url, model_name=cfg.model, tool_calling=False,
                                    temperature=cfg.temperature, retries=cfg.retries, timeout=cfg.timeout)
    tokenizer = tokenizer_for(client, cfg.tokenizer)
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
        pt, ct, counted = _count(reply, messages[:sent], tokenizer)
        r.update(response=reply.content, finish_reason=reply.finish_reason, prompt_tokens=pt, completion_tokens=ct,
                 counted_by=counted, estimated=counted == "estimate", cost_usd=cost(pt, ct, cfg.price))
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
                "author_rounds": rnd, "author_outputs": draft.outputs,
                **{k: v for k, v in axes.to_json().items() if k != "family"}, "family": "llm_author"}
        write_task(staging, name=name, instruction=draft.instruction, files=task_files(draft), metadata=meta)
        gate = check_task(staging, repeat=cfg.repeat, backend=cfg.backend)
        r.update(gate={"ok": gate.ok, "reason": gate.reason, "oracle": gate.oracle_rewards, "nop": gate.nop_reward,
                       "hacks": gate.hack_rewards})
        try:
            kind, reason, feedback, details = judge(draft, staging, axes.verifier, cfg.backend, gate)
        except Exception as e:  # noqa: BLE001 - a check that broke is not the model's fault: drop, tell nothing
            r.update(outcome="check_error", reason=f"{type(e).__name__}: {e}")
            rec["reason"], rec["reason_kind"] = r["reason"], "check_error"
            rec["rounds"].append(r)
            break
        r.update(checks=details)
        if not kind:
            r["outcome"] = "accepted"
            rec["rounds"].append(r)
            dest = out / name
            shutil.rmtree(dest, ignore_errors=True)
            staging.rename(dest)
            rec.update(accepted=True, reason="", reason_kind="")
            break
        r.update(outcome=kind, reason=reason, feedback=feedback)
        rec["reason"], rec["reason_kind"] = reason, kind
        messages.append({"role": "user", "content": feedback})
        rec["rounds"].append(r)
    shutil.rmtree(staging, ignore_errors=True)
    rec["n_rounds"] = len(rec["rounds"])
    rec["seconds"] = round(time.monotonic() - t0, 2)
    return rec


def author_corpus(n: int, seed: int, cfg: AuthorConfig, out: Path, jobs: int = 1, progress=None,
                  policy=None) -> dict:
    """Author ``n`` tasks into ``out``; writes author_log.jsonl, manifest.jsonl and author_summary.json.
    ``policy`` (anything with ``act``, shared by the tasks) replaces the HTTP client of cfg.base_url."""
    out.mkdir(parents=True, exist_ok=True)
    axes = sample_axes(seed, n, cfg.kind)
    lock = threading.Lock()
    records: list[dict] = []
    t0 = time.monotonic()
    with open(out / "author_log.jsonl", "w") as log, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        def one(i: int) -> None:
            rec = author_one(i, axes[i], cfg, out, seed, policy)
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
