"""`make deb`'s package, built from the sources (scripts/build-deb.sh), installed with dpkg on this
machine and used by an ordinary user: `drover --version`, a personal cluster that runs a job,
`man drover-submit` found without a MANPATH, the completion where bash-completion looks; no path
of the build left in it; and `dpkg --purge` leaves nothing of it behind.

It installs into the system (/opt/venvs/drover, /usr/bin/drover, /usr/share), so it runs only
where no Drover package is installed already, in the packaging tests' one worker."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers import debian
from tests.helpers.users import LOGIN_PATH, run_as_user

pytestmark = [pytest.mark.xdist_group("wheel-install"), pytest.mark.timeout(600)]

REPOSITORY = Path(__file__).resolve().parents[3]
VENV = Path("/opt/venvs/drover")
# What pip says when neither its cache nor the package index has what it needs.
_UNREACHABLE = ("Could not find a version", "No matching distribution", "NewConnectionError",
                "Temporary failure in name resolution", "Max retries exceeded", "Network is unreachable")


def _installed_already() -> bool:
    status = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", "drover"], capture_output=True, text=True)
    return "installed" in status.stdout or VENV.exists() or os.path.lexists("/usr/bin/drover")


@pytest.fixture(scope="module")
def deb() -> Iterator[Path]:
    if os.geteuid() != 0 or not shutil.which("dpkg-deb"):
        pytest.skip("building and installing a Debian package needs root and dpkg-deb")
    if _installed_already():
        pytest.skip("a drover package (or /opt/venvs/drover, /usr/bin/drover) is on this machine already: "
                    "installing over it would change it")
    out = Path(tempfile.mkdtemp(prefix="drover-deb-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    try:
        built = subprocess.run([str(REPOSITORY / "scripts" / "build-deb.sh"), str(out)], capture_output=True,
                               text=True, env=env, timeout=540, cwd="/")
        output = "\n".join(line for line in (built.stdout + built.stderr).splitlines() if "is ignored" not in line)
        if built.returncode == 4 and any(marker in output for marker in _UNREACHABLE):
            pytest.skip(f"pip cannot get Drover's dependencies:\n{output[-1500:]}")
        assert built.returncode == 0, output[-3000:]
        (package,) = out.glob("drover_*.deb")
        yield package
    finally:
        shutil.rmtree(out, ignore_errors=True)


@pytest.fixture
def installed(deb: Path) -> Iterator[Path]:
    """The package installed for one test (which may purge it itself), purged afterwards."""
    had_service_user = subprocess.run(["getent", "passwd", "drover"], capture_output=True).returncode == 0
    result = debian.dpkg("-i", str(deb))
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        yield deb
    finally:
        debian.dpkg("--purge", "drover")
        if not had_service_user:
            from tests.helpers.system_install import remove_service_user

            remove_service_user()


def test_the_package_holds_no_path_of_its_build(deb: Path, tmp_path: Path) -> None:
    fields = subprocess.run(["dpkg-deb", "-f", str(deb), "Package", "Architecture", "Depends"],
                            capture_output=True, text=True, check=True).stdout
    assert "Package: drover" in fields and "python3 (>= 3.11)" in fields, fields
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path)], check=True)
    script = (tmp_path / "opt/venvs/drover/bin/drover").read_text()
    assert script.startswith("#!/opt/venvs/drover/bin/python"), script
    assert os.readlink(tmp_path / "usr/bin/drover") == "/opt/venvs/drover/bin/drover"
    leaked = subprocess.run(["grep", "-rlI", "/tmp/tmp.", str(tmp_path)], capture_output=True, text=True).stdout
    assert leaked == "", f"files naming the build's staging directory:\n{leaked}"
    assert not list(tmp_path.rglob("__pycache__")), "compiled at install, by root, not shipped"
    page = tmp_path / "usr/share/man/man1/drover-submit.1.gz"
    assert b"--array" in gzip.decompress(page.read_bytes()).replace(b"\\-", b"-")


def test_a_user_runs_a_job_from_the_installed_package_and_purging_removes_it(installed: Path, users: tuple[str, str]) -> None:
    user = users[0]
    env = {"PATH": LOGIN_PATH, "MANPATH": None}
    version = run_as_user(user, ["drover", "--version"], env=env)
    assert version.returncode == 0 and version.stdout.startswith("drover "), version
    assert subprocess.run(["getent", "passwd", "drover"], capture_output=True).returncode == 0  # postinst's
    assert list(VENV.rglob("__pycache__/*.pyc")), "postinst compiles the environment's modules"
    try:
        up = run_as_user(user, ["drover", "up"], env=env, timeout=120)
        assert up.returncode == 0, up
        ran = run_as_user(user, ["drover", "run", "--", "echo", "from the package"], env=env, timeout=120)
        assert ran.returncode == 0 and "from the package" in ran.stdout, ran
    finally:
        run_as_user(user, ["drover", "down"], env=env, timeout=120)
    if shutil.which("man"):
        found = run_as_user(user, ["man", "-w", "drover-submit"], env=env)
        assert found.stdout.strip() == "/usr/share/man/man1/drover-submit.1.gz", found
    completion = Path("/usr/share/bash-completion/completions/drover").read_text()
    assert completion == run_as_user(user, ["drover", "completion", "bash"], env=env).stdout
    units = Path("/lib/systemd/system/drover-execd.service").read_text()
    assert "ExecStart=/usr/bin/drover " in units, units
    # Purging it leaves nothing of it (the user drover and /var/lib/drover stay, as Debian keeps them).
    purged = debian.dpkg("--purge", "drover")
    assert purged.returncode == 0, purged.stdout + purged.stderr
    assert not VENV.exists() and not os.path.lexists("/usr/bin/drover")
    assert not Path("/usr/share/man/man1/drover-submit.1.gz").exists()
    assert not Path("/lib/systemd/system/drover-execd.service").exists()
