"""Quality-check an SRT subtitle file. Variants: the cues that overlap the next one on screen, the cues
too fast to read (characters per second above a limit), and every cue re-timed for a frame-rate change
plus an offset. Traps by level: text over several lines, then a byte order mark with CRLF line ends and
markup (`<i>`, `<font ...>`, `{\\an8}`) that does not count as text, cues out of time order with
numbering gaps, and finally stray blank lines inside the file, `.` instead of `,` before the
milliseconds and position coordinates after the time line."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import re
import sys
from fractions import Fraction

VARIANT = @VARIANT@
CPS_LIMIT = @CPS_LIMIT@
SCALE = Fraction(@NUM@, @DEN@)  # new time = old time * SCALE + OFFSET_MS
OFFSET_MS = @OFFSET_MS@
TIME = re.compile(r"^(\d\d):(\d\d):(\d\d)[,.](\d{3})\s*-->\s*(\d\d):(\d\d):(\d\d)[,.](\d{3})")
MARKUP = re.compile(r"<[^>]*>|\{\\[^}]*\}")


def cues(text):
    """(number, start ms, end ms, text lines) per cue: a time line, the number line above it and the text
    lines below it up to the next blank line followed by a number and a time line (or the end)."""
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").split("\n")
    out = []
    for i, line in enumerate(lines):
        m = TIME.match(line.strip())
        if not m or i == 0:
            continue
        g = [int(x) for x in m.groups()]
        start = ((g[0] * 60 + g[1]) * 60 + g[2]) * 1000 + g[3]
        end = ((g[4] * 60 + g[5]) * 60 + g[6]) * 1000 + g[7]
        body, j = [], i + 1
        while j < len(lines):
            nxt = lines[j + 2].strip() if j + 2 < len(lines) else ""
            if lines[j].strip() == "" and (j + 1 >= len(lines) or (lines[j + 1].strip().isdigit() and TIME.match(nxt))):
                break
            if lines[j].strip():
                body.append(lines[j].strip())
            j += 1
        out.append((lines[i - 1].strip(), start, end, body))
    return out


def stamp(ms):
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def half_up(x, places=0):
    q = Fraction(10) ** places
    return Fraction(int(x * q + Fraction(1, 2)), q) if x >= 0 else -half_up(-x, places)


def report(run, text):
    cs = cues(text)
    out = []
    if VARIANT == "overlaps":
        order = sorted(range(len(cs)), key=lambda i: (cs[i][1], cs[i][2], i))
        for a, b in zip(order, order[1:]):
            if cs[b][1] < cs[a][2]:
                out.append(f"{run} {cs[a][0]} {cs[b][0]} {min(cs[a][2], cs[b][2]) - cs[b][1]}")
    elif VARIANT == "speed":
        for num, start, end, body in cs:
            chars = sum(len(MARKUP.sub("", ln)) for ln in body)
            cps = Fraction(chars * 1000, max(1, end - start))
            if cps > CPS_LIMIT:
                out.append(f"{run} {num} {float(half_up(cps, 1)):.1f}")
    else:  # retime
        for num, start, end, body in cs:
            new = [int(half_up(t * SCALE)) + OFFSET_MS for t in (start, end)]
            out.append(f"{run} {num} {stamp(max(0, new[0]))} {stamp(max(0, new[1]))}")
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    with open(sys.argv[2], encoding="utf-8", newline="") as f:
        sys.stdout.write(report(sys.argv[1], f.read()))
'''

WORDS = ("we", "have", "to", "go", "now", "the", "door", "is", "open", "listen", "where", "were", "you", "last",
         "night", "I", "told", "them", "everything", "it", "was", "not", "my", "fault", "keep", "moving", "quiet")
RATES = {"25 fps to 23.976 fps": (25025, 24000), "23.976 fps to 25 fps": (24000, 25025),
         "24 fps to 25 fps": (24, 25), "30 fps to 29.97 fps": (1001, 1000)}

def asks(cps: int, rate: str, num: int, den: int, off: int) -> dict[str, str]:
    """What each variant reports, with this task's limit, frame-rate change and offset."""
    return {
        "overlaps": "the cues that are still on screen when the next one starts: sort the cues by start time (ties by "
                    "end time), and for each cue and the one right after it in that order where the later one starts "
                    "before the earlier one ends, one line `<RUN> <earlier number> <later number> <overlap ms>`, the "
                    "overlap being the earlier of the two end times minus the later start; lines in that order",
        "speed": "the cues too fast to read: characters per second is the number of characters of the cue's text "
                 "(spaces and punctuation count, line breaks and markup do not) divided by its duration in seconds; "
                 f"for each cue above {cps} characters per second, in file order, one line `<RUN> <number> <cps>` with "
                 "cps rounded to one decimal (halves up)",
        "retime": f"every cue re-timed for the new video, in file order: the video was converted from {rate}, so each "
                  f"time stamp in milliseconds is multiplied by {num}/{den}, rounded to the nearest millisecond (halves "
                  f"up), and then shifted by {off:+d} ms (a result below zero becomes zero). One line per cue `<RUN> "
                  "<number> <new start> <new end>` with times as `HH:MM:SS,mmm`",
    }


