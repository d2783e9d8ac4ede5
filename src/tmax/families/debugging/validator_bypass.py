"""An upload gateway's object-key validator lets bad keys through (and may refuse good ones). The
policy is documented rule by rule; the validator (Python or C) carries two to six planted defects:
a trailing newline tolerated, uppercase allowed, empty segments skipped, hidden or dash-led segments
let through, an extension matched as a substring, depth counted by slashes, an over-strict length
check. Either fix the validator so it rejects every malicious key of a hidden corpus and keeps every
benign one (adversarial_corpus), or audit its recorded verdicts and list the wrong ones. Variants:
repair (that), bypasses (leave the deployed validator alone: an alarm that rejects exactly the keys it
wrongly accepts, or the wrongly accepted submissions with the first policy rule each breaks) and
false_rejects (a triage check for the keys it wrongly refuses, or the ids of those submissions). The
deployed limit is laxer than the policy's for bypasses and stricter for false_rejects, so both have
something to find at every level."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tmax.families.base import PROGRAM_FILES, Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

PARAM = "@@PARAM@@"  # MAX_LEN in the oracle's copy: its commands put the delivered value in

# A slot at the start of a line (V_TRAIL, V_EMPTY, V_DASH) holds whole lines, each ending in a newline,
# or nothing.
VALIDATOR_PY = r'''import re
import sys

MAX_LEN = @PARAM@
MAX_DEPTH = @DEPTH@
EXTENSIONS = (@EXTS@,)


def valid(key):
@V_TRAIL@    if len(key) == 0 or @V_LEN@:
        return False
    if not @V_CHARS@:
        return False
    segments = key.split(b"/")
@V_EMPTY@    if @V_DEPTH@:
        return False
    if not segments:
        return False
    for seg in segments:
        if not seg:
            return False
        if @V_DOT@:
            return False
@V_DASH@    last = segments[-1]
@V_EXT@


if __name__ == "__main__":
    sys.exit(0 if valid(sys.stdin.buffer.read()) else 1)
'''

VALIDATOR_C = r'''#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define MAX_LEN @PARAM@
#define MAX_DEPTH @DEPTH@

static const char *EXTENSIONS[] = {@EXTS@, NULL};

static int allowed(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '/';
}

static int valid(const char *key, size_t len) {
@V_TRAIL@    if (len == 0 || @V_LEN@)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (@V_CHARS@)
            return 0;
    const char *seg[512];
    size_t seglen[512], nseg = 0, slashes = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || key[i] == '/') {
            size_t l = i - start;
            if (i < len)
                slashes++;
@V_EMPTY@            {
                seg[nseg] = key + start;
                seglen[nseg] = l;
                nseg++;
            }
            start = i + 1;
        }
    }
    if (@V_DEPTH@)
        return 0;
    if (nseg == 0)
        return 0;
    for (size_t s = 0; s < nseg; s++) {
        if (seglen[s] == 0)
            return 0;
        if (@V_DOT@)
            return 0;
@V_DASH@    }
    const char *last = seg[nseg - 1];
    size_t ll = seglen[nseg - 1];
@V_EXT@
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
    "V_TRAIL": {"Python": ("", '    key = key.rstrip(b"\\n")  # clients often send a trailing newline\n'),
                "C": ("", "    while (len > 0 && key[len - 1] == '\\n') /* clients often send a trailing newline */\n"
                          "        len--;\n")},
    "V_LEN": {"Python": ("len(key) > MAX_LEN", "len(key) >= MAX_LEN"), "C": ("len > MAX_LEN", "len >= MAX_LEN")},
    "V_CHARS": {"Python": ('re.fullmatch(rb"[a-z0-9._/-]+", key)', 're.fullmatch(rb"[\\w./-]+", key)'),
                "C": ("!allowed((unsigned char)key[i])",
                      "!allowed((unsigned char)key[i]) && !isalnum((unsigned char)key[i])")},
    "V_EMPTY": {"Python": ("", "    segments = [s for s in segments if s]\n"),
                "C": ("", "            if (l > 0)\n")},
    "V_DEPTH": {"Python": ("len(segments) > MAX_DEPTH", 'key.count(b"/") > MAX_DEPTH'),
                "C": ("nseg > MAX_DEPTH", "slashes > MAX_DEPTH")},
    "V_DOT": {"Python": ('seg.startswith(b".")', 'seg in (b".", b"..")'),
              "C": ("seg[s][0] == '.'",
                    "(seglen[s] == 1 && seg[s][0] == '.') || (seglen[s] == 2 && seg[s][0] == '.' && seg[s][1] == '.')")},
    "V_DASH": {"Python": ('        if seg.startswith(b"-"):\n            return False\n', ""),
               "C": ("        if (seg[s][0] == '-')\n            return 0;\n", "")},
    "V_EXT": {"Python": (_EXT_PY_GOOD, _EXT_PY_BAD), "C": (_EXT_C_GOOD, _EXT_C_BAD)},
}

EXT_POOL = ["csv", "json", "txt", "parquet", "xml", "png", "log", "tsv"]
WORDS = ["reports", "daily", "raw", "exports", "img", "backup", "q3", "2024", "eu", "team", "archive", "tmp2",
         "inbox", "final", "v2", "sales", "metrics", "users", "north", "batch"]


def render(lang: str, planted: list[str], param: str, depth: int, exts: tuple[str, ...]) -> str:
    """The validator in ``lang``: each bug slot gets the buggy snippet if planted, the correct one otherwise."""
    slots = {bug: variants[lang][1 if bug in planted else 0] for bug, variants in BUGS.items()}
    quoted = ", ".join(f'b"{e}"' if lang == "Python" else f'"{e}"' for e in exts)
    return fill(VALIDATOR_PY if lang == "Python" else VALIDATOR_C, PARAM=param, DEPTH=depth, EXTS=quoted, **slots)


def alarm_src(lang: str, d: dict, bypasses: bool) -> str:
    """The alarm's reference: the correct validator and the deployed one (renamed, its own limits), side by side."""
    policy = render(lang, [], PARAM, d["depth"], d["exts"])
    deployed = render(lang, d["planted"], str(d["stale"]), d["depth"], d["exts"])
    if lang == "Python":
        deployed = deployed.replace("MAX_LEN", "OLD_MAX_LEN").replace("def valid(", "def deployed(")
        flag = "deployed(key) and not valid(key)" if bypasses else "valid(key) and not deployed(key)"
        return (policy.split("\n\nif __name__")[0] + "\n\n" + deployed.split("\n\nif __name__")[0]
                + "\n\n\nif __name__ == \"__main__\":\n    key = sys.stdin.buffer.read()\n"
                f"    sys.exit(1 if {flag} else 0)\n")
    for name in ("MAX_LEN", "MAX_DEPTH", "EXTENSIONS"):
        deployed = deployed.replace(name, "OLD_" + name)
    deployed = deployed.replace("allowed(", "old_allowed(").replace("int valid(", "int old_valid(")
    flag = "old_valid(buf, len) && !valid(buf, len)" if bypasses else "valid(buf, len) && !old_valid(buf, len)"
    main = ("int main(void) {\n    static char buf[8192];\n    size_t len = fread(buf, 1, sizeof buf, stdin);\n"
            "    if (len == sizeof buf)\n        return " + ("1" if bypasses else "0") + ";\n"
            f"    return ({flag}) ? 1 : 0;\n}}\n")
    return policy.split("\nint main(void)")[0] + "\n" + deployed.split("\nint main(void)")[0] + "\n" + main


