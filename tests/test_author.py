"""The LLM author: reply parsing, accounting, and the author-check-feedback loop with the real gate, the
real hack battery and the perturbation check in the real sandbox. The model is a scripted policy that
replays replies written as a capable model would write them, good and sloppy; one test goes over real
HTTP through the CLI."""

from __future__ import annotations

import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from tmax.agent.harness import Reply
from tmax.agent.policies import ScriptedPolicy
from tmax.author import (CHARS_PER_TOKEN, MAX_REPLY_TOKENS, AuthorConfig, ParseError, author_one, dry_run,
                         estimate_tokens, first_messages, messages_tokens, parse_reply, price_for)
from tmax.cli import main
from tmax.task import load_task
from tmax.author_checks import PROMPTS
from tmax.taxonomy import COMMAND_COMPLEXITIES, FIXTURE_KINDS, TASK_COMPLEXITIES, VERIFIER_KINDS, Axes

AXES = Axes(domain="system_administration", skill_type="Configuration", primitive_skills=("ini parsing", "grep"),
            persona="on-call SRE", language="Bash", task_complexity="short", command_complexity="bash",
            fixture="text_only", verifier="exact_text", family="llm_author")

SERVERS_INI = """[billing]
host = 10.0.0.4
port = 7102
max_conn = 512

[ledger]
host = 10.0.0.9
port = 8431
max_conn = 512

[search]
host = 10.0.0.12
port = 9177
max_conn = 512
"""

# A capable model's task: the port of one section, compared exactly with the truth.
GOOD = f"""Here is the task.

<instruction>
The ledger service is down and I need its port fast. Read /app/servers.ini and write the port
of the [ledger] section, digits only, to /app/port.txt.
</instruction>
<file path="servers.ini">
{SERVERS_INI}</file>
<truth>8431</truth>
<test>
```bash
want=$(cat /tests/truth.txt)
got=$(cat /app/port.txt 2>/dev/null | tr -d '[:space:]')
echo "expected $want, got ${{got:-nothing}}"
if [ "$got" = "$want" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
```
</test>
<solution>
set -e
awk -F' *= *' '/^\\[/{{s=$0}} s=="[ledger]" && $1=="port"{{print $2}}' /app/servers.ini > /app/port.txt
</solution>
<outputs>
/app/port.txt
</outputs>
<depends file="servers.ini">8431</depends>
"""
# The same task with a real bug: the solution reads a file that does not exist, so it fails loudly.
TYPO = GOOD.replace("' /app/servers.ini > /app/port.txt", "' /app/server.ini > /app/port.txt") \
    .replace("set -e\n", "set -e\ntest -r /app/server.ini || { echo 'config missing: /app/server.ini' >&2; exit 3; }\n")
# Sloppy: the test checks only that the output exists, and the instruction names it relative to /app,
# so the gate's hacks (which find outputs by absolute path) have nothing to aim at.
EXISTS_ONLY = GOOD.replace("to /app/port.txt.", "to port.txt next to it.").replace(
    """got=$(cat /app/port.txt 2>/dev/null | tr -d '[:space:]')
echo "expected $want, got ${got:-nothing}"
if [ "$got" = "$want" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt""",
    "if [ -e /app/port.txt ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt")
# Sloppy: the truth and the solution hard-code a port the fixture contradicts (the ledger is on 8431).
HARD_CODED = GOOD.replace("<truth>8431</truth>", "<truth>8080</truth>").replace(
    "awk -F' *= *' '/^\\[/{s=$0} s==\"[ledger]\" && $1==\"port\"{print $2}' /app/servers.ini > /app/port.txt",
    "echo 8080 > /app/port.txt")

