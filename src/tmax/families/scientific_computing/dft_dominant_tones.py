"""Which tones dominate this recording? A sampled signal (float volts, or raw 16-bit ADC counts at higher
levels) whose sample rate is delivered separately; the single-sided amplitude spectrum of a power-of-two
segment (Hann-windowed and cut out of a longer record at the top level) and its strongest peaks."""

from __future__ import annotations

import math

from tmax.families.base import Family, TaskBuilder, register

REFERENCE = r'''
import cmath
import math
import sys

FS = __FS__
TOP = __TOP__
COUNTS = __COUNTS__  # None: the file holds volts; else the full-scale voltage of the 16-bit ADC
SEGMENT = __SEGMENT__  # None: the whole file; else (start, length)
HANN = __HANN__


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
    fs = fs or FS
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
    while True:
        bins = sorted(rng.sample(range(lo, n // 2 - 4), count))
        amps = sorted((round(rng.uniform(0.1, 1.2), 3) for _ in range(count)), reverse=True)
        if all(b - a >= 4 for a, b in zip(bins, bins[1:])) and all(a - b >= 0.06 for a, b in zip(amps, amps[1:])):
            rng.shuffle(amps)
            return [(b, a, rng.uniform(0, 6.283)) for b, a in zip(bins, amps)]


def synth(rng, n_total: int, n: int, start: int, parts: list[tuple[int, float, float]],
          warm: list[tuple[int, float, float]], dc: float, noise: float) -> list[float]:
    out = []
    for i in range(n_total):
        ts = warm if i < start else parts
        x = dc + sum(a * math.cos(2 * math.pi * b * (i - start) / n + ph) for b, a, ph in ts)
        out.append(x + rng.uniform(-noise, noise))
    return out


@register
class DftDominantTones(Family):
    name = "dft_dominant_tones"
    domain = "scientific_computing"
    skill_types = ("Signal Processing",)
    primitive_skills = ("FFT peak finding", "spectral windowing", "amplitude scaling", "signal segmentation",
                        "unit handling", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    levels = {1: {"sizes": (256, 512), "tones": 1, "top": 1, "counts": False, "segment": False, "hann": False},
              2: {"sizes": (512, 1024), "tones": 3, "top": 3, "counts": False, "segment": False, "hann": False},
              3: {"sizes": (512, 1024), "tones": 4, "top": 4, "counts": True, "segment": False, "hann": False},
              4: {"sizes": (512, 1024), "tones": 5, "top": 4, "counts": True, "segment": True, "hann": True}}

    def record(self, rng, k: dict, n: int, vref: float | None, start: int) -> str:
        parts = tones(rng, n, k["tones"])
        warm = tones(rng, n, 2) if k["segment"] else []
        n_total = start + n + (rng.randrange(0, n // 4) if k["segment"] else 0)
        x = synth(rng, n_total, n, start, parts, warm, rng.uniform(-0.3, 0.3), rng.uniform(0.002, 0.02))
        if vref is None:
            return "".join(f"{v:.6f}\n" for v in x)
        counts = [max(-32768, min(32767, round(v / vref * 32768))) for v in x]
        return "sample,counts\n" + "".join(f"{i},{c}\n" for i, c in enumerate(counts))

    def build(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        n = rng.choice(k["sizes"])
        fs = rng.choice([r for r in RATES if twos(r) + 3 >= n.bit_length() - 1])
        vref = rng.choice([2.5, 3.3, 5.0]) if k["counts"] else None
        start = rng.randrange(200, 1500) if k["segment"] else 0
        src = (REFERENCE.replace("__TOP__", str(k["top"])).replace("__COUNTS__", repr(vref))
               .replace("__SEGMENT__", repr((start, n)) if k["segment"] else "None")
               .replace("__HANN__", str(k["hann"])))
        ns: dict = {}
        exec(src.replace("__FS__", str(fs)), ns)  # noqa: S102 - our own reference program

        def signal(size: int) -> str:
            while True:
                text = self.record(rng, k, size, vref, start)
                found = ns["peaks"](text)
                amps = sorted(ns["spectrum"](text)[1][1:], reverse=True)
                if all(safe(a) for _, a in found) and amps[k["top"] - 1] > 3 * amps[k["tones"] * 3 + 2]:
                    return text

        if k["counts"]:
            fmt_in = ("a CSV with header `sample,counts`: raw readings of a 16-bit ADC, where a count c stands for "
                      f"c * {vref:g} / 32768 volts")
        else:
            fmt_in = "one sample per line, in volts"
        method = ["The amplitude spectrum is the single-sided one: for bin k of the N-point discrete Fourier "
                  "transform X (X_k = sum_n x_n * exp(-2*pi*i*k*n/N)), the amplitude is "]
        if k["hann"]:
            method[0] += ("2 * |X_k| / sum(w), where the segment was first multiplied by the periodic Hann window "
                          "w_n = 0.5 - 0.5 * cos(2*pi*n/N), n = 0..N-1, and bin k is at k * fs / N Hz. "
                          f"A peak is a bin k with 2 <= k <= N/2 - 2 whose amplitude is strictly larger than both "
                          f"neighbours'. Report the {k['top']} peaks with the largest amplitudes.")
        else:
            method[0] += ("2 * |X_k| / N, and bin k is at k * fs / N Hz. Consider bins 1 to N/2 - 1 (bin 0 is the DC "
                          "offset) and report the " + ("bin with the largest amplitude." if k["top"] == 1 else
                                                       f"{k['top']} bins with the largest amplitudes."))
        seg = (f"Analyse only the segment of N = {n} samples that starts at sample index {start} (0-based, counting "
               "samples, not lines); what comes before it is the machine warming up." if k["segment"] else
               "N is the number of samples (a power of two).")
        fmt = ("one line per " + ("peak" if k["hann"] else "bin") + ", strongest first: the frequency in Hz with "
               "3 decimals, a space, the amplitude in volts with 4 decimals (e.g. `1250.000 0.7512`).")
        what = "the sample rate fs in Hz"
        if t.axes.verifier == "fuzz_equivalence":
            cases = []
            for _ in range(10):
                text = signal(n if k["segment"] else rng.choice([s for s in (128, 256, 512, 1024)
                                                                 if twos(fs) + 3 >= s.bit_length() - 1]))
                cases.append((text, ns["report"](text)))
            t.say("Our vibration recorder produces signal dumps and I want a small analyser for them. It reads one "
                  f"dump on standard input ({fmt_in}).")
            v = t.deliver(str(fs), what)
            t.say(seg + " " + method[0] + f" Output: {fmt}")
            t.expect_program("All dumps come from the same recorder, so hard-code the sample rate given above.",
                             cases, {"Python": src.replace("__FS__", "None")})
            t.solve(f'test -n "{v}"\nsed -i "s/^FS = None$/FS = {v}/" /app/solution.py')
            return
        text = signal(n)
        path = "/app/data/signal.csv" if k["counts"] else "/app/data/signal.txt"
        t.add_file(path, text)
        t.say(f"The vibration recorder on our test rig produced `{path}`: {fmt_in}. I need its dominant frequency "
              "components.")
        v = t.deliver(str(fs), what)
        t.say(seg + " " + method[0])
        t.say(f"Output format: {fmt}")
        t.add_solution_file("tones.py", src.replace("__FS__", "None"))
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/tones.py "{v}" < {path} > /app/out/tones.txt')
        t.expect_output("/app/out/tones.txt", ns["report"](text), "the peak list (format above)")
