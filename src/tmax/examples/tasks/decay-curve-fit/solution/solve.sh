#!/bin/bash
# Reference solution: Levenberg-Marquardt on (A, k, B) with k = ln2/T_half, pure Python.
set -euo pipefail
python3 - <<'PY'
import csv, json, math

rows = [r for r in csv.reader(l for l in open("/app/data/run42.csv") if not l.startswith("#"))]
hdr, rows = rows[0], rows[1:]
data = [(float(r[0]), float(r[1])) for r in rows if not r[2].strip()]

def rss(p):
    A, k, B = p
    return sum((c - A * math.exp(-k * t) - B) ** 2 for t, c in data)

def solve3(M, v):
    M = [row[:] + [x] for row, x in zip(M, v)]
    for i in range(3):
        piv = max(range(i, 3), key=lambda r: abs(M[r][i]))
        M[i], M[piv] = M[piv], M[i]
        for r in range(3):
            if r != i:
                f = M[r][i] / M[i][i]
                M[r] = [a - f * b for a, b in zip(M[r], M[i])]
    return [M[i][3] / M[i][i] for i in range(3)]

# crude start: background from the tail, amplitude from the first point, k from half-decay time
B0 = min(c for _, c in data)
A0 = data[0][1] - B0
p = [A0, 1.0 / 100, B0]
lam = 1e-3
cur = rss(p)
for _ in range(500):
    A, k, B = p
    JTJ = [[0.0] * 3 for _ in range(3)]
    JTr = [0.0] * 3
    for t, c in data:
        e = math.exp(-k * t)
        r = c - (A * e + B)
        J = [e, -A * t * e, 1.0]
        for i in range(3):
            JTr[i] += J[i] * r
            for j in range(3):
                JTJ[i][j] += J[i] * J[j]
    while True:
        M = [[JTJ[i][j] * (1 + lam if i == j else 1) for j in range(3)] for i in range(3)]
        step = solve3(M, JTr)
        q = [a + b for a, b in zip(p, step)]
        new = rss(q) if q[1] > 0 else float("inf")
        if new < cur:
            p, cur, lam = q, new, max(lam / 10, 1e-12)
            break
        lam *= 10
        if lam > 1e12:
            break
    if max(abs(s) / (abs(x) + 1e-12) for s, x in zip(step, p)) < 1e-12 or lam > 1e12:
        break

A, k, B = p
json.dump({"half_life_s": math.log(2) / k, "amplitude": A, "background": B}, open("/app/fit.json", "w"), indent=2)
print(open("/app/fit.json").read())
PY
