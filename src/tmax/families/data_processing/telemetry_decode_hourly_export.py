"""Sensor telemetry from encrypted relay streams to a downstream export. Three stages, each feeding the
next: decode and decrypt the JSON Lines payloads of the relay (hex, base64, URL-safe base64, gzip;
a keystream from the fleet key, the delivered value, and the message id), keeping messages whose
CRC-32 matches and the first good copy of a resent id; pivot the readings (one sensor reading per
message) into an hourly table per device; then turn that table into the export. Variants differ in
the pivot's cell and the export: the latest reading as fixed-width records for a mainframe loader
(layout drawn per task, implied decimals and trailing signs), the reading counts as a per-device
coverage report, or the lowest readings screened for frost risk."""

from __future__ import annotations

import base64
import datetime
import json
import zlib
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.data_processing.jsonl_payload_decode import ENC_RULES, encode
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import base64
import datetime
import glob
import gzip
import hashlib
import json
import sys
import zlib

KEY = "@@KEY@@"
VARIANT = "@VARIANT@"
STAGES = @STAGES@  # 2: decode and pivot; 3: and the export
CHECK_CRC = @CHECK_CRC@
HEADER = @HEADER@
LAYOUT = @LAYOUT@  # (field, start, width, type), fixed_width only
FROST = @FROST@  # (temp, hum) thresholds in tenths of a degree and percent, frost_alerts only
SENSORS = ["temp", "hum", "pres"]


def crypt(data, key, mid):
    ks = hashlib.sha256(f"{key}:{mid}".encode()).digest()
    return bytes(b ^ ks[i % len(ks)] for i, b in enumerate(data))


def decode(enc, payload, key, mid):
    if enc == "hex":
        return crypt(bytes.fromhex(payload), key, mid)
    if enc == "b64":
        return crypt(base64.b64decode(payload), key, mid)
    if enc == "b64url":
        return crypt(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)), key, mid)
    return gzip.decompress(crypt(base64.b64decode(payload), key, mid))


def readings(texts, key):
    """Stage 1: (device, epoch seconds, sensor, value as written) of every good message, first good copy per id."""
    seen, out = set(), []
    for text in texts:
        for line in text.split("\n"):
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict) or msg["id"] in seen:
                continue
            try:
                raw = decode(msg["enc"], msg["payload"], key, msg["id"])
                if CHECK_CRC and f"{zlib.crc32(raw):08x}" != msg["crc32"]:
                    continue
                pairs = dict(p.partition("=")[::2] for p in raw.decode("utf-8").split(";"))
                ts = pairs["ts"]
                when = int(ts) if ts.isdigit() else int(datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")
                                                         .replace(tzinfo=datetime.timezone.utc).timestamp())
            except (ValueError, KeyError, OSError, EOFError, zlib.error):
                continue  # another key's garbage
            if set(pairs) != {"ts", "sensor", "value"}:
                continue
            seen.add(msg["id"])
            out.append((msg["device"], when, pairs["sensor"], pairs["value"]))
    return out


def pivot(rows):
    """Stage 2: (device, hour) -> sensor -> the cell (latest reading, reading count or lowest reading)."""
    cells = {}
    for device, when, sensor, value in sorted(rows):
        hour = datetime.datetime.fromtimestamp(when, datetime.timezone.utc).strftime("%Y-%m-%dT%H")
        cell = cells.setdefault((device, hour), {})
        if VARIANT == "fixed_width":
            cell[sensor] = value  # sorted by time: the last one written is the latest
        elif VARIANT == "coverage":
            cell[sensor] = cell.get(sensor, 0) + 1
        elif sensor not in cell or float(value) < float(cell[sensor]):
            cell[sensor] = value
    return cells


def tenths(value):
    whole, _, frac = value.lstrip("-").partition(".")
    n = int(whole) * 10 + int((frac + "0")[0])
    return -n if value.startswith("-") else n


def field(name, width, typ, hour, cell):
    if name == "device":
        return cell["device"].ljust(width)
    if name == "hour":
        return hour.replace("-", "").replace("T", "")
    if name == "filler":
        return " " * width
    if name not in cell:
        return " " * width  # no reading: blank
    n = tenths(cell[name]) if "V" in typ else int(cell[name])
    if typ.startswith("S"):
        return str(abs(n)).zfill(width - 1) + ("-" if n < 0 else "+")
    return str(n).zfill(width)


