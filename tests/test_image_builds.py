"""Image builds that install packages: a task's environment/setup.sh runs apt-get and pip with the
network on, under each native backend; what it installed runs in a sandbox started from the built
environment, the setup layer is cached, and nothing of the build's own support stays behind."""

from __future__ import annotations

import socket
import time

import pytest

from tmax.images import BUILD_DIR, ImageError, task_environment
from tmax.sandbox import get_backend, network
from tmax.task import Resources, load_task, write_task

pytestmark = pytest.mark.image

MIRRORS = (("deb.debian.org", 80), ("pypi.org", 443))  # Debian's packages first, then PyPI
SETUP = """set -euo pipefail
# backend: {backend} (each backend builds a layer of its own)
apt-get update
apt-get install -y --no-install-recommends hello
rm -rf /var/lib/apt/lists/*
pip install tomli-w==1.0.0
cat /proc/sys/kernel/random/uuid > /etc/build-id
"""


def offline_reason() -> str | None:
    """Why setup here cannot reach Debian's mirror and PyPI (None when it can)."""
    for host, port in MIRRORS:
        try:
            socket.create_connection((host, port), timeout=10).close()
        except OSError as e:
            return f"{host}:{port} is unreachable from this machine ({e})"
    ok, why = network.available()
    return None if ok else f"sandboxes cannot get a network here: {why}"


def write_setup_task(dest, setup: str, online: bool = True):
    return load_task(write_task(dest, name="installs", instruction="Nothing to do.",
                                files={"environment/setup.sh": setup, "tests/test.sh": "exit 0\n"},
                                metadata={"image": "default"}, resources=Resources(allow_internet=online)))


@pytest.fixture(scope="module", params=["bwrap", "unshare"])
def built(request, tmp_path_factory, default_image):
    """(backend, task dir, environment, seconds the first build took) for a task that installs."""
    backend = request.param
    ok, why = get_backend(backend).available()
    if not ok:
        pytest.skip(why)
    offline = offline_reason()
    if offline:
        pytest.skip(offline)
    task = write_setup_task(tmp_path_factory.mktemp(f"installs-{backend}") / "task", SETUP.format(backend=backend))
    started = time.monotonic()
    env = task_environment(task, backend)
    return backend, task.path, env, time.monotonic() - started


def run_in(backend: str, env, command: str) -> str:
    """Output of ``command`` in a fresh sandbox on ``env`` (no network: as agents and verifiers get it)."""
    with get_backend(backend).start(env.spec()) as sb:
        r = sb.exec(command, timeout=60)
    assert r.exit_code == 0, r.output
    return r.output


def test_apt_and_pip_installs_of_setup_run_in_a_sandbox_of_the_environment(built):
    backend, _, env, _ = built
    assert run_in(backend, env, "hello").strip() == "Hello, world!"
    out = run_in(backend, env, "python3 -c 'import tomli_w; print(tomli_w.dumps({\"built\": True}))'")
    assert out.strip() == "built = true"


def test_a_second_build_reuses_the_cached_layer(built):
    backend, task_dir, env, first_build = built
    build_id = run_in(backend, env, "cat /etc/build-id").strip()
    started = time.monotonic()
    again = task_environment(load_task(task_dir), backend)
    assert again == env
    assert time.monotonic() - started < min(2.0, first_build)
    # A re-run would have drawn a new id.
    assert run_in(backend, again, "cat /etc/build-id").strip() == build_id


def test_the_build_support_stays_out_of_the_layer_and_of_later_sandboxes(built):
    backend, _, env, _ = built
    layer = env.layers[0]
    assert (layer / "usr/bin/hello").is_file()
    assert not (layer / BUILD_DIR.lstrip("/")).exists()
    assert not (layer / "root/.cache/pip").exists()  # pip kept no cache in the layer
    out = run_in(backend, env, f"test ! -e {BUILD_DIR} && echo APT_CONFIG=${{APT_CONFIG-unset}} "
                               "PIP_BREAK_SYSTEM_PACKAGES=${PIP_BREAK_SYSTEM_PACKAGES-unset} && "
                               "apt-config dump | grep -x 'APT::Sandbox::User \"_apt\";'")
    assert "APT_CONFIG=unset PIP_BREAK_SYSTEM_PACKAGES=unset" in out
    assert 'APT::Sandbox::User "_apt";' in out  # apt keeps its own privilege separation


def test_a_failing_install_names_the_setup_script(tmp_path, default_image, bwrap):
    task = write_setup_task(tmp_path / "task", "set -e\napt-get install -y tmax-no-such-package\n", online=False)
    with pytest.raises(ImageError, match=r"(?s)environment/setup\.sh: setup failed \(exit 100\).*tmax-no-such-package"):
        task_environment(task, bwrap)
