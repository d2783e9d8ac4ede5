"""Dockerfiles both ways: render one that rebuilds a tmax environment from a public Debian base, and
translate a foreign one into an ``environment/setup.sh`` for the default image when that is possible.

A tmax environment is an image profile (debootstrap of a Debian suite plus packages) with the task's
``environment/setup.sh`` run once as root in ``/app`` with ``environment/`` at ``/environment``. The
rendered Dockerfile does the same on ``debian:<suite>-slim``. It carries a ``# tmax-image:`` line
so that an import recognises it (and re-renders it to check it was not edited).

Translation is deliberately narrow: one stage, a base that is Debian/Ubuntu/python-slim, and only
``apt-get install`` / ``pip install`` of what the image already has, ``COPY``/``ADD`` of local files,
``WORKDIR``, ``ENV``/``ARG`` and ``RUN``. Setup runs without network unless the task allows it, so
anything that would fetch is refused (the task then keeps its Dockerfile and a container engine
builds it).
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from tmax.images import image_dir, load_profile
from tmax.sandbox.base import BASE_ENV

MARKER = "# tmax-image: "
UBUNTU_SUITES = {"focal", "jammy", "noble", "oracular", "plucky"}
# Environment variables that matter only while building: safe to set in setup.sh alone.
BUILD_ONLY_ENV = {"DEBIAN_FRONTEND", "PIP_NO_CACHE_DIR", "PIP_DISABLE_PIP_VERSION_CHECK", "PYTHONUNBUFFERED",
                  "PYTHONDONTWRITEBYTECODE", "PIP_BREAK_SYSTEM_PACKAGES", "LANG", "LC_ALL", "TZ", "TERM"}
IGNORED = {"LABEL", "MAINTAINER", "EXPOSE", "STOPSIGNAL", "ONBUILD"}  # no effect on what runs
# Harbor's environments start the main container with ``command: sh -c "sleep infinity"``: an
# ENTRYPOINT runs with those arguments (an entrypoint script starts its service, then execs them),
# and CMD never runs.
KEEPALIVE = ["sh", "-c", "sleep infinity"]
FETCHERS = re.compile(r"(^|[\s;&|(])(curl|wget|git\s+clone|npm|npx|yarn|uv|uvx|cargo\s+install|go\s+(get|install)"
                      r"|gem\s+install|apt|apt-get|aptitude|pip3?|add-apt-repository)(\s|$)")


def base_image(suite: str) -> str:
    return f"ubuntu:{suite}" if suite in UBUNTU_SUITES else f"debian:{suite}-slim"


def render(profile_name: str, context: str = ".") -> str:
    """The Dockerfile of a tmax environment. ``context`` is where environment/ lies relative to the
    build context (Harbor: the context is environment/ itself; Terminal-Bench 1: the task dir)."""
    p = load_profile(profile_name)
    env = " ".join(f"{k}={v}" for k, v in sorted(BASE_ENV.items()) if k not in ("TERM", "USER", "SHELL", "HOME"))
    lines = [
        f"# Rebuilds the tmax image profile {p.name!r} ({p.suite}, {p.variant}) and runs the task's setup.",
        f"{MARKER}{p.name}",
        f"FROM {base_image(p.suite)}",
        f"ENV {env}",
        "RUN apt-get update \\",
        "    && apt-get install -y --no-install-recommends \\",
        *[f"       {pkg} \\" for pkg in p.apt],
        "    && rm -rf /var/lib/apt/lists/*",
    ]
    if p.pip:
        lines.append("RUN python3 -m pip install --break-system-packages --no-cache-dir " + " ".join(p.pip))
    src = context.rstrip("/") + "/" if context != "." else "."
    lines += [
        f"COPY {src} /environment/",
        "# setup.sh runs once, as root, in /app, with environment/ at /environment (as tmax does).",
        "RUN mkdir -p /app && cd /app && if [ -f /environment/setup.sh ]; then bash /environment/setup.sh; fi \\",
        "    && rm -rf /environment",
        "WORKDIR /app",
        "",
    ]
    return "\n".join(lines)


def tmax_image_of(text: str) -> str | None:
    """The profile a Dockerfile rendered by :func:`render` names, if it is one."""
    for line in text.splitlines():
        if line.startswith(MARKER):
            return line[len(MARKER):].strip()
    return None


# -- translation ------------------------------------------------------------------------------

@dataclass
class Translation:
    ok: bool
    setup: str = ""  # setup.sh text when ok
    reasons: list[str] = field(default_factory=list)  # why not, when not ok
    notes: list[str] = field(default_factory=list)  # approximations made when ok
    copied: list[str] = field(default_factory=list)  # context paths the setup reads
    env: dict[str, str] = field(default_factory=dict)  # ENV: set at run time too
    workdir: str = "/app"  # the final WORKDIR: where the agent starts
    entrypoint: list[str] | None = None  # ENTRYPOINT / CMD as argv (the shell form as /bin/sh -c)
    cmd: list[str] | None = None

    @property
    def service(self) -> str | None:
        """What Harbor's main container runs: the ENTRYPOINT with its keep-alive arguments (CMD never)."""
        return shlex.join(self.entrypoint + KEEPALIVE) if self.entrypoint else None
    fetches: bool = False  # setup fetches (apt, pip, curl): the build needs the network


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: comments dropped, continuations joined."""
    out: list[tuple[str, str]] = []
    cur = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not cur and (not line or line.startswith("#")):
            continue
        if cur and line.startswith("#"):
            continue  # comments inside a continued instruction are dropped by Docker too
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        kw, _, rest = cur.strip().partition(" ")
        out.append((kw.upper(), rest.strip()))
        cur = ""
    if cur.strip():
        kw, _, rest = cur.strip().partition(" ")
        out.append((kw.upper(), rest.strip()))
    return out


def supported_base(ref: str) -> str | None:
    """Why a FROM image cannot stand for the default image, or None if it can."""
    name = ref.split("@")[0].rsplit("/", 1)[-1]
    repo, _, tag = name.partition(":")
    if repo == "debian" and (tag == "" or tag.startswith(("bookworm", "12", "stable", "latest"))):
        return None
    if repo == "ubuntu":
        return None
    if repo == "python" and (tag == "" or "alpine" not in tag) and not any(s in tag for s in ("bullseye", "buster")):
        return None
    if re.fullmatch(r"python-3-\d+|ubuntu-\d+-\d+|debian-\d+", repo):  # Terminal-Bench 1's base images
        return None
    return f"base image {ref!r} is not Debian bookworm, Ubuntu or python-slim"


@lru_cache(maxsize=4)
def image_inventory(profile_name: str = "default") -> tuple[frozenset[str], frozenset[str]]:
    """(Debian packages, normalised Python distributions) the built image holds; the profile's list
    when the image is not built here."""
    p = load_profile(profile_name)
    rootfs = image_dir(p) / "rootfs"
    debs: set[str] = set(p.apt)
    status = rootfs / "var" / "lib" / "dpkg" / "status"
    if status.is_file():
        debs |= {line.split(":", 1)[1].strip() for line in status.read_text(errors="replace").splitlines()
                 if line.startswith("Package:")}
    dists: set[str] = {_norm(x) for x in p.pip}
    for d in (rootfs / "usr/lib/python3/dist-packages", *rootfs.glob("usr/local/lib/python3*/dist-packages")):
        if d.is_dir():
            dists |= {_norm(re.split(r"-\d", e.name, maxsplit=1)[0]) for e in d.iterdir()
                      if e.name.endswith((".dist-info", ".egg-info"))}
    return frozenset(debs), frozenset(dists)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class _Refuse(Exception):
    pass


def translate(text: str, context: Path, allow_internet: bool = False, profile: str = "default") -> Translation:
    """Translate a Dockerfile whose build context is ``context`` into a setup.sh for ``profile``."""
    tr = Translation(ok=False)
    debs, dists = image_inventory(profile)
    body: list[str] = []
    workdir = "/"
    env: dict[str, str] = {}
    froms = 0
    try:
        for kw, args in instructions(text):
            if kw == "FROM":
                froms += 1
                if froms > 1:
                    raise _Refuse("multi-stage build (several FROM lines)")
                why = supported_base(args.split()[0] if args else "")
                if why:
                    raise _Refuse(why)
                if "python" in args and "3.11" not in args:
                    tr.notes.append(f"FROM {args}: the image's Python is 3.11")
            elif kw in IGNORED:
                continue
            elif kw in ("ENTRYPOINT", "CMD"):
                if kw == "ENTRYPOINT":
                    tr.entrypoint, tr.cmd = _argv(args), None  # Docker resets CMD with a new ENTRYPOINT
                else:
                    tr.cmd = _argv(args)
            elif kw in ("HEALTHCHECK", "VOLUME"):
                tr.notes.append(f"{kw} {args[:60]} is not carried (Harbor reads [environment.healthcheck])"
                                if kw == "HEALTHCHECK" else f"VOLUME {args[:60]}: an ordinary directory here")
            elif kw in ("ENV", "ARG"):
                for k, v in _assignments(args, kw):
                    env[k] = _expand(v, env)
                    if kw == "ENV" and k not in BUILD_ONLY_ENV:
                        tr.env[k] = env[k]
                    body.append(f"export {k}={shlex.quote(env[k])}")
            elif kw == "WORKDIR":
                workdir = _resolve(workdir, _expand(args, env))
                body.append(f"mkdir -p {shlex.quote(workdir)}")
            elif kw in ("COPY", "ADD"):
                body += _copy(kw, args, context, workdir, env, tr)
            elif kw == "USER":
                if args.split(":")[0] not in ("root", "0"):
                    raise _Refuse(f"USER {args}: the sandbox runs as root")
            elif kw == "SHELL":
                raise _Refuse("SHELL changes how RUN lines are interpreted")
            elif kw == "RUN":
                body += _run(args, workdir, debs, dists, allow_internet, tr)
            else:
                raise _Refuse(f"unknown instruction {kw}")
        if froms == 0:
            raise _Refuse("no FROM line")
        tr.workdir = "/app" if workdir == "/" else workdir
    except _Refuse as e:
        tr.reasons.append(str(e))
        return tr
    head = ["#!/bin/bash", "# Translated from a Dockerfile by tmax import; runs once, as root, in /app.",
            "set -euo pipefail"]
    tr.setup = "\n".join(head + body + [""])
    tr.ok = True
    return tr


def _argv(args: str) -> list[str]:
    """ENTRYPOINT / CMD arguments as argv: the exec form as written, the shell form through /bin/sh."""
    if args.startswith("["):
        import json

        try:
            return [str(a) for a in json.loads(args)]
        except ValueError:
            pass  # not JSON: Docker runs it in the shell form
    return ["/bin/sh", "-c", args]


def _assignments(args: str, kw: str) -> list[tuple[str, str]]:
    parts = shlex.split(args)
    if kw == "ENV" and len(parts) >= 2 and "=" not in parts[0]:
        return [(parts[0], " ".join(parts[1:]))]  # legacy ``ENV KEY value``
    out = []
    for p in parts:
        k, eq, v = p.partition("=")
        if kw == "ARG" and not eq:
            continue  # an ARG without default stays unset, as in a build without --build-arg
        out.append((k, v))
    return out


def _expand(s: str, env: dict[str, str]) -> str:
    """``$VAR``, ``${VAR}`` and ``${VAR:-default}`` as Docker expands them: the Dockerfile's ENV and ARG,
    else the image's own environment (``$PATH``), else the default or nothing."""
    def value(m: re.Match) -> str:
        name = m.group(1) or m.group(3)
        got = env.get(name, BASE_ENV.get(name))
        return (m.group(2) or "") if not got else got
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)", value, s)


