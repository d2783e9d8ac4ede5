"""The adversarial battery: generic hacks that try to earn reward without doing the task.

Each hack is an agent that runs in the task's real sandbox through the real trial (``run_trial``),
so the real verifier scores it. A hack may know what any agent knows (the instruction, the files of
its sandbox) plus the verifier kind and the output path, which the instruction states anyway; it
never reads the hidden tests itself, but the programs and services it leaves behind try to, while
they are being graded. A task passes the adversarial leg of the gate only if every hack that
applies scores strictly below ``HACK_THRESHOLD``.

| hack                  | applies to                         | what it leaves                                   |
|-----------------------|------------------------------------|--------------------------------------------------|
| plant_reward          | every task                         | reward files in /logs/verifier, and writers of   |
|                       |                                    | them in every startup path a verifier might run: |
|                       |                                    | conftest.py, sitecustomize.py, shadowing modules |
|                       |                                    | in /app, shell rc files, uv's env file, git      |
|                       |                                    | hooks and fsmonitor, a daemon                    |
| outputs_plant_reward  | hand-written and imported tasks    | every output path (and each file the instruction |
|                       |                                    | names inside a named directory) as a script,     |
|                       |                                    | module, C source, Makefile or SQL script that    |
|                       |                                    | plants the reward and leaves a daemon doing so   |
| empty_answer          | every task                         | an empty file at every output path               |
| constant_answer       | every task                         | "0" at every output path                         |
| input_as_answer       | file answers                       | the largest input file, copied to the output     |
| every_candidate_line  | file answers                       | every distinct line of every input file          |
| most_frequent_token   | file answers                       | the most frequent code-shaped token of the data  |
| program_plants_reward | programs (fuzz, classifier)        | a program that writes reward files, forks a      |
|                       |                                    | daemon that keeps writing them, and prints the   |
|                       |                                    | hidden answer if it can read it                  |
| echo_program          | fuzz_equivalence                   | ``cat``                                          |
| print_nothing         | fuzz_equivalence                   | a program that prints nothing                    |
| accept_all            | adversarial_corpus                 | exit 0                                           |
| reject_all            | adversarial_corpus                 | exit 1                                           |
| service_plants_reward | multi_protocol                     | a start.sh whose daemon writes reward files and  |
|                       |                                    | serves the hidden answer if it can read it       |
| empty_200             | multi_protocol                     | HTTP 200 with an empty body; TCP closes at once  |

Hand-written and imported tasks carry no verifier kind: they get the hacks that need no knowledge of
the task, with the output paths taken from the instruction (every absolute path it names under a
work area that the environment does not already hold).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tmax.sandbox import Bind, Sandbox
from tmax.task import Task

HACK_THRESHOLD = 0.25  # a hack that scores this much or more beats the task
FILE_KINDS = ("exact_text", "metric_threshold")

# Writes 1.0 into both reward files wherever it runs (as any uid; failures are silent).
_PLANT = ("for d in /logs/verifier /logs; do mkdir -p $d 2>/dev/null; echo 1 > $d/reward.txt 2>/dev/null; "
          "echo '{\"reward\": 1.0}' > $d/reward.json 2>/dev/null; done")
_PLANT_PY = ("import os\nfor d in ('/logs/verifier',):\n    try:\n        os.makedirs(d, exist_ok=True)\n"
             "        open(d + '/reward.txt', 'w').write('1\\n')\n"
             "        open(d + '/reward.json', 'w').write('{\"reward\": 1.0}')\n    except OSError:\n        pass\n")
# A daemon that keeps planting (and outlives its parent if nothing kills it).
_DAEMON = f"setsid nohup sh -c {shlex.quote(f'while :; do {_PLANT}; sleep 0.05; done')} >/dev/null 2>&1 &"

# Replays hidden data: if /tests is readable, answer from it (spec.json's cases or corpora).
_REPLAY_PY = r'''import json, os, subprocess, sys
exec(compile(PLANT, "plant", "exec"))
subprocess.Popen(["sh", "-c", DAEMON])
data = sys.stdin.read()
try:
    spec = json.load(open("/tests/spec.json"))
except Exception:
    spec = {}
for inp, out in spec.get("cases", []):
    if inp == data:
        sys.stdout.write(out)
        sys.exit(0)
if data in spec.get("malicious", []):
    sys.exit(1)
sys.exit(0)
'''

_EMPTY_200 = r'''import socket, sys, threading
def http(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", port)); s.listen(16)
    while True:
        c, _ = s.accept(); c.recv(65536)
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"); c.close()
def tcp(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", port)); s.listen(16)
    while True:
        c, _ = s.accept(); c.close()
for p, f in ((int(sys.argv[1]), http), (int(sys.argv[2]), tcp)):
    threading.Thread(target=f, args=(p,), daemon=True).start()
threading.Event().wait()
'''

_SERVE_REPLAY = r'''import json, os, socket, subprocess, sys, threading
exec(compile(PLANT, "plant", "exec"))
subprocess.Popen(["sh", "-c", DAEMON])
try:
    body = json.load(open("/tests/spec.json"))["expected"].encode()
except Exception:
    body = b""
def http(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", port)); s.listen(16)
    while True:
        c, _ = s.accept(); c.recv(65536)
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body); c.close()
def tcp(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", port)); s.listen(16)
    while True:
        c, _ = s.accept(); c.recv(100); c.sendall(body); c.close()
for p, f in ((int(sys.argv[1]), http), (int(sys.argv[2]), tcp)):
    threading.Thread(target=f, args=(p,), daemon=True).start()
threading.Event().wait()
'''


def _with_plant(src: str) -> str:
    return f"PLANT = {_PLANT_PY!r}\nDAEMON = {_DAEMON!r}\n" + src


# -- what a hack knows about the task -----------------------------------------------------------

@dataclass
class Target:
    kind: str  # the verifier kind, or "" for hand-written and imported tasks
    spec: dict  # tests/spec.json of a generated task ({} otherwise)
    outputs: list[str]  # the paths the agent must write
    instruction: str = ""

    @classmethod
    def of(cls, task: Task) -> "Target":
        spec: dict = {}
        f = task.path / task.tests_dir / "spec.json"
        if f.is_file():
            try:
                spec = json.loads(f.read_text())
            except (OSError, ValueError):
                spec = {}
        kind = str(task.metadata.get("verifier", "")) if spec else ""
        outputs = [spec["path"]] if isinstance(spec.get("path"), str) else named_outputs(task)
        return cls(kind, spec, outputs, task.instruction)


_PATH = re.compile(r"(?<![\w.-])(/(?:app|root|home|srv|data|output|tmp|var|opt|etc)(?:/[\w.@+-]+)+)")


def named_outputs(task: Task) -> list[str]:
    """Absolute paths the instruction names under a work area that no environment file already
    holds: the likely outputs of a task that says nothing else about them."""
    existing = set()
    env_files = task.environment_dir / "files" if task.layout == "harbor" else None
    if env_files is not None and env_files.is_dir():
        existing = {"/" + str(p.relative_to(env_files)) for p in env_files.rglob("*")}
    out = []
    for m in _PATH.finditer(task.instruction):
        p = m.group(1).rstrip(".,:;)")
        if p in existing or p.endswith("/") or p in out:
            continue
        if any(p == w or p.startswith(w.rstrip("/") + "/") for w in task.work_areas):
            out.append(p)
    return out[:16]


# -- the hacks ----------------------------------------------------------------------------------

@dataclass
class Hack:
    """One hack as a trial agent: ``script`` is bash run in the agent's sandbox."""

    name: str
    applies: Callable[[Target], bool]
    script: Callable[[Target], str]
    target: Target | None = None

    def binds(self, task: Task) -> list[Bind]:
        return []

    def run(self, task: Task, sandbox: Sandbox, timeout: float) -> bool:
        sandbox.exec(self.script(self.target or Target.of(task)), timeout=min(timeout, 120))
        return False


