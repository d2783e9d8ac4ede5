"""Plan the renaming of camera dumps into a dated library: parse the capture time from several
camera naming schemes (falling back to the modification time), build `YYYY/MM/YYYYMMDD_HHMMSS_CODE.ext`
names with a delivered owner code, lower-case and unify extensions, resolve collisions (bursts,
names already taken in the library) with numbered suffixes, and skip junk. The fuzz variant asks for
the planner as a program over a listing. Variants: that plan as a TSV manifest; the plan as a shell
script of `install -D` commands in order of new path; or the library's index, the new names per folder."""

from __future__ import annotations

import datetime as dt

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import epoch, finish_setup, host_tree, ship_tree, spec_json
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import datetime as dt
import os
import re
import stat
import sys

CODE = @CODE@  # the owner code
SPLIT = @SPLIT@  # photos/ and videos/ top folders
PHOTO = ("jpg", "jpeg", "png", "heic")
VIDEO = ("mp4", "mov")
PATTERNS = [
    re.compile(r"^(?:IMG|VID)_(\d{4})(\d{2})(\d{2})_(\d{2})(\d{2})(\d{2})(?:_\d+)?\.[^.]+$"),
    re.compile(r"^PXL_(\d{4})(\d{2})(\d{2})_(\d{2})(\d{2})(\d{2})\d{3}\.[^.]+$"),
    re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2})\.(\d{2})\.(\d{2})\.[^.]+$"),
    re.compile(r"^Screenshot_(\d{4})-(\d{2})-(\d{2})-(\d{2})-(\d{2})-(\d{2})\.[^.]+$"),
]


def when(name, mtime):
    for pat in PATTERNS:
        m = pat.match(name)
        if m:
            try:
                return dt.datetime(*map(int, m.groups()))
            except ValueError:
                break  # not a real timestamp: fall back to the modification time
    return dt.datetime.fromtimestamp(mtime, dt.timezone.utc).replace(tzinfo=None)


def plan(files, existing, code=None):
    """files: (relative path, mtime); existing: old-scheme names already in the library (the new names
    without the owner code). -> [(old, new)] by old."""
    code = code or CODE
    legacy = set(existing)
    taken = set()
    items = []
    for rel, mtime in files:
        name = rel.rsplit("/", 1)[-1]
        if name.startswith(".") or "." not in name:
            continue
        ext = name.rsplit(".", 1)[1].lower()
        if ext not in PHOTO + VIDEO:
            continue
        ext = "jpg" if ext == "jpeg" else ext
        items.append((when(name, mtime), rel, ext))
    out = []
    for t, rel, ext in sorted(items):
        folder = ("videos/" if ext in VIDEO else "photos/") if SPLIT else ""
        stem = f"{folder}{t:%Y/%m}/{t:%Y%m%d_%H%M%S}"
        n = 1
        while f"{stem}_{code}{suffix(n)}.{ext}" in taken or f"{stem}{suffix(n)}.{ext}" in legacy:
            n += 1
        new = f"{stem}_{code}{suffix(n)}.{ext}"
        taken.add(new)
        out.append((rel, new))
    return sorted(out)


def suffix(n):
    return "" if n == 1 else f"-{n}"


def walk(root):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode):
                found.append((os.path.relpath(full, root), int(st.st_mtime)))
    return found


def render(pairs):
    return "".join(f"{a}\t{b}\n" for a, b in pairs)


def main_stdin(text, code=None):
    files, existing = [], []
    for line in text.split("\n"):
        f = line.split("\t")
        if f[0] == "F" and len(f) == 3:
            files.append((f[2], int(f[1])))
        elif f[0] == "E" and len(f) == 2:
            existing.append(f[1])
    return render(plan(files, existing, code))


@VARIANT_CODE@if __name__ == "__main__":
    if len(sys.argv) > 1:
        lib = [p for p, _ in walk(sys.argv[2])] if len(sys.argv) > 2 and os.path.isdir(sys.argv[2]) else []
        sys.stdout.write(render(plan(walk(sys.argv[1]), lib)))
    else:
        sys.stdout.write(main_stdin(sys.stdin.read()))
