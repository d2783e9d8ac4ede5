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
BINS = "@@BINS@@"  # calibration: the number of equal-width score bins (put in by the oracle)
MODE = @MODE@  # metrics: the evaluation report; errors: the misclassified ids; calibration: a reliability table
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


def joined(pred_text, label_text):
    """(id, score, label) of every id with a score and a usable label, in byte order of the id."""
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
    return [(i, scores[i], labels[i]) for i in sorted(scores) if i in labels]


def calibration(rows, bins):
    """Per non-empty bin: examples, mean score, positive rate; then the expected calibration error (exact
    integer sums, one division each, so every language rounds the same double)."""
    cnt, tot, hit = [0] * bins, [0] * bins, [0] * bins
    for _, s, y in rows:
        b = min(bins - 1, s * bins // 10000)
        cnt[b], tot[b], hit[b] = cnt[b] + 1, tot[b] + s, hit[b] + y
    out = ["%d,%d,%s,%s" % (b + 1, cnt[b], f4(tot[b] / (10000 * cnt[b])), f4(hit[b] / cnt[b]))
           for b in range(bins) if cnt[b]]
    dev = sum(abs(tot[b] - 10000 * hit[b]) for b in range(bins))
    return "\n".join(out + ["ece=" + f4(dev / (10000 * len(rows)))]) + "\n"


def evaluate(pred_text, label_text, value=None):
    """The report; ``value`` is the delivered value: the threshold percentage (the number of bins for a
    calibration table)."""
    rows = joined(pred_text, label_text)
    if MODE == "calibration":
        return calibration(rows, int(value or BINS))
    thr = int(value or THRESHOLD_PCT) * 100
    if MODE == "errors":
        fp = [i for i, s, y in rows if s >= thr and not y]
        fn = [i for i, s, y in rows if s < thr and y]
        return "fp=" + " ".join(fp) + "\nfn=" + " ".join(fn) + "\n"
    pairs = [(s, y) for _, s, y in rows]
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
#define BINS @@BINS@@
#define BEST @BEST@
#define MODE @MODE@ /* 0: the evaluation report; 1: the misclassified ids; 2: a reliability table */

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

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
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
    char **who = malloc((ns + 1) * sizeof(char *));
    for (int i = 0; i < ns; i++) {
        int j = find(lab, nlab, sc[i].id);
        if (j >= 0) { who[n] = sc[i].id; s[n] = sc[i].v; y[n] = (int)lab[j].v; n++; }
    }
#if MODE == 2
    long cnt[BINS] = {0}, tot[BINS] = {0}, hit[BINS] = {0};
    long long dev = 0;
    for (int i = 0; i < n; i++) {
        long b = s[i] * BINS / 10000;
        if (b > BINS - 1) b = BINS - 1;
        cnt[b]++;
        tot[b] += s[i];
        hit[b] += y[i];
    }
    for (int b = 0; b < BINS; b++) {
        if (cnt[b])
            printf("%d,%ld,%.4f,%.4f\n", b + 1, cnt[b], (double)tot[b] / (double)(10000L * cnt[b]),
                   (double)hit[b] / (double)cnt[b]);
        dev += llabs(tot[b] - 10000L * hit[b]);
    }
    printf("ece=%.4f\n", (double)dev / (double)(10000LL * n));
    return 0;
#else
#if MODE == 1
    for (int want = 0; want < 2; want++) {  /* fp: negatives at or above the threshold; fn: positives below */
        char **list = malloc((n + 1) * sizeof(char *));
        int m = 0;
        for (int i = 0; i < n; i++)
            if (want ? (y[i] && s[i] < THRESHOLD_PCT * 100L) : (!y[i] && s[i] >= THRESHOLD_PCT * 100L))
                list[m++] = who[i];
        qsort(list, m, sizeof(char *), cmp_str);
        printf(want ? "fn=" : "fp=");
        for (int i = 0; i < m; i++) printf(i ? " %s" : "%s", list[i]);
        printf("\n");
    }
    return 0;
#endif
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
#endif
}
'''

# Level 0: scores and labels in one file, and one awk pass: the true positives, the false positives' ids,
# or the examples per score bin.
ATOMIC = r'''
import sys

THRESHOLD_PCT = "@@PCT@@"  # a score >= THRESHOLD_PCT / 100 is a positive prediction
BINS = "@@BINS@@"  # calibration: the number of equal-width score bins
MODE = @MODE@  # metrics: true positives; errors: the false positives' ids; calibration: examples per bin


