"""Bisect a regression in a small invoicing tool's git history. Release v1.0 priced an order
correctly; on main its total is different. The history (built reproducibly at environment build
time, fixed dates and authors) is full of behaviour-preserving refactors, docs, tests and release
bumps; one commit (two at level 4) changes the pricing for some orders (float cents, an off-by-one
bulk threshold, a lost case normalisation, per-line tax rounding). Traps at higher levels: commits
that do not run at all (syntax errors, a misspelt name), an intended output-format change that
breaks naive string comparison, an intended rule change that moves other orders' totals. The
complaining customer knows only the total main prints for their order (delivered): the agent finds the
order by it. Variants: culprit (the order id and the subject line of the offending commit(s)),
blast_radius (every order that commit changed, with its totals before and after it) and shipped_in (the
first release commit after it, or `unreleased`)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

# -- the code, as blocks with interchangeable variants ------------------------------------------
# Each block: list of (class, text). Class "g" = correct behaviour, "b" = regressed behaviour;
# refactors switch between variants of the same class. Other labels are free-standing states.
B: dict[str, list[tuple[str, str]]] = {}

B["init"] = [("g", '"""invoicer: prices customer orders."""\nimport sys\n\n'
                   "# The tool is often run from read-only checkouts: never write bytecode caches.\n"
                   "sys.dont_write_bytecode = True\n\n__version__ = \"1.0.@N@\"")]  # N: the release
B["main"] = [("g", "from .cli import main\n\nmain()")]
B["money_head"] = [("g", '"""Money helpers: every amount is an integer number of cents."""\n'
                         "from decimal import ROUND_HALF_UP, Decimal")]
B["to_cents"] = [
    ("g", 'def to_cents(text):\n    """Parse a decimal string such as \'12.30\' into integer cents."""\n'
          "    return int((Decimal(text) * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))"),
    ("g", 'def to_cents(text):\n    """Parse a decimal string such as \'12.30\' into integer cents."""\n'
          "    amount = Decimal(text.strip())\n"
          "    return int((amount * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))"),
    ("g", "def to_cents(text):\n    cents = Decimal(text) * 100\n"
          "    return int(cents.quantize(Decimal(1), rounding=ROUND_HALF_UP))"),
    ("b", 'def to_cents(text):\n    """Parse a decimal string such as \'12.30\' into integer cents."""\n'
          "    return int(float(text) * 100)"),
    ("b", "def to_cents(text):\n    amount = float(text.strip())\n    return int(amount * 100)"),
]
B["scale"] = [
    ("g", 'def scale(cents, rate):\n    """cents * rate, rounded half up to whole cents."""\n'
          "    return int((Decimal(cents) * Decimal(rate)).quantize(Decimal(1), rounding=ROUND_HALF_UP))"),
    ("g", 'def scale(cents, rate):\n    """cents * rate, rounded half up to whole cents."""\n'
          "    product = Decimal(cents) * Decimal(rate)\n"
          "    return int(product.quantize(Decimal(1), rounding=ROUND_HALF_UP))"),
]
B["format_cents"] = [
    ("g", 'def format_cents(cents):\n    return f"{cents // 100}.{cents % 100:02d}"'),
    ("g", 'def format_cents(cents):\n    whole, frac = divmod(cents, 100)\n    return f"{whole}.{frac:02d}"'),
]
B["rules"] = [
    ("base", '"""Pricing rules. Rates are decimal strings."""\n\nBULK_THRESHOLD = 10\nBULK_RATE = "0.05"\n'
             'TAX_RATES = {"food": "0.07", "books": "0.07", "general": "0.19"}\nDEFAULT_TAX = "0.19"\n'
             'COUPONS = {"SPRING10": "0.10", "LOYAL15": "0.15"}'),
    ("new", '"""Pricing rules. Rates are decimal strings."""\n\nBULK_THRESHOLD = 10\nBULK_RATE = "0.05"\n'
            'TAX_RATES = {"food": "0.07", "books": "0.07", "general": "0.19"}\nDEFAULT_TAX = "0.19"\n'
            'COUPONS = {"SPRING10": "0.10", "LOYAL15": "0.15", "WELCOME5": "0.05"}'),
]
B["pricing_head"] = [
    ("g", '"""Order pricing."""\nfrom .money import scale, to_cents\n'
          "from .rules import BULK_RATE, BULK_THRESHOLD, COUPONS, DEFAULT_TAX, TAX_RATES"),
    ("g", '"""Order pricing: line nets, coupons, tax."""\nfrom .money import scale, to_cents\n'
          "from .rules import (BULK_RATE, BULK_THRESHOLD, COUPONS, DEFAULT_TAX,\n                    TAX_RATES)"),
]
B["line_net"] = [
    ("g", 'def line_net(qty, unit_cents):\n    """Net amount of one order line, after the bulk discount."""\n'
          "    gross = qty * unit_cents\n    if qty >= BULK_THRESHOLD:\n        gross -= scale(gross, BULK_RATE)\n"
          "    return gross"),
    ("g", 'def line_net(qty, unit_cents):\n    """Net amount of one order line, after the bulk discount."""\n'
          "    gross = qty * unit_cents\n    discount = scale(gross, BULK_RATE) if qty >= BULK_THRESHOLD else 0\n"
          "    return gross - discount"),
    ("b", 'def line_net(qty, unit_cents):\n    """Net amount of one order line, after the bulk discount."""\n'
          "    gross = qty * unit_cents\n    if qty > BULK_THRESHOLD:\n        gross -= scale(gross, BULK_RATE)\n"
          "    return gross"),
    ("b", 'def line_net(qty, unit_cents):\n    """Net amount of one order line, after the bulk discount."""\n'
          "    gross = qty * unit_cents\n    discount = scale(gross, BULK_RATE) if qty > BULK_THRESHOLD else 0\n"
          "    return gross - discount"),
]
B["category_of"] = [
    ("g", "def category_of(raw):\n    return raw.strip().lower()"),
    ("g", 'def category_of(raw):\n    """Normalise a category name as typed by the shop staff."""\n'
          "    return raw.lower().strip()"),
    ("b", "def category_of(raw):\n    return raw.strip()"),
    ("b", 'def category_of(raw):\n    """Normalise a category name as typed by the shop staff."""\n'
          '    return " ".join(raw.split())'),
]
B["coupon_rate"] = [
    ("g", 'def coupon_rate(code):\n    return COUPONS.get(code.strip().upper(), "0")'),
    ("g", 'def coupon_rate(code):\n    code = code.strip().upper()\n    return COUPONS[code] if code in COUPONS else "0"'),
    ("b", 'def coupon_rate(code):\n    return COUPONS.get(code.strip(), "0")'),
    ("b", 'def coupon_rate(code):\n    code = code.strip()\n    return COUPONS[code] if code in COUPONS else "0"'),
]
_SUMMARY_DOC = '    """Subtotal, discount, tax and total, in cents, for one order."""\n'
_SUMMARY_END = '    return {"subtotal": subtotal, "discount": discount, "tax": tax, "total": subtotal - discount + tax}'
B["order_summary"] = [
    ("g", "def order_summary(lines, coupon):\n" + _SUMMARY_DOC + "    nets = {}\n"
          "    for sku, qty, price, category in lines:\n        cat = category_of(category)\n"
          "        nets[cat] = nets.get(cat, 0) + line_net(qty, to_cents(price))\n"
          "    subtotal = sum(nets.values())\n    discount = scale(subtotal, coupon_rate(coupon))\n"
          "    tax = sum(scale(net, TAX_RATES.get(cat, DEFAULT_TAX)) for cat, net in nets.items())\n" + _SUMMARY_END),
    ("g", "def order_summary(lines, coupon):\n" + _SUMMARY_DOC + "    nets = {}\n"
          "    for _sku, qty, price, category in lines:\n        net = line_net(qty, to_cents(price))\n"
          "        cat = category_of(category)\n        nets[cat] = nets.get(cat, 0) + net\n"
          "    subtotal = sum(nets.values())\n    discount = scale(subtotal, coupon_rate(coupon))\n"
          "    tax = 0\n    for cat, net in nets.items():\n        tax += scale(net, TAX_RATES.get(cat, DEFAULT_TAX))\n"
          + _SUMMARY_END),
    ("b", "def order_summary(lines, coupon):\n" + _SUMMARY_DOC + "    subtotal = tax = 0\n"
          "    for sku, qty, price, category in lines:\n        net = line_net(qty, to_cents(price))\n"
          "        subtotal += net\n        tax += scale(net, TAX_RATES.get(category_of(category), DEFAULT_TAX))\n"
          "    discount = scale(subtotal, coupon_rate(coupon))\n" + _SUMMARY_END),
    ("b", "def order_summary(lines, coupon):\n" + _SUMMARY_DOC + "    subtotal = tax = 0\n"
          "    for _sku, qty, price, category in lines:\n        net = line_net(qty, to_cents(price))\n"
          "        rate = TAX_RATES.get(category_of(category), DEFAULT_TAX)\n        subtotal += net\n"
          "        tax += scale(net, rate)\n    discount = scale(subtotal, coupon_rate(coupon))\n" + _SUMMARY_END),
]
B["cli_head"] = [("g", '"""Command line: python3 -m invoicer ORDERS.csv --order ID"""\nimport argparse\nimport csv\n'
                       "import sys\n\nfrom .money import format_cents\nfrom .pricing import order_summary")]
