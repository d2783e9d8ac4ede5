"""A mailing campaign's contact exports, from raw bytes to what the mailer may send. Three stages, each
feeding the next: decode the campaign's exports (UTF-8, Windows-1252, UTF-16 either way, BOMs, CRLF,
decomposed accents by level; the campaign is found by a hash of its name, the delivered value); merge
the records and deduplicate them by normalised email address (case and padding, display-name and
`mailto:` forms, `+tags`, Gmail's dots by level); then anti-join the result with the suppression list
(entries in force on the send date at the top level). Variants differ in the final artefact: the send
list itself, the sendable contacts per country, or the campaign's suppressed addresses with the
reason."""

from __future__ import annotations

import datetime
import unicodedata
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.data_processing.mixed_encoding_survey import CONVERT, encode_as
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import csv
import os
import re
import sys
import unicodedata

VARIANT = "@VARIANT@"
STAGES = @STAGES@  # 1: decode only; 2: and deduplicate; 3: and apply the suppression list
FORMS = @FORMS@  # `Name <addr>` and `mailto:` forms, invalid addresses
PLUS = @PLUS@  # a +tag at the end of the local part is dropped
GMAIL = @GMAIL@  # googlemail.com is gmail.com, whose local parts ignore dots
SEND_DATE = "@SEND_DATE@"  # suppressions dated after it are not in force yet ("": every entry is)
HEADER = @HEADER@


def decode(data):
    """Stage 1: one export's text by the stated rules (BOMs first, then UTF-8 if valid, else Windows-1252)."""
    for bom, codec in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"), (b"\xef\xbb\xbf", "utf-8")):
        if data.startswith(bom):
            text = data[len(bom):].decode(codec)
            break
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("cp1252")
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n"))


def norm(raw):
    """Stage 2's key: the canonical address of an email field, or None when it holds none."""
    s = raw.strip()
    if FORMS:
        m = re.search(r"<([^>]*)>", s)
        s = (m.group(1) if m else s).strip()
    s = s.lower()
    if FORMS and s.startswith("mailto:"):
        s = s[len("mailto:"):].strip()
    if s.count("@") != 1 or " " in s:
        return None
    local, domain = s.split("@")
    if PLUS:
        local = local.split("+")[0]
    if GMAIL and domain in ("gmail.com", "googlemail.com"):
        domain, local = "gmail.com", local.replace(".", "")
    return f"{local}@{domain}" if local and "." in domain else None


def rows(text):
    table = list(csv.reader(line for line in text.split("\n") if line.strip()))
    cols = [c.strip().lower() for c in table[0]]
    return [dict(zip(cols, r)) for r in table[1:]]


def contacts(files):
    """Stage 2: address -> [name, country, records], the first record (file name order) naming it."""
    people = {}
    for _, data in sorted(files):
        for r in rows(decode(data)):
            addr = norm(r["email"])
            if addr:
                people.setdefault(addr, [r["name"], r["country"], 0])[2] += 1
    return people


def suppressed(text, people):
    """Stage 3: address -> reason of the suppression entries in force that hit the campaign's addresses."""
    out = {}
    for r in rows(text):
        addr = norm(r["email"])
        if addr in people and (not SEND_DATE or r["since"] <= SEND_DATE):
            out[addr] = r["reason"]
    return out