# A value the setup compiles into a stripped binary: the declaration names setup.sh.
BINARY = r"""<instruction>
Our release tool /app/vaultd prints the release token when run with --token, but the wrapper that
read it is gone. Write the token (the part after "token: ") to /app/token.txt.
</instruction>
<setup>
cat > /tmp/vaultd.c <<'SRC'
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--token") == 0) { puts("token: K7QX-5521"); return 0; }
    fputs("usage: vaultd --token\n", stderr);
    return 2;
}
SRC
gcc -s -O2 -o /app/vaultd /tmp/vaultd.c && rm /tmp/vaultd.c
</setup>
<truth>K7QX-5521</truth>
<test>
if [ "$(cat /app/token.txt 2>/dev/null)" = "$(cat /tests/truth.txt)" ]; then echo 1; else echo 0; fi \
  > /logs/verifier/reward.txt
</test>
<solution>
/app/vaultd --token | sed 's/^token: //' > /app/token.txt
</solution>
<outputs>/app/token.txt</outputs>
<depends file="setup.sh">K7QX-5521</depends>"""
# The output is a program that reads the fixture each time it runs: declared runtime="yes", and the
# test runs it as the unprivileged uid, so the changed fixture and truth judge it.
LOOKUP = f"""<instruction>
Our deploy scripts need the port of a service on every run. Write /app/lookup.sh so that
`bash /app/lookup.sh NAME` prints the port of section [NAME] of /app/servers.ini, digits only. It
must read /app/servers.ini each time: the file changes.
</instruction>
<file path="servers.ini">
{SERVERS_INI}</file>
<truth>8431</truth>
<test>
want=$(cat /tests/truth.txt)
got=$(cd /tmp && timeout 10 setpriv --reuid=65532 --regid=65532 --clear-groups -- bash /app/lookup.sh ledger \\
  2>/dev/null | tr -d '[:space:]')
pkill -KILL -u 65532 2>/dev/null
echo "expected $want, got ${{got:-nothing}}"
if [ "$got" = "$want" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
</test>
<solution>
cat > /app/lookup.sh <<'SH'
#!/bin/bash
awk -F' *= *' -v want="[$1]" '/^\\[/{{s=$0}} s==want && $1=="port"{{print $2}}' /app/servers.ini
SH
chmod +x /app/lookup.sh
</solution>
<outputs>/app/lookup.sh</outputs>
<depends file="servers.ini" runtime="yes">8431</depends>
"""
LOOKUP_HARD_CODED = LOOKUP.replace(
    "awk -F' *= *' -v want=\"[$1]\" '/^\\[/{s=$0} s==want && $1==\"port\"{print $2}' /app/servers.ini", "echo 8431")
REPORT_XML = """<?xml version="1.0"?>
<testsuite name="auth" tests="3">
  <test name="login_ok" status="pass"/>
  <file>auth/session.py</file>
  <test name="login_locked" status="fail">
    <message>account locked after 3 tries</message>
  </test>
  <test name="logout" status="pass"></test>
</testsuite>"""
XML_TASK = f"""<instruction>
Count the failed tests in /app/report.xml and write the count to /app/failed.txt.
</instruction>
<file path="report.xml">
{REPORT_XML}
</file>
<test>
grep -q '<test name=' /app/report.xml || exit 1
[ "$(cat /app/failed.txt)" = "$(grep -c 'status="fail"' /app/report.xml)" ] && echo 1 > /logs/verifier/reward.txt \\
  || echo 0 > /logs/verifier/reward.txt
</test>
<solution>
grep -c 'status="fail"' /app/report.xml > /app/failed.txt
</solution>
<outputs>/app/failed.txt</outputs>
<depends file="report.xml">fail</depends>"""


def author(tmp_path: Path, replies: list[str], rounds: int = 2, finish: str = "stop") -> tuple[dict, ScriptedPolicy]:
    policy = ScriptedPolicy([Reply(content=r, finish_reason=finish) for r in replies], tool_calling=False)
    cfg = AuthorConfig(base_url="", model="scripted", rounds=rounds, repeat=1, backend="bwrap",
                       price=price_for("x", 1.0, 2.0))
    out = tmp_path / "authored"
    out.mkdir(parents=True)
    return author_one(0, AXES, cfg, out, seed=0, policy=policy), policy


def test_parse_ends_a_section_only_at_its_own_closing_tag():
    d = parse_reply(XML_TASK)
    # the fixture's <test ...> and even <file>...</file> tags are its content, not sections
    assert d.files == {"report.xml": REPORT_XML + "\n"}
    assert d.test.startswith("grep -q '<test name='") and d.test.rstrip().endswith("/logs/verifier/reward.txt")
    assert d.outputs == ["/app/failed.txt"] and (d.depends[0].file, d.depends[0].value) == ("report.xml", "fail")
    d = parse_reply(GOOD)
    assert d.test.startswith("want=") and "```" not in d.test  # the fence around the section is dropped
    assert d.truth == "8431" and d.files["servers.ini"] == SERVERS_INI
    assert parse_reply('{"instruction": "x", "test_py": "def test(): pass", "solution": "true", '
                       '"outputs": ["/app/x"]}').test_py


