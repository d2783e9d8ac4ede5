"""Which tones dominate this recording? A sampled signal (float volts, or raw 16-bit ADC counts at higher
levels) whose sample rate is delivered separately; the single-sided amplitude spectrum of a power-of-two
segment (Hann-windowed and cut out of a longer record at the top level). Variants: peak_list (its strongest
peaks), band_levels (the RMS level and strongest bin of each given frequency band) and frame_peaks (the record
cut into blocks of N samples: each block's start time and strongest bin, a coarse spectrogram)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen, visible

CORE = r'''
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
'''

# The other variants' reports, on the same parsing and spectrum (appended to CORE before the main block).
EXTRA = r'''


BANDS = @BANDS@  # band_levels: the (low, high) bands in Hz
FRAME = @FRAME@  # frame_peaks: (index of the first block's first sample, block length)


def band_lines(n, amp, fs, bands):
    out = []
    for lo, hi in bands:
        ks = [k for k in range(1, n // 2) if lo * n <= k * fs < hi * n]
        peak = max(ks, key=lambda k: (amp[k], -k))
        rms = math.sqrt(sum(amp[k] ** 2 / 2 for k in ks))
        out.append("%d %d %.3f %.4f\n" % (lo, hi, peak * fs / n, rms))
    return "".join(out)


def levels(text, fs=None, bands=None):
    n, amp = spectrum(text)
    return band_lines(n, amp, int(fs or FS), bands or BANDS)


def blocks(text, fs=None):
    """(start time in ms, frequency, amplitude) of each whole block's strongest bin."""
    fs = int(fs or FS)
    first, n = FRAME
    x = samples(text)
    w = [0.5 - 0.5 * math.cos(2 * math.pi * i / n) for i in range(n)] if HANN else [1.0] * n
    lo, hi = (2, n // 2 - 1) if HANN else (1, n // 2)
    out = []
    for start in range(first, len(x) - n + 1, n):
        spec = fft([a * b for a, b in zip(x[start:start + n], w)])
        amp = [2 * abs(spec[k]) / sum(w) for k in range(n // 2)]
        k = max(range(lo, hi), key=lambda k: (amp[k], -k))
        out.append((start * 1000 / fs, k * fs / n, amp[k]))
    return out


def frames(text, fs=None):
    return "".join("%.3f %.3f %.4f\n" % row for row in blocks(text, fs))
'''


def main(report: str) -> str:
    """The program's main block, printing ``report``'s text."""
    return ('\n\nif __name__ == "__main__":\n'
            f'    sys.stdout.write({report}(sys.stdin.read(), int(sys.argv[1]) if len(sys.argv) > 1 else None))\n')


VARIANTS = ("peak_list", "band_levels", "frame_peaks")
REPORTS = {"peak_list": "report", "band_levels": "levels", "frame_peaks": "frames"}
REFERENCE = CORE + main("report")


def reference(variant: str) -> str:
    """The reference program template of a variant (peak_list's text is today's, unchanged)."""
    return CORE + ("" if variant == VARIANTS[0] else EXTRA) + main(REPORTS[variant])


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


def edge(rng, lo_hz: float, hi_hz: float, fs: int) -> int | None:
    """A band edge in Hz, a multiple of 10 strictly between lo_hz and hi_hz and on no bin of any N <= 1024
    (so that no bin sits on an edge), or None."""
    fit = [e for e in range(10 * math.floor(lo_hz / 10) + 10, math.ceil(hi_hz), 10) if e * 1024 % fs]
    return rng.choice(fit) if fit else None


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
    filled with them. The sample rate (the delivered value) is drawn later, once the data are known.
    band_levels also draws its bands once the rate is known; frame_peaks reads blocks of N samples."""

    def __init__(self, t: TaskBuilder):
        k, rng = t.knobs, t.rng
        self.k, self.rng, self.variant = k, rng, t.variant
        for _ in range(VARIANTS.index(t.variant)):  # a seed's signal differs between the variants
            rng.random()
        self.n = rng.choice(k.sizes)
        self.vref = rng.choice([2.5, 3.3, 5.0]) if k.counts else None
        self.start = rng.randrange(200, 1500) if k.segment else 0
        if self.variant == "frame_peaks":  # block start times (index * 1000 / fs ms) then round safely
            self.start -= self.start % 32
        self.src = self.program()
        self.ns = run_python(self.src)
        self.bins: list[int] = []  # the last record's tone bins

    def program(self, bands: list[tuple[int, int]] | None = None) -> str:
        k, frames = self.k, self.variant == "frame_peaks"
        segment = (self.start, self.n) if k.segment and not frames else None
        values = dict(TOP=k.top, COUNTS=self.vref, SEGMENT=segment, HANN=k.hann)
        if self.variant != VARIANTS[0]:
            values.update(BANDS=bands, FRAME=(self.start, self.n) if frames else None)
        return fill(reference(self.variant), **values)

    def rates(self, n: int) -> list[int]:
        """Sample rates whose bins k * fs / n are exact in 3 decimals."""
        return [r for r in RATES if twos(r) + 3 >= n.bit_length() - 1]

    def render(self, x: list[float]) -> str:
        if self.vref is None:
            return "".join(f"{v:.6f}\n" for v in x)
        counts = [max(-32768, min(32767, round(v / self.vref * 32768))) for v in x]
        return "sample,counts\n" + "".join(f"{i},{c}\n" for i, c in enumerate(counts))

    def record(self, n: int) -> str:
        k, rng = self.k, self.rng
        parts = tones(rng, n, k.tones)
        self.bins = sorted(b for b, _, _ in parts)
        warm = tones(rng, n, 2) if k.segment else []
        n_total = self.start + n + (rng.randrange(0, n // 4) if k.segment else 0)
        x = synth(rng, n_total, n, self.start, parts, warm, rng.uniform(-0.3, 0.3), rng.uniform(0.002, 0.02))
        return self.render(x)

    def block_record(self, n: int, count: int) -> str:
        """``count`` blocks of n samples, each with tones of its own (after the warm-up; a partial block
        trails at the top level)."""
        k, rng = self.k, self.rng
        dc, noise = rng.uniform(-0.3, 0.3), rng.uniform(0.002, 0.02)
        x = synth(rng, self.start, n, self.start, [], tones(rng, n, 2), dc, noise) if k.segment else []
        for _ in range(count):
            x += synth(rng, n, n, 0, tones(rng, n, k.tones), [], dc, noise)
        if k.segment:
            x += synth(rng, rng.randrange(1, n // 2), n, 0, tones(rng, n, k.tones), [], dc, noise)
        return self.render(x)

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

    def fixture(self) -> str:
        """The analysed dump of an output task (band_levels' is checked once its bands are drawn)."""
        if self.variant == "peak_list":
            return self.signal(self.n)
        if self.variant == "band_levels":
            return self.record(self.n)
        return self.sample(self.n, self.k.tones + 2)

    def sample(self, size: int, blocks: int = 0, fs: int = 1, bands: list | None = None) -> str:
        """A hidden input of a program task (``blocks`` blocks for frame_peaks, of the task's N)."""
        if self.variant == "peak_list":
            return self.signal(size)
        for _ in range(200):
            if self.variant == "frame_peaks":
                text = self.block_record(self.n, blocks or self.rng.randint(2, self.k.tones + 2))
                if all(safe(a) for _, _, a in self.ns["blocks"](text, fs)):
                    return text
            else:
                text = self.record(size)
                if self.bands_ok(text, fs, bands):
                    return text
        raise FamilyError(f"dft_dominant_tones: no {self.variant} input with safely rounded values in 200 draws")

    def bands_ok(self, text: str, fs: int, bands: list[tuple[int, int]]) -> bool:
        """Does every band hold bins, a clear strongest one, and an RMS level that rounds safely?"""
        n, amp = self.ns["spectrum"](text)
        for lo, hi in bands:
            a = sorted((amp[k] for k in range(1, n // 2) if lo * n <= k * fs < hi * n), reverse=True)
            if len(a) < 2 or a[0] < a[1] * (1 + 1e-6) or not safe(math.sqrt(sum(x * x / 2 for x in a))):
                return False
        return True

    def bands(self, fs: int, text: str | None = None) -> list[tuple[int, int]]:
        """Contiguous bands in Hz: one around each tone of ``text`` (an output task's dump), else
        ``k.tones`` bands, each several bins wide at every N, over the spectrum of any hidden input."""
        n, rng, step = self.n, self.rng, fs / 128
        for _ in range(200):
            if text is not None:
                cuts = [0, *self.bins, n // 2 - 1]
                edges = [edge(rng, cuts[i] * fs / n, cuts[i + 1] * fs / n, fs) for i in range(len(cuts) - 1)]
            else:
                edges = sorted(edge(rng, 2 * step, fs / 2 - 2 * step, fs) for _ in range(self.k.tones + 1))
                if any(b - a < 3 * step for a, b in zip(edges, edges[1:])):
                    continue
            pairs = list(zip(edges, edges[1:]))
            if None not in edges and (text is None or self.bands_ok(text, fs, pairs)):
                return pairs
        raise FamilyError("dft_dominant_tones: no bands with safely rounded levels in 200 draws")

    def answer(self, text: str, fs: int, bands: list | None = None) -> str:
        if self.variant == "band_levels":
            return self.ns["levels"](text, fs, bands)
        return self.ns[REPORTS[self.variant]](text, fs)

    def spec_text(self, part: str = "segment") -> str:
        """The amplitude spectrum's definition, up to where bin k lies."""
        text = ("The amplitude spectrum is the single-sided one: for bin k of the N-point discrete Fourier "
                "transform X (X_k = sum_n x_n * exp(-2*pi*i*k*n/N)), the amplitude is ")
        if self.k.hann:
            return text + (f"2 * |X_k| / sum(w), where the {part} was first multiplied by the periodic Hann window "
                           "w_n = 0.5 - 0.5 * cos(2*pi*n/N), n = 0..N-1, and bin k is at k * fs / N Hz.")
        return text + "2 * |X_k| / N, and bin k is at k * fs / N Hz."

    def texts(self) -> tuple[str, str, str]:
        """(the input format, the method, the output format) as the instruction states them."""
        k, n, start, vref = self.k, self.n, self.start, self.vref
        if k.counts:
            fmt_in = ("a CSV with header `sample,counts`: raw readings of a 16-bit ADC, where a count c stands for "
                      f"c * {vref:g} / 32768 volts")
        else:
            fmt_in = "one sample per line, in volts"
        seg = (f"Analyse only the segment of N = {n} samples that starts at sample index {start} (0-based, counting "
               "samples, not lines); what comes before it is the machine warming up." if k.segment else
               "N is the number of samples (a power of two).")
        if self.variant == "band_levels":
            return fmt_in, seg + " " + self.spec_text() + BAND_METHOD, BAND_FORMAT
        if self.variant == "frame_peaks":
            warm = (f" from sample index {start} on (0-based, counting samples, not lines; what comes before is "
                    "the machine warming up)" if k.segment else "")
            method = (f"Split the samples{warm} into consecutive blocks of N = {n} samples; an incomplete last "
                      "block is ignored. For each block, X is the DFT of the block's samples. "
                      + self.spec_text("block") + " The block's strongest bin is the k in "
                      + ("2..N/2-2" if k.hann else "1..N/2-1") + " with the largest amplitude.")
            return fmt_in, method, FRAME_FORMAT
        method = self.spec_text()
        if k.hann:
            method += (f" A peak is a bin k with 2 <= k <= N/2 - 2 whose amplitude is strictly larger than both "
                       f"neighbours'. Report the {k.top} peaks with the largest amplitudes.")
        else:
            method += (" Consider bins 1 to N/2 - 1 (bin 0 is the DC offset) and report the "
                       + ("bin with the largest amplitude." if k.top == 1 else
                          f"{k.top} bins with the largest amplitudes."))
        fmt = ("one line per " + ("peak" if k.hann else "bin") + ", strongest first: the frequency in Hz with "
               "3 decimals, a space, the amplitude in volts with 4 decimals (e.g. `1250.000 0.7512`).")
        return fmt_in, seg + " " + method, fmt


BAND_METHOD = (" A band [lo, hi) holds the bins k in 1..N/2-1 with lo <= k * fs / N < hi: its RMS level is "
               "sqrt(sum of amplitude^2 / 2) over those bins, and its peak is the one of them with the largest "
               "amplitude.")
BAND_FORMAT = ("one line per band, in the order given: lo and hi as given, the peak's frequency in Hz with 3 "
               "decimals and the band's RMS level in volts with 4 decimals, separated by spaces "
               "(e.g. `1200 1900 1250.000 0.5312`).")
FRAME_FORMAT = ("one line per block, in order: its start time in ms (the index of its first sample, counted from "
                "the file's first sample, times 1000 / fs) with 3 decimals, the frequency of its strongest bin in "
                "Hz with 3 decimals and that bin's amplitude in volts with 4 decimals, separated by spaces "
                "(e.g. `21.333 1250.000 0.7512`).")


def band_text(bands: list[tuple[int, int]]) -> str:
    return "The bands, in Hz: " + ", ".join(f"[{lo}, {hi})" for lo, hi in bands) + "."


@register
class DftDominantTones(Family):
    name = "dft_dominant_tones"
    domain = "scientific_computing"
    skill_types = ("Signal Processing",)
    primitive_skills = ("FFT peak finding", "spectral windowing", "amplitude scaling", "signal segmentation",
                        "unit handling", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = VARIANTS
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
            fixed = t.knobs.segment or t.variant == "frame_peaks"
            sizes = [d.n] if fixed else [s for s in (128, 256, 512, 1024) if fs in d.rates(s)]
            bands = d.bands(fs) if t.variant == "band_levels" else None
            ask = [band_text(bands)] if bands else []
            texts = [d.sample(d.rng.choice(sizes), fs=fs, bands=bands) for _ in range(10)]
            cases = [(text, d.answer(text, fs, bands)) for text in texts]
            if not visible(t, str(fs), method, fmt, *ask, *(x for case in cases[:2] for x in case)):
                break
        else:
            raise FamilyError("dft_dominant_tones: the sample rate shows in the worked examples in 20 draws")
        v = t.deliver(str(fs), WHAT)
        t.say(" ".join([method, *ask]) + f" Output: {fmt}")
        t.expect_program("All dumps come from the same recorder, so hard-code the sample rate given above.",
                         cases, {"Python": d.program(bands)})
        t.solve(f'test -n "{v}"\nsed -i "s/@@FS@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        d = Setup(t)
        fmt_in, method, fmt = d.texts()
        text = d.fixture()
        path = "/app/data/signal.csv" if t.knobs.counts else "/app/data/signal.txt"
        t.add_file(path, text)
        if t.level == 0:
            self.atomic(t, d, text, path)
            return
        t.say(f"The vibration recorder on our test rig produced `{path}`: {fmt_in}. I need its dominant frequency "
              "components.")
        fs = int(unseen(t, lambda: str(d.rng.choice(d.rates(d.n))), method, fmt))
        v = t.deliver(str(fs), WHAT)
        bands = d.bands(fs, text) if t.variant == "band_levels" else None
        t.say(" ".join([method, *([band_text(bands)] if bands else [])]))
        t.say(f"Output format: {fmt}")
        t.add_solution_file("tones.py", d.program(bands))
        out = OUTPUTS[t.variant]
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/tones.py "{v}" < {path} > {out}')
        t.expect_output(out, d.answer(text, fs, bands), WHATS[t.variant])

    def atomic(self, t: TaskBuilder, d: Setup, text: str, path: str) -> None:
        """Level 0: one numpy FFT: the strongest bin's frequency (of the signal or of each block), or a band's."""
        out, first, last = ATOMIC[t.variant]
        if t.variant == "band_levels":
            ask = (f"Write the strongest frequency and the RMS level of the band [@LO@, @HI@) Hz to `{out}`: with "
                   "X the N-point DFT of the samples and a_k = 2 * |X_k| / N, take the bins k in 1..N/2-1 whose "
                   "frequency k * fs / N lies in the band and write `F R`: F the frequency of the one with the "
                   "largest a_k in Hz with 3 decimals, R = sqrt(sum of a_k^2 / 2) over them with 4 decimals "
                   "(e.g. `1250.000 0.5312`).")
        elif t.variant == "frame_peaks":
            ask = (f"Split the samples into consecutive blocks of N = {d.n} and write the frequency of each block's "
                   f"strongest component to `{out}`, one line per block in order: with X the N-point DFT of the "
                   "block, take the bin k in 1..N/2-1 with the largest |X_k| and write k * fs / N in Hz with "
                   "3 decimals (e.g. `1250.000`).")
        else:
            ask = (f"Write the frequency of its strongest component to `{out}`: with X the N-point DFT of the "
                   "samples, take the bin k in 1..N/2-1 with the largest |X_k| and write k * fs / N in Hz with "
                   "3 decimals (e.g. `1250.000`).")
        held = f"{text.count(chr(10))} samples" if t.variant == "frame_peaks" else f"N = {d.n} samples"
        t.say(f"`{path}` holds {held} of a vibration signal, one per line, taken at fs Hz.")
        fs = int(unseen(t, lambda: str(d.rng.choice(d.rates(d.n))), ask))
        v = t.deliver(str(fs), WHAT)
        bands = d.bands(fs, text) if t.variant == "band_levels" else None
        if bands:
            ask = ask.replace("@LO@", str(bands[0][0])).replace("@HI@", str(bands[0][1]))
        t.say(ask)
        t.add_solution_file("tones.py", d.program(bands))
        fields = f"{first}" if first == last else f"{first}-{last}"
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/tones.py "{v}" < {path} | cut -d" " -f{fields} > {out}')
        lines = d.answer(text, fs, bands).splitlines()
        t.expect_output(out, "".join(" ".join(line.split(" ")[first - 1:last]) + "\n" for line in lines),
                        ATOMIC_WHAT[t.variant])


# Where each variant's answer goes, what it is called, and at level 0 which of its fields are kept.
OUTPUTS = {"peak_list": "/app/out/tones.txt", "band_levels": "/app/out/bands.txt",
           "frame_peaks": "/app/out/blocks.txt"}
WHATS = {"peak_list": "the peak list (format above)", "band_levels": "the band levels (format above)",
         "frame_peaks": "the block peaks (format above)"}
ATOMIC = {"peak_list": ("/app/out/tone.txt", 1, 1), "band_levels": ("/app/out/band.txt", 3, 4),
          "frame_peaks": ("/app/out/blocks.txt", 2, 2)}
ATOMIC_WHAT = {"peak_list": "the frequency", "band_levels": "the band's frequency and level",
               "frame_peaks": "the block frequencies"}
