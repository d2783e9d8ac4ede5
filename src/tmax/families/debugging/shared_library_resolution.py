"""Debug a service's shared library loading the way the dynamic linker does it. `/app/root` is a copy of a
host's filesystem in which every ELF object is replaced by its `readelf -d` output (NEEDED, RPATH,
RUNPATH); the systemd units of several services sit in `/app/units/`, each under a hash of its service
name (the delivered value). The agent follows the loader's search order for the named service's
executable, breadth first: RPATH (of the object and its loaders, unless the object has a RUNPATH),
LD_LIBRARY_PATH from the unit, RUNPATH (of the object only), the ld.so.conf directories, then /lib and
/usr/lib. Variants: list every library loaded and where from (as ldd would), list the NEEDED entries
that are not found and who needs them, or list the copies each loaded library shadows. Traps by level:
$ORIGIN and `..` in search paths, a RUNPATH that is not inherited by the libraries below (while an
RPATH is), comments and includes in ld.so.conf, stale copies earlier in the search order that pull in
other dependencies, and a library one object cannot find that another finds through its own RUNPATH."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import glob
import os
import re
import sys

VARIANT = @VARIANT@
TAG = re.compile(r"\((NEEDED|RPATH|RUNPATH)\)\s+[^\[]*\[([^\]]*)\]")


def dynamic(root, path):
    d = {"NEEDED": [], "RPATH": [], "RUNPATH": []}
    with open(root + path, encoding="utf-8") as f:
        for line in f:
            m = TAG.search(line)
            if m and m.group(1) == "NEEDED":
                d["NEEDED"].append(m.group(2))
            elif m:
                d[m.group(1)] = [x for x in m.group(2).split(":") if x]
    return d


def ld_conf(root, path="/etc/ld.so.conf"):
    dirs = []
    if not os.path.isfile(root + path):
        return dirs
    with open(root + path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line.startswith("include "):
                for inc in sorted(glob.glob(root + line.split(None, 1)[1])):
                    dirs += ld_conf(root, inc[len(root):])
            elif line:
                dirs.append(line)
    return dirs


def unit(root, path):
    exe, env = None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("ExecStart="):
                exe = line.split("=", 1)[1].split()[0]
            elif line.startswith("Environment=LD_LIBRARY_PATH="):
                env = [x for x in line.split("=", 2)[2].split(":") if x]
    return exe, env


def expand(dirs, obj):
    return [os.path.normpath(x.replace("$ORIGIN", os.path.dirname(obj))) for x in dirs]


def load(root, unit_path):
    exe, env = unit(root, unit_path)
    conf = ld_conf(root)
    info = {exe: dynamic(root, exe)}
    loaded, order, missing, shadows = {}, [], [], []
    queue = [(exe, [])]
    while queue:
        obj, chain = queue.pop(0)
        for name in info[obj]["NEEDED"]:
            if name in loaded:
                continue
            dirs = []
            if not info[obj]["RUNPATH"]:
                for o in [obj, *chain]:
                    dirs += expand(info[o]["RPATH"], o)
            dirs += env + expand(info[obj]["RUNPATH"], obj) + conf + ["/lib", "/usr/lib"]
            found = []
            for d in dirs:
                p = os.path.join(d, name)
                if os.path.isfile(root + p) and p not in found:
                    found.append(p)
            if not found:
                missing.append((obj, name))  # another object may still find it through its own path
                continue
            loaded[name] = found[0]
            order.append((name, found[0]))
            shadows += [(name, found[0], p) for p in found[1:]]
            info[found[0]] = dynamic(root, found[0])
            queue.append((found[0], [obj, *chain]))
    return order, missing, shadows


def report(root, unit_path):
    order, missing, shadows = load(root, unit_path)
    if VARIANT == "resolve":
        return "".join(f"{n}\t{p}\n" for n, p in order)
    if VARIANT == "missing":
        return "".join(f"{o}\t{n}\n" for o, n in missing)
    return "".join(f"{n}\t{w}\t{p}\n" for n, w, p in shadows)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

SYSLIBS = ("libssl.so.3", "libcrypto.so.3", "libz.so.1", "libpq.so.5", "libcurl.so.4", "libxml2.so.2",
           "libicuuc.so.72", "libprotobuf.so.32", "libyaml-0.so.2", "libzstd.so.1", "liblz4.so.1", "libffi.so.8",
           "libsnappy.so.1", "libgrpc.so.30", "libuv.so.1", "libsqlite3.so.0", "libpcre2-8.so.0", "libidn2.so.0")
APPS = ("ledger", "relay", "ingest", "vault", "pulse", "atlas", "beacon", "harbor")
PARTS = ("core", "net", "store", "auth", "codec", "plugin")
FILLER = (" 0x000000000000000c (INIT)               0x", " 0x000000000000000d (FINI)               0x",
          " 0x0000000000000005 (STRTAB)             0x")


@dataclass(frozen=True)
class Knobs:
    syslibs: int  # system libraries shared by the services
    applibs: int  # libraries of each service's own
    conf: int  # 0: no ld.so.conf; 1: plain dirs; 2: comments and an include
    env: bool  # LD_LIBRARY_PATH in the units
    origin: bool  # $ORIGIN and .. in search paths; RPATH and RUNPATH mixed
    copies: int  # stale copies of libraries in other directories
    decoys: int  # other services' units


@register
class SharedLibraryResolution(Family):
    name = "shared_library_resolution"
    domain = "debugging"
    skill_types = ("Configuration Debugging", "Failure Reproduction")
    primitive_skills = ("config file validation", "resolving relative paths against the working directory",
                        "reproducing a failure", "interpreting service error logs")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("resolve", "missing", "shadowed")
    levels = {0: Knobs(syslibs=4, applibs=0, conf=0, env=False, origin=False, copies=1, decoys=1),
              1: Knobs(syslibs=6, applibs=2, conf=1, env=False, origin=False, copies=2, decoys=2),
              2: Knobs(syslibs=8, applibs=3, conf=1, env=True, origin=True, copies=3, decoys=2),
              3: Knobs(syslibs=10, applibs=4, conf=2, env=True, origin=True, copies=4, decoys=3),
              4: Knobs(syslibs=12, applibs=5, conf=2, env=True, origin=True, copies=6, decoys=3)}

    def _dyn(self, t, soname, needed, rpath=(), runpath=()):
        rng = t.rng
        rows = [f"Dynamic section at offset 0x{rng.randrange(0x1000, 0x40000):x} contains "
                f"{len(needed) + 6} entries:", "  Tag        Type                         Name/Value"]
        rows += [f" 0x0000000000000001 (NEEDED)             Shared library: [{n}]" for n in needed]
        if soname:
            rows.append(f" 0x000000000000000e (SONAME)             Library soname: [{soname}]")
        if rpath:
            rows.append(f" 0x000000000000000f (RPATH)              Library rpath: [{':'.join(rpath)}]")
        if runpath:
            rows.append(f" 0x000000000000001d (RUNPATH)            Library runpath: [{':'.join(runpath)}]")
        values = [rng.randrange(0x400, 0x90000) for _ in range(4)]  # the fourth entry (FLAGS) shows none
        rows += [f"{tag}{val:x}" for tag, val in zip(FILLER, values)]
        rows.append(" 0x000000000000001e (FLAGS)              BIND_NOW")
        return "\n".join(rows) + "\n"

    def _world(self, t):
        """The filesystem (path -> text) and the units (text each) of the services."""
        k, rng = t.knobs, t.rng
        files = {}
        sysdirs = ["/lib", "/usr/lib"] + (["/usr/local/lib", "/opt/vendor/lib"] if k.conf else [])
        if k.conf == 1:
            files["/etc/ld.so.conf"] = "/usr/local/lib\n/opt/vendor/lib\n"
        elif k.conf == 2:  # the include is read in name order; a commented-out directory does not count
            files["/etc/ld.so.conf"] = "# multiarch and local libraries\ninclude /etc/ld.so.conf.d/*.conf\n"
            files["/etc/ld.so.conf.d/10-local.conf"] = "/usr/local/lib\n#/opt/legacy/lib\n"
            files["/etc/ld.so.conf.d/20-vendor.conf"] = "/opt/vendor/lib  # vendor SDK\n"
            sysdirs.append("/opt/legacy/lib")
        libs = rng.sample(SYSLIBS, k.syslibs)
        deps = {lib: sorted(rng.sample(libs[i + 1:], min(len(libs) - i - 1, rng.randrange(0, 3))))
                for i, lib in enumerate(libs)}
        gone = set(rng.sample(libs, 1 + (len(libs) > 6)))  # never installed, or only where nobody looks
        for lib in libs:
            if lib in gone:
                if rng.random() < 0.5:
                    files[f"/opt/unused/lib/{lib}"] = self._dyn(t, lib, deps[lib])
                continue
            files[f"{rng.choice(sysdirs[:4])}/{lib}"] = self._dyn(t, lib, deps[lib])
        for lib in rng.sample([x for x in libs if x not in gone], min(k.copies, len(libs) - len(gone))):
            d = rng.choice(sysdirs)
            if f"{d}/{lib}" not in files:  # a stale copy, maybe with other dependencies
                stale = deps[lib][:-1] if deps[lib] and rng.random() < 0.5 else deps[lib]
                files[f"{d}/{lib}"] = self._dyn(t, lib, stale)
        units = []
        for app in rng.sample(APPS, 1 + k.decoys):
            units.append(self._app(t, app, files, libs, deps, gone))
        return files, units

    def _app(self, t, app, files, libs, deps, gone):
        """One service: its executable and own libraries into ``files``; returns its unit text."""
        k, rng = t.knobs, t.rng
        base = f"/opt/{app}"
        own = [f"lib{app}-{p}.so.{rng.randrange(1, 4)}" for p in rng.sample(PARTS, k.applibs)]
        exe_needs = own[:2] + rng.sample(libs, min(3, len(libs)))
        if not own:
            exe_needs += [x for x in rng.sample(sorted(gone), 1) if x not in exe_needs]
        libdir = f"{base}/lib"
        path_exe = (["$ORIGIN/../lib"] if k.origin and rng.random() < 0.7 else [libdir])
        kind = rng.choice(["rpath", "runpath"]) if k.origin else "runpath"
        exe = f"{base}/bin/{app}d"
        if t.level >= 4 and len(own) > 2:
            exe_needs.append(own[2])  # not on the executable's path, but on a library's
        if t.level:
            files[exe] = self._dyn(t, None, exe_needs, *((path_exe, ()) if kind == "rpath" else ((), path_exe)))
        else:
            files[exe] = self._dyn(t, None, exe_needs)
        for i, lib in enumerate(own):
            # deeper libraries live in private/, which only a RUNPATH of the library above names
            where = f"{libdir}/private" if k.origin and i >= 2 else libdir
            nxt = own[i + 1:i + 2]
            needs = nxt + rng.sample(libs, rng.randrange(0, 3))
            runpath = ["$ORIGIN"] if k.origin and rng.random() < 0.4 else []
            if nxt and k.origin and i + 1 >= 2 and rng.random() < 0.7:
                runpath.append("$ORIGIN/private" if i == 1 else "$ORIGIN")
            files[f"{where}/{lib}"] = self._dyn(t, lib, needs, (), runpath)
        env = []
        if k.env:
            env = rng.sample([f"{base}/lib/compat", "/usr/local/lib", "/home/deploy/lib"], rng.randrange(1, 3))
            copy = rng.choice(libs)
            if rng.random() < 0.6 and f"{env[0]}/{copy}" not in files:  # a copy that wins over the system's
                files[f"{env[0]}/{copy}"] = self._dyn(t, copy, deps[copy][1:])
        unit = (f"[Unit]\nDescription={app.capitalize()} service\nAfter=network-online.target\n\n[Service]\n"
                f"User={app}\n" + (f"Environment=LD_LIBRARY_PATH={':'.join(env)}\n" if env else "")
                + f"ExecStart={exe} --config /etc/{app}/{app}.toml\nRestart=on-failure\n\n[Install]\n"
                "WantedBy=multi-user.target\n")
        return unit

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        src = fill(REFERENCE, VARIANT=repr(v))
        ref = run_python(src)
        for _ in range(30):  # redraw a world whose answer would be empty
            files, units = self._world(t)
            with tempfile.TemporaryDirectory(prefix="tmax-ref-") as d:
                for path, text in sorted(files.items()):
                    Path(d + path).parent.mkdir(parents=True, exist_ok=True)
                    Path(d + path).write_text(text)
                answers = []
                for i, u in enumerate(units):
                    Path(d, f"unit{i}.service").write_text(u)
                    answers.append(ref["report"](d, f"{d}/unit{i}.service"))
            if answers[0] and len(set(answers)) == len(answers):
                break
        else:
            raise FamilyError(f"{self.name}: 30 worlds without an answer for variant {v}")
        truth = answers[0]
        for path, text in sorted(files.items()):
            t.add_file(f"/app/root{path}", text)
        # The service name is the delivered value; units are stored under a hash of it.
        svc = unseen(t, lambda: t.code(2), *units)
        names = [svc, *distinct(lambda: t.code(2), k.decoys, [svc])]
        for name, text in sorted(zip(names, units), key=lambda nu: key_of(nu[0])):
            t.add_file(f"/app/units/{key_of(name)}.service", text)
        t.say("A service on this host fails to start with `error while loading shared libraries`. `/app/root` is a "
              "copy of the host's filesystem: every absolute path below, and in the files, means that path under "
              "`/app/root`, and every ELF object there was replaced by its `readelf -d` output. The service units "
              "are in `/app/units/<KEY>.service`, where KEY is the first 16 hex digits of the SHA-256 of the service "
              "name (`printf %s <name> | sha256sum`); the first word of `ExecStart=` is the executable. Look only "
              "at the service given below.")
        who = t.deliver(svc, "the service name")
        order = ["RPATH entries of the object that needs the library, then of the object that loaded that one, "
                 "and so on up to the executable (only if the needing object has no RUNPATH)"]
        if k.env:
            order.append("the unit's `Environment=LD_LIBRARY_PATH=` directories")
        order.append("RUNPATH entries of the needing object only (a RUNPATH is not inherited)")
        if k.conf:
            order.append("the directories in `/etc/ld.so.conf` (in file order; `#` starts a comment"
                         + ("; `include <glob>` reads the matching files in name order" if k.conf >= 2 else "")
                         + ")")
        order.append("`/lib`, then `/usr/lib`")
        if t.level == 0:  # nothing on the atomic rung has a search path of its own
            order = order[-1:]
        t.say("Load it as the dynamic linker does: breadth first from the executable, each object's NEEDED "
              "entries in order. A NEEDED name already loaded is not searched again. Otherwise the loader looks "
              "for a file of exactly that name in these directories, in this order, and takes the first: "
              + "; ".join(f"({i + 1}) {o}" for i, o in enumerate(order)) + "."
              + (" `$ORIGIN` stands for the directory of the object whose RPATH or RUNPATH it is; normalise `..`."
                 if k.origin else "")
              + " A library that is not found is not loaded (an object that needs it later searches again, with "
              "its own path). Write paths as the host sees them, without the `/app/root` prefix.")
        if v == "resolve":
            t.say("Write one line per library loaded, in load order: `<name><TAB><path it was loaded from>`.")
            out = "/app/out/ldd.tsv"
        elif v == "missing":
            t.say("Write one line per failed lookup, in the order the loader makes them: `<path of the object that "
                  "needs it><TAB><library name>`.")
            out = "/app/out/missing.tsv"
        else:
            t.say("Which copies lost? For every library loaded, in load order, write one line per other file of "
                  "the same name found later in that lookup's search order (a directory listed twice is looked "
                  "at once): `<name><TAB><path loaded><TAB><path of the other copy>`, in search order.")
            out = "/app/out/shadowed.tsv"
        t.add_solution_file("ldso.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                f'python3 /solution/ldso.py /app/root "/app/units/$key.service" > {out}')
        t.expect_output(out, truth, {"resolve": "the load list", "missing": "the failed lookups",
                                     "shadowed": "the shadowed copies"}[v])