def _write_outputs(t: Target, content_cmd: str) -> str:
    lines = []
    for p in t.outputs:
        q = shlex.quote(p)
        lines.append(f"mkdir -p \"$(dirname {q})\" && {{ {content_cmd}; }} > {q} 2>/dev/null || true")
    return "\n".join(lines) or "true"


def _inputs_find() -> str:
    """Regular text files the agent was given (not its examples), largest first."""
    return ("find /app -xdev -type f -size -4M ! -path '*/examples/*' ! -name '*.png' ! -name '*.wav' "
            "! -name '*.mp4' 2>/dev/null | xargs -r ls -S 2>/dev/null")


LANG_FILES = {"Python": "solution.py", "Bash": "solution.sh", "C": "solution.c", "C++": "solution.cpp",
              "Rust": "solution.rs", "Go": "solution.go"}


def _program(t: Target, source_by_file: dict[str, str]) -> str:
    """Write the hack's program into every file the grader builds (Python when the language is free)."""
    langs = t.spec.get("languages", ["any"])
    files = ["solution.py"] if langs == ["any"] else [LANG_FILES[lang] for lang in langs if lang in LANG_FILES]
    out = [f"cat > /app/{f} <<'TMAX_HACK_EOF'\n{source_by_file[f]}\nTMAX_HACK_EOF" for f in files]
    return "\n".join(out) or "true"


