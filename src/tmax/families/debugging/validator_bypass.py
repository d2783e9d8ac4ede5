"""An upload gateway's object-key validator lets bad keys through (and may refuse good ones). The
policy is documented rule by rule; the validator (Python or C) carries two to six planted defects:
a trailing newline tolerated, uppercase allowed, empty segments skipped, hidden or dash-led segments
let through, an extension matched as a substring, depth counted by slashes, an over-strict length
check. Either fix the validator so it rejects every malicious key of a hidden corpus and keeps every
benign one (adversarial_corpus), or audit its recorded verdicts and list the wrong ones."""

from __future__ import annotations

import json

from tmax.families.base import PROGRAM_FILES, Family, FamilyError, TaskBuilder, register

PARAM = "__TMAX_PARAM__"

VALIDATOR_PY = r'''import re
import sys

MAX_LEN = <<PARAM>>
MAX_DEPTH = <<DEPTH>>
EXTENSIONS = (<<EXTS>>,)


def valid(key):
<<V_TRAIL>>
    if len(key) == 0 or <<V_LEN>>:
        return False
    if not <<V_CHARS>>:
        return False
    segments = key.split(b"/")
<<V_EMPTY>>
    if <<V_DEPTH>>:
        return False
    if not segments:
        return False
    for seg in segments:
        if not seg:
            return False
        if <<V_DOT>>:
            return False
<<V_DASH>>
    last = segments[-1]
<<V_EXT>>


if __name__ == "__main__":
    sys.exit(0 if valid(sys.stdin.buffer.read()) else 1)
'''

VALIDATOR_C = r'''#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MAX_LEN <<PARAM>>
#define MAX_DEPTH <<DEPTH>>

static const char *EXTENSIONS[] = {<<EXTS>>, NULL};

static int allowed(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '/';
}

static int valid(const char *key, size_t len) {
<<V_TRAIL>>
    if (len == 0 || <<V_LEN>>)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (<<V_CHARS>>)
            return 0;
    const char *seg[512];
    size_t seglen[512], nseg = 0, slashes = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || key[i] == '/') {
            size_t l = i - start;
            if (i < len)
                slashes++;
<<V_EMPTY>>
            {
                seg[nseg] = key + start;
                seglen[nseg] = l;
                nseg++;
            }
            start = i + 1;
        }
    }
    if (<<V_DEPTH>>)
        return 0;
    if (nseg == 0)
        return 0;
    for (size_t s = 0; s < nseg; s++) {
        if (seglen[s] == 0)
            return 0;
        if (<<V_DOT>>)
            return 0;
<<V_DASH>>
    }
    const char *last = seg[nseg - 1];
    size_t ll = seglen[nseg - 1];
<<V_EXT>>
}

int main(void) {
    static char buf[8192];
    size_t len = fread(buf, 1, sizeof buf, stdin);
    if (len == sizeof buf)
        return 1;
    return valid(buf, len) ? 0 : 1;
}
'''

_EXT_PY_GOOD = '    stem, dot, ext = last.rpartition(b".")\n    return bool(dot) and ext in EXTENSIONS'
_EXT_PY_BAD = '    return any(b"." + ext in last for ext in EXTENSIONS)'
_EXT_C_GOOD = """    const char *dot = NULL;
    for (size_t i = 0; i < ll; i++)
        if (last[i] == '.')
            dot = last + i;
    if (!dot)
        return 0;
    size_t el = ll - (size_t)(dot + 1 - last);
    for (int e = 0; EXTENSIONS[e]; e++)
        if (strlen(EXTENSIONS[e]) == el && memcmp(dot + 1, EXTENSIONS[e], el) == 0)
            return 1;
    return 0;"""
_EXT_C_BAD = """    for (int e = 0; EXTENSIONS[e]; e++) {
        size_t el = strlen(EXTENSIONS[e]);
        for (size_t i = 0; i + el + 1 <= ll; i++)
            if (last[i] == '.' && memcmp(last + i + 1, EXTENSIONS[e], el) == 0)
                return 1;
    }
    return 0;"""

