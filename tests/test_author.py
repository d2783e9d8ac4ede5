"""The LLM author: reply parsing, accounting, and the author-gate-feedback loop over real HTTP with the
real sandbox gate, driven once by recorded replies and once by a real local model (`tmax serve`)."""

from __future__ import annotations

import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from tmax.author import ParseError, dry_run, estimate_tokens, messages_tokens, parse_reply, price_for
from tmax.cli import main
from tmax.task import load_task

BROKEN = "Sure, I would love to help you write a task about this!"
# Well-formed, but its solution counts wrong: the oracle fails the gate and the test says why.
WRONG = """<instruction>
Count the lines of /app/input.txt and write the number to /app/count.txt.
</instruction>
<file path="input.txt">
a
b
c
</file>
<truth>3</truth>
<test>
want=$(cat /tests/truth.txt); got=$(cat /app/count.txt 2>/dev/null)
echo "expected $want, got ${got:-nothing}"
if [ "$got" = "$want" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
</test>
<solution>
echo 4 > /app/count.txt
</solution>"""
GOOD = WRONG.replace("echo 4 > /app/count.txt", "wc -l < input.txt > /app/count.txt") \
    .replace("<test>", "<test>\n```bash").replace("</test>", "```\n</test>")
USAGE = [None, {"prompt_tokens": 900, "completion_tokens": 120}, {"prompt_tokens": 1300, "completion_tokens": 130}]