def report(files, suppressions):
    if STAGES == 1:  # one export, decoded: its records, its countries or its addresses
        text = decode(files[0][1])
        if VARIANT == "send_list":
            return "".join(line + "\n" for line in text.split("\n")[1:] if line)
        if VARIANT == "by_country":
            return "".join(c + "\n" for c in sorted({r["country"] for r in rows(text)}, key=str.encode))
        return "".join(a + "\n" for a in sorted(r["email"] for r in rows(text)))
    people = contacts(files)
    if STAGES == 2:
        if VARIANT == "send_list":
            return "".join(f"{a},{p[0]}\n" for a, p in sorted(people.items()))
        if VARIANT == "by_country":
            per = {}
            for p in people.values():
                per[p[1]] = per.get(p[1], 0) + 1
            return "".join(f"{c},{n}\n" for c, n in sorted(per.items(), key=lambda kv: (-kv[1], kv[0].encode())))
        return "".join(f"{a},{p[2]}\n" for a, p in sorted(people.items()) if p[2] > 1)
    gone = suppressed(suppressions, people)
    keep = {a: p for a, p in people.items() if a not in gone}
    if VARIANT == "send_list":
        out = ["email,name,country"] if HEADER else []
        out += [f"{a},{p[0]},{p[1]}" for a, p in sorted(keep.items())]
    elif VARIANT == "by_country":
        per = {}
        for p in keep.values():
            per[p[1]] = per.get(p[1], 0) + 1
        out = ["country,contacts"] if HEADER else []
        out += [f"{c},{n}" for c, n in sorted(per.items(), key=lambda kv: (-kv[1], kv[0].encode()))]
    else:
        out = ["email,reason"] if HEADER else []
        out += [f"{a},{r}" for a, r in sorted(gone.items())]
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    folder = sys.argv[1]
    files = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            files.append((name, f.read()))
    supp = ""
    if len(sys.argv) > 2:
        with open(sys.argv[2], encoding="utf-8") as f:
            supp = f.read()
    sys.stdout.write(report(files, supp))