B["cli_load"] = [
    ("g", "def load(path, order_id):\n    lines, coupon = [], \"\"\n    with open(path, newline=\"\") as f:\n"
          "        for row in csv.DictReader(f):\n            if row[\"order_id\"] == order_id:\n"
          "                lines.append((row[\"sku\"], int(row[\"qty\"]), row[\"unit_price\"], row[\"category\"]))\n"
          "                coupon = coupon or row[\"coupon\"]\n    return lines, coupon"),
    ("g", "def load(path, order_id):\n    \"\"\"The lines of one order and its coupon code.\"\"\"\n"
          "    with open(path, newline=\"\") as f:\n"
          "        rows = [r for r in csv.DictReader(f) if r[\"order_id\"] == order_id]\n"
          "    lines = [(r[\"sku\"], int(r[\"qty\"]), r[\"unit_price\"], r[\"category\"]) for r in rows]\n"
          "    coupon = next((r[\"coupon\"] for r in rows if r[\"coupon\"]), \"\")\n    return lines, coupon"),
]
_CLI_TOP = ("def main(argv=None):\n    parser = argparse.ArgumentParser(prog=\"invoicer\")\n"
            "    parser.add_argument(\"orders\")\n    parser.add_argument(\"--order\", required=True)\n"
            "    args = parser.parse_args(argv)\n    lines, coupon = load(args.orders, args.order)\n"
            "    if not lines:\n        sys.exit(f\"order {args.order} not found\")\n"
            "    summary = order_summary(lines, coupon)\n")
