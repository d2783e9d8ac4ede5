"""Headcount and payroll rolled up an org chart: a recursive walk below one manager, per-subtree totals,
terminated employees who stay in the hierarchy but count for nothing, salary history (the row in
force on the as-of date, future raises ignored) and reporting-line changes that take effect on a
date (the hierarchy itself must be rebuilt as of that date).
Variants: subtree_rollup (per person of one manager's organisation, its headcount and payroll),
reporting_chain (walking up: one employee's managers up to the top, with their salaries) and
depth_totals (per reporting depth below one manager, how many people and what they earn)."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families import sql as dbsql
from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python

REFERENCE = r'''
import sqlite3
import sys


def rollup(conn, root, asof, with_pay=True):
    mgr, active = {}, {}
    for eid, m, status in conn.execute("SELECT id, manager_id, status FROM employees"):
        mgr[eid] = m
        active[eid] = status == "active"
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    if "reporting_changes" in tables:
        rows = conn.execute("SELECT employee_id, new_manager_id, effective_on FROM reporting_changes").fetchall()
        for eid, new, eff in sorted(rows, key=lambda r: (r[2], r[0])):
            if eff <= asof:
                mgr[eid] = new
    pay, since = {}, {}
    for eid, amount, eff in conn.execute("SELECT employee_id, amount, effective_from FROM salaries"):
        if eff <= asof and (eid not in since or eff > since[eid]):
            pay[eid], since[eid] = amount, eff
    kids = {}
    for eid in sorted(mgr):
        if mgr[eid] is not None:
            kids.setdefault(mgr[eid], []).append(eid)
    out = []

    def walk(eid, depth):
        count, total = (1, pay.get(eid, 0)) if active[eid] else (0, 0)
        for k in kids.get(eid, []):
            c, s = walk(k, depth + 1)
            count, total = count + c, total + s
        if active[eid]:
            out.append((depth, eid, count, total))
        return count, total

    walk(root, 0)
    out.sort()
    return "".join(f"{e},{d},{c},{s}\n" if with_pay else f"{e},{d},{c}\n" for d, e, c, s in out)


if __name__ == "__main__":
    conn = sqlite3.connect(sys.argv[1])
    sys.stdout.write(rollup(conn, int(sys.argv[2]), sys.argv[3], sys.argv[4] == "pay"))
'''

QUERY = """WITH RECURSIVE
mgr AS (
  SELECT e.id, @MANAGER@ AS manager_id, e.status FROM employees e
),
pay AS (
  SELECT s.employee_id, s.amount FROM salaries s
  WHERE s.effective_from = (SELECT MAX(s2.effective_from) FROM salaries s2
                            WHERE s2.employee_id = s.employee_id AND s2.effective_from <= '@ASOF@')
),
sub(id, depth) AS (
  SELECT @@ROOT@@, 0 UNION ALL SELECT m.id, sub.depth + 1 FROM mgr m JOIN sub ON m.manager_id = sub.id
),
anc(top, id) AS (
  SELECT id, id FROM sub UNION ALL SELECT anc.top, m.id FROM anc JOIN mgr m ON m.manager_id = anc.id
)
SELECT s.id, s.depth, COUNT(*), COALESCE(SUM(p.amount), 0)
FROM sub s JOIN mgr ms ON ms.id = s.id AND ms.status = 'active'
JOIN anc a ON a.top = s.id JOIN mgr me ON me.id = a.id AND me.status = 'active'
LEFT JOIN pay p ON p.employee_id = a.id
GROUP BY s.id, s.depth ORDER BY s.depth, s.id;
"""
# The other variants' reports: the same hierarchy and salaries as rollup() (whose text stays as it was),
# walked upwards from one employee or summed per depth.
EXTRA = r'''


def hierarchy(conn, asof):
    """Managers as of asof, who is active, and the salary in force on asof, as rollup() derives them."""
    mgr, active = {}, {}
    for eid, m, status in conn.execute("SELECT id, manager_id, status FROM employees"):
        mgr[eid], active[eid] = m, status == "active"
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    if "reporting_changes" in tables:
        rows = conn.execute("SELECT employee_id, new_manager_id, effective_on FROM reporting_changes").fetchall()
        for eid, new, eff in sorted(rows, key=lambda r: (r[2], r[0])):
            if eff <= asof:
                mgr[eid] = new
    pay, since = {}, {}
    for eid, amount, eff in conn.execute("SELECT employee_id, amount, effective_from FROM salaries"):
        if eff <= asof and (eid not in since or eff > since[eid]):
            pay[eid], since[eid] = amount, eff
    return mgr, active, pay


def chain(conn, start, asof, with_pay=True):
    """start and its managers up to the top, as `id,steps[,salary]`; terminated ones keep their step."""
    mgr, active, pay = hierarchy(conn, asof)
    out, eid, steps = [], start, 0
    while eid in mgr:
        if active[eid]:
            out.append(f"{eid},{steps},{pay.get(eid, 0)}" if with_pay else f"{eid},{steps}")
        eid, steps = mgr[eid], steps + 1
    return "".join(o + "\n" for o in out)


def depth_totals(conn, root, asof, with_pay=True):
    """Per depth below root that has active people: `depth,headcount[,total_salary]` of those people."""
    mgr, active, pay = hierarchy(conn, asof)
    kids = {}
    for eid in sorted(mgr):
        kids.setdefault(mgr[eid], []).append(eid)
    level, depth, rows = ([root] if root in mgr else []), 0, []
    while level:
        people = [e for e in level if active[e]]
        if people:
            total = sum(pay.get(e, 0) for e in people)
            rows.append(f"{depth},{len(people)},{total}" if with_pay else f"{depth},{len(people)}")
        level, depth = [k for e in level for k in kids.get(e, [])], depth + 1
    return "".join(r + "\n" for r in rows)


if __name__ == "__main__":
    conn = sqlite3.connect(sys.argv[1])
    report = {"chain": chain, "depths": depth_totals}[sys.argv[5]]
    sys.stdout.write(report(conn, int(sys.argv[2]), sys.argv[3], sys.argv[4] == "pay"))
'''
VARIANT_PROGRAM = REFERENCE[:REFERENCE.index("\n\nif __name__")] + EXTRA
# The variants' queries share QUERY's as-of hierarchy and salaries.
HEAD = QUERY[:QUERY.index("sub(id, depth)")]
CHAIN_QUERY = HEAD + """up(id, steps) AS (
  SELECT @@ROOT@@, 0 UNION ALL SELECT m.manager_id, up.steps + 1 FROM up JOIN mgr m ON m.id = up.id
  WHERE m.manager_id IS NOT NULL
)
SELECT u.id, u.steps, COALESCE(p.amount, 0)
FROM up u JOIN mgr m ON m.id = u.id AND m.status = 'active' LEFT JOIN pay p ON p.employee_id = u.id
ORDER BY u.steps;
"""
DEPTH_QUERY = HEAD + """sub(id, depth) AS (
  SELECT @@ROOT@@, 0 UNION ALL SELECT m.id, sub.depth + 1 FROM mgr m JOIN sub ON m.manager_id = sub.id
)
SELECT s.depth, COUNT(*), COALESCE(SUM(p.amount), 0)
FROM sub s JOIN mgr m ON m.id = s.id AND m.status = 'active' LEFT JOIN pay p ON p.employee_id = s.id
GROUP BY s.depth ORDER BY s.depth;
"""
CHANGED_MANAGER = ("COALESCE((SELECT c.new_manager_id FROM reporting_changes c WHERE c.employee_id = e.id AND "
                   "c.effective_on <= '@ASOF@' ORDER BY c.effective_on DESC LIMIT 1), e.manager_id)")
FIRST = ["Ada", "Ben", "Cleo", "Dmitri", "Esme", "Farid", "Gwen", "Hugo", "Ines", "Jonas", "Kemi", "Luca", "Mara",
         "Nils", "Olga", "Pavel", "Rhea", "Sven", "Tess", "Uma", "Viktor", "Wren", "Yara", "Zane"]
LAST = ["Abbott", "Baker", "Castro", "Dahl", "Eze", "Fischer", "Gold", "Horvat", "Iqbal", "Jansen", "Kowalski",
        "Lind", "Mensah", "Novak", "Okafor", "Park", "Quist", "Rossi", "Sato", "Tran", "Vidal", "Weber"]
TITLES = ["Engineer", "Analyst", "Lead", "Manager", "Director", "Specialist", "Coordinator"]


def subtree(kids: dict, root: int) -> list[int]:
    out, stack = [], [root]
    while stack:
        e = stack.pop()
        out.append(e)
        stack.extend(kids.get(e, []))
    return out


def children(mgr: dict) -> dict:
    kids: dict = {}
    for e in sorted(mgr):
        if mgr[e] is not None:
            kids.setdefault(mgr[e], []).append(e)
    return kids


def acyclic(mgr: dict) -> bool:
    for e in mgr:
        seen, cur = 0, e
        while cur is not None:
            cur = mgr[cur]
            seen += 1
            if seen > len(mgr):
                return False
    return True


def unique_profiles(kids: dict, ids: list[int], cands: list[int]) -> list[int]:
    """The candidates whose per-depth headcounts no other employee's organisation shares (all, if none)."""
    def profile(e):
        out, level = [], [e]
        while level:
            out.append(len(level))
            level = [k for x in level for k in kids.get(x, [])]
        return tuple(out)

    seen: dict = {}
    for e in ids:
        seen.setdefault(profile(e), []).append(e)
    return [e for e in cands if len(seen[profile(e)]) == 1] or cands