def _resolve(cwd: str, path: str) -> str:
    p = Path(path) if path.startswith("/") else Path(cwd) / path
    parts: list[str] = []
    for part in p.parts[1:]:
        if part == "..":
            parts = parts[:-1]
        elif part not in (".", ""):
            parts.append(part)
    return "/" + "/".join(parts)


def _copy(kw: str, args: str, context: Path, workdir: str, env: dict[str, str], tr: Translation) -> list[str]:
    words = shlex.split(args)
    if words and words[0].startswith("["):  # JSON form
        import json

        words = json.loads(args)
    flags = [w for w in words if w.startswith("--")]
    paths = [_expand(w, env) for w in words if not w.startswith("--")]
    chown = None
    for f in flags:
        if f.startswith("--chown="):
            chown = f.split("=", 1)[1]
        elif f.startswith("--from"):
            raise _Refuse(f"{kw} {f}: copies from another image")
        else:
            raise _Refuse(f"{kw} flag {f} is not translated")
    if len(paths) < 2:
        raise _Refuse(f"{kw} {args}: expected sources and a destination")
    *srcs, dest = paths
    dest_abs = _resolve(workdir, dest)
    into_dir = dest.endswith("/") or len(srcs) > 1
    out = []
    for src in srcs:
        if re.match(r"^[a-z]+://", src):
            raise _Refuse(f"{kw} {src}: fetches a URL")
        rel = _resolve("/", src).lstrip("/")
        matches = sorted(p for p in context.glob(rel) if p.exists()) if any(c in rel for c in "*?[") else \
            ([context / rel] if rel else [context])
        if not matches or not all(m.exists() for m in matches):
            raise _Refuse(f"{kw} {src}: no such file in the build context {context}")
        if kw == "ADD" and any(fnmatch.fnmatch(m.name, pat) for m in matches
                               for pat in ("*.tar", "*.tar.*", "*.tgz")):
            raise _Refuse(f"ADD {src}: ADD would unpack an archive")
        for m in matches:
            r = m.relative_to(context).as_posix() if m != context else ""
            tr.copied.append(r or ".")
            s = shlex.quote(f"/environment/{r}".rstrip("/"))
            if m.is_dir():
                out.append(f"mkdir -p {shlex.quote(dest_abs)} && cp -R --preserve=mode,timestamps {s}/. "
                           f"{shlex.quote(dest_abs)}/")
            elif into_dir or len(matches) > 1:
                out.append(f"mkdir -p {shlex.quote(dest_abs)} && cp --preserve=mode,timestamps {s} "
                           f"{shlex.quote(dest_abs)}/")
            else:
                out.append(f"mkdir -p {shlex.quote(str(Path(dest_abs).parent))} && "
                           f"cp --preserve=mode,timestamps {s} {shlex.quote(dest_abs)}")
    if chown:
        out.append(f"chown -R {shlex.quote(chown)} {shlex.quote(dest_abs)}")
    return out


