"""Checks /app/results/ab_summary.json for ab-test-analysis against expected.json.

Integers (users, converters) and the boolean must match exactly; floats must match to a
relative tolerance of 1e-6 (absolute 1e-9 near zero). Typical mistakes (keeping users
exposed to both variants, counting purchases before exposure or by unexposed users) change
the user and converter counts, so they fail.
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def close(a, b):
    return (isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a)
            and math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9))


def main():
    want = json.load(open(os.path.join(HERE, "expected.json")))
    try:
        got = json.load(open("/app/results/ab_summary.json"))
    except (OSError, ValueError) as e:
        print("FAIL cannot read summary:", e)
        return 1
    bad = []
    for v in ("A", "B"):
        g = got.get(v) if isinstance(got, dict) else None
        if not isinstance(g, dict):
            bad.append("%s missing" % v)
            continue
        for k in ("users", "converters"):
            if g.get(k) != want[v][k] or isinstance(g.get(k), bool):
                bad.append("%s.%s = %r, want %r" % (v, k, g.get(k), want[v][k]))
        for k in ("conversion_rate", "revenue_per_user"):
            if not close(g.get(k), want[v][k]):
                bad.append("%s.%s = %r, want %r" % (v, k, g.get(k), want[v][k]))
    if isinstance(got, dict):
        for k in ("relative_lift", "z_score", "p_value"):
            if not close(got.get(k), want[k]):
                bad.append("%s = %r, want %r" % (k, got.get(k), want[k]))
        if got.get("significant") is not want["significant"]:
            bad.append("significant = %r, want %r" % (got.get("significant"), want["significant"]))
    for b in bad:
        print("FAIL", b)
    if not bad:
        print("ok   all summary values match")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