BUGS = {
    "V_TRAIL": {"Python": ("", '    key = key.rstrip(b"\\n")  # clients often send a trailing newline'),
                "C": ("", "    while (len > 0 && key[len - 1] == '\\n') /* clients often send a trailing newline */\n"
                          "        len--;")},
    "V_LEN": {"Python": ("len(key) > MAX_LEN", "len(key) >= MAX_LEN"), "C": ("len > MAX_LEN", "len >= MAX_LEN")},
    "V_CHARS": {"Python": ('re.fullmatch(rb"[a-z0-9._/-]+", key)', 're.fullmatch(rb"[\\w./-]+", key)'),
                "C": ("!allowed((unsigned char)key[i])",
                      "!allowed((unsigned char)key[i]) && !isalnum((unsigned char)key[i])")},
    "V_EMPTY": {"Python": ("", "    segments = [s for s in segments if s]"),
                "C": ("", "            if (l > 0)")},
    "V_DEPTH": {"Python": ("len(segments) > MAX_DEPTH", 'key.count(b"/") > MAX_DEPTH'),
                "C": ("nseg > MAX_DEPTH", "slashes > MAX_DEPTH")},
    "V_DOT": {"Python": ('seg.startswith(b".")', 'seg in (b".", b"..")'),
              "C": ("seg[s][0] == '.'",
                    "(seglen[s] == 1 && seg[s][0] == '.') || (seglen[s] == 2 && seg[s][0] == '.' && seg[s][1] == '.')")},
    "V_DASH": {"Python": ('        if seg.startswith(b"-"):\n            return False', ""),
               "C": ("        if (seg[s][0] == '-')\n            return 0;", "")},
    "V_EXT": {"Python": (_EXT_PY_GOOD, _EXT_PY_BAD), "C": (_EXT_C_GOOD, _EXT_C_BAD)},
}

EXT_POOL = ["csv", "json", "txt", "parquet", "xml", "png", "log", "tsv"]
WORDS = ["reports", "daily", "raw", "exports", "img", "backup", "q3", "2024", "eu", "team", "archive", "tmp2",
         "inbox", "final", "v2", "sales", "metrics", "users", "north", "batch"]


def render(template: str, lang: str, planted: list[str], param: str, depth: int, exts: list[str]) -> str:
    src = template
    for bug, variants in BUGS.items():
        good, bad = variants[lang]
        snippet = bad if bug in planted else good
        # A slot on a line of its own whose snippet is empty disappears with its line.
        src = src.replace(f"<<{bug}>>\n", "") if snippet == "" else src.replace(f"<<{bug}>>", snippet)
    quoted = ", ".join(f'b"{e}"' if lang == "Python" else f'"{e}"' for e in exts)
    src = src.replace("<<PARAM>>", param).replace("<<DEPTH>>", str(depth)).replace("<<EXTS>>", quoted)
    if "<<" in src:
        raise FamilyError("unfilled slot in validator template")
    return src


def load(src: str):
    ns: dict = {"__name__": "tmax_reference"}
    exec(src, ns)  # noqa: S102 - our own reference program
    return ns["valid"]


def _segment(rng, min_len=1):
    w = rng.choice(WORDS)
    r = rng.random()
    if r < 0.2:
        w += rng.choice(["_", "-", "."]) + rng.choice(WORDS)
    elif r < 0.3:
        w += str(rng.randrange(100))
    elif r < 0.35:
        w += ".." + rng.choice(WORDS)
    return w


def clean_key(rng, maxlen, depth, exts, force_len=None, force_depth=None):
    for _ in range(200):
        d = force_depth or rng.randint(1, depth)
        segs = [_segment(rng) for _ in range(d)]
        segs[-1] = segs[-1] + "." + rng.choice(exts)
        key = "/".join(segs)
        if force_len:
            if len(key) > force_len:
                continue
            # pad the first segment up to the exact length
            pad = "x" * (force_len - len(key))
            if d == 1:
                stem, ext = segs[0].rsplit(".", 1)
                segs[0] = stem + pad + "." + ext
            else:
                segs[0] = segs[0] + pad
            key = "/".join(segs)
        if len(key) <= maxlen:
            return key
    raise FamilyError("could not make a clean key")


def malicious_keys(rng, maxlen, depth, exts):
    base = clean_key(rng, maxlen - 8, depth, exts, force_depth=min(2, depth))
    segs = base.split("/")
    ext = rng.choice(exts)
    bad_ext = rng.choice([e for e in EXT_POOL if e not in exts])
    out = [
        base + "\n", base + "\r\n", base.replace("/", "/\n", 1), "",
        base[:1].upper() + base[1:], segs[0] + "/" + segs[-1].upper(), base.replace("/", " /", 1),
        "/" + base, base.replace("/", "//", 1), base + "/", base.rsplit(".", 1)[0] + "/",
        "./" + base, "../" + base, segs[0] + "/../" + segs[-1], segs[0] + "/./" + segs[-1],
        "." + base, segs[0] + "/.env/" + segs[-1], "-" + base, segs[0] + "/-rf/" + segs[-1],
        "/".join([rng.choice(WORDS) for _ in range(depth)] + ["x." + ext]),
        "/".join(["a"] * depth + ["b." + ext]),
        base.rsplit(".", 1)[0], base + ".sh", base + "x", base.rsplit(".", 1)[0] + "." + bad_ext,
        segs[0] + "/" + ext, base.rsplit(".", 1)[0] + "_" + ext, segs[0] + "/." + ext,
        base.replace("/", "\\", 1), base.replace("/", "%2f", 1), segs[0] + "/caf\u00e9." + ext,
        base.replace("/", "/\x00", 1), "x" * (maxlen - 2 - len(ext)) + "ab." + ext,
        "/".join(["d"] * (depth - 1)) + "/" + "q" * (maxlen - 2 * depth - len(ext)) + "." + ext,
    ]
    return out