def test_a_malformed_or_cut_reply_is_an_error_that_names_the_section():
    cut = GOOD[:GOOD.index("/app/servers.ini > /app/port.txt")]  # cut off inside <solution>
    with pytest.raises(ParseError, match=r"<solution> \(line \d+\) is never closed"):
        parse_reply(cut)
    with pytest.raises(ParseError, match="<test> .* never closed"):  # an open section never swallows the next
        parse_reply(GOOD.replace("</test>", ""))
    with pytest.raises(ParseError, match="second <truth>"):
        parse_reply(GOOD.replace("<truth>8431</truth>", "<truth>8431</truth>\n<truth>1</truth>"))
    with pytest.raises(ParseError, match="missing <depends"):
        parse_reply(GOOD.replace('<depends file="servers.ini">8431</depends>', ""))
    with pytest.raises(ParseError, match="outputs"):
        parse_reply(GOOD.replace("<outputs>\n/app/port.txt\n</outputs>", ""))
    with pytest.raises(ParseError, match="no tagged sections"):
        parse_reply("Sure, I would love to help you write a task about this!")
    with pytest.raises(ParseError, match="relative path"):
        parse_reply(GOOD.replace('<file path="servers.ini">', '<file path="../etc/servers.ini">'))


def test_token_estimate_is_conservative_and_a_whole_task_fits():
    code = (Path(__file__).parent.parent / "src" / "tmax" / "author_checks.py").read_text()
    assert estimate_tokens(code) >= len(code) / CHARS_PER_TOKEN >= len(code) / 2.5
    tok_file = Path.home() / ".cache" / "tmax" / "models" / "smollm2-135m-instruct" / "tokenizer.json"
    if tok_file.is_file():  # a real tokenizer counts, and the estimate does not fall short of it
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(tok_file))
        assert estimate_tokens(code, tok) == len(tok.encode(code, add_special_tokens=False))
        assert estimate_tokens(code) >= estimate_tokens(code, tok)
    assert MAX_REPLY_TOKENS >= 4 * estimate_tokens(GOOD) and AuthorConfig("", "m").max_tokens == MAX_REPLY_TOKENS


def test_the_prompt_explains_axes_lifecycle_and_image():
    system, user = (m["content"] for m in first_messages(AXES))
    assert "EVERY process it started is killed" in system and "TEST start it" in system
    assert "sox cannot read or write mp3" in system and "without cargo" in system and "tesseract 5" in system
    assert "the needed values are in plain text files in /app" in user  # text_only, explained
    assert "must equal the hidden truth exactly" in user  # exact_text, explained
    assert '<depends file="F">VALUE</depends>' in user and "<outputs>" in user
    for table, values in (("fixture_hints", FIXTURE_KINDS), ("verifier_hints", VERIFIER_KINDS),
                          ("command_hints", COMMAND_COMPLEXITIES), ("complexity_hints", TASK_COMPLEXITIES)):
        assert set(values) <= set(PROMPTS[table]), f"{table}: every value of the axis is explained"


def test_prices_and_dry_run():
    assert price_for("openai/gpt-4o")["in"] == 2.5 and price_for("gpt-4o-mini")["out"] == 0.6
    assert price_for("local-model", 1.0, 2.0) == {"in": 1.0, "out": 2.0, "source": "given"}
    d = dry_run(2, 0, "rl_v2", "openai/gpt-4o", 3, 4096, price_for("openai/gpt-4o"), reply_tokens=1000)
    one, worst = d["one_round_each"], d["all_rounds_fail"]
    assert one["completion_tokens"] == 2000 and worst["completion_tokens"] == 6000
    assert worst["prompt_tokens"] > 3 * one["prompt_tokens"]
    assert one["cost_usd"] == pytest.approx((one["prompt_tokens"] * 2.5 + 2000 * 10) / 1e6, abs=1e-6)


