"""How the job's process starts (shepherd/launch.py), on real spools: a command line without bash
(and bash taking over whenever the direct exec fails, with its usual answers), and a job of the
shepherd's own user posix_spawn'ed with its signals, process group and files as Popen gave them."""

from __future__ import annotations

import os
import shlex
import signal
from pathlib import Path

from tests.helpers.spools import exit_status, make_spool, run_shepherd


def command(*argv: str) -> str:
    return "exec " + " ".join(shlex.quote(word) for word in argv) + "\n"


def test_a_command_line_runs_without_bash(tmp_path: Path) -> None:
    """BASH_ENV is what a bash that runs a script reads first: a command line never starts one."""
    marker, bash_env = tmp_path / "bash-ran", tmp_path / "bash_env"
    bash_env.write_text(f"touch {marker}\n")
    environment = {"PATH": os.environ["PATH"], "BASH_ENV": str(bash_env)}
    spool = make_spool(tmp_path, command("/bin/sh", "-c", 'echo "$0 $PWD $SHLVL"'), environment=environment)
    assert run_shepherd(spool).wait(timeout=30) == 0
    assert exit_status(spool)["exit_code"] == 0
    assert (tmp_path / "out.txt").read_text() == f"/bin/sh {tmp_path} 0\n"
    assert not marker.exists()
    # The same command written as a script of its own goes through bash, which reads BASH_ENV.
    script = make_spool(tmp_path, "/bin/true\n", name="7.0.2", environment=environment)
    assert run_shepherd(script).wait(timeout=30) == 0
    assert marker.exists()


def test_the_command_is_looked_up_on_the_jobs_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "my-tool"
    tool.write_text("#!/bin/sh\necho tool \"$@\"\n")
    tool.chmod(0o755)
    spool = make_spool(tmp_path, command("my-tool", "a b"), environment={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    run_shepherd(spool).wait(timeout=30)
    assert (tmp_path / "out.txt").read_text() == "tool a b\n"


def test_a_command_not_found_is_bashs_127_with_its_message(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, command("no-such-command-here", "x"))
    run_shepherd(spool).wait(timeout=30)
    assert exit_status(spool)["exit_code"] == 127
    assert "no-such-command-here: not found" in (tmp_path / "out.txt").read_text()


def test_a_file_that_is_not_executable_is_bashs_126(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("echo never\n")
    spool = make_spool(tmp_path, command("./plain"))
    run_shepherd(spool).wait(timeout=30)
    assert exit_status(spool)["exit_code"] == 126
    assert "Permission denied" in (tmp_path / "out.txt").read_text()


def test_an_executable_without_a_shebang_runs_as_a_shell_script(tmp_path: Path) -> None:
    """execve refuses it (ENOEXEC); bash, taking over, runs it as a script, as it always did."""
    script = tmp_path / "steps"
    script.write_text("echo step one; exit 4\n")
    script.chmod(0o755)
    spool = make_spool(tmp_path, command("./steps"))
    run_shepherd(spool).wait(timeout=30)
    assert (tmp_path / "out.txt").read_text() == "step one\n"
    assert exit_status(spool)["exit_code"] == 4


def test_a_spawned_job_starts_clean(tmp_path: Path) -> None:
    """stdin /dev/null, its own process group, no signal blocked or ignored, no descriptor of the
    shepherd's beyond 0, 1 and 2, in its working directory. (The probe is exec'd by sh, so what
    it reads of /proc/self is what the job was given.)"""
    workdir = tmp_path / "work"
    workdir.mkdir()
    probe = ("readlink /proc/self/fd/0; echo $$; ps -o pgid= -p $$; pwd; ls /proc/self/fd | tr '\\n' ' '; echo; "
             "exec grep -E '^(SigBlk|SigIgn):' /proc/self/status")
    spool = make_spool(tmp_path, command("/bin/sh", "-c", probe), workdir=str(workdir), stdout=str(tmp_path / "out.txt"))
    run_shepherd(spool).wait(timeout=30)
    stdin, pid, pgid, cwd, fds, blocked, ignored = (tmp_path / "out.txt").read_text().splitlines()
    assert stdin == "/dev/null"
    assert pid == (spool / "job_pid").read_text().strip() == pgid.strip()
    assert cwd == str(workdir)
    assert fds.split() == ["0", "1", "2", "3"]  # 3: the directory ls reads
    # Among the signals a process can set: the C library keeps 32 and 33 for itself, and what the
    # daemons inherited there (a login may ignore them) no Python process can reset.
    settable = sum(1 << (int(n) - 1) for n in signal.valid_signals())
    assert [int(line.split()[1], 16) & settable for line in (blocked, ignored)] == [0, 0], (blocked, ignored)