@register
class ValidatorBypass(Family):
    name = "validator_bypass"
    domain = "debugging"
    skill_types = ("Program Repair", "Failure Reproduction")
    primitive_skills = ("validator bypass analysis", "crafting adversarial inputs", "input canonicalisation bugs",
                        "boundary-value testing", "regular expression debugging", "off-by-one diagnosis")
    verifiers = ("adversarial_corpus", "exact_text", "metric_threshold", "multi_protocol")
    programs = {"Python": render(VALIDATOR_PY, "Python", [], PARAM, 4, ["csv"]),
                "C": render(VALIDATOR_C, "C", [], PARAM, 4, ["csv"])}
    languages = ("Python", "C")
    command_complexities = ("bash+code",)
    levels = {1: {"bugs": 2, "clean": 20, "submissions": 30},
              2: {"bugs": 3, "clean": 30, "submissions": 60},
              3: {"bugs": 4, "clean": 40, "submissions": 120},
              4: {"bugs": 6, "clean": 60, "submissions": 200}}

    def build(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        maxlen = rng.randint(40, 90)
        depth = rng.randint(3, 6)
        exts = sorted(rng.sample(EXT_POOL, rng.randint(2, 4)))
        planted = sorted(rng.sample(sorted(BUGS), k["bugs"]))
        good = load(render(VALIDATOR_PY, "Python", [], str(maxlen), depth, exts))

        # Fixtures: benign keys (edge cases included) and malicious keys, labelled by the reference.
        clean = [clean_key(rng, maxlen, depth, exts, force_len=maxlen),
                 clean_key(rng, maxlen, depth, exts, force_depth=depth)]
        while len(clean) < k["clean"]:
            clean.append(clean_key(rng, maxlen, depth, exts))
        for extra in (1, 3, 9):  # just under the limit
            clean.append(clean_key(rng, maxlen, depth, exts, force_len=maxlen - extra))
        bad = malicious_keys(rng, maxlen, depth, exts)
        for _ in range(3):
            bad += malicious_keys(rng, maxlen, depth, exts)
        for extra in (1, 2, 6, 12):  # just over the limit
            key = clean_key(rng, maxlen, depth, exts, force_len=maxlen)
            bad.append("z" * extra + key)
        clean = list(dict.fromkeys(c for c in clean if good(c.encode())))
        bad = list(dict.fromkeys(b for b in bad if not good(b.encode())))
        stale = maxlen + rng.choice([-10, -5, 5, 10])
        # Every planted defect, and the stale limit, must be caught by the corpora on its own.
        exposing: list[str] = []
        for bug, limit in [(b, maxlen) for b in planted] + [("none", stale)]:
            v = load(render(VALIDATOR_PY, "Python", [bug], str(limit), depth, exts))
            hits = [c for c in clean if not v(c.encode())] + [b for b in bad if v(b.encode())]
            if not hits:
                raise FamilyError(f"validator_bypass: defect {bug} is not exposed by the corpora")
            exposing += rng.sample(hits, min(2, len(hits)))
        policy = (f"The policy for an object key (the exact bytes submitted): (1) not empty and at most MAX_LEN "
                  "bytes long; "
                  f"(2) only the bytes `a-z`, `0-9`, `.`, `_`, `-` and `/`; (3) `/` separates segments, and no "
                  f"segment may be empty (so no leading, trailing or doubled `/`); (4) at most {depth} segments; "
                  "(5) no segment may start with `.` or `-`; (6) the last segment must end in an allowed "
                  "extension: the text after its last `.` is exactly one of "
                  + ", ".join(f"`{e}`" for e in exts) + ". Nothing else is tolerated: not even a trailing "
                  "newline.")

        if t.axes.verifier == "adversarial_corpus":
            langs = ["C"] if t.axes.language == "C" else ["Python", "C"] if t.axes.language == "multi-language" \
                else ["Python"]
            for lang in langs:
                src = VALIDATOR_PY if lang == "Python" else VALIDATOR_C
                t.add_file(f"/app/{PROGRAM_FILES[lang]}", render(src, lang, planted, str(stale), depth, exts))
            where = " and ".join(f"`/app/{PROGRAM_FILES[lang]}`" for lang in langs)
            t.say(f"Our upload gateway checks every object key with {where} (exit status 0: accept, 1: reject; "
                  "the key is the whole of standard input). " + policy)
            t.say("Keys that break the policy are getting through, and some customers say valid keys are refused. "
                  "The hard-coded MAX_LEN is also stale: use the value given below. Fix the validator so it "
                  "enforces the policy exactly.")
            var = t.deliver(str(maxlen), "the maximum key length")
            progs = {"Python": render(VALIDATOR_PY, "Python", [], PARAM, depth, exts),
                     "C": render(VALIDATOR_C, "C", [], PARAM, depth, exts)}
            t.expect_classifier("Fix the validator in place: the fixed file itself is what gets tested.",
                                clean, bad, progs)
            for lang in (["Python"] if t.axes.language == "any" else langs):
                t.solve(f'sed -i "s/{PARAM}/{var}/" /app/{PROGRAM_FILES[lang]}')
            return

        # Output variants: audit the verdicts the buggy validator recorded.
        lang = t.axes.language if t.axes.language in ("Python", "C") else "Python"
        buggy = load(render(VALIDATOR_PY, "Python", planted, str(stale), depth, exts))
        keys = exposing + [rng.choice(clean + bad) if rng.random() < 0.6 else clean_key(rng, maxlen, depth, exts)
                           for _ in range(k["submissions"] - len(exposing))]
        rng.shuffle(keys)
        rows = list(zip(sorted(rng.sample(range(10000, 99999), len(keys))), keys))
        log = "".join(json.dumps({"id": sid, "key": key, "verdict": "accepted" if buggy(key.encode()) else "rejected"})
                      + "\n" for sid, key in rows)
        wrong = sorted((sid, good(key.encode())) for sid, key in rows if good(key.encode()) != buggy(key.encode()))
        if not wrong:
            raise FamilyError("validator_bypass: no wrong verdicts in the log")
        truth = "".join(f"{sid} {'accepted' if ok else 'rejected'}\n" for sid, ok in wrong)
        ext = "py" if lang == "Python" else "c"
        t.add_file(f"/app/validator/keycheck.{ext}", render(VALIDATOR_PY if lang == "Python" else VALIDATOR_C,
                                                             lang, planted, str(stale), depth, exts))
        t.add_file("/app/data/submissions.jsonl", log)
        t.say(f"Our upload gateway checks every object key with `/app/validator/keycheck.{ext}` (exit status 0: "
              "accept, 1: reject; the key is the whole of standard input). "
              + policy.replace("MAX_LEN", "L (the maximum key length, given below)"))
        t.say("The validator is buggy. Every submission of the last week and the verdict it got are in "
              "`/app/data/submissions.jsonl` (one JSON object per line: `id`, `key`, `verdict`). Find every "
              "submission whose verdict contradicts the policy and report one line per such submission: the id, "
              "a space, and the verdict it should have received (`accepted` or `rejected`), sorted by id. "
              "Note that the validator still has an outdated maximum key length; the current one is given "
              "below.")
        var = t.deliver(str(maxlen), "the maximum key length")
        t.add_solution_file("keycheck.py", render(VALIDATOR_PY, "Python", [], PARAM, depth, exts))
        t.add_solution_file("audit.py", AUDIT)
        t.solve(f'sed "s/{PARAM}/{var}/" /solution/keycheck.py > /tmp/keycheck.py\nmkdir -p /app/out\n'
                "python3 /solution/audit.py /tmp/keycheck.py /app/data/submissions.jsonl > /app/out/wrong_verdicts.txt")
        t.expect_output("/app/out/wrong_verdicts.txt", truth, "the list of wrong verdicts")


AUDIT = r'''import json
import sys

ns = {"__name__": "keycheck"}
exec(open(sys.argv[1]).read(), ns)
rows = []
for line in open(sys.argv[2]):
    rec = json.loads(line)
    ok = ns["valid"](rec["key"].encode())
    if ok != (rec["verdict"] == "accepted"):
        rows.append((rec["id"], "accepted" if ok else "rejected"))
for sid, verdict in sorted(rows):
    print(sid, verdict)
'''
