"""Which tones dominate this recording? A sampled signal (float volts, or raw 16-bit ADC counts at higher
levels) whose sample rate is delivered separately; the single-sided amplitude spectrum of a power-of-two
segment (Hann-windowed and cut out of a longer record at the top level) and its strongest peaks."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen, visible

REFERENCE = r'''
import cmath
import math
import sys

FS = "@@FS@@"  # the oracle writes the delivered sample rate here
TOP = @TOP@
COUNTS = @COUNTS@  # None: the file holds volts; else the full-scale voltage of the 16-bit ADC
SEGMENT = @SEGMENT@  # None: the whole file; else (start, length)
HANN = @HANN@


def fft(values):
    a = [complex(x) for x in values]
    n = len(a)
    j = 0
    for i in range(1, n):
        bit = n >> 1
        while j & bit:
            j ^= bit
            bit >>= 1
        j |= bit
        if i < j:
            a[i], a[j] = a[j], a[i]
    size = 2
    while size <= n:
        half = size // 2
        tw = [cmath.exp(-2j * math.pi * k / size) for k in range(half)]
        for start in range(0, n, size):
            for k in range(half):
                u, v = a[start + k], a[start + k + half] * tw[k]
                a[start + k], a[start + k + half] = u + v, u - v
        size *= 2
    return a


def samples(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line[0].isalpha():
            continue
        if COUNTS is None:
            out.append(float(line))
        else:
            out.append(int(line.split(",")[1]) * COUNTS / 32768)
    return out


def spectrum(text):
    x = samples(text)
    if SEGMENT is not None:
        x = x[SEGMENT[0]:SEGMENT[0] + SEGMENT[1]]
    n = len(x)
    w = [0.5 - 0.5 * math.cos(2 * math.pi * i / n) for i in range(n)] if HANN else [1.0] * n
    spec = fft([a * b for a, b in zip(x, w)])
    return n, [2 * abs(spec[k]) / sum(w) for k in range(n // 2)]


def peaks(text, fs=None):
    fs = int(fs or FS)
    n, amp = spectrum(text)
    if HANN:
        cands = [k for k in range(2, n // 2 - 1) if amp[k] > amp[k - 1] and amp[k] > amp[k + 1]]
    else:
        cands = list(range(1, n // 2))
    best = sorted(cands, key=lambda k: (-amp[k], k))[:TOP]
    return [(k * fs / n, amp[k]) for k in best]


def report(text, fs=None):
    return "".join("%.3f %.4f\n" % (f, a) for f, a in peaks(text, fs))


if __name__ == "__main__":
    sys.stdout.write(report(sys.stdin.read(), int(sys.argv[1]) if len(sys.argv) > 1 else None))
'''

RATES = (8000, 12000, 16000, 24000, 32000, 48000)


def twos(n: int) -> int:
    return (n & -n).bit_length() - 1


def safe(x: float) -> bool:
    f = abs(x) * 1e4
    return abs(f - math.floor(f) - 0.5) > 1e-3


def tones(rng, n: int, count: int, lo: int = 4) -> list[tuple[int, float, float]]:
    """(bin, amplitude, phase) for ``count`` on-bin tones, bins at least 4 apart, amplitudes 0.06 apart."""
    for _ in range(10000):
        bins = sorted(rng.sample(range(lo, n // 2 - 4), count))
        amps = sorted((round(rng.uniform(0.1, 1.2), 3) for _ in range(count)), reverse=True)
        if all(b - a >= 4 for a, b in zip(bins, bins[1:])) and all(a - b >= 0.06 for a, b in zip(amps, amps[1:])):
            rng.shuffle(amps)
            return [(b, a, rng.uniform(0, 6.283)) for b, a in zip(bins, amps)]
    raise FamilyError(f"dft_dominant_tones: no {count} separated tones in 10000 draws")


def synth(rng, n_total: int, n: int, start: int, parts: list[tuple[int, float, float]],
          warm: list[tuple[int, float, float]], dc: float, noise: float) -> list[float]:
    out = []
    for i in range(n_total):
        ts = warm if i < start else parts
        x = dc + sum(a * math.cos(2 * math.pi * b * (i - start) / n + ph) for b, a, ph in ts)
        out.append(x + rng.uniform(-noise, noise))
    return out


@dataclass(frozen=True)
class Knobs:
    sizes: tuple[int, ...]  # segment lengths N to choose from (powers of two)
    tones: int  # tones in the signal
    top: int  # peaks reported
    counts: bool  # raw 16-bit ADC counts instead of volts
    segment: bool  # the segment starts after a warm-up part of the record
    hann: bool  # Hann window and local-maximum peaks


WHAT = "the sample rate fs in Hz"


class Setup:
    """One task's draws: the segment length, the ADC reference, the segment start and the reference
    filled with them. The sample rate (the delivered value) is drawn later, once the data are known."""

    def __init__(self, t: TaskBuilder):
        k, rng = t.knobs, t.rng
        self.k, self.rng = k, rng
        self.n = rng.choice(k.sizes)
        self.vref = rng.choice([2.5, 3.3, 5.0]) if k.counts else None
        self.start = rng.randrange(200, 1500) if k.segment else 0
        self.src = fill(REFERENCE, TOP=k.top, COUNTS=self.vref, SEGMENT=(self.start, self.n) if k.segment else None,
                        HANN=k.hann)
        self.ns = run_python(self.src)

    def rates(self, n: int) -> list[int]:
        """Sample rates whose bins k * fs / n are exact in 3 decimals."""
        return [r for r in RATES if twos(r) + 3 >= n.bit_length() - 1]

    def record(self, n: int) -> str:
        k, rng = self.k, self.rng
        parts = tones(rng, n, k.tones)
        warm = tones(rng, n, 2) if k.segment else []
        n_total = self.start + n + (rng.randrange(0, n // 4) if k.segment else 0)
        x = synth(rng, n_total, n, self.start, parts, warm, rng.uniform(-0.3, 0.3), rng.uniform(0.002, 0.02))
        if self.vref is None:
            return "".join(f"{v:.6f}\n" for v in x)
        counts = [max(-32768, min(32767, round(v / self.vref * 32768))) for v in x]
        return "sample,counts\n" + "".join(f"{i},{c}\n" for i, c in enumerate(counts))

    def signal(self, size: int) -> str:
        """A record whose amplitudes round safely and whose reported peaks stand clear of the noise (the
        amplitudes do not depend on the sample rate)."""
        k = self.k
        for _ in range(200):
            text = self.record(size)
            found = self.ns["peaks"](text, 1)
            amps = sorted(self.ns["spectrum"](text)[1][1:], reverse=True)
            if all(safe(a) for _, a in found) and amps[k.top - 1] > 3 * amps[k.tones * 3 + 2]:
                return text
        raise FamilyError("dft_dominant_tones: no record with clear, safely rounded peaks in 200 draws")

    def texts(self) -> tuple[str, str, str]:
        """(the input format, the method, the output format) as the instruction states them."""
        k, n, start, vref = self.k, self.n, self.start, self.vref
        if k.counts:
            fmt_in = ("a CSV with header `sample,counts`: raw readings of a 16-bit ADC, where a count c stands for "
                      f"c * {vref:g} / 32768 volts")
        else:
            fmt_in = "one sample per line, in volts"
        method = ("The amplitude spectrum is the single-sided one: for bin k of the N-point discrete Fourier "
                  "transform X (X_k = sum_n x_n * exp(-2*pi*i*k*n/N)), the amplitude is ")
        if k.hann:
            method += ("2 * |X_k| / sum(w), where the segment was first multiplied by the periodic Hann window "
                       "w_n = 0.5 - 0.5 * cos(2*pi*n/N), n = 0..N-1, and bin k is at k * fs / N Hz. "
                       f"A peak is a bin k with 2 <= k <= N/2 - 2 whose amplitude is strictly larger than both "
                       f"neighbours'. Report the {k.top} peaks with the largest amplitudes.")
        else:
            method += ("2 * |X_k| / N, and bin k is at k * fs / N Hz. Consider bins 1 to N/2 - 1 (bin 0 is the DC "
                       "offset) and report the " + ("bin with the largest amplitude." if k.top == 1 else
                                                    f"{k.top} bins with the largest amplitudes."))
        seg = (f"Analyse only the segment of N = {n} samples that starts at sample index {start} (0-based, counting "
               "samples, not lines); what comes before it is the machine warming up." if k.segment else
               "N is the number of samples (a power of two).")
        fmt = ("one line per " + ("peak" if k.hann else "bin") + ", strongest first: the frequency in Hz with "
               "3 decimals, a space, the amplitude in volts with 4 decimals (e.g. `1250.000 0.7512`).")
        return fmt_in, seg + " " + method, fmt


@register
class DftDominantTones(Family):
    name = "dft_dominant_tones"
    domain = "scientific_computing"
    skill_types = ("Signal Processing",)
    primitive_skills = ("FFT peak finding", "spectral windowing", "amplitude scaling", "signal segmentation",
                        "unit handling", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    levels = {0: Knobs(sizes=(128,), tones=1, top=1, counts=False, segment=False, hann=False),
              1: Knobs(sizes=(256, 512), tones=1, top=1, counts=False, segment=False, hann=False),
              2: Knobs(sizes=(512, 1024), tones=3, top=3, counts=False, segment=False, hann=False),
              3: Knobs(sizes=(512, 1024), tones=4, top=4, counts=True, segment=False, hann=False),
              4: Knobs(sizes=(512, 1024), tones=5, top=4, counts=True, segment=True, hann=True)}

    def program_case(self, t: TaskBuilder) -> None:
        d = Setup(t)
        fmt_in, method, fmt = d.texts()
        t.say("Our vibration recorder produces signal dumps and I want a small analyser for them. It reads one "
              f"dump on standard input ({fmt_in}).")
        # The worked examples' outputs depend on the sample rate: it must not show in them either.
        for _ in range(20):
            fs = int(unseen(t, lambda: str(d.rng.choice(d.rates(d.n))), method, fmt))
            sizes = [d.n] if t.knobs.segment else [s for s in (128, 256, 512, 1024) if fs in d.rates(s)]
            texts = [d.signal(d.rng.choice(sizes)) for _ in range(10)]
            cases = [(text, d.ns["report"](text, fs)) for text in texts]
            if not visible(t, str(fs), method, fmt, *(x for case in cases[:2] for x in case)):
                break
        else:
            raise FamilyError("dft_dominant_tones: the sample rate shows in the worked examples in 20 draws")
        v = t.deliver(str(fs), WHAT)
        t.say(f"{method} Output: {fmt}")
        t.expect_program("All dumps come from the same recorder, so hard-code the sample rate given above.",
                         cases, {"Python": d.src})
        t.solve(f'test -n "{v}"\nsed -i "s/@@FS@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        d = Setup(t)
        fmt_in, method, fmt = d.texts()
        text = d.signal(d.n)
        path = "/app/data/signal.csv" if t.knobs.counts else "/app/data/signal.txt"
        t.add_file(path, text)
        if t.level == 0:
            self.atomic(t, d, text, path)
            return
        t.say(f"The vibration recorder on our test rig produced `{path}`: {fmt_in}. I need its dominant frequency "
              "components.")
        fs = int(unseen(t, lambda: str(d.rng.choice(d.rates(d.n))), method, fmt))
        v = t.deliver(str(fs), WHAT)
        t.say(method)
        t.say(f"Output format: {fmt}")
        t.add_solution_file("tones.py", d.src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/tones.py "{v}" < {path} > /app/out/tones.txt')
        t.expect_output("/app/out/tones.txt", d.ns["report"](text, fs), "the peak list (format above)")

    def atomic(self, t: TaskBuilder, d: Setup, text: str, path: str) -> None:
        """Level 0: only the frequency of the strongest bin (one numpy FFT)."""
        out = "/app/out/tone.txt"
        ask = (f"Write the frequency of its strongest component to `{out}`: with X the N-point DFT of the samples, "
               "take the bin k in 1..N/2-1 with the largest |X_k| and write k * fs / N in Hz with 3 decimals "
               "(e.g. `1250.000`).")
        t.say(f"`{path}` holds N = {d.n} samples of a vibration signal, one per line, taken at fs Hz.")
        fs = int(unseen(t, lambda: str(d.rng.choice(d.rates(d.n))), ask))
        v = t.deliver(str(fs), WHAT)
        t.say(ask)
        t.add_solution_file("tones.py", d.src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/tones.py "{v}" < {path} | cut -d" " -f1 > {out}')
        t.expect_output(out, "%.3f\n" % d.ns["peaks"](text, fs)[0][0], "the frequency")
