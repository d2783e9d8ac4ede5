"""Is a vendor's labelled batch safe to train on? Screen batches against a reference profile: padded
duplicates, too many invalid rows, a label distribution that fails a chi-square goodness-of-fit test,
or a feature whose batch mean drifted too many standard errors from the reference mean.
Variants: screen_verdicts (each batch's first failing check and its drift headroom), label_fit (the chi-square
label test alone against a delivered limit: fit or shift, headroom and the class that deviates most; at level
0 the statistic of one batch) and drift_features (every drifted (batch, feature) pair with its signed z,
ranked; at level 0 one feature's z). The corpora of the new variants let the other test's failures pass;
their report programs are in _batch_drift_screen_refs.py."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

from tmax.families import unseen
from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.data_science import _batch_drift_screen_refs as refs
from tmax.families.programs import C_SPLIT, C_TRIM, fill, run_python

# @@ZMILLI@@ is the delivered threshold: the oracle puts it in (the report mode takes it as an argument).
CORE = r'''
import json
import math
import sys

PROFILE = @PROFILE@
ZMILLI = "@@ZMILLI@@"  # the drift threshold Z in thousandths (digits)
CHI2_LIMIT = @CHI2@
CHECK_INVALID = @INVALID@
CHECK_DUPES = @DUPES@
SCREEN = @SCREEN@  # always screen one batch from standard input (exit 0 = ok)


def z_limit(zmilli=None):
    text = zmilli or ZMILLI
    if not text.isdigit():
        raise SystemExit("Z must be given in thousandths (digits), got %r" % text)
    return int(text) / 1000


def parse(text, prof):
    """-> (ids of all data rows, valid rows as (feature values in profile order, label))."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = [h.strip() for h in lines[0].split(",")]
    cols = [header.index(f) for f in prof["features"]]
    ids, valid = [], []
    for line in lines[1:]:
        r = [p.strip() for p in line.split(",")]
        ids.append(r[0])
        if len(r) != len(header) or r[header.index("label")] not in prof["labels"]:
            continue
        try:
            xs = [float(r[c]) for c in cols]
        except ValueError:
            continue
        if all(math.isfinite(x) for x in xs):
            valid.append((xs, r[header.index("label")]))
    return ids, valid


def stats(valid, prof):
    """(chi-square statistic of the labels, largest feature z) of the valid rows."""
    n = len(valid)
    chi2 = 0.0
    for c, p in prof["labels"].items():
        observed = sum(1 for _, lab in valid if lab == c)
        chi2 += (observed - n * p) ** 2 / (n * p)
    zs = []
    for j, f in enumerate(prof["features"].values()):
        mean = sum(xs[j] for xs, _ in valid) / n
        zs.append(abs(mean - f["mean"]) / (f["std"] / math.sqrt(n)))
    return chi2, max(zs)


def fmt(x):
    s = "%.3f" % x
    return "0.000" if s == "-0.000" else s


def headroom(text, profile=None, zmilli=None):
    """Z minus the largest feature z of the valid rows: how far the batch is from drifting."""
    prof = profile or PROFILE
    return z_limit(zmilli) - stats(parse(text, prof)[1], prof)[1]


def verdict(text, profile=None, zmilli=None):
    prof = profile or PROFILE
    ids, valid = parse(text, prof)
    if CHECK_DUPES and len(set(ids)) != len(ids):
        return "duplicates"
    if CHECK_INVALID and 10 * (len(ids) - len(valid)) > len(ids):
        return "invalid"
    chi2, z = stats(valid, prof)
    if chi2 > CHI2_LIMIT:
        return "label_shift"
    if z > z_limit(zmilli):
        return "feature_drift"
    return "ok"
'''

REFERENCE_MAIN = r'''

if __name__ == "__main__":
    if SCREEN or (len(sys.argv) > 1 and sys.argv[1] == "--screen"):
        sys.exit(0 if verdict(sys.stdin.read()) == "ok" else 1)
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            prof = json.load(f)
        for path in sys.argv[3:]:
            with open(path) as f:
                text = f.read()
            print(path.rsplit("/", 1)[-1], verdict(text, prof, sys.argv[2]), fmt(headroom(text, prof, sys.argv[2])))
