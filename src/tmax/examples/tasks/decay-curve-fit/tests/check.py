"""Checks /app/fit.json for decay-curve-fit.

Reference optimum of the unweighted least-squares problem (62 unflagged rows), computed
independently (golden-section search on T_half with exact linear least squares for A and B):
    T_half = 96.0425 s, A = 1518.786, B = 42.597, RSS = 19482.44
Tolerances: T_half within 0.5 %, A within 1 %, B within +/-1.5 counts. Common mistakes land
far outside: including the saturated rows gives T_half ~107 s, a log-linear fit without
background ~135 s, a tail-estimated background ~91 s.
"""
import json
import math
import sys

REF = {"half_life_s": 96.0425, "amplitude": 1518.786, "background": 42.597}


def main():
    try:
        with open("/app/fit.json") as f:
            got = json.load(f)
    except (OSError, ValueError) as e:
        print("FAIL cannot read /app/fit.json:", e)
        return 1
    if not isinstance(got, dict):
        print("FAIL not a JSON object")
        return 1
    ok = True
    for key, tol_ok in (("half_life_s", lambda g, r: abs(g - r) <= 0.005 * r),
                        ("amplitude", lambda g, r: abs(g - r) <= 0.01 * r),
                        ("background", lambda g, r: abs(g - r) <= 1.5)):
        v = got.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            print("FAIL %s missing or not a number: %r" % (key, v))
            ok = False
        elif not tol_ok(float(v), REF[key]):
            print("FAIL %s = %r, expected about %r" % (key, v, REF[key]))
            ok = False
        else:
            print("ok   %s = %r" % (key, v))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
