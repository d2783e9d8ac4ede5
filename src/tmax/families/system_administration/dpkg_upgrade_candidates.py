"""Which packages can be upgraded? Compare what `dpkg -l` says is installed with the `Packages` indices
of the configured suites, ordering versions as dpkg does (epoch, then upstream version and Debian
revision, with `~` sorting before everything, even the end of the string). Variants: the upgradable
packages with their candidate version, the newest version of every package with the suites carrying
it, and a list of one package's versions sorted into dpkg order (where `sort -V` goes wrong). Traps by
level: Debian revisions, then several suites, held and removed packages, epochs, tildes and leading
zeros, and finally stanzas for a foreign architecture and arch-qualified package names."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.unseen import distinct, unseen

REFERENCE = r'''
import functools
import os
import sys

VARIANT = @VARIANT@
ARCHES = ("amd64", "all")  # what this machine installs


def order(c):
    return 0 if c.isdigit() else ord(c) if c.isalpha() else -1 if c == "~" else ord(c) + 256


def verrevcmp(a, b):
    """dpkg's comparison of an upstream version or a revision."""
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = order(a[i]) if i < len(a) else 0
            bc = order(b[j]) if j < len(b) else 0
            if ac != bc:
                return ac - bc
            i, j = i + 1, j + 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        first = 0
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            first = first or ord(a[i]) - ord(b[j])
            i, j = i + 1, j + 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first:
            return first
    return 0


def split(v):
    epoch, _, rest = v.rpartition(":") if ":" in v else ("0", "", v)
    up, _, rev = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return int(epoch or 0), up, rev


def compare(a, b):
    (ea, ua, ra), (eb, ub, rb) = split(a), split(b)
    return (ea > eb) - (ea < eb) or verrevcmp(ua, ub) or verrevcmp(ra, rb)