ORGANISATION = ("The organisation of a manager is the manager and everyone below them, at any depth, through "
                "`employees.manager_id`.")
CHAIN = ("An employee's manager is `employees.manager_id`; the chain goes up one manager at a time until a person "
         "whose `manager_id` is NULL.")


def rules_for(lv: int, asof: str, *first: str) -> list[str]:
    """The rules every variant shares at level ``lv`` (after ``first``): terminations, salaries, reporting changes."""
    rules = list(first)
    if lv >= 2:
        rules.append("Terminated employees (`status` = `terminated`) stay in the hierarchy (their reports have "
                     "not been moved yet) but are not counted anywhere and get no line of their own.")
    if lv >= 3:
        rules.append(f"`salaries` keeps the salary history: an employee's salary is the row with the latest "
                     f"`effective_from` on or before {asof} (later rows are planned raises: ignore them).")
    elif lv == 2:
        rules.append("Each employee has exactly one row in `salaries` (annual `amount`).")
    if lv >= 4:
        rules.append(f"Reporting lines change over time: `reporting_changes` moves `employee_id` under "
                     f"`new_manager_id` from `effective_on` onwards. Use the hierarchy as it stands on {asof}: "
                     "for each employee the latest change on or before that date wins, later changes are "
                     "ignored, and `manager_id` applies to employees without such a change.")
    return rules