def answer(text, value=None):
    # Scores have 4 decimals: in ten-thousandths they compare exactly.
    rows = []
    for line in text.splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            rows.append((parts[0], round(float(parts[1]) * 10000), parts[2]))
    if MODE == "calibration":
        bins = int(value or BINS)
        count = [0] * bins
        for _, s, _ in rows:
            count[min(bins - 1, s * bins // 10000)] += 1
        return "".join("%d,%d\n" % (b + 1, c) for b, c in enumerate(count))
    thr = int(value or THRESHOLD_PCT) * 100
    if MODE == "errors":
        return "".join(i + "\n" for i, s, y in rows if y == "0" and s >= thr)
    return "%d\n" % sum(1 for _, s, y in rows if y == "1" and s >= thr)


if __name__ == "__main__":
    sys.stdout.write(answer(sys.stdin.read()))
'''

C_ATOMIC = r'''
/* One `id,score,label` CSV (standard input): true positives, false positives' ids or examples per bin. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THRESHOLD_PCT (@@PCT@@)
#define BINS (@@BINS@@)
#define MODE @MODE@ /* 0: true positives; 1: the false positives' ids; 2: examples per bin */

int main(void) {
    static char line[4096];
    int tp = 0, header = 1;
#if MODE == 2
    long count[BINS] = {0};
#endif
    while (fgets(line, sizeof line, stdin)) {
        if (header) { header = 0; continue; }
        char *c1 = strchr(line, ',');
        char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (!c2) continue;
        *c2 = 0;
        long s = llround(strtod(c1 + 1, NULL) * 10000);
#if MODE == 2
        long b = s * BINS / 10000;
        count[b < BINS ? b : BINS - 1]++;
#elif MODE == 1
        if (c2[1] == '0' && s >= THRESHOLD_PCT * 100) printf("%.*s\n", (int)(c1 - line), line);
#else
        if (c2[1] == '1' && s >= THRESHOLD_PCT * 100) tp++;
#endif
    }
#if MODE == 2
    for (int b = 0; b < BINS; b++) printf("%d,%ld\n", b + 1, count[b]);
#elif MODE == 0
    printf("%d\n", tp);
#endif
    return 0;
}
'''

POS_WORDS = ("1", "yes", "true", "pos", "positive")
NEG_WORDS = ("0", "no", "false", "neg", "negative")
PCT_WHAT = "the decision threshold percentage"
BINS_WHAT = "the number of score bins"
MODES = {"metrics": 0, "errors": 1, "calibration": 2}  # the C references' MODE for each variant


@dataclass(frozen=True)
class Knobs:
    n: int  # examples in the output case
    messy: bool  # hand-typed label spellings, ids on one side only
    ties: bool  # repeated scores
    rescored: bool  # ids scored twice (the last row wins)
    percent: bool  # some scores written as percentages
    unusable: bool  # unusable labels to drop
    best: bool  # also report the F1-optimal threshold


@dataclass(frozen=True)
class Theme:
    """What is being scored and how its two exports are named (level 0 keeps the first, canonical one)."""
    model: str  # "fraud model"
    prefix: str  # of the example ids
    pred: str  # the predictions file
    labels: str  # the ground-truth file
    key: str  # the id column
    score: str  # the score column
    label: str  # the label column


THEMES = (Theme("fraud model", "ex", "/app/data/predictions.csv", "/app/data/labels.csv", "id", "score", "label"),
          Theme("churn model", "cust", "/app/eval/churn_scores.csv", "/app/eval/churned.csv", "customer", "p_churn",
                "churned"),
          Theme("spam filter", "msg", "/app/mail/filter_scores.csv", "/app/mail/reviewed.csv", "message_id",
                "spamminess", "is_spam"),
          Theme("default-risk model", "loan", "/app/risk/scored_loans.csv", "/app/risk/outcomes.csv", "loan_id",
                "pd", "defaulted"),
          Theme("lead-scoring model", "lead", "/app/crm/lead_scores.csv", "/app/crm/converted.csv", "lead",
                "propensity", "converted"),
          Theme("defect detector", "unit", "/app/qa/detector_output.csv", "/app/qa/inspection.csv", "serial",
                "defect_prob", "defective"))


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


def make_data(rng, k: Knobs, n: int, pct: int, theme: Theme = THEMES[0]) -> tuple[str, str]:
    thr = pct / 100
    prevalence = rng.uniform(0.2, 0.5)
    sep = rng.uniform(0.15, 0.35)
    px = theme.prefix
    ids = [f"{px}{i:05d}" for i in rng.sample(range(100000), n)]
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
            preds.append([f"{px}{rng.randrange(100000, 200000)}", round(rng.uniform(0, 1), 4)])
            labels.append([f"{px}{rng.randrange(200000, 300000)}", str(rng.randrange(2))])
    rng.shuffle(labels)  # the two files are never in the same order

    def show(s: float) -> str:
        return f"{s * 100:.2f}%" if k.percent and rng.random() < 0.15 else f"{s:.4f}"

    p_text = f"{theme.key},{theme.score}\n" + "".join(f"{i},{show(s)}\n" for i, s in preds)
    l_text = f"{theme.key},{theme.label}\n" + "".join(f"{i},{lab}\n" for i, lab in labels)
    return p_text, l_text


BIN_RULE = ("Split [0, 1] into B equal-width score bins (B given above): bin i, numbered from 1, holds the scores s "
            "with (i - 1) / B <= s < i / B, and the last bin also holds s = 1.")


def rules_text(k: Knobs, threshold_only: bool = False, variant: str = "metrics") -> tuple[str, str]:
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
    if variant == "calibration":
        rules.append(BIN_RULE)
        return " ".join(rules), ("one line per bin that holds at least one example, in bin order: "
                                 "`bin,examples,mean_score,positive_rate` (the mean of the bin's scores and the "
                                 "fraction of its examples that are positive, both rounded to 4 decimals), then a "
                                 "last line `ece=<x>`: the expected calibration error, the sum over bins of "
                                 "(bin examples / all examples) * |mean score - positive rate| computed before any "
                                 "rounding, rounded to 4 decimals.")
    rules.append("A prediction is positive when its score is greater than or equal to the decision threshold "
                 "(given above as a percentage: 40 means 0.40).")
    if variant == "errors":
        return " ".join(rules), ("two lines: `fp=` followed by the ids of the false positives (negatives predicted "
                                 "positive), then `fn=` followed by the ids of the false negatives (positives "
                                 "predicted negative); each list is space-separated in byte order of the id (a "
                                 "line with no ids is just `fp=` or `fn=`).")
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


def delivered(t: TaskBuilder) -> tuple[int, str, str]:
    """(a drawn value, what it is, the placeholder the oracle puts it in for): the threshold percentage,
    or for a calibration table the number of bins."""
    if t.variant == "calibration":
        return t.rng.randrange(4, 13), BINS_WHAT, "@@BINS@@"
    return t.rng.randrange(30, 76), PCT_WHAT, "@@PCT@@"


ASKS = {"metrics": "its evaluation metrics at the decision threshold given below",
        "errors": "the examples it gets wrong at the decision threshold given below, for the review team",
        "calibration": "a reliability table (are its scores calibrated probabilities?) over the number of "
                       "score bins given below"}


@register
class ClassifierEvalMetrics(Family):
    name = "classifier_eval_metrics"
    domain = "data_science"
    skill_types = ("Machine Learning",)
    primitive_skills = ("confusion matrix", "precision recall and F1", "ROC AUC", "joining predictions to labels")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    # metrics: the confusion matrix and rates at a threshold; errors: the misclassified ids at a threshold;
    # calibration: a reliability table over equal-width score bins and the expected calibration error.
    variants = ("metrics", "errors", "calibration")
    levels = {0: Knobs(n=40, messy=False, ties=False, rescored=False, percent=False, unusable=False, best=False),
              1: Knobs(n=200, messy=False, ties=False, rescored=False, percent=False, unusable=False, best=False),
              2: Knobs(n=500, messy=True, ties=True, rescored=False, percent=False, unusable=False, best=False),
              3: Knobs(n=1000, messy=True, ties=True, rescored=True, percent=True, unusable=True, best=False),
              4: Knobs(n=1500, messy=True, ties=True, rescored=True, percent=True, unusable=True, best=True)}

    @staticmethod
    def reference(t: TaskBuilder, threshold_only: bool = False) -> tuple[str, dict]:
        src = fill(REFERENCE, BEST=t.knobs.best and t.variant == "metrics", THRESHOLD_ONLY=threshold_only,
                   MODE=repr(t.variant))
        return src, run_python(src)

    def program_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_program(t)
        k, rng = t.knobs, t.rng
        theme = rng.choice(THEMES)
        value, what, mark = delivered(t)
        src, ns = self.reference(t)
        rules, fields = rules_text(k, variant=t.variant)
        cases = []
        for _ in range(10):
            p_text, l_text = make_data(rng, k, rng.randrange(20, 90), rng.randrange(30, 76)
                                       if t.variant == "calibration" else value, theme)
            cases.append((p_text + "---\n" + l_text, ns["evaluate"](p_text, l_text, value)))
        t.say(f"I evaluate a lot of {theme.model} versions and want a small, exact evaluation tool. It reads one "
              f"stream on standard input: the predictions CSV (header `{theme.key},{theme.score}`), a line holding "
              f"just `---`, then the labels CSV (header `{theme.key},{theme.label}`).")
        v = t.deliver(str(value), what)
        t.say(f"{rules} The output is {fields}")
        c_src = fill(C_REFERENCE, BEST="1" if k.best and t.variant == "metrics" else "0", C_TRIM=C_TRIM,
                     MODE=str(MODES[t.variant]))
        t.expect_program(f"The {'number of bins' if what == BINS_WHAT else 'threshold'} is always the one given "
                         "above: hard-code it.", cases,
                         {"Python": src, "C": c_src})
        t.solve(f'for f in /app/solution.*; do sed -i "s/{mark}/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self.atomic_output(t)
        k, rng, variant = t.knobs, t.rng, t.variant
        theme = rng.choice(THEMES)
        src, ns = self.reference(t, t.partial_credit and variant == "metrics")
        rules, fields = rules_text(k, t.partial_credit, variant)
        for _ in range(60):
            value, what, _ = delivered(t)
            p_text, l_text = make_data(rng, k, k.n, value if variant != "calibration" else rng.randrange(30, 76),
                                       theme)
            truth = ns["evaluate"](p_text, l_text, value)
            # Under partial credit no line may survive another value (a two-digit value shows everywhere;
            # 0 is no threshold at all, and every threshold from 101 on gives what 101 gives).
            lines = set(truth.splitlines())
            if not t.partial_credit or all(not lines & set(ns["evaluate"](p_text, l_text, alt).splitlines())
                                           for alt in range(1, 102) if alt != value):
                break
        else:
            raise FamilyError("classifier_eval_metrics: no value that every other one gets wrong in 60 draws")
        t.add_file(theme.pred, p_text)
        t.add_file(theme.labels, l_text)
        t.say(f"Our {theme.model}'s scores for the evaluation set are in `{theme.pred}` (`{theme.key},"
              f"{theme.score}`, scores in [0, 1]) and the ground truth is in `{theme.labels}` (`{theme.key},"
              f"{theme.label}`). I need {ASKS[variant]}.")
        v = t.deliver(str(value), what)
        t.say(f"Rules: {rules}")
        t.say(f"Output format: {fields}")
        out = {"metrics": "/app/out/metrics.txt", "errors": "/app/out/errors.txt",
               "calibration": "/app/out/calibration.csv"}[variant]
        t.add_solution_file("evaluate.py", src)  # the delivered value comes on the command line
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/evaluate.py {theme.pred} '
                f'{theme.labels} "{v}" > {out}')
        t.expect_output(out, truth, {"metrics": "the metrics (format above)", "errors": "the errors (format above)",
                                     "calibration": "the reliability table (format above)"}[variant])

    ATOMIC_RULE = ("Labels are `1` (positive) or `0` (negative). A prediction is positive when its score is greater "
                   "than or equal to the decision threshold (given below as a percentage: 40 means 0.40). Count the "
                   "true positives: rows with label `1` predicted positive.")
    ATOMIC_RULES = {"metrics": ATOMIC_RULE,
                    "errors": ATOMIC_RULE.replace("Count the true positives: rows with label `1` predicted positive.",
                                                  "List the false positives, rows with label `0` predicted "
                                                  "positive: their ids, one per line in file order."),
                    "calibration": "Split [0, 1] into B equal-width score bins (B given below): bin i, numbered "
                                   "from 1, holds the scores s with (i - 1) / B <= s < i / B, and the last bin also "
                                   "holds s = 1. Count the rows in each bin: lines `bin,count` for bins 1 to B in "
                                   "order, empty bins included."}
    # The one awk pass each level-0 variant takes ($V: the delivered value).
    ATOMIC_AWK = {"metrics": "awk -F, -v p=\"$V\" 'NR > 1 && $3 == 1 && $2 * 100 >= p' /app/data/scored.csv | wc -l",
                  "errors": "awk -F, -v p=\"$V\" 'NR > 1 && $3 == 0 && $2 * 100 >= p {print $1}' /app/data/scored.csv",
                  "calibration": "awk -F, -v b=\"$V\" 'NR > 1 {i = int($2 * b); if (i == b) i--; c[i]++} "
                                 "END {for (i = 0; i < b; i++) print i + 1 \",\" c[i] + 0}' /app/data/scored.csv"}
    ATOMIC_OUT = {"metrics": ("/app/out/tp.txt", "the number of true positives"),
                  "errors": ("/app/out/false_positives.txt", "the false positives' ids"),
                  "calibration": ("/app/out/bins.csv", "the counts per bin")}

    @staticmethod
    def scored(rng, k: Knobs, n: int, pct: int) -> str:
        """One `id,score,label` CSV: the scores and their labels side by side."""
        p_text, l_text = make_data(rng, k, n, pct)
        labels = dict(line.split(",") for line in l_text.splitlines()[1:])
        return "id,score,label\n" + "".join(f"{line},{labels[line.split(',')[0]]}\n"
                                            for line in p_text.splitlines()[1:])

    @staticmethod
    def atomic_values(t: TaskBuilder, ns: dict, text: str) -> list[int]:
        """The values for which ``text``'s answer differs from every other value's and a plain float
        comparison in awk gives it too. A threshold's answer is monotone, so it must move one point either
        side (and no score may sit on it); a bin count changes its line count with B, but no score may land
        in another bin by float rounding of score * B."""
        scores = [line.split(",")[1] for line in text.splitlines()[1:]]
        if t.variant == "calibration":
            # Under partial credit one `bin,count` line shared with another B's table would earn reward
            # without the card: no other B may give any line of this one.
            f = ns["answer"]
            return [b for b in range(4, 13) if all(min(b - 1, int(float(s) * b)) == min(b - 1, round(float(s) * 10000)
                                                   * b // 10000) for s in scores)
                    and not any(set(f(text, b).splitlines()) & set(f(text, alt).splitlines())
                                for alt in range(1, 101) if alt != b)]
        exact = {round(float(s) * 10000) for s in scores}
        f = ns["answer"]
        return [p for p in range(30, 76) if p * 100 not in exact and f(text, p - 1) != f(text, p) != f(text, p + 1)]

    def atomic_output(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        src = fill(ATOMIC, MODE=repr(t.variant))
        ns = run_python(src)
        for _ in range(60):
            text = self.scored(rng, k, k.n, rng.randrange(30, 76))
            good = self.atomic_values(t, ns, text)
            if good:
                value = rng.choice(good)
                truth = ns["answer"](text, value)
                break
        else:
            raise FamilyError("classifier_eval_metrics: no value that every other one gets wrong in 60 draws")
        t.add_file("/app/data/scored.csv", text)
        lead = "Our fraud model's scores for the evaluation set, with the ground truth, are in " \
               "`/app/data/scored.csv` (`id,score,label`, scores in [0, 1])."
        t.say(f"{lead} {self.ATOMIC_RULES[t.variant]}")
        v = t.deliver(str(value), BINS_WHAT if t.variant == "calibration" else PCT_WHAT)
        path, what = self.ATOMIC_OUT[t.variant]
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n' + self.ATOMIC_AWK[t.variant].replace("$V", v) + f" > {path}")
        t.expect_output(path, truth, what)

    def atomic_program(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        src = fill(ATOMIC, MODE=repr(t.variant))
        ns = run_python(src)
        calib = t.variant == "calibration"
        for _ in range(50):
            value = rng.randrange(4, 13) if calib else rng.randrange(30, 76)
            cases = [(x, ns["answer"](x, value))
                     for x in (self.scored(rng, k, rng.randrange(20, 60), rng.randrange(30, 76) if calib else value)
                               for _ in range(10))]
            if all(any(ns["answer"](x, alt) != out for x, out in cases[2:]) for alt in range(1, 102)
                   if alt != value):
                break
        else:
            raise FamilyError("classifier_eval_metrics: no value every other one gets wrong in 50 draws")
        prints = {"metrics": "one integer", "errors": "the ids", "calibration": "the counts"}[t.variant]
        t.say("I want a small evaluation tool. It reads one CSV on standard input (header `id,score,label`, scores "
              f"in [0, 1]) and prints {prints}. {self.ATOMIC_RULES[t.variant]}")
        v = t.deliver(str(value), BINS_WHAT if calib else PCT_WHAT)
        t.expect_program(f"The {'number of bins' if calib else 'threshold'} is always the one given above: "
                         "hard-code it.", cases, {"Python": src, "C": fill(C_ATOMIC, MODE=str(MODES[t.variant]))})
        mark = "@@BINS@@" if calib else "@@PCT@@"
        t.solve(f'for f in /app/solution.*; do sed -i "s/{mark}/{v}/" "$f"; done')