def installed(path):
    """package -> version for every package dpkg -l shows as installed and not held."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and len(p[0]) in (2, 3) and p[0][1:2] == "i" and p[0][0] == "i":
                out[p[1].split(":")[0]] = p[2]
    return out


def index(paths):
    """package -> {version: [suites]} over the Packages files (a suite is the file name before _Packages)."""
    out = {}
    for path in sorted(paths):
        suite = os.path.basename(path).rsplit("_", 1)[0]
        with open(path, encoding="utf-8") as f:
            for stanza in f.read().split("\n\n"):
                fields = dict(ln.split(": ", 1) for ln in stanza.split("\n") if ": " in ln)
                if "Package" in fields and fields.get("Architecture") in ARCHES:
                    vs = out.setdefault(fields["Package"], {})
                    if suite not in vs.setdefault(fields["Version"], []):
                        vs[fields["Version"]].append(suite)
    return out


def newest(versions):
    return sorted(versions, key=functools.cmp_to_key(compare))[-1]


def report(run, args):
    rows = []
    if VARIANT == "order":
        with open(args[0], encoding="utf-8") as f:
            vs = [ln.strip() for ln in f if ln.strip()]
        rows = [f"{run} {v}" for v in sorted(sorted(vs), key=functools.cmp_to_key(compare))]
    elif VARIANT == "newest":
        for pkg, vs in sorted(index(args).items()):
            best = newest(vs)
            rows.append(f"{run} {pkg} {best} {','.join(sorted(vs[best]))}")
    else:  # upgrades
        idx = index(args[1:])
        for pkg, cur in sorted(installed(args[0]).items()):
            if pkg in idx:
                best = newest(idx[pkg])
                if compare(best, cur) > 0:
                    rows.append(f"{run} {pkg} {cur} {best}")
    return "".join(r + "\n" for r in rows)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2:]))
'''

PACKAGES = ("openssl", "libssl3", "curl", "libcurl4", "bash", "coreutils", "tzdata", "nginx", "openssh-server",
            "libc6", "systemd", "sudo", "vim", "git", "python3.10", "libxml2", "zlib1g", "gnupg", "rsync", "wget",
            "libpq5", "postgresql-14", "redis-server", "libsqlite3-0", "ca-certificates", "apt", "dpkg", "less")
DESCR = "package from the distribution archive"

ASKS = {
    "upgrades": "every installed package for which some index has a newer version (the candidate is the newest "
                "version any index offers), one line each as `<RUN> <package> <installed version> <candidate>`, "
                "sorted by package name in byte order",
    "newest": "the newest version of every package the indices list, one line per package as `<RUN> <package> "
              "<version> <suites>` where suites are the suites whose index has that very version, comma-separated "
              "in byte order; lines sorted by package name in byte order",
    "order": "the versions of `/app/state/versions.txt` (one per line, all of one package) sorted from oldest to "
             "newest by dpkg's rules, one line each as `<RUN> <version>`; versions dpkg holds equal (such as `1.02` "
             "and `1.2`) are ordered by their text in byte order",
}


@dataclass(frozen=True)
class Knobs:
    packages: int  # installed packages (for order: versions in the list)
    suites: int  # Packages indices
    revisions: bool  # Debian revisions (-1ubuntu0.2)
    tricky: bool  # held/removed packages, epochs, tildes, leading zeros
    foreign: bool  # i386 stanzas and arch-qualified names


@register
class DpkgUpgradeCandidates(Family):
    name = "dpkg_upgrade_candidates"
    domain = "system_administration"
    skill_types = ("Configuration", "Service Management")
    primitive_skills = ("sorting with tie-breaks", "default value reasoning", "input validation")
    variants = ("upgrades", "newest", "order")
    levels = {0: Knobs(packages=6, suites=1, revisions=False, tricky=False, foreign=False),
              1: Knobs(packages=12, suites=1, revisions=True, tricky=False, foreign=False),
              2: Knobs(packages=18, suites=2, revisions=True, tricky=True, foreign=False),
              3: Knobs(packages=24, suites=3, revisions=True, tricky=True, foreign=False),
              4: Knobs(packages=28, suites=3, revisions=True, tricky=True, foreign=True)}

    def _version(self, t: TaskBuilder, base: list[int]) -> str:
        """A version near ``base``: a bumped part, maybe a revision, a tilde pre-release, an epoch."""
        k, rng = t.knobs, t.rng
        parts = list(base)
        i = rng.randrange(len(parts))
        parts[i] = max(0, parts[i] + rng.choice([-1, 1, 1, 2, 8]))
        up = ".".join(str(p) for p in parts)
        if k.tricky and rng.random() < 0.15:
            up = ".".join(f"0{p}" if j == len(parts) - 1 and rng.random() < 0.5 else str(p)
                          for j, p in enumerate(parts))
        if k.tricky and rng.random() < 0.2:
            up += rng.choice(["~rc1", "~rc2", "~beta1", "+dfsg", "a"])
        if k.revisions:
            up += rng.choice(["-1", "-2", "-1ubuntu0.1", "-1ubuntu0.2", "-1ubuntu1", "-0ubuntu0.22.04.1",
                              "-1build1", "-1~bpo1", "-10"])
        if k.tricky and rng.random() < 0.08:
            up = "1:" + up
        return up

    def _fixture(self, t: TaskBuilder) -> dict[str, str]:
        k, rng = t.knobs, t.rng
        if t.variant == "order":
            base = [rng.randrange(0, 4), rng.randrange(0, 12), rng.randrange(0, 12)]
            vs = distinct(lambda: self._version(t, base), k.packages * 2)
            return {"/app/state/versions.txt": "\n".join(vs) + "\n"}
        suites = ["jammy", "jammy-updates", "jammy-security"][:k.suites]
        pkgs = sorted(rng.sample(PACKAGES, k.packages))
        dpkg = ["Desired=Unknown/Install/Remove/Purge/Hold",
                "| Status=Not/Inst/Conf-files/Unpacked/halF-conf/Half-inst/trig-aWait/Trig-pend",
                "|/ Err?=(none)/Reinst-required (Status,Err: uppercase=bad)",
                "||/ Name                Version                  Architecture Description",
                "+++-===================-========================-============-" + "=" * 40]
        stanzas = {s: [] for s in suites}
        for p in pkgs:
            base = [rng.randrange(0, 4), rng.randrange(0, 12), rng.randrange(0, 12)]
            cur = self._version(t, base)
            state = rng.choice(["hi", "rc"]) if k.tricky and rng.random() < 0.15 else "ii"
            name = f"{p}:amd64" if k.foreign and p.startswith("lib") else p
            dpkg.append(f"{state}  {name:<19} {cur:<24} {'amd64':<12} {p} {DESCR}")
            for s in suites:
                if rng.random() < 0.7:
                    v = cur if rng.random() < 0.3 else self._version(t, base)
                    stanzas[s].append(f"Package: {p}\nArchitecture: amd64\nVersion: {v}\nPriority: optional\n"
                                      f"Filename: pool/main/{p[0]}/{p}/{p}_{v.split(':')[-1]}_amd64.deb")
                if k.foreign and rng.random() < 0.2:  # another architecture: not for this machine
                    v = self._version(t, [b + 5 for b in base])
                    stanzas[s].append(f"Package: {p}\nArchitecture: i386\nVersion: {v}\nPriority: optional")
        files = {"/app/state/dpkg-l.txt": "\n".join(dpkg) + "\n"} if t.variant == "upgrades" else {}
        for s in suites:
            rng.shuffle(stanzas[s])
            files[f"/app/lists/{s}_Packages"] = "\n\n".join(stanzas[s]) + "\n"
        return files

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        src = fill(REFERENCE, VARIANT=repr(t.variant))
        ref = run_python(src)
        for _ in range(30):  # at least two answer lines
            files = self._fixture(t)
            if self._truth(ref, files, "RUN").count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no package state with two {t.variant} lines in 30 draws")
        for path, text in files.items():
            t.add_file(path, text)
        run = unseen(t, lambda: t.code(2))
        truth = self._truth(ref, files, run)
        rules = ("Compare versions as dpkg does: `[epoch:]upstream[-revision]`, the epoch (0 when absent) first as "
                 "a number, then the upstream version, then the revision (the part after the last `-`; empty when "
                 "absent), the last two compared left to right in alternating runs of non-digits (compared character "
                 "by character: `~` sorts before everything, then the end of the run, then letters, then all other "
                 "characters) and of digits "
                 "(compared as numbers, so leading zeros do not matter).")
        if t.variant == "order":
            t.say("We are pinning a package and need its candidate versions in order. " + rules)
        else:
            where = ("`/app/state/dpkg-l.txt` is the output of `dpkg -l` on the server, and " if t.variant == "upgrades"
                     else "")
            t.say(f"{where}`/app/lists/` holds the `Packages` index of each configured suite (`<suite>_Packages`: "
                  "blank-line separated stanzas with `Package:`, `Architecture:` and `Version:` fields). " + rules)
            notes = []
            if k.tricky and t.variant == "upgrades":
                notes.append("only packages whose `dpkg -l` status is `ii` count: `hi` is held back on purpose and "
                             "`rc` is removed")
            if k.foreign:
                notes.append("the machine is amd64: stanzas for other architectures do not apply" +
                             (", and `dpkg -l` may qualify a name as `<name>:amd64` (the package is `<name>`)"
                              if t.variant == "upgrades" else ""))
            if notes:
                t.say("Mind: " + "; ".join(notes) + ".")
        t.say(f"Report {ASKS[t.variant]}. RUN is the maintenance window id given below; the change is filed under "
              "it.")
        var = t.deliver(run, "the maintenance window id")
        t.add_solution_file("dpkg_versions.py", src)
        args = {"order": "/app/state/versions.txt", "newest": "/app/lists/*_Packages",
                "upgrades": "/app/state/dpkg-l.txt /app/lists/*_Packages"}[t.variant]
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/dpkg_versions.py "{var}" {args} > /app/out/packages.txt')
        t.expect_output("/app/out/packages.txt", truth, "the report")

    @staticmethod
    def _truth(ref, files: dict[str, str], run: str) -> str:
        with host_files(files) as (_, paths):
            dpkg = [p for p in paths if p.endswith("dpkg-l.txt")]
            return ref["report"](run, dpkg + sorted(p for p in paths if p not in dpkg))