'''
REFERENCE = CORE + REFERENCE_MAIN

# The screen in C, for program-writing variants in C or in two languages; the profile is filled in per task.
C_REFERENCE = r'''
/* Screens one labelled batch (standard input) against the reference profile: exit 0 = ok, 1 = rejected. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define Z_LIMIT @ZLIM@
#define CHI2_LIMIT @CHI2@
#define CHECK_INVALID @INVALID@
#define CHECK_DUPES @DUPES@
#define NFEAT @NFEAT@
#define NCLASS @NCLASS@
#define MAXF 64
static const char *FEATURES[NFEAT] = {@FEATNAMES@};
static const double MEANS[NFEAT] = {@MEANS@};
static const double STDS[NFEAT] = {@STDS@};
static const char *CLASSES[NCLASS] = {@CLASSES@};
static const double PROPS[NCLASS] = {@PROPS@};

@C_TRIM@

@C_SPLIT@

static int is_blank(const char *s) {
    for (; *s; s++)
        if (!isspace((unsigned char)*s)) return 0;
    return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(void) {
    size_t cap = 1 << 16, len = 0, r;
    char *buf = malloc(cap);
    while ((r = fread(buf + len, 1, cap - len - 1, stdin)) > 0) {
        len += r;
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[len] = 0;
    int nlines = 0, lcap = 1024;
    char **lines = malloc(lcap * sizeof(char *));
    for (char *p = buf; p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        if (!is_blank(p)) {
            if (nlines == lcap) lines = realloc(lines, (lcap *= 2) * sizeof(char *));
            lines[nlines++] = p;
        }
        p = nl ? nl + 1 : NULL;
    }
    if (nlines == 0) return 1;
    char *header[MAXF];
    int nh = split(lines[0], header, MAXF), col[NFEAT], lab_col = -1;
    if (nh > MAXF) return 1;
    for (int j = 0; j < nh; j++)
        if (!strcmp(header[j], "label")) { lab_col = j; break; }
    for (int f = 0; f < NFEAT; f++) {
        col[f] = -1;
        for (int j = 0; j < nh; j++)
            if (!strcmp(header[j], FEATURES[f])) { col[f] = j; break; }
        if (col[f] < 0 || lab_col < 0) return 1;
    }
    int nrows = nlines - 1, nvalid = 0;
    char **ids = malloc((nrows + 1) * sizeof(char *));
    double *x = malloc(((size_t)nrows * NFEAT + 1) * sizeof(double));
    int *lab = malloc((nrows + 1) * sizeof(int));
    for (int i = 0; i < nrows; i++) {
        char *f[MAXF];
        int n = split(lines[i + 1], f, MAXF);
        ids[i] = f[0];
        if (n != nh) continue;
        int c = -1;
        for (int k = 0; k < NCLASS; k++)
            if (!strcmp(f[lab_col], CLASSES[k])) c = k;
        if (c < 0) continue;
        int ok = 1;
        for (int k = 0; k < NFEAT && ok; k++) {
            char *end;
            const char *t = f[col[k]];
            double v = strtod(t, &end);
            if (!*t || *end || !isfinite(v)) ok = 0;
            x[(size_t)nvalid * NFEAT + k] = v;
        }
        if (!ok) continue;
        lab[nvalid++] = c;
    }
    if (CHECK_DUPES) {
        char **sorted = malloc((nrows + 1) * sizeof(char *));
        memcpy(sorted, ids, nrows * sizeof(char *));
        qsort(sorted, nrows, sizeof(char *), cmp_str);
        for (int i = 1; i < nrows; i++)
            if (!strcmp(sorted[i], sorted[i - 1])) return 1;
    }
    if (CHECK_INVALID && 10 * (nrows - nvalid) > nrows) return 1;
    double chi2 = 0.0;
    for (int k = 0; k < NCLASS; k++) {
        int obs = 0;
        for (int i = 0; i < nvalid; i++) obs += lab[i] == k;
        double e = nvalid * PROPS[k];
        chi2 += (obs - e) * (obs - e) / e;
    }
    if (chi2 > CHI2_LIMIT) return 1;
    for (int k = 0; k < NFEAT; k++) {
        double sum = 0;
        for (int i = 0; i < nvalid; i++) sum += x[(size_t)i * NFEAT + k];
        if (fabs(sum / nvalid - MEANS[k]) / (STDS[k] / sqrt((double)nvalid)) > Z_LIMIT) return 1;
    }
    return 0;
}
'''


def c_screen(prof: dict, chi2: float | str, invalid: bool, dupes: bool, zlim: str = "(@@ZMILLI@@ / 1000.0)") -> str:
    """The C screen; ``chi2`` and ``zlim`` may be C expressions (HUGE_VAL turns a check off)."""
    feats, classes = list(prof["features"]), list(prof["labels"])
    return fill(C_REFERENCE, CHI2=chi2 if isinstance(chi2, str) else repr(chi2), ZLIM=zlim,
                INVALID="1" if invalid else "0", DUPES="1" if dupes else "0",
                NFEAT=str(len(feats)), NCLASS=str(len(classes)), FEATNAMES=", ".join(f'"{f}"' for f in feats),
                MEANS=", ".join(repr(float(prof["features"][f]["mean"])) for f in feats),
                STDS=", ".join(repr(float(prof["features"][f]["std"])) for f in feats),
                CLASSES=", ".join(f'"{c}"' for c in classes),
                PROPS=", ".join(repr(float(prof["labels"][c])) for c in classes), C_TRIM=C_TRIM, C_SPLIT=C_SPLIT)


FEATURES = ("brightness", "contrast", "blur_score", "edge_density", "saturation", "aspect_ratio")
CLASSES = ("cat", "dog", "bird", "fish")
CHI2_CRIT = {2: 13.816, 3: 16.266}  # chi-square critical values at alpha = 0.001 for 2 and 3 degrees of freedom
Z_WHAT = "the drift threshold Z in thousandths (e.g. 2500 means Z = 2.500)"


# Level 0: one feature and one cutoff, so the task is a single awk filter (count, or reject on any row).
# @@CUT@@ is the delivered cutoff in thousandths; the output case passes it on the command line.
ATOMIC = r'''
import sys

FEATURE = @FEATURE@
CUT = "@@CUT@@"  # the cutoff in thousandths (digits)


def over(text, cut=None):
    # Values have 3 decimals: in thousandths they compare exactly.
    c = int(cut or CUT)
    lines = [line for line in text.splitlines() if line.strip()]
    col = [h.strip() for h in lines[0].split(",")].index(FEATURE)
    return sum(1 for line in lines[1:] if round(float(line.split(",")[col]) * 1000) > c)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        with open(sys.argv[1]) as f:
            print(over(f.read(), sys.argv[2]))
    else:
        sys.exit(1 if over(sys.stdin.read()) else 0)
'''

C_ATOMIC = r'''
/* Rejects a batch (standard input) with any row whose feature value exceeds the cutoff: exit 1, else 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUT (@@CUT@@LL) /* thousandths */
static const char *FEATURE = "@FEATURE@";

