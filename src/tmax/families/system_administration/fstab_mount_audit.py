"""Audit a server's `/etc/fstab` before a reboot. Variants: the entries whose source device cannot be
found in a `blkid` listing and that would hold up the boot, the hardening options missing from the
mount points a baseline covers (options resolved the way mount resolves them), and the entries that
should be mounted at boot but are absent from `/proc/mounts`. Traps by level: comments, swap and
pseudo file systems, LABEL= and PARTUUID= sources, then `defaults` and options that override earlier
ones, `nofail` and `noauto`, and finally `user` (which implies nosuid, nodev and noexec), a mount
point repeated later in the file, `\\040`-escaped spaces and trailing slashes."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import re
import sys

VARIANT = @VARIANT@
BASELINE = @BASELINE@  # mount point -> options it must have in effect
PSEUDO = ("tmpfs", "proc", "sysfs", "devpts", "cgroup2")
PAIRS = {"suid": ("nosuid", False), "nosuid": ("nosuid", True), "dev": ("nodev", False),
         "nodev": ("nodev", True), "exec": ("noexec", False), "noexec": ("noexec", True),
         "auto": ("noauto", False), "noauto": ("noauto", True)}


def unescape(path):
    path = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)
    return path.rstrip("/") or "/"


def entries(text):
    """(spec, mount point, type, option list) per fstab line, in file order."""
    out = []
    for raw in text.split("\n"):
        f = raw.split()
        if len(f) >= 4 and not f[0].startswith("#"):
            out.append((f[0], unescape(f[1]), f[2], f[3].split(",")))
    return out


def effective(opts):
    """The flags in effect after the options are applied left to right (the kernel defaults first)."""
    on = {"nosuid": False, "nodev": False, "noexec": False, "noauto": False, "nofail": False}
    for o in opts:
        if o == "defaults":
            on.update(nosuid=False, nodev=False, noexec=False, noauto=False)
        elif o in ("user", "users"):
            on.update(nosuid=True, nodev=True, noexec=True)
        elif o in PAIRS:
            on[PAIRS[o][0]] = PAIRS[o][1]
        elif o == "nofail":
            on["nofail"] = True
    return on


def devices(text):
    """Every KEY=value a blkid line gives its device, as "KEY=value" strings, plus the device path."""
    known = set()
    for line in text.split("\n"):
        if ":" not in line:
            continue
        dev, rest = line.split(":", 1)
        known.add(dev.strip())
        for key, val in re.findall(r'([A-Z_]+)="([^"]*)"', rest):
            known.add(f"{key}={val}")
    return known


def report(run, fstab_text, other_text=""):
    ents = entries(fstab_text)
    rows = []
    if VARIANT == "unresolved":
        known = devices(other_text)
        for spec, mp, fstype, opts in ents:
            if fstype in PSEUDO or "bind" in opts:
                continue
            eff = effective(opts)
            if spec.replace('"', "") not in known and not eff["nofail"] and not eff["noauto"]:
                rows.append(f"{run} {mp} {spec}")
    elif VARIANT == "hardening":
        last = {mp: opts for spec, mp, fstype, opts in ents}  # a later line mounts over an earlier one
        for mp in sorted(last):
            if mp in BASELINE:
                eff = effective(last[mp])
                miss = [o for o in BASELINE[mp] if not eff[o]]
                if miss:
                    rows.append(f"{run} {mp} {','.join(miss)}")
    else:  # unmounted
        mounted = {unescape(ln.split()[1]) for ln in other_text.split("\n") if len(ln.split()) >= 2}
        for spec, mp, fstype, opts in ents:
            if fstype != "swap" and not effective(opts)["noauto"] and mp not in mounted:
                rows.append(f"{run} {spec} {mp}")
    return "".join(r + "\n" for r in rows)


if __name__ == "__main__":
    other = open(sys.argv[3], encoding="utf-8").read() if len(sys.argv) > 3 else ""
    sys.stdout.write(report(sys.argv[1], open(sys.argv[2], encoding="utf-8").read(), other))
'''

BASELINE = {"/tmp": ("nodev", "nosuid", "noexec"), "/var/tmp": ("nodev", "nosuid", "noexec"),
            "/dev/shm": ("nodev", "nosuid", "noexec"), "/var/log": ("nodev", "nosuid", "noexec"),
            "/home": ("nodev", "nosuid"), "/boot": ("nodev", "nosuid"), "/srv/uploads": ("nodev", "nosuid", "noexec")}
DATA = ("/srv/data", "/srv/uploads", "/var/lib/postgresql", "/var/lib/docker", "/opt/app", "/mnt/backup",
        "/mnt/archive", "/srv/media", "/var/cache/build", "/export/home", "/srv/www", "/data/scratch")
OTHER = {"unresolved": "/app/state/blkid.txt", "unmounted": "/app/state/mounts"}

def asks(baseline: str) -> dict[str, str]:
    """What each variant reports; baseline: the baseline as the instruction states it."""
    return {
        "unresolved": "the entries that would hold up the boot because their source is not among the devices "
                      "`/app/state/blkid.txt` lists (the output of `blkid`): a source is `UUID=`, `LABEL=`, "
                      "`PARTUUID=` or `PARTLABEL=` followed by a value blkid shows for that key, or a device path "
                      "blkid lists. Pseudo file systems (types tmpfs, proc, sysfs, devpts, cgroup2) and bind mounts need "
                      "no device, and an entry whose options in effect include `nofail` or `noauto` does not hold up "
                      "the boot. One line per entry, in fstab order, as `<RUN> <mount point> <source as written>`",
        "hardening": f"the baseline's mount points that lack options it requires: {baseline}. One line per mount point "
                     "that fstab mounts and that lacks some, as `<RUN> <mount point> <missing options>`, the missing "
                     "options comma-separated in the order the baseline lists them; lines sorted by mount point in "
                     "byte order",
        "unmounted": "the entries that should be mounted at boot (every entry except swap and those whose options "
                     "in effect include `noauto`) but whose mount point is absent from `/app/state/mounts` (a copy of "
                     "`/proc/mounts`). One line per entry, in fstab order, as `<RUN> <source as written> <mount "
                     "point>`",
    }


@dataclass(frozen=True)
class Knobs:
    data: int  # data mounts besides the system ones
    comments: bool  # comments, blank lines, swap, LABEL= and PARTUUID= sources, pseudo file systems
    overrides: bool  # `defaults` and options that undo earlier ones; nofail and noauto
    quirks: bool  # `user`, a mount point repeated later, \040 escapes and trailing slashes


def _uuid(rng) -> str:
    h = lambda n: "".join(rng.choice("0123456789abcdef") for _ in range(n))  # noqa: E731
    return f"{h(8)}-{h(4)}-{h(4)}-{h(4)}-{h(12)}"


@register
class FstabMountAudit(Family):
    name = "fstab_mount_audit"
    domain = "system_administration"
    skill_types = ("Configuration",)
    primitive_skills = ("default value reasoning", "security baseline auditing", "input validation",
                        "sorting with tie-breaks")
    variants = ("unresolved", "hardening", "unmounted")
    levels = {0: Knobs(data=2, comments=False, overrides=False, quirks=False),
              1: Knobs(data=4, comments=True, overrides=False, quirks=False),
              2: Knobs(data=6, comments=True, overrides=True, quirks=False),
              3: Knobs(data=9, comments=True, overrides=True, quirks=True),
              4: Knobs(data=12, comments=True, overrides=True, quirks=True)}

    def _options(self, t: TaskBuilder) -> str:
        """An option field: some hardening flags, maybe undone or implied at higher levels."""
        k, rng = t.knobs, t.rng
        flags = [o for o in ("nodev", "nosuid", "noexec") if rng.random() < 0.6]
        opts = (["defaults"] if k.overrides and rng.random() < 0.4 else []) + flags
        if k.overrides and flags and rng.random() < 0.3:  # undone by a later option
            opts.append({"nodev": "dev", "nosuid": "suid", "noexec": "exec"}[rng.choice(flags)])
        if k.overrides and rng.random() < 0.25:
            opts.append(rng.choice(["nofail", "noauto", "nofail"]))
        if k.quirks and rng.random() < 0.2:
            opts.insert(rng.randrange(len(opts) + 1), "user")
        opts += ["noatime"] if rng.random() < 0.3 else []
        return ",".join(opts) or "defaults"

    def _fixture(self, t: TaskBuilder) -> tuple[str, str]:
        k, rng = t.knobs, t.rng
        lines, blkid, mounts = [], [], []
        disks = iter(f"/dev/{d}{p}" for d in ("sda", "sdb", "nvme0n1p", "vdc") for p in range(1, 9))
        mps = ["/", "/boot", "/home", "/var/log", "/tmp", "/var/tmp"] + rng.sample(DATA, k.data)
        if k.comments:
            mps += ["swap", "/dev/shm", "/proc"]
        rng.shuffle(mps)
        for mp in sorted(mps, key=lambda m: (m != "/", m.count("/") if m != "swap" else 9)):  # parents before children
            fstype = {"swap": "swap", "/boot": "ext4", "/dev/shm": "tmpfs", "/proc": "proc"}.get(
                mp, rng.choice(["ext4", "xfs"]))
            dev, uuid, label = next(disks), _uuid(rng), mp.strip("/").replace("/", "-") or "root"
            spec = f"UUID={uuid}"
            if k.comments and rng.random() < 0.3:
                spec = rng.choice([f"LABEL={label}", f"PARTUUID={uuid[:8]}-0{rng.randrange(1, 5)}", dev])
            if fstype in ("tmpfs", "proc"):
                spec = fstype
            elif rng.random() < 0.75:  # the device is present (otherwise it was replaced or unplugged)
                blkid.append(f'{dev}: LABEL="{label}" UUID="{uuid}" TYPE="{fstype}" '
                             f'PARTUUID="{spec.split("=")[1] if spec.startswith("PARTUUID=") else uuid[:8] + "-01"}"')
            opts = "defaults" if mp in ("/", "swap", "/proc") else self._options(t)
            shown = mp if mp != "swap" else "none"
            if k.quirks and mp in DATA and rng.random() < 0.3:
                head, tail = mp.rsplit("/", 1)
                shown = rng.choice([mp + "/", f"{head}/old\\040{tail}"])
            passno = 0 if fstype in ("swap", "tmpfs", "proc") else 2
            lines.append(f"{spec}{rng.choice([' ', chr(9)])}{shown} {fstype} {opts} 0 {passno}")
            if mp != "swap" and rng.random() < 0.7:
                esc = shown.rstrip("/") or "/"
                source = dev if spec.startswith(("UUID", "LABEL", "PART", "/dev")) else spec
                mounts.append(f"{source} {esc} {fstype} rw,relatime 0 0")
        if k.quirks:  # an old line for a baseline mount point, overridden by a later one
            mp = rng.choice(["/tmp", "/var/tmp", "/home"])
            lines.insert(1, f"UUID={_uuid(rng)} {mp} ext4 nodev,nosuid,noexec 0 2")
        if k.comments:
            for note in ("", "# old backup disk, removed", f"#UUID={_uuid(rng)} /mnt/old ext4 defaults 0 2"):
                lines.insert(rng.randrange(len(lines) + 1), note)
            lines[:0] = ["# /etc/fstab: static file system information.",
                         "# <file system> <mount point> <type> <options> <dump> <pass>"]
        rng.shuffle(blkid)
        rng.shuffle(mounts)
        other = {"unresolved": blkid, "unmounted": mounts}.get(t.variant, [])
        return "\n".join(lines) + "\n", "\n".join(other) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        src = fill(REFERENCE, VARIANT=repr(t.variant), BASELINE=BASELINE)
        ref = run_python(src)
        for _ in range(40):  # at least two answer lines
            fstab, other = self._fixture(t)
            if ref["report"]("RUN", fstab, other).count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no fstab with two {t.variant} lines in 40 draws")
        t.add_file("/app/etc/fstab", fstab)
        if t.variant in OTHER:
            t.add_file(OTHER[t.variant], other)
        run = unseen(t, lambda: t.code(2))
        truth = ref["report"](run, fstab, other)
        t.say("`/app/etc/fstab` is the fstab of a server we are about to reboot: each line is `<source> <mount point> "
              "<type> <options> <dump> <pass>`, whitespace-separated, options comma-separated."
              + (" Lines starting with `#` are comments." if k.comments else ""))
        rules = ["with no option a mount has suid, dev, exec and auto in effect"]
        if k.overrides:
            rules.append("`defaults` resets them to suid, dev, exec and auto; options apply left to right, so "
                         "`nodev,dev` leaves dev in effect")
        if k.quirks:
            rules.append("`user` implies nosuid, nodev and noexec (a later `exec` undoes its noexec); when a mount "
                         "point appears twice, the later line mounts over the earlier and is the one in effect; "
                         "`\\040` in a mount point is a space, and a trailing slash does not make another mount point "
                         "(write mount points without it, with spaces decoded)")
        t.say("Resolve options as mount does: " + "; ".join(rules) + ".")
        base = "; ".join(f"`{mp}` needs {', '.join(o)}" for mp, o in BASELINE.items())
        t.say(f"Report {asks(base)[t.variant]}. RUN is the change id given below; the report is "
              "filed under it.")
        var = t.deliver(run, "the change id")
        t.add_solution_file("fstab_audit.py", src)
        arg = f" {OTHER[t.variant]}" if t.variant in OTHER else ""
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/fstab_audit.py "{var}" /app/etc/fstab{arg} > /app/out/fstab.txt')
        t.expect_output("/app/out/fstab.txt", truth, "the report")
