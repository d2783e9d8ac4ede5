"""Reference-program texts of batch_drift_screen's label_fit and drift_features variants: each is the
family's screening core (parse, stats, fmt) with a report of its own appended (see ``variant_reference``)."""

# label_fit: the label check alone, against a delivered chi-square limit (@@CHILIMIT@@, in millionths: ids
# stripped of a repeated digit show five-digit numbers, so thousandths would sit among them).
LABEL_FIT = r'''

LIMIT = "@@CHILIMIT@@"  # the chi-square limit in millionths (digits)


def label_fit(text, profile=None, limit=None):
    """'<fit|shift> <limit - chi-square> <class contributing most>' of the valid rows' labels."""
    prof = profile or PROFILE
    lim = int(limit or LIMIT) / 1000000
    valid = parse(text, prof)[1]
    n = len(valid)
    chi2 = stats(valid, prof)[0]
    part = {c: (sum(1 for _, lab in valid if lab == c) - n * p) ** 2 / (n * p) for c, p in prof["labels"].items()}
    top = max(part, key=lambda c: part[c])
    return "%s %s %s" % ("shift" if chi2 > lim else "fit", fmt(lim - chi2), top)


def report(named, prof, limit):
    """One line per (file name, text), in the order given."""
    return "".join("%s %s\n" % (name, label_fit(text, prof, limit)) for name, text in named)
'''

# drift_features: every (batch, feature) pair past Z, with the signed z, largest |z| first.
DRIFT_FEATURES = r'''

def drifted(text, profile=None, zmilli=None):
    """[(feature, signed z)] of the features whose |z| over the valid rows exceeds Z."""
    prof = profile or PROFILE
    valid = parse(text, prof)[1]
    n = len(valid)
    out = []
    for j, (name, f) in enumerate(prof["features"].items()):
        z = (sum(xs[j] for xs, _ in valid) / n - f["mean"]) / (f["std"] / math.sqrt(n))
        if abs(z) > z_limit(zmilli):
            out.append((name, z))
    return out


def report(named, prof, zmilli):
    """One line per drifted pair of the (file name, text) batches, largest |z| first."""
    rows = [(-abs(z), name, feature, z) for name, text in named for feature, z in drifted(text, prof, zmilli)]
    return "".join("%s %s %s\n" % (name, feature, fmt(z)) for _, name, feature, z in sorted(rows))
'''

# Both variants' command line: profile, the delivered value, batch files (label_fit's screen reads stdin).
VARIANT_MAIN = r'''

if __name__ == "__main__":
    if len(sys.argv) == 1:
        sys.exit(1 if label_fit(sys.stdin.read()).startswith("shift") else 0)
    with open(sys.argv[1]) as f:
        prof = json.load(f)
    named = []
    for path in sys.argv[3:]:
        with open(path) as f:
            named.append((path.rsplit("/", 1)[-1], f.read()))
    sys.stdout.write(report(named, prof, sys.argv[2]))
'''

# Level 0 of both: one statistic of one column against a cutoff (@@CUT@@), exact in integers.
ATOMIC = r'''
import sys

CUT = "@@CUT@@"  # label_fit: the share of @CLASS@ lines in ten-thousandths; drift_features: the mean in thousandths
SHARE = @SHARE@


def over(text, cut=None):
    rows = [line.split(",") for line in text.splitlines()[1:] if line.strip()]
    if SHARE:
        total = 10000 * sum(1 for r in rows if r[-1].strip() == "@CLASS@")
    else:
        total = sum(round(float(r[1]) * 1000) for r in rows)
    return total > int(cut or CUT) * len(rows)


if __name__ == "__main__":
    sys.exit(1 if over(sys.stdin.read()) else 0)
'''

C_ATOMIC = r'''
/* Rejects a batch (standard input) whose share of @CLASS@ lines (in ten-thousandths, SHARE 1) or mean of the
   second column (in thousandths, SHARE 0) exceeds the cutoff: exit 1, else 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUT (@@CUT@@LL)
#define SHARE @SHARE@

int main(void) {
    static char line[65536];
    long long n = 0, total = 0;
    int header = 1;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line) continue;
        if (header) {
            header = 0;
            continue;
        }
        char *first = strchr(line, ','), *last = strrchr(line, ',');
        n++;
        if (SHARE)
            total += 10000 * (last && !strcmp(last + 1, "@CLASS@"));
        else if (first)
            total += llround(strtod(first + 1, NULL) * 1000);
    }
    return total > CUT * n;
}
'''
