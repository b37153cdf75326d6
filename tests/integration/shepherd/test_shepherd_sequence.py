"""The shepherd on a real spool directory, run as `python -m drover.shepherd SPOOL` (or through
the fork server), with real jobs and real signals."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from tests.helpers.spools import exit_status, make_spool, run_shepherd, usage
from tests.helpers.wait import wait_until

from drover.execd.forkserver import ForkServer
from drover.spool import layout
from drover.spool.process import is_alive, read_pid_record


def wait_for_loop(spool: Path) -> None:
    """The job's trap is set on its script's first line; a sleep of its loop shows it got past it."""
    wait_until(lambda: (spool / "job_pid").exists()
               and len(psutil.Process(int((spool / "job_pid").read_text())).children()) > 0,
               describe="the job's loop to run")


def test_a_job_runs_and_its_exit_code_usage_and_pids_are_recorded(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "for i in $(seq 1 20000); do :; done; echo hi; exit 3\n")
    assert run_shepherd(spool).wait(timeout=30) == 0
    assert exit_status(spool) == {"exit_code": 3, "signal": None, "failure": None, "timed_out": False,
                                  "terminated": False, "out_of_memory": False, "methods": []}
    used = usage(spool)  # in the exit record, written with it
    assert used["user_cpu_s"] > 0 and used["wall_s"] > 0
    # bash's few MiB stay under the mark its process started from, the shepherd's: not known.
    assert used["max_rss_kib"] == 0 and used["max_rss_inherited_kib"] > 0
    assert (tmp_path / "out.txt").read_text() == "hi\n"
    pid, starttime = read_pid_record(str(spool / "pid"))  # type: ignore[misc]
    assert pid > 0 and starttime and not is_alive(pid, starttime)
    assert int((spool / "job_pid").read_text()) > 0
    assert not (spool / "tmp").exists()  # the attempt's TMPDIR is removed afterwards


def test_stdin_is_dev_null_and_the_job_leads_its_own_process_group(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "readlink /proc/self/fd/0; ps -o pgid= -p $$; echo $$; "
                       "grep -E '^SigBlk' /proc/self/status\n")
    run_shepherd(spool).wait(timeout=30)
    lines = (tmp_path / "out.txt").read_text().split("\n")
    assert lines[0] == "/dev/null"
    assert lines[1].strip() == lines[2].strip()
    assert "SigBlk:\t0000000000000000" in lines[3]


def test_stderr_separate_and_append_mode(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("before\n")
    spool = make_spool(tmp_path, "echo out; echo err >&2\n", stderr=str(tmp_path / "err.txt"), open_mode="append")
    run_shepherd(spool).wait(timeout=30)
    assert (tmp_path / "out.txt").read_text() == "before\nout\n"
    assert (tmp_path / "err.txt").read_text() == "err\n"


def test_a_missing_working_directory_fails_the_attempt_with_the_reason(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "true\n", workdir="/no/such/dir")
    run_shepherd(spool).wait(timeout=30)
    record = exit_status(spool)
    assert record["failure"] == "cannot enter /no/such/dir: No such file or directory"
    assert record["exit_code"] is None and not (spool / "job_pid").exists()
    assert "cannot enter" in (spool / "error").read_text()


def test_an_output_file_that_cannot_be_created_fails_the_attempt(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "true\n", stdout=str(tmp_path / "missing" / "out.txt"))
    run_shepherd(spool).wait(timeout=30)
    assert exit_status(spool)["failure"].startswith(f"cannot open output file {tmp_path}/missing/out.txt")


def test_sigterm_to_the_shepherd_terminates_the_job_then_kills_it_after_the_grace(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "trap 'echo got TERM' TERM; while :; do sleep 0.05; done\n", kill_grace_s=0.3)
    shepherd = run_shepherd(spool)
    wait_for_loop(spool)
    shepherd.send_signal(signal.SIGTERM)
    shepherd.wait(timeout=30)
    record = exit_status(spool)
    assert record["terminated"] and record["signal"] == signal.SIGKILL
    assert "got TERM" in (tmp_path / "out.txt").read_text()


def test_the_time_limit_ends_the_job_as_timed_out(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "sleep 30\n", time_limit_s=1, kill_grace_s=0.2)
    run_shepherd(spool).wait(timeout=30)
    record = exit_status(spool)
    assert record["timed_out"] and record["signal"] == signal.SIGTERM


def test_user_signals_are_forwarded_to_the_job(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "trap 'echo usr1; exit 5' USR1; while :; do sleep 0.05; done\n")
    shepherd = run_shepherd(spool)
    wait_for_loop(spool)
    shepherd.send_signal(signal.SIGUSR1)
    shepherd.wait(timeout=30)
    assert exit_status(spool)["exit_code"] == 5
    assert (tmp_path / "out.txt").read_text().endswith("usr1\n")


def test_what_the_job_leaves_in_its_process_group_is_killed(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "sleep 300 & echo $! > bg.pid\nexit 0\n")
    run_shepherd(spool).wait(timeout=30)
    background = int((tmp_path / "bg.pid").read_text())
    wait_until(lambda: not is_alive(background, None), describe="the background sleep to be killed")


def test_array_environment_and_hints_to_the_execd(tmp_path: Path) -> None:
    hints = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    hints.bind(str(tmp_path / "execd.sock"))
    hints.settimeout(10)
    spool = make_spool(tmp_path, "echo $SLURM_ARRAY_TASK_ID $SGE_TASK_ID $DROVER_ARRAY_TASK_COUNT $NSLOTS\n",
                       is_array=True, task_index=4, array_first=2, array_last=8, array_step=2, array_count=4)
    run_shepherd(spool).wait(timeout=30)
    assert (tmp_path / "out.txt").read_text() == "4 4 4 1\n"
    job_pid = (spool / layout.JOB_PID).read_text().strip()
    assert hints.recv(100) == f"started 7.0.1 {job_pid}".encode()
    assert hints.recv(100) == b"exited 7.0.1"
    hints.close()


def test_the_shepherd_imports_only_the_standard_library_the_spool_and_the_records() -> None:
    # drover.method_command and drover.slurm_layout are at the records' level: standard library
    # only (the methods' settings; Slurm's hostlists and tasks per node)
    code = (
        "import sys; before = set(sys.modules); import drover.shepherd.main as m; "
        "mods = [n for n in sys.modules if n.startswith('drover')]; "
        "bad = [n for n in mods if not (n in ('drover', 'drover.records', 'drover.method_command', 'drover.slurm_layout') or n.startswith(('drover.spool', 'drover.shepherd')))]; "
        "import sysconfig; purelib = sysconfig.get_paths()['purelib']; "
        "third = [n for n, mod in list(sys.modules.items()) if n not in before and getattr(mod, '__file__', None) "
        "and mod.__file__.startswith(purelib) and not n.startswith('drover')]; "
        "print(bad, third)"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[] []"


def test_shepherds_from_the_fork_server_outlive_it(tmp_path: Path) -> None:
    server = ForkServer.start()
    spools = [make_spool(tmp_path, f"sleep 0.5; echo done {i}\n", name=f"7.{i}.1", stdout=str(tmp_path / f"{i}.out"))
              for i in range(3)]
    pids = [server.spawn(str(spool)) for spool in spools]
    assert len(set(pids)) == 3
    server.process.kill()  # kill -9 the fork server while the jobs run
    server.process.wait()
    server.close()
    for i, spool in enumerate(spools):
        wait_until(lambda s=spool: (s / "exit_status").exists(), describe="the job to finish")
        assert exit_status(spool)["exit_code"] == 0
        assert (tmp_path / f"{i}.out").read_text() == f"done {i}\n"


def test_the_fork_server_reaps_its_shepherds_and_exits_when_the_execd_goes(tmp_path: Path) -> None:
    import psutil

    server = ForkServer.start()
    spool = make_spool(tmp_path, "true\n")
    pid = server.spawn(str(spool))
    wait_until(lambda: (spool / "exit_status").exists(), describe="the job to finish")
    wait_until(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() != psutil.STATUS_ZOMBIE,
               describe="the shepherd to be reaped")
    wait_until(lambda: not psutil.pid_exists(pid), describe="the shepherd to be gone")
    server.close()  # EOF on its socket
    assert server.process.wait(timeout=10) == 0


@pytest.mark.parametrize("request_line", [b"BOGUS x\n"])
def test_the_fork_server_refuses_unknown_requests(request_line: bytes) -> None:
    server = ForkServer.start()
    try:
        server._sock.sendall(request_line)
        assert server._reader.readline().startswith(b"ERR unknown request")
    finally:
        server.close()


def test_a_forked_shepherd_imports_nothing_the_fork_server_did_not(tmp_path: Path) -> None:
    """Every module a shepherd needs is loaded once in the fork server; an import after the fork
    would cost each attempt milliseconds."""
    spool = make_spool(tmp_path, "true\n")
    code = (
        "import os, sys, drover.shepherd.main as m\n"
        "before = set(sys.modules)\n"
        "r, w = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    m.run(sys.argv[1]); os.write(w, ' '.join(sorted(set(sys.modules) - before)).encode()); os._exit(0)\n"
        "os.close(w); os.waitpid(pid, 0); print(os.read(r, 65536).decode())\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(spool)], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
    assert exit_status(spool)["exit_code"] == 0


def test_the_environment_and_a_trace_are_kept_in_the_spool(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "true\n", environment={"PATH": os.environ["PATH"], "SECRET": "s3"})
    run_shepherd(spool).wait(timeout=30)
    environment = (spool / "environment").read_text().splitlines()
    assert "SECRET=s3" in environment and "DROVER_JOB_ID=7" in environment
    assert (spool / "environment").stat().st_mode & 0o777 == 0o600
    trace = (spool / "trace").read_text()
    assert "job started" in trace and "job ended" in trace


# Builtins only while signals may come: a trap that runs during a command substitution ($(...))
# can cut its output short.
WAIT_FOR_TWO_LINES_IN_GOT = (
    "i=0; while [ $i -lt 200 ]; do\n"
    "  if [ -f got ]; then mapfile -t lines < got; [ ${#lines[@]} -ge 2 ] && exit 0; fi\n"
    "  sleep 0.05; i=$((i + 1))\n"
    "done; exit 1\n"
)


def test_signals_that_come_during_the_prolog_wait_in_order_until_the_job_catches_them(tmp_path: Path) -> None:
    """Kept for the job, then sent in the order they came, each once the job catches it: SIGUSR2,
    whose trap is set first, waits behind SIGUSR1, whose trap comes later."""
    in_prolog = tmp_path / "in-prolog"
    script = ("trap 'if [ -f usr1-next ]; then echo USR2 >> got; else echo USR2-too-early >> got; fi' USR2\n"
              "sleep 0.3; touch usr1-next; trap 'echo USR1 >> got' USR1\n"
              + WAIT_FOR_TWO_LINES_IN_GOT)
    spool = make_spool(tmp_path, script, node_prolog=f"touch {in_prolog}; sleep 1")
    shepherd = run_shepherd(spool)
    wait_until(in_prolog.exists, describe="the prolog to run")
    shepherd.send_signal(signal.SIGUSR1)
    time.sleep(0.2)  # apart: two signals pending at once reach their handlers in the kernel's order
    shepherd.send_signal(signal.SIGUSR2)
    assert not (spool / "job_pid").exists()  # kept: the job is not there yet
    assert shepherd.wait(timeout=30) == 0
    assert exit_status(spool)["exit_code"] == 0, (tmp_path / "out.txt").read_text()
    assert sorted((tmp_path / "got").read_text().split()) == ["USR1", "USR2"]


def test_a_stop_during_the_prolog_runs_the_site_epilog_but_not_the_jobs(tmp_path: Path) -> None:
    in_prolog = tmp_path / "in-prolog"
    spool = make_spool(tmp_path, "echo job\n", node_prolog=f"echo node-prolog; touch {in_prolog}; sleep 0.5",
                       prolog="echo job-prolog", node_pe_start="echo pe-start", node_pe_stop="echo pe-stop",
                       epilog="echo job-epilog", node_epilog="echo node-epilog")
    shepherd = run_shepherd(spool)
    wait_until(in_prolog.exists, describe="the prolog to run")
    (spool / "stop_request").write_text('{"why":"hold"}')  # as the execd writes it before its SIGTERM
    shepherd.send_signal(signal.SIGTERM)
    assert shepherd.wait(timeout=30) == 0
    record = exit_status(spool)
    assert record["failure"] == "stopped before the job started (a hold came during its prolog)"
    assert record["terminated"] and record["exit_code"] is None and not (spool / "job_pid").exists()
    assert record["methods"] == [{"step": "epilog", "level": "node", "exit_code": 0}]
    assert (tmp_path / "out.txt").read_text().split() == ["node-prolog", "node-epilog"]
    assert "node epilog exited 0" in (spool / "trace").read_text()


def test_a_failing_pe_start_is_followed_by_pe_stop_and_the_node_epilog(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "echo job\n", node_pe_start="echo pe-start; exit 2", node_pe_stop="echo pe-stop",
                       epilog="echo job-epilog", node_epilog="echo node-epilog", pe="smp", pe_slots=1)
    assert run_shepherd(spool).wait(timeout=30) == 0
    record = exit_status(spool)
    assert record["failure"] == "the node pe_start exited with status 2; the job did not run"
    assert [(m["step"], m["exit_code"]) for m in record["methods"]] == [("pe_start", 2), ("pe_stop", 0), ("epilog", 0)]
    assert (tmp_path / "out.txt").read_text().split() == ["pe-start", "pe-stop", "node-epilog"]


def test_takes_tells_whether_a_process_catches_or_ignores_a_signal() -> None:
    from drover.shepherd.supervise import takes

    # Each in a process group of its own: bash's sleep goes with it.
    catching = subprocess.Popen(["bash", "-c", "trap : USR1; trap '' USR2; sleep 5"], start_new_session=True)
    plain = subprocess.Popen(["sleep", "5"], start_new_session=True)
    try:
        wait_until(lambda: takes(catching.pid, signal.SIGUSR1), describe="the trap to be set")
        assert takes(catching.pid, signal.SIGUSR2)  # ignored
        assert not takes(plain.pid, signal.SIGUSR1) and not takes(catching.pid, signal.SIGHUP)
    finally:
        for process in (catching, plain):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert takes(plain.pid, signal.SIGUSR1)  # gone: sending does no harm


def test_a_site_method_over_its_time_is_killed_with_what_it_started(tmp_path: Path) -> None:
    """A node epilog that outlives `method_timeout_s` is killed with its process group: a child
    it left holding its output does not keep the shepherd waiting (the site's methods run
    outside the attempt's cgroup, which would otherwise have caught it)."""
    spool = make_spool(tmp_path, "echo job\n", node_epilog="sleep 300 & sleep 300", method_timeout_s=1.0)
    shepherd = run_shepherd(spool)
    try:
        assert shepherd.wait(timeout=30) == 0
    finally:
        if shepherd.poll() is None:
            os.killpg(shepherd.pid, signal.SIGKILL)
            shepherd.wait()
    record = exit_status(spool)
    assert [(m["step"], m["level"], m["exit_code"]) for m in record["methods"]] == [("epilog", "node", 124)]