B["cli_main"] = [
    ("f0", _CLI_TOP + "    print(f\"order {args.order}\")\n    for key in (\"subtotal\", \"discount\", \"tax\", \"total\"):\n"
                      "        print(f\"  {key} {format_cents(summary[key])}\")"),
    ("f0", _CLI_TOP + "    rows = [(key, format_cents(summary[key])) for key in (\"subtotal\", \"discount\", \"tax\", "
                      "\"total\")]\n    print(f\"order {args.order}\")\n    for key, value in rows:\n"
                      "        print(f\"  {key} {value}\")"),
    ("f1", _CLI_TOP + "    print(f\"Order #{args.order}\")\n    for key in (\"subtotal\", \"discount\", \"tax\", \"total\"):\n"
                      "        cents = summary[key]\n"
                      "        print(f\"  {key.title():<9} {cents // 100:>8,}.{cents % 100:02d} EUR\")"),
]
B["gitignore"] = [("g", "__pycache__/\n*.pyc")]

README_PARAS = [
    "# invoicer\n\nPrices customer orders from the shop's CSV export.",
    "## Usage\n\n    python3 -m invoicer orders.csv --order 1234",
    "Amounts are handled as integer cents throughout; rates are decimal strings.",
    "Bulk discount: lines with 10 or more units get 5% off.",
    "Categories are matched case-insensitively; unknown categories use the general tax rate.",
    "Coupon codes are case-insensitive and apply to the order subtotal.",
    "Tax is computed per category on the category's net amount and rounded half up.",
    "## Development\n\nRun the tests with `python3 -m pytest tests`.",
    "## Releasing\n\nBump `__version__`, add a CHANGELOG entry, tag the commit.",
]
TESTS = [
    "def test_to_cents():\n    assert to_cents(\"12.30\") == 1230",
    "def test_scale_rounds_half_up():\n    assert scale(250, \"0.07\") == 18",
    "def test_format_cents():\n    assert format_cents(1205) == \"12.05\"",
    "def test_line_net_small_quantity():\n    assert line_net(3, 1000) == 3000",
    "def test_line_net_large_quantity():\n    assert line_net(20, 100) == 1900",
    "def test_unknown_coupon():\n    assert coupon_rate(\"NOPE\") == \"0\"",
    "def test_empty_order():\n    assert order_summary([], \"\")[\"total\"] == 0",
]
TESTS_HEAD = "from invoicer.money import format_cents, scale, to_cents\nfrom invoicer.pricing import coupon_rate, " \
             "line_net, order_summary"

LAYOUT = {
    ".gitignore": ["gitignore"],
    "README.md": ["readme"],
    "CHANGELOG.md": ["changelog"],
    "invoicer/__init__.py": ["init"],
    "invoicer/__main__.py": ["main"],
    "invoicer/money.py": ["money_head", "to_cents", "scale", "format_cents"],
    "invoicer/rules.py": ["rules"],
    "invoicer/pricing.py": ["pricing_head", "line_net", "category_of", "coupon_rate", "order_summary"],
    "invoicer/cli.py": ["cli_head", "cli_load", "cli_main"],
    "tests/test_pricing.py": ["tests"],
}
MODEL_BLOCKS = ["money_head", "to_cents", "scale", "format_cents", "rules", "line_net", "category_of", "coupon_rate",
                "order_summary"]
CODE_BLOCKS = ["init", "money_head", "to_cents", "scale", "format_cents", "rules", "pricing_head", "line_net",
               "category_of", "coupon_rate", "order_summary", "cli_head", "cli_load", "cli_main"]
REGRESSIONS = ["to_cents", "line_net", "category_of", "coupon_rate", "order_summary"]
# Commit subjects for a change to ``f`` (a function or file name).
REFACTOR_SUBJECTS = [lambda f: f"Refactor {f} for readability", lambda f: f"Simplify {f}", lambda f: f"Tidy up {f}",
                     lambda f: f"Use clearer names in {f}", lambda f: f"Small cleanup in {f}",
                     lambda f: f"Make {f} easier to follow", lambda f: f"Streamline {f}", lambda f: f"Polish {f}"]
IMPORT_SUBJECTS = [lambda f: f"Reorder imports in {f}", lambda f: f"Tidy imports in {f}",
                   lambda f: f"Reword module docstring of {f}"]
NICE = {"pricing_head": "pricing.py", "cli_head": "cli.py", "money_head": "money.py", "cli_load": "load",
        "cli_main": "main", "init": "__init__.py"}
FILE_OF = {b: path for path, names in LAYOUT.items() for b in names}
AUTHORS = [("Dana Whitfield", "dana@shop.example"), ("Ravi Menon", "ravi@shop.example"),
           ("Lena Ortiz", "lena@shop.example"), ("Tom Becker", "tom@shop.example")]

BUILDER = r'''import json
import os
import subprocess
import sys

spec = json.load(open(sys.argv[1]))
repo = sys.argv[2]
os.makedirs(repo, exist_ok=True)


def git(*args, env=None):
    subprocess.run(["git", *args], cwd=repo, check=True, env=env, stdout=subprocess.DEVNULL)


git("init", "-q", "-b", "main")
state = {}
for c in spec["commits"]:
    state.update(c["set"])
    for path, names in spec["layout"].items():
        if all(n in state for n in names):
            full = os.path.join(repo, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            sep = "\n\n\n" if path.endswith(".py") else "\n\n"
            with open(full, "w") as f:
                f.write(sep.join(spec["blocks"][n][state[n]] for n in names) + "\n")
    name, email = c["author"]
    env = dict(os.environ, GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name,
               GIT_COMMITTER_EMAIL=email, GIT_AUTHOR_DATE=c["date"], GIT_COMMITTER_DATE=c["date"])
    git("add", "-A", env=env)
    git("commit", "-q", "-m", c["subject"], env=env)
    if c.get("tag"):
        git("tag", c["tag"], env=env)
'''

