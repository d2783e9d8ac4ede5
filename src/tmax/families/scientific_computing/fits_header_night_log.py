"""An observatory's night of CCD frames, summarised from their FITS headers (80-character cards in
2880-byte blocks, no line breaks). Each night's frames are filed under a hash of the night's code name
(delivered separately). Variants: `exposure` totals the light-frame exposure of one target per filter,
`midtimes` converts each light frame's start time and exposure to the Modified Julian Date of mid-exposure,
`airmass` turns each frame's altitude into an airmass with Hardie's formula. Higher levels add calibration
frames and other targets, card comments, quoted strings holding slashes and quotes, an older exposure
keyword, split date and time cards, data units after the header, HISTORY cards that look like values and
frames saved twice."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import datetime
import math
import os
import sys

TARGET = @TARGET@


def value(raw):
    """A card's value: a quoted string ('' is a quote, trailing blanks dropped) or the text before ' /'."""
    raw = raw.lstrip()
    if raw.startswith("'"):
        out, i = [], 1
        while i < len(raw):
            if raw[i] == "'":
                if raw[i + 1:i + 2] == "'":
                    out.append("'")
                    i += 2
                    continue
                break
            out.append(raw[i])
            i += 1
        return "".join(out).rstrip()
    return raw.split("/")[0].strip()


def header(path):
    """keyword -> value of the first header of a FITS file (cards up to END; COMMENT/HISTORY skipped)."""
    data = open(path, "rb").read().decode("latin-1")
    out = {}
    for i in range(0, len(data), 80):
        card = data[i:i + 80]
        key = card[:8].strip()
        if key == "END":
            break
        if card[8:10] == "= " and key not in out:
            out[key] = value(card[10:])
    return out


def frames(folder):
    """[(name, header)] of the light frames of TARGET, a frame saved twice (same DATE-OBS and FILTER) once,
    under the name that sorts first."""
    seen, out = set(), []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".fits"):
            continue
        h = header(os.path.join(folder, name))
        if h.get("IMAGETYP") != "Light Frame" or h.get("OBJECT") != TARGET:
            continue
        start = h["DATE-OBS"] if "T" in h["DATE-OBS"] else h["DATE-OBS"] + "T" + h["TIME-OBS"]
        h["START"] = start
        h["EXP"] = float(h.get("EXPTIME", h.get("EXPOSURE")))
        if (start, h["FILTER"]) in seen:
            continue
        seen.add((start, h["FILTER"]))
        out.append((name, h))
    return out


def exposure(folder):
    tot = {}
    for _, h in frames(folder):
        n, s = tot.get(h["FILTER"], (0, 0.0))
        tot[h["FILTER"]] = (n + 1, s + h["EXP"])
    return "".join("%s %.1f %d\n" % (f, s, n) for f, (n, s) in sorted(tot.items()))


def mjd_mid(h):
    start = datetime.datetime.fromisoformat(h["START"])
    days = (start - datetime.datetime(1858, 11, 17)).total_seconds() / 86400
    return days + h["EXP"] / 2 / 86400


def midtimes(folder):
    rows = sorted((mjd_mid(h), name) for name, h in frames(folder))
    return "".join("%s %.6f\n" % (name, m) for m, name in rows)


def hardie(alt):
    s = 1 / math.sin(math.radians(alt)) - 1
    return 1 + s - 0.0018167 * s - 0.002875 * s * s - 0.0008083 * s ** 3


def airmass(folder):
    return "".join("%s %.4f\n" % (name, hardie(float(h["OBJCTALT"]))) for name, h in frames(folder))


if __name__ == "__main__":  # exposure|midtimes|airmass FOLDER
    sys.stdout.write({"exposure": exposure, "midtimes": midtimes, "airmass": airmass}[sys.argv[1]](sys.argv[2]))