@pytest.fixture
def replay():
    """A chat-completions server that replays BROKEN, WRONG, GOOD and records every request."""
    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            i = len(requests)
            requests.append(body)
            out = {"id": f"r{i}", "object": "chat.completion", "model": body["model"],
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": [BROKEN, WRONG, GOOD][i]}}]}
            if USAGE[i]:
                out["usage"] = USAGE[i]
            data = json.dumps(out).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", requests
    srv.shutdown()


def test_parse_is_lenient_but_names_what_is_missing():
    d = parse_reply(GOOD)
    assert d.files == {"input.txt": "a\nb\nc\n"} and d.truth == "3"
    assert d.test.startswith("want=") and "```" not in d.test  # the fence inside the section is dropped
    # no closing tags, aliases, a JSON object instead of tags
    d = parse_reply("<instruction>do x\n<tests>echo 1 > /logs/verifier/reward.txt\n<solve>true")
    assert (d.instruction, d.solution) == ("do x", "true")
    assert parse_reply('{"instruction": "x", "test_py": "def test(): pass", "solution": "true"}').test_py
    with pytest.raises(ParseError, match="solution, test"):
        parse_reply("<instruction>only this</instruction>")
    with pytest.raises(ParseError, match="instruction, solution, test"):  # the format echoed back
        parse_reply("<instruction>...</instruction> <file path='a'>...</file> <test>...</test> "
                    "<solution>...</solution>")
    with pytest.raises(ParseError, match="no tagged sections"):
        parse_reply(BROKEN)
    with pytest.raises(ParseError, match="relative path"):
        parse_reply('<instruction>x</instruction><file path="../etc/x">y</file><test>t</test><solution>s</solution>')


def test_prices_and_dry_run():
    assert price_for("openai/gpt-4o")["in"] == 2.5 and price_for("gpt-4o-mini")["out"] == 0.6
    assert price_for("local-model", 1.0, 2.0) == {"in": 1.0, "out": 2.0, "source": "given"}
    assert price_for("local-model")["in"] == 0.0
    d = dry_run(2, 0, "rl_v2", "openai/gpt-4o", 3, 4096, price_for("openai/gpt-4o"), reply_tokens=1000)
    one, worst = d["one_round_each"], d["all_rounds_fail"]
    assert one["completion_tokens"] == 2000 and worst["completion_tokens"] == 6000
    assert worst["prompt_tokens"] > 3 * one["prompt_tokens"]
    assert one["cost_usd"] == pytest.approx((one["prompt_tokens"] * 2.5 + 2000 * 10) / 1e6)


def test_replayed_replies_pass_at_round_three_with_feedback_and_accounting(replay, tmp_path, bwrap):
    url, requests = replay
    out = tmp_path / "authored"
    r = CliRunner().invoke(main, ["author", "--n", "1", "--seed", "3", "--base-url", url, "--model", "replay",
                                  "--out", str(out), "--rounds", "3", "--price-in", "1.0", "--price-out", "2.0"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "author_summary.json").read_text())
    assert summary["accepted"] == 1 and summary["accepted_at_round"]["3"] == 1 and summary["calls"] == 3
    # the feedback went back in the same conversation, with the failure reasons and the test output
    assert len(requests) == 3
    msgs2, msgs3 = requests[1]["messages"], requests[2]["messages"]
    assert msgs2[-2] == {"role": "assistant", "content": BROKEN} and "no tagged sections" in msgs2[-1]["content"]
    assert msgs3[:len(msgs2)] == msgs2 and msgs3[-2]["content"] == WRONG
    fb = msgs3[-1]["content"]
    assert "oracle run 1 scored 0.0" in fb and "expected 3, got 4" in fb
    # tokens: round 1 had no usage (estimated from the text), rounds 2-3 as reported; cost at the given prices
    log = [json.loads(x) for x in (out / "author_log.jsonl").read_text().splitlines()]
    rounds = log[0]["rounds"]
    assert [x["outcome"] for x in rounds] == ["parse_error", "oracle_failed", "accepted"]
    est_p = messages_tokens(requests[0]["messages"])
    assert rounds[0]["estimated"] and rounds[0]["prompt_tokens"] == est_p
    assert rounds[0]["completion_tokens"] == estimate_tokens(BROKEN)
    pt = est_p + 900 + 1300
    ct = estimate_tokens(BROKEN) + 120 + 130
    assert summary["tokens"] == {"prompt": pt, "completion": ct, "total": pt + ct}
    assert summary["estimated_calls"] == 1
    assert summary["cost_usd"] == pytest.approx((pt * 1.0 + ct * 2.0) / 1e6)
    assert sum(x["cost_usd"] for x in rounds) == pytest.approx(summary["cost_usd"])
    # the accepted task is a valid Harbor task with the nine axes; the truth only in tests/
    task_dir = out / log[0]["task"]
    task = load_task(task_dir)
    for axis in ("domain", "skill_type", "primitive_skills", "persona", "language", "task_complexity",
                 "command_complexity", "fixture", "verifier"):
        assert task.metadata[axis] == log[0]["axes"][axis]
    assert task.metadata["author_rounds"] == 3 and (task_dir / "tests" / "truth.txt").read_text() == "3\n"
    assert not (out / ".staging").exists()
    assert json.loads((out / "manifest.jsonl").read_text())["task"] == log[0]["task"]


needs_ml = pytest.mark.skipif(importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers")
                              is None, reason="needs the ml extra (torch, transformers) for the embedded model")


@pytest.mark.slow  # about 90 s on 2 CPUs: three replies from the embedded model
@needs_ml
def test_a_real_model_over_http_goes_through_the_loop(tmp_path, bwrap):
    """SmolLM2-135M writes poor tasks; what is tested is that every round is a real call, parsed or
    gated for real, fed back, and accounted from the server's usage field."""
    from tmax.agent.hf import HFPolicy
    from tmax.agent.server import make_server
    from tmax.author import AuthorConfig, author_corpus

    policy = HFPolicy(model_path="embedded", seed=0)
    srv = make_server(policy, "127.0.0.1", 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        cfg = AuthorConfig(base_url=f"http://127.0.0.1:{srv.server_address[1]}/v1", model=policy.model_name,
                           rounds=2, max_tokens=160, repeat=1, price=price_for("x", 0.5, 1.5), retries=0)
        s = author_corpus(1, 0, cfg, tmp_path / "a")
    finally:
        srv.shutdown()
    log = [json.loads(x) for x in (tmp_path / "a" / "author_log.jsonl").read_text().splitlines()]
    rounds = log[0]["rounds"]
    assert s["accepted"] + s["dropped"] == 1 and s["calls"] == len(rounds)
    assert all(x["outcome"] in ("parse_error", "build_failed", "oracle_failed", "nop_not_zero", "accepted")
               for x in rounds)
    assert s["accepted"] == 1 or (len(rounds) == 2 and sum(s["dropped_by_reason"].values()) == 1)
    assert all(not x["estimated"] and x["prompt_tokens"] > 0 and 0 < x["completion_tokens"] <= 160 for x in rounds)
    assert s["tokens"]["prompt"] == sum(x["prompt_tokens"] for x in rounds)
    if len(rounds) == 2:  # the second call carried the first reply and the feedback on it
        assert rounds[1]["prompt"] and rounds[1]["prompt"] != rounds[0]["prompt"]
    assert s["cost_usd"] == pytest.approx((s["tokens"]["prompt"] * 0.5 + s["tokens"]["completion"] * 1.5) / 1e6)