def test_a_good_task_is_accepted_in_round_one(tmp_path, bwrap):
    rec, policy = author(tmp_path, [GOOD])
    assert rec["accepted"] and rec["n_rounds"] == 1 and policy.calls == 1, rec["reason"]
    checks = rec["rounds"][0]["checks"]
    assert checks["hacks"] and all(v == 0.0 for v in checks["hacks"].values())
    assert {"empty_answer", "constant_answer", "every_candidate_line", "most_frequent_token"} <= set(checks["hacks"])
    p = checks["perturbation"]
    assert p["ok"] and p["tests_carry_value"] and p["perturbed_reward"] == 1.0 and p["old_output_reward"] == 0.0
    task = load_task(tmp_path / "authored" / rec["task"])
    assert task.metadata["author_outputs"] == ["/app/port.txt"] and task.metadata["fixture"] == "text_only"
    assert (task.path / "tests" / "truth.txt").read_text() == "8431\n"
    assert not (tmp_path / "authored" / ".staging" / rec["task"]).exists()


def test_a_value_the_setup_compiles_in_is_changed_in_the_setup(tmp_path, bwrap):
    rec, _ = author(tmp_path, [BINARY], rounds=1)
    assert rec["accepted"], rec["rounds"][0].get("feedback")
    p = rec["rounds"][0]["checks"]["perturbation"]
    assert (p["file"], p["new"]) == ("setup.sh", "K8QX-6632")  # only the digits change
    assert p["tests_carry_value"] and p["perturbed_reward"] == 1.0 and p["old_output_reward"] == 0.0


def test_a_program_that_reads_the_value_when_it_runs_is_judged_by_the_changed_tests(tmp_path, bwrap):
    assert LOOKUP_HARD_CODED != LOOKUP
    rec, _ = author(tmp_path / "reads", [LOOKUP], rounds=1)
    assert rec["accepted"], rec["rounds"][0].get("feedback")
    p = rec["rounds"][0]["checks"]["perturbation"]
    assert p["tests_carry_value"] and p["perturbed_reward"] == 1.0
    rec, _ = author(tmp_path / "hard", [LOOKUP_HARD_CODED], rounds=1)
    r = rec["rounds"][0]
    assert r["gate"]["ok"] and r["outcome"] == "perturbation_failed"
    assert r["checks"]["perturbation"]["perturbed_reward"] == 0.0 and "does not follow the value" in r["feedback"]


def test_a_buggy_solution_is_fixed_after_one_round_of_feedback(tmp_path, bwrap):
    rec, _ = author(tmp_path, [TYPO, GOOD], rounds=3)
    assert [r["outcome"] for r in rec["rounds"]] == ["oracle_failed", "accepted"] and rec["accepted"]
    fb = rec["rounds"][0]["feedback"]
    assert "exited with status 3" in fb and "config missing: /app/server.ini" in fb  # the solution's own
    assert "expected 8431, got nothing" in fb  # and the test's


def test_a_test_that_checks_only_existence_is_refused_by_the_adversarial_leg(tmp_path, bwrap):
    rec, _ = author(tmp_path, [EXISTS_ONLY], rounds=1)
    r = rec["rounds"][0]
    assert r["gate"]["ok"]  # the gate's own hacks found no output path to aim at
    assert not rec["accepted"] and r["outcome"] == "hack_passed" and r["checks"]["beaten_by"] == "plant_reward"
    # the first hack of the battery leaves an empty file at each output too, which is all the test asks
    assert "the hack plant_reward, which writes reward files" in r["feedback"]
    assert "then an empty file at each output" in r["feedback"]


def test_a_hard_coded_answer_is_refused_by_the_perturbation_check(tmp_path, bwrap):
    rec, _ = author(tmp_path, [HARD_CODED], rounds=1)
    r = rec["rounds"][0]
    assert r["gate"]["ok"] and all(v == 0.0 for v in r["checks"]["hacks"].values())  # nothing else caught it
    assert not rec["accepted"] and r["outcome"] == "perturbation_failed"
    p = r["checks"]["perturbation"]
    assert p["old"] == "8431" and p["new"] != "8431" and not p["tests_carry_value"] and p["perturbed_reward"] == 1.0
    assert "with '8431' in servers.ini replaced by" in r["feedback"] and "hard-coded" in r["feedback"]