int main(void) {
    static char line[65536];
    int col = -1, header = 1;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line) continue;
        char *f[64], *p = line;
        int n = 0;
        f[n++] = p;
        while (n < 64 && (p = strchr(p, ','))) {
            *p++ = 0;
            f[n++] = p;
        }
        if (header) {
            header = 0;
            for (int i = 0; i < n; i++)
                if (!strcmp(f[i], FEATURE)) col = i;
            if (col < 0) return 1;
            continue;
        }
        if (col < n && llround(strtod(f[col], NULL) * 1000) > CUT) return 1;
    }
    return 0;
}
'''
CUT_WHAT = "the cutoff in thousandths (e.g. 2500 means 2.500)"
SHARE_WHAT = "the share in ten-thousandths (e.g. 625 means 0.0625)"
LIMIT_WHAT = "the chi-square limit in millionths (e.g. 12500000 means 12.5)"


@dataclass(frozen=True)
class Knobs:
    batches: int  # batch files in the output case
    rows: tuple[int, int]  # data lines per batch: [low, high)
    classes: int  # label classes in the profile
    features: int  # features in the profile
    invalid: bool  # invalid rows, and the `invalid` check
    dupes: bool  # padded duplicate ids, and the `duplicates` check
    z: float  # the drift threshold Z is drawn within 0.3 of this


def make_profile(rng, k: Knobs) -> dict:
    classes = list(CLASSES[:k.classes])
    weights = [rng.uniform(1, 3) for _ in classes]
    props = [round(w / sum(weights), 2) for w in weights]
    props[-1] = round(1 - sum(props[:-1]), 2)
    feats = rng.sample(FEATURES, k.features)
    return {"labels": dict(zip(classes, props)),
            "features": {f: {"mean": round(rng.uniform(0.5, 120), 2), "std": round(rng.uniform(0.2, 25), 2)}
                         for f in feats}}


def make_batch(rng, prof: dict, k: Knobs, kind: str) -> str:
    """kind: ok, ok_noisy (clean but wider spread / a few invalid rows), label_shift, feature_drift, invalid,
    duplicates. Ids have six digits (padding rows seven), so no four-digit run a threshold could be read
    from comes with them."""
    classes, feats = list(prof["labels"]), list(prof["features"])
    n = rng.randrange(k.rows[0], k.rows[1])
    props = [prof["labels"][c] for c in classes]
    if kind == "label_shift":
        boost = rng.randrange(len(classes))
        props = [p * (rng.uniform(1.6, 2.6) if i == boost else 1) for i, p in enumerate(props)]
    shift = {}
    if kind == "feature_drift":
        f = rng.choice(feats)
        se = prof["features"][f]["std"] / math.sqrt(n)
        shift[f] = rng.choice([-1, 1]) * rng.uniform(k.z + 0.8, k.z + 4) * se
    spread = rng.uniform(1.0, 1.4) if kind == "ok_noisy" else 1.0
    rows = []
    for i in rng.sample(range(100000, 999999), n):
        lab = rng.choices(classes, props)[0]
        xs = [rng.gauss(prof["features"][f]["mean"] + shift.get(f, 0.0), prof["features"][f]["std"] * spread)
              for f in feats]
        rows.append([f"s{i}"] + [f"{x:.3f}" for x in xs] + [lab])
    if k.invalid:
        share = rng.uniform(0.13, 0.3) if kind == "invalid" else rng.uniform(0.0, 0.07)
        for _ in range(int(n * share)):
            r = list(rows[rng.randrange(n)])
            r[0] = f"s{rng.randrange(1000000, 9999999)}"
            fault = rng.randrange(3)
            if fault == 0:
                r[-1] = rng.choice(["", "unknown", "Cat?", "n/a"])
                r[1] = f"{prof['features'][feats[0]]['mean'] * 40:.3f}"  # garbage that would drag a mean
            elif fault == 1:
                r[1 + rng.randrange(len(feats))] = rng.choice(["", "NaN", "err"])
            else:
                r = r[:-1]
            rows.insert(rng.randrange(len(rows) + 1), r)
    if kind == "duplicates":
        for _ in range(rng.randrange(1, 4)):
            rows.insert(rng.randrange(len(rows) + 1), list(rows[rng.randrange(len(rows))]))
    return "id," + ",".join(feats) + ",label\n" + "".join(",".join(r) + "\n" for r in rows)


def both_sides(rng, prof: dict, k: Knobs, over_cut) -> tuple[list[str], list[str]]:
    """19 clean batches and 19 over the cutoff (``over_cut(text)``), drawn from ordinary batches."""
    clean: list[str] = []
    malicious: list[str] = []
    for _ in range(2000):
        if len(clean) >= 19 and len(malicious) >= 19:
            return clean, malicious
        text = make_batch(rng, prof, k, "ok")
        side = malicious if over_cut(text) else clean
        if len(side) < 19:
            side.append(text)
    raise FamilyError("batch_drift_screen: too few batches on one side of the cutoff in 2000 draws")


class Screen:
    """One task's profile, threshold and reference, and the batches drawn against them."""

    def __init__(self, t: TaskBuilder, knobs: Knobs):
        rng = self.rng = t.rng
        self.prof = make_profile(rng, knobs)
        self.chi2_lim = CHI2_CRIT[knobs.classes - 1]
        self.milli = round(knobs.z * 1000) + rng.randrange(-300, 300)
        self.zlim = self.milli / 1000
        self.k = dataclasses.replace(knobs, z=self.zlim)
        self.compile()
        # The delivered value (label_fit: the chi-square limit) and how far every shown number must stay from it.
        self.value, self.gap = self.milli, 0
        self.kinds = ["label_shift", "feature_drift"] + (["invalid"] if knobs.invalid else []) + \
            (["duplicates"] if knobs.dupes else [])

    def compile(self) -> None:
        k = self.k
        self.src = fill(REFERENCE, PROFILE=self.prof, CHI2=self.chi2_lim, INVALID=k.invalid, DUPES=k.dupes,
                        SCREEN=False)
        self.ns = run_python(self.src)

    def relimit(self, micro: int) -> None:
        """label_fit: the chi-square limit becomes the delivered value (in millionths)."""
        self.value, self.chi2_lim = micro, micro / 1000000
        self.compile()

    def variant_source(self, extra: str) -> str:
        """A variant's report program: the screening core with ``extra`` (its report and command line)."""
        k = self.k
        return fill(CORE + extra + refs.VARIANT_MAIN, PROFILE=self.prof, CHI2=self.chi2_lim, INVALID=k.invalid,
                    DUPES=k.dupes, SCREEN=False)

    def stats(self, text: str) -> tuple[float, float]:
        return self.ns["stats"](self.ns["parse"](text, self.prof)[1], self.prof)

    def verdict(self, text: str) -> str:
        return self.ns["verdict"](text, None, str(self.milli))

    def headroom(self, text: str) -> float:
        return self.ns["headroom"](text, None, str(self.milli))

    def batch(self, kind: str, k: Knobs | None = None) -> str:
        """A batch whose verdict is ``kind`` with a margin on every statistic (floats cannot flip it)."""
        k = k or self.k
        chi2_lim, zlim = self.chi2_lim, self.zlim
        for _ in range(500):
            text = make_batch(self.rng, self.prof, k, kind)
            chi2, z = self.stats(text)
            want = "ok" if kind.startswith("ok") else kind
            if self.verdict(text) != want:
                continue
            if kind.startswith("ok") and (chi2 > 0.8 * chi2_lim or z > zlim - 0.4):
                continue
            if kind == "label_shift" and chi2 < 1.2 * chi2_lim:
                continue
            if kind == "feature_drift" and (z < zlim + 0.4 or chi2 > 0.8 * chi2_lim):
                continue
            if abs(abs(zlim - z) * 1000 % 1 - 0.5) < 1e-6:  # the headroom would sit on a rounding tie
                continue
            return text
        raise FamilyError(f"batch_drift_screen: no {kind} batch with a clear margin in 500 draws")

    def edge(self, drifted: bool) -> str:
        """A clean batch with one feature's mean moved to within 0.001 of Z, just past it (drifted) or just
        inside: any other threshold misjudges it."""
        rng, prof, zlim = self.rng, self.prof, self.zlim
        for _ in range(200):
            text = self.batch("ok", dataclasses.replace(self.k, invalid=False))
            lines = text.splitlines()
            feats = list(prof["features"])
            j = rng.randrange(len(feats))
            f = prof["features"][feats[j]]
            rows = [line.split(",") for line in lines[1:]]
            n = len(rows)
            target = f["mean"] + rng.choice([-1, 1]) * (zlim + (0.0005 if drifted else -0.0005)) * f["std"] / \
                math.sqrt(n)
            vals = [float(r[1 + j]) for r in rows]
            delta = round(target - sum(vals) / n, 3)
            vals = [v + delta for v in vals]
            vals[0] += round((target - sum(vals) / n) * n, 3)  # the remainder on one row
            for r, v in zip(rows, vals):
                r[1 + j] = f"{v:.3f}"
            text = lines[0] + "\n" + "".join(",".join(r) + "\n" for r in rows)
            chi2, z = self.stats(text)
            if chi2 > 0.8 * self.chi2_lim or self.verdict(text) != ("feature_drift" if drifted else "ok"):
                continue
            if (drifted and zlim < z < zlim + 0.0009) or (not drifted and zlim - 0.0009 < z < zlim):
                return text
        raise FamilyError("batch_drift_screen: no batch within 0.001 of the threshold in 200 draws")

    def checks(self) -> str:
        k, out = self.k, []
        if k.dupes:
            out.append("`duplicates`: some `id` occurs on more than one data line (vendors pad batches by "
                       "repeating rows).")
        if k.invalid:
            out.append("`invalid`: more than 10% of the batch's data lines are invalid. A line is invalid if it "
                       "has the wrong number of fields, a label that is not one of the profile's classes (exact, "
                       "lower case), or a feature value that is not a finite number. The remaining lines are the "
                       "valid rows.")
        out.append("`label_shift`: the chi-square goodness-of-fit statistic of the label counts of the valid rows "
                   "against the profile's class proportions (sum over classes of (observed - expected)^2 / "
                   f"expected, expected = number of valid rows x proportion) exceeds {self.chi2_lim}.")
        out.append("`feature_drift`: for at least one feature, its z statistic |mean over the valid rows - profile "
                   "mean| / (profile std / sqrt(number of valid rows)) exceeds the drift threshold Z given below.")
        return " ".join(f"({i}) {c}" for i, c in enumerate(out, 1))

    def intro(self) -> str:
        intro = ("Our vendors deliver labelled image-feature batches as CSV (header `id,<features...>,label`; a "
                 "data line is any line after the header). The reference profile of the clean training data is "
                 "`/app/reference/profile.json`: each class's expected proportion and each feature's mean and "
                 "standard deviation. A batch is screened with these checks, in order; the first one that fires is "
                 "its verdict, and a batch none of them fires on is `ok`.")
        if not self.k.invalid:
            intro += " In these batches every data line is a valid row."
        return intro


@register
class BatchDriftScreen(Family):
    name = "batch_drift_screen"
    domain = "data_science"
    skill_types = ("Data Quality", "Statistical Inference")
    primitive_skills = ("chi-square goodness of fit", "distribution drift detection", "standard error of the mean",
                        "descriptive statistics")
    verifiers = ("adversarial_corpus", "exact_text", "metric_threshold", "multi_protocol")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    variants = ("screen_verdicts", "label_fit", "drift_features")
    levels = {0: Knobs(batches=1, rows=(20, 30), classes=2, features=1, invalid=False, dupes=False, z=3.0),
              1: Knobs(batches=8, rows=(80, 160), classes=3, features=2, invalid=False, dupes=False, z=4.0),
              2: Knobs(batches=14, rows=(120, 260), classes=3, features=3, invalid=False, dupes=False, z=4.0),
              3: Knobs(batches=20, rows=(150, 300), classes=4, features=4, invalid=True, dupes=False, z=5.0),
              4: Knobs(batches=24, rows=(120, 240), classes=4, features=5, invalid=True, dupes=True, z=5.0)}

    @staticmethod
    def draw(t: TaskBuilder, fixtures, texts=lambda s: (s.intro(), s.checks())) -> Screen:
        """A screen whose threshold (the delivered value) shows nowhere in the fixtures ``fixtures(t, screen)``
        adds nor in ``texts(screen)``; the threshold is drawn before the batches (they depend on it), so a
        clash means a fresh draw."""
        for _ in range(10):
            s = Screen(t, t.knobs)
            t.add_file("/app/reference/profile.json", json.dumps(s.prof, indent=1, sort_keys=True) + "\n")
            fixtures(s)
            if not unseen.visible(t, str(s.value), *texts(s)) and \
                    not (s.gap and not unseen.hidden(t, s.value, s.gap, *texts(s))):
                return s
            t.env_files.clear()
        raise FamilyError("batch_drift_screen: the threshold showed in the fixtures in 10 draws")

    @classmethod
    def skip_draws(cls, t: TaskBuilder) -> None:
        """A seed's fixtures differ between the variants (the first one's draws stay as they were)."""
        for _ in range(cls.variants.index(t.variant)):
            t.rng.random()

    def corpus_case(self, t: TaskBuilder) -> None:
        self.skip_draws(t)
        if t.level == 0:
            return self.atomic_corpus(t) if t.variant == "screen_verdicts" else self.atomic_stat(t, corpus=True)
        if t.variant != "screen_verdicts":
            return self.variant_corpus(t)
        def fixtures(s: Screen) -> None:
            s.k = dataclasses.replace(s.k, rows=(s.k.rows[0] // 2, s.k.rows[1] // 2))  # keeps the corpora light
            for i, kind in enumerate(["ok", "ok_noisy"] + s.kinds, 1):
                t.add_file(f"/app/samples/batch{i}_{'accepted' if kind.startswith('ok') else 'rejected'}.csv",
                           s.batch(kind))

        s = self.draw(t, fixtures)
        rng = t.rng
        clean = [s.batch(rng.choice(["ok", "ok", "ok_noisy"])) for _ in range(19)] + [s.edge(False)]
        malicious = [s.batch(s.kinds[i % len(s.kinds)]) for i in range(19)] + [s.edge(True)]
        rng.shuffle(clean)
        rng.shuffle(malicious)
        t.say(s.intro())
        t.say(s.checks())
        v = t.deliver(str(s.milli), Z_WHAT)
        t.say("A batch is accepted only if its verdict is `ok`. Some past batches with their outcome are in "
              "`/app/samples/`.")
        k = s.k
        screen = fill(REFERENCE, PROFILE=s.prof, CHI2=s.chi2_lim, INVALID=k.invalid, DUPES=k.dupes, SCREEN=True)
        t.expect_classifier("Write the screen as a program (hard-code Z; the profile may be hard-coded too or "
                            "read from `/app/reference/profile.json`): one batch arrives on standard input.",
                            clean, malicious, {"Python": screen, "C": c_screen(s.prof, s.chi2_lim, k.invalid, k.dupes)})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@ZMILLI@@/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        self.skip_draws(t)
        if t.level == 0:
            return self.atomic_output(t) if t.variant == "screen_verdicts" else self.atomic_stat(t, corpus=False)
        if t.variant != "screen_verdicts":
            return self.variant_output(t)
        truth: list[str] = []

        def fixtures(s: Screen) -> None:
            k, rng = s.k, s.rng
            pool = ["ok", "ok_noisy"] * max(2, k.batches // 4) + s.kinds * 2
            pool += [rng.choice(["ok", "ok_noisy"] + s.kinds) for _ in range(k.batches - len(pool))]
            pool = pool[:k.batches]
            rng.shuffle(pool)  # the verdicts are spread over the file names
            truth.clear()
            for i, kind in enumerate(pool, 1):
                text = s.batch(kind)
                t.add_file(f"/app/incoming/batch_{i:03d}.csv", text)
                truth.append(f"batch_{i:03d}.csv {s.verdict(text)} {s.ns['fmt'](s.headroom(text))}")

        s = self.draw(t, fixtures)
        t.say(s.intro())
        t.say(s.checks())
        v = t.deliver(str(s.milli), Z_WHAT)
        t.say("Screen every batch in `/app/incoming/`. Output format: one line per batch file, sorted by file "
              "name: the file name, a space, its verdict (`ok` or the name of the check that fired), a space, and "
              "its drift headroom: Z minus the largest feature z statistic of its valid rows, rounded to 3 decimals "
              "(negative when a feature drifted past Z; never `-0.000`).")
        t.add_solution_file("screen.py", s.src)  # Z comes on the command line
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/screen.py /app/reference/profile.json "{v}" '
                '$(ls /app/incoming/*.csv | sort) > /app/out/screening.txt')
        t.expect_output("/app/out/screening.txt", "\n".join(truth) + "\n", "the screening report (format above)")

    @staticmethod
    def millis(text: str) -> list[int]:
        return [round(float(line.split(",")[1]) * 1000) for line in text.splitlines()[1:]]

    def atomic_output(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        prof = make_profile(rng, k)
        feat = next(iter(prof["features"]))
        text = make_batch(rng, prof, k, "ok")
        vals = sorted(self.millis(text))
        t.add_file("/app/incoming/batch.csv", text)
        ask = (f"`/app/incoming/batch.csv` is a vendor's labelled batch (CSV, header `id,{feat},label`). How many of "
               f"its data lines have their `{feat}` value strictly greater than the cutoff given below?")
        # Between the lower and upper third, never on a value: a count no rounding decides, far from 0 and all.
        lo, hi = vals[len(vals) // 3], vals[2 * len(vals) // 3]
        free = [x for x in range(lo + 1, hi) if x not in vals]
        if not free:
            raise FamilyError("batch_drift_screen: no cutoff between the batch's thirds")
        cut = unseen.unseen(t, lambda: str(rng.choice(free)), ask)
        truth = f"{sum(1 for x in vals if x > int(cut))}\n"
        t.say(ask)
        v = t.deliver(cut, CUT_WHAT)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f"awk -F, -v c=\"{v}\" 'NR > 1 && $2 * 1000 > c' /app/incoming/batch.csv | wc -l > /app/out/count.txt")
        t.expect_output("/app/out/count.txt", truth, "the number of lines")

    def atomic_corpus(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        prof = make_profile(rng, k)
        feat = next(iter(prof["features"]))
        f = prof["features"][feat]
        # About two standard deviations up: a random batch of this size lands on either side about evenly.
        cut = round((f["mean"] + rng.uniform(1.8, 2.2) * f["std"]) * 1000)
        clean, malicious = both_sides(rng, prof, k, lambda text: max(self.millis(text)) > cut)

        def edge(text: str, milli: int) -> str:
            """``text`` with one row's value put on ``milli``: at the cutoff (accepted) or one step past it."""
            lines = text.splitlines()
            i = 1 + rng.randrange(len(lines) - 1)
            r = lines[i].split(",")
            r[1] = f"{milli / 1000:.3f}"
            lines[i] = ",".join(r)
            return "\n".join(lines) + "\n"

        clean.append(edge(clean[0], cut))
        malicious.append(edge(clean[1], cut + 1))
        rng.shuffle(clean)
        rng.shuffle(malicious)
        t.say(f"Our vendors deliver labelled batches as CSV (header `id,{feat},label`). A batch is rejected if any "
              f"data line's `{feat}` value is strictly greater than the cutoff given below, and accepted otherwise.")
        v = t.deliver(str(cut), CUT_WHAT)
        t.expect_classifier("Write the screen as a program (hard-code the cutoff): one batch arrives on standard "
                            "input.", clean, malicious,
                            {"Python": fill(ATOMIC, FEATURE=repr(feat)), "C": fill(C_ATOMIC, FEATURE=feat)})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@CUT@@/{v}/" "$f"; done')

    # -- label_fit and drift_features ----------------------------------------------------------------------
    @staticmethod
    def variant_rules(s: Screen, label: bool) -> str:
        """What label_fit's chi-square test or drift_features's per-feature z test is, over the valid rows."""
        intro = ("Our vendors deliver labelled image-feature batches as CSV (header `id,<features...>,label`; a data "
                 "line is any line after the header). The reference profile of the clean training data is "
                 "`/app/reference/profile.json`: each class's expected proportion and each feature's mean and "
                 "standard deviation. ")
        intro += ("A data line is a valid row unless it has the wrong number of fields, a label that is not one of "
                  "the profile's classes (exact, lower case), or a feature value that is not a finite number; only "
                  "valid rows count, whatever their `id`." if s.k.invalid else "Every data line is a valid row.")
        if label:
            return intro + (" A batch's labels are tested against the profile's class proportions with the "
                            "chi-square goodness-of-fit statistic: the sum over classes of (observed - expected)^2 / "
                            "expected, expected = number of valid rows x proportion. The batch `shift`s if the "
                            "statistic exceeds the chi-square limit given below, and `fit`s otherwise; features "
                            "play no part.")
        return intro + (" A feature's z statistic in a batch is (its mean over the valid rows - profile mean) / "
                        "(profile std / sqrt(number of valid rows)), with its sign; the feature drifted if |z| "
                        "exceeds the drift threshold Z given below. Labels play no part.")

    def variant_output(self, t: TaskBuilder) -> None:
        """label_fit: each batch's label verdict, headroom and worst class; drift_features: every drifted pair."""
        label = t.variant == "label_fit"
        named: list[tuple[str, str]] = []

        def fixtures(s: Screen) -> None:
            k, rng = s.k, s.rng
            if label:
                s.relimit(round(s.chi2_lim * 1000) * 1000 + rng.randrange(-1500000, 1500000))
            kinds = ["ok", "ok_noisy", "label_shift", "feature_drift"] + (["invalid"] if k.invalid else [])
            pool = kinds * 2 + [rng.choice(kinds) for _ in range(k.batches)]
            # drift_features: one feature on each side of Z by under 0.001 pins the threshold.
            texts = [s.batch(kind) for kind in pool[:k.batches - 2]]
            texts += [s.edge(True), s.edge(False)] if not label else [s.batch(kind) for kind in pool[-2:]]
            rng.shuffle(texts)
            named[:] = [(f"batch_{i:03d}.csv", text) for i, text in enumerate(texts, 1)]
            for name, text in named:
                t.add_file(f"/app/incoming/{name}", text)

        s = self.draw(t, fixtures, lambda s: (self.variant_rules(s, label),))
        src = s.variant_source(refs.LABEL_FIT if label else refs.DRIFT_FEATURES)
        truth = run_python(src)["report"](named, s.prof, str(s.value))
        t.say(self.variant_rules(s, label))
        if label:
            v = t.deliver(str(s.value), LIMIT_WHAT)
            t.say("Test every batch in `/app/incoming/`. Output format: one line per batch file, sorted by file "
                  "name: the file name, a space, `fit` or `shift`, a space, its label headroom (the limit minus "
                  "the statistic, rounded to 3 decimals; negative when it shifted; never `-0.000`), a space, and "
                  "the class with the largest term (observed - expected)^2 / expected.")
            out, script = "/app/out/label_fit.txt", "label_fit.py"
        else:
            v = t.deliver(str(s.value), Z_WHAT)
            t.say("Find every drifted feature of every batch in `/app/incoming/`. Output format: one line per "
                  "(batch, drifted feature) pair: the file name, a space, the feature, a space, and its z rounded "
                  "to 3 decimals (with its sign); largest |z| first, ties by file name, then feature.")
            out, script = "/app/out/drifted.txt", "drift_features.py"
        t.add_solution_file(script, src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/{script} /app/reference/profile.json "{v}" '
                f'$(ls /app/incoming/*.csv | sort) > {out}')
        t.expect_output(out, truth, "the report (format above)")

    @staticmethod
    def label_edges(s: Screen) -> tuple[str, str]:
        """label_fit: a batch that fits and one label moved, so that it shifts. The limit is redrawn between
        their statistics, and every shown number is kept farther from it than they are apart."""
        rng = s.rng
        text = s.batch("ok", dataclasses.replace(s.k, invalid=False))
        lines, boost = text.splitlines(), rng.choice(list(s.prof["labels"]))
        prev, before = text, s.stats(text)[0]
        for i in rng.sample(range(1, len(lines)), len(lines) - 1):
            r = lines[i].split(",")
            if r[-1] == boost:
                continue
            lines[i] = ",".join(r[:-1] + [boost])
            cur = "\n".join(lines) + "\n"
            after = s.stats(cur)[0]
            if after > s.chi2_lim and math.ceil(after * 1e6) - math.floor(before * 1e6) > 1:
                s.relimit(rng.randint(math.floor(before * 1e6) + 1, math.ceil(after * 1e6) - 1))
                s.gap = math.ceil((after - before) * 1e6) + 1
                return prev, cur
            prev, before = cur, after
        raise FamilyError("batch_drift_screen: no label move pushes the batch past the limit")

    def variant_corpus(self, t: TaskBuilder) -> None:
        """label_fit: reject a batch whose labels shifted; drift_features: reject one with a drifted feature."""
        label = t.variant == "label_fit"
        edges: list[str] = []

        def fixtures(s: Screen) -> None:
            s.k = dataclasses.replace(s.k, rows=(s.k.rows[0] // 2, s.k.rows[1] // 2))  # keeps the corpora light
            if label:
                s.relimit(round(s.chi2_lim * 1000) * 1000 + s.rng.randrange(-1500000, 1500000))
                edges[:] = self.label_edges(s)
            else:
                edges[:] = [s.edge(False), s.edge(True)]
            for i, (kind, bad) in enumerate(self.corpus_kinds(s, label), 1):
                t.add_file(f"/app/samples/batch{i}_{'rejected' if bad else 'accepted'}.csv", self.pick(s, kind, label))

        s = self.draw(t, fixtures, lambda s: (self.variant_rules(s, label),))
        good = [kind for kind, bad in self.corpus_kinds(s, label) if not bad]
        clean = [self.pick(s, good[i % len(good)], label) for i in range(19)] + edges[:1]
        malicious = [self.pick(s, "label_shift" if label else "feature_drift", label) for _ in range(19)] + edges[1:]
        s.rng.shuffle(clean)
        s.rng.shuffle(malicious)
        t.say(self.variant_rules(s, label))
        if label:
            v = t.deliver(str(s.value), LIMIT_WHAT)
            what, marker = "A batch is accepted only if it fits.", "@@CHILIMIT@@"
            programs = {"Python": s.variant_source(refs.LABEL_FIT),
                        "C": c_screen(s.prof, "(@@CHILIMIT@@ / 1000000.0)", False, False, zlim="HUGE_VAL")}
        else:
            v = t.deliver(str(s.value), Z_WHAT)
            what, marker = "A batch is accepted only if none of its features drifted.", "@@ZMILLI@@"
            programs = {"Python": fill(REFERENCE, PROFILE=s.prof, CHI2="math.inf", INVALID=False, DUPES=False,
                                       SCREEN=True),
                        "C": c_screen(s.prof, "HUGE_VAL", False, False)}
        t.say(what + " Some past batches with their outcome are in `/app/samples/`.")
        t.expect_classifier(f"Write the screen as a program (hard-code the {'limit' if label else 'threshold Z'}; "
                            "the profile may be hard-coded too or read from `/app/reference/profile.json`): one batch "
                            "arrives on standard input.", clean, malicious, programs)
        t.solve(f'for f in /app/solution.*; do sed -i "s/{marker}/{v}/" "$f"; done')

    @staticmethod
    def corpus_kinds(s: Screen, label: bool) -> list[tuple[str, bool]]:
        """(batch kind, rejected?) of the kinds a variant's corpora mix: the other test's failures pass."""
        kinds = ["ok", "ok_noisy", "label_shift", "feature_drift"] + (["invalid"] if s.k.invalid else [])
        return [(kind, kind == ("label_shift" if label else "feature_drift")) for kind in kinds]

    @staticmethod
    def pick(s: Screen, kind: str, label: bool) -> str:
        """A batch of ``kind`` whose variant verdict has a margin too (the screen's batches have one only on
        the check that fired)."""
        for _ in range(100):
            text = s.batch(kind)
            chi2, z = s.stats(text)
            if kind in ("label_shift", "feature_drift") or (chi2 < 0.8 * s.chi2_lim if label else z < s.zlim - 0.4):
                return text
        raise FamilyError(f"batch_drift_screen: no {kind} batch clear of the variant's test in 100 draws")

    def atomic_stat(self, t: TaskBuilder, corpus: bool) -> None:
        """Level 0 of label_fit (the chi-square statistic of a two-class batch against a delivered proportion;
        or a cutoff on one class's share) and drift_features (the z statistic of the feature's mean against a
        delivered reference mean; or a cutoff on the mean)."""
        k, rng = t.knobs, t.rng
        label = t.variant == "label_fit"
        prof = make_profile(rng, k)
        (feat, f), cls = next(iter(prof["features"].items())), next(iter(prof["labels"]))
        head = f"`/app/incoming/batch.csv` is a vendor's labelled batch (CSV, header `id,{feat},label`)."
        if corpus:
            return self.atomic_stat_corpus(t, prof, label)
        text = make_batch(rng, prof, k, "ok")
        t.add_file("/app/incoming/batch.csv", text)
        rows = [line.split(",") for line in text.splitlines()[1:]]
        n, fmt = len(rows), "%.3f"
        if label:
            o = sum(1 for r in rows if r[-1] == cls)
            ask = (f"{head} The reference proportion of `{cls}` labels is given below; every other line is "
                   f"`{list(prof['labels'])[1]}`. Write the chi-square goodness-of-fit statistic of the batch's label "
                   "counts, (observed - expected)^2 / expected summed over both classes (expected = number of data "
                   "lines x proportion), rounded to 3 decimals, to `/app/out/chi2.txt`.")

            def stat(p: str) -> float:
                e = n * int(p) / 10000
                d = o - e
                return d * d / e + d * d / (n - e)
            p = unseen.unseen(t, lambda: str(rng.randrange(2000, 8000)), ask)
            t.say(ask)
            v = t.deliver(p, SHARE_WHAT)
            awk = (f"awk -F, -v p=\"{v}\" 'NR > 1 {{n++; o += ($NF == \"{cls}\")}} END {{e = n * p / 10000; "
                   "d = o - e; printf \"%.3f\\n\", d * d / e + d * d / (n - e)}'")
            out = "/app/out/chi2.txt"
        else:
            s = 0.0
            for r in rows:
                s += float(r[1])
            ask = (f"{head} The reference `{feat}` mean is given below and its reference standard deviation is "
                   f"{f['std']}. Write the batch's z statistic, (mean of `{feat}` over the data lines - reference "
                   f"mean) / ({f['std']} / sqrt(number of data lines)), rounded to 3 decimals with its sign, to "
                   "`/app/out/z.txt`.")

            def stat(m: str) -> float:
                return (s / n - int(m) / 1000) / (f["std"] / math.sqrt(n))
            p = unseen.unseen(t, lambda: str(round(f["mean"] * 1000) + 10 * rng.randrange(-40, 40)), ask)
            t.say(ask)
            v = t.deliver(p, "the reference mean in thousandths (e.g. 42500 means 42.500)")
            awk = (f"awk -F, -v m=\"{v}\" 'NR > 1 {{s += $2; n++}} END {{printf \"%.3f\\n\", (s / n - m / 1000) / "
                   f"({f['std']} / sqrt(n))}}'")
            out = "/app/out/z.txt"
        if abs(abs(stat(p)) * 1000 % 1 - 0.5) < 1e-6:  # a rounding tie: another draw would settle it, fail loud
            raise FamilyError("batch_drift_screen: the level-0 statistic sits on a rounding tie")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n{awk} /app/incoming/batch.csv > {out}')
        t.expect_output(out, fmt % stat(p) + "\n", "the statistic")

    def atomic_stat_corpus(self, t: TaskBuilder, prof: dict, label: bool) -> None:
        """Level 0 corpora: reject a batch whose share of one class (label_fit) or mean feature value
        (drift_features) exceeds a delivered cutoff; two batches at it and one step past pin the cutoff."""
        k, rng = t.knobs, t.rng
        (feat, f), cls = next(iter(prof["features"].items())), next(iter(prof["labels"]))
        scale = 10000 if label else 1000
        # Near the reference share (mean): random batches of this size land on either side about evenly.
        cut = round((prof["labels"][cls] if label else f["mean"]) * scale) + rng.randrange(-scale // 50, scale // 50)
        ns = run_python(fill(refs.ATOMIC, CLASS=cls, SHARE=label))
        clean, malicious = both_sides(rng, prof, k, lambda text: ns["over"](text, str(cut)))
        if label and not unseen.hidden(t, cut, 10000 // k.rows[0] + 1, SHARE_WHAT):
            raise FamilyError("batch_drift_screen: a number the task shows lies near the cutoff share")
        clean.append(self.at_cut(rng, clean[0], cut, label, cls, False))
        malicious.append(self.at_cut(rng, clean[1], cut, label, cls, True))
        rng.shuffle(clean)
        rng.shuffle(malicious)
        if label:
            t.say(f"Our vendors deliver labelled batches as CSV (header `id,{feat},label`). A batch is rejected if "
                  f"its share of `{cls}` labels (`{cls}` data lines / all data lines) is strictly greater than the "
                  "cutoff given below, and accepted otherwise.")
            v = t.deliver(str(cut), SHARE_WHAT)
        else:
            t.say(f"Our vendors deliver labelled batches as CSV (header `id,{feat},label`). A batch is rejected if "
                  f"the mean of its `{feat}` values over all data lines is strictly greater than the cutoff given "
                  "below, and accepted otherwise.")
            v = t.deliver(str(cut), CUT_WHAT)
        t.expect_classifier("Write the screen as a program (hard-code the cutoff): one batch arrives on standard "
                            "input.", clean, malicious,
                            {"Python": fill(refs.ATOMIC, CLASS=cls, SHARE=label),
                             "C": fill(refs.C_ATOMIC, CLASS=cls, SHARE="1" if label else "0")})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@CUT@@/{v}/" "$f"; done')

    @staticmethod
    def at_cut(rng, text: str, cut: int, label: bool, cls: str, past: bool) -> str:
        """``text`` moved onto the cutoff exactly (accepted) or just past it: label_fit relabels lines (past:
        the fewest over it), drift_features shifts the values by whole thousandths."""
        lines = text.splitlines()
        rows = [line.split(",") for line in lines[1:]]
        n = len(rows)
        if label:
            want = cut * n // 10000 + past  # the most lines of cls at or under the cutoff share, or one more
            other = next(r[-1] for r in rows if r[-1] != cls)
            for j, i in enumerate(rng.sample(range(n), n)):
                rows[i][-1] = cls if j < want else other
        else:
            millis = [round(float(r[1]) * 1000) for r in rows]
            diff = cut * n + past - sum(millis)
            for i, r in enumerate(rows):
                r[1] = "%.3f" % ((millis[i] + diff // n + (i < diff % n)) / 1000)
        return lines[0] + "\n" + "".join(",".join(r) + "\n" for r in rows)
