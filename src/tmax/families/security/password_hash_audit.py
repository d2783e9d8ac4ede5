"""Password audit of an application's peppered, salted hash dump (the pepper is the delivered value).
Variants: recover weak passwords with a wordlist and mangling rules, skipping locked accounts; check a
helpdesk's list of claimed passwords against the stored hashes (a verdict per claim, no wordlist); or
tally cracked accounts per department. Higher levels add legacy SHA-1 and unsalted MD5 schemes, a messy
(CRLF, duplicated, gzipped) wordlist or claims file, and rule combinations (capitalised / leetspeak
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


def parse(text, locked=False):
    """(user, scheme, salt, hex digest, is locked) per account; locked ones only when asked for."""
    accounts = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        user, field = line.split(":")[:2]
        shut = field.startswith("!") or field.startswith("*")
        if shut and not locked:
            continue
        parts = field.lstrip("!*").split("$")  # ['', scheme, salt, hex] or ['', 'md5', hex]
        if parts[1] == "md5":
            accounts.append((user, "md5", "", parts[2], shut))
        else:
            accounts.append((user, parts[1], parts[2], parts[3], shut))
    return accounts


def cracked(accounts_text, words_text, pepper):
    cands = [(c, (c + pepper).encode()) for c in candidates(words_from(words_text))]
    found = {}
    for user, scheme, salt, digest, _ in parse(accounts_text):
        base = ALGOS[scheme](salt.encode())
        for plain, tail in cands:
            h = base.copy()
            h.update(tail)
            if h.hexdigest() == digest:
                found[user] = plain
                break
    return found


def crack(accounts_text, words_text, pepper):
    found = cracked(accounts_text, words_text, pepper)
    return "".join(f"{u}:{found[u]}\n" for u in sorted(found))


def departments(accounts_text, words_text, pepper):
    """`<dept>,<cracked>,<accounts>` over the accounts that are not locked, by department name, for the
    departments with an account cracked (the rest would not depend on the pepper)."""
    found = cracked(accounts_text, words_text, pepper)
    tally = {}
    for user, *_ in parse(accounts_text):
        row = tally.setdefault(user.rsplit(".", 1)[-1], [0, 0])
        row[0] += user in found
        row[1] += 1
    return "".join(f"{d},{c},{n}\n" for d, (c, n) in sorted(tally.items()) if c)


def verify(accounts_text, claims_text, pepper, only_match=False):
    """`<user> <verdict>` per claimed user (the last claim for a user counts), by user name; only the
    matches when asked (the other verdicts a wrong pepper would give as well)."""
    stored = {a[0]: a for a in parse(accounts_text, locked=True)}
    claims = {}
    for line in claims_text.splitlines():
        fields = line.split()
        if len(fields) == 2 and not fields[0].startswith("#"):
            claims[fields[0]] = fields[1]
    out = []
    for user in sorted(claims):
        a = stored.get(user)
        if a is None:
            verdict = "unknown"
        elif a[4]:
            verdict = "locked"
        else:
            digest = ALGOS[a[1]]((a[2] + claims[user] + pepper).encode()).hexdigest()
            verdict = "match" if digest == a[3] else "mismatch"
        if verdict == "match" or not only_match:
            out.append(f"{user} {verdict}\n")
    return "".join(out)


def read(path):
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read().decode("utf-8")
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


if __name__ == "__main__":  # MODE ACCOUNTS WORDLIST-OR-CLAIMS PEPPER
    mode = {"crack": crack, "departments": departments, "claims": verify,
            "matches": lambda a, c, p: verify(a, c, p, only_match=True)}[sys.argv[1]]
    sys.stdout.write(mode(read(sys.argv[2]), read(sys.argv[3]), sys.argv[4]))
'''

COMMON = ["dragon", "monkey", "sunshine", "football", "princess", "shadow", "master", "welcome", "letmein", "qwerty",
          "baseball", "summer", "winter", "freedom", "secret", "hunter", "ranger", "thunder", "silver", "tigger",
          "pepper", "cookie", "banana", "orange", "purple", "soccer", "hockey", "matrix", "phoenix", "falcon",
          "coffee", "rocket", "dolphin", "garden", "marina", "oliver", "sophie", "charlie", "maverick", "buster"]
SYL = ["ka", "lo", "mi", "ra", "te", "no", "vi", "sa", "du", "pe", "ri", "go", "ba", "ne", "zo", "lu", "fa", "mo"]
STRONG = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789#%&*+=?"
FIRST = ["ana", "ben", "chen", "dara", "eli", "fatima", "gus", "hiro", "ines", "jon", "kim", "lena", "mo", "nia",
         "omar", "pia", "quinn", "raj", "sara", "tom", "uma", "vic", "wen", "yusuf", "zoe"]
DEPTS = ["ops", "eng", "fin", "hr"]
LEET_MAP = str.maketrans("aeios", "43105")
RULE_TEXT = {"cap": "the word with its first letter upper-cased", "leet": "the word in leetspeak (every a, e, i, o, s "
             "replaced by 4, 3, 1, 0, 5 respectively)", "digit": "one digit", "twodigit": "two digits (00-99)",
             "year": "a year from 1990 to 2029", "bang": "a single `!`"}


def _wordlist(rng, n):
    extra = n - len(COMMON)
    words = list(COMMON) + (distinct(lambda: "".join(rng.choice(SYL) for _ in range(rng.randrange(2, 5))), extra,
                                     COMMON) if extra > 0 else [])
    rng.shuffle(words)
    return words[:n]


def _near(rng, pw):
    """A wrong claim a user would plausibly make: their password with one slip."""
    slips = [pw[:1].swapcase() + pw[1:], pw + rng.choice(["1", "!", "2024"]), pw[:-1], pw.translate(LEET_MAP)]
    return rng.choice([s for s in slips if s and s != pw])


def _login(rng):
    return f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"


SCHEMES = {"s256": "`$s256$<salt>$<hex>` = SHA-256 of salt + password + pepper",
           "s1": "`$s1$<salt>$<hex>` = SHA-1 of salt + password + pepper (legacy)",
           "md5": "`$md5$<hex>` = MD5 of password + pepper (an ancient import, unsalted)"}
CLAIMS_TEXT = ("The helpdesk collected the passwords some users say they have in `/app/audit/claims.txt` (one "
               "`<user> <password>` per line, `<user>` as in the export).")


@dataclass(frozen=True)
class Knobs:
    users: int  # accounts that are not locked
    words: int  # words in the known-bad list
    schemes: tuple[str, ...]  # hash schemes in the dump: s256, s1, md5
    locked: int  # locked accounts (left out of the report)
    messy: bool  # CRLF line ends, duplicates and a blank line in the wordlist (comments, a repeat in claims)
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
    variants = ("crack", "claims", "departments")
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
        """Level 0: unsalted hashes and one short question: the account with a named password, the users
        whose claimed password is right, or the departments whose accounts share a named password."""
        k, rng, v = t.knobs, t.rng, t.variant
        users = sorted(rng.sample(FIRST[:14], k.users))
        pws = rng.sample(COMMON, k.users)  # distinct: the asked password names exactly one account
        asked = pws[0]
        if v == "departments":  # ... except here, where it is shared by two or three accounts
            shared = rng.randrange(2, k.users)
            pws = [pws[0]] * shared + pws[1:k.users - shared + 1]
            rng.shuffle(pws)
        rows = [(f"{u}.{rng.choice(DEPTS)}", pw, _login(rng)) for u, pw in zip(users, pws)]
        if v == "claims":  # the same guess for every user, right for some: the pepper decides
            right = set(rng.sample(range(k.users), rng.randrange(1, k.users)))
            claims = [(a, pw if i in right else rng.choice([w for w in COMMON if w != pw]))
                      for i, (a, pw, _) in enumerate(rows)]
            t.add_file("/app/audit/claims.txt", "".join(f"{a} {c}\n" for a, c in claims))
        pepper = unseen(t, lambda: t.code(2), "\n".join(f"{a} {d}" for a, _, d in rows))
        lines = ["# export of app_users.password_hash", "# user:hash:last_login"]
        lines += [f"{a}:$md5${hashlib.md5((pw + pepper).encode()).hexdigest()}:{d}" for a, pw, d in rows]
        t.add_file("/app/audit/accounts.txt", "\n".join(lines) + "\n")
        account, pw, _ = rows[pws.index(asked)] if v == "departments" else rng.choice(rows)
        who = t.deliver(pepper, "the pepper")
        t.say(f"`/app/audit/accounts.txt` is our user table export (`<user>:<hash>:<last login>`, `#` lines are "
              f"comments). A hash `$md5$<hex>` is the MD5 of the password followed by the pepper given above "
              f"(UTF-8, no separator, lowercase hex).")
        def md5(password: str, pepper: str) -> str:
            return f'h=$(printf %s "{password}{pepper}" | md5sum | cut -d" " -f1)'
        if v == "crack":
            t.say(f"Which account uses the password `{pw}`? Give its `<user>` field (e.g. `zoe.eng`) as a single line.")
            out, truth = "/app/out/cracked.txt", account + "\n"
            cmd = md5(pw, who) + f'\ngrep -F "$h" /app/audit/accounts.txt | cut -d: -f1 > {out}'
        elif v == "claims":
            t.say(CLAIMS_TEXT + " Which users' claims are right? Give their `<user>` fields, one per line, in the "
                  "order of the claims file.")
            out, truth = "/app/out/verdicts.txt", "".join(f"{a}\n" for i, (a, _) in enumerate(claims) if i in right)
            cmd = (f'while read -r u p; do {md5("$p", who)}; grep -qF "$u:\\$md5\\$$h:" '
                   f'/app/audit/accounts.txt && echo "$u"; done < /app/audit/claims.txt > {out}')
        else:
            depts = sorted({a.rsplit(".", 1)[1] for a, p, _ in rows if p == pw})
            t.say(f"Several accounts use the password `{pw}`. Which departments (the part of `<user>` after the "
                  "`.`) do they belong to? One department per line, sorted, each once.")
            out, truth = "/app/out/departments.csv", "".join(f"{d}\n" for d in depts)
            cmd = (md5(pw, who) + f'\ngrep -F "$h" /app/audit/accounts.txt | cut -d: -f1 | cut -d. -f2 '
                   f'| sort -u > {out}')
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n{cmd}')
        t.expect_output(out, truth, {"crack": "the account", "claims": "the users with a right claim",
                                     "departments": "the departments"}[v])

    def _claims(self, t: TaskBuilder, rows) -> str:
        """The helpdesk's claims file: right and slipped passwords, locked and unknown users, shuffled;
        messy levels add CRLF, a comment, a blank line and a user claimed twice (the later claim counts)."""
        k, rng = t.knobs, t.rng
        claims, live = [], 0
        for u, _, _, pw, mark, _, _ in rows:
            if mark:
                if rng.random() < 0.7:
                    claims.append((u, pw))  # right, yet locked: the lock decides
                continue
            live += 1
            if live <= 2 or rng.random() < 0.8:  # the first two: one right, one wrong, always
                claims.append((u, pw if live == 1 or (live > 2 and rng.random() < 0.5) else _near(rng, pw)))
        taken = {r[0].split(".")[0] for r in rows}
        for name in rng.sample([n for n in FIRST if n not in taken], 1 + k.messy):
            claims.append((f"{name}.{rng.choice(DEPTS)}", rng.choice(COMMON)))
        rng.shuffle(claims)
        lines = [f"{u} {p}" for u, p in claims]
        if k.messy:
            j = rng.randrange(len(claims))
            u, p = claims[j]
            lines.insert(rng.randrange(j + 1), f"{u} {_near(rng, p)}")
            lines.insert(0, f"# collected by the helpdesk, {_login(rng)}")
            lines.insert(rng.randrange(1, len(lines)), "")
        end = "\r\n" if k.messy else "\n"
        text = "".join(line + end for line in lines)
        t.add_file("/app/audit/claims.txt", text)
        return text

    def _wordlist_file(self, t: TaskBuilder, words) -> tuple[str, str]:
        """The known-bad list as the agent gets it (messy: CRLF, repeats, a blank; level 4: gzipped)."""
        k, rng = t.knobs, t.rng
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
            return "/app/audit/wordlist.txt.gz", wtext
        t.add_file("/app/audit/wordlist.txt", wtext)
        return "/app/audit/wordlist.txt", wtext

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self._atomic(t)
        k, rng, v = t.knobs, t.rng, t.variant
        ref_src = fill(REFERENCE, FORMS=k.forms, SUFFIXES=k.suffixes)
        ns = run_python(ref_src)
        words = _wordlist(rng, k.words)
        cands = ns["candidates"](words)
        users = sorted(rng.sample(FIRST, k.users + k.locked))
        locked = set(rng.sample(users, k.locked))
        must_crack = set(rng.sample([u for u in users if u not in locked], 2))
        rows = []  # (user field, scheme, salt, password, lock mark, department, last login): all but the pepper
        for u in users:
            scheme = rng.choice(k.schemes)
            weak = rng.random() < 0.6 or u in locked or u in must_crack
            pw = rng.choice(cands) if weak else "".join(rng.choice(STRONG) for _ in range(14))
            salt = "" if scheme == "md5" else "".join(rng.choice(STRONG[:-8]) for _ in range(8))
            mark = (rng.choice(["!", "*", "!!"]) if rng.random() < 0.7 else "!") if u in locked else ""
            dept = rng.choice(DEPTS)
            rows.append((f"{u}.{dept}", scheme, salt, pw, mark, dept, _login(rng)))
        if v == "claims":  # no wordlist: the claims are what is checked
            other, otext = "/app/audit/claims.txt", self._claims(t, rows)
        else:
            other, otext = self._wordlist_file(t, words)
        # The pepper (delivered) keys every digest; the digests are hex, so what else the dump shows (user
        # names, salts) is all that could spell it.
        pepper = unseen(t, lambda: t.code(2), "\n".join(" ".join(r[:3] + r[4:]) for r in rows))
        lines = ["# export of app_users.password_hash, taken for the credential audit", "# user:hash:last_login"]
        for u, scheme, salt, pw, mark, _, login in rows:
            digest = ns["ALGOS"][scheme]((salt + pw + pepper).encode()).hexdigest()
            field = f"$md5${digest}" if scheme == "md5" else f"${scheme}${salt}${digest}"
            lines.append(f"{u}:{mark}{field}:{login}")
        accounts = "\n".join(lines) + "\n"
        t.add_file("/app/audit/accounts.txt", accounts)
        # Under partial credit the claims report keeps only the matches: a wrong pepper earns every other line.
        mode = "matches" if v == "claims" and t.partial_credit else v
        truth = (ns["verify"](accounts, otext, pepper, only_match=mode == "matches") if v == "claims" else
                 ns[v](accounts, otext, pepper))
        who = t.deliver(pepper, "the pepper")
        t.say(f"We are running a credential audit of our web app. `/app/audit/accounts.txt` is the export of the "
              f"user table (`<user>:<hash>:<last login>`, `#` lines are comments). Hash formats: "
              f"{'; '.join(SCHEMES[s] for s in k.schemes)}; all strings are UTF-8, concatenated without separators, "
              f"digests in lowercase hex. The pepper, given above, is a server-side secret appended to every password "
              f"before hashing. A hash field starting with `!` or `*` marks a locked account.")
        if v == "claims":
            t.say(CLAIMS_TEXT + " Give each claimed user a verdict: `locked` when the account is locked, `unknown` "
                  "when the export has no such user, else `match` when the claimed password hashes to the stored "
                  "digest and `mismatch` when it does not."
                  + (" Lines may end in CRLF; blank lines and `#` lines are not claims; a user claimed twice counts "
                     "by the later claim only." if k.messy else ""))
            fmt, out, what = ("one line per claimed user" + (" whose verdict is `match`" if mode == "matches" else "")
                              + ", sorted by user (byte order): `<user> <verdict>`", "/app/out/verdicts.txt",
                              "the verdicts")
        else:
            base_forms = ["the word itself"] + [RULE_TEXT[f] for f in k.forms[1:]]
            sfx = [RULE_TEXT[s] for s in k.suffixes[1:]]
            if sfx:
                tail = (f"optionally followed by {sfx[0]}" if len(sfx) == 1 else
                        f"followed by either nothing or exactly one of: {'; '.join(sfx)}")
                rule_txt = f"Candidates are built from each word as a base ({'; or '.join(base_forms)}), {tail}."
            else:
                rule_txt = "Candidates are the words themselves, unchanged."
            t.say(f"Leave locked accounts out entirely. Find every other account whose password comes from our list "
                  f"of known-bad passwords, `{other}` (one word per line; ignore surrounding whitespace, carriage "
                  f"returns and blank lines). {rule_txt}")
            if v == "crack":
                fmt, out, what = ("one line per cracked account, sorted by user name: `<user>:<password>`",
                                  "/app/out/cracked.txt", "the list of cracked accounts")
            else:
                fmt, out, what = ("one line per department (the part of `<user>` after the `.`) with an account you "
                                  "cracked, sorted by department name: `<dept>,<cracked>,<accounts>`, the number of "
                                  "its accounts that are not locked you cracked and the number it has",
                                  "/app/out/departments.csv", "the per-department tally")
        t.add_solution_file("audit.py", ref_src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/audit.py {mode} /app/audit/accounts.txt {other} "{who}" > {out}')
        t.say(f"Report format: {fmt}.")
        t.expect_output(out, truth, what)