def export(cells):
    keys = sorted(cells)
    if STAGES == 2:
        blank = 0 if VARIANT == "coverage" else ""
        return "".join(f"{d},{h}," + ",".join(str(cells[d, h].get(s, blank)) for s in SENSORS) + "\n" for d, h in keys)
    out = []
    if VARIANT == "fixed_width":
        for d, h in keys:
            cell = dict(cells[d, h], device=d)
            out.append("".join(field(n, w, typ, h, cell) for n, _, w, typ in LAYOUT))
    elif VARIANT == "coverage":
        per = {}
        for d, h in keys:
            got = per.setdefault(d, [0, 0])
            got[0] += 1
            got[1] += all(s in cells[d, h] for s in SENSORS)
        if HEADER:
            out.append("device,hours,complete,coverage")
        for d in sorted(per):
            hours, full = per[d]
            pm = (2000 * full + hours) // (2 * hours)  # per mille, halves up
            out.append(f"{d},{hours},{full},{pm // 10}.{pm % 10}")
    else:
        if HEADER:
            out.append("device,hour,temp,hum")
        for d, h in keys:
            c = cells[d, h]
            if "temp" in c and "hum" in c and tenths(c["temp"]) <= FROST[0] and int(c["hum"]) <= FROST[1]:
                out.append(f"{d},{h}:00Z,{c['temp']},{c['hum']}")
    return "".join(line + "\n" for line in out)


def run(texts, key=None):
    return export(pivot(readings(texts, key or KEY)))


if __name__ == "__main__":
    texts = []
    for path in sorted(glob.glob(sys.argv[1] + "/*.jsonl")):
        with open(path) as f:
            texts.append(f.read())
    sys.stdout.write(run(texts, sys.argv[2]))