ORACLE = r'''#!/bin/bash
# usage: bisect.sh ORDER_ID  -> prints "ORDER_ID subject of the first bad commit"
set -euo pipefail
order=$1
cd /app/repo
git checkout -q v1.0
good=$(python3 -B -m invoicer /app/data/orders.csv --order "$order" | python3 /solution/total.py)
git checkout -q main
git bisect start main v1.0 >/dev/null
git bisect run /solution/check.sh "$order" "$good" >/dev/null 2>&1
subject=$(git log -1 --format=%s refs/bisect/bad)
git bisect reset >/dev/null 2>&1
echo "$order $subject"
'''
FIND = r'''# usage: find.py TOTAL_CENTS -> the one order whose total on main is TOTAL_CENTS (and differs from v1.0's)
import contextlib
import csv
import io
import re
import subprocess
import sys

sys.dont_write_bytecode = True
REPO, ORDERS = "/app/repo", "/app/data/orders.csv"


def cents(text):
    for line in text.splitlines():
        m = re.match(r"\s*total\s+([\d,]+)\.(\d\d)", line, re.I)
        if m:
            return int(m.group(1).replace(",", "")) * 100 + int(m.group(2))
    return None


subprocess.run(["git", "checkout", "-q", "main"], cwd=REPO, check=True)
sys.path.insert(0, REPO)
from invoicer.cli import main  # noqa: E402 - main's code, loaded once for every order

with open(ORDERS, newline="") as f:
    ids = sorted({r["order_id"] for r in csv.DictReader(f)}, key=int)
hits = []
for oid in ids:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            main([ORDERS, "--order", oid])
    except SystemExit:
        continue
    if cents(out.getvalue()) == int(sys.argv[1]):
        hits.append(oid)
if len(hits) != 1:
    sys.exit(f"{len(hits)} orders have that total on main")
subprocess.run(["git", "checkout", "-q", "v1.0"], cwd=REPO, check=True)
old = subprocess.run([sys.executable, "-B", "-m", "invoicer", ORDERS, "--order", hits[0]], cwd=REPO,
                     capture_output=True, text=True, check=True).stdout
subprocess.run(["git", "checkout", "-q", "main"], cwd=REPO, check=True)
if cents(old) == int(sys.argv[1]):
    sys.exit("that order's total did not change")
print(hits[0])
'''
SPREAD = r'''# usage: spread.py SUBJECT -> "order_id before after" (cents) for every order the commit with that subject
# changed, against its parent
import contextlib
import csv
import importlib
import io
import re
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, "/app/repo")
REPO, ORDERS = "/app/repo", "/app/data/orders.csv"


def cents(text):
    for line in text.splitlines():
        m = re.match(r"\s*total\s+([\d,]+)\.(\d\d)", line, re.I)
        if m:
            return int(m.group(1).replace(",", "")) * 100 + int(m.group(2))
    return None


def totals(rev, ids):
    """Every order's total at ``rev``, its code loaded afresh once."""
    subprocess.run(["git", "checkout", "-q", rev], cwd=REPO, check=True)
    for name in [m for m in sys.modules if m.split(".")[0] == "invoicer"]:
        del sys.modules[name]
    importlib.invalidate_caches()
    from invoicer.cli import main
    out = {}
    for oid in ids:
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                main([ORDERS, "--order", oid])
        except (Exception, SystemExit):
            continue
        out[oid] = cents(buf.getvalue())
    return out


log = subprocess.run(["git", "log", "--format=%H %s", "main"], cwd=REPO, capture_output=True, text=True,
                     check=True).stdout
(rev,) = [line.split(" ", 1)[0] for line in log.splitlines() if line.split(" ", 1)[1] == sys.argv[1]]
with open(ORDERS, newline="") as f:
    ids = sorted({r["order_id"] for r in csv.DictReader(f)}, key=int)
before, after = totals(rev + "^", ids), totals(rev, ids)
subprocess.run(["git", "checkout", "-q", "main"], cwd=REPO, check=True)
for oid in ids:
    if before.get(oid) != after.get(oid):
        print(oid, before.get(oid), after.get(oid))
'''
CHECK = r'''#!/bin/bash
# exit 0: total as in v1.0 (good); 1: different (bad); 125: this commit cannot be tested.
out=$(python3 -B -m invoicer /app/data/orders.csv --order "$1" 2>/dev/null) || exit 125
total=$(printf '%s\n' "$out" | python3 /solution/total.py) || exit 125
[ "$total" = "$2" ]
'''
TOTAL = r'''import re
import sys

for line in sys.stdin:
    m = re.match(r"\s*total\s+([\d,]+)\.(\d\d)", line, re.I)
    if m:
        print(int(m.group(1).replace(",", "")) * 100 + int(m.group(2)))
        sys.exit(0)
sys.exit(1)
'''

CATEGORIES = ["food", "books", "general", "Food", "Books", "General", "FOOD", "books ", " food"]
COUPON_CODES = ["", "", "", "SPRING10", "spring10", "LOYAL15", "Loyal15", "WELCOME5", "welcome5"]
SKUS = ["APL", "BRD", "CHS", "MLK", "NTB", "PEN", "LMP", "MUG", "TEA", "JAM", "MAP", "INK"]


def variants(block: str) -> list[tuple[str, str]]:
    return B[block]


