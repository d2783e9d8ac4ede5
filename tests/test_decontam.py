"""``tmax decontam``: paraphrases of benchmark tasks, verbatim instructions wrapped in generated
boilerplate and benchmark test files copied into a task are flagged; generated tasks are not; an empty
benchmark is refused; the report and the list of tasks to drop are written, the exit code says whether
anything was flagged.

The benchmark here is eight Terminal-Bench-like tasks written for these tests (instruction and a
pytest file each) with one hand-written paraphrase of each: same paths, ports and names, other words.
They are the calibration controls of ``tmax.analysis.decontam.THRESHOLD``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tmax.analysis.decontam import THRESHOLD, DecontamError, benchmark_items, decontam_main, decontaminate
from tmax.generate import generate_corpus

BENCHMARK = {
    "git-lost-commits": (
        "I ran `git reset --hard HEAD~2` in /app/repo by mistake and the last two commits on the branch "
        "feature/payments are gone. Recover them so that feature/payments points at the newest of the lost "
        "commits again. Do not rewrite or move any other branch, and keep the working tree clean.",
        '''import subprocess

def git(*args):
    return subprocess.run(["git", "-C", "/app/repo", *args], capture_output=True, text=True, check=True).stdout

def test_branch_points_at_lost_commit():
    head = git("rev-parse", "feature/payments").strip()
    message = git("log", "-1", "--format=%s", head).strip()
    assert message == "Add refund reconciliation"

def test_other_branches_untouched():
    assert git("rev-parse", "main").strip() == open("/tests/main.sha").read().strip()

def test_working_tree_clean():
    assert git("status", "--porcelain") == ""
'''),
    "nginx-https": (
        "Configure nginx in this container to serve the static site in /var/www/site over HTTPS on port 8443, "
        "using a self-signed certificate with common name dev.local stored at /etc/nginx/certs/dev.crt with "
        "its key at /etc/nginx/certs/dev.key. Plain HTTP requests to port 8080 must get a 301 redirect to the "
        "HTTPS address. Leave nginx running when you finish.",
        '''import ssl
import subprocess
import urllib.request

def test_https_serves_site():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    body = urllib.request.urlopen("https://127.0.0.1:8443/", context=ctx).read().decode()
    assert "Welcome to the dev site" in body

def test_certificate_common_name():
    out = subprocess.run(["openssl", "x509", "-in", "/etc/nginx/certs/dev.crt", "-noout", "-subject"],
                         capture_output=True, text=True).stdout
    assert "CN = dev.local" in out or "CN=dev.local" in out

def test_http_redirects():
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}",
                          "http://127.0.0.1:8080/"], capture_output=True, text=True).stdout
    code, location = out.split(" ", 1)
    assert code == "301" and location.startswith("https://")
'''),
    "sqlite-recover": (
        "The SQLite database /data/inventory.db was copied while the application was still writing to it and "
        "now fails with 'database disk image is malformed'. Salvage as many rows of the items table as you can "
        "into a new database /data/recovered.db that has the same schema, and write the number of rows you "
        "recovered to /data/count.txt.",
        '''import sqlite3

def test_recovered_schema_matches():
    con = sqlite3.connect("/data/recovered.db")
    cols = [r[1] for r in con.execute("PRAGMA table_info(items)")]
    assert cols == ["id", "sku", "name", "quantity", "updated_at"]

def test_enough_rows_recovered():
    con = sqlite3.connect("/data/recovered.db")
    n = con.execute("SELECT COUNT(*) FROM items").fetchone()[0]
    assert n >= 9400

def test_count_file_matches_table():
    con = sqlite3.connect("/data/recovered.db")
    n = con.execute("SELECT COUNT(*) FROM items").fetchone()[0]
    assert int(open("/data/count.txt").read().strip()) == n
'''),
    "c-extension-build": (
        "Make the Python C extension in /app/fastmath build and install so that `import fastmath` works with "
        "the system python3. The build fails right now because setup.py passes a wrong compiler flag and a "
        "header is missing from the include path. Fix the build configuration only; do not edit the C source "
        "files under /app/fastmath/src.",
        '''import hashlib
import subprocess

def test_import_works():
    out = subprocess.run(["python3", "-c", "import fastmath; print(fastmath.dot([1, 2], [3, 4]))"],
                         capture_output=True, text=True, cwd="/")
    assert out.stdout.strip() == "11.0"

def test_c_sources_unchanged():
    digest = hashlib.sha256(open("/app/fastmath/src/fastmath.c", "rb").read()).hexdigest()
    assert digest == open("/tests/fastmath.sha256").read().strip()
'''),
    "date-regex": (
        "Write a regular expression that captures dates in YYYY-MM-DD format, but only on lines that also "
        "contain an IPv4 address, and save it to /app/regex.txt. It will be applied with Python's re.findall "
        "to each line of a log file. When a matching line holds several dates, only the last one must be "
        "captured. Dates must be valid calendar dates between 1900 and 2099.",
        '''import re

CASES = [
    ("2023-04-01 login from 10.0.0.1", ["2023-04-01"]),
    ("2023-04-01 then 2023-05-02 from 192.168.1.20", ["2023-05-02"]),
    ("2023-02-30 from 10.0.0.1", []),
    ("2023-04-01 no address here", []),
    ("1899-12-31 from 8.8.8.8", []),
]

def test_regex_cases():
    pattern = open("/app/regex.txt").read().strip()
    for line, expected in CASES:
        assert re.findall(pattern, line) == expected, line
'''),
    "cron-backup": (
        "Create a cron job for the user backup that archives /srv/data into /backups/data-YYYYMMDD.tar.gz every "
        "day at 02:30, keeps only the seven newest archives and appends a line for each run to "
        "/var/log/backup.log. Put the logic in /usr/local/bin/run-backup.sh and make sure the job is still "
        "installed after the cron daemon restarts.",
        '''import subprocess

def test_crontab_entry():
    out = subprocess.run(["crontab", "-l", "-u", "backup"], capture_output=True, text=True).stdout
    assert any(line.split()[:2] == ["30", "2"] and "run-backup.sh" in line for line in out.splitlines())

def test_rotation_keeps_seven():
    for day in range(10):
        subprocess.run(["faketime", f"2024-01-{day + 1:02d} 02:30:00", "/usr/local/bin/run-backup.sh"], check=True)
    archives = sorted(p for p in __import__("os").listdir("/backups") if p.startswith("data-"))
    assert archives == [f"data-202401{d:02d}.tar.gz" for d in range(4, 11)]
'''),
    "safetensors-convert": (
        "Convert the PyTorch checkpoint /app/model.pt into a safetensors file at /app/model.safetensors, keeping "
        "every tensor's name, shape and dtype. Then write /app/verify.py, which loads both files and prints OK "
        "when every tensor is bit-identical and MISMATCH followed by the tensor name otherwise.",
        '''import subprocess

import torch
from safetensors.torch import load_file

def test_tensors_identical():
    a = torch.load("/app/model.pt", map_location="cpu")
    b = load_file("/app/model.safetensors")
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].dtype == b[name].dtype and torch.equal(a[name], b[name]), name

def test_verify_script():
    out = subprocess.run(["python3", "/app/verify.py"], capture_output=True, text=True).stdout
    assert out.strip() == "OK"
'''),
    "kv-server": (
        "Implement a key-value store server at /app/server.py that listens on TCP port 7000 and speaks a line "
        "protocol: SET <key> <value>, GET <key> and DEL <key>. Reply OK to SET and DEL, the value to GET, and "
        "NOT_FOUND for a missing key. Values must persist in /app/store.json across server restarts.",
        '''import socket
import subprocess
import time

def ask(line):
    with socket.create_connection(("127.0.0.1", 7000), timeout=5) as s:
        s.sendall((line + "\\n").encode())
        return s.makefile().readline().strip()

def test_set_get_del():
    assert ask("SET colour blue") == "OK"
    assert ask("GET colour") == "blue"
    assert ask("DEL colour") == "OK"
    assert ask("GET colour") == "NOT_FOUND"

def test_persists_across_restart():
    ask("SET city Lisbon")
    subprocess.run(["pkill", "-f", "/app/server.py"])
    subprocess.Popen(["python3", "/app/server.py"])
    time.sleep(1)
    assert ask("GET city") == "Lisbon"
'''),
}

PARAPHRASES = {
    "git-lost-commits": (
        "Someone typed a hard reset in the repository under /app/repo and the feature/payments branch lost its "
        "two most recent commits. Bring that work back: the feature/payments branch has to end up on the newest "
        "commit that was thrown away. Every other branch must stay exactly where it is and nothing may be left "
        "uncommitted in the working tree."),
    "nginx-https": (
        "Get nginx serving /var/www/site via TLS on port 8443. Generate a self-signed cert for dev.local and put "
        "the certificate in /etc/nginx/certs/dev.crt and the private key in /etc/nginx/certs/dev.key. Anything "
        "arriving as plain HTTP on port 8080 should be permanently redirected (301) to the HTTPS site. nginx "
        "should still be running afterwards."),
    "sqlite-recover": (
        "Our inventory database at /data/inventory.db got corrupted (SQLite says the disk image is malformed) "
        "because it was copied in the middle of a write. Rescue whatever rows of its items table you can and put "
        "them in /data/recovered.db using an identical schema. Also record how many rows made it in "
        "/data/count.txt."),
    "c-extension-build": (
        "The fastmath C extension under /app/fastmath does not compile: its setup.py has an incorrect compiler "
        "flag and one header cannot be found on the include path. Repair the build setup (leave the C files in "
        "/app/fastmath/src alone) and install the module so that the system python3 can `import fastmath`."),
    "date-regex": (
        "Save to /app/regex.txt a regex for Python's re.findall, run on every line of a log, that picks out "
        "YYYY-MM-DD dates from lines which also mention an IPv4 address. If a line has more than one date, "
        "capture just the final one. Only real calendar dates from 1900 through 2099 count."),
    "cron-backup": (
        "Schedule a daily 02:30 cron task for the backup user: it should tar and gzip /srv/data to "
        "/backups/data-YYYYMMDD.tar.gz, delete all but the seven most recent archives, and log every run to "
        "/var/log/backup.log. The script goes in /usr/local/bin/run-backup.sh, and the crontab entry has to "
        "survive a restart of cron."),
    "safetensors-convert": (
        "Turn /app/model.pt (a PyTorch checkpoint) into /app/model.safetensors without changing any tensor's "
        "name, shape or dtype. Add a checker /app/verify.py that opens both and prints OK if all tensors match "
        "bit for bit, otherwise MISMATCH and the offending tensor's name."),
    "kv-server": (
        "Write /app/server.py: a TCP server on port 7000 implementing a tiny key-value store with line commands "
        "SET <key> <value>, GET <key>, DEL <key>. SET and DEL answer OK, GET answers with the stored value or "
        "NOT_FOUND when the key is absent. Data has to be saved to /app/store.json so it survives restarts."),
}


# Scaffolding every benchmark item shares: no one task's content.
DOCKERFILE = """FROM ubuntu:24.04
RUN apt-get update && apt-get install -y python3 python3-pip curl git
RUN pip install --break-system-packages pytest==8.4.1
WORKDIR /app
"""
TEST_SH = """#!/bin/bash
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env
uvx -p 3.13 -w pytest==8.4.1 pytest /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def _task(d: Path, instruction: str, files: dict[str, str] | None = None) -> Path:
    d.mkdir(parents=True)
    (d / "instruction.md").write_text(instruction)
    for rel, text in (files or {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    return d


def _wrapped(generated: Path, text: str) -> str:
    """``text`` inside a generated task's own opening and closing paragraphs (its persona's voice)."""
    paragraphs = (generated / "instruction.md").read_text().split("\n\n")
    return "\n\n".join([paragraphs[0], text, paragraphs[-1]])


def _appended(generated: Path, text: str) -> str:
    """``text`` after a whole generated instruction: the benchmark text is a small part of the task."""
    return (generated / "instruction.md").read_text() + "\n\n" + text


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bench")
    for name, (instruction, test) in BENCHMARK.items():
        _task(root / name, instruction, {"tests/test_outputs.py": test, "environment/Dockerfile": DOCKERFILE,
                                         "tests/test.sh": TEST_SH})
    return root


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("generated")
    generate_corpus(58, 21, "rl_v2", out, jobs=2)
    dirs = sorted(p for p in out.iterdir() if p.is_dir())
    assert len(dirs) >= 50
    return dirs


def _flagged(report: dict) -> dict[str, dict]:
    return {f["task"]: f for f in report["flagged"]}


def test_generated_tasks_are_not_flagged(bench, generated):
    report = decontaminate(generated, bench)
    assert report["tasks"] == len(generated) >= 50
    assert report["benchmark_items"] == len(BENCHMARK)
    assert report["flagged"] == [] and report["drop"] == []


def test_paraphrases_are_flagged_plain_wrapped_and_appended(bench, generated, tmp_path):
    dirs = []
    for i, (name, text) in enumerate(PARAPHRASES.items()):
        host = generated[3 * i]
        dirs += [_task(tmp_path / f"plain-{name}", text), _task(tmp_path / f"wrapped-{name}", _wrapped(host, text)),
                 _task(tmp_path / f"appended-{name}", _appended(host, text))]
    report = decontaminate(dirs + generated, bench)
    flagged = _flagged(report)
    assert sorted(flagged) == sorted(d.name for d in dirs)  # every control, and no generated task
    for d in dirs:
        f = flagged[d.name]
        assert f["reasons"] == ["paraphrase"], d.name  # no 13-gram or copied text: only the paraphrase test sees it
        assert f["fuzzy_match"] == d.name.split("-", 1)[1]
        assert f["fuzzy_similarity"] >= THRESHOLD


def test_a_verbatim_instruction_in_generated_boilerplate_is_flagged(bench, generated, tmp_path):
    name, (instruction, _) = next(iter(BENCHMARK.items()))
    d = _task(tmp_path / "wrapped-verbatim", _wrapped(generated[0], instruction))
    f = _flagged(decontaminate([d, *generated[1:]], bench))["wrapped-verbatim"]
    assert f["ngram_matches"] == [name]
    assert f["fuzzy_match"] == name and f["fuzzy_similarity"] > 0.9  # coverage is not diluted by the wrapping
    assert "13-gram" in f["reasons"] and "paraphrase" in f["reasons"]


def test_a_copied_benchmark_test_file_is_flagged_in_tests_or_environment(bench, generated, tmp_path):
    test_file = BENCHMARK["sqlite-recover"][1]
    in_tests, in_env = tmp_path / "in-tests", tmp_path / "in-env"
    shutil.copytree(generated[1], in_tests)
    shutil.copytree(generated[2], in_env)
    (in_tests / "tests" / "test_outputs.py").write_text(test_file)
    reindented = "\n".join("    " + line for line in test_file.splitlines())  # moved into a class: same lines
    (in_env / "environment" / "files" / "app").mkdir(parents=True, exist_ok=True)
    (in_env / "environment" / "files" / "app" / "checks.py").write_text("class Checks:\n" + reindented)
    flagged = _flagged(decontaminate([in_tests, in_env, *generated[3:]], bench))
    assert sorted(flagged) == ["in-env", "in-tests"]
    for f in flagged.values():
        assert f["reasons"] == ["contained"]
        assert f["contained"][0]["benchmark"] == "sqlite-recover"
        assert f["contained"][0]["file"] == "tests/test_outputs.py"
        assert f["contained"][0]["containment"] == 1.0


def test_scaffolding_every_benchmark_item_shares_is_not_evidence(bench, generated, tmp_path):
    task = tmp_path / "with-scaffolding"
    shutil.copytree(generated[4], task)
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (task / "tests" / "run.sh").write_text(TEST_SH)
    assert decontaminate([task, *generated[5:]], bench)["flagged"] == []
    # the same lines in a one-item benchmark are that item's own: a copy of them is caught
    solo = tmp_path / "solo"
    shutil.copytree(bench / "kv-server", solo / "kv-server")
    [flagged] = decontaminate([task], solo)["flagged"]
    assert sorted(c["file"] for c in flagged["contained"]) == ["environment/Dockerfile", "tests/test.sh"]


@pytest.mark.parametrize("content", ["nothing", "only-unrelated-files"])
def test_an_empty_benchmark_is_refused(tmp_path, generated, capsys, content):
    against = tmp_path / "tb2"
    against.mkdir()
    if content == "only-unrelated-files":
        (against / "logo.png").write_bytes(b"\x89PNG\r\n")
        (against / "Makefile").write_text("all:\n")
    with pytest.raises(DecontamError, match=r"tb2: no benchmark items found; expected task directories"):
        benchmark_items(against)
    assert decontam_main([str(p) for p in generated[:3]], against, tmp_path / "out" / "report.json") == 2
    assert "tb2: no benchmark items found" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_missing_benchmark_dir_is_refused(tmp_path):
    with pytest.raises(DecontamError, match=r"nowhere: not a directory"):
        benchmark_items(tmp_path / "nowhere")


def test_report_and_drop_list_are_written_and_the_exit_code_says_flagged(bench, generated, tmp_path, capsys):
    corpus = tmp_path / "corpus"
    for d in generated[:10]:
        shutil.copytree(d, corpus / d.name)
    _task(corpus / "zz-paraphrase", PARAPHRASES["kv-server"])
    _task(corpus / "zz-copied", "Tidy up the scripts in /app.", {"tests/test_outputs.py": BENCHMARK["kv-server"][1]})
    out = tmp_path / "reports" / "decontam.json"
    assert decontam_main([corpus], bench, out) == 1
    printed = capsys.readouterr().out
    assert "flagged zz-paraphrase: paraphrase of kv-server" in printed
    assert "flagged zz-copied: contains kv-server/tests/test_outputs.py (1.0)" in printed
    assert "2/12 tasks flagged (16.67%)" in printed
    report = json.loads(out.read_text())
    assert report["drop"] == ["zz-copied", "zz-paraphrase"]
    assert (out.parent / "drop.txt").read_text() == "zz-copied\nzz-paraphrase\n"
    clean = tmp_path / "clean.json"
    assert decontam_main([str(d) for d in generated[:10]], bench, clean) == 0
    assert (tmp_path / "drop.txt").read_text() == ""
    assert json.loads(clean.read_text())["flagged"] == []


def test_terminal_bench_1_and_jsonl_benchmarks_are_read(tmp_path):
    tb1 = tmp_path / "tb1" / "kv"
    tb1.mkdir(parents=True)
    (tb1 / "task.yaml").write_text("instruction: |\n  " + BENCHMARK["kv-server"][0] + "\ndifficulty: medium\n")
    (tb1 / "run-tests.sh").write_text("pytest /tests\n")
    items = benchmark_items(tmp_path / "tb1")
    assert [(i.name, i.instruction.strip(), sorted(i.files)) for i in items] == \
        [("kv", BENCHMARK["kv-server"][0], ["run-tests.sh"])]
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "items.jsonl").write_text("".join(json.dumps({"id": n, "instruction": b[0]}) + "\n"
                                              for n, b in BENCHMARK.items()))
    assert [i.instruction for i in benchmark_items(flat)] == [b[0] for b in BENCHMARK.values()]
