"""Which backups does the retention policy prune? Backups are named `<set>-YYYYMMDD-HHMM.<ext>`;
a grandfather-father-son policy (newest per day / ISO week / month over trailing windows, counted
from a given "today") decides what stays, and the prune list is written as object URIs in the
mirror bucket of a delivered storage account. Higher levels add sets in per-host directories, junk
that must be left alone, lying modification times, impossible dates, future-dated files and a
bytes-freed total. Variants: that prune manifest; the keep manifest (the backups that survive, and the
bytes they hold); or a per-set summary of how many backups stay and go and the bytes the prune frees."""

from __future__ import annotations

import datetime as dt

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.file_operations._common import epoch, finish_setup, host_tree, ship_tree, spec_json
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import datetime as dt
import os
import re
import stat
import sys

KEEP_DAYS = @KEEP_DAYS@  # keep every backup from the last KEEP_DAYS days (0: rule off)
DAILY = @DAILY@  # newest backup of each of the last DAILY days
WEEKLY = @WEEKLY@  # newest backup of each of the last WEEKLY ISO weeks
MONTHLY = @MONTHLY@  # newest backup of each of the last MONTHLY months
NAME = re.compile(r"^([a-z][a-z0-9-]*)-([0-9]{8})-([0-9]{4})\.(tar\.gz|sql\.xz)$")


def parse(base):
    m = NAME.match(base)
    if not m:
        return None
    d, t = m.group(2), m.group(3)
    try:
        when = dt.datetime(int(d[:4]), int(d[4:6]), int(d[6:]), int(t[:2]), int(t[2:]))
    except ValueError:
        return None
    return m.group(1), when


def plan(paths, today):
    """paths: backup candidates relative to the backup root; returns the ones to prune, sorted."""
    sets = {}
    for rel in paths:
        folder, _, base = rel.rpartition("/")
        got = parse(base)
        if got is None or got[1].date() > today:
            continue
        sets.setdefault((folder, got[0]), []).append((got[1], rel))
    monday = today - dt.timedelta(days=today.weekday())
    rules = [
        (DAILY, lambda d: d, {today - dt.timedelta(days=i) for i in range(DAILY)}),
        (WEEKLY, lambda d: d - dt.timedelta(days=d.weekday()),
         {monday - dt.timedelta(weeks=i) for i in range(WEEKLY)}),
        (MONTHLY, lambda d: (d.year, d.month),
         {((today.year * 12 + today.month - 1 - i) // 12, (today.year * 12 + today.month - 1 - i) % 12 + 1)
          for i in range(MONTHLY)}),
    ]
    prune = []
    for key in sorted(sets):
        items = sorted(sets[key])
        keep = set()
        if KEEP_DAYS:
            keep |= {rel for when, rel in items if (today - when.date()).days < KEEP_DAYS}
        for count, period, window in rules:
            if not count:
                continue
            newest = {}
            for when, rel in items:  # ascending, so the last one written wins
                p = period(when.date())
                if p in window:
                    newest[p] = rel
            keep |= set(newest.values())
        prune += [rel for _, rel in items if rel not in keep]
    return sorted(prune)


def scan(root):
    """Regular files under root (symlinks are not followed), relative paths -> sizes."""
    sizes = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode):
                sizes[os.path.relpath(full, root)] = st.st_size
    return sizes


def report(root, today, account, with_total):
    """The prune manifest: the mirror's object URI of each pruned backup (and the bytes they free)."""
    bucket = f"s3://backups-{account}/"
    sizes = scan(root)
    prune = plan(sorted(sizes), today)
    out = "".join(bucket + p + "\n" for p in prune)
    if with_total:
        out += f"total {bucket} {sum(sizes[p] for p in prune)}\n"
    return out


def main_stdin(text):
    lines = text.splitlines()
    today = dt.datetime.strptime(lines[0].strip(), "%Y%m%d").date()
    return "".join(p + "\n" for p in plan([ln for ln in lines[1:] if ln], today))


