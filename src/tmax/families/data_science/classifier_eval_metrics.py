"""How good is the model, really? Join a model's scores to ground-truth labels (messy label spellings,
re-scored ids, scores written as percentages, unusable labels at higher levels), then compute the
confusion matrix at a decision threshold, precision / recall / F1, ROC AUC with ties, and the
F1-optimal threshold."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import C_TRIM, fill, run_python

# @@PCT@@ is the delivered threshold: the oracle puts it in (the output case passes it on the command line).

REFERENCE = r'''
import sys

THRESHOLD_PCT = "@@PCT@@"  # a score >= THRESHOLD_PCT / 100 is a positive prediction (put in by the oracle)
BEST = @BEST@  # also report the F1-optimal threshold
THRESHOLD_ONLY = @THRESHOLD_ONLY@  # report only the threshold's counts and rates, one line each (no n, auc, best)
POSITIVE = ("1", "yes", "true", "pos", "positive")
NEGATIVE = ("0", "no", "false", "neg", "negative")


def score_of(text):
    """Scores in exact ten-thousandths, so 0.8750 and 87.50% are the same score."""
    text = text.strip()
    if text.endswith("%"):
        return round(float(text[:-1]) * 100)
    return round(float(text) * 10000)


def table(text):
    out = []
    for line in text.splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0]:
            out.append(parts)
    return out


def f4(x):
    return "%.4f" % x


def counts(pairs, thr):
    tp = fp = fn = tn = 0
    for s, y in pairs:
        if s >= thr:
            tp, fp = tp + y, fp + (1 - y)
        else:
            fn, tn = fn + y, tn + (1 - y)
    return tp, fp, fn, tn


def evaluate(pred_text, label_text, pct=None):
    thr = int(pct or THRESHOLD_PCT) * 100
    scores = {}
    for pid, s in table(pred_text):
        scores[pid] = score_of(s)  # a later row re-scores the id
    labels = {}
    for lid, lab in table(label_text):
        lab = lab.lower()
        if lab in POSITIVE:
            labels[lid] = 1
        elif lab in NEGATIVE:
            labels[lid] = 0
    pairs = [(scores[i], labels[i]) for i in sorted(scores) if i in labels]
    tp, fp, fn, tn = counts(pairs, thr)
    n = len(pairs)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    pos = sorted(s for s, y in pairs if y == 1)
    neg = sorted(s for s, y in pairs if y == 0)
    # AUC = P(score of a random positive > that of a random negative), ties count one half.
    twice, j, k = 0, 0, 0
    for s in pos:
        while j < len(neg) and neg[j] < s:
            j += 1
        k = max(k, j)
        while k < len(neg) and neg[k] <= s:
            k += 1
        twice += 2 * j + (k - j)
    auc = twice / (2 * len(pos) * len(neg)) if pos and neg else 0.0
    out = ["n=%d" % n, "tp=%d" % tp, "fp=%d" % fp, "fn=%d" % fn, "tn=%d" % tn, "accuracy=" + f4((tp + tn) / n),
           "precision=" + f4(precision), "recall=" + f4(recall), "f1=" + f4(f1), "auc=" + f4(auc)]
    if THRESHOLD_ONLY:
        return " ".join(out[1:5]) + "\n" + " ".join(out[5:9]) + "\n"
    if BEST:
        best = None  # (2tp, 2tp + fp + fn, threshold): compare F1 exactly as fractions
        for cand in sorted(set(s for s, _ in pairs), reverse=True):
            a, b, c, d = counts(pairs, cand)
            num, den = 2 * a, 2 * a + b + c
            if best is None or num * best[1] > best[0] * den:
                best = (num, den, cand)
        out += ["best_threshold=" + f4(best[2] / 10000), "best_f1=" + f4(best[0] / best[1] if best[1] else 0.0)]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) > 2:
        with open(sys.argv[1]) as fp_, open(sys.argv[2]) as fl_:
            sys.stdout.write(evaluate(fp_.read(), fl_.read(), int(sys.argv[3]) if len(sys.argv) > 3 else None))
    else:
        head, _, tail = sys.stdin.read().partition("\n---\n")
        sys.stdout.write(evaluate(head + "\n", tail))
'''

C_REFERENCE = r'''
/* Evaluation metrics of scored predictions joined to labels (see the task statement). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THRESHOLD_PCT @@PCT@@
#define BEST @BEST@

typedef struct { char *id; long v; } Entry;

@C_TRIM@

/* Parses "id,value" data lines of a CSV section (header skipped) into id / text pairs. */
static int table(char *text, char ***ids, char ***vals) {
    int n = 0, cap = 64, line = 0;
    *ids = malloc(cap * sizeof(char *));
    *vals = malloc(cap * sizeof(char *));
    char *p = text;
    while (p && *p) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        if (line++ > 0) {
            char *c = strchr(p, ',');
            if (c && !strchr(c + 1, ',')) {
                *c = 0;
                char *id = trim(p), *v = trim(c + 1);
                if (*id) {
                    if (n == cap) {
                        cap *= 2;
                        *ids = realloc(*ids, cap * sizeof(char *));
                        *vals = realloc(*vals, cap * sizeof(char *));
                    }
                    (*ids)[n] = id;
                    (*vals)[n] = v;
                    n++;
                }
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

static long score_of(const char *t) {
    size_t len = strlen(t);
    if (len && t[len - 1] == '%') return llround(strtod(t, NULL) * 100);
    return llround(strtod(t, NULL) * 10000);
}

static int label_of(char *t) {
    static const char *pos[] = {"1", "yes", "true", "pos", "positive"};
    static const char *neg[] = {"0", "no", "false", "neg", "negative"};
    for (char *q = t; *q; q++) *q = (char)tolower((unsigned char)*q);
    for (int i = 0; i < 5; i++) {
        if (!strcmp(t, pos[i])) return 1;
        if (!strcmp(t, neg[i])) return 0;
    }
    return -1;
}

static int find(Entry *e, int n, const char *id) {
    for (int i = 0; i < n; i++)
        if (!strcmp(e[i].id, id)) return i;
    return -1;
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static void counts(long *s, int *y, int n, long thr, long c[4]) {
    c[0] = c[1] = c[2] = c[3] = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] >= thr) c[y[i] ? 0 : 1]++;
        else c[y[i] ? 2 : 3]++;
    }
}

int main(void) {
    size_t cap = 1 << 16, len = 0, r;
    char *buf = malloc(cap);
    while ((r = fread(buf + len, 1, cap - len - 1, stdin)) > 0) {
        len += r;
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[len] = 0;
    char *sep = strstr(buf, "\n---\n"), *labels_text = "";
    if (sep) {
        sep[1] = 0;
        labels_text = sep + 5;
    }
    char **pid, **pv, **lid, **lv;
    int np = table(buf, &pid, &pv), nl = table(labels_text, &lid, &lv);
    Entry *sc = malloc((np + 1) * sizeof(Entry)), *lab = malloc((nl + 1) * sizeof(Entry));
    int ns = 0, nlab = 0;
    for (int i = 0; i < np; i++) {
        int j = find(sc, ns, pid[i]);
        if (j < 0) { sc[ns].id = pid[i]; j = ns++; }
        sc[j].v = score_of(pv[i]);
    }
    for (int i = 0; i < nl; i++) {
        int y = label_of(lv[i]);
        if (y < 0) continue;
        int j = find(lab, nlab, lid[i]);
        if (j < 0) { lab[nlab].id = lid[i]; j = nlab++; }
        lab[j].v = y;
    }
    long *s = malloc((ns + 1) * sizeof(long));
    int *y = malloc((ns + 1) * sizeof(int)), n = 0;
    for (int i = 0; i < ns; i++) {
        int j = find(lab, nlab, sc[i].id);
        if (j >= 0) { s[n] = sc[i].v; y[n] = (int)lab[j].v; n++; }
    }
    long c[4];
    counts(s, y, n, (long)THRESHOLD_PCT * 100, c);
    long tp = c[0], fp = c[1], fn = c[2], tn = c[3];
    double precision = tp + fp ? (double)tp / (double)(tp + fp) : 0.0;
    double recall = tp + fn ? (double)tp / (double)(tp + fn) : 0.0;
    double f1 = tp ? (double)(2 * tp) / (double)(2 * tp + fp + fn) : 0.0;
    long *pos = malloc((n + 1) * sizeof(long)), *neg = malloc((n + 1) * sizeof(long));
    int npos = 0, nneg = 0;
    for (int i = 0; i < n; i++) {
        if (y[i]) pos[npos++] = s[i];
        else neg[nneg++] = s[i];
    }
    qsort(pos, npos, sizeof(long), cmp_long);
    qsort(neg, nneg, sizeof(long), cmp_long);
    long long twice = 0;
    int j = 0, k = 0;
    for (int i = 0; i < npos; i++) {
        while (j < nneg && neg[j] < pos[i]) j++;
        if (k < j) k = j;
        while (k < nneg && neg[k] <= pos[i]) k++;
        twice += 2LL * j + (k - j);
    }
    double auc = npos && nneg ? (double)twice / (double)(2LL * npos * nneg) : 0.0;
    printf("n=%d\ntp=%ld\nfp=%ld\nfn=%ld\ntn=%ld\n", n, tp, fp, fn, tn);
    printf("accuracy=%.4f\nprecision=%.4f\nrecall=%.4f\nf1=%.4f\nauc=%.4f\n", (double)(tp + tn) / (double)n,
           precision, recall, f1, auc);
    if (BEST) {
        long *all = malloc((n + 1) * sizeof(long));
        memcpy(all, s, n * sizeof(long));
        qsort(all, n, sizeof(long), cmp_long);
        long bnum = -1, bden = 1, bthr = 0;
        for (int i = n - 1; i >= 0; i--) {
            if (i < n - 1 && all[i] == all[i + 1]) continue;
            counts(s, y, n, all[i], c);
            long num = 2 * c[0], den = 2 * c[0] + c[1] + c[2];
            if (bnum < 0 || num * bden > bnum * den) { bnum = num; bden = den; bthr = all[i]; }
        }
        printf("best_threshold=%.4f\nbest_f1=%.4f\n", (double)bthr / 10000, bden ? (double)bnum / (double)bden : 0.0);
    }
    return 0;
}
'''

# Level 0: scores and labels in one file, and one count (true positives): a single awk filter.
ATOMIC = r'''
import sys

THRESHOLD_PCT = "@@PCT@@"  # a score >= THRESHOLD_PCT / 100 is a positive prediction


def true_positives(text, pct=None):
    # Scores have 4 decimals: in ten-thousandths they compare exactly.
    thr = int(pct or THRESHOLD_PCT) * 100
    tp = 0
    for line in text.splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[2] == "1" and round(float(parts[1]) * 10000) >= thr:
            tp += 1
    return "%d\n" % tp


if __name__ == "__main__":
    sys.stdout.write(true_positives(sys.stdin.read()))
'''

C_ATOMIC = r'''
/* True positives of one `id,score,label` CSV (standard input) at the hard-coded threshold. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THRESHOLD_PCT (@@PCT@@)

int main(void) {
    static char line[4096];
    int tp = 0, header = 1;
    while (fgets(line, sizeof line, stdin)) {
        if (header) { header = 0; continue; }
        char *c1 = strchr(line, ',');
        char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (!c2) continue;
        *c2 = 0;
        if (c2[1] == '1' && llround(strtod(c1 + 1, NULL) * 10000) >= THRESHOLD_PCT * 100) tp++;
    }
    printf("%d\n", tp);
    return 0;
}
'''

POS_WORDS = ("1", "yes", "true", "pos", "positive")
NEG_WORDS = ("0", "no", "false", "neg", "negative")
PCT_WHAT = "the decision threshold percentage"


@dataclass(frozen=True)
class Knobs:
    n: int  # examples in the output case
    messy: bool  # hand-typed label spellings, ids on one side only
    ties: bool  # repeated scores
    rescored: bool  # ids scored twice (the last row wins)
    percent: bool  # some scores written as percentages
    unusable: bool  # unusable labels to drop
    best: bool  # also report the F1-optimal threshold


def spell(rng, word: str) -> str:
    w = rng.choice([word, word.upper(), word.capitalize()])
    return rng.choice(["", " "]) + w + rng.choice(["", " ", "  "])


def off_threshold(draw, thr: float) -> float:
    """A score from ``draw()`` that does not sit exactly on the threshold."""
    for _ in range(100):
        s = draw()
        if abs(s - thr) > 1e-6:
            return s
    raise FamilyError("classifier_eval_metrics: 100 scores all on the threshold")


def make_data(rng, k: Knobs, n: int, pct: int) -> tuple[str, str]:
    thr = pct / 100
    prevalence = rng.uniform(0.2, 0.5)
    sep = rng.uniform(0.15, 0.35)
    ids = [f"ex{i:05d}" for i in rng.sample(range(100000), n)]
    preds, labels = [], []
    for i in ids:
        y = 1 if rng.random() < prevalence else 0
        s = off_threshold(lambda: round(min(1.0, max(0.0, rng.gauss(0.5 + (sep if y else -sep), 0.2))), 4), thr)
        if k.ties and preds and rng.random() < 0.05:
            s = preds[rng.randrange(len(preds))][1]
        preds.append([i, s])
        if k.messy:
            lab = spell(rng, rng.choice(POS_WORDS if y else NEG_WORDS))
        else:
            lab = str(y)
        if k.unusable and rng.random() < 0.03:
            lab = rng.choice(["", "?", "unknown", "n/a"])
        labels.append([i, lab])
    if k.rescored:
        for _ in range(max(2, n // 30)):
            pos = rng.randrange(len(preds))
            s = off_threshold(lambda: round(rng.uniform(0, 1), 4), thr)
            preds.insert(rng.randrange(pos + 1, len(preds) + 1), [preds[pos][0], s])
    if k.messy:  # some ids only on one side
        for _ in range(max(2, n // 40)):
            preds.append([f"ex{rng.randrange(100000, 200000)}", round(rng.uniform(0, 1), 4)])
            labels.append([f"ex{rng.randrange(200000, 300000)}", str(rng.randrange(2))])
    rng.shuffle(labels)  # the two files are never in the same order

    def show(s: float) -> str:
        return f"{s * 100:.2f}%" if k.percent and rng.random() < 0.15 else f"{s:.4f}"

    p_text = "id,score\n" + "".join(f"{i},{show(s)}\n" for i, s in preds)
    l_text = "id,label\n" + "".join(f"{i},{lab}\n" for i, lab in labels)
    return p_text, l_text


def rules_text(k: Knobs, threshold_only: bool = False) -> tuple[str, str]:
    """(the evaluation rules, the output format): both cases state them alike. ``threshold_only``: two
    lines that both move with the threshold (under partial credit, lines that do not, such as `n` or
    `auc`, or single counts that a near threshold shares, would earn credit without it)."""
    rules = ["Only ids present in both files count."]
    if k.messy:
        rules.append("Labels were typed by hand: ignoring case and surrounding spaces, `1`, `yes`, `true`, `pos` "
                     "and `positive` mean positive; `0`, `no`, `false`, `neg` and `negative` mean negative.")
    else:
        rules.append("Labels are `1` (positive) or `0` (negative).")
    if k.unusable:
        rules.append("Any other label (empty, `?`, `unknown`, ...) is unusable: drop that id.")
    if k.rescored:
        rules.append("Some ids were scored more than once: the last row for an id in the predictions file "
                     "replaces the earlier ones.")
    if k.percent:
        rules.append("A few scores were written as percentages (`87.50%` means 0.875).")
    rules.append("A prediction is positive when its score is greater than or equal to the decision threshold "
                 "(given above as a percentage: 40 means 0.40).")
    if threshold_only:
        return " ".join(rules), ("two lines of space-separated `key=value` pairs: first `tp=<n> fp=<n> fn=<n> "
                                 "tn=<n>`, then `accuracy=<x> precision=<x> recall=<x> f1=<x>` (precision is 0 if "
                                 "nothing is predicted positive, f1 is 0 if tp is 0). Counts are integers; every "
                                 "other value is rounded to 4 decimals.")
    fields = ("`key=value` lines in this order: `n` (examples evaluated), `tp`, `fp`, `fn`, `tn`, then "
              "`accuracy`, `precision` (0 if nothing is predicted positive), `recall`, `f1` (0 if tp is 0) and "
              "`auc` (ROC AUC of the raw scores: the probability that a random positive scores higher than a "
              "random negative, ties counting one half)")
    if k.best:
        fields += (", then `best_threshold`: among the distinct scores, the one that, used as the threshold "
                   "(score >= it is positive), gives the highest F1 (if several tie, the highest such score), "
                   "and `best_f1`, that F1")
    fields += ". Counts are integers; every other value is rounded to 4 decimals."
    return " ".join(rules), fields


@register
class ClassifierEvalMetrics(Family):
    name = "classifier_eval_metrics"
    domain = "data_science"
    skill_types = ("Machine Learning",)
    primitive_skills = ("confusion matrix", "precision recall and F1", "ROC AUC", "joining predictions to labels")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    levels = {0: Knobs(n=40, messy=False, ties=False, rescored=False, percent=False, unusable=False, best=False),
              1: Knobs(n=200, messy=False, ties=False, rescored=False, percent=False, unusable=False, best=False),
              2: Knobs(n=500, messy=True, ties=True, rescored=False, percent=False, unusable=False, best=False),
              3: Knobs(n=1000, messy=True, ties=True, rescored=True, percent=True, unusable=True, best=False),
              4: Knobs(n=1500, messy=True, ties=True, rescored=True, percent=True, unusable=True, best=True)}

    def program_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_program(t)
        k, rng = t.knobs, t.rng
        pct = rng.randrange(30, 76)
        src = fill(REFERENCE, BEST=k.best, THRESHOLD_ONLY=False)
        ns = run_python(src)
        rules, fields = rules_text(k)
        cases = []
        for _ in range(10):
            p_text, l_text = make_data(rng, k, rng.randrange(20, 90), pct)
            cases.append((p_text + "---\n" + l_text, ns["evaluate"](p_text, l_text, pct)))
        t.say("I evaluate a lot of model versions and want a small, exact evaluation tool. It reads one stream "
              "on standard input: the predictions CSV (header `id,score`), a line holding just `---`, then the "
              "labels CSV (header `id,label`).")
        v = t.deliver(str(pct), PCT_WHAT)
        t.say(f"{rules} The output is {fields}")
        c_src = fill(C_REFERENCE, BEST="1" if k.best else "0", C_TRIM=C_TRIM)
        t.expect_program("The threshold is always the one given above: hard-code it.", cases,
                         {"Python": src, "C": c_src})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@PCT@@/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_output(t)
        k, rng = t.knobs, t.rng
        src = fill(REFERENCE, BEST=k.best, THRESHOLD_ONLY=t.partial_credit)
        ns = run_python(src)
        rules, fields = rules_text(k, t.partial_credit)
        for _ in range(60):
            pct = rng.randrange(30, 76)
            p_text, l_text = make_data(rng, k, k.n, pct)
            truth = ns["evaluate"](p_text, l_text, pct)
            # Under partial credit no line may survive another threshold (a two-digit value shows everywhere;
            # 0 is no threshold at all, and every threshold from 101 on gives what 101 gives).
            lines = set(truth.splitlines())
            if not t.partial_credit or all(not lines & set(ns["evaluate"](p_text, l_text, alt).splitlines())
                                           for alt in range(1, 102) if alt != pct):
                break
        else:
            raise FamilyError("classifier_eval_metrics: no threshold that every other one gets wrong in 60 draws")
        t.add_file("/app/data/predictions.csv", p_text)
        t.add_file("/app/data/labels.csv", l_text)
        t.say("Our fraud model's scores for the evaluation set are in `/app/data/predictions.csv` (`id,score`, "
              "scores in [0, 1]) and the ground truth is in `/app/data/labels.csv` (`id,label`). I need its "
              "evaluation metrics at the decision threshold given below.")
        v = t.deliver(str(pct), PCT_WHAT)
        t.say(f"Rules: {rules}")
        t.say(f"Output format: {fields}")
        t.add_solution_file("evaluate.py", src)  # the threshold comes on the command line
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/evaluate.py /app/data/predictions.csv '
                f'/app/data/labels.csv "{v}" > /app/out/metrics.txt')
        t.expect_output("/app/out/metrics.txt", truth, "the metrics (format above)")

    ATOMIC_RULE = ("Labels are `1` (positive) or `0` (negative). A prediction is positive when its score is greater "
                   "than or equal to the decision threshold (given below as a percentage: 40 means 0.40). Count the "
                   "true positives: rows with label `1` predicted positive.")

    @staticmethod
    def scored(rng, k: Knobs, n: int, pct: int) -> str:
        """One `id,score,label` CSV: the scores and their labels side by side."""
        p_text, l_text = make_data(rng, k, n, pct)
        labels = dict(line.split(",") for line in l_text.splitlines()[1:])
        return "id,score,label\n" + "".join(f"{line},{labels[line.split(',')[0]]}\n"
                                            for line in p_text.splitlines()[1:])

    def atomic_output(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        ns = run_python(fill(ATOMIC))
        for _ in range(60):
            text = self.scored(rng, k, k.n, rng.randrange(30, 76))
            scores = {round(float(line.split(",")[1]) * 10000) for line in text.splitlines()[1:]}
            # The count moves under every other threshold iff it moves one point either side (it is monotone):
            # the data show many two-digit numbers, and none of them may give the same count.
            good = [p for p in range(30, 76) if p * 100 not in scores
                    and ns["true_positives"](text, p - 1) != ns["true_positives"](text, p)
                    != ns["true_positives"](text, p + 1)]
            if good:
                pct = rng.choice(good)
                truth = ns["true_positives"](text, pct)
                break
        else:
            raise FamilyError("classifier_eval_metrics: no threshold that every other one gets wrong in 60 draws")
        t.add_file("/app/data/scored.csv", text)
        t.say("Our fraud model's scores for the evaluation set, with the ground truth, are in "
              f"`/app/data/scored.csv` (`id,score,label`, scores in [0, 1]). {self.ATOMIC_RULE}")
        v = t.deliver(str(pct), PCT_WHAT)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f"awk -F, -v p=\"{v}\" 'NR > 1 && $3 == 1 && $2 * 100 >= p' /app/data/scored.csv | wc -l "
                "> /app/out/tp.txt")
        t.expect_output("/app/out/tp.txt", truth, "the number of true positives")

    def atomic_program(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        ns = run_python(fill(ATOMIC))
        for _ in range(50):
            pct = rng.randrange(30, 76)
            cases = [(x, ns["true_positives"](x, pct))
                     for x in (self.scored(rng, k, rng.randrange(20, 60), pct) for _ in range(10))]
            if all(any(ns["true_positives"](x, alt) != out for x, out in cases[2:]) for alt in range(1, 102)
                   if alt != pct):
                break
        else:
            raise FamilyError("classifier_eval_metrics: no threshold every other one gets wrong in 50 draws")
        t.say("I want a small evaluation tool. It reads one CSV on standard input (header `id,score,label`, scores "
              f"in [0, 1]) and prints one integer. {self.ATOMIC_RULE}")
        v = t.deliver(str(pct), PCT_WHAT)
        t.expect_program("The threshold is always the one given above: hard-code it.", cases,
                         {"Python": fill(ATOMIC), "C": fill(C_ATOMIC)})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@PCT@@/{v}/" "$f"; done')