'''

TARGETS = ("M 51", "NGC 7331", "M 101", "IC 1396", "NGC 891")
FILTERS = ("B", "V", "R", "Ha", "OIII")


def card(key: str, val: object = None, comment: str = "") -> str:
    """One 80-character card as the FITS standard writes it (strings quoted from column 11, numbers and
    logicals right-justified to column 30)."""
    if key in ("COMMENT", "HISTORY"):
        text = f"{key:<8}{val}"
    elif key == "END":
        text = "END"
    else:
        if isinstance(val, str):
            v = "'" + val.replace("'", "''").ljust(8) + "'"
        elif isinstance(val, bool):
            v = ("T" if val else "F").rjust(20)
        else:
            v = str(val).rjust(20)
        text = f"{key:<8}= {v}" + (f" / {comment}" if comment else "")
    return text.ljust(80)[:80]


@dataclass(frozen=True)
class Knobs:
    frames: int  # frames in a night
    others: bool  # calibration frames and other targets
    comments: bool  # card comments, quoted strings with slashes and quotes, the older EXPOSURE keyword
    split_date: bool  # DATE-OBS with the date only and TIME-OBS beside it, HISTORY cards that look like values
    data: bool  # data units after the headers, frames saved twice, names with spaces
    decoys: int  # other nights in the store


@register
class FitsHeaderNightLog(Family):
    name = "fits_header_night_log"
    domain = "scientific_computing"
    skill_types = ("Experimental Data", "Numerical Methods")
    primitive_skills = ("measurement validation", "unit handling", "duplicate sample removal",
                        "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("exposure", "midtimes", "airmass")
    # Level 0: three header-only light frames of the target: `fold -w 80` and one awk (after a sha256sum).
    levels = {0: Knobs(frames=3, others=False, comments=False, split_date=False, data=False, decoys=2),
              1: Knobs(frames=8, others=True, comments=False, split_date=False, data=False, decoys=3),
              2: Knobs(frames=12, others=True, comments=True, split_date=False, data=False, decoys=3),
              3: Knobs(frames=16, others=True, comments=True, split_date=True, data=False, decoys=3),
              4: Knobs(frames=22, others=True, comments=True, split_date=True, data=True, decoys=3)}

    def _night(self, t: TaskBuilder, target: str, ns: dict) -> dict[str, str]:
        """file name -> FITS text of one night; every printed result clear of a rounding edge."""
        k, rng, variant = t.knobs, t.rng, t.variant
        for _ in range(50):
            start = dt.datetime(2025, rng.randrange(1, 13), rng.randrange(1, 28), 20) + \
                dt.timedelta(seconds=rng.randrange(0, 3600))
            files, when = {}, start
            for i in range(k.frames):
                kind = "Light Frame"
                obj = target if not k.others or rng.random() < 0.6 else rng.choice(TARGETS)
                if k.others and rng.random() < 0.2:
                    kind, obj = rng.choice(("Dark Frame", "Flat Field", "Bias Frame")), ""
                exp = rng.choice((30, 60, 120, 180, 300)) * (1.0 if rng.random() < 0.7 else 1.5)
                alt = round(rng.uniform(22, 85), 2)
                filt = rng.choice(FILTERS[:3] if k.frames < 8 else FILTERS)
                iso = when.isoformat(timespec="milliseconds")
                cards = [card("SIMPLE", True, "conforms to FITS standard" if k.comments else ""),
                         card("BITPIX", 8 if k.data else 16), card("NAXIS", 2 if k.data else 0)]
                if k.data:
                    rows = rng.randrange(3, 90)
                    cards += [card("NAXIS1", 40), card("NAXIS2", rows)]
                cards.append(card("IMAGETYP", kind))
                if obj:
                    shown = obj + (" / field 2" if k.comments and rng.random() < 0.3 else "")
                    cards.append(card("OBJECT", shown, "target as typed by the observer" if k.comments else ""))
                    obj = shown
                cards.append(card("FILTER", filt))
                key = "EXPOSURE" if k.comments and rng.random() < 0.3 else "EXPTIME"
                cards.append(card(key, exp, "[s] exposure time" if k.comments else ""))
                if k.split_date and rng.random() < 0.4:
                    cards += [card("DATE-OBS", iso[:10]), card("TIME-OBS", iso[11:])]
                else:
                    cards.append(card("DATE-OBS", iso, "UTC start of exposure" if k.comments else ""))
                cards.append(card("OBJCTALT", alt, "[deg] altitude of the target" if k.comments else ""))
                if k.comments:
                    cards.append(card("OBSERVER", rng.choice(("O'Hara", "d'Arcy", "Kim")), "who's at the scope"))
                if k.split_date:
                    cards.append(card("HISTORY", f"EXPTIME = {exp * 2} before the dark was rescaled"))
                cards.append(card("END"))
                text = "".join(cards)
                text += " " * (-len(text) % 2880)
                if k.data:  # NAXIS1 x NAXIS2 printable bytes, so the fixture stays text; padded to a block
                    text += "".join(chr(rng.randrange(33, 127)) for _ in range(40 * rows))
                    text += " " * (-len(text) % 2880)
                name = f"{obj.split(' /')[0].replace(' ', '') or kind.split()[0].lower()}_{i + 1:03d}.fits"
                if k.data and rng.random() < 0.2:
                    name = name.replace("_", " ", 1)
                files[name] = text
                if k.data and kind == "Light Frame" and rng.random() < 0.15:
                    files["copy of " + name] = text
                when += dt.timedelta(seconds=exp + rng.randrange(5, 40) + rng.random())
            if self._safe(ns, files, variant):
                return files
        raise FamilyError("fits_header_night_log: no night with safely printed results in 50 draws")

    def _safe(self, ns: dict, files: dict[str, str], variant: str) -> bool:
        with host_files(files) as (d, _):
            fr = ns["frames"](d)
            if len(fr) < 2:
                return False
            nums = [ns["mjd_mid"](h) * 1e6 for _, h in fr] if variant == "midtimes" else \
                [ns["hardie"](float(h["OBJCTALT"])) * 1e4 for _, h in fr] if variant == "airmass" else []
            return all(abs(x % 1 - 0.5) > 1e-3 for x in nums)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        target = rng.choice(TARGETS)
        src = fill(REFERENCE, TARGET=repr(target))
        ns = run_python(src)
        nights = [self._night(t, target, ns) for _ in range(1 + k.decoys)]
        # Nights are filed by a hash of their code names: the delivered name, drawn clear of every file, selects
        # one, and the other nights (built the same way) are indistinguishable without it.
        target_night = unseen(t, lambda: t.code(2), *("".join(n) + "".join(n.values()) for n in nights))
        codes = [target_night, *distinct(lambda: t.code(2), k.decoys, [target_night])]
        for code, files in sorted(zip(codes, nights), key=lambda p: key_of(p[0])):
            for name, text in sorted(files.items()):
                t.add_file(f"/app/nights/{key_of(code)}/{name}", text)
        with host_files(nights[0]) as (d, _):  # the reference reads the night as the oracle will
            truth = ns[variant](d)
        traps = [text for knob, text in TRAPS if getattr(k, knob)]
        t.say("The observatory files each night's CCD frames under `/app/nights/<KEY>/`, where KEY is the first 16 "
              "hex digits of the SHA-256 of the night's code name (`printf %s <name> | sha256sum`). Each `.fits` file "
              "starts with its FITS header: 80-character cards with no line breaks, `KEYWORD = value`, strings in "
              "single quotes, the header ending at the `END` card. Use the light frames (`IMAGETYP` = `Light Frame`) "
              f"of the target `{target}` (`OBJECT`). " + " ".join(traps))
        who = t.deliver(target_night, "the night's code name")
        ask, what = ASKS[variant]
        t.say(ask)
        out = f"/app/out/{variant}.txt"
        t.add_solution_file("fitslog.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\npython3 /solution/fitslog.py {variant} '
                f'"/app/nights/{key_cmd(who)}" > {out}')
        t.expect_output(out, truth, what)


TRAPS = (("others", "The night also holds calibration frames (darks, flats, biases) and frames of other targets."),
         ("comments", "Cards may carry a comment after ` / `, but a `/` inside a quoted string is part of the string "
                      "(the target must match the whole string), and `''` inside a string is one quote. Older frames "
                      "give the exposure in seconds as `EXPOSURE` instead of `EXPTIME`."),
         ("split_date", "Some frames give only the date in `DATE-OBS` and the time of day in `TIME-OBS`. `HISTORY` "
                        "and `COMMENT` cards are free text, not values."),
         ("data", "After the header comes the image data; some file names contain spaces, and some frames were "
                  "saved twice (the same `DATE-OBS` and `FILTER`): count such a frame once, under the file name that "
                  "sorts first."))
ASKS = {"exposure": ("Total the exposure time per filter (`FILTER`): one line `<filter> <total seconds, 1 decimal> "
                     "<number of frames>` per filter, filters in byte order.", "the exposure totals"),
        "midtimes": ("For each frame, the Modified Julian Date of mid-exposure: `DATE-OBS` (UTC, the start of the "
                     "exposure) plus half the exposure time, as days since 1858-11-17T00:00:00. One line `<file name> "
                     "<MJD, 6 decimals>` per frame, in time order.", "the mid-exposure times"),
        "airmass": ("For each frame, the airmass from the altitude `OBJCTALT` (degrees) with Hardie's formula X = "
                    "sec z - 0.0018167 (sec z - 1) - 0.002875 (sec z - 1)^2 - 0.0008083 (sec z - 1)^3, z the zenith angle. "
                    "One line `<file name> <X, 4 decimals>` per frame, file names in byte order.", "the airmasses")}
