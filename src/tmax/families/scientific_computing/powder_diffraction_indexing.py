"""Powder X-ray diffraction of a cubic sample measured at a beamline whose wavelength is delivered
separately. Variants: `dspacing` turns the observed peak positions into lattice spacings with Bragg's
law, `predict` lists where the reflections of a cubic lattice (simple, body- or face-centred, with
their extinction rules) fall in 2-theta, `index` assigns each observed peak to a reflection within a
tolerance (or none) and refines the lattice parameter. Higher levels add comment lines, unsorted
peaks, weak peaks below an intensity cut, impurity peaks and an instrument zero offset."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import hidden

REFERENCE = r'''
import math
import sys

LATTICE = "@LATTICE@"  # sc, bcc or fcc
A = @A@  # nominal lattice parameter, angstrom
ZERO = @ZERO@  # degrees the instrument reads 2-theta too high
CUT = @CUT@  # peaks weaker than this share of the strongest are noise (0: keep all)
MAX_2T = @MAX_2T@
TOL = @TOL@  # degrees, index
REFINE = @REFINE@  # index: also report the refined lattice parameter


def allowed(h, k, l):
    if LATTICE == "bcc":
        return (h + k + l) % 2 == 0
    if LATTICE == "fcc":
        return len({h % 2, k % 2, l % 2}) == 1
    return True


def two_theta(wl, d):
    s = wl / (2 * d)
    return None if s >= 1 else 2 * math.degrees(math.asin(s))


def reflections(wl, hkl_text=None):
    """[(2theta, label)] in 2-theta order: the listed hkl (one per line), or every allowed h>=k>=l>=0 up
    to MAX_2T, the sets sharing h^2+k^2+l^2 (one position) joined by '/'."""
    if hkl_text is not None:
        out = []
        for line in hkl_text.split():
            n = sum(int(c) ** 2 for c in line)
            tt = two_theta(wl, A / math.sqrt(n))
            if tt is not None:
                out.append((tt, line))
        return sorted(out)
    by_n = {}
    for h in range(9):
        for k in range(h + 1):
            for l in range(k + 1):
                if h and allowed(h, k, l):
                    by_n.setdefault(h * h + k * k + l * l, []).append("%d%d%d" % (h, k, l))
    out = []
    for n in sorted(by_n):
        tt = two_theta(wl, A / math.sqrt(n))
        if tt is not None and tt <= MAX_2T:
            out.append((tt, "/".join(sorted(by_n[n]))))
    return out


def peaks(text):
    """[(raw 2theta text, corrected 2theta)] of the real peaks, in 2-theta order."""
    rows = []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if not line or line.startswith("two_theta"):
            continue
        parts = line.split(",")
        rows.append((parts[0], float(parts[0]) - ZERO, float(parts[1]) if len(parts) > 1 else 1.0))
    top = max(r[2] for r in rows)
    return sorted(((raw, tt) for raw, tt, i in rows if i >= CUT * top), key=lambda p: p[1])


def d_of(wl, tt):
    return wl / (2 * math.sin(math.radians(tt / 2)))


def dspacing(text, wl):
    return "".join("%s %.5f\n" % (raw, d_of(wl, tt)) for raw, tt in peaks(text))


def predict(wl, hkl_text=None):
    return "".join("%s %.3f\n" % (label, tt + ZERO) for tt, label in reflections(wl, hkl_text))


def index(text, wl, hkl_text=None):
    refl = reflections(wl, hkl_text)
    out, fits = [], []
    for raw, tt in peaks(text):
        best = min(refl, key=lambda r: abs(r[0] - tt))
        d = d_of(wl, tt)
        if abs(best[0] - tt) <= TOL:
            out.append("%s %s %.5f\n" % (raw, best[1], d))
            fits.append(d * math.sqrt(sum(int(c) ** 2 for c in best[1].split("/")[0])))
        else:
            out.append("%s unindexed %.5f\n" % (raw, d))
    if REFINE:
        out.append("a=%.5f\n" % (sum(fits) / len(fits)))
    return "".join(out)


if __name__ == "__main__":  # dspacing|predict|index WAVELENGTH_FM [peaks file] [hkl file]
    mode, wl = sys.argv[1], int(sys.argv[2]) / 1e5
    args = [open(p).read() for p in sys.argv[3:]]
    if mode == "dspacing":
        sys.stdout.write(dspacing(args[0], wl))
    elif mode == "predict":
        sys.stdout.write(predict(wl, *args))
    else:
        sys.stdout.write(index(args[0], wl, *args[1:]))
'''

LATTICE_TEXT = {"sc": "simple cubic (every h, k, l reflects)",
                "bcc": "body-centred cubic (only reflections with h + k + l even)",
                "fcc": "face-centred cubic (only reflections with h, k, l all even or all odd)"}


@dataclass(frozen=True)
class Knobs:
    peaks: int  # observed peaks written (dspacing/index) or hkl sets listed (predict at low levels)
    hkl_list: bool  # the candidate reflections are listed in a file (else enumerate with extinction rules)
    comments: bool  # comment lines, peaks not in order
    cut: float  # intensity cut as a share of the strongest peak (0: a plain list of positions)
    impurity: int  # peaks of no reflection (index) / of another phase
    zero: bool  # instrument zero offset
    refine: bool  # index: refined lattice parameter line


def _safe(fmt: str, x: float) -> bool:
    """The printed text survives a relative nudge of 1e-9 (float noise cannot flip the last digit)."""
    return fmt % (x * (1 + 1e-9)) == fmt % (x * (1 - 1e-9))


@register
class PowderDiffractionIndexing(Family):
    name = "powder_diffraction_indexing"
    domain = "scientific_computing"
    skill_types = ("Experimental Data", "Numerical Methods")
    primitive_skills = ("unit handling", "tolerance-based comparison", "floating-point rounding control",
                        "least squares fitting", "measurement validation")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("dspacing", "predict", "index")
    # Level 0: a short list of positions (or of hkl): one awk line applying Bragg's law.
    levels = {0: Knobs(peaks=4, hkl_list=True, comments=False, cut=0.0, impurity=0, zero=False, refine=False),
              1: Knobs(peaks=7, hkl_list=True, comments=True, cut=0.0, impurity=0, zero=False, refine=False),
              2: Knobs(peaks=9, hkl_list=False, comments=True, cut=0.05, impurity=1, zero=False, refine=True),
              3: Knobs(peaks=12, hkl_list=False, comments=True, cut=0.05, impurity=2, zero=True, refine=True),
              4: Knobs(peaks=16, hkl_list=False, comments=True, cut=0.08, impurity=3, zero=True, refine=True)}

    def _draw(self, t: TaskBuilder, ns: dict, wl: float, lattice: str, a: float, zero: float) -> tuple[str, str]:
        """(peaks file, hkl file): observed peaks of a sample whose true parameter is within 0.03% of
        nominal, with noise, weak and impurity peaks; the hkl file lists candidate sets."""
        k, rng = t.knobs, t.rng
        hkl_text = None
        if k.hkl_list:  # mixed sets, a few of them extinct or out of reach: the file says which to use
            by_n: dict[int, str] = {}  # one set per h^2+k^2+l^2, so no two listed sets share a position
            for _ in range(k.peaks + 4):
                hkl = sorted((rng.randrange(4), rng.randrange(4), rng.randrange(1, 5)), reverse=True)
                by_n.setdefault(sum(x * x for x in hkl), "%d%d%d" % tuple(hkl))
            hkl_text = "".join(s + "\n" for s in sorted(by_n.values()))
        refl = ns["reflections"](wl, hkl_text)
        if len(refl) < 3:
            return "", ""
        true_a = a * (1 + rng.uniform(-3e-4, 3e-4))
        chosen = refl if len(refl) <= k.peaks else sorted(rng.sample(refl, k.peaks))
        rows = []
        for tt, label in chosen:
            if tt > 150:
                continue
            n = sum(int(c) ** 2 for c in label.split("/")[0])
            obs = 2 * math.degrees(math.asin(wl / (2 * true_a / math.sqrt(n)))) + rng.uniform(-0.01, 0.01)
            if obs + zero < 150:
                rows.append([obs + zero, rng.uniform(0.15, 1.0)])
        for _ in range(k.impurity):
            rows.append([rng.uniform(15, 110) + zero, rng.uniform(0.15, 0.5)])
        if k.cut:
            for _ in range(3):
                rows.append([rng.uniform(15, 110) + zero, rng.uniform(0.001, k.cut * 0.6)])
        top = max(r[1] for r in rows)
        if k.comments:
            rng.shuffle(rows)
        else:
            rows.sort()
        if k.cut:
            body = ["two_theta,intensity"] + ["%.3f,%d" % (tt, round(i / top * 9000)) for tt, i in rows]
        else:
            body = ["%.3f" % tt for tt, _ in rows]
        if k.comments:
            body.insert(0, f"# scan {rng.randrange(100, 999)}, step 0.01 deg, cubic sample")
            body.insert(rng.randrange(1, len(body)), "# detector gain changed")
        return "".join(b + "\n" for b in body), hkl_text or ""

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        lattice = rng.choice(("sc", "bcc", "fcc"))
        a = round(rng.uniform(3.0, 5.8), 4)
        zero = round(rng.uniform(0.02, 0.09), 3) if k.zero else 0.0
        tol = 0.15
        src = fill(REFERENCE, LATTICE=lattice, A=a, ZERO=zero, CUT=k.cut, MAX_2T=120.0, TOL=tol, REFINE=k.refine)
        ns = run_python(src)
        uses_peaks, lists = variant != "predict", k.hkl_list and variant != "dspacing"
        for _ in range(60):
            # The wavelength (fm) is drawn first since the peaks are made with it; kept only when no number the
            # agent can read lies within `gap` of it and a wavelength `gap` off changes every line of the answer.
            wl_fm = rng.randrange(60000, 190000)
            gap, wl = 200, wl_fm / 1e5
            peaks_text, hkl_text = self._draw(t, ns, wl, lattice, a, zero)
            if not hkl_text and k.hkl_list or (uses_peaks and not peaks_text):
                continue
            hkl = (hkl_text,) if k.hkl_list else ()
            answer = {"dspacing": lambda w: ns["dspacing"](peaks_text, w),
                      "predict": lambda w: ns["predict"](w, *hkl),
                      "index": lambda w: ns["index"](peaks_text, w, *hkl)}[variant]
            truth = answer(wl)
            if not truth or not self._robust(ns, variant, peaks_text, wl, hkl, tol):
                continue
            if uses_peaks:
                t.add_file("/app/xrd/peaks.txt", peaks_text)
            if lists:
                t.add_file("/app/xrd/hkl.txt", hkl_text)
            if all(not set(answer((wl_fm + d) / 1e5).splitlines()) & set(truth.splitlines()) for d in (-gap, gap)) \
                    and hidden(t, wl_fm, gap):
                break
        else:
            raise FamilyError("powder_diffraction_indexing: no pattern with a safe answer in 60 draws")
        self._say(t, lattice, a, zero, tol)
        v = t.deliver(str(wl_fm), "the beamline wavelength in femtometres")
        files = (["/app/xrd/peaks.txt"] if uses_peaks else []) + (["/app/xrd/hkl.txt"] if lists else [])
        out = f"/app/out/{variant}.txt"
        t.add_solution_file("xrd.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/xrd.py {variant} "{v}" {" ".join(files)} > {out}')
        t.expect_output(out, truth, {"dspacing": "the d-spacings", "predict": "the reflection positions",
                                     "index": "the indexed peaks"}[variant])

    def _robust(self, ns, variant, peaks_text, wl, hkl, tol) -> bool:
        """Every printed number clear of a rounding edge; for `index`, every peak clearly inside or outside
        the tolerance of its nearest reflection."""
        refl = ns["reflections"](wl, *hkl)
        if variant == "predict":
            return all(_safe("%.3f", tt + ns["ZERO"]) for tt, _ in refl)
        pts = ns["peaks"](peaks_text)
        ok = all(_safe("%.5f", ns["d_of"](wl, tt)) for _, tt in pts) and len({raw for raw, _ in pts}) == len(pts)
        if variant == "index":
            near = [min(abs(r[0] - tt) for r in refl) for _, tt in pts]
            ok = ok and all(x < tol * 0.6 or x > tol * 2 for x in near) and any(x < tol for x in near)
            if ns["REFINE"]:
                ok = ok and _safe("%.5f", float(ns["index"](peaks_text, wl, *hkl).splitlines()[-1][2:]))
        return ok

    def _say(self, t: TaskBuilder, lattice: str, a: float, zero: float, tol: float) -> None:
        k, variant = t.knobs, t.variant
        uses_peaks = variant != "predict"
        parts = [f"We measured a powder of a {LATTICE_TEXT[lattice]} phase with nominal lattice parameter a = {a} "
                 "angstrom on a beamline; Bragg's law is lambda = 2 d sin(theta), 2-theta being the detector angle "
                 "in degrees, and a reflection h k l has d = a / sqrt(h^2 + k^2 + l^2)."]
        if uses_peaks:
            parts.append("`/app/xrd/peaks.txt` holds the observed peaks, " + (
                "a CSV `two_theta,intensity` (degrees, counts)" if k.cut else "one 2-theta position (degrees) per line")
                + ".")
            if k.cut:
                parts.append(f"Peaks weaker than {k.cut:g} times the strongest peak's intensity are noise: drop them.")
        if k.comments:
            parts.append("Lines or line ends from `#` on are comments" + (", and the peaks are in no particular order."
                                                                       if uses_peaks else "."))
        if k.zero:
            parts.append(f"The diffractometer's zero is off: it reads every 2-theta {zero} degrees too high"
                         + (", so subtract that from each position before using it." if uses_peaks else
                            ", so report positions as the instrument will show them (add it)."))
        if k.hkl_list and variant != "dspacing":
            parts.append("The candidate reflections are listed in `/app/xrd/hkl.txt`, one `hkl` digit triple per "
                         "line (e.g. `210` is h=2, k=1, l=0); use exactly those (the extinction rule does not apply), "
                         "skipping any whose sin(theta) would reach 1.")
        elif variant != "dspacing":
            parts.append("The reflections are every allowed h >= k >= l >= 0 (not all zero, up to h = 8) with "
                         "2-theta at most 120 degrees; sets with the same h^2 + k^2 + l^2 fall at one position and are "
                         "one reflection, labelled by their digit triples in ascending order joined by `/` (e.g. "
                         "`221/300`).")
        t.say(" ".join(parts))
        raw = "the 2-theta exactly as written in the file"
        if variant == "dspacing":
            t.say(f"For every real peak write `<2-theta> <d>`: {raw}, then d in angstrom with 5 decimals, in order "
                  "of increasing 2-theta.")
        elif variant == "predict":
            t.say("Write each reflection that can be observed as `<label> <2-theta>` with 2-theta in degrees to 3 "
                  "decimals, in order of increasing 2-theta" + (" (the label is the digit triple as listed)."
                                                                 if k.hkl_list else "."))
        else:
            t.say(f"Index the real peaks: a peak belongs to the reflection whose predicted 2-theta (from the nominal "
                  f"a) is nearest to its {'corrected ' if k.zero else ''}position, if that is within {tol} degrees; "
                  f"otherwise it is `unindexed`. For each real peak in order of increasing 2-theta write `<2-theta> "
                  f"<label> <d>`: {raw}, the reflection's label (or `unindexed`), and the peak's d in angstrom with "
                  "5 decimals."
                  + (" Finish with a line `a=<refined a>`: the mean over the indexed peaks of d * sqrt(h^2 + k^2 + "
                     "l^2) (use the first set of a label), 5 decimals." if k.refine else ""))