'''

REFERENCE_CPP = r"""
// Media rename planner: reads F/E lines, prints `<original><TAB><new>` sorted by original path.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

static const std::string CODE = "@CODE@";
static const bool SPLIT = @SPLIT@;

static void civil_from_days(long z, long &y, long &m, long &d) {
    z += 719468;
    const long era = (z >= 0 ? z : z - 146096) / 146097;
    const long doe = z - era * 146097;
    const long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y = yoe + era * 400;
    const long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const long mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp + (mp < 10 ? 3 : -9);
    y += m <= 2;
}

static bool valid(long y, long mo, long d, long h, long mi, long s) {
    static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || y > 9999 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return false;
    long lim = dim[mo - 1];
    if (mo == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) lim = 29;
    return d <= lim;
}

struct When {
    long y, mo, d, h, mi, s;
    bool operator<(const When &o) const {
        return std::tie(y, mo, d, h, mi, s) < std::tie(o.y, o.mo, o.d, o.h, o.mi, o.s);
    }
};

static When capture(const std::string &name, long mtime) {
    static const std::regex pats[] = {
        std::regex("^(?:IMG|VID)_(\\d{4})(\\d{2})(\\d{2})_(\\d{2})(\\d{2})(\\d{2})(?:_\\d+)?\\.[^.]+$"),
        std::regex("^PXL_(\\d{4})(\\d{2})(\\d{2})_(\\d{2})(\\d{2})(\\d{2})\\d{3}\\.[^.]+$"),
        std::regex("^(\\d{4})-(\\d{2})-(\\d{2}) (\\d{2})\\.(\\d{2})\\.(\\d{2})\\.[^.]+$"),
        std::regex("^Screenshot_(\\d{4})-(\\d{2})-(\\d{2})-(\\d{2})-(\\d{2})-(\\d{2})\\.[^.]+$"),
    };
    for (const auto &re : pats) {
        std::smatch m;
        if (std::regex_match(name, m, re)) {
            long v[6];
            for (int i = 0; i < 6; i++) v[i] = std::stol(m[i + 1]);
            if (valid(v[0], v[1], v[2], v[3], v[4], v[5])) return When{v[0], v[1], v[2], v[3], v[4], v[5]};
            break;
        }
    }
    long days = mtime >= 0 ? mtime / 86400 : -((-mtime + 86399) / 86400);
    long secs = mtime - days * 86400;
    When w{};
    civil_from_days(days, w.y, w.mo, w.d);
    w.h = secs / 3600;
    w.mi = secs / 60 % 60;
    w.s = secs % 60;
    return w;
}

static std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) { out.push_back(cur); cur.clear(); } else cur += c;
    }
    out.push_back(cur);
    return out;
}

int main() {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    std::set<std::string> taken, legacy;
    std::vector<std::tuple<When, std::string, std::string>> items;
    for (const auto &line : split(text, '\n')) {
        auto f = split(line, '\t');
        if (f[0] == "E" && f.size() == 2) { legacy.insert(f[1]); continue; }
        if (!(f[0] == "F" && f.size() == 3)) continue;
        const std::string &rel = f[2];
        size_t slash = rel.rfind('/');
        std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
        size_t dot = name.rfind('.');
        if (name.empty() || name[0] == '.' || dot == std::string::npos) continue;
        std::string ext = name.substr(dot + 1);
        for (auto &c : ext) c = (char)std::tolower((unsigned char)c);
        static const std::set<std::string> media = {"jpg", "jpeg", "png", "heic", "mp4", "mov"};
        if (!media.count(ext)) continue;
        if (ext == "jpeg") ext = "jpg";
        items.emplace_back(capture(name, std::stol(f[1])), rel, ext);
    }
    std::sort(items.begin(), items.end());
    std::vector<std::pair<std::string, std::string>> out;
    for (auto &it : items) {
        const When &w = std::get<0>(it);
        const std::string &ext = std::get<2>(it);
        std::string folder = SPLIT ? (ext == "mp4" || ext == "mov" ? "videos/" : "photos/") : "";
        char buf[64];
        std::snprintf(buf, sizeof buf, "%04ld/%02ld/%04ld%02ld%02ld_%02ld%02ld%02ld", w.y, w.mo, w.y, w.mo, w.d, w.h,
                      w.mi, w.s);
        std::string stem = folder + buf, name;
        for (int n = 1;; n++) {  // free both among the names given out and in the old scheme
            std::string suf = n == 1 ? "" : "-" + std::to_string(n);
            name = stem + "_" + CODE + suf + "." + ext;
            if (!taken.count(name) && !legacy.count(stem + suf + "." + ext)) break;
        }
        taken.insert(name);
        out.emplace_back(std::get<1>(it), name);
    }
@EMIT@    return 0;
}
"""


# The other variants' render (defined after the plan's, which it replaces): the plan as a shell script of
# `install -D` commands sorted by new path (SRC and DST prefix the paths), or the library's index per folder.
SCRIPT_PY = r'''SRC, DST = @SRC@, @DST@  # where the script finds the dumps and the library (relative to where it runs)