'''

# (written name, ASCII form for the address). Every first name has a non-ASCII letter, so no Windows-1252
# export is plain ASCII (it would read as UTF-8).
FIRST = [("José", "jose"), ("Zoë", "zoe"), ("Søren", "soren"), ("Françoise", "francoise"), ("Björn", "bjorn"),
         ("Inés", "ines"), ("Jürgen", "jurgen"), ("Noémie", "noemie"), ("Anaïs", "anais"), ("Åsa", "asa"),
         ("Raúl", "raul"), ("Chloé", "chloe"), ("Léa", "lea"), ("Tomás", "tomas"), ("Mårten", "marten")]
LAST = [("Müller", "muller"), ("Núñez", "nunez"), ("Ødegaard", "odegaard"), ("Weiß", "weiss"), ("Sørensen", "sorensen"),
        ("García", "garcia"), ("Lefèvre", "lefevre"), ("Öztürk", "ozturk"), ("Brandão", "brandao"), ("Berg", "berg"),
        ("Håkansson", "hakansson"), ("Côté", "cote"), ("Jóhannsson", "johannsson"), ("Smith", "smith")]
COUNTRIES = ["Österreich", "España", "Deutschland", "France", "Danmark", "Sverige", "Norge", "Türkiye", "Ísland",
             "Portugal"]
DOMAINS = ["example.com", "mail.net", "posteo.de", "fastmail.fm", "gmail.com", "acme.io"]
REASONS = ["unsubscribed", "bounced", "complaint"]
CODECS = {0: ("cp1252",), 1: ("utf-8", "cp1252"), 2: ("utf-8", "cp1252", "utf-16le"),
          3: ("utf-8", "cp1252", "utf-16le", "utf-8-bom"), 4: ("utf-8", "cp1252", "utf-16le", "utf-8-bom", "utf-16be")}
# Level 0 by variant: (encoding, its words, what to write, the commands after the conversion).
ATOMIC = {"send_list": ("cp1252", "Windows-1252", "the records of that campaign's export (every line but the "
                        "header), otherwise unchanged", "tail -n +2"),
          "by_country": ("utf-16le", "UTF-16 little-endian with a byte order mark", "the distinct countries of that "
                         "campaign's export, one per line, sorted in byte order", "tail -n +2 | cut -d, -f3 | LC_ALL=C sort -u"),
          "suppressed": ("utf-16be", "UTF-16 big-endian with a byte order mark", "the email addresses of that "
                         "campaign's export, one per line, sorted in byte order", "tail -n +2 | cut -d, -f2 | LC_ALL=C sort")}
DEDUPE_OUT = {"send_list": "`email,name`, one line per distinct address (the name of its first record), sorted by "
                           "address in byte order",
              "by_country": "`country,contacts`, the number of distinct addresses per country (the country of "
                            "each address's first record), sorted by count (most first), ties by country in byte "
                            "order",
              "suppressed": "`email,records`, one line per address held by more than one record, with the number "
                            "of records, sorted by address in byte order"}
FINAL_OUT = {"send_list": ("email,name,country", "one line per address that may be mailed (its name and country from "
                                                 "its first record), sorted by address in byte order"),
             "by_country": ("country,contacts", "the number of addresses that may be mailed per country (the country "
                                                "of each address's first record), sorted by count (most first), ties "
                                                "by country in byte order"),
             "suppressed": ("email,reason", "one line per campaign address that the suppression list removes, with "
                                            "the entry's reason, sorted by address in byte order")}


@dataclass(frozen=True)
class Knobs:
    people: int  # distinct contacts of each campaign
    files: int  # exports per campaign
    decoys: int  # other campaigns' folders, built the same way
    traps: int  # 1: display-name and mailto: forms, invalid entries; 2: +tags, reordered columns, CRLF;
    #             3: Gmail dots, NFD accents, suppressions not yet in force


@register
class CampaignContactsSendList(Family):
    name = "campaign_contacts_send_list"
    domain = "data_processing"
    skill_types = ("Encoding", "Text Processing")
    primitive_skills = ("character encoding conversion", "byte order mark detection", "Unicode normalisation",
                        "line ending normalisation", "deduplication", "text normalisation", "CSV parsing",
                        "joining two sources", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("send_list", "by_country", "suppressed")
    stages = ("mixed_encoding_survey", "contact_email_dedupe", "stock_count_reconcile")
    levels = {0: Knobs(people=6, files=1, decoys=3, traps=0),
              1: Knobs(people=15, files=2, decoys=2, traps=0),
              2: Knobs(people=40, files=3, decoys=2, traps=1),
              3: Knobs(people=90, files=4, decoys=3, traps=2),
              4: Knobs(people=160, files=5, decoys=3, traps=3)}

    def address(self, t: TaskBuilder, local: str, domain: str) -> str:
        """One way a record writes the person's address."""
        k, rng = t.knobs, t.rng
        if k.traps >= 2 and rng.random() < 0.2:
            local += "+" + rng.choice(["news", "shop", "2025"])
        if k.traps >= 3 and domain == "gmail.com":
            if rng.random() < 0.4:
                local = local.replace(".", "")
            if rng.random() < 0.3:
                domain = "googlemail.com"
        addr = f"{local}@{domain}"
        if t.level >= 1 and rng.random() < 0.3:
            addr = rng.choice([addr.upper(), addr.capitalize(), f" {addr}", f"{addr}  "])
        if k.traps >= 1 and rng.random() < 0.2:
            addr = rng.choice([f"<{addr}>", f"mailto:{addr}"])
        return addr

    def campaign(self, t: TaskBuilder) -> tuple[list[tuple[str, str]], list[tuple]]:
        """(export name, text) pairs of one campaign, and its people (first, last, country, local, domain)."""
        k, rng, lv = t.knobs, t.rng, t.level
        people, locals_ = [], set()
        for _ in range(k.people * 20):
            if len(people) == k.people:
                break
            (f, fa), (s, sa) = rng.choice(FIRST), rng.choice(LAST)
            local = f"{fa}.{sa}{rng.randrange(10, 99)}"
            if local not in locals_:
                locals_.add(local)
                people.append((f, s, rng.choice(COUNTRIES), local, rng.choice(DOMAINS)))
        if len(people) < k.people:
            raise FamilyError(f"family {self.name}: no {k.people} distinct contacts in {k.people * 20} draws")
        recs = [p for p in people for _ in range(rng.choice([1, 1, 2, 3]) if lv >= 1 else 1)]
        rng.shuffle(recs)
        cols = ["name", "email", "country"]
        files = [[] for _ in range(k.files)]
        for i, p in enumerate(recs):  # round robin: no export is empty
            files[i % k.files].append((f"{p[0]} {p[1]}", self.address(t, p[3], p[4]), p[2]))
        if k.traps >= 1:  # entries that hold no address
            for _ in range(max(2, k.people // 15)):
                files[rng.randrange(k.files)].append(("N. N.", rng.choice(["n/a", "unknown", "x(at)mail.net"]), "France"))
        out = []
        for i, part in enumerate(files):
            order = rng.sample(cols, 3) if k.traps >= 2 else cols
            lines = [",".join(order)] + [",".join(dict(zip(cols, r))[c] for c in order) for r in part]
            out.append((f"export_{i + 1:02d}.csv", "\n".join(lines) + "\n"))
        return out, people

    def ship(self, t: TaskBuilder, folder: str, exports: list[tuple[str, str]]) -> list[tuple[str, bytes]]:
        """Encode one campaign's exports at build time (task files stay text); returns what the image holds."""
        k, rng = t.knobs, t.rng
        codecs = list(CODECS[t.level])
        plan = (codecs * k.files)[:k.files]
        rng.shuffle(plan)
        if t.level == 0:
            plan = [ATOMIC[t.variant][0]]
        files = []
        for (name, text), codec in zip(exports, plan):
            if k.traps >= 3 and codec != "cp1252" and rng.random() < 0.6:
                text = unicodedata.normalize("NFD", text)
            crlf = k.traps >= 2 and rng.random() < 0.4
            data = encode_as(text, codec, crlf)
            if codec == "cp1252" and data.isascii():
                raise FamilyError(f"family {self.name}: a Windows-1252 export is plain ASCII")
            files.append((name, data))
            src = f"/tmp/tmax-enc/{folder}-{name}"
            t.add_file(src, text)
            t.add_setup(f"mkdir -p /app/data/campaigns/{folder} && python3 /tmp/tmax-enc/convert.py {src} /app/data/campaigns/{folder}/{name} {codec} {int(crlf)}")
        return files

    def suppressions(self, t: TaskBuilder, people: list[tuple], others: list[tuple], send: datetime.date) -> str:
        """The shared suppression list: some of the campaign's people, some of other campaigns', in other
        spellings; at the top level some entries are dated after the send date."""
        k, rng = t.knobs, t.rng
        lines = ["email,reason,since"]
        ours = {(p[3], p[4]) for p in people}
        others = [p for p in others if (p[3], p[4]) not in ours]  # one entry per address: its reason is clear
        for p in rng.sample(people, max(3, len(people) // 5)) + rng.sample(others, min(len(others), 10)):
            addr = f"{p[3]}@{p[4]}"
            addr = rng.choice([addr, addr.upper(), f" {addr}"]) if t.level >= 2 else addr
            ago = rng.randrange(1, 400)
            if k.traps >= 3 and rng.random() < 0.25:  # not in force yet
                ago = -rng.randrange(1, 30)
            lines.append(f"{addr},{rng.choice(REASONS)},{send - datetime.timedelta(days=ago)}")
        body = lines[1:]
        rng.shuffle(body)
        return "\n".join([lines[0], *body]) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv, variant = t.knobs, t.rng, t.level, t.variant
        stages = min(lv + 1, 3)
        send = datetime.date(2026, 1, 1) + datetime.timedelta(days=rng.randrange(300))
        src = fill(REFERENCE, VARIANT=variant, STAGES=stages, FORMS=k.traps >= 1, PLUS=k.traps >= 2,
                   GMAIL=k.traps >= 3, SEND_DATE=send.isoformat() if k.traps >= 3 else "",
                   HEADER=not t.partial_credit)  # a constant header would earn partial credit
        ns = run_python(src)
        # The campaign name is the delivered value: each campaign's folder is named by a hash of its name, so
        # the name shows nowhere and the decoy campaigns, built the same way, are indistinguishable without it.
        # The campaigns are built under placeholder folders first, so the name can be drawn clear of them.
        built = [self.campaign(t) for _ in range(1 + k.decoys)]
        others = [p for _, people in built[1:] for p in people]
        supp = self.suppressions(t, built[0][1], others, send) if stages == 3 else ""
        texts = [text for exports, _ in built for _, text in exports] + [supp]
        name = unseen(t, lambda: t.code(2), *texts)
        keys = [key_of(n) for n in [name, *distinct(lambda: t.code(2), k.decoys, [name])]]
        t.add_file("/tmp/tmax-enc/convert.py", CONVERT)
        ours = []
        for i in sorted(range(len(keys)), key=lambda i: keys[i]):  # built in key order: the target does not stand out
            shipped = self.ship(t, keys[i], built[i][0])
            ours = shipped if i == 0 else ours
        t.add_setup("rm -rf /tmp/tmax-enc")
        if supp:
            t.add_file("/app/data/suppressions.csv", supp)
        truth = ns["report"](ours, supp)
        if truth.count("\n") < 2 + (not t.partial_credit and stages == 3):
            raise FamilyError(f"family {self.name}: fewer than two lines of output")
        where = "`/app/data/campaigns/<KEY>/`, where KEY is the first 16 hex digits of the SHA-256 of the campaign's " \
                "name (`printf %s <name> | sha256sum | cut -c1-16`)"
        if stages == 1:
            codec, words, what, cmds = ATOMIC[variant]
            t.say("Each mailing campaign's contact export is `/app/data/campaigns/<KEY>/export_01.csv`, where KEY is the "
                  "first 16 hex digits of the SHA-256 of the campaign's name (`printf %s <name> | sha256sum | cut "
                  f"-c1-16`). The exports are encoded in {words}.")
            v = t.deliver(name, "the campaign name")
            t.say(f"An export's first line is the header `name,email,country`. Write {what}, to "
                  "`/app/out/contacts.txt` as UTF-8 (no byte order mark).")
            dec = "iconv -f CP1252 -t UTF-8" if codec == "cp1252" else "iconv -f UTF-16 -t UTF-8"
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                    f'{dec} "/app/data/campaigns/{key_cmd(v)}/export_01.csv" | {cmds} > /app/out/contacts.txt')
            t.expect_output("/app/out/contacts.txt", truth, "the answer")
            return
        out = "/app/out/result.csv"
        t.say(f"Each mailing campaign's contact exports (CSV files with a header row naming the columns `name`, "
              f"`email` and `country`) are in {where}; every campaign has its own folder.")
        v = t.deliver(name, "the campaign name")
        step1 = ("1. Decode that campaign's exports, each by its own bytes: starting with `FF FE` it is UTF-16 "
                 "little-endian, with `FE FF` UTF-16 big-endian, with `EF BB BF` UTF-8 with a byte order mark (not "
                 "part of the text); otherwise UTF-8 if the whole file is valid UTF-8, else Windows-1252.")
        if k.traps >= 2:
            step1 += " Some have Windows line endings, and the columns are not in the same order in every export."
        if k.traps >= 3:
            step1 += " Some store accented letters decomposed: normalise the text to NFC."
        rules = ["Addresses compare and are written in lower case, without surrounding spaces."]
        if k.traps >= 1:
            rules.append("An email field may hold `<address>` (use the part in angle brackets) or a `mailto:` prefix "
                         "(drop it); a field that is then not exactly one `@` with a non-empty local part before it, "
                         "a domain containing a dot after it and no spaces holds no address: skip the record.")
        if k.traps >= 2:
            rules.append("A `+tag` at the end of the local part is dropped.")
        if k.traps >= 3:
            rules.append("`googlemail.com` is `gmail.com`, whose local parts ignore dots: drop them there.")
        step2 = ("2. Merge the records of all its exports and deduplicate them by email address. " + " ".join(rules)
                 + " An address's first record is the first in export file name order, then row order.")
        steps = [step1, step2]
        if stages == 2:
            fmt = f"The result is CSV with no header line: {DEDUPE_OUT[variant]}."
        else:
            step3 = ("3. Apply the shared suppression list `/app/data/suppressions.csv` (UTF-8, `email,reason,since`): "
                     "an entry whose address normalises, by the same rules, to one of the campaign's addresses "
                     "removes it from the mailing.")
            if k.traps >= 3:
                step3 += (f" The campaign is sent on {send.isoformat()}; an entry dated (`since`) after that day is "
                          "not in force yet and removes nothing.")
            steps.append(step3)
            head, what = FINAL_OUT[variant]
            first = f"the header line `{head}`" if not t.partial_credit else f"no header line (the columns are `{head}`)"
            fmt = f"The result is CSV with {first}, {what}."
        t.say("The job has " + ("two" if stages == 2 else "three") + " steps, each feeding the next:\n\n"
              + "\n".join(steps) + "\n\n" + fmt + " Write it as UTF-8 (no byte order mark), with LF line endings.")
        t.add_solution_file("send_list.py", src)
        supp_arg = " /app/data/suppressions.csv" if stages == 3 else ""
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/send_list.py "/app/data/campaigns/{key_cmd(v)}"{supp_arg} > {out}')
        t.expect_output(out, truth, "the result")
