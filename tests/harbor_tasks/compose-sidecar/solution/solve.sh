#!/bin/bash
python3 - <<'PY'
import urllib.request as u
n = int(u.urlopen("http://kv:7000/value").read()) + 1
u.urlopen(u.Request("http://kv:7000/value", data=str(n).encode(), method="POST"))
open("/app/answer.txt", "w").write(f"{n}\n")
PY
