"""Record linkage over a CRM contact export: which records are the same customer? Records that share a
normalised e-mail address (or, from level 2, a normalised phone number) are one person, transitively.
Each brand's export sits in a folder named by a SHA-256 prefix of the brand's name (the delivered
value). Variants: the clusters of linked records, a merge plan (the survivor is the most recently
updated record) and the number of distinct people. Traps by level: letter case and stray spaces in
addresses, then phone numbers in many spellings with an optional country code, empty fields that must
link nothing and chains (A shares a phone with B, B an address with C), then `+tags` and gmail's
ignored dots, then quoted names with commas and columns in another order."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import csv_text, fill, host_files, run_python
from tmax.families.data_querying._keyed import key_how, keyed, pose, rules_at

REFERENCE = r'''
import csv
import re
import sys

PHONES = @PHONES@  # a shared phone number also makes two records one person
TAGS = @TAGS@  # ignore "+tag" in every address, and dots in gmail.com / googlemail.com addresses


def email_key(raw):
    e = raw.strip().lower()
    if not e or "@" not in e:
        return None
    local, _, domain = e.rpartition("@")
    if TAGS:
        local = local.split("+", 1)[0]
        if domain in ("gmail.com", "googlemail.com"):
            local, domain = local.replace(".", ""), "gmail.com"
    return "e:" + local + "@" + domain


def phone_key(raw):
    d = re.sub(r"[^0-9]", "", raw)
    if len(d) == 11 and d.startswith("1"):
        d = d[1:]
    return "p:" + d if PHONES and len(d) == 10 else None


def clusters(path):
    """Groups of record ids (as ints) that are one person, every group sorted, groups by first id."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    parent = {}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner = {}
    for r in rows:
        rid = int(r["id"])
        parent.setdefault(rid, rid)
        for key in (email_key(r["email"]), phone_key(r["phone"])):
            if key is None:
                continue
            if key in owner:
                parent[find(rid)] = find(owner[key])
            else:
                owner[key] = rid
    groups = {}
    for rid in parent:
        groups.setdefault(find(rid), []).append(rid)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0]), {int(r["id"]): r for r in rows}


def report(path, variant):
    groups, rows = clusters(path)
    if variant == "count":
        return f"{len(groups)}\n"
    dupes = [g for g in groups if len(g) > 1]
    if variant == "clusters":
        return "".join(" ".join(map(str, g)) + "\n" for g in dupes)
    plan = []
    for g in dupes:  # the survivor: the latest updated_at, on a tie the lowest id
        keep = max(g, key=lambda i: (rows[i]["updated_at"], -i))
        plan.append((keep, ";".join(str(i) for i in g if i != keep)))
    return "".join(f"{keep},{rest}\n" for keep, rest in sorted(plan))


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

FIRST = ("Ada", "Bo", "Cyd", "Dee", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jo", "Kai", "Lu", "Max", "Ned", "Oz",
         "Pia", "Quin", "Rae", "Sol", "Tess")
LAST = ("Stone", "Reed", "Vance", "Moss", "Hart", "Lane", "Frost", "Park", "Cole", "Wade", "Nash", "Burke")
DOMAINS = ("example.com", "mail.example", "gmail.com", "outlook.example", "corp.example")


@dataclass(frozen=True)
class Knobs:
    people: int  # distinct people per export
    decoys: int  # other brands' exports
    traps: int  # 1: case and spaces; 2: phones, empty fields, chains; 3: +tags, gmail dots; 4: quoting, columns


