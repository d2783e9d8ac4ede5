#!/usr/bin/env bash
# Install podman + runc (and the helpers rootless podman wants) and check that the engine answers.
# Idempotent: packages already present are not reinstalled. Needs root (apt-get).
#
# Facts this relies on (docs/MACHINE.md): Debian 12 ships podman 4.3.1, which works here only with
# the runc runtime (crun fails on hybrid cgroups) and with default ulimits at or under the host's
# hard limits. tmax's podman backend writes its own containers.conf under $TMAX_HOME and points
# CONTAINERS_CONF at it; this script uses an equivalent temporary one for its check.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
    echo "setup-podman.sh: needs root (apt-get install)" >&2
    exit 1
fi

packages=(podman runc uidmap slirp4netns)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
        apt-get update
        apt-get install -y --no-install-recommends "${missing[@]}"
    fi
else
    echo "already installed: ${packages[*]}"
fi

nofile_hard=$(ulimit -Hn)
nproc_hard=$(ulimit -Hu)
lim() { # min(want, hard) where hard may be "unlimited"
    if [[ $2 == unlimited || $2 -ge $1 ]]; then echo "$1"; else echo "$2"; fi
}
conf=$(mktemp --suffix=.conf)
trap 'rm -f "$conf"' EXIT
cat >"$conf" <<CONF
[containers]
default_ulimits = ["nofile=$(lim 20000 "$nofile_hard"):$(lim 20000 "$nofile_hard")", "nproc=$(lim 4096 "$nproc_hard"):$(lim 4096 "$nproc_hard")"]

[engine]
runtime = "runc"
CONF

export CONTAINERS_CONF=$conf
if ! podman info --format '{{.Version.Version}} runtime={{.Host.OCIRuntime.Name}} storage={{.Store.GraphDriverName}}'; then
    echo "setup-podman.sh: podman is installed but 'podman info' failed" >&2
    exit 1
fi
echo "podman OK"
