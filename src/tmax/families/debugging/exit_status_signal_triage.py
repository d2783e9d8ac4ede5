"""Work out how a batch's jobs really ended from the job supervisor's log. The supervisor records each
job's raw `waitpid` status as a decimal number (exit code in bits 8-15; otherwise the terminating
signal in bits 0-6 and the core-dump flag 0x80; 0x7f in the low byte is a stop, not an end); the
batch to look at is named by a delivered batch id, other batches' logs lie beside it. Variants: decode
each job's final status (exit code or signal, with a core dump), count the jobs each signal killed, or
classify each failed job as a non-zero exit, a crash, a kill, or an out-of-memory kill (a SIGKILL whose
pid the kernel's OOM killer names). Traps by level: the `shell_rc` convention of a wrapper script
(128 + signal, no core flag), stopped-and-continued jobs, retried jobs (only the last attempt counts),
kernel log lines for processes that are not jobs, start and heartbeat records and hex statuses from
a newer supervisor."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import os
import re
import sys

VARIANT = @VARIANT@
SIGNALS = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
           8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM",
           15: "SIGTERM"}
CRASH = {"SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGSEGV"}
REC = re.compile(r"\bjob=(\S+) pid=(\d+) (wait_status|shell_rc)=(0x[0-9a-f]+|\d+)\s*$")
OOM = re.compile(r"Out of memory: Killed process (\d+) ")


def decode(field, value):
    """(kind, detail, core) of one record; None for a stop (the job goes on)."""
    n = int(value, 0)
    if field == "shell_rc":
        return ("signal", SIGNALS[n - 128], False) if n > 128 else ("exit", n, False)
    if n & 0x7f == 0:
        return "exit", (n >> 8) & 0xff, False
    if n & 0xff == 0x7f:
        return None
    return "signal", SIGNALS[n & 0x7f], bool(n & 0x80)


def report(batch_dir):
    final = {}
    with open(os.path.join(batch_dir, "supervisor.log"), encoding="utf-8") as f:
        for line in f:
            m = REC.search(line)
            if m:
                got = decode(m.group(3), m.group(4))
                if got:
                    final[m.group(1)] = (int(m.group(2)), *got)  # a later attempt replaces an earlier one
    oom = set()
    kern = os.path.join(batch_dir, "kern.log")
    if os.path.exists(kern):
        with open(kern, encoding="utf-8") as f:
            oom = {int(m.group(1)) for m in map(OOM.search, f) if m}
    rows = []
    if VARIANT == "signals":
        counts = {}
        for job in sorted(final):
            pid, kind, detail, core = final[job]
            if kind == "signal":
                counts[detail] = counts.get(detail, 0) + 1
        return "".join(f"{n}\t{s}\n" for s, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    for job in sorted(final):
        pid, kind, detail, core = final[job]
        if VARIANT == "decode":
            rows.append(f"{job}\t{kind} {detail}" + (" core" if core else "") + "\n")
        elif kind == "exit" and detail:
            rows.append(f"{job}\texit\n")
        elif kind == "signal":
            cause = "crash" if detail in CRASH else "oom" if detail == "SIGKILL" and pid in oom else "killed"
            rows.append(f"{job}\t{cause}\n")
    return "".join(rows)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

WORDS = ("etl", "backup", "reindex", "export", "thumbnail", "billing", "digest", "sync", "compact", "report",
         "vacuum", "mailer", "scrape", "rollup", "archive", "dedupe")
COMMS = ("python3", "java", "node", "ffmpeg", "pg_dump", "rsync")
ENDINGS = (("exit", 0), ("exit", 0), ("exit", 0), ("exit", 1), ("exit", 2), ("exit", 3), ("sig", 11), ("sig", 6),
           ("sig", 9), ("sig", 9), ("sig", 15), ("sig", 7), ("sig", 8), ("sig", 13), ("sig", 2), ("sig", 1))


@dataclass(frozen=True)
class Knobs:
    jobs: int  # jobs in the batch
    shell: bool  # some jobs run through a wrapper that reports shell_rc
    retries: bool  # retried jobs and stopped-and-continued jobs
    kern: bool  # the kernel log with OOM kills (of jobs and of other processes)
    noisy: bool  # start and heartbeat records, hex statuses
    decoys: int  # other batches


@register
class ExitStatusSignalTriage(Family):
    name = "exit_status_signal_triage"
    domain = "debugging"
    skill_types = ("Crash Analysis", "Failure Reproduction")
    primitive_skills = ("classifying failure signatures", "interpreting service error logs",
                        "correlating interleaved log lines")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("decode", "signals", "failed")
    levels = {0: Knobs(jobs=6, shell=False, retries=False, kern=False, noisy=False, decoys=1),
              1: Knobs(jobs=14, shell=False, retries=False, kern=False, noisy=False, decoys=2),
              2: Knobs(jobs=22, shell=True, retries=False, kern=True, noisy=False, decoys=3),
              3: Knobs(jobs=32, shell=True, retries=True, kern=True, noisy=False, decoys=3),
              4: Knobs(jobs=45, shell=True, retries=True, kern=True, noisy=True, decoys=3)}

    def _batch(self, t):
        """One batch's files: supervisor.log (and kern.log)."""
        k, rng = t.knobs, t.rng
        names = sorted({f"{rng.choice(WORDS)}-{rng.randrange(10, 99)}" for _ in range(k.jobs)})
        clock = 1_700_000_000 + rng.randrange(10 ** 7)
        sup, kern, pids = [], [], set()

        def pid():
            p = rng.randrange(2000, 4_000_000)
            while p in pids:
                p = rng.randrange(2000, 4_000_000)
            pids.add(p)
            return p

        def stamp():
            nonlocal clock
            clock += rng.randrange(1, 400)
            return f"{clock}"

        def end(job, p, how, num):
            """One termination record, and its OOM line when the kernel killed it for memory."""
            shell = k.shell and rng.random() < 0.3
            if how == "exit":
                field, val = ("shell_rc", num) if shell else ("wait_status", num << 8)
            elif shell:
                field, val = "shell_rc", 128 + num
            else:
                field, val = "wait_status", num | (0x80 if num in (6, 7, 8, 11) and rng.random() < 0.5 else 0)
            text = f"{val:#x}" if k.noisy and field == "wait_status" and rng.random() < 0.3 else str(val)
            sup.append(f"ts={stamp()} job={job} pid={p} {field}={text}")
            if k.kern and how == "sig" and num == 9 and rng.random() < 0.6:
                kern.append(self._oom(t, p, clock))

        for job in names:
            if k.noisy:
                sup.append(f"ts={stamp()} job={job} event=start")
            if k.retries and rng.random() < 0.3:  # an earlier attempt that failed
                end(job, pid(), *rng.choice(ENDINGS[3:]))
            p = pid()
            if k.retries and rng.random() < 0.15:  # SIGSTOP or SIGTSTP, then SIGCONT: not an end
                sup.append(f"ts={stamp()} job={job} pid={p} wait_status={(rng.choice([19, 20]) << 8) | 0x7f}")
            if k.noisy and rng.random() < 0.3:
                sup.append(f"ts={stamp()} job={job} pid={p} event=heartbeat rss_kb={rng.randrange(10 ** 4, 10 ** 7)}")
            end(job, p, *rng.choice(ENDINGS))
        if k.kern:
            for _ in range(2):  # the OOM killer also takes processes that are not jobs
                kern.append(self._oom(t, pid(), clock - rng.randrange(10 ** 5)))
        rng.shuffle(kern)
        files = {"supervisor.log": "\n".join(sup) + "\n"}
        if k.kern:
            files["kern.log"] = "\n".join(sorted(kern)) + "\n"
        return files

    def _oom(self, t, p, clock):
        rng = t.rng
        up = clock % 10 ** 6 + rng.random()
        return (f"[{up:14.6f}] Out of memory: Killed process {p} ({rng.choice(COMMS)}) total-vm:"
                f"{rng.randrange(10 ** 6, 10 ** 8)}kB, anon-rss:{rng.randrange(10 ** 5, 10 ** 7)}kB, file-rss:0kB, "
                f"shmem-rss:0kB, UID:1000 pgtables:{rng.randrange(1000, 90000)}kB oom_score_adj:0")

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        src = fill(REFERENCE, VARIANT=repr(v))
        ref = run_python(src)
        batches = [self._batch(t) for _ in range(1 + k.decoys)]
        # The batch id is the delivered value; each batch's logs lie under a hash of it.
        batch = unseen(t, lambda: t.code(2), *(x for b in batches for _, x in sorted(b.items())))
        ids = [batch, *distinct(lambda: t.code(2), k.decoys, [batch])]
        for bid, files in sorted(zip(ids, batches), key=lambda bf: key_of(bf[0])):
            for name, text in sorted(files.items()):
                t.add_file(f"/app/batches/{key_of(bid)}/{name}", text)
        with host_files(batches[0]) as (d, _):
            truth = ref["report"](d)
        t.say("Last night's batch had failures and nobody knows which jobs really died. Each batch's logs are in "
              "`/app/batches/<KEY>/`, where KEY is the first 16 hex digits of the SHA-256 of the batch id (`printf %s "
              "<batch id> | sha256sum`). Look only at the batch given below.")
        who = t.deliver(batch, "the batch id")
        rules = ["`supervisor.log` has a record `job=<job> pid=<pid> wait_status=<status>` each time a job's process "
                 "changed state; the status is the raw `waitpid` status" + (" (decimal, or hex with `0x`)" if k.noisy
                                                                            else " in decimal") + ". If its low 7 "
                 "bits are 0, the process exited with code `(status >> 8) & 0xff`; otherwise it was killed by signal "
                 "`status & 0x7f`, and bit 0x80 says it dumped core. Signal names are Linux x86-64's (`kill -l`)."]
        if k.retries:
            rules.append("A low byte of 0x7f means the process was stopped (it was continued later): not an end. A "
                         "job that was retried has several ends; only its last one counts.")
        if k.shell:
            rules.append("Jobs run through the wrapper script report `shell_rc=<n>` instead: the shell's `$?`, which "
                         "is the exit code, or 128 + the signal number when n is above 128 (no core flag).")
        if k.noisy:
            rules.append("Records without a status (`event=...`) say nothing about how a job ended.")
        t.say(" ".join(rules))
        if v == "decode":
            t.say("For every job, in byte order of the job names, write one line `<job><TAB>exit <code>` or "
                  "`<job><TAB>signal <SIGNAME>` (e.g. `signal SIGSEGV`), with ` core` appended when it dumped core.")
            out = "/app/out/decoded.tsv"
        elif v == "signals":
            t.say("Which signals ended the jobs? Write one line per signal, `<jobs it ended><TAB><SIGNAME>`, most "
                  "first, ties by name in byte order.")
            out = "/app/out/signals.tsv"
        else:
            causes = "`crash` (killed by SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE or SIGSEGV), " + (
                "`oom` (killed by SIGKILL, and `kern.log` has the kernel's `Out of memory: Killed process <pid>` for "
                "that very process), `killed` (any other signal)" if k.kern else "`killed` (any other signal)")
            t.say("Which jobs failed, and how? For every job that did not exit with code 0, in byte order of the job "
                  f"names, write one line `<job><TAB><cause>`: `exit` (a non-zero exit code), {causes}.")
            out = "/app/out/failed.tsv"
        t.add_solution_file("waitstatus.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                f'python3 /solution/waitstatus.py "/app/batches/$key" > {out}')
        t.expect_output(out, truth, {"decode": "the decoded statuses", "signals": "the signal counts",
                                     "failed": "the failed jobs"}[v])