@register
class CsvCustomerRecordLinkage(Family):
    name = "csv_customer_record_linkage"
    domain = "data_querying"
    skill_types = ("Relational Queries", "Analytical Queries")
    primitive_skills = ("deduplication by key", "case-insensitive matching", "type coercion of mixed fields",
                        "distinct counting", "group-by aggregation", "transitive matching")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("clusters", "merge_plan", "count")
    levels = {0: Knobs(people=8, decoys=1, traps=0), 1: Knobs(people=20, decoys=2, traps=1),
              2: Knobs(people=40, decoys=3, traps=2), 3: Knobs(people=60, decoys=3, traps=3),
              4: Knobs(people=80, decoys=3, traps=4)}

    def _phone(self, t, digits):
        rng, lv = t.rng, t.knobs.traps
        a, b, c = digits[:3], digits[3:6], digits[6:]
        forms = [f"{a}-{b}-{c}"] + ([f"({a}) {b}-{c}", f"+1 {a} {b} {c}", f"{a}.{b}.{c}", digits, f"1{digits}"]
                                    if lv >= 2 else [])
        return rng.choice(forms)

    def _email(self, t, local, domain):
        rng, lv = t.rng, t.knobs.traps
        e = f"{local}@{domain}"
        if lv >= 3 and rng.random() < 0.4:
            if domain == "gmail.com" and "." in local and rng.random() < 0.6:
                e = f"{local.replace('.', '')}@{rng.choice(['gmail.com', 'googlemail.com'])}"
            else:
                e = f"{local}+{rng.choice(['shop', 'news', 'promo'])}@{domain}"
        if lv >= 1 and rng.random() < 0.4:
            e = rng.choice([e.upper(), e.title(), f" {e}", f"{e} "])
        return e

    def _export(self, t):
        """(header, rows) of one brand's contacts."""
        k, rng = t.knobs, t.rng
        lv = k.traps
        people = []
        for _ in range(rng.randrange(k.people, k.people + k.people // 2 + 2)):
            first, last = rng.choice(FIRST), rng.choice(LAST)
            local = f"{first.lower()}.{last.lower()}{rng.randrange(1, 99)}"
            people.append((f"{first} {last}", local, rng.choice(DOMAINS), str(rng.randrange(2000000000, 9899999999))))
        records = []
        for pi, (name, local, domain, phone) in enumerate(people):
            n = 2 if pi < 2 else rng.choice([1, 1, 1, 2, 3])  # two duplicated people at least
            for j in range(n):
                email, tel = self._email(t, local, domain), self._phone(t, phone)
                if lv >= 2 and j and rng.random() < 0.5:  # a new address, linked by the phone alone
                    email = self._email(t, f"{local}.new", rng.choice(DOMAINS))
                if lv >= 2 and rng.random() < 0.15:
                    email = ""  # some records never got an address
                if lv >= 2 and rng.random() < 0.15 and email.strip():
                    tel = ""
                records.append([name, email, tel])
            if lv <= 1:
                for r in records[-n:]:
                    r[2] = self._phone(t, str(rng.randrange(2000000000, 9899999999)))  # phones differ: not a key
        ids = sorted(rng.sample(range(1000, 1000 + 6 * len(records)), len(records)))
        rng.shuffle(records)
        rows = []
        for rid, (name, email, tel) in zip(ids, records):
            stamp = f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d} {rng.randrange(24):02d}:00:00"
            if lv >= 4 and rng.random() < 0.3:
                name = ", ".join(reversed(name.split(" ")))  # "Stone, Ada": quoted by the writer
            rows.append([str(rid), name, email, tel, stamp])
        if lv >= 4:
            return ["email", "updated_at", "id", "phone", "name"], [[r[2], r[4], r[0], r[3], r[1]] for r in rows]
        return ["id", "name", "email", "phone", "updated_at"], rows

    def output_case(self, t: TaskBuilder) -> None:
        k, variant = t.knobs, t.variant
        src = fill(REFERENCE, PHONES=k.traps >= 2, TAGS=k.traps >= 3)
        ref = run_python(src)
        exports = [csv_text(*self._export(t)) for _ in range(1 + k.decoys)]
        target, keys = keyed(t, k.decoys, *exports)
        for key, text in zip(keys, exports):
            t.add_file(f"/app/crm/{key}/contacts.csv", text)
        with host_files({"contacts.csv": exports[0]}) as (_, paths):
            truth = ref["report"](paths[0], variant)
        rules = rules_at(k.traps, [
            (0, "Two records are the same person when their e-mail addresses match, ignoring letter case and "
                "surrounding spaces."),
            (1, "Names do not matter: people share names, and one person's name is spelled differently across "
                "records."),
            (2, "A shared phone number also makes two records the same person. Compare phone numbers by their "
                "digits only; an 11-digit number starting with 1 (the country code) is the 10-digit number without "
                "it. An empty e-mail or phone matches nothing."),
            (2, "Matching is transitive: if A and B share a phone and B and C share an address, A, B and C are one "
                "person."),
            (3, "Mail providers deliver `name+anything@domain` to `name@domain`: ignore a `+` and what follows it "
                "in the part before `@`. For `gmail.com` (and `googlemail.com`, the same provider) dots before the "
                "`@` are ignored too."),
            (4, "The export is real CSV (quoted fields may hold commas) and its column order is not fixed: go by "
                "the header.")])
        ask = {"clusters": ("every group of two or more records that are one person, one line per group: the "
                            "record ids in ascending numeric order separated by single spaces; lines sorted by "
                            "their first id"),
               "merge_plan": ("a merge plan for every group of two or more records that are one person: the "
                              "surviving record is the one with the latest `updated_at` (on a tie the lowest id); "
                              "one CSV line per group, `survivor_id,other_ids`, the other ids ascending and joined "
                              "by `;`, no header, lines sorted by survivor id"),
               "count": "the number of distinct people in the export (a record with no duplicate is one person)"}
        intro = ("Each brand's CRM contact export is `/app/crm/<KEY>/contacts.csv` (columns `id`, `name`, `email`, "
                 "`phone`, `updated_at`), where KEY is " + key_how("brand's name") + "; the other "
                 "folders are other brands.")
        out = "/app/out/people.txt" if variant == "count" else f"/app/out/{variant}.txt"
        pose(t, intro, rules, f"For the brand named below I need {ask[variant]}.", target, "the brand's name",
             "dedupe.py", src, f'"/app/crm/$key/contacts.csv" {variant}', out)
        if variant == "count":
            t.expect_number(out, float(truth), what="the number of distinct people")
        else:
            t.expect_output(out, truth, "the duplicate report")