def render(pairs):
    """The plan as commands that copy each file to its new path, creating folders, in order of new path."""
    return "".join(f"install -D -p -m 0644 '{SRC}{a}' '{DST}{b}'\n" for a, b in sorted(pairs, key=lambda p: p[1]))


'''
INDEX_PY = r'''def render(pairs):
    """The library's new files per folder: `<folder> <name> <name>...`, folders and names in byte order."""
    folders = {}
    for _, new in pairs:
        folder, _, name = new.rpartition("/")
        folders.setdefault(folder, []).append(name)
    return "".join(folder + "".join(" " + n for n in sorted(names)) + "\n" for folder, names in sorted(folders.items()))


'''
PLAN_CPP = """    std::sort(out.begin(), out.end());
    for (auto &p : out) std::cout << p.first << "\\t" << p.second << "\\n";
"""
SCRIPT_CPP = """    std::sort(out.begin(), out.end(), [](const std::pair<std::string, std::string> &a,
                                         const std::pair<std::string, std::string> &b) { return a.second < b.second; });
    for (auto &p : out) std::cout << "install -D -p -m 0644 '" << p.first << "' '" << p.second << "'\\n";
"""
INDEX_CPP = """    std::vector<std::pair<std::string, std::string>> files;  // (folder, name)
    for (auto &p : out) {
        size_t slash = p.second.rfind('/');
        files.emplace_back(p.second.substr(0, slash), p.second.substr(slash + 1));
    }
    std::sort(files.begin(), files.end());
    for (size_t i = 0; i < files.size(); i++) {
        if (i == 0 || files[i].first != files[i - 1].first) std::cout << (i ? "\\n" : "") << files[i].first;
        std::cout << " " << files[i].second;
    }
    if (!files.empty()) std::cout << "\\n";
"""


def variant_code(variant: str, src: str = "", dst: str = "") -> str:
    """The Python a variant inserts before the entry point (``src``/``dst``: the script's path prefixes)."""
    if variant == "install_script":
        return fill(SCRIPT_PY, SRC=repr(src), DST=repr(dst))
    return {"rename_plan": "", "library_index": INDEX_PY}[variant]


def reference(code: str, split: bool, variant: str, src: str = "", dst: str = "") -> str:
    return fill(REFERENCE, CODE=code, SPLIT=split, VARIANT_CODE=variant_code(variant, src, dst))


def programs_for(code: str, split: bool, variant: str = "rename_plan") -> dict[str, str]:
    """The reference programs with the owner code ``code`` (source text: a Python expression)."""
    emit = {"rename_plan": PLAN_CPP, "install_script": SCRIPT_CPP, "library_index": INDEX_CPP}[variant]
    return {"Python": reference(code, split, variant),
            "C++": fill(REFERENCE_CPP, CODE=code.strip('"'), SPLIT="true" if split else "false", EMIT=emit)}


def legacy(new: str, code: str) -> str:
    """The old-scheme name of a new name: without its `_<code>` part."""
    return new.replace(f"_{code}", "", 1)


CARDS = ("card01", "card02", "phone_backup", "sd_2023", "camera_b")
SUB = ("DCIM/100CANON", "DCIM/101CANON", "Camera", "Pictures/Screenshots", "Movies", "misc files")


class _Gen:
    def __init__(self, rng, level):
        self.rng, self.level = rng, level

    def stamp(self):
        return dt.datetime(2021, 1, 1) + dt.timedelta(seconds=self.rng.randrange(3 * 365 * 86400))

    def name(self, t):
        r, lv = self.rng, self.level
        forms = ["img", "plain"] + (["pxl", "dropbox"] if lv >= 2 else []) + (["vid", "shot"] if lv >= 3 else [])
        if not lv:  # atomic: one scheme, one extension, so the name alone gives the new name
            return f"IMG_{t:%Y%m%d_%H%M%S}.jpg"
        form = r.choice(forms)
        ext = r.choice(["jpg", "jpg", "JPG", "jpeg"] + (["png", "HEIC"] if lv >= 2 else []))
        if form == "img":
            return f"IMG_{t:%Y%m%d_%H%M%S}.{ext}"
        if form == "pxl":
            return f"PXL_{t:%Y%m%d_%H%M%S}{r.randrange(1000):03d}.{ext}"
        if form == "dropbox":
            return f"{t:%Y-%m-%d %H.%M.%S}.{ext}"
        if form == "vid":
            return f"VID_{t:%Y%m%d_%H%M%S}.{r.choice(['mp4', 'MP4', 'mov'])}"
        if form == "shot":
            return f"Screenshot_{t:%Y-%m-%d-%H-%M-%S}.png"
        return f"{r.choice(['IMG', 'DSC', 'P'])}{r.randrange(1000, 9999)}.{ext}"

    def dump(self, n):
        """(relative path, mtime, name-stamp-or-None)."""
        r, lv = self.rng, self.level
        out, used = [], set()
        cards = CARDS[:1 + lv]
        for _ in range(20 * n):
            if len(out) >= n:
                break
            t = self.stamp()
            name = self.name(t)
            folder = f"{r.choice(cards)}/{r.choice(SUB[:2 + lv])}" if lv >= 2 else "card01"
            mtime = int(t.replace(tzinfo=dt.timezone.utc).timestamp()) + r.randrange(0, 40)
            if name[0] in "DP" and not name.startswith("PXL"):
                mtime = int(t.replace(tzinfo=dt.timezone.utc).timestamp())
            rel = f"{folder}/{name}"
            if rel in used:
                continue
            used.add(rel)
            out.append((rel, mtime))
            if lv >= 2 and r.random() < 0.12:  # a burst: same second, another card or a copy
                twin = f"{r.choice(cards)}/{r.choice(SUB[:2 + lv])}/{name}"
                if twin not in used:
                    used.add(twin)
                    out.append((twin, mtime + 5))
            if lv >= 2 and name.startswith("IMG_") and r.random() < 0.1:
                twin = f"{folder}/{name.rsplit('.', 1)[0]}_1.{name.rsplit('.', 1)[1]}"  # IMG_..._1.jpg
                if twin not in used:
                    used.add(twin)
                    out.append((twin, mtime))
        if len(out) < n:
            raise FamilyError(f"media_rename_plan: only {len(out)} of {n} different file names drawn")
        if lv >= 3:
            for _ in range(4):
                folder = f"{r.choice(cards)}/{r.choice(SUB[:2 + lv])}"
                junk = r.choice(["Thumbs.db", ".DS_Store",
                                 f".trashed-{r.randrange(10**9)}-IMG_{r.randrange(1000, 9999)}.jpg",
                                 f"IMG_{r.randrange(1000, 9999)}.xmp", f"IMG_{r.randrange(1000, 9999)}.THM"])
                if f"{folder}/{junk}" not in used:
                    used.add(f"{folder}/{junk}")
                    out.append((f"{folder}/{junk}", epoch(2023, 5, 5)))
        if lv >= 4:
            t = self.stamp()
            bad = f"{r.choice(cards)}/DCIM/100CANON/IMG_{t.year}1345_{t:%H%M%S}.jpg"  # month 13: use the mtime
            out.append((bad, int(t.replace(tzinfo=dt.timezone.utc).timestamp())))
        return out


ROOTS = ("/app/dumps/", "/app/library/")  # the import script's path prefixes
# What the program prints, by variant.
PROGRAM_OUTPUT = {"rename_plan": "the plan, one line per media file, `<original path><TAB><new path>`, sorted by "
                                 "original path in byte order.",
                  "install_script": "the plan as a shell script, one line per media file, exactly `install -D -p -m "
                                    "0644 '<original path>' '<new path>'` (each path in single quotes), the lines "
                                    "sorted by new path in byte order.",
                  "library_index": "the library's index of new files, one line per folder that receives files, "
                                   "`<folder> <file name> <file name> ...`, the new file names (the last part of the "
                                   "new path) in byte order separated by single spaces, the lines sorted by folder in "
                                   "byte order."}


@dataclass(frozen=True)
class Knobs:
    files: int  # files in the dumps (the most in a fuzz case)
    split: bool  # photos/ and videos/ top folders
    existing: int  # old-scheme names already in the library


@register
class MediaRenamePlan(Family):
    name = "media_rename_plan"
    domain = "file_operations"
    skill_types = ("Bulk Transformation", "File Discovery")
    primitive_skills = ("batch renaming", "collision handling", "date parsing from filenames",
                        "glob and pattern matching", "hidden file handling",
                        "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    levels = {0: Knobs(files=8, split=False, existing=0),
              1: Knobs(files=15, split=False, existing=0),
              2: Knobs(files=40, split=False, existing=0),
              3: Knobs(files=80, split=True, existing=0),
              4: Knobs(files=140, split=True, existing=12)}
    programs = programs_for('"CODE"', False)
    variants = ("rename_plan", "install_script", "library_index")

    def _rules(self, t, code_text):
        k, lv = t.knobs, t.level
        if not lv:
            return (f"Every file is a photo named `IMG_YYYYMMDD_HHMMSS.jpg`; its new name is "
                    f"`YYYY/MM/YYYYMMDD_HHMMSS_{code_text}.jpg`, with the same timestamp.")
        schemes = ["`IMG_YYYYMMDD_HHMMSS.ext` (optionally with a `_N` burst counter before the extension)"]
        if lv >= 2:
            schemes += ["`PXL_YYYYMMDD_HHMMSSmmm.ext` (milliseconds are dropped)", "`YYYY-MM-DD HH.MM.SS.ext`"]
        if lv >= 3:
            schemes += ["`VID_YYYYMMDD_HHMMSS.ext`", "`Screenshot_YYYY-MM-DD-HH-MM-SS.ext`"]
        media = ("Media files are those with extension jpg, jpeg, png, heic, mp4 or mov, in any letter case; "
                 "anything else, and any hidden file (name starting with `.`), is left out of the plan. "
                 if lv >= 3 else "Every file there is a photo. ")
        folder = ("`photos/` for jpg, png and heic, `videos/` for mp4 and mov, followed by " if k.split else "")
        invalid = (" If a name matches a scheme but its timestamp is not a real date and time, use the modification "
                   "time instead." if lv >= 4 else "")
        existing = (f" The library already holds files from an earlier import under the old scheme, which had no "
                    f"owner code: a new name is also taken when the library has its old-scheme form, the same path "
                    f"without the `_{code_text}` part (`..._HHMMSS.<ext>` for `..._HHMMSS_{code_text}.<ext>`, "
                    f"`..._HHMMSS-2.<ext>` for `..._HHMMSS_{code_text}-2.<ext>`)." if k.existing else "")
        return (f"{media}The capture time comes from the file name when it follows one of the camera schemes: "
                f"{'; '.join(schemes)}. Otherwise it is the file's modification time, in UTC.{invalid} "
                f"The new name is {folder}`YYYY/MM/YYYYMMDD_HHMMSS_{code_text}.<ext>` from the capture time, with "
                "the extension in lower case and `jpeg` written as `jpg`. Give out names in order of capture time "
                "(ties by original path in byte order); when a new name is already taken, use "
                f"`..._{code_text}-2.<ext>`, then `-3` and so on, whichever is the first free.{existing}")

    def program_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        for _ in range(self.variants.index(v)):  # each variant its own draw of the dumps
            rng.random()
        gen = _Gen(rng, t.level)
        ref = run_python(reference('""', k.split, v))  # the code is passed to each call
        texts = []
        for _ in range(12):
            files = gen.dump(rng.randrange(max(6, k.files // 4), k.files))
            rng.shuffle(files)
            lines = [f"F\t{m}\t{p}" for p, m in files]
            if k.existing:
                for p, new in ref["plan"](files, [], "CODE")[:: max(2, len(files) // k.existing)]:
                    lines.append(f"E\t{legacy(new, 'CODE')}")
                rng.shuffle(lines)
            texts.append("\n".join(lines) + "\n")
        # The worked examples use a demo code stated in the instruction: they show the format, not our code.
        demo = t.code(1)
        shown = [ref["main_stdin"](text, demo) for text in texts[:2]]
        rules = self._rules(t, "<CODE>")
        code = unseen(t, lambda: t.code(1), *texts, *shown, demo, rules)
        cases = [(text, shown[i] if i < 2 else ref["main_stdin"](text, code)) for i, text in enumerate(texts)]
        t.say("We rename camera dumps into our library with a fixed scheme, and we want the planner as a "
              "program. The owner code used in every new name is given below; hard-code it.")
        var = t.deliver(code, "the owner code")
        t.say(rules + " Input: one line per file, `F<TAB><modification time as Unix "
              "seconds><TAB><path>`" + (", plus lines `E<TAB><path>` for the old-scheme names in the library"
                                         if k.existing else "") + f". Output: {PROGRAM_OUTPUT[v]} The worked "
              f"examples were produced with the demo owner code {demo}; your program must use ours.")
        t.expect_program("", cases, programs_for('"@@CODE@@"', k.split, v))
        t.solve(f'test -n "{var}"\nfor f in /app/solution.*; do sed -i "s/@@CODE@@/{var}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        for _ in range(self.variants.index(v)):  # each variant its own draw of the dumps
            rng.random()
        gen = _Gen(rng, t.level)
        ref = run_python(reference('""', k.split, v, *ROOTS))  # the code is passed to each call
        files = gen.dump(k.files)
        spec = [["s", p, rng.randrange(200, 3000), 0o644, m] for p, m in files]
        lib_spec = []
        if k.existing:
            pre = ref["plan"](files, [], "CODE")
            for _, new in rng.sample(pre, k.existing):
                lib_spec.append(["s", legacy(new, "CODE"), rng.randrange(200, 3000), 0o644, epoch(2024, 1, 1)])
        rules = self._rules(t, "<CODE>")
        code = unseen(t, lambda: t.code(1), spec_json(spec), spec_json(lib_spec), rules)
        with host_tree(spec) as root:
            with host_tree(lib_spec) as lib:
                truth = ref["render"](ref["plan"](ref["walk"](root), [p for p, _ in ref["walk"](lib)], code))
        ship_tree(t, spec, "/app/dumps", "dumps")
        if lib_spec:
            ship_tree(t, lib_spec, "/app/library", "library")
        finish_setup(t)
        t.say("Memory-card and phone dumps are under `/app/dumps/`. They are going into our library with a fixed "
              "naming scheme; before anything moves, we want the plan. Every new name carries the owner code "
              "given below.")
        var = t.deliver(code, "the owner code")
        if v == "rename_plan":
            t.say(rules + " The plan has one line per media file: `<path relative to /app/dumps>"
                  "<TAB><new path relative to /app/library>`, sorted by original path in byte order. Do not move or "
                  "rename anything yet.")
        elif v == "install_script":
            t.say(rules + " The plan is to be a shell script that copies every media file to its new place: one "
                  "line per media file, exactly `install -D -p -m 0644 '/app/dumps/<path relative to /app/dumps>' "
                  "'/app/library/<new path relative to /app/library>'` (each path in single quotes), the lines "
                  "sorted by new path in byte order, nothing else in the file. Write it, but do not run it.")
        else:
            t.say(rules + " Before anything moves we want the index of what the import adds to the library: one "
                  "line per library folder that receives files, `<folder relative to /app/library> <file name> "
                  "<file name> ...`, with the new file names (the last part of the new path) in byte order, "
                  "separated by single spaces, and the lines sorted by folder in byte order. Do not move or rename "
                  "anything yet.")
        out, what = {"rename_plan": ("plan.tsv", "the rename plan"),
                     "install_script": ("import.sh", "the import script"),
                     "library_index": ("index.txt", "the library index")}[v]
        t.add_solution_file("plan.py", reference("sys.argv[3]", k.split, v, *ROOTS))
        t.solve(f'mkdir -p /app/out\npython3 /solution/plan.py /app/dumps /app/library "{var}" > /app/out/{out}')
        t.expect_output(f"/app/out/{out}", truth, what)