'''

ENCODINGS = {1: ["hex", "b64"], 2: ["hex", "b64"], 3: ["hex", "b64", "b64url"], 4: ["hex", "b64", "b64url", "b64gz"]}
SENSOR_TEXT = "`temp` (degrees Celsius, one decimal), `hum` (relative humidity in whole percent) and `pres` (hPa, one decimal)"
CELL = {"fixed_width": "the latest reading of the hour (by timestamp)",
        "coverage": "the number of readings in the hour (0 when none)",
        "frost_alerts": "the lowest reading of the hour (numerically)"}
ATOMIC = {"fixed_width": ("hex", "lowercase hexadecimal"), "coverage": ("b64", "standard base64"),
          "frost_alerts": ("b64url", "URL-safe base64 (`-` and `_` for `+` and `/`) with the `=` padding removed")}


def value(rng, sensor: str, cold: bool) -> str:
    if sensor == "temp":
        return f"{rng.randrange(-80 if cold else 0, 120 if cold else 300) / 10:.1f}"
    if sensor == "hum":
        return str(rng.randrange(20, 60) if cold else rng.randrange(30, 100))
    return f"{rng.randrange(9600, 10400) / 10:.1f}"


def make_layout(rng):
    fields = [("device", 10, "X"), ("hour", 10, "YYYYMMDDHH"), ("temp", rng.choice([5, 6]), "S9V9"),
              ("hum", 3, "9"), ("pres", rng.choice([5, 6]), "9V9"), ("filler", rng.randrange(2, 7), "X")]
    rng.shuffle(fields)
    out, pos = [], 1
    for name, width, typ in fields:
        out.append((name, pos, width, typ))
        pos += width
    return tuple(out)


@dataclass(frozen=True)
class Knobs:
    files: int  # relay files forming one stream
    messages: int  # messages in the stream (one reading each)
    devices: int
    hours: int  # hours the stream spans
    traps: int  # 1: damaged payloads (CRC); 2: noise lines, shuffled keys, epoch timestamps; 3: resends, gzip


@register
class TelemetryDecodeHourlyExport(Family):
    name = "telemetry_decode_hourly_export"
    domain = "data_processing"
    skill_types = ("Encoding", "Data Transformation")
    primitive_skills = ("base64 and hex decoding", "checksum computation", "JSON Lines parsing", "pivoting tables",
                        "fixed-width parsing", "implied decimals and trailing signs", "date and time normalisation",
                        "deduplication", "gzip decompression")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("fixed_width", "coverage", "frost_alerts")
    stages = ("jsonl_payload_decode", "sensor_long_to_wide", "fixed_width_records")
    levels = {0: Knobs(files=1, messages=6, devices=6, hours=1, traps=0),
              1: Knobs(files=1, messages=50, devices=2, hours=6, traps=0),
              2: Knobs(files=1, messages=200, devices=3, hours=16, traps=1),
              3: Knobs(files=3, messages=500, devices=4, hours=40, traps=2),
              4: Knobs(files=4, messages=900, devices=5, hours=60, traps=3)}

    def stream(self, t: TaskBuilder, devices: list[str], key: str, start: int) -> list[str]:
        """The relay's lines: one reading per message, some damaged, noise and resends by level."""
        k, rng = t.knobs, t.rng
        # A few cold devices keep the frost screen from coming out empty.
        cold = {d: i == 0 or rng.random() < 0.3 for i, d in enumerate(devices)}
        used, lines = set(), []
        for mid in sorted(rng.sample(range(1000, 999999), k.messages)):
            device, sensor = rng.choice(devices), rng.choice(["temp", "hum", "pres"])
            for _ in range(100):  # timestamps unique per device and sensor: "latest" has no ties
                when = start + rng.randrange(k.hours * 3600)
                if (device, sensor, when) not in used:
                    used.add((device, sensor, when))
                    break
            ts = str(when) if k.traps >= 2 and rng.random() < 0.3 else \
                datetime.datetime.fromtimestamp(when, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            pairs = [("ts", ts), ("sensor", sensor), ("value", value(rng, sensor, cold[device]))]
            if k.traps >= 2:
                rng.shuffle(pairs)
            text = ";".join(f"{a}={b}" for a, b in pairs)

            def message(text=text, damage=False):
                crc = f"{zlib.crc32(text.encode()):08x}"
                if damage:  # damaged in transit after the checksum was taken
                    i = rng.randrange(len(text))
                    text = text[:i] + ("7" if text[i] != "7" else "3") + text[i + 1:]
                enc = rng.choice(ENCODINGS[t.level])
                fields = [("id", mid), ("device", device), ("enc", enc), ("payload", encode(enc, text.encode(), key, mid))]
                if k.traps:
                    fields.append(("crc32", crc))
                if k.traps >= 2:
                    rng.shuffle(fields)
                return json.dumps(dict(fields))

            if k.traps >= 3 and rng.random() < 0.12:  # resent: a damaged copy first, or a later, different copy
                later = ";".join(f"{a}={value(rng, sensor, cold[device]) if a == 'value' else b}" for a, b in pairs)
                lines += [message(damage=True), message()] if rng.random() < 0.5 else [message(), message(later)]
            else:
                lines.append(message(damage=k.traps >= 1 and rng.random() < 0.12))
            if k.traps >= 2 and rng.random() < 0.03:
                lines.append(rng.choice(["# relay restarted", '{"id": ' + str(mid + 1) + ', "device": "', "}"]))
        return lines

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv, variant = t.knobs, t.rng, t.level, t.variant
        if lv == 0:
            return self.atomic(t)
        stages = 2 if lv == 1 else 3
        layout = make_layout(rng) if variant == "fixed_width" else ()
        for _ in range(50):
            devices = distinct(lambda: t.code(1), k.devices)
            # The fleet key is the delivered value: every payload is encrypted under it, so another key
            # decodes nothing and the whole chain comes out empty. Drawn unseen in the instruction's text;
            # the streams (ciphertext) are only searched for it as text.
            key = unseen(t, lambda: t.code(2), *devices)
            start = int(datetime.datetime(2026, rng.randrange(1, 13), rng.randrange(1, 29), rng.randrange(24),
                                          tzinfo=datetime.timezone.utc).timestamp())
            lines = self.stream(t, devices, key, start)
            per = -(-len(lines) // k.files)
            texts = ["\n".join(lines[i * per:(i + 1) * per]) + "\n" for i in range(k.files)]
            frost = ()
            if variant == "frost_alerts":  # thresholds from the data: about a fifth of the cold hours alert
                probe = run_python(fill(REFERENCE, VARIANT=variant, STAGES=2, CHECK_CRC=k.traps >= 1, HEADER=False,
                                        LAYOUT=(), FROST=()))
                cells = [c for c in probe["pivot"](probe["readings"](texts, key)).values() if "temp" in c and "hum" in c]
                if len(cells) < 5:
                    continue
                temps = sorted(probe["tenths"](c["temp"]) for c in cells)
                hums = sorted(int(c["hum"]) for c in cells)
                frost = (temps[len(temps) // 3], hums[len(hums) // 2])
            src = fill(REFERENCE, VARIANT=variant, STAGES=stages, CHECK_CRC=k.traps >= 1, LAYOUT=layout, FROST=frost,
                       HEADER=stages == 3 and not t.partial_credit)  # a constant header would earn partial credit
            truth = run_python(src)["run"](texts, key)
            if truth.count("\n") >= 2 and not any(key in x.upper() for x in texts):
                break
        else:
            raise FamilyError(f"family {self.name}: no stream with two lines of output")
        for i, text in enumerate(texts):
            t.add_file(f"/app/data/relay/relay-{i + 1:02d}.jsonl", text)
        where = ("`/app/data/relay/relay-01.jsonl`" if k.files == 1 else
                 "`/app/data/relay/relay-*.jsonl` (in name order they form one stream)")
        t.say(f"Our sensor relay writes telemetry as JSON Lines: {where}. Each line is a JSON object with the "
              "message `id` (an integer), the `device`, the payload encoding `enc` and the encoded `payload`.")
        v = t.deliver(key, "the fleet key")
        step1 = ["1. Decode every payload. Encodings: " + "; ".join(ENC_RULES[e] for e in ENCODINGS[lv]) + ". Under "
                 "the encoding the payload is encrypted: XOR-ed with a keystream, the 32-byte SHA-256 digest of the "
                 "text `<fleet key>:<id>` (the id in decimal) repeated as needed (byte i with digest byte i mod 32). "
                 "A decrypted payload is UTF-8 text of `key=value` pairs separated by `;`, one reading: `ts` (UTC, "
                 "`YYYY-MM-DDTHH:MM:SSZ`" + (" or seconds since the epoch" if k.traps >= 2 else "") + "), `sensor` "
                 f"and `value`; the sensors are {SENSOR_TEXT}."]
        if k.traps:
            step1.append("`crc32` is the CRC-32 (zlib's, 8 lowercase hex digits) of the decrypted payload bytes"
                         + (" after decompression" if lv >= 4 else "") + "; some payloads were damaged in transit: "
                         "skip every message whose checksum does not match.")
        if k.traps >= 2:
            step1.append("Pairs and object keys come in any order, and lines that are not JSON objects are noise.")
        if k.traps >= 3:
            step1.append("Some ids occur more than once (resends): each id counts once, with the first of its "
                         "messages in stream order that passes the checksum.")
        step2 = (f"2. Pivot the readings into an hourly table: one row per device and UTC hour with at least one "
                 f"reading, one column per sensor, each cell {CELL[variant]}.")
        steps = [" ".join(step1), step2]
        out = "/app/out/export.dat" if variant == "fixed_width" and stages == 3 else "/app/out/result.csv"
        if stages == 2:
            blank = "`0`" if variant == "coverage" else "empty"
            fmt = (f"The result is the table as CSV with no header line: `device,hour,temp,hum,pres`, the hour as "
                   f"`YYYY-MM-DDTHH`, readings exactly as written in the payload, a cell with no reading {blank}; "
                   "sorted by device, then hour.")
        elif variant == "fixed_width":
            doc = ["# Hourly export record layout (positions are 1-based, widths in characters)",
                   "# field        start  width  type"] + [f"{n:<14} {s:>5}  {w:>5}  {typ}" for n, s, w, typ in layout]
            t.add_file("/app/docs/export_layout.txt", "\n".join(doc) + "\n")
            steps.append("3. Write the table as fixed-width records for the mainframe loader, laid out as in "
                         "`/app/docs/export_layout.txt`, one record per row and line, sorted by device, then hour. "
                         "Type `X` is text padded with spaces on the right (the filler is all spaces), `YYYYMMDDHH` "
                         "the row's hour, `9` an unsigned integer zero-padded on the left, `9V9` an unsigned number "
                         "with one implied decimal (`1013.2` in a width of 5 is `10132`), `S9V9` the same with a sign "
                         "character `+` or `-` in the last position (`-4.5` in a width of 5 is `0045-`). A sensor "
                         "with no reading in that hour leaves its field all spaces.")
            fmt = "Every record is exactly as long as the layout says; keep the trailing spaces."
        elif variant == "coverage":
            steps.append("3. Report each device's coverage: the number of hours in its table, how many of them are "
                         "complete (all three sensors read at least once) and the complete share as a percentage "
                         "with one decimal, rounded half up.")
            head = "the header line `device,hours,complete,coverage`" if not t.partial_credit else \
                "no header line (the columns are `device,hours,complete,coverage`)"
            fmt = f"The report is CSV with {head}, one line per device, sorted by device."
        else:
            steps.append(f"3. Screen the table for frost risk: a row alerts when it has both a `temp` and a `hum` "
                         f"cell with temp at most {frost[0] / 10:.1f} and hum at most {frost[1]}.")
            head = "the header line `device,hour,temp,hum`" if not t.partial_credit else \
                "no header line (the columns are `device,hour,temp,hum`)"
            fmt = (f"The alert list is CSV with {head}, one line per alerting row: the hour as `YYYY-MM-DDTHH:00Z` and "
                   "the two cells exactly as written in the payload; sorted by device, then hour.")
        t.say("The job has " + ("two" if stages == 2 else "three") + " steps, each feeding the next:\n\n"
              + "\n".join(steps) + "\n\n" + fmt)
        t.add_solution_file("export.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/export.py /app/data/relay "{v}" > {out}')
        t.expect_output(out, truth, "the export" if variant == "fixed_width" else "the result")

    def atomic(self, t: TaskBuilder) -> None:
        """Stage 1 alone: one device's one message, found by a hash of its name, decoded (no encryption)."""
        k, rng, variant = t.knobs, t.rng, t.variant
        enc, words = ATOMIC[variant]
        when = datetime.datetime(2026, rng.randrange(1, 13), rng.randrange(1, 29), rng.randrange(24), rng.randrange(60))
        texts = [f"ts={when:%Y-%m-%dT%H:%M}:{rng.randrange(60):02d}Z;sensor={s};value={value(rng, s, False)}"
                 for s in (rng.choice(["temp", "hum", "pres"]) for _ in range(k.messages))]
        bodies = [r.encode().hex() if enc == "hex" else base64.b64encode(r.encode()).decode() if enc == "b64" else
                  base64.urlsafe_b64encode(r.encode()).decode().rstrip("=") for r in texts]
        name = unseen(t, lambda: t.code(2), *texts, *bodies)
        owners = [key_of(n) for n in [name, *distinct(lambda: t.code(2), k.messages - 1, [name])]]
        rng.shuffle(owners)
        ids = rng.sample(range(1000, 999999), k.messages)
        t.add_file("/app/data/relay/relay-01.jsonl", "".join(
            json.dumps({"id": i, "device": d, "enc": enc, "payload": b}) + "\n" for i, d, b in zip(ids, owners, bodies)))
        truth = texts[owners.index(key_of(name))] + "\n"
        t.say("`/app/data/relay/relay-01.jsonl` holds sensor telemetry as JSON Lines: each object has the message "
              "`id`, the `device` (the first 16 hex digits of the SHA-256 of the device's name, `printf %s <name> | "
              f"sha256sum | cut -c1-16`) and the `payload`, encoded as {words}.")
        v = t.deliver(name, "the device name")
        t.say("Each device sent one message. Write the named device's decoded payload (text like "
              "`ts=2026-04-03T10:15:22Z;sensor=temp;value=21.5`) as one line to `/app/out/payload.txt`.")
        dec = {"hex": "import sys; print(bytes.fromhex(sys.stdin.read().strip()).decode())",
               "b64": "import base64, sys; print(base64.b64decode(sys.stdin.read().strip()).decode())",
               "b64url": "import base64, sys; p = sys.stdin.read().strip(); "
                         "print(base64.urlsafe_b64decode(p + '=' * (-len(p) % 4)).decode())"}[enc]
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'jq -r --arg d "{key_cmd(v)}" \'select(.device == $d) | .payload\' /app/data/relay/relay-01.jsonl | '
                f'python3 -c "{dec}" > /app/out/payload.txt')
        t.expect_output("/app/out/payload.txt", truth, "the decoded payload")