def load(src: str):
    """The ``valid`` (key bytes -> bool) of a filled Python validator."""
    return run_python(src)["valid"]


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


@dataclass(frozen=True)
class Knobs:
    bugs: int  # planted defects
    clean: int  # benign keys drawn for the corpora (edge cases come on top)
    submissions: int  # logged submissions to audit (output case)


@register
class ValidatorBypass(Family):
    name = "validator_bypass"
    domain = "debugging"
    skill_types = ("Program Repair", "Failure Reproduction")
    primitive_skills = ("validator bypass analysis", "crafting adversarial inputs", "input canonicalisation bugs",
                        "boundary-value testing", "regular expression debugging", "off-by-one diagnosis")
    verifiers = ("adversarial_corpus", "exact_text", "metric_threshold", "multi_protocol")
    variants = ("repair", "bypasses", "false_rejects")
    programs = {lang: render(lang, [], PARAM, 4, ("csv",)) for lang in ("Python", "C")}
    languages = ("Python", "C")
    command_complexities = ("bash+code",)
    levels = {0: Knobs(bugs=0, clean=10, submissions=16),
              1: Knobs(bugs=2, clean=20, submissions=30), 2: Knobs(bugs=3, clean=30, submissions=60),
              3: Knobs(bugs=4, clean=40, submissions=120), 4: Knobs(bugs=6, clean=60, submissions=200)}

    def draw(self, t: TaskBuilder) -> dict:
        """The policy's values, the planted defects and the corpora (labelled by the reference), shared
        by both cases."""
        k, rng = t.knobs, t.rng
        maxlen = rng.randint(40, 90)
        depth = rng.randint(3, 6)
        exts = tuple(sorted(rng.sample(EXT_POOL, rng.randint(2, 4))))
        planted = sorted(rng.sample(sorted(BUGS), k.bugs))
        good = load(render("Python", [], str(maxlen), depth, exts))
        # Benign keys (edge cases included) and malicious keys, labelled by the reference. A key of
        # exactly MAX_LEN bytes and one of MAX_LEN + 1 always come in: any other limit misjudges one.
        edge = clean_key(rng, maxlen, depth, exts, force_len=maxlen)
        clean = [edge, clean_key(rng, maxlen, depth, exts, force_depth=depth)]
        clean += [clean_key(rng, maxlen, depth, exts) for _ in range(k.clean - len(clean))]
        for extra in (1, 3, 9):  # just under the limit
            clean.append(clean_key(rng, maxlen, depth, exts, force_len=maxlen - extra))
        bad = ["z" + edge]
        for _ in range(4):
            bad += malicious_keys(rng, maxlen, depth, exts)
        for extra in (1, 2, 6, 12):  # just over the limit
            key = clean_key(rng, maxlen, depth, exts, force_len=maxlen)
            bad.append("z" * extra + key)
        clean = list(dict.fromkeys(c for c in clean if good(c.encode())))
        bad = list(dict.fromkeys(b for b in bad if not good(b.encode())))
        stale = maxlen + rng.choice([-10, -5, 5, 10])
        if t.variant != "repair":  # bypasses needs a laxer deployed limit (keys just over slip through), false_rejects a stricter one
            stale = maxlen + abs(stale - maxlen) * (1 if t.variant == "bypasses" else -1)
        # Every planted defect, and the stale limit, must be caught by the corpora on its own.
        exposing = [edge, "z" + edge]
        for bug, limit in [(b, maxlen) for b in planted] + [("none", stale)]:
            v = load(render("Python", [bug], str(limit), depth, exts))
            hits = [c for c in clean if not v(c.encode())] + [b for b in bad if v(b.encode())]
            if not hits:
                raise FamilyError(f"validator_bypass: defect {bug} is not exposed by the corpora")
            exposing += rng.sample(hits, min(2, len(hits)))
        policy = ("The policy for an object key (the exact bytes submitted): (1) not empty and at most MAX_LEN "
                  "bytes long; "
                  "(2) only the bytes `a-z`, `0-9`, `.`, `_`, `-` and `/`; (3) `/` separates segments, and no "
                  "segment may be empty (so no leading, trailing or doubled `/`); (4) at most "
                  f"{depth} segments; "
                  "(5) no segment may start with `.` or `-`; (6) the last segment must end in an allowed "
                  "extension: the text after its last `.` is exactly one of "
                  + ", ".join(f"`{e}`" for e in exts) + ". Nothing else is tolerated: not even a trailing "
                  "newline.")
        return {"maxlen": maxlen, "depth": depth, "exts": exts, "planted": planted, "stale": stale,
                "good": good, "clean": clean, "bad": bad, "exposing": exposing, "policy": policy}

    def corpus_case(self, t: TaskBuilder) -> None:
        d = self.draw(t)
        if t.variant != "repair":
            return self._alarm(t, d)
        langs = ["C"] if t.axes.language == "C" else ["Python", "C"] if t.axes.language == "multi-language" \
            else ["Python"]
        for lang in langs:
            t.add_file(f"/app/{PROGRAM_FILES[lang]}",
                       render(lang, d["planted"], str(d["stale"]), d["depth"], d["exts"]))
        where = " and ".join(f"`/app/{PROGRAM_FILES[lang]}`" for lang in langs)
        t.say(f"Our upload gateway checks every object key with {where} (exit status 0: accept, 1: reject; "
              "the key is the whole of standard input). " + d["policy"])
        if t.level == 0:  # no planted defect: only the limit is out of date
            t.say("The validator is correct except that its hard-coded MAX_LEN is stale: set it to the value given "
                  "below.")
        else:
            t.say("Keys that break the policy are getting through, and some customers say valid keys are refused. "
                  "The hard-coded MAX_LEN is also stale: use the value given below. Fix the validator so it "
                  "enforces the policy exactly.")
        var = t.deliver(str(d["maxlen"]), "the maximum key length")
        progs = {lang: render(lang, [], PARAM, d["depth"], d["exts"]) for lang in ("Python", "C")}
        t.expect_classifier("Fix the validator in place: the fixed file itself is what gets tested.",
                            d["clean"], d["bad"], progs)
        for lang in (["Python"] if t.axes.language == "any" else langs):
            t.solve(f'sed -i "s/{PARAM}/{var}/" /app/{PROGRAM_FILES[lang]}')

    def _alarm(self, t: TaskBuilder, d: dict) -> None:
        """bypasses / false_rejects as a classifier: leave the deployed validator alone and flag the keys it
        wrongly accepts (an intrusion alarm) or wrongly refuses (complaints to honour)."""
        langs = ["C"] if t.axes.language == "C" else ["Python", "C"] if t.axes.language == "multi-language" \
            else ["Python"]
        for lang in langs:
            t.add_file(f"/app/validator/keycheck.{'py' if lang == 'Python' else 'c'}",
                       render(lang, d["planted"], str(d["stale"]), d["depth"], d["exts"]))
        deployed = load(render("Python", d["planted"], str(d["stale"]), d["depth"], d["exts"]))
        good = d["good"]
        bypasses = t.variant == "bypasses"

        def flagged(key: str) -> bool:
            return deployed(key.encode()) and not good(key.encode()) if bypasses else \
                good(key.encode()) and not deployed(key.encode())

        keys = d["clean"] + d["bad"]
        where = " and ".join(f"`/app/validator/keycheck.{'py' if lang == 'Python' else 'c'}`" for lang in langs)
        t.say(f"Our upload gateway checks every object key with {where} (exit status 0: accept, 1: reject; the key "
              "is the whole of standard input); it is deployed and stays as it is, outdated hard-coded MAX_LEN "
              "included" + (" (and, perhaps, other defects)." if t.level else ".") + " " + d["policy"])
        t.say("We want an alarm beside it: a checker that rejects (exit 1) exactly the keys the deployed validator "
              "accepts although the policy forbids them, and accepts (exit 0) every other key." if bypasses else
              "Customers complain about refused uploads. We want a triage check: it rejects (exit 1) exactly the "
              "keys the deployed validator refuses although the policy allows them, and accepts (exit 0) every "
              "other key.")
        var = t.deliver(str(d["maxlen"]), "the current maximum key length (MAX_LEN of the policy)")
        progs = {lang: alarm_src(lang, d, bypasses) for lang in ("Python", "C")}
        t.expect_classifier("The deployed validator is not to be changed: write the new checker as its own "
                            "program.", [k for k in keys if not flagged(k)], [k for k in keys if flagged(k)], progs)
        for lang in (["Python"] if t.axes.language == "any" else langs):
            t.solve(f'sed -i "s/{PARAM}/{var}/" /app/{PROGRAM_FILES[lang]}')

    def output_case(self, t: TaskBuilder) -> None:
        """Audit the verdicts the buggy validator recorded. Under partial credit a wrong limit would still
        earn every line it leaves alone: there the limit is stated, and the delivered value is the code of
        our gateway, whose log is filed among other gateways' logs under a digest of it."""
        d = self.draw(t)
        k, rng = t.knobs, t.rng
        maxlen, depth, exts, good = d["maxlen"], d["depth"], d["exts"], d["good"]
        lang = t.axes.language if t.axes.language in ("Python", "C") else "Python"
        buggy = load(render("Python", d["planted"], str(d["stale"]), depth, exts))
        exposing, pool = d["exposing"], d["clean"] + d["bad"]
        n_logs = 3 if t.partial_credit else 1
        ids = iter(sorted(rng.sample(range(10000, 99999), k.submissions * n_logs)))

        def log_of(keys: list[str]) -> tuple[str, list[tuple[int, str]]]:
            rng.shuffle(keys)
            rows = sorted((next(ids), key) for key in keys)
            return "".join(json.dumps({"id": sid, "key": key, "verdict": "accepted" if buggy(key.encode())
                                       else "rejected"}) + "\n" for sid, key in rows), rows

        def keys_of(n: int) -> list[str]:
            return [rng.choice(pool) if rng.random() < 0.6 else clean_key(rng, maxlen, depth, exts) for _ in range(n)]

        log, rows = log_of(exposing + keys_of(k.submissions - len(exposing)))
        wrong = sorted((sid, good(key.encode())) for sid, key in rows if good(key.encode()) != buggy(key.encode()))
        if t.variant == "bypasses":  # the wrongly accepted ones, each with the first rule it breaks
            first_rule = run_python(TRIAGE)["first_rule"]
            keys = dict(rows)
            wrong = [(sid, first_rule(keys[sid].encode(), maxlen, depth, exts)) for sid, ok in wrong if not ok]
        elif t.variant == "false_rejects":
            wrong = [(sid, ok) for sid, ok in wrong if ok]
        if t.variant != "repair" and any((run_python(TRIAGE)["first_rule"](key.encode(), maxlen, depth, exts) == 0)
                                         != good(key.encode()) for _, key in rows):
            raise FamilyError("validator_bypass: the rule-by-rule check disagrees with the validator")
        if not wrong:
            raise FamilyError("validator_bypass: no wrong verdicts in the log")
        truth = "".join(f"{sid} {'accepted' if ok else 'rejected'}\n" for sid, ok in wrong) if t.variant == "repair" \
            else "".join(f"{sid} {rule}\n" if t.variant == "bypasses" else f"{sid}\n" for sid, rule in wrong)
        ext = "py" if lang == "Python" else "c"
        t.add_file(f"/app/validator/keycheck.{ext}", render(lang, d["planted"], str(d["stale"]), depth, exts))
        if t.partial_credit:
            logs = [log] + [log_of(keys_of(k.submissions))[0] for _ in range(n_logs - 1)]
            code = unseen(t, t.code, *logs)
            names = [key_of(c) for c in [code, *distinct(t.code, n_logs - 1, taken=[code])]]
            for name, text in zip(names, logs):
                t.add_file(f"/app/data/{name}/submissions.jsonl", text)
            where = ("`/app/data/<digest>/submissions.jsonl`, where the digest is the first 16 hex digits of the "
                     "SHA-256 of our gateway's code, given below (the other folders hold other gateways' logs)")
            value = (f"Note that the validator still has an outdated maximum key length; the current one is {maxlen}.",
                     code, "our gateway's code", f"L (the maximum key length, {maxlen})")
        else:
            t.add_file("/app/data/submissions.jsonl", log)
            where = "`/app/data/submissions.jsonl`"
            value = ("Note that the validator still has an outdated maximum key length; the current one is given "
                     "below.", str(maxlen), "the maximum key length", "L (the maximum key length, given below)")
        t.say(f"Our upload gateway checks every object key with `/app/validator/keycheck.{ext}` (exit status 0: "
              "accept, 1: reject; the key is the whole of standard input). " + d["policy"].replace("MAX_LEN", value[3]))
        t.say(("Apart from its maximum key length the validator is correct." if t.level == 0 else
               "The validator is buggy.") + " Every submission of the last week to our gateway and the verdict it "
              f"got are in {where} (one JSON object per line: `id`, `key`, `verdict`). " + REPORT[t.variant]
              + " " + value[0])
        var = t.deliver(value[1], value[2])
        out = "/app/out/" + ("wrong_verdicts" if t.variant == "repair" else t.variant) + ".txt"
        t.add_solution_file("audit.py", AUDIT if t.variant == "repair" else TRIAGE)
        if t.partial_credit:
            t.add_solution_file("keycheck.py", render("Python", [], str(maxlen), depth, exts))
            fetch = (f'test -n "{var}"\nlog=/app/data/{key_cmd(var)}/submissions.jsonl\ntest -f "$log"\n'
                     "cp /solution/keycheck.py /tmp/keycheck.py\n")
        else:
            t.add_solution_file("keycheck.py", render("Python", [], PARAM, depth, exts))
            fetch = f'log=/app/data/submissions.jsonl\nsed "s/{PARAM}/{var}/" /solution/keycheck.py > /tmp/keycheck.py\n'
        t.solve(fetch + 'mkdir -p /app/out\npython3 /solution/audit.py /tmp/keycheck.py "$log"'
                + ("" if t.variant == "repair" else f" {t.variant}") + f" > {out}")
        t.expect_output(out, truth, "the list of wrong verdicts")