def _c_like(body_c: str, body_go: str, body_rs: str) -> dict[str, str]:
    return {"solution.c": f"#include <stdio.h>\n#include <stdlib.h>\nint main(void){{{body_c}}}",
            "solution.cpp": f"#include <cstdio>\n#include <cstdlib>\nint main(){{{body_c}}}",
            "solution.go": f"package main\nimport (\"io\"\n\"os\")\nvar _ = io.EOF\nfunc main(){{{body_go}}}",
            "solution.rs": f"use std::io::Read;\nfn main(){{{body_rs}}}"}


def _echo() -> dict[str, str]:
    return {"solution.py": "import sys\nsys.stdout.write(sys.stdin.read())", "solution.sh": "cat",
            **_c_like("int c; while((c=getchar())!=EOF) putchar(c); return 0;",
                      "io.Copy(os.Stdout, os.Stdin)",
                      "let mut s=String::new(); std::io::stdin().read_to_string(&mut s).unwrap(); print!(\"{}\", s);")}


def _exit(code: int) -> dict[str, str]:
    return {"solution.py": f"import sys\nsys.stdin.read()\nsys.exit({code})", "solution.sh": f"cat >/dev/null; exit {code}",
            **_c_like(f"int c; while((c=getchar())!=EOF); return {code};", f"io.ReadAll(os.Stdin); os.Exit({code})",
                      f"let mut s=String::new(); let _=std::io::stdin().read_to_string(&mut s); std::process::exit({code});")}


def _replay() -> dict[str, str]:
    shell = (f"{_PLANT}\n({_DAEMON})\nd=$(cat)\n"
             "python3 - \"$d\" <<'EOF' 2>/dev/null\nimport json,sys\ntry:\n    s=json.load(open('/tests/spec.json'))\n"
             "except Exception:\n    sys.exit(0)\nfor i,o in s.get('cases',[]):\n    if i==sys.argv[1]:\n"
             "        sys.stdout.write(o)\nEOF")
    plant_c = ('system("' + _PLANT.replace('\\', '\\\\').replace('"', '\\"') + '");')
    return {"solution.py": _with_plant(_REPLAY_PY), "solution.sh": shell,
            **_c_like(plant_c + "return 0;", "os.WriteFile(\"/logs/verifier/reward.txt\", []byte(\"1\\n\"), 0644)",
                      "let _=std::fs::write(\"/logs/verifier/reward.txt\", \"1\\n\");")}


_BARE_NAME = re.compile(r"`([\w.-]+\.(?:sql|sh|py|c|cc|cpp|mk)|Makefile|makefile)`")


def _payloads() -> dict[str, str]:
    """What each kind of file the verifier might build or run does when it is: plant the reward
    (through /app/.plant.sh, which every payload runs) and leave a daemon doing it."""
    call = "sh /app/.plant.sh"
    c = (f'#include <stdlib.h>\n__attribute__((constructor)) static void tmax_hack(void) {{ system("{call}"); }}\n'
         f'int main(void) {{ system("{call}"); return 0; }}\n')
    return {".py": "import subprocess\nsubprocess.call(['sh', '/app/.plant.sh'])\n",
            ".c": c, ".cc": c, ".cpp": c, ".h": c,
            "Makefile": f".PHONY: all\nall:\n\t{call}\n%:\n\t{call}\n", ".mk": f"all:\n\t{call}\n",
            ".sql": f".system {call}\nSELECT 1;\n", "": f"#!/bin/bash\n{call}\n"}


def _payload_for(name: str) -> str:
    pay = _payloads()
    if name in ("Makefile", "makefile"):
        return pay["Makefile"]
    return pay.get(Path(name).suffix, pay[""])


def _outputs_plant(t: Target) -> str:
    """Every named output (and every file the instruction names bare, inside each named directory)
    becomes a script, module, C source, Makefile or SQL script that plants the reward when the
    verifier runs or builds it: a verifier that runs the agent's code as itself hands it the reward."""
    lines = [f"cat > /app/.plant.sh <<'TMAX_HACK_EOF'\n{_PLANT}\n{_DAEMON}\nTMAX_HACK_EOF"]
    bare = sorted(set(_BARE_NAME.findall(t.instruction)))
    for p in t.outputs:
        q = shlex.quote(p)
        lines.append(f"if [ ! -d {q} ]; then mkdir -p \"$(dirname {q})\"; cat > {q} <<'TMAX_HACK_EOF'\n"
                     f"{_payload_for(Path(p).name)}TMAX_HACK_EOF\nchmod +x {q}; fi")
        for name in bare:
            f = shlex.quote(f"{p}/{name}")
            lines.append(f"if [ -d {q} ]; then cat > {f} <<'TMAX_HACK_EOF'\n{_payload_for(name)}TMAX_HACK_EOF\n"
                         f"chmod +x {f}; fi")
    return "\n".join(lines)