@VARIANT_CODE@if __name__ == "__main__":
    if len(sys.argv) > 2:
        today = dt.datetime.strptime(sys.argv[2], "%Y%m%d").date()
        sys.stdout.write(report(sys.argv[1], today, sys.argv[3], len(sys.argv) > 4))
    else:
        sys.stdout.write(main_stdin(sys.stdin.read()))
'''

REFERENCE_CPP = r"""
// Backup retention planner: reads today's date and file names, prints the names the policy prunes.
#include <algorithm>
#include <iostream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

static const int KEEP_DAYS = @KEEP_DAYS@;
static const int DAILY = @DAILY@;
static const int WEEKLY = @WEEKLY@;
static const int MONTHLY = @MONTHLY@;

static long days_from_civil(long y, long m, long d) {
    y -= m <= 2;
    const long era = (y >= 0 ? y : y - 399) / 400;
    const long yoe = y - era * 400;
    const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static bool valid(long y, long m, long d, long hh, long mm) {
    static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || m < 1 || m > 12 || d < 1 || hh > 23 || mm > 59) return false;
    long lim = dim[m - 1];
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) lim = 29;
    return d <= lim;
}

struct Item {
    long day;       // days since 1970-01-01
    long minute;    // minute of the day
    long year, month;
    std::string rel;
    bool operator<(const Item &o) const {
        if (day != o.day) return day < o.day;
        if (minute != o.minute) return minute < o.minute;
        return rel < o.rel;
    }
};

static long monday(long day) { return day - (((day + 3) % 7) + 7) % 7; }

int main() {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    std::vector<std::string> lines;
    std::string cur;
    for (char c : text) {
        if (c == '\n') { lines.push_back(cur); cur.clear(); } else cur += c;
    }
    if (!cur.empty()) lines.push_back(cur);
    for (auto &l : lines)
        if (!l.empty() && l.back() == '\r') l.pop_back();
    if (lines.empty()) return 0;
    std::string first = lines[0];
    first.erase(0, first.find_first_not_of(" \t"));
    long ty = std::stol(first.substr(0, 4)), tm = std::stol(first.substr(4, 2)), td = std::stol(first.substr(6, 2));
    const long today = days_from_civil(ty, tm, td);
    const long today_month = ty * 12 + tm - 1;
    const std::regex name_re("^([a-z][a-z0-9-]*)-([0-9]{8})-([0-9]{4})\\.(tar\\.gz|sql\\.xz)$");
    std::map<std::pair<std::string, std::string>, std::vector<Item>> sets;
    for (size_t i = 1; i < lines.size(); i++) {
        const std::string &rel = lines[i];
        if (rel.empty()) continue;
        size_t slash = rel.rfind('/');
        std::string folder = slash == std::string::npos ? "" : rel.substr(0, slash);
        std::string base = slash == std::string::npos ? rel : rel.substr(slash + 1);
        std::smatch m;
        if (!std::regex_match(base, m, name_re)) continue;
        std::string d = m[2], t = m[3];
        long y = std::stol(d.substr(0, 4)), mo = std::stol(d.substr(4, 2)), dd = std::stol(d.substr(6, 2));
        long hh = std::stol(t.substr(0, 2)), mi = std::stol(t.substr(2, 2));
        if (!valid(y, mo, dd, hh, mi)) continue;
        Item it{days_from_civil(y, mo, dd), hh * 60 + mi, y, mo, rel};
        if (it.day > today) continue;
        sets[{folder, m[1]}].push_back(it);
    }
    std::vector<std::string> prune;
    for (auto &kv : sets) {
        std::vector<Item> items = kv.second;
        std::sort(items.begin(), items.end());
        std::set<std::string> keep;
        if (KEEP_DAYS)
            for (auto &it : items)
                if (today - it.day < KEEP_DAYS) keep.insert(it.rel);
        for (int rule = 0; rule < 3; rule++) {
            int count = rule == 0 ? DAILY : rule == 1 ? WEEKLY : MONTHLY;
            if (!count) continue;
            std::map<long, std::string> newest;
            for (auto &it : items) {
                long p, lo, hi;
                if (rule == 0) { p = it.day; hi = today; lo = today - count + 1; }
                else if (rule == 1) { p = monday(it.day); hi = monday(today); lo = hi - 7L * (count - 1); }
                else { p = it.year * 12 + it.month - 1; hi = today_month; lo = today_month - count + 1; }
                if (p >= lo && p <= hi) newest[p] = it.rel;
            }
            for (auto &n : newest) keep.insert(n.second);
        }
@EMIT@    }
    std::sort(prune.begin(), prune.end());
    for (auto &p : prune) std::cout << p << "\n";
    return 0;
}
"""


# The other variants' Python: what the policy keeps, or a per-set summary, in place of the prune list (these
# definitions of report and main_stdin come after the prune ones and replace them).
BACKUPS_PY = r'''def backups(paths, today):
    """The backups the rules look at (backup names with real dates, not after today), sorted."""
    out = []
    for rel in paths:
        got = parse(rel.rpartition("/")[2])
        if got is not None and got[1].date() <= today:
            out.append(rel)
    return sorted(out)


