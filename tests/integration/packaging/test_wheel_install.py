"""Drover as a user gets it without the repository: the wheel built from the sources, installed
into a fresh virtual environment (from local files alone: the wheel and its dependencies'), and
used by an ordinary user in their home directory: `drover --version` and `--help`, bash
completion of `drover sub` to `submit`, the man page of drover-submit found by man through
PATH and rendered, and `drover install-units --prefix` writing the units.

Its tests share one build and install (the module's fixture), so they run in one xdist worker."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.helpers.users import LOGIN_PATH, run_as_user

pytestmark = [pytest.mark.xdist_group("wheel-install"), pytest.mark.timeout(300)]

REPOSITORY = Path(__file__).resolve().parents[3]
SYSTEM_PYTHON = "/usr/bin/python3"
# What pip says when neither its cache nor the package index has what it needs.
_UNREACHABLE = ("Could not find a version", "No matching distribution", "NewConnectionError",
                "Temporary failure in name resolution", "Max retries exceeded", "Network is unreachable")


@dataclass(frozen=True)
class Installed:
    venv: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self) -> dict[str, str | None]:
        """A login's environment with the venv's bin first on PATH, as after activating it."""
        return {"PATH": f"{self.bin}:{LOGIN_PATH}", "MANPATH": None, "COLUMNS": "100"}


def _pip(*args: str, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    started = time.monotonic()
    try:
        return _run_pip(python, args, env)
    finally:
        print(f"pip {args[0]}: {time.monotonic() - started:.1f}s")


def _run_pip(python: str, args: tuple[str, ...], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "pip", "--disable-pip-version-check", *args], capture_output=True,
                          text=True, env=env, timeout=240, cwd="/")


def _needed(result: subprocess.CompletedProcess[str], what: str) -> None:
    if result.returncode == 0:
        return
    output = "\n".join(line for line in (result.stdout + result.stderr).splitlines() if "is ignored" not in line)
    if any(marker in output for marker in _UNREACHABLE):
        pytest.skip(f"{what}: pip cannot get what it needs from its cache or the package index:\n{output[-1500:]}")
    raise AssertionError(f"{what} failed:\n{output[-3000:]}")


@pytest.fixture(scope="module")
def installed() -> Iterator[Installed]:
    version = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                             capture_output=True, text=True) if os.path.exists(SYSTEM_PYTHON) else None
    if version is None or version.stdout.strip() != "True":
        pytest.skip(f"Drover needs Python 3.11 or later at {SYSTEM_PYTHON}, which every user may run")
    root = Path(tempfile.mkdtemp(prefix="drover-wheel-", dir="/tmp"))
    os.chmod(root, 0o755)  # the test user runs the venv's programs
    umask = os.umask(0o022)  # ...and reads its files, as those of a pip install for everyone
    try:
        # From a copy of what the sdist holds, so the build leaves nothing in the checkout.
        source = root / "source"
        source.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(REPOSITORY / name, source / name)
        shutil.copytree(REPOSITORY / "src", source / "src",
                        ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
        wheels = root / "wheels"
        _needed(_pip("wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), str(source)), "building the wheel")
        (wheel,) = wheels.glob("drover-*.whl")
        _needed(_pip("download", "--quiet", "--dest", str(wheels), str(wheel)), "getting the dependencies' wheels")
        venv = root / "venv"
        # The system's python, which every user may run (this test's may live under /root).
        made = subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120)
        if made.returncode != 0:
            pytest.skip(f"{SYSTEM_PYTHON} cannot make a virtual environment: {made.stderr.strip()[-500:]}")
        _needed(_pip("install", "--quiet", "--no-index", "--find-links", str(wheels), str(wheel),
                     python=str(venv / "bin" / "python")), "installing the wheel with --no-index")
        shutil.rmtree(source)
        os.umask(umask)
        yield Installed(venv)
    finally:
        os.umask(umask)
        shutil.rmtree(root, ignore_errors=True)


def _as(user: str, installed: Installed, *argv: str) -> subprocess.CompletedProcess[str]:
    return run_as_user(user, argv, env=installed.env())


def test_drover_and_the_front_ends_run_as_a_user(installed: Installed, users: tuple[str, str]) -> None:
    user = users[0]
    version = _as(user, installed, "drover", "--version")
    assert version.returncode == 0 and version.stdout.startswith("drover "), version
    helped = _as(user, installed, "drover", "--help")
    assert helped.returncode == 0 and "install-units" in helped.stdout and "completion" in helped.stdout
    submit = _as(user, installed, "drover", "submit", "--help")
    assert submit.returncode == 0 and "--array" in submit.stdout
    # The front ends are opt-in: none beside drover, where they would hide a real Slurm's.
    assert not any((installed.bin / front_end).exists() for front_end in ("sbatch", "squeue", "qsub", "qstat"))
    assert not list((installed.venv / "share" / "man" / "man1").glob("sbatch*"))
    front_ends = Path(tempfile.mkdtemp(prefix="drover-front-ends-", dir="/tmp"))
    try:
        os.chmod(front_ends, 0o777)
        assert _as(user, installed, "drover", "compat", "install", str(front_ends)).returncode == 0
        sbatch = _as(user, installed, str(front_ends / "sbatch"), "--version")
        assert sbatch.returncode == 0 and "slurm" in sbatch.stdout.lower(), sbatch
    finally:
        shutil.rmtree(front_ends, ignore_errors=True)


def test_the_wheel_ships_the_dashboards_style_and_script(installed: Installed, users: tuple[str, str]) -> None:
    code = ("from importlib import resources\n"
            "static = resources.files('drover.web').joinpath('static')\n"
            "print(sorted(name for name in ('dashboard.css', 'dashboard.js') if static.joinpath(name).read_bytes()))")
    shipped = _as(users[0], installed, str(installed.bin / "python"), "-c", code)
    assert shipped.returncode == 0 and shipped.stdout.strip() == "['dashboard.css', 'dashboard.js']", shipped


def test_bash_completion_completes_sub_to_submit(installed: Installed, users: tuple[str, str]) -> None:
    probe = ('eval "$(drover completion bash)"; complete -p drover; '
             'COMP_WORDS=(drover sub); COMP_CWORD=1; COMP_LINE="drover sub"; COMP_POINT=${#COMP_LINE}; '
             'func=$(complete -p drover | sed -n "s/.* -F \\([^ ]*\\) .*/\\1/p"); "$func"; '
             'printf "reply:%s\\n" "${COMPREPLY[@]}"')
    result = _as(users[0], installed, "bash", "--norc", "--noprofile", "-c", probe)
    assert result.returncode == 0, result
    assert "reply:submit" in result.stdout.splitlines(), result.stdout
    shipped = installed.venv / "share" / "bash-completion" / "completions" / "drover"
    assert shipped.read_text() == _as(users[0], installed, "drover", "completion", "bash").stdout


def test_man_finds_and_renders_drover_submit(installed: Installed, users: tuple[str, str]) -> None:
    page = installed.venv / "share" / "man" / "man1" / "drover-submit.1"
    assert page.is_file()
    if shutil.which("man"):
        # man-db looks in ../share/man of each directory on PATH: no MANPATH needed in a venv.
        found = _as(users[0], installed, "man", "-w", "drover-submit")
        assert found.returncode == 0 and found.stdout.strip() == str(page), found
        shown = _as(users[0], installed, "man", "-P", "cat", "drover-submit")
    else:
        shown = _as(users[0], installed, "groff", "-man", "-Tutf8", str(page))
    assert shown.returncode == 0, shown
    text = shown.stdout.replace("\u2010", "-")
    assert "DROVER-SUBMIT(1)" in text and "--array" in text and "SYNOPSIS" in text


def test_install_units_writes_the_units_into_prefix_and_refuses_the_system_directory(
        installed: Installed, users: tuple[str, str]) -> None:
    user = users[0]
    target = f"/tmp/{user}-work/units"
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.chown(os.path.dirname(target), user)
    written = _as(user, installed, "drover", "install-units", "--prefix", target)
    assert written.returncode == 0, written
    assert sorted(os.listdir(target)) == ["drover-controller.service", "drover-execd.service"]
    execd = Path(target, "drover-execd.service").read_text()
    assert f"ExecStart={installed.bin}/drover execd" in execd
    refused = _as(user, installed, "drover", "install-units")
    assert refused.returncode != 0 and "needs root" in refused.stderr, refused
    assert not os.path.exists("/etc/systemd/system/drover-execd.service.tmp")