AUDIT = r'''import json
import runpy
import sys

valid = runpy.run_path(sys.argv[1], run_name="keycheck")["valid"]
rows = []
for line in open(sys.argv[2]):
    rec = json.loads(line)
    ok = valid(rec["key"].encode())
    if ok != (rec["verdict"] == "accepted"):
        rows.append((rec["id"], "accepted" if ok else "rejected"))
for sid, verdict in sorted(rows):
    print(sid, verdict)
'''


# The other variants' audit: the wrongly accepted submissions with the first (lowest-numbered) policy rule
# each breaks, or the ids of the wrongly rejected ones.
TRIAGE = r"""import json
import re
import runpy
import sys


def first_rule(key, max_len, max_depth, extensions):
    # 0 when the key keeps the policy
    if not key or len(key) > max_len:
        return 1
    if not re.fullmatch(rb"[a-z0-9._/-]+", key):
        return 2
    segments = key.split(b"/")
    if not all(segments):
        return 3
    if len(segments) > max_depth:
        return 4
    if any(seg[:1] in (b".", b"-") for seg in segments):
        return 5
    stem, dot, ext = segments[-1].rpartition(b".")
    return 0 if dot and ext.decode() in extensions else 6


if __name__ == "__main__":
    m = runpy.run_path(sys.argv[1], run_name="keycheck")
    limits = (m["MAX_LEN"], m["MAX_DEPTH"], tuple(e.decode() for e in m["EXTENSIONS"]))
    for line in open(sys.argv[2]):
        rec = json.loads(line)
        rule = first_rule(rec["key"].encode(), *limits)
        if sys.argv[3] == "bypasses" and rule and rec["verdict"] == "accepted":
            print(rec["id"], rule)
        elif sys.argv[3] == "false_rejects" and not rule and rec["verdict"] == "rejected":
            print(rec["id"])
"""

REPORT = {
    "repair": "Find every submission whose verdict contradicts the policy and report one line per such submission: "
              "the id, a space, and the verdict it should have received (`accepted` or `rejected`), sorted by id.",
    "bypasses": "Find every submission that was accepted although it breaks the policy and report one line per such "
                "submission: the id, a space, and the number of the first rule it breaks (the lowest-numbered one, "
                "1 to 6, as numbered above), sorted by id.",
    "false_rejects": "Find every submission that was rejected although the policy allows it and report the id of "
                     "each such submission, one per line, sorted by id.",
}
