"""Telemetry messages as JSON Lines whose readings travel encoded: hex, base64, URL-safe base64 without
padding, and gzip-then-base64 at the top level. Under the transport encoding each payload is
encrypted with a keystream derived from the fleet key (delivered through the fixture channel) and the
message id. Decode and decrypt each payload, check its CRC-32 and keep the first valid copy of each id;
then flatten one device's key=value readings into a CSV (readings), write that device's messages out
as JSON Lines with every payload key (jsonl), or summarise every device's messages and temperature
range (summary)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import zlib
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import base64
import glob
import gzip
import hashlib
import json
import sys
import zlib

DEVICE = "@DEVICE@"
KEY = "@@KEY@@"
CHECK_CRC = @CHECK_CRC@
HEADER = @HEADER@
VARIANT = @VARIANT@
KEYS = ["temp", "hum", "bat"]


def crypt(data, key, mid):
    """XOR with the keystream of message ``mid``: the SHA-256 digest of "<key>:<id>", repeated."""
    ks = hashlib.sha256(f"{key}:{mid}".encode()).digest()
    return bytes(b ^ ks[i % len(ks)] for i, b in enumerate(data))


def decode(enc, payload, key, mid):
    if enc == "hex":
        return crypt(bytes.fromhex(payload), key, mid)
    if enc == "b64":
        return crypt(base64.b64decode(payload), key, mid)
    if enc == "b64url":
        return crypt(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)), key, mid)
    if enc == "b64gz":
        return gzip.decompress(crypt(base64.b64decode(payload), key, mid))
    raise ValueError(enc)


def kept(texts, key):
    """Per device: message id -> the payload's values, for the first valid copy of each id."""
    rows = {}
    for text in texts:
        for line in text.split("\n"):
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            seen = rows.setdefault(msg["device"], {})
            if msg["id"] in seen:
                continue
            raw = decode(msg["enc"], msg["payload"], key, msg["id"])
            if CHECK_CRC and f"{zlib.crc32(raw):08x}" != msg["crc32"]:
                continue
            values = {}
            for pair in raw.decode("utf-8").split(";"):
                name, _, value = pair.partition("=")
                values[name] = value
            seen[msg["id"]] = values
    return rows


def summary(devices):
    out = ["device,messages,min_temp,max_temp"] if HEADER else []
    for name in sorted(d for d in devices if devices[d]):
        temps = sorted((float(v["temp"]), v["temp"]) for v in devices[name].values() if "temp" in v)
        lo, hi = (temps[0][1], temps[-1][1]) if temps else ("", "")
        out.append(f"{name},{len(devices[name])},{lo},{hi}")
    return "".join(line + "\n" for line in out)


def extract(texts, key=None, device=None):
    key, device = key or KEY, device or DEVICE
    devices = kept(texts, key)
    if VARIANT == "summary":
        return summary(devices)
    rows = devices.get(device, {})
    if VARIANT == "jsonl":
        return "".join(json.dumps({"id": mid, **dict(sorted(rows[mid].items()))}) + "\n" for mid in sorted(rows))
    out = ["id," + ",".join(KEYS)] if HEADER else []
    for mid in sorted(rows):
        out.append(str(mid) + "," + ",".join(rows[mid].get(k, "") for k in KEYS))
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "dir":
        texts = []
        for path in sorted(glob.glob(sys.argv[2] + "/*.jsonl")):
            with open(path) as f:
                texts.append(f.read())
        sys.stdout.write(extract(texts, sys.argv[3] if len(sys.argv) > 3 else None))
    else:
        sys.stdout.write(extract([sys.stdin.read()]))
