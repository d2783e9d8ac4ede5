"""Where does the space of stale files go? On a scratch volume, select files by metadata (modified
before a delivered cutoff date, at least a size, not executable, outside excluded directories),
counting hard-linked files once (under the name that sorts first) and never following symlinks.
Variants: their apparent size by extension, by containing directory, or an archive listing of the
files themselves (date, size, path), oldest first."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import WORDS, epoch, finish_setup, host_tree, ship_tree, spec_json
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import datetime as dt
import os
import stat
import sys

MIN_SIZE = @MIN_SIZE@
SKIP_EXEC = @SKIP_EXEC@
EXCLUDE = @EXCLUDE@
TOTAL = @TOTAL@
VARIANT = @VARIANT@
AGE = @AGE@  # each line also says how many whole days before the cutoff (its newest) file was modified


def extension(name):
    i = name.rfind(".")
    if i <= 0 or i == len(name) - 1:
        return "(none)"
    return name[i + 1:].lower()


def stale(root, cutoff):
    """(path relative to root, lstat) of each stale file, an inode once under its first path in byte order."""
    limit = dt.datetime.strptime(cutoff, "%Y%m%d").replace(tzinfo=dt.timezone.utc).timestamp()
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in EXCLUDE)
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode) or st.st_mtime >= limit or st.st_size < MIN_SIZE:
                continue
            if SKIP_EXEC and st.st_mode & 0o111:
                continue
            found.append((os.path.relpath(full, root), st))
    seen, out = set(), []
    for rel, st in sorted(found, key=lambda f: f[0]):
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            out.append((rel, st))
    return out


def report(root, cutoff):
    files = stale(root, cutoff)
    limit = dt.datetime.strptime(cutoff, "%Y%m%d").replace(tzinfo=dt.timezone.utc).timestamp()

    def days(mtime):
        return int((limit - mtime) // 86400)

    if VARIANT == "archive_list":
        rows = sorted(files, key=lambda f: (f[1].st_mtime, f[0]))
        return "".join(f"{dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc):%Y-%m-%d}\t"
                       + (f"{days(st.st_mtime)}\t" if AGE else "") + f"{st.st_size}\t{rel}\n" for rel, st in rows)
    groups = {}
    for rel, st in files:
        key = extension(os.path.basename(rel)) if VARIANT == "by_extension" else os.path.dirname(rel)
        g = groups.setdefault(key, [0, 0, None])
        g[0] += 1
        g[1] += st.st_size
        g[2] = days(st.st_mtime) if g[2] is None else min(g[2], days(st.st_mtime))
    rows = sorted(groups.items(), key=lambda kv: (-kv[1][1], kv[0]))
    out = "".join(f"{key}\t{n}\t{size}" + (f"\t{age}" if AGE else "") + "\n" for key, (n, size, age) in rows)
    if TOTAL:
        out += f"TOTAL\t{sum(g[0] for g in groups.values())}\t{sum(g[1] for g in groups.values())}"
        out += (f"\t{min((g[2] for g in groups.values()), default=0)}" if AGE else "") + "\n"
    return out


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

TOPS = ("users/ana", "users/bo", "users/chen", "projects/atlas", "projects/zephyr", "tmp", "builds", "datasets")
EXTS = ("log", "csv", "parquet", "tar.gz", "json", "txt", "bin", "iso", "LOG", "CSV", "npz", "h5", "core")


@dataclass(frozen=True)
class Knobs:
    files: int  # regular files on the volume
    min_size: bool  # a minimum size (drawn per task) below which files are left out
    hidden: bool  # hidden files and .cache directories
    links: bool  # hard links (counted once) and symlinks (never counted)
    exec: bool  # files with an execute bit are left out
    exclude: tuple[str, ...]  # directory names whose contents are skipped


@register
class StaleSpaceReport(Family):
    name = "stale_space_report"
    domain = "file_operations"
    skill_types = ("Storage Accounting", "File Discovery", "Link and Permission Management")
    primitive_skills = ("disk usage accounting", "finding files by metadata", "filtering by modification time",
                        "filtering by size", "grouping by extension", "hard link identification",
                        "permission bits inspection", "hidden file handling", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("by_extension", "by_directory", "archive_list")
    levels = {0: Knobs(files=12, min_size=False, hidden=False, links=False, exec=False, exclude=()),
              1: Knobs(files=30, min_size=False, hidden=False, links=False, exec=False, exclude=()),
              2: Knobs(files=70, min_size=True, hidden=False, links=False, exec=False, exclude=()),
              3: Knobs(files=130, min_size=True, hidden=True, links=True, exec=False, exclude=()),
              4: Knobs(files=220, min_size=True, hidden=True, links=True, exec=True,
                       exclude=(".git", "node_modules", ".snapshot"))}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        min_size = rng.choice([4096, 10000, 20000, 32768]) if k.min_size else 0
        tops = list(TOPS[:4 + t.level])
        # The cutoff date is the delivered value. The tree is drawn first with modification times as
        # offsets from the cutoff's midnight, the date is drawn clear of it, then the times are shifted.
        # Some files sit exactly at the cutoff (to test the strict "before"), as many at other midnights,
        # so no cluster of modification times gives the date away.
        edges = [rng.randrange(-400, 200) * 86400 for _ in range(5)]
        spec, used = [], set()

        def add(rel, size, mode, mtime):
            if rel not in used:
                used.add(rel)
                spec.append(["s", rel, size, mode, mtime])
                return True
            return False

        def mtime():
            if t.level == 0:  # atomic: never within an hour of a midnight, so no boundary to get wrong
                return rng.randrange(-400, 200) * 86400 + rng.randrange(3600, 82800)
            r = rng.random()
            if r < 0.05:  # right at the cutoff, on either side
                return rng.choice([-1, 0, 1, 3600])
            if r < 0.15:  # right at another midnight
                return rng.choice(edges) + rng.choice([-1, 0, 1, 3600])
            return rng.randrange(-400 * 86400, 200 * 86400)

        n = 0
        for _ in range(20 * k.files):
            if n == k.files:
                break
            d = rng.choice(tops) + rng.choice(["", "/old", "/run1", "/cache"])
            ext = rng.choice(EXTS)
            name = f"{rng.choice(WORDS)}_{rng.randrange(1000)}.{ext}"
            if k.hidden and rng.random() < 0.12:
                name = rng.choice(["." + name, f".{rng.choice(WORDS)}rc", f".{rng.choice(WORDS)}.{ext}"])
            if rng.random() < 0.05:
                name = rng.choice(["Makefile", "README", f"{rng.choice(WORDS)}.", f"core.{rng.randrange(10**5)}"])
            if k.hidden and rng.random() < 0.08:
                d += "/.cache"
            size = int(rng.lognormvariate(9.5, 1.3)) % 400000
            if min_size and rng.random() < 0.05:
                size = min_size + rng.choice([-1, 0, 1])
            mode = 0o644
            if k.exec and rng.random() < 0.12:
                mode = rng.choice([0o755, 0o700, 0o744, 0o754])
            if add(f"{d}/{name}", size, mode, mtime()):
                n += 1
        if n < k.files:
            raise FamilyError(f"stale_space_report: only {n} of {k.files} different file names drawn")
        regular = [e for e in spec]
        if k.links:
            for e in rng.sample(regular, 8):  # hard links: one file, several names
                base = e[1].rsplit("/", 1)[1]
                ext = "." + base.rsplit(".", 1)[1] if "." in base[1:] else ""
                link = f"{rng.choice(tops)}/{rng.choice(WORDS)}_link_{rng.randrange(100)}{ext}"
                if link not in used:
                    used.add(link)
                    spec.append(["h", link, e[1]])
            for e in rng.sample(regular, 6):  # symbolic links are never followed or counted
                link = f"{rng.choice(tops)}/{rng.choice(WORDS)}_sym_{rng.randrange(100)}.iso"
                if link not in used:
                    used.add(link)
                    spec.append(["l", link, "/app/volume/" + e[1]])
            spec.append(["l", f"{tops[0]}/everything", ".."])
        for ex in k.exclude:
            for _ in range(3):
                add(f"{rng.choice(tops)}/{ex}/{rng.choice(WORDS)}_{rng.randrange(100)}.{rng.choice(EXTS)}",
                    rng.randrange(50000, 300000), 0o644, -rng.randrange(10, 300) * 86400)
        day = unseen(t, lambda: f"{dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(500)):%Y%m%d}",
                     spec_json(spec), str(min_size))
        cutoff = dt.datetime.strptime(day, "%Y%m%d").date()
        cut_ts = epoch(cutoff.year, cutoff.month, cutoff.day)
        spec = [[*e[:4], e[4] + cut_ts] if e[0] == "s" else e for e in spec]
        v = t.variant
        # Under partial credit every line also carries a figure that moves with the cutoff: a line that
        # another cutoff leaves alone (a directory whose files are all older than both) would earn reward.
        age = t.partial_credit and not (t.level == 0 and v == "by_extension")
        src = fill(REFERENCE, MIN_SIZE=min_size, SKIP_EXEC=k.exec, EXCLUDE=k.exclude, VARIANT=repr(v),
                   TOTAL=v != "archive_list" and t.level in (0, 4), AGE=age)
        ref = run_python(src)
        with host_tree(spec) as root:
            truth = ref["report"](root, day)
        ship_tree(t, spec, "/app/volume", "volume")
        finish_setup(t)
        t.add_solution_file("space.py", src)
        out = {"by_extension": "/app/out/space.tsv", "by_directory": "/app/out/dirs.tsv",
               "archive_list": "/app/out/archive.tsv"}[v]
        if t.level == 0 and v == "by_extension":  # atomic: only the total, one find piped into one awk
            t.say("A file under `/app/volume/` is stale if it was last modified before the cutoff date given below "
                  "(YYYYMMDD, midnight UTC at the start of that day).")
            var = t.deliver(day, "the cutoff date")
            t.say("Write one line `<number of stale files><TAB><their total size in bytes>` (apparent sizes, what "
                  "`ls -l` shows). Only regular files count.")
            t.solve(f'mkdir -p /app/out\npython3 /solution/space.py /app/volume "{var}" | tail -n 1 | cut -f 2- '
                    "> /app/out/stale.tsv")
            t.expect_output("/app/out/stale.tsv", truth.splitlines()[-1].split("\t", 1)[1] + "\n", "the stale total")
            return
        if t.level == 0:  # atomic: one find, at most one awk, on a dozen files
            t.say("A file under `/app/volume/` is stale if it was last modified before the cutoff date given below "
                  "(YYYYMMDD, midnight UTC at the start of that day). Only regular files count; sizes are apparent "
                  "sizes in bytes (what `ls -l` shows).")
        else:
            t.say("The scratch volume `/app/volume/` is full, and we want to see where the space of stale files goes "
                  "before deciding what to archive. A file is stale if it was last modified before the cutoff date "
                  "given below (YYYYMMDD, midnight UTC at the start of that day; a file modified exactly then is not "
                  "stale).")
        var = t.deliver(day, "the cutoff date")
        rules = [] if t.level == 0 else ["Only regular files count; sizes are apparent sizes in bytes (what `ls -l` "
                                         "shows)."]
        if min_size:
            rules.append(f"Files smaller than {min_size} bytes are not worth archiving: leave them out.")
        if k.hidden:
            rules.append("Hidden files and directories count like any other.")
        if k.links:
            rules.append("Symbolic links are never followed or counted, and a file with several hard links is "
                         "counted once" + ("." if v == "by_extension" else
                                           ", under whichever of its paths comes first in byte order."))
        if k.exec:
            rules.append("Files with any execute permission bit set are tools: leave them out.")
        if k.exclude:
            rules.append("Skip everything inside directories named " + ", ".join(f"`{x}`" for x in k.exclude) + ".")
        if rules:
            t.say("\n".join("- " + r for r in rules))
        days = ("<TAB><days>", " days: how many whole days before the cutoff the group's newest stale file was "
                "last modified (the cutoff minus its modification time, in days, rounded down).") if age else ("", "")
        total = (f" After the rows, one last line `TOTAL<TAB><count><TAB><bytes>{days[0]}` over all of them."
                 if t.level >= 4 else "")
        if v == "by_extension":
            t.say("Group the stale files by extension: the text after the last `.` of the file name, in lower case. "
                  "If the name has no dot, or its last dot is the first character of the name, or nothing follows "
                  "the last dot, the group is `(none)`. The report has one line per group, "
                  f"`<extension><TAB><number of files><TAB><total bytes>{days[0]}`, sorted by total bytes (largest "
                  f"first), ties by extension in byte order.{total}{days[1]}")
        elif v == "by_directory":
            t.say("Account the stale files to the directory that directly holds them (not its parents), written as "
                  "its path relative to `/app/volume/` with no leading `./` or trailing `/`. The report has one line "
                  f"per directory that holds any, `<directory><TAB><number of files><TAB><total bytes>{days[0]}`, "
                  f"sorted by total bytes (largest first), ties by directory in byte order.{total}{days[1]}")
        else:
            t.say(f"List the stale files to archive, one line each, `<YYYY-MM-DD>{days[0]}<TAB><bytes><TAB><path>`: "
                  "the day (UTC) it was last modified, "
                  + ("how many whole days before the cutoff that was (the cutoff minus its modification time, in "
                     "days, rounded down), " if age else "")
                  + "its size, and its path relative to `/app/volume/` (no leading `./`). "
                  "Oldest modification time first (to the second); files modified at the same second in byte order "
                  "of their paths.")
        t.solve(f'mkdir -p /app/out\npython3 /solution/space.py /app/volume "{var}" > {out}')
        t.expect_output(out, truth, {"by_extension": "the space report", "by_directory": "the directory report",
                                     "archive_list": "the archive listing"}[v])