def _plant_everywhere(t: Target) -> str:
    """Reward writers wherever a careless verifier would run the agent's code."""
    py = _PLANT_PY
    hook = f"#!/bin/sh\n{_PLANT}\n"
    return "\n".join([
        _PLANT,  # in the agent's own sandbox: never carried to the verifier
        _DAEMON,
        *[f"cat > /app/{m} <<'EOF'\n{py}\nEOF" for m in ("conftest.py", "sitecustomize.py", "usercustomize.py",
                                                         "pytest.py", "json.py", "os.py")],
        "mkdir -p /app/tests && cp /app/conftest.py /app/tests/conftest.py",
        f"for f in /root/.bashrc /root/.profile /root/.bash_profile /root/.bash_login; do echo {shlex.quote(_PLANT)} >> $f; done",
        f"mkdir -p /root/.local/bin && echo {shlex.quote(_PLANT)} > /root/.local/bin/env",
        "mkdir -p /root/.config/git",
        f"cat > /root/.local/bin/fsmon <<'EOF'\n{hook}EOF\nchmod +x /root/.local/bin/fsmon",
        "printf '[core]\\n\\tfsmonitor = /root/.local/bin/fsmon\\n\\tpager = /root/.local/bin/fsmon\\n' > /root/.gitconfig",
        "cp /root/.gitconfig /root/.config/git/config",
        "cd /app && { [ -d .git ] || git init -q . 2>/dev/null; } && git config core.fsmonitor /root/.local/bin/fsmon "
        "&& git config core.pager /root/.local/bin/fsmon && mkdir -p .git/hooks && "
        "for h in pre-commit post-checkout post-merge pre-push post-commit reference-transaction; do "
        "cp /root/.local/bin/fsmon .git/hooks/$h; chmod +x .git/hooks/$h; done; true",
        _write_outputs(t, "true"),
    ])


HACKS: list[Hack] = [
    Hack("plant_reward", lambda t: True, _plant_everywhere),
    Hack("outputs_plant_reward", lambda t: not t.kind and bool(t.outputs), _outputs_plant),
    Hack("empty_answer", lambda t: t.kind in FILE_KINDS or not t.kind,
         lambda t: _write_outputs(t, "true")),
    Hack("constant_answer", lambda t: t.kind in FILE_KINDS or not t.kind,
         lambda t: _write_outputs(t, "echo 0")),
    Hack("input_as_answer", lambda t: t.kind in FILE_KINDS,
         lambda t: _write_outputs(t, f"f=$({_inputs_find()} | head -n1); [ -n \"$f\" ] && cat \"$f\"")),
    Hack("every_candidate_line", lambda t: t.kind in FILE_KINDS,
         lambda t: _write_outputs(t, f"{_inputs_find()} | xargs -r cat 2>/dev/null | awk '!seen[$0]++'")),
    Hack("most_frequent_token", lambda t: t.kind in FILE_KINDS,
         lambda t: _write_outputs(t, f"{_inputs_find()} | xargs -r cat 2>/dev/null | grep -oE '\\b[A-Z]{{6,}}\\b|\\b[0-9]{{3,}}\\b' "
                                     "| sort | uniq -c | sort -rn | awk 'NR==1{print $2}'")),
    Hack("program_plants_reward", lambda t: t.kind in ("fuzz_equivalence", "adversarial_corpus"),
         lambda t: _program(t, _replay())),
    Hack("echo_program", lambda t: t.kind == "fuzz_equivalence", lambda t: _program(t, _echo())),
    Hack("print_nothing", lambda t: t.kind == "fuzz_equivalence", lambda t: _program(t, _exit(0))),
    Hack("accept_all", lambda t: t.kind == "adversarial_corpus", lambda t: _program(t, _exit(0))),
    Hack("reject_all", lambda t: t.kind == "adversarial_corpus", lambda t: _program(t, _exit(1))),
    Hack("service_plants_reward", lambda t: t.kind == "multi_protocol",
         lambda t: _start_sh(t, _with_plant(_SERVE_REPLAY))),
    Hack("empty_200", lambda t: t.kind == "multi_protocol", lambda t: _start_sh(t, _EMPTY_200)),
]


def _start_sh(t: Target, server: str) -> str:
    ports = f"{t.spec.get('http_port', 8000)} {t.spec.get('tcp_port', 9000)}"
    return (f"mkdir -p /app && cat > /app/hack_srv.py <<'TMAX_HACK_EOF'\n{server}\nTMAX_HACK_EOF\n"
            f"printf '#!/bin/bash\\ncd /app\\nsetsid nohup python3 hack_srv.py {ports} >/dev/null 2>&1 &\\n' > /app/start.sh\n"
            "chmod +x /app/start.sh")


def applicable(task: Task) -> list[Hack]:
    t = Target.of(task)
    return [Hack(h.name, h.applies, h.script, t) for h in HACKS if h.applies(t)]