@dataclass(frozen=True)
class Knobs:
    cues: int
    multiline: bool  # text over two lines
    dirty: bool  # BOM, CRLF, markup
    shuffled: bool  # cues out of time order, numbering gaps
    quirks: bool  # blank lines inside cue text, "." before milliseconds, coordinates after the time line


@register
class SrtSubtitleQc(Family):
    name = "srt_subtitle_qc"
    domain = "data_processing"
    skill_types = ("Text Processing", "Parsing")
    primitive_skills = ("date and time normalisation", "regular expressions", "byte order mark detection",
                        "line ending normalisation", "unit conversion")
    variants = ("overlaps", "speed", "retime")
    levels = {0: Knobs(cues=6, multiline=False, dirty=False, shuffled=False, quirks=False),
              1: Knobs(cues=30, multiline=True, dirty=False, shuffled=False, quirks=False),
              2: Knobs(cues=80, multiline=True, dirty=True, shuffled=False, quirks=False),
              3: Knobs(cues=200, multiline=True, dirty=True, shuffled=True, quirks=False),
              4: Knobs(cues=400, multiline=True, dirty=True, shuffled=True, quirks=True)}

    def _srt(self, t: TaskBuilder) -> str:
        k, rng = t.knobs, t.rng
        blocks, now, num = [], rng.randrange(2000, 60000), 1
        for _ in range(k.cues):
            dur = rng.randrange(700, 5000)
            start, end = now, now + dur
            if rng.random() < (0.4 if k.cues < 10 else 0.15):  # the next cue starts before this one ends
                now = end - rng.randrange(100, 600)
            else:
                now = end + rng.randrange(200, 4000)
            lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 8))).capitalize() + rng.choice(".?!,")]
            if k.multiline and rng.random() < 0.5:
                lines.append("- " + " ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 7))) + ".")
            if k.dirty and rng.random() < 0.2:
                i = rng.randrange(len(lines))
                pre, post = rng.choice([("<i>", "</i>"), ('<font color="#ffff00">', "</font>"), ("{\\an8}", "")])
                lines[i] = pre + lines[i] + post
            sep = "." if k.quirks and rng.random() < 0.1 else ","
            tl = f"{_stamp(start, sep)} --> {_stamp(end, sep)}"
            if k.quirks and rng.random() < 0.1:
                tl += f" X1:{rng.randrange(100, 300)} X2:{rng.randrange(400, 600)} Y1:{rng.randrange(400, 500)} Y2:500"
            if k.quirks and len(lines) > 1 and rng.random() < 0.2:  # a blank line inside the text
                lines.insert(1, "")
            blocks.append([str(num), tl] + lines)
            num += rng.randrange(2, 4) if k.shuffled and rng.random() < 0.05 else 1
        if k.shuffled:  # a few cues edited in late, out of time order
            for _ in range(3):
                i = rng.randrange(1, len(blocks))
                blocks.insert(rng.randrange(i), blocks.pop(i))
        eol = "\r\n" if k.dirty else "\n"
        text = (eol * 2).join(eol.join(b) for b in blocks) + eol
        return ("\ufeff" if k.dirty else "") + text

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        cps = rng.choice([15, 17, 20])
        rate = rng.choice(sorted(RATES))
        num, den = RATES[rate]
        off = rng.choice([-1, 1]) * rng.randrange(300, 4000)
        src = fill(REFERENCE, VARIANT=repr(t.variant), CPS_LIMIT=cps, NUM=num, DEN=den, OFFSET_MS=off)
        ref = run_python(src)
        for _ in range(30):  # at least two answer lines
            srt = self._srt(t)
            if ref["report"]("RUN", srt).count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no subtitle file with two {t.variant} lines in 30 draws")
        t.add_file("/app/subs/episode.srt", srt)
        run = unseen(t, lambda: t.code(2))
        truth = ref["report"](run, srt)
        t.say("`/app/subs/episode.srt` is a subtitle file in SRT format: cues separated by a blank line, each a "
              "number line, a time line `HH:MM:SS,mmm --> HH:MM:SS,mmm` and one or more text lines. A cue is "
              "named by its number as written.")
        notes = []
        if k.dirty:
            notes.append("the file has a byte order mark and CRLF line ends, and markup such as `<i>...</i>`, "
                         "`<font ...>` and `{\\an8}` is not text")
        if k.shuffled:
            notes.append("some cues are out of time order and the numbering has gaps")
        if k.quirks:
            notes.append("a blank line can sit inside a cue's text (a cue ends only at a blank line followed by a "
                         "number line and a time line), some time lines use `.` before the milliseconds, and some "
                         "carry position coordinates after the end time")
        if notes:
            t.say("Mind the file: " + "; ".join(notes) + ".")
        ask = asks(cps, rate, num, den, off)[t.variant]
        t.say(f"Report {ask}. RUN is the QC ticket given below; the subtitle vendor's tracker files it under it.")
        var = t.deliver(run, "the QC ticket")
        t.add_solution_file("srt_qc.py", src)
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/srt_qc.py "{var}" /app/subs/episode.srt > /app/out/qc.txt')
        t.expect_output("/app/out/qc.txt", truth, "the report")


def _stamp(ms: int, sep: str) -> str:
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d}{sep}{ms % 1000:03d}"