def test_a_declaration_that_does_not_match_the_fixture_is_sent_back(tmp_path, bwrap):
    rec, _ = author(tmp_path, [GOOD.replace('<depends file="servers.ini">8431</depends>',
                                            '<depends file="servers.ini">8080</depends>')], rounds=1)
    r = rec["rounds"][0]
    assert r["outcome"] == "bad_declaration" and "'8080' does not occur in that file" in r["feedback"]


@pytest.fixture
def replay():
    """A chat-completions server that replays a cut-off reply, then GOOD, and records every request."""
    requests: list[dict] = []
    replies = [(GOOD[:GOOD.index("<solution>") + 40], "length", None),
               (GOOD, "stop", {"prompt_tokens": 1900, "completion_tokens": 700})]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            content, finish, usage = replies[len(requests)]
            requests.append(body)
            out = {"id": f"r{len(requests)}", "object": "chat.completion", "model": body["model"],
                   "choices": [{"index": 0, "finish_reason": finish,
                                "message": {"role": "assistant", "content": content}}]}
            if usage:
                out["usage"] = usage
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
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", requests, replies
    srv.shutdown()


def test_the_cli_over_http_feeds_back_a_cut_reply_and_accounts_tokens(replay, tmp_path, bwrap):
    url, requests, replies = replay
    out = tmp_path / "authored"
    r = CliRunner().invoke(main, ["author", "--n", "1", "--seed", "3", "--base-url", url, "--model", "replay",
                                  "--out", str(out), "--rounds", "2", "--price-in", "1.0", "--price-out", "2.0",
                                  "--repeat", "1", "--backend", "bwrap"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "author_summary.json").read_text())
    log = [json.loads(x) for x in (out / "author_log.jsonl").read_text().splitlines()]
    rounds = log[0]["rounds"]
    assert summary["accepted"] == 1, rounds[-1].get("feedback") or rounds[-1].get("reason")
    assert [x["outcome"] for x in rounds] == ["parse_error", "accepted"]
    fb = requests[1]["messages"][-1]["content"]
    assert "<solution> (line" in fb and "never closed" in fb and "cut off at max_tokens" in fb
    # round 1 had no usage: estimated from the text; round 2 as reported; cost at the given prices
    assert rounds[0]["counted_by"] == "estimate" and rounds[1]["counted_by"] == "api"
    est_p = messages_tokens(requests[0]["messages"])
    assert rounds[0]["prompt_tokens"] == est_p and rounds[0]["completion_tokens"] == estimate_tokens(replies[0][0])
    pt, ct = est_p + 1900, estimate_tokens(replies[0][0]) + 700
    assert summary["tokens"] == {"prompt": pt, "completion": ct, "total": pt + ct}
    assert summary["cost_usd"] == pytest.approx((pt * 1.0 + ct * 2.0) / 1e6)
    assert json.loads((out / "manifest.jsonl").read_text())["task"] == log[0]["task"]


needs_ml = pytest.mark.skipif(importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers")
                              is None, reason="needs the ml extra (torch, transformers) for the embedded model")


@pytest.mark.slow  # about 90 s on 2 CPUs: two replies from the embedded model
@needs_ml
def test_a_real_model_over_http_goes_through_the_loop(tmp_path, bwrap):
    """SmolLM2-135M writes poor tasks; what is tested is that every round is a real call, parsed or
    checked for real, fed back, and accounted from the server's usage field."""
    from tmax.agent.hf import HFPolicy
    from tmax.agent.server import make_server
    from tmax.author import author_corpus

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
    assert all(x["outcome"] in ("parse_error", "build_failed", "oracle_failed", "nop_not_zero", "hack_passed",
                                "channel_skipped", "bad_declaration", "perturbation_failed", "accepted")
               for x in rounds)
    assert all(x["counted_by"] == "api" and x["prompt_tokens"] > 0 and 0 < x["completion_tokens"] <= 160
               for x in rounds)
    assert s["tokens"]["prompt"] == sum(x["prompt_tokens"] for x in rounds)
    assert s["cost_usd"] == pytest.approx((s["tokens"]["prompt"] * 0.5 + s["tokens"]["completion"] * 1.5) / 1e6,
                                          abs=1e-6)  # the summary rounds to 6 places