'''
KEPT_PY = BACKUPS_PY + r'''def kept(paths, today):
    prune = set(plan(paths, today))
    return [rel for rel in backups(paths, today) if rel not in prune]


def report(root, today, account, with_total):
    """The keep manifest: the mirror's object URI of each backup the policy keeps (and the bytes they hold)."""
    bucket = f"s3://backups-{account}/"
    sizes = scan(root)
    keep = kept(sorted(sizes), today)
    out = "".join(bucket + p + "\n" for p in keep)
    if with_total:
        out += f"total {bucket} {sum(sizes[p] for p in keep)}\n"
    return out


def main_stdin(text):
    lines = text.splitlines()
    today = dt.datetime.strptime(lines[0].strip(), "%Y%m%d").date()
    return "".join(p + "\n" for p in kept([ln for ln in lines[1:] if ln], today))


'''
SUMMARY_PY = BACKUPS_PY + r'''def summary(paths, today, sizes):
    """Per backup set (its folder and name, as `folder/name`): [kept, pruned, bytes pruned]."""
    prune = set(plan(paths, today))
    per = {}
    for rel in backups(paths, today):
        folder, _, base = rel.rpartition("/")
        row = per.setdefault((folder + "/" if folder else "") + parse(base)[0], [0, 0, 0])
        if rel in prune:
            row[1] += 1
            row[2] += sizes.get(rel, 0)
        else:
            row[0] += 1
    return sorted(per.items())


def report(root, today, account, with_total):
    """One line per set: its object prefix in the mirror, how many backups stay and go, the bytes freed."""
    bucket = f"s3://backups-{account}/"
    sizes = scan(root)
    return "".join(f"{bucket}{key} {k} {p} {b}\n" for key, (k, p, b) in summary(sorted(sizes), today, sizes))


def main_stdin(text):
    lines = text.splitlines()
    today = dt.datetime.strptime(lines[0].strip(), "%Y%m%d").date()
    return "".join(f"{key} {k} {p}\n" for key, (k, p, _) in summary([ln for ln in lines[1:] if ln], today, {}))