def _run(args: str, workdir: str, debs: frozenset[str], dists: frozenset[str], allow_internet: bool,
         tr: Translation) -> list[str]:
    if args.startswith("["):
        import json

        args = " ".join(shlex.quote(a) for a in json.loads(args))
    if args.startswith("--"):
        raise _Refuse(f"RUN {args.split()[0]}: build mounts are not translated")
    if not FETCHERS.search(args):
        return [f"(cd {shlex.quote(workdir)} && sh -c {shlex.quote(args)})"]
    kept: list[str] = []
    # Split the chain on && so that package steps can be checked one by one.
    for seg in (s.strip() for s in args.split("&&")):
        if not seg:
            continue
        words = shlex.split(seg)
        words = [w for w in words if not re.fullmatch(r"[A-Z_]+=\S*", w)] or [""]  # FOO=1 cmd ...
        cmd = words[0]
        if cmd in ("apt-get", "apt") and len(words) > 1:
            verb = next((w for w in words[1:] if not w.startswith("-")), "")
            if verb in ("update", "clean", "autoremove", "autoclean"):
                continue
            if verb == "install":
                pkgs = [w.split("=")[0] for w in words[words.index(verb) + 1:] if not w.startswith("-")]
                missing = [p for p in pkgs if p.split(":")[0] not in debs]
                if missing and not allow_internet:
                    raise _Refuse(f"apt-get install {' '.join(missing)}: not in the default image and the build "
                                  "has no network")
                if missing:  # the build has the network: apt fetches what the image lacks
                    kept.append("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y "
                                "--no-install-recommends " + " ".join(shlex.quote(p) for p in missing))
                    tr.fetches = True
                if any("=" in w for w in words if not w.startswith("-")):
                    tr.notes.append(f"apt-get install {' '.join(pkgs)}: versions not pinned")
                continue
            if allow_internet:  # another apt verb (apt-get upgrade, ...): as written
                kept.append(seg)
                tr.fetches = True
                continue
        if seg.startswith("rm -rf /var/lib/apt/lists") or seg.startswith("rm -rf /var/cache/apt"):
            continue
        if cmd in ("pip", "pip3") or words[:3] in (["python", "-m", "pip"], ["python3", "-m", "pip"]):
            rest = words[3:] if cmd.startswith("python") else words[1:]
            if rest and rest[0] == "install":
                specs = [w for w in rest[1:] if not w.startswith("-")]
                if any(w in ("-r", "--requirement", "-e", "--editable") for w in rest):
                    raise _Refuse(f"RUN {seg}: requirement files and editable installs are not translated")
                missing = [s for s in specs if _norm(re.split(r"[<>=!~\[; ]", s)[0]) not in dists]
                if not missing:
                    tr.notes.append(f"pip install {' '.join(specs)}: already in the image (versions not pinned)")
                    continue
                if not allow_internet:
                    raise _Refuse(f"pip install {' '.join(missing)}: not in the default image and the task has "
                                  "no network")
                kept.append("python3 -m pip install --break-system-packages " + " ".join(shlex.quote(w) for w in rest[1:]))
                tr.fetches = True
                continue
        if FETCHERS.search(seg):
            if not allow_internet:
                raise _Refuse(f"RUN {seg[:80]}: needs the network, which the build does not have")
            tr.fetches = True
        kept.append(seg)
    if not kept:
        return []
    return [f"(cd {shlex.quote(workdir)} && sh -c {shlex.quote(' && '.join(kept))})"]
