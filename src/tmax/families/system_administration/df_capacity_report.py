"""Capacity report from saved `df -P` (and `df -Pi`) snapshots of one host. Variants: the filesystems at or
above a usage threshold, the space still available on each (a unit conversion from the block size
the header states), and the filesystems whose inodes are fuller than their blocks (a join of the two
snapshots). Traps by level: pseudo filesystems (tmpfs, overlay) that are not disks, loop-mounted snap
images that are always full, bind mounts of one device and mount points with spaces, then NFS
exports that count, 512-byte blocks and filesystems that report no inode figures."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import sys

VARIANT = @VARIANT@
THRESHOLD = @THRESHOLD@  # percent, for "full"


def table(path):
    """{device, mount, blocks, used, avail, pct} per line of a df -P / df -Pi snapshot, and the block size."""
    with open(path, encoding="utf-8") as f:
        lines = [ln for ln in f.read().split("\n") if ln.strip()]
    head = lines[0].split()
    unit = int(head[1].split("-")[0]) if head[1].endswith("-blocks") else 1
    rows = []
    for ln in lines[1:]:
        p = ln.split()
        rows.append({"device": p[0], "num": p[1:4], "pct": p[4], "mount": " ".join(p[5:])})
    return rows, unit


def real(rows):
    """Disks and network exports, each device once (under its shortest mount point, ties in byte order)."""
    best = {}
    for r in rows:
        d = r["device"]
        if not ((d.startswith("/dev/") and not d.startswith("/dev/loop")) or ":/" in d):
            continue
        key = (len(r["mount"]), r["mount"].encode())
        if d not in best or key < best[d][0]:
            best[d] = (key, r)
    return sorted((r for _, r in best.values()), key=lambda r: r["mount"].encode())


def report(host, df_path, dfi_path=None):
    rows, unit = table(df_path)
    fs = real(rows)
    if VARIANT == "full":
        hit = [(int(r["pct"].rstrip("%")), r["mount"]) for r in fs if int(r["pct"].rstrip("%")) >= THRESHOLD]
        out = [f"{host} {m} {p}%" for p, m in sorted(hit, key=lambda x: (-x[0], x[1].encode()))]
    elif VARIANT == "free":
        free = [(int(r["num"][2]) * unit // 1048576, r["mount"]) for r in fs]
        out = [f"{host} {m} {n}" for n, m in sorted(free, key=lambda x: (-x[0], x[1].encode()))]
    else:
        inodes = {r["mount"]: r["pct"] for r in table(dfi_path)[0]}
        out = []
        for r in fs:
            ip = inodes.get(r["mount"], "-")
            if ip != "-" and int(ip.rstrip("%")) > int(r["pct"].rstrip("%")):
                out.append(f"{host} {r['mount']} {ip} {r['pct']}")
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    sys.stdout.write(report(*sys.argv[1:]))
'''

DISKS = [("/dev/nvme0n1p2", "/"), ("/dev/nvme0n1p1", "/boot"), ("/dev/mapper/vg0-home", "/home"),
         ("/dev/mapper/vg0-var", "/var"), ("/dev/sdb1", "/srv/data"), ("/dev/mapper/vg0-log", "/var/log"),
         ("/dev/sdc1", "/var/lib/docker"), ("/dev/mapper/vg1-pg", "/var/lib/postgresql"), ("/dev/sdd1", "/backup"),
         ("/dev/mapper/vg0-opt", "/opt"), ("/dev/sde1", "/data"), ("/dev/mapper/vg0-tmp", "/tmp")]
PSEUDO = [("udev", "devtmpfs", "/dev"), ("tmpfs", "tmpfs", "/run"), ("tmpfs", "tmpfs", "/dev/shm"),
          ("tmpfs", "tmpfs", "/run/user/1000"), ("overlay", "overlay", "/var/lib/docker/overlay2/3f9c1a/merged"),
          ("efivarfs", "efivarfs", "/sys/firmware/efi/efivars")]
SNAPS = ["/snap/core22/1380", "/snap/lxd/27948", "/snap/snapd/21465"]

ASKS = {
    "full": ("list the filesystems whose usage (the Capacity column) is at or above {T}%, one line each as "
             "`<HOST> <mount point> <usage>%`, sorted by usage (highest first), ties by mount point in byte order"),
    "free": ("list the space still available on each filesystem (the Available column) in whole MiB, rounded down, "
             "one line each as `<HOST> <mount point> <MiB>`, sorted by that number (largest first), ties by mount "
             "point in byte order"),
    "inodes": ("list the filesystems whose inode usage (IUse% in `/app/snapshots/df-Pi.txt`) is higher than their "
               "block usage (Capacity in `df-P.txt`), one line each as `<HOST> <mount point> <inode use>% <block "
               "use>%`, sorted by mount point in byte order"),
}


@dataclass(frozen=True)
class Knobs:
    disks: int  # device-backed filesystems
    pseudo: bool  # tmpfs, devtmpfs, overlay lines
    snaps: bool  # /dev/loop snap images (always 100%)
    binds: bool  # a device mounted twice; a mount point with a space
    nfs: bool  # NFS exports; 512-byte blocks; filesystems without inode figures


@register
class DfCapacityReport(Family):
    name = "df_capacity_report"
    domain = "system_administration"
    skill_types = ("Resource Monitoring",)
    primitive_skills = ("df output parsing", "disk usage accounting", "unit conversion", "capacity planning",
                        "sorting with tie-breaks")
    variants = ("full", "free", "inodes")
    levels = {0: Knobs(disks=5, pseudo=False, snaps=False, binds=False, nfs=False),
              1: Knobs(disks=6, pseudo=True, snaps=False, binds=False, nfs=False),
              2: Knobs(disks=8, pseudo=True, snaps=True, binds=False, nfs=False),
              3: Knobs(disks=10, pseudo=True, snaps=True, binds=True, nfs=False),
              4: Knobs(disks=12, pseudo=True, snaps=True, binds=True, nfs=True)}

    def _mounts(self, t: TaskBuilder):
        """(device, mount, KiB total, KiB used, KiB avail, inodes, inodes used) in mount order."""
        k, rng = t.knobs, t.rng
        out = []

        def fs(dev, mount, full=None):
            total = rng.randrange(1, 800) * 1048576 + rng.randrange(1048576)
            share = rng.choice([rng.uniform(0.05, 0.8), rng.uniform(0.8, 0.99)]) if full is None else full
            used = int(total * share)
            avail = max(0, int(total * 0.95) - used) if full is None else 0
            inodes = total // rng.choice([16, 32, 64])
            iused = int(inodes * rng.choice([rng.uniform(0.01, 0.5), rng.uniform(0.6, 0.99)]))
            out.append([dev, mount, total, used, avail, inodes, iused])

        for dev, mount in rng.sample(DISKS[1:], k.disks - 1) + [DISKS[0]]:
            fs(dev, mount)
        if k.binds:
            src = rng.choice(out)
            out.append([src[0], rng.choice(["/var/www", "/srv/www", "/export/data"]), *src[2:]])
            fs("/dev/sdf1", "/mnt/backup disk")
        if k.nfs:
            fs("nas01:/export/home", "/home/shared")
            fs("nas02:/vol/archive", "/mnt/archive")
        if k.snaps:
            for s in rng.sample(SNAPS, 2):
                fs(f"/dev/loop{rng.randrange(8)}", s, full=1.0)
        if k.pseudo:
            for dev, _, mount in PSEUDO:
                fs(dev, mount)
        out.sort(key=lambda r: (r[1].count("/"), r[1]))
        return out

    def _render(self, t: TaskBuilder, mounts, inodes: bool) -> str:
        k = t.knobs
        unit = 512 if k.nfs and not inodes else 1024
        if inodes:
            lines = ["Filesystem Inodes IUsed IFree IUse% Mounted on"]
        else:
            lines = [f"Filesystem {unit}-blocks Used Available Capacity Mounted on"]
        for dev, mount, total, used, avail, ino, iused in mounts:
            if inodes:
                if k.nfs and (":/" in dev or dev.endswith("sdb1")):  # btrfs and NFS report no inode figures
                    lines.append(f"{dev} 0 0 0 - {mount}")
                    continue
                pct = math.ceil(iused * 100 / ino) if ino else 0
                lines.append(f"{dev} {ino} {iused} {ino - iused} {pct}% {mount}")
            else:
                pct = math.ceil(used * 100 / (used + avail)) if used + avail else 0
                f = 1024 // unit
                lines.append(f"{dev} {total * f} {used * f} {avail * f} {pct}% {mount}")
        width = max(len(ln.split()[0]) for ln in lines)
        return "".join(f"{ln.split(' ', 1)[0]:<{width}} {ln.split(' ', 1)[1]}\n" for ln in lines)

    def output_case(self, t: TaskBuilder) -> None:
        rng = t.rng
        threshold = rng.choice([80, 85, 90])
        src = fill(REFERENCE, VARIANT=repr(t.variant), THRESHOLD=threshold)
        ref = run_python(src)
        for _ in range(30):
            mounts = self._mounts(t)
            files = {"/app/snapshots/df-P.txt": self._render(t, mounts, False)}
            if t.variant == "inodes":
                files["/app/snapshots/df-Pi.txt"] = self._render(t, mounts, True)
            if self._report(ref, "HOST", files).count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no snapshot with two {t.variant} lines in 30 draws")
        for path, text in files.items():
            t.add_file(path, text)
        host = unseen(t, lambda: t.code(2))
        truth = self._report(ref, host, files)
        snaps = "`/app/snapshots/df-P.txt` (`df -P`)" + (" and `/app/snapshots/df-Pi.txt` (`df -Pi`)"
                                                          if t.variant == "inodes" else "")
        t.say(f"{snaps} were saved on one of our hosts. For the capacity review, "
              f"{ASKS[t.variant].replace('{T}', str(threshold))}.")
        k = t.knobs
        rules = []
        if k.pseudo:
            rules.append("Only filesystems on a device count (the Filesystem column starts with `/dev/`): tmpfs, "
                         "devtmpfs, overlay and the like are not disks." + (" Nor are `/dev/loop*` devices, the "
                                                                           "read-only snap images." if k.snaps else ""))
        if k.binds:
            rules.append("A device mounted at several places is one filesystem: report it once, under its shortest "
                         "mount point (ties in byte order). Mount points may contain spaces.")
        if k.nfs:
            rules.append("NFS exports (`server:/path`) count as filesystems too. Read the block size from the header. "
                         "A filesystem whose IUse% is `-` has no inode figures: it never counts as inode-fuller.")
        if rules:
            t.say(" ".join(rules))
        t.say("HOST is the host's inventory name, given below; every line is filed under it.")
        var = t.deliver(host, "the inventory name of the host")
        extra = " /app/snapshots/df-Pi.txt" if t.variant == "inodes" else ""
        t.add_solution_file("capacity.py", src)
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/capacity.py "{var}" /app/snapshots/df-P.txt{extra} > /app/out/capacity.txt')
        t.expect_output("/app/out/capacity.txt", truth, "the report")

    @staticmethod
    def _report(ref, host, files):
        with host_files(files) as (_, paths):
            return ref["report"](host, *paths)