'''
PRUNE_CPP = """        for (auto &it : items)
            if (!keep.count(it.rel)) prune.push_back(it.rel);
"""
KEPT_CPP = """        for (auto &it : items)
            if (keep.count(it.rel)) prune.push_back(it.rel);
"""
SUMMARY_CPP = """        long kept = 0;
        for (auto &it : items) kept += (long)keep.count(it.rel);
        prune.push_back(kv.first.second + " " + std::to_string(kept) + " " + std::to_string((long)items.size() - kept));
"""
# Per variant: (Python inserted before the entry point, C++ that collects the output lines per set).
VARIANT_CODE = {"prune_manifest": ("", PRUNE_CPP), "kept_manifest": (KEPT_PY, KEPT_CPP),
                "set_summary": (SUMMARY_PY, SUMMARY_CPP)}


def programs_for(keep_days, daily, weekly, monthly, variant="prune_manifest") -> dict[str, str]:
    """The reference programs for a policy; a str value is source text (e.g. "@@DAYS@@")."""
    values = {"KEEP_DAYS": keep_days, "DAILY": daily, "WEEKLY": weekly, "MONTHLY": monthly}
    py, cpp = VARIANT_CODE[variant]
    return {"Python": fill(REFERENCE, VARIANT_CODE=py, **values),
            "C++": fill(REFERENCE_CPP, EMIT=cpp, **{n: str(v) for n, v in values.items()})}


SETS = ("orders-db", "wiki", "mail-archive", "crm", "billing", "gitlab", "ldap", "metrics")
HOSTS = ("db01", "db02", "app03", "files04")


def _fmt(d: dt.date) -> str:
    return d.strftime("%Y%m%d")


def _backups(rng, today, span, recent, ext):
    """(datetime, stamp) pairs for one set: dense recently, sparse further back, a few extras."""
    out = []
    for age in range(span):
        day = today - dt.timedelta(days=age)
        p = 0.9 if age < recent else 0.3
        if rng.random() < p:
            out.append(dt.datetime(day.year, day.month, day.day, 2, rng.choice([0, 0, 15, 30])))
        if rng.random() < 0.12:  # a manual run later that day
            out.append(dt.datetime(day.year, day.month, day.day, rng.randrange(9, 23), rng.randrange(60)))
    return sorted(set(out))


NAMING = ("A backup is a file named `<set>-<YYYYMMDD>-<HHMM>.tar.gz` or `<set>-<YYYYMMDD>-<HHMM>.sql.xz` "
          "(the set is the part of the name before the timestamp: lower-case letters, digits and dashes); the "
          "timestamp in the name is when it was taken, and \"newest\" means the latest timestamp")


# What the program prints, by variant.
OUTPUT = {"prune_manifest": "the names the policy prunes, one per line, sorted in byte order.",
          "kept_manifest": "the names of the backups the policy keeps (not those dated after today, nor names that "
                           "are not backups), one per line, sorted in byte order.",
          "set_summary": "one line per backup set, `<set> <kept> <pruned>`: how many of its backups the policy keeps "
                         "and how many it prunes (backups dated after today are not counted), sorted by set name."}


@dataclass(frozen=True)
class Knobs:
    policy: tuple[int, int, int, int]  # keep-days, daily, weekly, monthly (a non-zero keep-days/daily is drawn)
    sets: int  # backup sets
    span: int  # days of history
    hosts: bool  # sets in per-host directories
    traps: int  # 1: junk beside the backups; 2: lying mtimes, impossible and future dates, a bytes total


@register
class BackupRetention(Family):
    name = "backup_retention_prune"
    domain = "file_operations"
    skill_types = ("Storage Accounting", "File Discovery")
    primitive_skills = ("retention policy application", "date parsing from filenames", "calendar arithmetic",
                        "glob and pattern matching", "recursive directory traversal", "disk usage accounting",
                        "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    levels = {0: Knobs(policy=(7, 0, 0, 0), sets=1, span=20, hosts=False, traps=0),
              1: Knobs(policy=(10, 0, 0, 0), sets=1, span=30, hosts=False, traps=0),
              2: Knobs(policy=(0, 7, 4, 0), sets=1, span=70, hosts=False, traps=0),
              3: Knobs(policy=(0, 7, 5, 3), sets=3, span=130, hosts=False, traps=1),
              4: Knobs(policy=(0, 7, 5, 6), sets=3, span=240, hosts=True, traps=2)}
    programs = programs_for(10, 0, 0, 0)
    variants = ("prune_manifest", "kept_manifest", "set_summary")

    @staticmethod
    def _policy_text(keep_days, daily, weekly, monthly):
        if keep_days:
            return (f"keep every backup taken in the last {keep_days} days (today and the {keep_days - 1} days "
                    "before it); everything older goes")
        parts = [f"the newest backup of each of the last {daily} days (today included)"]
        if weekly:
            parts.append(f"the newest backup of each of the last {weekly} ISO weeks (Monday to Sunday, the current "
                         "week included)")
        if monthly:
            parts.append(f"the newest backup of each of the last {monthly} calendar months (the current month "
                         "included)")
        return ("keep " + "; ".join(parts) + ". A backup kept by any of these rules stays; every other backup "
                "goes. Days, weeks and months without backups still count towards the windows")

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        keep_days, daily, weekly, monthly = k.policy
        for _ in range(self.variants.index(t.variant)):  # each variant its own draw of the backups
            rng.random()
        today = dt.date(2025, 1, 1) + dt.timedelta(days=rng.randrange(700))
        if keep_days:
            keep_days = rng.choice([7, 10, 14])
        else:
            daily = rng.choice([5, 7, 10])
        policy = (keep_days, daily, weekly, monthly)
        v = t.variant
        src = programs_for(*policy, v)["Python"]
        ref = run_python(src)
        sets = rng.sample(SETS, k.sets)
        spec = []
        dirs = rng.sample(HOSTS, 3) if k.hosts else [""]
        for folder in dirs:
            for s in (sets if not k.hosts else rng.sample(sets, 2)):
                ext = rng.choice(["tar.gz", "sql.xz"])
                pre = f"{folder}/" if folder else ""
                stamps = _backups(rng, today, k.span, 12, ext)
                if keep_days:  # at least one backup past the window: the prune list is never empty
                    old = today - dt.timedelta(days=k.span - 1)
                    stamps = sorted(set(stamps) | {dt.datetime(old.year, old.month, old.day, 2, 0)})
                if k.traps >= 2:  # clock skew on one host: a backup from the future
                    fut = today + dt.timedelta(days=rng.randrange(1, 4))
                    stamps.append(dt.datetime(fut.year, fut.month, fut.day, 2, 0))
                for when in stamps:
                    rel = f"{pre}{s}-{when:%Y%m%d-%H%M}.{ext}"
                    mtime = int(when.replace(tzinfo=dt.timezone.utc).timestamp()) + rng.randrange(60, 3000)
                    if k.traps >= 2 and rng.random() < 0.3:  # re-copied: mtime says nothing
                        mtime = epoch(today.year, today.month, today.day) - rng.randrange(0, 5 * 86400)
                    spec.append(["s", rel, rng.randrange(1000, 20000), 0o640, mtime])
                if k.traps >= 1:
                    last = stamps[-1]
                    junk = [f"{pre}{s}-{last:%Y%m%d-%H%M}.{ext}.sha256", f"{pre}.{s}-{_fmt(today)}-0200.{ext}.part",
                            f"{pre}{s}-manual-before-upgrade.{ext}", f"{pre}README.txt"]
                    for j in junk:
                        if not any(e[1] == j for e in spec):
                            spec.append(["s", j, rng.randrange(100, 5000), 0o640, epoch(2024, 6, 1)])
                    spec.append(["l", f"{pre}{s}-latest.{ext}", f"{s}-{last:%Y%m%d-%H%M}.{ext}"])
                if k.traps >= 2:
                    spec.append(["s", f"{pre}{s}-{today.year - 1}0230-0200.{ext}", 1234, 0o640, epoch(2024, 6, 1)])
        # The delivered value is the mirror's account id, which prefixes every line: the date to count
        # from is in the data anyway (the newest backups), so it is stated, not delivered.
        account = unseen(t, lambda: str(rng.randrange(10 ** 11, 10 ** 12)), spec_json(spec))
        with host_tree(spec) as root:
            truth = ref["report"](root, today, account, k.traps >= 2)
        ship_tree(t, spec, "/app/backups", "backups")
        finish_setup(t)
        out, what = {"prune_manifest": ("prune.txt", "the prune list"), "kept_manifest": ("keep.txt", "the keep list"),
                     "set_summary": ("sets.txt", "the set summary")}[v]
        if t.level == 0:  # atomic: the window's first day is stated, so one comparison on the name decides
            first = today - dt.timedelta(days=keep_days - 1)
            t.say(f"Backups in `/app/backups/` are named `<set>-<YYYYMMDD>-<HHMM>.tar.gz` or `.sql.xz`. Every "
                  f"backup whose name dates it before {first:%Y-%m-%d} is pruned. `/app/backups` mirrors the bucket "
                  "`backups-<ACCOUNT>`, where ACCOUNT is the storage account id given below.")
            acct_var = t.deliver(account, "the storage account id")
            if v == "prune_manifest":
                t.say("List the pruned backups, one per line as `s3://backups-<ACCOUNT>/<file name>`, sorted in byte "
                      "order. Do not delete anything.")
            elif v == "kept_manifest":
                t.say("List the backups that survive the prune, one per line as `s3://backups-<ACCOUNT>/<file name>`, "
                      "sorted in byte order. Do not delete anything.")
            else:
                t.say("All of them belong to one backup set. Write one line `s3://backups-<ACCOUNT>/<set> <kept> "
                      "<pruned> <bytes freed>`: how many of its backups stay, how many are pruned, and the combined "
                      "size in bytes of the pruned ones. Do not delete anything.")
            t.add_solution_file("retention.py", src)
            t.solve(f'mkdir -p /app/out\npython3 /solution/retention.py /app/backups {_fmt(today)} "{acct_var}" '
                    f"> /app/out/{out}")
            t.expect_output(f"/app/out/{out}", truth, what)
            return
        where = ("Backups are in `/app/backups/<host>/`; a backup set is one set name within one host directory, "
                 "and each set is rotated on its own." if k.hosts else
                 "Backups are in `/app/backups/`" + ("; each set is rotated on its own." if k.sets > 1 else "."))
        t.say(f"{where} {NAMING}. Everything else there (checksums, partial uploads, symlinks, notes) is not a "
              "backup: leave it out." if k.traps else f"{where} {NAMING}.")
        t.say(f"The policy: {self._policy_text(*policy)}. Treat {today:%Y-%m-%d} as today and count the windows "
              "from it.")
        if k.traps >= 2:
            t.say("Go by the timestamp in the name: modification times are unreliable since the share was "
                  "re-copied. A name whose date does not exist on the calendar is not a backup, and backups "
                  "dated after today are left alone and ignored by the rules.")
        t.say("`/app/backups` is the local copy of an object-store bucket, `backups-<ACCOUNT>`, where ACCOUNT is "
              "the 12-digit id of the storage account given below; a backup's object key is its path relative to "
              "`/app/backups`. The pruning job takes a manifest of object URIs.")
        acct_var = t.deliver(account, "the storage account id")
        if v == "set_summary":
            lines = ("Before the pruning job runs we want its effect per backup set: one line per set, "
                     "`s3://backups-<ACCOUNT>/<set prefix> <kept> <pruned> <bytes freed>`, where the set prefix is "
                     + ("the host directory, a `/` and the set name (`db01/wiki`)" if k.hosts else "the set name")
                     + ", kept and pruned count that set's backups the policy keeps and prunes, and bytes freed is "
                     "the combined size in bytes of the pruned ones" + (" (backups dated after today are not counted)"
                                                                        if k.traps >= 2 else "")
                     + ". Sort the lines in byte order.")
        else:
            lines = (("List the backups the policy prunes" if v == "prune_manifest" else
                      "List the backups that survive the prune (the ones the policy keeps"
                      + ("; backups dated after today are not part of the list" if k.traps >= 2 else "") + ")")
                     + ", one per line as the object URI `s3://backups-<ACCOUNT>/<path relative to /app/backups>`, "
                     "sorted in byte order.")
            if k.traps >= 2:
                lines += (" After them, a last line `total s3://backups-<ACCOUNT>/ <bytes>` with their combined size "
                          "in bytes.")
        t.say(lines + " This is a dry run: do not delete anything.")
        t.add_solution_file("retention.py", src)
        total = " total" if k.traps >= 2 else ""
        t.solve(f'mkdir -p /app/out\npython3 /solution/retention.py /app/backups {_fmt(today)} "{acct_var}"{total} '
                f"> /app/out/{out}")
        t.expect_output(f"/app/out/{out}", truth, what)

    def program_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        keep_days, daily, weekly, monthly = k.policy
        for _ in range(self.variants.index(t.variant)):  # each variant its own draw of the backups
            rng.random()
        texts = []
        for _ in range(12):
            day = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(1000))
            names = []
            for s in rng.sample(SETS, max(1, k.sets - rng.randrange(2))):
                ext = rng.choice(["tar.gz", "sql.xz"])
                for when in _backups(rng, day, k.span, 12, ext):
                    names.append(f"{s}-{when:%Y%m%d-%H%M}.{ext}")
                if k.traps:
                    names += [f"{s}-{_fmt(day)}-0200.{ext}.part", f"{s}-latest.{ext}", f"{s}-{day.year}0231-0200.{ext}",
                              f"{s}-{_fmt(day + dt.timedelta(days=2))}-0200.{ext}"]
            rng.shuffle(names)
            texts.append(_fmt(day) + "\n" + "".join(n + "\n" for n in names))
        # N (the window in days, or the daily count) is the delivered value. The worked examples use a demo
        # N stated in the instruction, so they do not give ours away; the oracle gets ours at solve time.
        lo, hi = (7, 22) if keep_days else (5, 13)
        demo = rng.randrange(lo, hi)

        def policy(n):
            return (n, 0, 0, 0) if keep_days else (0, n, weekly, monthly)

        v = t.variant
        shown = [run_python(programs_for(*policy(demo), v)["Python"])["main_stdin"](x) for x in texts[:2]]
        value = int(unseen(t, lambda: str(rng.randrange(lo, hi)), str(demo)))
        ref = run_python(programs_for(*policy(value), v)["Python"])
        cases = [(x, shown[i] if i < 2 else ref["main_stdin"](x)) for i, x in enumerate(texts)]
        what = "the number of days in the retention window" if keep_days else "the number of daily backups to keep"
        var = t.deliver(str(value), what)
        text = self._policy_text(0, "N", weekly, monthly) if not keep_days else \
            ("keep every backup taken in the last N days (today and the N-1 days before it); everything older goes")
        t.say(f"We want our backup pruning logic as a small reusable tool. {NAMING}; each set is rotated on its "
              f"own. The policy: {text}. N is the number "
              "given above; hard-code it. Backups dated after today and names that are not backups (including "
              "dates that do not exist on the calendar) are never pruned. Input: the first line is today's date "
              f"as YYYYMMDD, then one file name per line. Output: {OUTPUT[v]} The worked examples were produced "
              f"with a demo N of {demo}; your program must use ours.")
        t.expect_program("", cases, programs_for(*policy("@@DAYS@@"), v))
        t.solve(f'test -n "{var}"\nfor f in /app/solution.*; do sed -i "s/@@DAYS@@/{var}/" "$f"; done')
