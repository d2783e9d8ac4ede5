"""Deduplicate a mailing list: normalise the email addresses of contact exports and report on them.
Variants: the distinct addresses, the addresses held by more than one record, and the distinct
addresses per domain. Traps by level: case and padding, then display-name (`Name <addr>`) and
`mailto:` forms, quoted names holding commas and invalid addresses to drop, then `+tag` suffixes and
several exports with their columns in different orders, then Gmail's dot-blind local parts, the
googlemail.com alias and a BOM with CRLF."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import csv
import io
import re
import sys

VARIANT = @VARIANT@
HEADER = @HEADER@  # exports have a header row naming an `email` column (else: name,email)
PLUS = @PLUS@  # a +tag at the end of the local part is dropped
GMAIL = @GMAIL@  # googlemail.com is gmail.com, whose local parts ignore dots


def norm(raw):
    """The canonical address of one email field, or None when it holds no valid address."""
    s = raw.strip()
    m = re.search(r"<([^>]*)>", s)
    if m:
        s = m.group(1)
    s = s.strip().lower()
    if s.startswith("mailto:"):
        s = s[len("mailto:"):].strip()
    if s.count("@") != 1:
        return None
    local, domain = s.split("@")
    if PLUS:
        local = local.split("+")[0]
    if GMAIL and domain in ("gmail.com", "googlemail.com"):
        domain, local = "gmail.com", local.replace(".", "")
    if not local or "." not in domain or " " in s:
        return None
    return f"{local}@{domain}"


def records(path):
    with open(path, encoding="utf-8-sig", newline="") as f:
        text = io.StringIO(f.read(), newline=None).read()
    rows = list(csv.reader(ln for ln in text.split("\n") if ln.strip()))
    col = [c.strip().lower() for c in rows[0]].index("email") if HEADER else 1
    return [norm(r[col]) for r in rows[1 if HEADER else 0:]]


def report(name, paths):
    counts = {}
    for p in paths:
        for addr in records(p):
            if addr:
                counts[addr] = counts.get(addr, 0) + 1
    if VARIANT == "unique":
        out = [f"{name},{a}" for a in sorted(counts)]
    elif VARIANT == "duplicates":
        out = [f"{name},{a},{n}" for a, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n > 1]
    else:
        per = {}
        for a in counts:
            d = a.split("@")[1]
            per[d] = per.get(d, 0) + 1
        out = [f"{name},{d},{n}" for d, n in sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2:]))
'''

FIRST = ("ana", "ben", "chloe", "dmitri", "elena", "farid", "greta", "hugo", "ines", "jonas", "kaito", "lea",
         "marco", "nadia", "oscar", "paula", "quentin", "rosa", "samir", "tilda", "umar", "vera", "wes", "xenia")
LAST = ("silva", "novak", "okafor", "berg", "moreau", "tanaka", "kowalski", "haddad", "lindqvist", "rossi",
        "mensah", "fischer", "garcia", "ivanova", "murphy", "nguyen")
DOMAINS = ("example.com", "acme.io", "mail.net", "northwind.org", "gmail.com", "posteo.de", "fastmail.fm")
INVALID = ("n/a", "", "unknown", "{f}.{l}(at)acme.io", "{f}@", "@mail.net", "{f} {l}@example.com", "{f}@localhost")
EXPORTS = (("crm.csv", ("name", "email", "source")), ("newsletter.csv", ("email", "name", "signed_up")),
           ("events.csv", ("company", "name", "email")))

ASKS = {
    "unique": "every distinct address, one line each as `<LIST>,<address>`, sorted in byte order",
    "duplicates": ("every address held by more than one record, one line each as `<LIST>,<address>,<records>`, "
                   "sorted by the number of records (most first), ties by address in byte order"),
    "domains": ("how many distinct addresses each domain has, one line per domain as `<LIST>,<domain>,<count>`, "
                "sorted by count (most first), ties by domain in byte order"),
}


@dataclass(frozen=True)
class Knobs:
    people: int  # distinct contacts
    header: bool  # exports with a header row; case and padding in addresses
    forms: bool  # `Name <addr>`, `mailto:`, quoted names with commas, invalid entries
    plus: bool  # +tags; several exports with other column orders
    gmail: bool  # gmail dots and googlemail.com; BOM and CRLF


@register
class ContactEmailDedupe(Family):
    name = "contact_email_dedupe"
    domain = "data_processing"
    skill_types = ("Text Processing", "Aggregation")
    primitive_skills = ("deduplication", "text normalisation", "CSV parsing", "CSV quoting and escaping",
                        "regular expressions", "group-by counting", "sorting with tie-breaks")
    variants = ("unique", "duplicates", "domains")
    levels = {0: Knobs(people=7, header=False, forms=False, plus=False, gmail=False),
              1: Knobs(people=20, header=True, forms=False, plus=False, gmail=False),
              2: Knobs(people=50, header=True, forms=True, plus=False, gmail=False),
              3: Knobs(people=120, header=True, forms=True, plus=True, gmail=False),
              4: Knobs(people=250, header=True, forms=True, plus=True, gmail=True)}

    def _address(self, t: TaskBuilder, f: str, last: str, domain: str) -> str:
        """One way a record writes the person's address."""
        k, rng = t.knobs, t.rng
        local = f"{f}.{last}"
        if k.plus and rng.random() < 0.2:
            local += "+" + rng.choice(["news", "shop", "2024", "list"])
        if k.gmail and domain == "gmail.com":
            if rng.random() < 0.4:
                local = local.replace(".", "") if "." in local else f"{local[:2]}.{local[2:]}"
            if rng.random() < 0.3:
                domain = "googlemail.com"
        addr = f"{local}@{domain}"
        if k.header and rng.random() < 0.3:
            addr = rng.choice([addr.upper(), addr.capitalize(), f" {addr}", f"{addr}  "])
        if k.forms and rng.random() < 0.25:
            addr = rng.choice([f"{f.capitalize()} {last.capitalize()} <{addr}>", f"mailto:{addr}"])
        return addr

    def _records(self, t: TaskBuilder):
        """(name, email field) records of everyone, some people several times, and invalid entries."""
        k, rng = t.knobs, t.rng
        people, seen = [], set()
        for _ in range(k.people * 20):
            if len(people) == k.people:
                break
            p = (rng.choice(FIRST), rng.choice(LAST), rng.choice(DOMAINS))
            if p not in seen:
                seen.add(p)
                people.append(p)
        recs = []
        for f, last, dom in people:
            for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
                name = f"{last.capitalize()}, {f.capitalize()}" if k.forms and rng.random() < 0.3 else \
                    f"{f.capitalize()} {last.capitalize()}"
                recs.append((name, self._address(t, f, last, dom)))
        if k.forms:
            for _ in range(max(2, k.people // 15)):
                f, last = rng.choice(FIRST), rng.choice(LAST)
                bad = rng.choice(INVALID).replace("{f}", f).replace("{l}", last)
                recs.append((f"{f.capitalize()} {last.capitalize()}", bad))
        rng.shuffle(recs)
        return recs

    def _files(self, t: TaskBuilder, recs) -> dict[str, str]:
        k, rng = t.knobs, t.rng

        def field(v):
            return '"' + v.replace('"', '""') + '"' if any(c in v for c in ',"') else v

        if not k.header:
            return {"/app/data/contacts.csv": "".join(f"{n},{e}\n" for n, e in recs)}
        exports = EXPORTS if k.plus else EXPORTS[:1]
        parts = [[] for _ in exports]
        for r in recs:
            parts[rng.randrange(len(exports))].append(r)
        files = {}
        for (fname, cols), part in zip(exports, parts):
            lines = [",".join(cols)]
            for n, e in part:
                extra = {"source": rng.choice(["web", "import", "sales"]),
                         "signed_up": f"2024-0{rng.randrange(1, 10)}-1{rng.randrange(10)}",
                         "company": rng.choice(["Acme", "Globex, Inc.", "Initech"])}
                vals = {"name": n, "email": e, **extra}
                lines.append(",".join(field(vals[c]) for c in cols))
            crlf = k.gmail and fname == "newsletter.csv"
            eol = "\r\n" if crlf else "\n"
            path = f"/app/data/exports/{fname}" if k.plus else "/app/data/contacts.csv"
            files[path] = ("\ufeff" if crlf else "") + eol.join(lines) + eol
        return files

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        src = fill(REFERENCE, VARIANT=repr(t.variant), HEADER=k.header, PLUS=k.plus, GMAIL=k.gmail)
        ref = run_python(src)
        for _ in range(30):
            files = self._files(t, self._records(t))
            if self._report(ref, "LIST", files).count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no contact list with two {t.variant} lines in 30 draws")
        for path, text in files.items():
            t.add_file(path, text)
        name = unseen(t, lambda: t.code(2))
        truth = self._report(ref, name, files)
        where = ("the exports in `/app/data/exports/` (CSV files with a header row; the columns are not in the same "
                 "order in each)" if k.plus else "`/app/data/contacts.csv`" +
                 (" (CSV with a header row)" if k.header else " (lines `name,email`, no header)"))
        t.say(f"Our contacts are in {where}. Before the next mailing, deduplicate them by email address and report "
              f"{ASKS[t.variant]}.")
        rules = []
        if k.header:
            rules.append("Addresses compare and are written in lower case, without surrounding spaces.")
        if k.forms:
            rules.append("An email field may hold a display-name form (`Name <address>`, use the part in angle "
                         "brackets) or a `mailto:` prefix (drop it); names may be quoted CSV fields with commas. A "
                         "field that is then not exactly one `@` with a non-empty local part before it, a domain "
                         "containing a dot after it and no spaces is not an address: skip the record.")
        if k.plus:
            rules.append("A `+tag` at the end of the local part is dropped (`ana.silva+news@acme.io` is "
                         "`ana.silva@acme.io`).")
        if k.gmail:
            rules.append("`googlemail.com` is `gmail.com`, and Gmail ignores dots in the local part: drop them there. "
                         "Some exports come from Windows (BOM, CRLF).")
        if rules:
            t.say(" ".join(rules))
        t.say("LIST is the name of the mailing list, given below; the mailer files every line under it.")
        var = t.deliver(name, "the mailing list name")
        t.add_solution_file("dedupe.py", src)
        inputs = "/app/data/exports/*.csv" if k.plus else "/app/data/contacts.csv"
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/dedupe.py "{var}" {inputs} > /app/out/contacts.txt')
        t.expect_output("/app/out/contacts.txt", truth, "the report")

    @staticmethod
    def _report(ref, name, files):
        with host_files(dict(sorted(files.items()))) as (_, paths):
            return ref["report"](name, paths)