@dataclass(frozen=True)
class Knobs:
    employees: int  # people in the whole company


@register
class SqlOrgRollup(Family):
    name = "sql_org_rollup"
    domain = "data_querying"
    skill_types = ("Hierarchical Queries", "Relational Queries")
    primitive_skills = ("recursive CTEs", "tree traversal", "subtree aggregation", "group-by aggregation",
                        "multi-table joins", "date range filtering")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("subtree_rollup", "reporting_chain", "depth_totals")
    levels = {0: Knobs(employees=12), 1: Knobs(employees=25), 2: Knobs(employees=60), 3: Knobs(employees=120),
              4: Knobs(employees=220)}

    def output_case(self, t: TaskBuilder) -> None:
        rng, lv = t.rng, t.level
        for _ in range(self.variants.index(t.variant)):  # a seed's org chart differs between the variants
            rng.random()
        n = t.knobs.employees
        ids = rng.sample(range(1000, 9999), n)
        mgr: dict = {ids[0]: None}
        for i in range(1, n):
            # Prefer recent hires as managers, so the tree grows deep as well as wide.
            lo = max(0, i - max(3, i // 2))
            mgr[ids[i]] = ids[rng.randrange(lo, i)] if rng.random() < 0.7 else ids[rng.randrange(0, i)]
        kids = children(mgr)
        sizes = {e: len(subtree(kids, e)) for e in ids}
        cands = [e for e in ids[1:] if n // 5 <= sizes[e] <= n // 2] or [max(ids[1:], key=lambda e: (sizes[e], e))]
        if t.variant == "depth_totals":  # another manager's per-depth counts must differ (checked before pay)
            cands = unique_profiles(kids, ids, cands)
        root = rng.choice(cands)
        asof = f"2025-{rng.randrange(3, 11):02d}-{rng.randrange(1, 29):02d}"
        status = {e: "active" for e in ids}
        if lv >= 2:
            for e in subtree(kids, root)[1:]:
                if rng.random() < 0.15:
                    status[e] = "terminated"
        changes = []
        if lv >= 4:
            base = dict(mgr)
            inside = subtree(kids, root)
            for _ in range(n // 5):
                e = rng.choice(inside[1:] if rng.random() < 0.5 else ids[1:])
                new = rng.choice(inside if rng.random() < 0.6 else ids)
                when = f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
                if e == root or when == asof or new == mgr[e] or new == e or \
                        any(c[0] == e and c[2] == when for c in changes):
                    continue
                trial_all = dict(mgr)
                trial_all[e] = new
                if not acyclic(trial_all):
                    continue
                mgr = trial_all
                changes.append((e, new, when))
            # The as-of hierarchy must be acyclic too (it applies only some of the changes).
            asof_mgr = dict(base)
            for e, new, when in sorted(changes, key=lambda c: (c[2], c[0])):
                if when <= asof:
                    asof_mgr[e] = new
            if not acyclic(asof_mgr):
                changes = []
            mgr = base
        salaries = []
        for e in ids:
            first = f"20{rng.randrange(15, 24)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
            amount = rng.randrange(40, 160) * 1000
            salaries.append((e, amount, first))
            if lv >= 3:
                for _ in range(rng.choice([0, 1, 1, 2])):
                    when = f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
                    if when == asof or any(s[0] == e and s[2] == when for s in salaries):
                        continue
                    amount += rng.randrange(1, 15) * 1000
                    salaries.append((e, amount, when))
        rng.shuffle(salaries)
        people = []
        for i, e in enumerate(ids):
            people.append((e, f"{rng.choice(FIRST)} {rng.choice(LAST)}", mgr[e], "CEO" if i == 0 else
                           rng.choice(TITLES), status[e],
                           f"20{rng.randrange(10, 25)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"))
        rng.shuffle(people)
        schema = ("CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT NOT NULL, manager_id INTEGER REFERENCES "
                  "employees(id), title TEXT NOT NULL, status TEXT NOT NULL, hired_on TEXT NOT NULL);\n"
                  "CREATE TABLE salaries (employee_id INTEGER NOT NULL REFERENCES employees(id), amount INTEGER NOT "
                  "NULL, effective_from TEXT NOT NULL, PRIMARY KEY (employee_id, effective_from));\n")
        if lv >= 4:
            schema += ("CREATE TABLE reporting_changes (id INTEGER PRIMARY KEY, employee_id INTEGER NOT NULL, "
                       "new_manager_id INTEGER NOT NULL, effective_on TEXT NOT NULL);\n")
        tables = {"employees": people, "salaries": salaries}
        if lv >= 4:
            tables["reporting_changes"] = [(i + 1, *c) for i, c in enumerate(changes)]
        sql = dbsql.script(schema, tables)
        conn = dbsql.in_memory(sql)
        with_pay = lv >= 2
        if t.variant != "subtree_rollup":
            return self.variant_case(t, conn, sql, kids, status, root, asof)
        truth = run_python(REFERENCE)["rollup"](conn, root, asof, with_pay)
        conn.close()
        dbsql.ship(t, sql, "/app/db/hr.db")
        if lv == 0:
            self.members_case(t, root, truth)
            return

        rules = rules_for(lv, asof, ORGANISATION)
        cols = "`employee_id,depth,headcount" + (",total_salary`" if with_pay else "`")
        t.say("Our HR database is `/app/db/hr.db` (SQLite; tables `employees`, `salaries`"
              + (", `reporting_changes`" if lv >= 4 else "") + "). I need a roll-up of one manager's organisation "
              f"as of {asof}. The manager ID given below is the manager's `employees.id`.\n\n"
              + "\n".join(f"- {r}" for r in rules)
              + "\n\nReport format: CSV without a header, one line per "
              + ("active " if lv >= 2 else "") + f"person in the organisation as {cols}, where depth is the number "
              "of reporting steps below the manager (the manager is 0), headcount counts the "
              + ("active " if lv >= 2 else "") + "people in that person's own organisation including themselves"
              + (", and total_salary is the sum of those people's salaries" if with_pay else "")
              + ". Sort by depth, then employee_id.")
        v = t.deliver(str(root), "the manager ID")
        manager = fill(CHANGED_MANAGER, ASOF=asof) if lv >= 4 else "e.manager_id"
        t.add_solution_file("rollup.sql", fill(QUERY, MANAGER=manager, ASOF=asof))
        t.add_solution_file("reference.py", REFERENCE)
        cut = "" if with_pay else " | cut -d, -f1-3"
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'sed "s/@@ROOT@@/{v}/" /solution/rollup.sql | sqlite3 -batch -noheader -separator , /app/db/hr.db'
                f"{cut} > /app/out/org_rollup.csv\n"
                f'python3 /solution/reference.py /app/db/hr.db "{v}" {asof} {"pay" if with_pay else "nopay"} | '
                "cmp - /app/out/org_rollup.csv")
        t.expect_output("/app/out/org_rollup.csv", truth, "the roll-up")

    def variant_case(self, t: TaskBuilder, conn, sql: str, kids: dict, status: dict, root: int, asof: str) -> None:
        """reporting_chain: one employee's managers up to the top; depth_totals: people and pay per depth."""
        lv, with_pay = t.level, t.level >= 2
        if t.variant == "reporting_chain":
            # A deepest active member of the drawn organisation: the chain passes its terminated people.
            below = {root: 0}
            for e in subtree(kids, root):
                for k in kids.get(e, []):
                    below[k] = below[e] + 1
            active = [e for e in below if status[e] == "active"]
            who = t.rng.choice(sorted(e for e in active if below[e] == max(below[a] for a in active)))
            what, report, query = "the employee ID", "chain", CHAIN_QUERY
            cols = "`employee_id,steps" + (",salary`" if with_pay else "`")
            ask = ("I need one employee's reporting chain: the employee, their manager, that manager's manager and "
                   "so on up to the top of the company (the person without a manager). The employee ID given "
                   "below is the employee's `employees.id`.")
            fmt = (f"one line per {'active ' if lv >= 2 else ''}person in the chain as {cols}, where steps is the "
                   "number of reporting steps above the employee (the employee is 0, their manager 1"
                   + (", a terminated manager still being a step)" if lv >= 2 else ")")
                   + (" and salary is that person's salary" if with_pay else "") + ". Sort by steps.")
            rules = [CHAIN] if lv else []
        else:
            who, what, report, query = root, "the manager ID", "depths", DEPTH_QUERY
            cols = "`depth,headcount" + (",total_salary`" if with_pay else "`")
            ask = ("I need the size of one manager's organisation level by level. The manager ID given below is "
                   "the manager's `employees.id`.")
            fmt = (f"one line per depth at which the organisation has {'active ' if lv >= 2 else ''}people, as "
                   f"{cols}, where depth is the number of reporting steps below the manager (the manager is 0), "
                   f"headcount counts the {'active ' if lv >= 2 else ''}people at that depth"
                   + (" and total_salary is the sum of their salaries" if with_pay else "") + ". Sort by depth.")
            rules = [ORGANISATION] if lv else []
        truth = run_python(VARIANT_PROGRAM)[{"chain": "chain", "depths": "depth_totals"}[report]](
            conn, who, asof, with_pay)
        conn.close()
        dbsql.ship(t, sql, "/app/db/hr.db")
        if lv < 2:  # no salaries or statuses yet: the hierarchy alone
            tables = "table `employees`" + (", each row's `manager_id` is the `id` of their manager" if lv == 0 else "")
        else:
            tables = "tables `employees`, `salaries`" + (", `reporting_changes`" if lv >= 4 else "")
            ask += f" Report it as of {asof}."
        rules = "".join(f"- {r}\n" for r in rules_for(lv, asof, *rules))
        t.say(f"Our HR database is `/app/db/hr.db` (SQLite; {tables}). {ask}\n\n" + (rules + "\n" if rules else "")
              + f"Report format: CSV without a header, {fmt}")
        v = t.deliver(str(who), what)
        manager = fill(CHANGED_MANAGER, ASOF=asof) if lv >= 4 else "e.manager_id"
        t.add_solution_file(f"{report}.sql", fill(query, MANAGER=manager, ASOF=asof))
        t.add_solution_file("reference.py", VARIANT_PROGRAM)
        cut = "" if with_pay else " | cut -d, -f1-2"
        out = f"/app/out/{'reporting_chain' if report == 'chain' else 'depth_totals'}.csv"
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'sed "s/@@ROOT@@/{v}/" /solution/{report}.sql | sqlite3 -batch -noheader -separator , '
                f"/app/db/hr.db{cut} > {out}\n"
                f'python3 /solution/reference.py /app/db/hr.db "{v}" {asof} {"pay" if with_pay else "nopay"} '
                f"{report} | cmp - {out}")
        t.expect_output(out, truth, "the " + ("chain" if report == "chain" else "totals"))

    def members_case(self, t: TaskBuilder, root: int, rollup: str) -> None:
        """Level 0: only who is in the organisation and how deep (one recursive query, no totals)."""
        truth = "".join(",".join(line.split(",")[:2]) + "\n" for line in rollup.splitlines())
        t.say("Our HR database is `/app/db/hr.db` (SQLite; table `employees`, each row's `manager_id` is the "
              "`id` of their manager). I need everyone in one manager's organisation: the manager and everyone "
              "below them, at any depth. The manager ID given below is the manager's `employees.id`.\n\n"
              "Report format: CSV without a header, one line per person as `employee_id,depth`, where depth is "
              "the number of reporting steps below the manager (the manager is 0). Sort by depth, then "
              "employee_id.")
        v = t.deliver(str(root), "the manager ID")
        t.add_solution_file("rollup.sql", fill(QUERY, MANAGER="e.manager_id", ASOF="9999-12-31"))
        t.add_solution_file("reference.py", REFERENCE)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'sed "s/@@ROOT@@/{v}/" /solution/rollup.sql | sqlite3 -batch -noheader -separator , /app/db/hr.db'
                " | cut -d, -f1-2 > /app/out/org_rollup.csv\n"
                f'python3 /solution/reference.py /app/db/hr.db "{v}" 9999-12-31 nopay | cut -d, -f1-2 | '
                "cmp - /app/out/org_rollup.csv")
        t.expect_output("/app/out/org_rollup.csv", truth, "the list")
