"""Hostile input: imported task dirs, Terminal-Bench 1 bundles, Hugging Face rows, files a sandbox wrote.

Each test is one attack class, run through the real importers, exporters and reward/log readers on
directories crafted in tmp_path. An attack must neither write, read nor delete anything outside the
output (or job) dir, nor hang; the bad task is refused with one line naming the file and the rule.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from tmax.interop.export import export_task
from tmax.interop.hf_dataset import read_rows, task_row, write_dataset, write_task_tree
from tmax.interop.importer import import_task
from tmax.jobs import JobSpec, solve
from tmax.sandbox import ExecResult
from tmax.task import TaskError, write_task
from tmax.trial import _save_logs, read_reward

REWARD_SH = "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"
LINK = stat.S_IFLNK | 0o777
SPECIAL = 0o7000  # setuid, setgid, sticky


# -- helpers ------------------------------------------------------------------------------------

def tmax_task(dest: Path, name: str | None = None, files: dict | None = None) -> Path:
    """A valid tmax task on the default image (exportable)."""
    return write_task(dest, name=name or dest.name, instruction="Write 42 to /app/answer.txt.",
                      files={"solution/solve.sh": "#!/bin/bash\necho 42 > /app/answer.txt\n",
                             "tests/test.sh": REWARD_SH, **(files or {})},
                      metadata={"image": "default"})


def harbor_dir(dest: Path, toml_extra: str = "") -> Path:
    """A foreign Harbor task with no Dockerfile (imports natively)."""
    (dest / "environment").mkdir(parents=True)
    (dest / "environment" / "data.txt").write_text("3\n")
    (dest / "instruction.md").write_text("Do the thing.\n")
    (dest / "task.toml").write_text(f'[task]\nname = "acme/{dest.name}"\n{toml_extra}\n'
                                    '[verifier]\ntimeout_sec = 60.0\n')
    (dest / "solution").mkdir()
    (dest / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    (dest / "tests").mkdir()
    (dest / "tests" / "test.sh").write_text(REWARD_SH)
    return dest


def tb1_with_bundle(tmp_path: Path, rel: str, mode: int = 0o644, content: bytes = b"pwned\n") -> Path:
    """A Terminal-Bench 1 task as tmax exports it, whose solution.sh bundle also carries ``rel``
    (an entry in the format tmax's bundler writes, as an attacker would craft it)."""
    src = tmax_task(tmp_path / "src" / "bundle-task")
    tb1 = export_task(src, tmp_path / "tb1", "tb1")
    b64 = base64.encodebytes(content).decode().rstrip("\n")
    entry = (f"# tmax-solution-file: {rel} {mode:o}\nmkdir -p \"$(dirname '/solution/{rel}')\"\n"
             f"base64 -d > '/solution/{rel}' <<'TMAX_END_OF_FILE'\n{b64}\nTMAX_END_OF_FILE\n"
             f"chmod {mode:o} '/solution/{rel}'\n")
    text = (tb1 / "solution.sh").read_text()
    (tb1 / "solution.sh").write_text(text.replace("cd /app\n", entry + "cd /app\n", 1))
    return tb1


def hf_rows(tmp_path: Path, rows: list[dict]) -> list[dict]:
    """Rows as they come back from a parquet file (the real reader)."""
    write_dataset(rows, tmp_path / "hf")
    return list(read_rows(tmp_path / "hf"))


def hf_row(name: str, files: list[tuple[str, bytes, int]]) -> dict:
    base = [("instruction.md", b"Do it.\n", 0o644), ("task.toml", b'[task]\nname = "' + name.encode() + b'"\n', 0o644),
            ("tests/test.sh", REWARD_SH.encode(), 0o755)]
    return {"name": name, "instruction": "Do it.",
            "files": [{"path": p, "content": c, "mode": m} for p, c, m in base + files]}


def import_rows(tmp_path: Path, rows: list[dict], out: Path) -> list[str]:
    """Import every row as `tmax import hf` does: a refused row is one error, the rest go on."""
    errors = []
    for row in hf_rows(tmp_path, rows):
        try:
            write_task_tree(row, out)
        except Exception as e:
            errors.append(str(e))
    return errors


def scrub(msg: str, tmp_path: Path) -> str:
    """The message without tmp_path (pytest names it after the test: 'symlink', 'absolute', ...)."""
    return msg.replace(str(tmp_path), "<tmp>")


def everything(root: Path) -> list[Path]:
    return sorted(root.rglob("*")) if root.exists() else []


def links_leaving(root: Path) -> list[str]:
    """Symlinks under root whose target resolves outside it."""
    real = root.resolve()
    return [f"{p} -> {os.readlink(p)}" for p in everything(root) if p.is_symlink()
            and real not in (p.parent / os.readlink(p)).resolve().parents]


def special_bits(root: Path) -> list[str]:
    return [f"{p.relative_to(root)} {stat.S_IMODE(p.lstat().st_mode):o}" for p in everything(root)
            if not p.is_symlink() and p.lstat().st_mode & SPECIAL]


def within(seconds: float, fn, unblock: Path | None = None):
    """fn() in a thread; fails (after unblocking a FIFO reader) if it takes longer than ``seconds``."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the test thread
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        if unblock is not None:  # a writer end lets a blocked open()/read() return
            fd = os.open(unblock, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        t.join(5)
        pytest.fail(f"hung for more than {seconds}s (blocked on a FIFO?)")
    if "error" in box:
        raise box["error"]
    return box["value"]


def verifier_logs(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    return logs


def exec_result(output: str = "ok\n") -> ExecResult:
    return ExecResult(exit_code=0, output=output, timed_out=False, duration=0.1, output_bytes=len(output),
                      truncated=False)


# -- 1. absolute paths --------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["tb1-bundle", "hf-row"])
def test_absolute_path_is_refused(tmp_path, via):
    victim = tmp_path / "victim" / "owned.txt"
    out = tmp_path / "out"
    if via == "tb1-bundle":
        r = import_task(tb1_with_bundle(tmp_path, str(victim)), out)
        errors = [r.error] if r.error else []
    else:
        errors = import_rows(tmp_path, [hf_row("abs-row", [(str(victim), b"pwned\n", 0o644)])], out)
    assert not victim.exists()
    assert len(errors) == 1
    assert not (out / "bundle-task").exists() and not (out / "abs-row").exists()  # skipped whole, not half-written
    msg = scrub(errors[0], tmp_path)
    assert "is absolute" in msg and "<tmp>/victim/owned.txt" in msg, msg
    assert ("solution.sh" if via == "tb1-bundle" else "row 'abs-row'") in msg, msg


# -- 2. '..' components -------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["tb1-bundle", "hf-row"])
def test_dotdot_path_is_refused(tmp_path, via):
    out = tmp_path / "out"
    escaped = [tmp_path / "escaped.txt", out / "escaped.txt"]
    if via == "tb1-bundle":  # out/bundle-task/solution/../../../escaped.txt
        r = import_task(tb1_with_bundle(tmp_path, "../../../escaped.txt"), out)
        errors = [r.error] if r.error else []
    else:  # out/dots/tests/../../escaped.txt
        errors = import_rows(tmp_path, [hf_row("dots", [("tests/../../escaped.txt", b"pwned\n", 0o644)])], out)
    assert not any(p.exists() for p in escaped)
    assert len(errors) == 1
    assert not (out / "bundle-task").exists() and not (out / "dots").exists()  # skipped whole, not half-written
    msg = scrub(errors[0], tmp_path)
    assert ("solution.sh" if via == "tb1-bundle" else "row 'dots'") in msg and "../escaped.txt" in msg, msg
    assert "'..' component" in msg, msg


# -- 3. symlink escapes -------------------------------------------------------------------------

@pytest.mark.parametrize("via", ["harbor-dir", "hf-link-out", "hf-through-link"])
def test_symlink_escape_is_refused(tmp_path, via):
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    if via == "harbor-dir":
        src = harbor_dir(tmp_path / "src" / "linky")
        (src / "environment" / "etc").symlink_to(outside)
        r = import_task(src, out)
        errors = [r.error] if r.error else []
    elif via == "hf-link-out":  # a link out of the task, then a file through it
        errors = import_rows(tmp_path, [hf_row("linky", [("data", str(outside).encode(), LINK),
                                                         ("data/planted", b"pwned\n", 0o644)])], out)
    else:  # a link inside the task is kept, but no file is written through it
        errors = import_rows(tmp_path, [hf_row("linky", [("alias", b"tests", LINK),
                                                         ("alias/extra.sh", b"echo pwned\n", 0o755)])], out)
        assert not (out / "linky" / "tests" / "extra.sh").exists()
    assert everything(outside) == []
    assert links_leaving(out) == []
    assert len(errors) == 1
    msg = scrub(errors[0], tmp_path)
    assert {"harbor-dir": "environment/etc", "hf-link-out": "'data'", "hf-through-link": "'alias'"}[via] in msg, msg
    assert "symlink" in msg, msg


# -- 4. writes through a symlink an earlier row (or file) made ----------------------------------

@pytest.mark.parametrize("via", ["same-row", "earlier-row"])
def test_write_through_symlink_made_by_an_earlier_row_is_refused(tmp_path, via):
    out = tmp_path / "out"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    if via == "same-row":  # files[k] is a link to the victim, files[k+1] writes the same path
        rows = [hf_row("one", [("notes.txt", str(victim).encode(), LINK), ("notes.txt", b"pwned\n", 0o644)])]
    else:  # row 1 plants a link into its sibling's dir; row 2 (same name) writes through it
        sibling = out / "sibling" / "secret.txt"
        sibling.parent.mkdir(parents=True)
        sibling.write_text("precious\n")
        rows = [hf_row("one", [("notes.txt", b"../sibling/secret.txt", LINK)]),
                hf_row("one", [("notes.txt", b"pwned\n", 0o644)])]
    errors = import_rows(tmp_path, rows, out)
    assert victim.read_text() == "precious\n"
    if via == "earlier-row":
        assert sibling.read_text() == "precious\n"
        notes = out / "one" / "notes.txt"  # row 2 itself is fine: it gets a fresh tree
        assert not notes.is_symlink() and notes.read_text() == "pwned\n"
    assert links_leaving(out) == []
    assert len(errors) == 1
    msg = scrub(errors[0], tmp_path)
    assert "row 'one'" in msg and "notes.txt" in msg and "symlink" in msg, msg


# -- 5. device files, FIFOs and sockets ---------------------------------------------------------

def _plant(path: Path, what: str) -> None:
    if what == "fifo":
        os.mkfifo(path)
    elif what == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    else:
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
        except PermissionError:
            pytest.skip("mknod needs CAP_MKNOD")


@pytest.mark.parametrize("via, what", [("import", "fifo"), ("import", "socket"), ("import", "chardev"),
                                       ("export", "fifo"), ("hf-row", "fifo"), ("hf-row", "chardev")])
def test_device_file_or_fifo_in_a_task_is_refused(tmp_path, via, what):
    out = tmp_path / "out"
    if via == "hf-row":
        mode = (stat.S_IFIFO if what == "fifo" else stat.S_IFCHR) | 0o644
        errors = within(10, lambda: import_rows(tmp_path, [hf_row("special", [("tests/pipe", b"", mode)])], out))
        assert not (out / "special").exists()
        assert len(errors) == 1
        msg = scrub(errors[0], tmp_path)
        assert "tests/pipe" in msg and ("FIFO" in msg or "device" in msg), msg
        return
    src = harbor_dir(tmp_path / "src" / "special") if via == "import" else tmax_task(tmp_path / "src" / "special")
    bad = src / "tests" / "pipe"
    _plant(bad, what)
    if via == "import":
        r = within(10, lambda: import_task(src, out), unblock=bad if what == "fifo" else None)
        assert r.way == "error" and "special/tests/pipe" in r.error, r.to_json()
    else:
        with pytest.raises(TaskError, match="tests/pipe"):
            within(10, lambda: export_task(src, out), unblock=bad)
    assert not (out / "special").exists()


# -- 6. setuid, setgid and sticky bits ----------------------------------------------------------

@pytest.mark.parametrize("via", ["import", "export-harbor", "export-hf", "hf-row", "tb1-bundle"])
def test_setuid_setgid_and_sticky_bits_are_stripped(tmp_path, via):
    out = tmp_path / "out"
    if via == "import":
        src = harbor_dir(tmp_path / "src" / "suid")
        for rel, mode in (("environment/tool", 0o4755), ("tests/helper", 0o2755), ("solution/stuck", 0o1755)):
            (src / rel).write_text("#!/bin/sh\n")
            (src / rel).chmod(mode)
        r = import_task(src, out)
        assert r.way == "native", r.to_json()
        written = out / "suid"
        assert stat.S_IMODE((written / "environment" / "tool").stat().st_mode) == 0o755
    elif via in ("export-harbor", "export-hf"):
        src = tmax_task(tmp_path / "src" / "suid", files={"environment/tool": "#!/bin/sh\n"})
        (src / "environment" / "tool").chmod(0o6755)
        if via == "export-harbor":
            written = export_task(src, out, "harbor")
        else:
            row = task_row(src)
            assert [f for f in row["files"] if f["mode"] & SPECIAL] == []
            written = write_task_tree(hf_rows(tmp_path, [row])[0], out)
    elif via == "hf-row":
        row = hf_row("suid", [("environment/tool", b"#!/bin/sh\n", 0o6755)])
        written = write_task_tree(hf_rows(tmp_path, [row])[0], out)
        assert stat.S_IMODE((written / "environment" / "tool").stat().st_mode) == 0o755
    else:
        r = import_task(tb1_with_bundle(tmp_path, "rootshell", 0o4755), out)
        assert r.way == "native", r.to_json()
        written = Path(r.dest)
        assert stat.S_IMODE((written / "solution" / "rootshell").stat().st_mode) == 0o755
    assert special_bits(written) == []


# -- 7. bad task names --------------------------------------------------------------------------

@pytest.mark.parametrize("via, name", [
    ("harbor-tmax-name", "../../evil"), ("harbor-task-name", "acme/../../evil"), ("harbor-dir-name", "-rf"),
    ("tb1-sidecar", "../../evil"), ("hf-row", "-rf"), ("hf-row", "a b"), ("hf-row", ".hidden"),
    ("hf-row", "x" * 200), ("hf-row", "..")])
def test_bad_task_names_are_refused(tmp_path, via, name):
    out = tmp_path / "out"
    if via == "hf-row":
        errors = import_rows(tmp_path, [hf_row(name, [])], out)
        assert everything(out) == []
        assert len(errors) == 1 and "name" in scrub(errors[0], tmp_path), errors
        return
    if via == "harbor-tmax-name":  # a task tmax exported names itself there (a foreign one's is ignored)
        src = export_task(tmax_task(tmp_path / "src" / "named"), tmp_path / "hb")
        toml = src / "task.toml"
        toml.write_text(toml.read_text().replace("[metadata]\n", f'[metadata]\ntmax_name = "{name}"\n', 1))
    elif via == "harbor-task-name":
        src = harbor_dir(tmp_path / "src" / "named")
        (src / "task.toml").write_text(f'[task]\nname = "{name}"\n')
    elif via == "harbor-dir-name":
        src = harbor_dir(tmp_path / "src" / name)
    else:
        src = export_task(tmax_task(tmp_path / "src" / "named"), tmp_path / "tb1", "tb1")
        sidecar = src / "tmax-task.toml"
        sidecar.write_text(sidecar.read_text().replace('name = "named"', f'name = "{name}"'))
    r = import_task(src, out)
    assert everything(out) == []
    assert r.way == "error" and "name" in scrub(r.error, tmp_path), r.to_json()


# -- 8. trial dirs outside the job dir ----------------------------------------------------------

def test_trial_dir_cannot_escape_the_job_dir(tmp_path):
    jobs = tmp_path / "jobs"
    victim = jobs / "victim__0"  # what '../victim' would resolve to: run_one removes it first
    victim.mkdir(parents=True)
    (victim / "keep.txt").write_text("precious\n")
    absolute = tmp_path / "abs-target"  # an absolute name replaces the job dir altogether
    corpus = [tmax_task(tmp_path / "tasks" / "rel", name="../victim"),
              tmax_task(tmp_path / "tasks" / "abs", name=str(absolute))]
    job = jobs / "job"
    summary = solve(JobSpec(corpus=corpus, policy="nop", k=1, jobs=2), job)
    assert (victim / "keep.txt").read_text() == "precious\n"
    assert not Path(f"{absolute}__0").exists()
    assert sorted(p.name for p in jobs.iterdir()) == ["job", "victim__0"]
    assert summary["n_trials"] == 0 and set(summary["load_errors"]) == {str(p) for p in corpus}
    assert all("task name" in scrub(why, tmp_path) for why in summary["load_errors"].values())


# -- 9. a symlinked reward.txt (and log) pointing at a host secret -------------------------------

def test_symlinked_reward_and_logs_are_not_followed(tmp_path):
    secret = tmp_path / "host-secret"
    secret.write_text("1\n")  # a reward of 1 that the verifier never wrote
    logs = verifier_logs(tmp_path)
    (logs / "reward.txt").symlink_to(secret)
    (logs / "leak.log").symlink_to(secret)
    (logs / "hard.log").hardlink_to(secret)
    reward, _, reason = read_reward(logs)
    assert reward is None and "reward.txt" in reason and "symlink" in reason, reason
    (logs / "reward.txt").unlink()
    (logs / "reward.json").symlink_to(secret)
    reward, _, reason = read_reward(logs)
    assert reward is None and "reward.json" in reason and "symlink" in reason, reason
    (tmp_path / "trial").mkdir()
    _save_logs(tmp_path / "trial", logs, exec_result())
    vdir = tmp_path / "trial" / "verifier"
    assert not (vdir / "leak.log").exists() and not (vdir / "hard.log").exists()
    assert not (vdir / "reward.json").exists()
    assert (vdir / "test-stdout.txt").read_text() == "ok\n"
    assert [p for p in everything(vdir) if p.is_symlink()] == []


# -- 10. a FIFO as reward.txt -------------------------------------------------------------------

def test_fifo_reward_does_not_hang(tmp_path):
    logs = verifier_logs(tmp_path)
    os.mkfifo(logs / "reward.txt")
    os.mkfifo(logs / "pipe.log")
    reward, _, reason = within(5, lambda: read_reward(logs), unblock=logs / "reward.txt")
    assert reward is None and "reward.txt" in reason and "FIFO" in reason, reason
    (tmp_path / "trial").mkdir()
    within(5, lambda: _save_logs(tmp_path / "trial", logs, exec_result()), unblock=logs / "pipe.log")
    assert not (tmp_path / "trial" / "verifier" / "pipe.log").exists()


# -- 11. oversized reward and log files, too many logs ------------------------------------------

def test_oversized_reward_and_logs_are_capped(tmp_path):
    logs = verifier_logs(tmp_path)
    (logs / "reward.txt").write_bytes(b"1" + b" " * (8 << 20))  # parses as 1.0 if read whole
    reward, _, reason = read_reward(logs)
    assert reward is None and "reward.txt" in reason and "4096" in reason, reason
    (logs / "reward.txt").unlink()
    (logs / "reward.json").write_text(json.dumps({"reward": 1.0, **{f"k{i}": 0.0 for i in range(5000)}}))
    reward, _, reason = read_reward(logs)
    assert reward is None and "reward.json" in reason and "4096" in reason, reason
    with open(logs / "huge.log", "wb") as f:
        f.truncate(64 << 20)  # sparse: cheap to make, 64 MiB to copy
    for i in range(300):
        (logs / f"many-{i:03}.log").write_text("x\n")
    (tmp_path / "trial").mkdir()
    _save_logs(tmp_path / "trial", logs, exec_result())
    copied = [p for p in (tmp_path / "trial" / "verifier").iterdir() if p.name.endswith(".log")]
    assert (tmp_path / "trial" / "verifier" / "huge.log").stat().st_size <= 1 << 20
    assert len(copied) <= 64


def test_deeply_nested_reward_json_is_a_clear_failure(tmp_path):
    logs = verifier_logs(tmp_path)
    (logs / "reward.json").write_text("[" * 4000)  # under the size cap, past the JSON parser's recursion limit
    reward, _, reason = read_reward(logs)
    assert reward is None and "reward.json" in reason, reason
