"""Password audit: recover weak passwords from an application's peppered, salted hash dump with a
wordlist and mangling rules, skipping locked accounts. Higher levels add legacy SHA-1 and unsalted MD5
schemes, a messy (CRLF, duplicated, gzipped) wordlist, and rule combinations (capitalised / leetspeak
bases with digit, year and `!` suffixes)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, unseen

REFERENCE = r'''
import gzip
import hashlib
import sys

FORMS = @FORMS@        # any of: plain, cap, leet
SUFFIXES = @SUFFIXES@  # any of: none, digit, twodigit, year, bang
LEET = str.maketrans("aeios", "43105")
ALGOS = {"s256": hashlib.sha256, "s1": hashlib.sha1, "md5": hashlib.md5}


def words_from(text):
    out = []
    for line in text.splitlines():
        w = line.strip()
        if w:
            out.append(w)
    return list(dict.fromkeys(out))


def candidates(words):
    sfx = [""]
    if "digit" in SUFFIXES:
        sfx += [str(d) for d in range(10)]
    if "twodigit" in SUFFIXES:
        sfx += [f"{d:02d}" for d in range(100)]
    if "year" in SUFFIXES:
        sfx += [str(y) for y in range(1990, 2030)]
    if "bang" in SUFFIXES:
        sfx += ["!"]
    sfx = list(dict.fromkeys(sfx))
    out = []
    for w in words:
        forms = [w]
        if "cap" in FORMS:
            forms.append(w[:1].upper() + w[1:])
        if "leet" in FORMS:
            forms.append(w.translate(LEET))
        for f in dict.fromkeys(forms):
            out += [f + s for s in sfx]
    return list(dict.fromkeys(out))


def parse(text):
    accounts = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        user, field = line.split(":")[:2]
        if field.startswith("!") or field.startswith("*"):
            continue
        parts = field.split("$")  # ['', scheme, salt, hex] or ['', 'md5', hex]
        if parts[1] == "md5":
            accounts.append((user, "md5", "", parts[2]))
        else:
            accounts.append((user, parts[1], parts[2], parts[3]))
    return accounts


def crack(accounts_text, words_text, pepper):
    cands = [(c, (c + pepper).encode()) for c in candidates(words_from(words_text))]
    found = {}
    for user, scheme, salt, digest in parse(accounts_text):
        base = ALGOS[scheme](salt.encode())
        for plain, tail in cands:
            h = base.copy()
            h.update(tail)
            if h.hexdigest() == digest:
                found[user] = plain
                break
    return "".join(f"{u}:{found[u]}\n" for u in sorted(found))


def read(path):
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read().decode("utf-8")
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


if __name__ == "__main__":  # ACCOUNTS WORDLIST PEPPER
    sys.stdout.write(crack(read(sys.argv[1]), read(sys.argv[2]), sys.argv[3]))
'''

COMMON = ["dragon", "monkey", "sunshine", "football", "princess", "shadow", "master", "welcome", "letmein", "qwerty",
          "baseball", "summer", "winter", "freedom", "secret", "hunter", "ranger", "thunder", "silver", "tigger",
          "pepper", "cookie", "banana", "orange", "purple", "soccer", "hockey", "matrix", "phoenix", "falcon",
          "coffee", "rocket", "dolphin", "garden", "marina", "oliver", "sophie", "charlie", "maverick", "buster"]
SYL = ["ka", "lo", "mi", "ra", "te", "no", "vi", "sa", "du", "pe", "ri", "go", "ba", "ne", "zo", "lu", "fa", "mo"]
STRONG = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789#%&*+=?"
RULE_TEXT = {"cap": "the word with its first letter upper-cased", "leet": "the word in leetspeak (every a, e, i, o, s "
             "replaced by 4, 3, 1, 0, 5 respectively)", "digit": "one digit", "twodigit": "two digits (00-99)",
             "year": "a year from 1990 to 2029", "bang": "a single `!`"}


def _wordlist(rng, n):
    extra = n - len(COMMON)
    words = list(COMMON) + (distinct(lambda: "".join(rng.choice(SYL) for _ in range(rng.randrange(2, 5))), extra,
                                     COMMON) if extra > 0 else [])
    rng.shuffle(words)
    return words[:n]


@dataclass(frozen=True)
class Knobs:
    users: int  # accounts that are not locked
    words: int  # words in the known-bad list
    schemes: tuple[str, ...]  # hash schemes in the dump: s256, s1, md5
    locked: int  # locked accounts (left out of the report)
    messy: bool  # CRLF line ends, duplicates and a blank line in the wordlist
    forms: tuple[str, ...]  # base forms of a word: plain, cap, leet
    suffixes: tuple[str, ...]  # suffix rules: none, digit, twodigit, year, bang


@register
class PasswordHashAudit(Family):
    name = "password_hash_audit"
    domain = "security"
    skill_types = ("Cryptography", "Secrets Management")
    primitive_skills = ("salted password hashing", "dictionary attacks with mangling rules",
                        "credential audit reporting", "checksum verification")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    levels = {0: Knobs(users=4, words=0, schemes=("md5",), locked=0, messy=False, forms=("plain",),
                       suffixes=("none",)),
              1: Knobs(users=8, words=150, schemes=("s256",), locked=0, messy=False, forms=("plain",),
                       suffixes=("none",)),
              2: Knobs(users=12, words=250, schemes=("s256",), locked=2, messy=False, forms=("plain", "cap"),
                       suffixes=("none", "digit")),
              3: Knobs(users=14, words=300, schemes=("s256", "s1"), locked=2, messy=True, forms=("plain", "cap"),
                       suffixes=("none", "digit", "twodigit", "bang")),
              4: Knobs(users=16, words=300, schemes=("s256", "s1", "md5"), locked=3, messy=True,
                       forms=("plain", "cap", "leet"), suffixes=("none", "digit", "twodigit", "year", "bang"))}

    def _atomic(self, t: TaskBuilder) -> None:
        """Level 0: one named password, unsalted hashes: one digest to compute, one line to find."""
        k, rng = t.knobs, t.rng
        users = sorted(rng.sample(["ana", "ben", "chen", "dara", "eli", "gus", "hiro", "ines", "kim", "lena"], k.users))
        pws = rng.sample(COMMON, k.users)  # distinct: the asked password names exactly one account
        rows = [(f"{u}.{rng.choice(['ops', 'eng', 'fin', 'hr'])}", pw,
                 f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}") for u, pw in zip(users, pws)]
        pepper = unseen(t, lambda: t.code(2), "\n".join(f"{a} {d}" for a, _, d in rows))
        lines = ["# export of app_users.password_hash", "# user:hash:last_login"]
        lines += [f"{a}:$md5${hashlib.md5((pw + pepper).encode()).hexdigest()}:{d}" for a, pw, d in rows]
        t.add_file("/app/audit/accounts.txt", "\n".join(lines) + "\n")
        account, pw, _ = rng.choice(rows)
        who = t.deliver(pepper, "the pepper")
        t.say(f"`/app/audit/accounts.txt` is our user table export (`<user>:<hash>:<last login>`, `#` lines are "
              f"comments). A hash `$md5$<hex>` is the MD5 of the password followed by the pepper given above "
              f"(UTF-8, no separator, lowercase hex). Which account uses the password `{pw}`? "
              f"Give its `<user>` field (e.g. `zoe.eng`) as a single line.")
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'h=$(printf %s "{pw}{who}" | md5sum | cut -d" " -f1)\n'
                f'grep -F "$h" /app/audit/accounts.txt | cut -d: -f1 > /app/out/cracked.txt')
        t.expect_output("/app/out/cracked.txt", account + "\n", "the account")

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self._atomic(t)
        k, rng = t.knobs, t.rng
        ref_src = fill(REFERENCE, FORMS=k.forms, SUFFIXES=k.suffixes)
        ns = run_python(ref_src)
        words = _wordlist(rng, k.words)
        cands = ns["candidates"](words)
        first = ["ana", "ben", "chen", "dara", "eli", "fatima", "gus", "hiro", "ines", "jon", "kim", "lena", "mo",
                 "nia", "omar", "pia", "quinn", "raj", "sara", "tom", "uma", "vic", "wen", "yusuf", "zoe"]
        users = sorted(rng.sample(first, k.users + k.locked))
        locked = set(rng.sample(users, k.locked))
        must_crack = set(rng.sample([u for u in users if u not in locked], 2))
        rows = []  # (user, scheme, salt, password, lock mark, department, last login): all but the pepper
        for u in users:
            scheme = rng.choice(k.schemes)
            weak = rng.random() < 0.6 or u in locked or u in must_crack
            pw = rng.choice(cands) if weak else "".join(rng.choice(STRONG) for _ in range(14))
            salt = "" if scheme == "md5" else "".join(rng.choice(STRONG[:-8]) for _ in range(8))
            mark = (rng.choice(["!", "*", "!!"]) if rng.random() < 0.7 else "!") if u in locked else ""
            rows.append((u, scheme, salt, pw, mark, rng.choice(["ops", "eng", "fin", "hr"]),
                         f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"))
        wl = list(words)
        if k.messy:
            wl += rng.sample(words, len(words) // 10)
            rng.shuffle(wl)
            wl.insert(rng.randrange(len(wl)), "")
            wtext = "".join(w + "\r\n" for w in wl)
        else:
            wtext = "".join(w + "\n" for w in wl)
        if t.level >= 4:
            t.add_file("/app/audit/wordlist.txt.src", wtext)
            t.add_setup("gzip -n /app/audit/wordlist.txt.src && mv /app/audit/wordlist.txt.src.gz "
                        "/app/audit/wordlist.txt.gz")
            wpath = "/app/audit/wordlist.txt.gz"
        else:
            t.add_file("/app/audit/wordlist.txt", wtext)
            wpath = "/app/audit/wordlist.txt"
        # The pepper (delivered) keys every digest; the digests are hex, so what else the dump shows (user
        # names, salts) is all that could spell it.
        pepper = unseen(t, lambda: t.code(2), "\n".join(" ".join(r[:3] + r[4:]) for r in rows))
        lines = ["# export of app_users.password_hash, taken for the credential audit", "# user:hash:last_login"]
        for u, scheme, salt, pw, mark, dept, login in rows:
            digest = {"s256": hashlib.sha256, "s1": hashlib.sha1, "md5": hashlib.md5}[scheme](
                (salt + pw + pepper).encode()).hexdigest()
            field = f"$md5${digest}" if scheme == "md5" else f"${scheme}${salt}${digest}"
            lines.append(f"{u}.{dept}:{mark}{field}:{login}")
        accounts = "\n".join(lines) + "\n"
        t.add_file("/app/audit/accounts.txt", accounts)
        truth = ns["crack"](accounts, wtext, pepper)
        who = t.deliver(pepper, "the pepper")
        schemes = {"s256": "`$s256$<salt>$<hex>` = SHA-256 of salt + password + pepper",
                   "s1": "`$s1$<salt>$<hex>` = SHA-1 of salt + password + pepper (legacy)",
                   "md5": "`$md5$<hex>` = MD5 of password + pepper (an ancient import, unsalted)"}
        scheme_txt = "; ".join(schemes[s] for s in k.schemes)
        base_forms = ["the word itself"] + [RULE_TEXT[f] for f in k.forms[1:]]
        sfx = [RULE_TEXT[s] for s in k.suffixes[1:]]
        if sfx:
            tail = (f"optionally followed by {sfx[0]}" if len(sfx) == 1 else
                    f"followed by either nothing or exactly one of: {'; '.join(sfx)}")
            rule_txt = f"Candidates are built from each word as a base ({'; or '.join(base_forms)}), {tail}."
        else:
            rule_txt = "Candidates are the words themselves, unchanged."
        t.say(f"We are running a credential audit of our web app. `/app/audit/accounts.txt` is the export of the "
              f"user table (`<user>:<hash>:<last login>`, `#` lines are comments). Hash formats: {scheme_txt}; all "
              f"strings are UTF-8, concatenated without separators, digests in lowercase hex. The pepper, given above, "
              f"is a server-side secret appended to every password before hashing. A hash field starting with `!` or "
              f"`*` marks a locked account: leave those out entirely. Find every other account whose password "
              f"comes from our list of known-bad passwords, `{wpath}` (one word per line; ignore surrounding "
              f"whitespace, carriage returns and blank lines). {rule_txt}")
        t.add_solution_file("audit.py", ref_src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/audit.py /app/audit/accounts.txt {wpath} "{who}" > /app/out/cracked.txt')
        fmt = "one line per cracked account, sorted by user name: `<user>:<password>`"
        t.say(f"Report format: {fmt}.")
        t.expect_output("/app/out/cracked.txt", truth, "the list of cracked accounts")
