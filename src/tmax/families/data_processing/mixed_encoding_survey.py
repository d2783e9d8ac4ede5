"""Survey exports in mixed character encodings. Each file is UTF-8, UTF-8 with a byte order mark,
UTF-16 (either byte order, with a BOM) or Windows-1252, with CRLF line endings and Unicode text in
decomposed form (NFD) at the higher levels. Detect each file's encoding by the stated rules, decode,
normalise, then, for the responses of one batch: report per file how many belong to it and how many
non-ASCII characters their comments hold (survey), write them all out as one clean UTF-8 export
(transcode), or count them per city across the files (by_city). Responses name no batch: each carries
a tag derived from its batch's code (delivered through the fixture channel) and its text, so
recognising the batch needs the code and a correct decoding. The encoded files are produced at build
time (task files stay text)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import hashlib
import os
import sys
import unicodedata

HEADER = @HEADER@
VARIANT = @VARIANT@


def detect(data):
    if data.startswith(b"\xff\xfe"):
        return "utf-16le", data[2:].decode("utf-16-le")
    if data.startswith(b"\xfe\xff"):
        return "utf-16be", data[2:].decode("utf-16-be")
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8-bom", data[3:].decode("utf-8")
    try:
        return "utf-8", data.decode("utf-8")
    except UnicodeDecodeError:
        return "cp1252", data.decode("cp1252")


def token(batch, city, comment):
    return hashlib.sha256(f"{batch}|{city}|{comment}".encode("utf-8")).hexdigest()[:10]


def summary(name, data, batch):
    enc, text = detect(data)
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n"))
    lines = [line for line in text.split("\n") if line.strip()]
    parts = [line.split(";", 2) for line in lines]
    hits = [p for p in parts if len(p) == 3 and p[0] == token(batch, p[1], p[2])]
    non_ascii = sum(1 for parts in hits for ch in parts[2] if ord(ch) > 127)
    return f"{name},{enc},{len(lines)},{len(hits)},{non_ascii}"


def batch_rows(files, batch):
    """The batch's responses as (city, comment), file by file in name order, each file in line order."""
    out = []
    for _, data in sorted(files):
        text = unicodedata.normalize("NFC", detect(data)[1].replace("\r\n", "\n"))
        parts = [line.split(";", 2) for line in text.split("\n") if line.strip()]
        out += [(p[1], p[2]) for p in parts if len(p) == 3 and p[0] == token(batch, p[1], p[2])]
    return out


def report(files, batch):
    """files: (name, bytes) pairs."""
    if VARIANT == "transcode":
        return "".join(f"{city};{comment}\n" for city, comment in batch_rows(files, batch))
    if VARIANT == "by_city":
        counts = {}
        for city, _ in batch_rows(files, batch):
            counts[city] = counts.get(city, 0) + 1
        return "".join(f"{c},{n}\n" for c, n in sorted(counts.items(), key=lambda x: (-x[1], x[0].encode())))
    out = ["file,encoding,lines,batch_lines,non_ascii"] if HEADER else []
    out += [summary(name, data, batch) for name, data in sorted(files)]
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    folder, batch = sys.argv[1], sys.argv[2]
    files = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            files.append((name, f.read()))
    sys.stdout.write(report(files, batch))
'''

# Writes one UTF-8 source file in the given encoding (build time, inside the image).
CONVERT = r'''
import sys

src, dst, codec, crlf = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
with open(src, encoding="utf-8", newline="") as f:
    text = f.read()
if crlf:
    text = text.replace("\n", "\r\n")
data = {"utf-8": lambda: text.encode("utf-8"), "utf-8-bom": lambda: b"\xef\xbb\xbf" + text.encode("utf-8"),
        "utf-16le": lambda: b"\xff\xfe" + text.encode("utf-16-le"),
        "utf-16be": lambda: b"\xfe\xff" + text.encode("utf-16-be"),
        "cp1252": lambda: text.encode("cp1252")}[codec]()
with open(dst, "wb") as f:
    f.write(data)