def gen_orders(rng, n: int) -> list[tuple[str, list[tuple[str, int, str, str]], str]]:
    orders = []
    ids = sorted(rng.sample(range(1000, 9999), n))
    for oid in ids:
        coupon = rng.choice(COUPON_CODES)
        lines = []
        for _ in range(rng.randint(1, 5)):
            qty = rng.choice([1, 1, 2, 3, 5, 9, 10, 10, 11, 12, 20])
            price = f"{rng.randrange(0, 40)}.{rng.randrange(100):02d}"
            if price.startswith("0.") and price < "0.10":
                price = "0.99"
            lines.append((f"{rng.choice(SKUS)}-{rng.randrange(100, 999)}", qty, price, rng.choice(CATEGORIES)))
        orders.append((str(oid), lines, coupon))
    return orders


def model(state: dict[str, int], blocks: dict[str, list[str]]):
    """The pricing function at one commit (None if that commit cannot run)."""
    src = "\n\n\n".join(blocks[b][state[b]] for b in MODEL_BLOCKS)
    try:
        for b in ("cli_head", "cli_load", "cli_main", "pricing_head", "init"):
            compile(blocks[b][state[b]], b, "exec")
        return run_python(src)["order_summary"]
    except Exception:  # noqa: BLE001 - a commit that does not even load
        return None


def total_at(fn, order) -> int | None:
    if fn is None:
        return None
    try:
        return fn(order[1], order[2])["total"]
    except Exception:  # noqa: BLE001 - a commit that crashes on this order
        return None


def break_text(rng, text: str) -> str:
    """A broken copy of a block: a syntax error or a misspelt name."""
    lines = text.split("\n")
    cands = [i for i, line in enumerate(lines) if line.rstrip().endswith(":") and line.startswith("    ")]
    if cands and rng.random() < 0.5:
        i = rng.choice(cands)
        lines[i] = lines[i].rstrip()[:-1]
        return "\n".join(lines)
    for a, b in (("BULK_THRESHOLD", "BULK_TRESHOLD"), ("Decimal(", "Decmial("), ("line_net(", "line_nett("),
                 ("scale(", "scael("), ("TAX_RATES.get", "TAX_RATE.get"), ("COUPONS", "COUPON"),
                 ("format_cents(", "fmt_cents("), ("strip()", "strip(")):
        body = text.split("\n", 1)
        if len(body) == 2 and a in body[1]:
            return body[0] + "\n" + body[1].replace(a, b, 1)
    lines[-1] = lines[-1] + " +"
    return "\n".join(lines)


@dataclass(frozen=True)
class Knobs:
    commits: int  # commits after v1.0
    regressions: int  # commits that change some orders' totals (one culprit per complaint)
    broken: int  # commits that do not run (fixed by the next one)
    format_change: bool  # an intended output-format change
    rule_change: bool  # an intended pricing-rule change
    orders: int  # orders in the export