'''

ENCODINGS = {0: ["hex"], 1: ["hex", "b64"], 2: ["hex", "b64"], 3: ["hex", "b64", "b64url"], 4: ["hex", "b64", "b64url", "b64gz"]}


def crypt(data: bytes, key: str, mid: int) -> bytes:
    ks = hashlib.sha256(f"{key}:{mid}".encode()).digest()
    return bytes(b ^ ks[i % len(ks)] for i, b in enumerate(data))


def encode(enc: str, raw: bytes, key: str, mid: int) -> str:
    if enc == "hex":
        return crypt(raw, key, mid).hex()
    if enc == "b64":
        return base64.b64encode(crypt(raw, key, mid)).decode()
    if enc == "b64url":
        return base64.urlsafe_b64encode(crypt(raw, key, mid)).decode().rstrip("=")
    return base64.b64encode(crypt(gzip.compress(raw, mtime=0), key, mid)).decode()


class Gen:
    def __init__(self, rng, lv, devices, key):
        self.rng, self.lv, self.devices, self.key = rng, lv, devices, key

    def reading(self) -> str:
        rng, lv = self.rng, self.lv
        pairs = [("temp", f"{rng.randrange(-150, 400) / 10:.1f}"), ("hum", str(rng.randrange(5, 100))),
                 ("bat", str(rng.randrange(0, 101)))]
        if lv >= 3:
            if rng.random() < 0.2:
                pairs.pop(rng.randrange(3))
            if rng.random() < 0.4:
                pairs.append(rng.choice([("fw", f"{rng.randrange(1, 4)}.{rng.randrange(10)}.{rng.randrange(10)}"),
                                         ("note", rng.choice(["reboot", "low signal", "ok"])),
                                         ("rssi", str(-rng.randrange(40, 110)))]))
            rng.shuffle(pairs)
        return ";".join(f"{a}={b}" for a, b in pairs)

    def message(self, mid: int, device: str, corrupt: bool = False) -> str:
        rng, lv = self.rng, self.lv
        enc = rng.choice(ENCODINGS[lv])
        text = self.reading()
        raw = text.encode()
        crc = f"{zlib.crc32(raw):08x}"
        if corrupt:  # the payload was damaged in transit after the checksum was taken
            i = rng.randrange(len(text))
            text = text[:i] + ("7" if text[i] != "7" else "3") + text[i + 1:]
            raw = text.encode()
        fields = [("id", mid), ("device", device), ("enc", enc), ("payload", encode(enc, raw, self.key, mid))]
        if lv >= 2:
            fields.append(("crc32", crc))
        if lv >= 3:
            fields.append(("ts", f"2026-04-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:"
                                 f"{rng.randrange(60):02d}:{rng.randrange(60):02d}Z"))
            rng.shuffle(fields)
        return json.dumps(dict(fields))

    def stream(self, ids: list[int]) -> list[str]:
        rng, lv = self.rng, self.lv
        lines = []
        for mid in ids:
            device = self.devices[0] if rng.random() < 0.45 else rng.choice(self.devices)
            bad = lv >= 2 and rng.random() < 0.15
            if lv >= 4 and rng.random() < 0.15:  # a repeat of the same id: a corrupt copy first, or a later resend
                first_bad = rng.random() < 0.5
                lines.append(self.message(mid, device, corrupt=first_bad))
                lines.append(self.message(mid, device))
                continue
            lines.append(self.message(mid, device, corrupt=bad))
            if lv >= 3 and rng.random() < 0.04:
                lines.append(rng.choice(['{"id": ' + str(mid + 1) + ', "device": "', "# relay restarted", "}"]))
        return lines


@dataclass(frozen=True)
class Knobs:
    files: int  # relay files forming one stream
    messages: int  # message ids in the stream


ENC_RULES = {"hex": "`hex`: lowercase hexadecimal", "b64": "`b64`: standard base64 with padding",
             "b64url": "`b64url`: URL-safe base64 (`-` and `_` instead of `+` and `/`) with the `=` padding removed",
             "b64gz": "`b64gz`: standard base64 of encrypted gzip-compressed bytes (decrypt, then decompress)"}


def names(t: TaskBuilder) -> tuple[list[str], str]:
    """(four device names, the fleet key). The key is the delivered value: it occurs nowhere in the data,
    and every payload is encrypted under it, so any other key decrypts nothing. It is drawn unseen in the
    instruction; the streams, ciphertext under hex and base64, are only searched for it as text
    (unseen's decodings of every payload would take minutes)."""
    devices = distinct(lambda: t.code(1), 4)
    return devices, unseen(t, lambda: t.code(2), *devices)


ATOMIC_INTRO = ("`/app/data/messages/relay-01.jsonl` holds telemetry as JSON Lines: each object has the message "
                "`id`, the `device` (the first 16 hex digits of the SHA-256 of the device's name, `printf %s <name> | "
                "sha256sum | cut -c1-16`) and the `payload` (standard base64).")


@register
class JsonlPayloadDecode(Family):
    name = "jsonl_payload_decode"
    domain = "data_processing"
    skill_types = ("Encoding", "Parsing")
    primitive_skills = ("base64 and hex decoding", "checksum computation", "JSON Lines parsing", "gzip decompression",
                        "deduplication", "field extraction", "filtering by field")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = ("readings", "jsonl", "summary")
    levels = {0: Knobs(files=1, messages=8), 1: Knobs(files=1, messages=30), 2: Knobs(files=1, messages=120), 3: Knobs(files=3, messages=300),
              4: Knobs(files=4, messages=600)}

    def rules(self, t: TaskBuilder, device: str) -> tuple[str, str, str]:
        """(the filled reference, the rules as a bullet list, the output format): both cases share them.
        Under partial credit a constant header line would match whatever the key; it is left out there."""
        lv, var = t.level, t.variant
        header = var != "jsonl" and not t.partial_credit
        rules = ["Each line is a JSON object with the message `id` (an integer), the `device` name, the payload "
                 "encoding `enc` and the encoded `payload`. Encodings: "
                 + "; ".join(ENC_RULES[e] for e in ENCODINGS[lv]) + ".",
                 "Payloads are encrypted with the fleet key given above: the bytes under the encoding are the "
                 "payload XOR-ed with a keystream, the 32-byte SHA-256 digest of the text `<fleet key>:<id>` (the "
                 "message id in decimal) repeated as often as needed (byte i is XOR-ed with digest byte i mod 32).",
                 "A decrypted payload is UTF-8 text of `key=value` pairs separated by `;`, e.g. "
                 "`temp=21.5;hum=40;bat=87`" + (" (in any order; other keys may appear"
                                                 + ("" if var == "jsonl" else " and are ignored")
                                                 + "; a key can be missing)" if lv >= 3 else "") + "."]
        if lv >= 2:
            rules.append("`crc32` is the CRC-32 (as used by zlib and gzip, 8 lowercase hex digits) of the decrypted "
                         "payload bytes" + (" after decompression" if lv >= 4 else "") + ". Some payloads were "
                         "damaged in transit: skip every message whose checksum does not match.")
        if lv >= 3:
            rules.append("Object keys come in any order, and the relay sometimes wrote lines that are not JSON "
                         "objects: skip those.")
        if lv >= 4:
            rules.append("Some ids occur more than once (resends): each id counts once, with the first of its "
                         "messages (in file order) that passes the checksum.")
        cols = "device,messages,min_temp,max_temp" if var == "summary" else "id,temp,hum,bat"
        head = f"the header line `{cols}` and " if header else f"no header line: the columns are `{cols}`, with "
        fmt = {"readings": f"CSV with {head}one line per kept message of device `{device}`, sorted by id "
                           "(numerically): the id and the values of `temp`, `hum` and `bat` exactly as written in the "
                           "payload (an empty field for a missing key)",
               "jsonl": f"JSON Lines, one object per kept message of device `{device}`, sorted by id (numerically): "
                        "`id` first as a number, then every key of the payload in byte order with its value as a "
                        "string exactly as written, formatted as Python's `json.dumps` writes it (e.g. "
                        '`{"id": 1042, "bat": "87", "hum": "40", "temp": "21.5"}`)',
               "summary": f"CSV with {head}one line per device with at least one kept message, sorted by device name "
                          "(byte order): the device, its number of kept messages, and the lowest and highest `temp` "
                          "among them (compared as numbers, written exactly as in the payload; empty fields when "
                          "none of its messages has a `temp`)"}[var]
        src = fill(REFERENCE, CHECK_CRC=lv >= 2, DEVICE=device, HEADER=header, VARIANT=repr(var))
        return src, "\n".join(f"- {r}" for r in rules), fmt

    def program_case(self, t: TaskBuilder) -> None:
        rng, lv = t.rng, t.level
        for _ in range(20):
            devices, key = names(t)
            src, bullets, fmt = self.rules(t, devices[0])
            ns = run_python(src)
            gen = Gen(rng, lv, devices, key)
            cases = []
            for _ in range(200):
                if len(cases) == 10:
                    break
                ids = rng.sample(range(1000, 99999), rng.randrange(4, 30))
                text = "\n".join(gen.stream(ids)) + "\n"
                out = ns["extract"]([text], key)
                if out.count("\n") >= 2:  # a case without the device's messages would test nothing
                    cases.append((text, out))
            if len(cases) == 10 and not any(key in c.upper() for case in cases for c in case):
                break
        else:
            raise FamilyError(f"family {self.name}: no ten streams with messages of the device")
        v = t.deliver(key, "the fleet key")
        what = {"readings": f"the readings of device `{devices[0]}`", "jsonl": f"the messages of device "
                f"`{devices[0]}`", "summary": "a summary of every device"}[t.variant]
        t.say("Our field sensors send telemetry through a relay that writes JSON Lines with encoded payloads. "
              f"We need a decoder: it reads one such stream on standard input and prints {what}.\n\n" + bullets
              + f"\n\nOutput: {fmt}.")
        t.expect_program("Hard-code the fleet key given above and the device name.", cases, {"Python": src})
        t.solve(f'sed -i "s/@@KEY@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv = t.knobs, t.rng, t.level
        if lv == 0:
            return self.atomic(t)
        for _ in range(50):
            devices, key = names(t)
            src, bullets, fmt = self.rules(t, devices[0])
            ns = run_python(src)
            lines = Gen(rng, lv, devices, key).stream(rng.sample(range(1000, 999999), k.messages))
            per = -(-len(lines) // k.files)
            texts = ["\n".join(lines[i * per:(i + 1) * per]) + "\n" for i in range(k.files)]
            truth = ns["extract"](texts, key)
            if truth.count("\n") >= 3 and not any(key in text.upper() for text in texts):
                break
        else:
            raise FamilyError(f"family {self.name}: no stream with three messages of the device")
        # Where the relay writes and what it calls its files vary by seed, not only the messages.
        folder = f"/app/{rng.choice(['data', 'telemetry', 'relay'])}/{rng.choice(['messages', 'inbound', 'spool'])}"
        stem = rng.choice(["relay", "batch", "uplink"])
        for i, text in enumerate(texts):
            t.add_file(f"{folder}/{stem}-{i + 1:02d}.jsonl", text)
        v = t.deliver(key, "the fleet key")
        where = (f"`{folder}/{stem}-01.jsonl`" if k.files == 1 else
                 f"`{folder}/{stem}-*.jsonl` (in name order, they form one stream)")
        ask = {"readings": f"Decode the readings of device `{devices[0]}`.",
               "jsonl": f"Decode the messages of device `{devices[0]}` into clean JSON Lines.",
               "summary": "Summarise what every device sent."}[t.variant]
        out = {"readings": "/app/out/readings.csv", "jsonl": "/app/out/messages.jsonl",
               "summary": "/app/out/devices.csv"}[t.variant]
        t.say(rng.choice(["Our field sensors send telemetry through a relay that writes JSON Lines with encoded "
                          f"payloads: {where}.", f"The telemetry relay has spooled our sensors' messages as JSON "
                          f"Lines with encoded payloads: {where}."]) + f" {ask}\n\n" + bullets)
        t.add_solution_file("decode.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/decode.py dir {folder} "{v}" > {out}')
        t.say(f"Format: {fmt}.")
        t.expect_output(out, truth, {"readings": "the CSV", "jsonl": "the messages",
                                     "summary": "the summary"}[t.variant])

    def atomic(self, t: TaskBuilder) -> None:
        """One device's single message, found by a hash of its name and base64-decoded, no encryption: its
        payload (readings) or its id and payload as compact JSON (jsonl); or how many messages one device of
        four sent (summary)."""
        k, rng, var = t.knobs, t.rng, t.variant
        gen = Gen(rng, 0, [], "")
        readings = [gen.reading() for _ in range(k.messages)]
        ids = rng.sample(range(1000, 999999), k.messages)
        bodies = [base64.b64encode(r.encode()).decode() for r in readings]
        name = unseen(t, lambda: t.code(2), *readings, *bodies)
        # Devices are stored by a hash of their name, and each sent one message: only the name picks it.
        owners = [key_of(n) for n in [name, *distinct(lambda: t.code(2), k.messages - 1, [name])]]
        rng.shuffle(owners)
        if var == "summary":
            return self._atomic_count(t, name, owners, ids, bodies)
        text = "".join(json.dumps({"id": i, "device": d, "payload": b}) + "\n" for i, d, b in zip(ids, owners, bodies))
        t.add_file("/app/data/messages/relay-01.jsonl", text)
        mine = owners.index(key_of(name))
        truth = readings[mine] + "\n"
        t.say(ATOMIC_INTRO)
        v = t.deliver(name, "the device name")
        if var == "jsonl":
            t.say("Each device sent one message. Write the named device's message as one compact JSON object (no "
                  'spaces) with its id and its decoded payload: `{"id":1042,"payload":"temp=21.5;hum=40;bat=87"}`, '
                  "to `/app/out/message.json`.")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                    f'jq -c --arg d "{key_cmd(v)}" \'select(.device == $d) | {{id, payload: (.payload | @base64d)}}\' '
                    '/app/data/messages/relay-01.jsonl > /app/out/message.json')
            compact = json.dumps({"id": ids[mine], "payload": readings[mine]}, separators=(",", ":"))
            return t.expect_output("/app/out/message.json", compact + "\n", "the message")
        t.say("Each device sent one message. Write the named device's decoded payload (text like "
              "`temp=21.5;hum=40;bat=87`) as one line to `/app/out/payload.txt`.")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'{{ jq -r --arg d "{key_cmd(v)}" \'select(.device == $d) | .payload\' '
                '/app/data/messages/relay-01.jsonl | base64 -d; echo; } > /app/out/payload.txt')
        t.expect_output("/app/out/payload.txt", truth, "the decoded payload")

    def _atomic_count(self, t: TaskBuilder, name: str, owners: list[str], ids: list[int], bodies: list[str]) -> None:
        """Level 0 of summary: four devices share the messages; how many did the named one send?"""
        rng = t.rng
        four = [key_of(name), *[o for o in owners if o != key_of(name)][:3]]
        for _ in range(100):
            sent = [rng.choice(four) for _ in ids]
            n = sent.count(key_of(name))
            if 2 <= n < len(ids) - 1:  # neither every line nor a single one
                break
        else:
            raise FamilyError(f"family {self.name}: no draw where the device sent a few messages")
        text = "".join(json.dumps({"id": i, "device": d, "payload": b}) + "\n" for i, d, b in zip(ids, sent, bodies))
        t.add_file("/app/data/messages/relay-01.jsonl", text)
        t.say(ATOMIC_INTRO)
        v = t.deliver(name, "the device name")
        t.say("How many messages did the named device send? Write the count to `/app/out/count.txt`.")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'jq -r --arg d "{key_cmd(v)}" \'select(.device == $d) | .id\' /app/data/messages/relay-01.jsonl '
                '| wc -l > /app/out/count.txt')
        t.expect_output("/app/out/count.txt", f"{n}\n", "the count")
