"""The systemd units `make install-system` installs (src/drover/data/systemd, written by `drover
install-units`): what they declare, and that what they start works. This machine runs no systemd, so each unit's commands run here as
systemd would run them (its ExecStartPre as root for a "+", ExecStart in the foreground as its
User= and Group= with no other groups, output appended to the unit's log, the pid written by its
ExecStartPost), with the install's `drover` and a temporary state directory in place of
/var/lib/drover: the controller runs as the service user drover, the execd as root; stopping the
execd signals its main process only (KillMode=process), and a job it was running goes on and is
reported by the next execd. Where systemd-analyze exists, the units are verified by it too."""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from tests.helpers.system_install import SystemInstall
from tests.helpers.wait import wait_until

from drover.config import SERVICE_USER

UNITS = Path(__file__).parents[3] / "src" / "drover" / "data" / "systemd"


def read_unit(name: str) -> dict[str, list[str]]:
    """Each key's values, in order (a unit may repeat a key)."""
    found: dict[str, list[str]] = {}
    for line in (UNITS / name).read_text().splitlines():
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


def test_the_units_declare_what_the_daemons_need() -> None:
    controller, execd = read_unit("drover-controller.service"), read_unit("drover-execd.service")
    for unit in (controller, execd):
        assert unit["Type"] == ["simple"] and unit["WantedBy"] == ["multi-user.target"]
        assert unit["Restart"] == ["on-failure"]
    # The controller runs as the service user; root ("+") first makes it if missing and gives it
    # the controller's files. No StateDirectory=: systemd would make the whole state directory
    # drover's, and root's files are in it.
    assert controller["User"] == [SERVICE_USER] and controller["Group"] == [SERVICE_USER]
    assert controller["ExecStartPre"] == ["+@BINDIR@/drover cluster init --system --state-dir /var/lib/drover"]
    assert all(command.startswith("+") for command in controller["ExecStartPost"] + controller["ExecStopPost"])
    assert "StateDirectory" not in controller
    assert "User" not in execd  # root's
    assert execd["StateDirectory"] == ["drover"] and execd["StateDirectoryMode"] == ["0711"]
    assert execd["KillMode"] == ["process"]  # jobs outlive a stop of their execd
    assert execd["Delegate"] == ["yes"]  # its attempts' cgroups beneath its own
    assert "drover-controller.service" in execd["After"][0]


def test_the_units_verify_where_systemd_analyze_is(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here; the units' commands are run by the next test")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "drover").write_text("#!/bin/sh\n")
    (bindir / "drover").chmod(0o755)
    units = []
    for name in ("drover-controller.service", "drover-execd.service"):
        (tmp_path / name).write_text((UNITS / name).read_text().replace("@BINDIR@", str(bindir)))
        units.append(str(tmp_path / name))
    checked = subprocess.run([analyze, "verify", *units], capture_output=True, text=True)
    # What it says of the units themselves (not of the host's other units it reads on the way).
    said = [line for line in checked.stderr.splitlines() if "drover-" in line]
    assert said == [], checked.stderr


def _start(unit: dict[str, list[str]], install: SystemInstall, state: Path) -> subprocess.Popen[bytes]:
    """The unit's commands, as systemd runs them, with the install and `state` in place."""
    def placed(text: str) -> str:
        return text.replace("@BINDIR@", str(install.bindir)).replace("/var/lib/drover", str(state))

    log = open(placed(unit["StandardOutput"][0]).removeprefix("append:"), "ab")  # opened by systemd, as root
    for pre in unit.get("ExecStartPre", []):
        assert pre.startswith("+"), pre  # as root
        subprocess.run(shlex.split(placed(pre.removeprefix("+"))), stdout=log, stderr=log, check=True)
    user = pwd.getpwnam(unit["User"][0]) if "User" in unit else None
    argv = [word for word in shlex.split(placed(unit["ExecStart"][0])) if not word.startswith("$")]
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                               user=user.pw_uid if user else None, group=user.pw_gid if user else None,
                               extra_groups=[] if user else None, cwd="/")
    log.close()
    post = placed(unit["ExecStartPost"][0].removeprefix("+")).replace("$MAINPID", str(process.pid))
    subprocess.run(shlex.split(post), check=True)
    return process


def test_what_the_units_start_runs_jobs_and_a_stopped_execd_leaves_them_running(
        system_install: SystemInstall) -> None:
    if os.geteuid() != 0:
        pytest.skip("the units run the execd as root, and the controller as the user root makes for it")
    state = Path(tempfile.mkdtemp(prefix="drs-", dir="/tmp"))
    os.chmod(state, 0o711)  # StateDirectoryMode
    (state / "drover.toml").write_text("[controller]\nallow_root_jobs = true\n")  # this test's jobs are root's
    controller_unit, execd_unit = read_unit("drover-controller.service"), read_unit("drover-execd.service")
    env = {"PATH": f"{system_install.bindir}:/usr/bin:/bin", "DROVER_SOCKET": str(state / "api.sock"),
           "HOME": "/root", "LANG": "C.UTF-8"}
    started: list[subprocess.Popen[bytes]] = []
    try:
        started.append(_start(controller_unit, system_install, state))
        wait_until(lambda: (state / "api.sock").exists(), describe="the controller's socket")
        started.append(_start(execd_unit, system_install, state))
        assert int((state / "execd.pid").read_text()) == started[1].pid  # as `drover up` reads it
        assert int((state / "controller.pid").read_text()) == started[0].pid
        assert os.stat(f"/proc/{started[0].pid}").st_uid == pwd.getpwnam(SERVICE_USER).pw_uid
        assert os.stat(f"/proc/{started[1].pid}").st_uid == 0

        def drover(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([system_install.drover, *args], capture_output=True, text=True, env=env,
                                  cwd=state, timeout=60)

        wait_until(lambda: '"up"' in drover("nodes", "--json").stdout, describe="the node up")
        flag = state / "go"
        job = drover("submit", "--parsable", "-D", str(state), "-o", "job.out", "--", "sh", "-c",
                     f"while [ ! -e {flag} ]; do sleep 0.1; done; echo went on").stdout.split()[0]
        wait_until(lambda: '"running"' in drover("show", "--json", job).stdout, describe="the job running")
        started[1].send_signal(signal.SIGTERM)  # KillMode=process: the main process only
        started[1].wait(timeout=30)
        subprocess.run(shlex.split(execd_unit["ExecStopPost"][0].replace("/var/lib/drover", str(state))), check=True)
        assert not (state / "execd.pid").exists()
        started[1] = _start(execd_unit, system_install, state)  # Restart=, or the next boot
        flag.touch()
        assert drover("wait", "--timeout", "60", job).returncode == 0
        assert (state / "job.out").read_text() == "went on\n"
        assert "execd INFO node" in (state / "execd.log").read_text()  # StandardOutput=append:
    finally:
        for process in reversed(started):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
        shutil.rmtree(state, ignore_errors=True)