@register
class BisectRegression(Family):
    name = "bisect_regression"
    domain = "debugging"
    skill_types = ("Regression Hunting", "Fault Localization")
    primitive_skills = ("bisecting a regression", "git history inspection", "reproducing a failure",
                        "skipping untestable commits", "writing a regression check",
                        "comparing expected and actual output")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("culprit", "blast_radius", "shipped_in")
    languages = ("Bash", "Python")
    levels = {0: Knobs(commits=5, regressions=1, broken=0, format_change=False, rule_change=False, orders=8),
              1: Knobs(commits=10, regressions=1, broken=0, format_change=False, rule_change=False, orders=30),
              2: Knobs(commits=28, regressions=1, broken=1, format_change=False, rule_change=True, orders=60),
              3: Knobs(commits=55, regressions=1, broken=2, format_change=True, rule_change=True, orders=120),
              4: Knobs(commits=90, regressions=2, broken=3, format_change=True, rule_change=True, orders=200)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        orders = gen_orders(rng, k.orders)
        texts = {b: [text for _, text in B[b]] for b in B}
        classes = {b: [c for c, _ in B[b]] for b in B}
        # Growing documents: README paragraphs, CHANGELOG entries, tests.
        texts["readme"] = ["\n\n".join(README_PARAS[:i]) for i in range(2, len(README_PARAS) + 1)]
        classes["readme"] = ["g"] * len(texts["readme"])
        texts["tests"] = ["\n\n\n".join([TESTS_HEAD] + TESTS[:i]) for i in range(1, len(TESTS) + 1)]
        classes["tests"] = ["g"] * len(texts["tests"])
        n_releases = 1 + k.commits // 8
        # Release i's changelog is written when release i is cut; the version string goes with it.
        texts["changelog"] = ["# Changelog\n\n## 1.0.0\n\n- First release."] + [""] * n_releases
        texts["init"] = [fill(B["init"][0][1], N=str(i)) for i in range(n_releases + 1)]
        classes["changelog"] = ["g"] * len(texts["changelog"])
        classes["init"] = ["g"] * len(texts["init"])

        culprits = sorted(rng.sample(REGRESSIONS, k.regressions))
        pre = rng.randint(2, 4)
        n = k.commits
        # Plan the special commits after the tag (index 1..n): regressions, breaks, format/rule changes.
        slots = list(range(3, n))
        rng.shuffle(slots)
        plan: dict[int, tuple] = {}
        reg_pos = sorted(rng.sample(range(max(3, n // 4), n - 1), len(culprits)))
        for pos, block in zip(reg_pos, culprits):
            plan[pos] = ("regress", block)
        for pos in slots:
            if sum(1 for v in plan.values() if v[0] == "break") >= k.broken:
                break
            if any(abs(pos - p) <= 2 for p in plan) or pos + 1 >= n:
                continue
            plan[pos] = ("break", rng.choice([b for b in CODE_BLOCKS if b not in ("init", "rules")]))
            plan[pos + 1] = ("fix", None)
        free = [p for p in range(1, n) if p not in plan]
        if k.format_change:
            before = [p for p in free if p < reg_pos[0]]
            plan[rng.choice(before or free)] = ("format", None)
            free = [p for p in range(1, n) if p not in plan]
        if k.rule_change:
            plan[rng.choice(free)] = ("rule", None)

        state = {b: 0 for b in texts}
        state["changelog"], state["init"] = 0, 0
        state["readme"], state["tests"] = rng.randrange(2), rng.randrange(2)
        commits: list[dict] = []
        states: list[dict] = []
        pr = rng.randint(40, 120)
        release = 0
        hours = 0
        pending_log: list[str] = []
        broken_restore: tuple[str, int] | None = None

        def refactor_choice(block: str) -> int | None:
            cur = classes[block][state[block]]
            opts = [i for i, c in enumerate(classes[block][: len(B.get(block, []))]) if c == cur and i != state[block]]
            return rng.choice(opts) if opts else None

        def subject_for(block: str) -> str:
            if block.endswith("_head") or block == "init":
                return rng.choice(IMPORT_SUBJECTS)(NICE[block])
            return rng.choice(REFACTOR_SUBJECTS)(NICE.get(block, block))

        def commit(subject: str, changes: dict[str, int], tag: str | None = None) -> None:
            nonlocal pr, hours
            pr += rng.randint(1, 9)
            hours += rng.randint(2, 40)
            state.update(changes)
            day, hour = divmod(hours, 24)
            date = f"2024-{3 + day // 28:02d}-{1 + day % 28:02d}T{8 + hour % 10:02d}:{rng.randrange(60):02d}:00+0100"
            c = {"subject": subject if subject.startswith("Release") else f"{subject} (#{pr})",
                 "set": dict(changes), "date": date, "author": list(rng.choice(AUTHORS))}
            if tag:
                c["tag"] = tag
            commits.append(c)
            states.append(dict(state))

        # Initial history up to the tag.
        commit("Initial import of invoicer", dict(state))
        for i in range(1, pre):
            block = rng.choice(["to_cents", "scale", "format_cents", "line_net", "cli_load", "category_of"])
            j = refactor_choice(block)
            if j is None:
                commit("Add README usage section", {"readme": min(state["readme"] + 1, len(texts["readme"]) - 1)})
            else:
                commit(subject_for(block), {block: j})
        commits[-1]["subject"] = "Release 1.0"
        commits[-1]["tag"] = "v1.0"
        tag_index = len(commits) - 1

        for pos in range(1, n + 1):
            action = plan.get(pos, ("neutral", None))
            if action[0] == "regress":
                block = action[1]
                opts = [i for i, c in enumerate(classes[block]) if c == "b"]
                commit(subject_for(block), {block: rng.choice(opts)})
            elif action[0] == "break":
                block = action[1]
                texts[block].append(break_text(rng, texts[block][state[block]]))
                classes[block].append("x")
                broken_restore = (block, state[block])
                commit(subject_for(block), {block: len(texts[block]) - 1})
            elif action[0] == "fix":
                block, idx = broken_restore
                where = FILE_OF[block].split("/")[-1]
                commit(rng.choice([f"Fix typo in {where}", f"Fix {where} after the previous change",
                                   f"Repair {where} after bad merge"]), {block: idx})
            elif action[0] == "format":
                commit("Nicer, aligned invoice output", {"cli_main": 2})
                pending_log.append("- Invoice output is now aligned, with thousands separators and currency.")
            elif action[0] == "rule":
                commit("Add WELCOME5 coupon for new customers", {"rules": 1})
                pending_log.append("- New coupon WELCOME5 (5% off).")
            else:
                r = rng.random()
                if r < 0.12 and release + 1 < len(texts["changelog"]) and pos < n:
                    release += 1
                    entry = f"## 1.0.{release}\n\n" + ("\n".join(pending_log) or "- Internal cleanups.")
                    texts["changelog"][release] = "# Changelog\n\n" + entry + "\n\n" + \
                        texts["changelog"][release - 1].split("\n\n", 1)[1]
                    pending_log = []
                    commit(f"Release 1.0.{release}", {"changelog": release, "init": release})
                elif r < 0.22 and state["readme"] + 1 < len(texts["readme"]):
                    commit(rng.choice(["Docs: expand README", "Document pricing rules", "README: add a section"]),
                           {"readme": state["readme"] + 1})
                elif r < 0.32 and state["tests"] + 1 < len(texts["tests"]):
                    fn = TESTS[state["tests"] + 1].split("(")[0][4:]
                    commit(f"Add {fn}", {"tests": state["tests"] + 1})
                else:
                    blocks = [b for b in ("to_cents", "scale", "format_cents", "pricing_head", "line_net",
                                          "category_of", "coupon_rate", "order_summary", "cli_load", "cli_main")
                              if refactor_choice(b) is not None]
                    block = rng.choice(blocks)
                    commit(subject_for(block), {block: refactor_choice(block)})

        subjects = [c["subject"] for c in commits]
        if len(set(subjects)) != len(subjects):
            raise FamilyError("bisect_regression: duplicate commit subjects")

        # Truth, from the history itself: for each order, the first commit after v1.0 whose total
        # differs from v1.0's, with every testable commit before it equal and every one after it different.
        fns = [model(s, texts) for s in states]
        post = range(tag_index, len(commits))

        def culprit_of(order) -> int | None:
            vals = [total_at(fns[i], order) for i in post]
            good = vals[0]
            if good is None or vals[-1] is None or vals[-1] == good:
                return None
            first = next(i for i, v in enumerate(vals) if v is not None and v != good)
            if vals[first - 1] is None or any(v == good for v in vals[first:] if v is not None):
                return None
            return tag_index + first

        found: dict[str, list[tuple]] = {}
        reg_index = {tag_index + p: b for p, (kind, b) in plan.items() if kind == "regress"}
        for order in orders:
            c = culprit_of(order)
            if c is not None and c in reg_index:
                found.setdefault(reg_index[c], []).append((order, c))
        if len(found) < len(culprits):
            missing = sorted(set(culprits) - set(found))
            raise FamilyError(f"bisect_regression: no order isolates regression(s) {missing}")
        # A complaint names no order: only the total main prints for it, in cents (delivered). That total
        # must single out one order, and must not be readable anywhere else (orders, code, history).
        main_totals = [total_at(fns[-1], o) for o in orders]
        seen_totals = [x for x in main_totals if x is not None]
        groups = sorted(found.values(), key=lambda ocs: ocs[0][1])
        # Only the first complaint can go through the channel (one delivered value per task: not every
        # fixture kind carries two); the second one, at level 4, names its order.
        others = [g[0] for g in groups[1:]]
        visible = [json.dumps({"blocks": texts, "commits": commits}), "\n".join(o[0] for o, _ in others)] + \
            [f"{oid},{sku},{qty},{price},{cat},{coupon}" for oid, lines, coupon in orders
             for sku, qty, price, cat in lines]
        by_total = {str(main_totals[orders.index(oc[0])]): oc for oc in groups[0]
                    if main_totals[orders.index(oc[0])] is not None}

        def fits(total: str, digits: int) -> bool:
            return len(total) >= digits and seen_totals.count(int(total)) == 1

        fit = [x for x in sorted(by_total) if fits(x, 5)] or [x for x in sorted(by_total) if fits(x, 4)]
        if not fit:
            raise FamilyError("bisect_regression: no complaint order has a total of its own")
        if t.variant != "culprit":
            return self._after_culprit(t, orders, texts, commits, fns, tag_index, by_total, fit, visible)
        t.say("Our invoicing tool lives in the git repository `/app/repo`; from the repository root it runs as "
              "`python3 -m invoicer /app/data/orders.csv --order <id>` and prints the order's subtotal, discount, "
              "tax and total. Release `v1.0` (a tag on `main`) priced every order correctly.")
        if t.level == 0:  # atomic: only reproduce the complaint on main, no bisecting
            t.say("A customer complains about an order whose total on the current `main` is given below in cents "
                  "(a total of `12.30` is `1230`); no other order has that total on `main`. Report the order id "
                  "alone on one line.")
        elif not others:
            t.say("A customer complains that on the current `main` the total of their order is not what v1.0 "
                  "computed, although nothing about the order changed. They could not tell us the order id, only "
                  "the total that the current `main` prints for their order, given below in cents (a total of "
                  "`12.30` is `1230`); no other order has that total on `main`. Find the order, and the commit "
                  "on `main` that introduced the change: the first commit after v1.0 at which that order's total "
                  "differs from v1.0's.")
        else:
            t.say(f"Two customers complain that on the current `main` the totals of their orders are not what v1.0 "
                  f"computed, although nothing about the orders changed: order {others[0][0][0]}, and a second "
                  "order whose id the customer could not tell us, only the total that the current `main` prints "
                  "for it, given below in cents (a total of `12.30` is `1230`; no other order has that total on "
                  "`main`). They may well be two separate problems. For each of the two orders, find the commit "
                  "on `main` that introduced the change: the first commit after v1.0 at which that order's total "
                  "differs from v1.0's.")
        if t.level:
            t.say("Report one line per order: the order id, a space, and the subject line of that commit exactly as "
                  "`git log --format=%s` prints it" + (", lines sorted by order id." if others else "."))
        delivered_total = unseen(t, lambda: rng.choice(fit), *visible)
        picks = [by_total[delivered_total]] + others
        truth = "".join(f"{o[0]} {commits[c]['subject']}\n" for o, c in sorted(picks, key=lambda oc: int(oc[0][0])))
        if t.level == 0:
            truth = f"{picks[0][0][0]}\n"

        add_fixtures(t, orders, texts, commits)

        var = t.deliver(delivered_total, "the total main prints for the customer's order, in cents"
                        if len(picks) == 1 else "the total main prints for the other order, in cents")
        t.add_solution_file("bisect.sh", ORACLE)
        t.add_solution_file("check.sh", CHECK)
        t.add_solution_file("total.py", TOTAL)
        t.add_solution_file("find.py", FIND)
        orders_arg = '"$first"' + "".join(f" {o[0]}" for o, _ in others)
        if t.level == 0:
            t.solve(f'mkdir -p /app/out\npython3 /solution/find.py "{var}" > /app/out/culprits.txt')
            t.expect_output("/app/out/culprits.txt", truth, "the order id")
            return
        t.solve("chmod +x /solution/*.sh 2>/dev/null || true\nmkdir -p /app/out\n"
                f'first=$(python3 /solution/find.py "{var}")\n'
                f"for o in {orders_arg}; do bash /solution/bisect.sh \"$o\"; done | sort -n > /app/out/culprits.txt")
        t.expect_output("/app/out/culprits.txt", truth, "the report")

    def _after_culprit(self, t: TaskBuilder, orders: list, texts: dict, commits: list[dict], fns: list,
                       tag_index: int, by_total: dict, fit: list[str], visible: list[str]) -> None:
        """What follows from the complaint's culprit. blast_radius: every order that commit changed (each run at
        the commit and at its parent); shipped_in: the first release commit that carries it. One complaint."""
        rng = t.rng
        delivered_total = unseen(t, lambda: rng.choice(fit), *visible)
        order, c = by_total[delivered_total]
        oid, out = order[0], f"/app/out/{t.variant}.txt"
        t.say(INTRO)
        complaint = ("A customer complains about an order whose total on the current `main` is given below in cents "
                     "(a total of `12.30` is `1230`); no other order has that total on `main`, and on v1.0 it was "
                     "different.")
        find = f'first=$(python3 /solution/find.py "{t.deliver(delivered_total, DELIVERED)}")\n'
        if t.level:
            complaint += (" Find the order, and the commit on `main` that introduced the change: the first commit "
                          "after v1.0 at which that order's total differs from v1.0's.")
            find += 'subject=$(bash /solution/bisect.sh "$first" | cut -d" " -f2-)\n'
        releases = [i for i, cm in enumerate(commits) if cm["subject"].startswith("Release 1.0")]
        if t.variant == "blast_radius" and t.level == 0:
            ask = ("Write the order id and the total v1.0 computed for it, in cents, separated by a space")
            truth = f"{oid} {total_at(fns[tag_index], order)}\n"
            cmd = ('cd /app/repo && git checkout -q v1.0\n'
                   'echo "$first $(python3 -B -m invoicer /app/data/orders.csv --order "$first" | '
                   'python3 /solution/total.py)"')
        elif t.variant == "blast_radius":
            ask = ("That commit may have moved other orders' totals too: run every order at that commit and at its "
                   "parent. Write one line per order whose total differs between the two: the order id, its total "
                   "at the parent and its total at that commit, both in cents, separated by spaces, sorted by "
                   "order id")
            moved = [(o[0], total_at(fns[c - 1], o), total_at(fns[c], o)) for o in orders]
            moved = [m for m in moved if m[1] != m[2]]
            if any(None in m for m in moved):
                raise FamilyError("bisect_regression: an order does not run at the culprit or its parent")
            truth = "".join(f"{o} {x} {y}\n" for o, x, y in sorted(moved, key=lambda m: int(m[0])))
            cmd = 'python3 /solution/spread.py "$subject"'
        elif t.level == 0:
            ask = ("Write the order id, a space, and the subject of the latest release commit on `main` (the most "
                   "recent commit whose subject starts with `Release`) exactly as `git log --format=%s` prints it")
            truth = f"{oid} {commits[releases[-1]]['subject']}\n"
            cmd = 'echo "$first $(git -C /app/repo log -1 --format=%s --grep=\'^Release\' main)"'
        else:
            ask = ("Which release shipped it? Write one line: the order id, a space, and the subject of the first "
                   "commit at or after that commit on `main` whose subject starts with `Release 1.0.`, exactly as "
                   "`git log --format=%s` prints it, or `unreleased` if no such commit follows it")
            shipped = [i for i in releases if i > c]
            truth = f"{oid} {commits[shipped[0]]['subject'] if shipped else 'unreleased'}\n"
            # awk reads on to the end: an early exit would kill git log (SIGPIPE) under pipefail
            cmd = ('rel=$(git -C /app/repo log --reverse --format=%s main | awk -v s="$subject" '
                   '\'$0 == s {f = 1} f && r == "" && /^Release 1[.]0[.]/ {r = $0} END {print r}\')\necho "$first ${rel:-unreleased}"')
        t.say(f"{complaint} {ask}, to `{out}`.")
        add_fixtures(t, orders, texts, commits)
        for name, src in (("bisect.sh", ORACLE), ("check.sh", CHECK), ("total.py", TOTAL), ("find.py", FIND),
                          ("spread.py", SPREAD)):
            t.add_solution_file(name, src)
        t.solve(f"chmod +x /solution/*.sh 2>/dev/null || true\nmkdir -p /app/out\n{find}({cmd}) > {out}")
        t.expect_output(out, truth, "the report")


INTRO = ("Our invoicing tool lives in the git repository `/app/repo`; from the repository root it runs as "
         "`python3 -m invoicer /app/data/orders.csv --order <id>` and prints the order's subtotal, discount, tax and "
         "total. Release `v1.0` (a tag on `main`) priced every order correctly.")
DELIVERED = "the total main prints for the customer's order, in cents"


def add_fixtures(t: TaskBuilder, orders: list, texts: dict, commits: list[dict]) -> None:
    """The fixtures: the orders export and the repository, built at environment build time."""
    rows = ["order_id,sku,qty,unit_price,category,coupon"]
    for oid, lines, coupon in orders:
        rows += [f"{oid},{sku},{qty},{price},{cat},{coupon}" for sku, qty, price, cat in lines]
    t.add_file("/app/data/orders.csv", "\n".join(rows) + "\n")
    spec = {"blocks": texts, "layout": LAYOUT, "commits": commits}
    t.add_file("/tmp/tmax-dbg/history.json", json.dumps(spec, sort_keys=True) + "\n")
    t.add_file("/tmp/tmax-dbg/mkrepo.py", BUILDER)
    t.add_setup("python3 /tmp/tmax-dbg/mkrepo.py /tmp/tmax-dbg/history.json /app/repo && rm -rf /tmp/tmax-dbg")