'''

CITIES = ["Zürich", "São Paulo", "Kraków", "Montréal", "Málaga", "Reykjavík", "Göteborg", "Lyon", "Oslo", "Porto",
          "Düsseldorf", "Bogotá", "Genève", "Toronto"]
COMMENTS = ["très bien", "naïve onboarding flow", "the café was great", "€5 is too expensive", "it’s fine",
            "“fast” delivery, not really", "gracias señor", "crème brûlée in the canteen", "no complaints",
            "ok", "support was slow", "would recommend", "prices in € please", "Übersicht is confusing",
            "jalapeño option missing", "façade needs paint", "great app", "résumé upload failed", "500 € budget"]
EXTRA = ["; see ticket", "; follow-up wanted", "; rated 4/5"]
NAMES = ["north", "south", "east", "west", "web", "kiosk", "mobile", "partner", "legacy", "pilot"]


def encode_as(text: str, codec: str, crlf: bool) -> bytes:
    if crlf:
        text = text.replace("\n", "\r\n")
    return {"utf-8": lambda: text.encode("utf-8"), "utf-8-bom": lambda: b"\xef\xbb\xbf" + text.encode("utf-8"),
            "utf-16le": lambda: b"\xff\xfe" + text.encode("utf-16-le"),
            "utf-16be": lambda: b"\xfe\xff" + text.encode("utf-16-be"),
            "cp1252": lambda: text.encode("cp1252")}[codec]()


@dataclass(frozen=True)
class Knobs:
    files: int  # response files
    lines: int  # responses per file, about
    codecs: tuple[str, ...]  # encodings that occur (each at least once)


OUT = {"survey": "/app/out/encoding_report.csv", "transcode": "/app/out/batch_export.txt",
       "by_city": "/app/out/batch_cities.csv"}


@register
class MixedEncodingSurvey(Family):
    name = "mixed_encoding_survey"
    domain = "data_processing"
    skill_types = ("Encoding", "Text Processing")
    primitive_skills = ("character encoding conversion", "byte order mark detection", "Unicode normalisation",
                        "line ending normalisation", "filtering by field", "group-by counting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("survey", "transcode", "by_city")
    levels = {0: Knobs(files=3, lines=6, codecs=("cp1252",)),
              1: Knobs(files=3, lines=15, codecs=("utf-8", "cp1252")),
              2: Knobs(files=4, lines=40, codecs=("utf-8", "cp1252", "utf-16le")),
              3: Knobs(files=6, lines=80, codecs=("utf-8", "cp1252", "utf-16le", "utf-8-bom")),
              4: Knobs(files=8, lines=150, codecs=("utf-8", "cp1252", "utf-16le", "utf-8-bom", "utf-16be"))}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv, var = t.knobs, t.rng, t.level, t.variant
        if lv == 0:
            return self.atomic(t)
        # The delivered batch code occurs nowhere in the data: a response carries only a tag derived from its
        # batch's code and its text, so the batch cannot be guessed from the files (nor by frequency), and
        # any other code recognises no response at all. It is drawn unseen in the instruction; the files, whose
        # tags are hex digests, are only searched for it as text below (unseen's decodings of every tag are slow).
        batch = unseen(t, lambda: t.code(2))
        batches = [batch, *distinct(lambda: t.code(2), 3, [batch])]
        # Under partial credit a constant header line would match whatever the code; leave it out there.
        header = var == "survey" and not t.partial_credit
        src = fill(REFERENCE, HEADER=header, VARIANT=repr(var))
        ns = run_python(src)

        def response(who: str) -> str:
            city = rng.choice(CITIES)
            comment = rng.choice(COMMENTS) + (rng.choice(EXTRA) if lv >= 3 and rng.random() < 0.2 else "")
            city, comment = unicodedata.normalize("NFC", city), unicodedata.normalize("NFC", comment)
            return f"{key_of(f'{who}|{city}|{comment}', 10)};{city};{comment}"

        codecs = list(k.codecs)
        plan = codecs + [rng.choice(codecs) for _ in range(k.files - len(codecs))]
        rng.shuffle(plan)
        names = sorted(rng.sample(NAMES, k.files))
        # Where the exports land and what they are called vary by seed, not only the data.
        folder = f"/app/{rng.choice(['data', 'survey', 'exports', 'inbox'])}/{rng.choice(['responses', 'channels'])}"
        stem = rng.choice(["responses", "export", "survey", "feedback"])
        t.add_file("/tmp/tmax-enc/convert.py", CONVERT)
        t.add_setup(f"mkdir -p {folder}")
        files, texts = [], []
        for name, codec in zip(names, plan):
            fname = f"{stem}_{name}.txt"
            rows = [response(rng.choice(batches))
                    for _ in range(max(3, k.lines + rng.randrange(-k.lines // 3, k.lines // 3 + 1)))]
            if codec == "cp1252" and not any(ord(c) > 127 for c in "".join(rows)):  # it must not decode as UTF-8
                rows.insert(rng.randrange(len(rows) + 1), f"{key_of(f'{batches[1]}|Zürich|café', 10)};Zürich;café")
            # Every file holds some of the batch's responses: with any other code each line of the report is wrong.
            if not any(ns["token"](batch, *r.split(";", 2)[1:]) == r.split(";", 1)[0] for r in rows):
                rows.insert(rng.randrange(len(rows) + 1), response(batch))
            text = "\n".join(rows) + "\n"
            if lv >= 4 and rng.random() < 0.3:
                text = text[:-1]  # no final newline
            if lv >= 2 and rng.random() < 0.3:
                text = text.replace("\n", "\n\n", 1)  # a blank line is not a response
            if lv >= 4 and codec != "cp1252" and rng.random() < 0.6:
                text = unicodedata.normalize("NFD", text)
            crlf = lv >= 3 and rng.random() < 0.4
            data = encode_as(text, codec, crlf)
            if codec == "cp1252":
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError:
                    pass
                else:
                    raise FamilyError(f"family {self.name}: a Windows-1252 file decodes as UTF-8")
            files.append((fname, data))
            texts.append(text)
            t.add_file(f"/tmp/tmax-enc/{fname}", text)
            t.add_setup(f"python3 /tmp/tmax-enc/convert.py /tmp/tmax-enc/{fname} {folder}/{fname} "
                        f"{codec} {int(crlf)}")
        t.add_setup("rm -rf /tmp/tmax-enc")
        if any(batch in x.upper() for x in texts + names):  # the files hold only tags: cannot happen
            raise FamilyError(f"family {self.name}: the batch code occurs in a generated file")
        truth = ns["report"](files, batch)
        v = t.deliver(batch, "the batch code")
        rules = [rng.choice(["Each non-blank line is one response, `tag;city;comment` (the comment is everything "
                             "after the second semicolon). Blank lines are not responses.",
                             "A response is one non-blank line `tag;city;comment`; the comment runs from the second "
                             "semicolon to the end of the line, and blank lines are skipped."]),
                 "Responses do not name their batch: `tag` is the first 10 hex digits (lowercase) of the SHA-256 of "
                 "the UTF-8 text `<batch code>|<city>|<comment>`, with the response's own city and comment as "
                 "decoded" + (" (without the line ending" + (", in NFC" if lv >= 4 else "") + ")" if lv >= 3 else "")
                 + ". A response belongs to the batch whose "
                 "code is given above exactly when its tag matches that code.",
                 "Decide each file's encoding from its bytes: starting with `FF FE` it is UTF-16 little-endian "
                 "(`utf-16le`), with `FE FF` UTF-16 big-endian (`utf-16be`), with `EF BB BF` UTF-8 with a byte order "
                 "mark (`utf-8-bom`); otherwise it is `utf-8` if the whole file is valid UTF-8, and Windows-1252 "
                 "(`cp1252`) if not. The byte order mark is not part of the text."]
        if lv >= 3:
            rules.append("Some files have Windows line endings (CRLF); a line ending is not part of a comment.")
        if lv >= 4:
            rules.append("Some files store accented letters decomposed (a base letter followed by a combining "
                         "mark). Normalise the text to NFC before hashing and counting, so that `é` is one "
                         "character however it is stored.")
        want = {"survey": "a per-file summary",
                "transcode": "all of its responses in one clean UTF-8 file for the analysts",
                "by_city": "to know how many of its responses came from each city"}[var]
        t.say(rng.choice([f"Our survey tool exported responses from several channels into `{folder}/`, but every "
                          "channel uses its own character encoding.",
                          f"The survey channels each dropped an export `{stem}_<channel>.txt` into `{folder}/`, "
                          "each in a character encoding of its own."])
              + f" For the batch whose code is given above, I need {want}.\n\n" + "\n".join(f"- {r}" for r in rules))
        out = OUT[var]
        t.add_solution_file("summary.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/summary.py {folder} "{v}" > {out}')
        if var == "transcode":
            fmt = ("UTF-8 without a byte order mark, LF line endings, one line per response of the batch as "
                   "`city;comment` (the tag dropped), the files taken in file-name order and each file's responses "
                   "in their order in it" + (", the text in NFC" if lv >= 4 else ""))
        elif var == "by_city":
            fmt = ("UTF-8 CSV without a header, one line `city,responses` per city with at least one response of "
                   "the batch (over all the files), most responses first, ties by city name in byte order of its "
                   "UTF-8 (`LC_ALL=C sort`)" + (", cities in NFC" if lv >= 4 else ""))
        else:
            head = "the header line `file,encoding,lines,batch_lines,non_ascii`, then " if header else \
                "no header line: the columns are `file,encoding,lines,batch_lines,non_ascii`, with "
            fmt = (f"CSV with {head}one line per file in `{folder}/` sorted by file name: the file name, its "
                   "encoding label as above, its number of responses, the number of those that belong to the batch, "
                   "and the total number of non-ASCII characters (code point above 127, after decoding) in the "
                   "comments of those responses")
        t.say(f"Write `{out}`. Format: {fmt}.")
        t.expect_output(out, truth, {"survey": "the summary", "transcode": "the export",
                                     "by_city": "the city counts"}[var])

    def atomic(self, t: TaskBuilder) -> None:
        """One batch's file, named by a hash of its code: converted from Windows-1252 to UTF-8 (survey), from
        UTF-16 with CRLF line ends to UTF-8 with LF (transcode), or counted per city (by_city)."""
        k, rng, var = t.knobs, t.rng, t.variant
        batch = unseen(t, lambda: t.code(2))
        batches = [batch, *distinct(lambda: t.code(2), k.files - 1, [batch])]
        # Every line has an accented city, so a copy of the raw bytes matches no line of the answer.
        cities = [c for c in CITIES if not c.isascii()]
        if var == "by_city":  # a few cities, so that counts are more than ones
            cities = rng.sample(cities, 3)
        codec, crlf = ("utf-16le", 1) if var == "transcode" else ("cp1252", 0)
        t.add_file("/tmp/tmax-enc/convert.py", CONVERT)
        t.add_setup("mkdir -p /app/data/responses")
        texts = []
        for b in batches:
            text = "".join(f"{rng.choice(cities)};{rng.choice(COMMENTS)}\n" for _ in range(k.lines))
            texts.append(text)
            t.add_file(f"/tmp/tmax-enc/{key_of(b)}.txt", text)
            t.add_setup(f"python3 /tmp/tmax-enc/convert.py /tmp/tmax-enc/{key_of(b)}.txt "
                        f"/app/data/responses/{key_of(b)}.txt {codec} {crlf}")
        t.add_setup("rm -rf /tmp/tmax-enc")
        if any(batch in x.upper() for x in texts):  # cities and comments only: cannot happen
            raise FamilyError(f"family {self.name}: the batch code occurs in a generated file")
        t.say("Each survey batch's responses are in `/app/data/responses/<KEY>.txt`, where KEY is the first 16 hex "
              "digits of the SHA-256 of the batch code (`printf %s <code> | sha256sum | cut -c1-16`). The files are "
              + ("UTF-16 with a byte order mark and Windows (CRLF) line endings." if var == "transcode" else
                 "encoded in Windows-1252, one `city;comment` line per response."))
        v = t.deliver(batch, "the batch code")
        src = f'"/app/data/responses/{key_cmd(v)}.txt"'
        if var == "transcode":
            out, truth = "/app/out/responses.txt", texts[0]
            t.say(f"Write that batch's file, converted to UTF-8 without a byte order mark and with LF line endings, "
                  f"otherwise unchanged, to `{out}`.")
            cmd = f"iconv -f UTF-16 -t UTF-8 {src} | tr -d '\\r' > {out}"
        elif var == "by_city":
            out = "/app/out/cities.csv"
            counts: dict[str, int] = {}
            for line in texts[0].splitlines():
                counts[line.split(";")[0]] = counts.get(line.split(";")[0], 0) + 1
            truth = "".join(f"{c},{n}\n" for c, n in sorted(counts.items(), key=lambda x: x[0].encode()))
            t.say(f"Count that batch's responses per city: write `{out}` in UTF-8, one line `city,responses` per "
                  "city, sorted by city name in byte order (`LC_ALL=C sort`).")
            cmd = (f"iconv -f CP1252 -t UTF-8 {src} | cut -d';' -f1 | LC_ALL=C sort | uniq -c "
                   f"| awk '{{n = $1; sub(/^ *[0-9]+ /, \"\"); print $0 \",\" n}}' > {out}")
        else:
            out, truth = "/app/out/responses.txt", texts[0]
            t.say(f"Write that batch's file, converted to UTF-8 and otherwise unchanged, to `{out}`.")
            cmd = f"iconv -f CP1252 -t UTF-8 {src} > {out}"
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n{cmd}')
        t.expect_output(out, truth, {"survey": "the converted file", "transcode": "the converted file",
                                     "by_city": "the city counts"}[var])
