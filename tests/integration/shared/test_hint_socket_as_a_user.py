"""The execd's hint socket (the shepherds tell it there that a job started, with its pid, or that
they are gone: execd/attempts.py `_bind_notify_socket`) is root's alone, mode 0600. A real user's
job that sends it hints of its own attempt (a forged pid, a shepherd said to be gone) is refused,
and the job's attempt runs and is reported as if it had sent nothing."""

from __future__ import annotations

import os
import pwd
import stat
import textwrap
from collections.abc import Callable
from pathlib import Path

from tests.helpers.system_cluster import SystemCluster
from tests.helpers.wait import wait_until

FORGER = textwrap.dedent("""
    import errno, os, socket, sys, time
    path = sys.argv[1]
    attempt = "{}.{}.{}".format(os.environ["DROVER_JOB_ID"], os.environ["DROVER_TASK_ID"], os.environ["DROVER_ATTEMPT"])
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    for hint in ("started %s 1 0" % attempt, "exited %s" % attempt):
        try:
            sock.sendto(hint.encode(), path)
            print("sent", hint, flush=True)
        except OSError as error:
            print("refused", errno.errorcode.get(error.errno, error.errno), hint, flush=True)
    time.sleep(3)  # were a hint taken, the execd would act on it while the job still runs
    print("done", flush=True)
""")


def test_a_users_job_cannot_send_the_execd_hints_and_its_report_is_unaffected(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str]) -> None:
    _, bob = users
    cluster = system_cluster_factory()
    home = Path(pwd.getpwnam(bob).pw_dir)
    script = home / "forge.py"
    script.write_text(FORGER)
    os.chmod(script, 0o644)
    hints = cluster.spool() / "execd.sock"
    wait_until(hints.exists, describe="the execd's hint socket")
    held = os.lstat(hints)
    assert stat.S_ISSOCK(held.st_mode) and held.st_uid == 0 and stat.S_IMODE(held.st_mode) == 0o600
    job = cluster.submit_as(bob, "-o", str(home / "forge.out"), "--", "python3", str(script), str(hints))
    ended = cluster.wait_ended(job)
    output = (home / "forge.out").read_text()
    assert "sent" not in output, output
    assert output.count("refused EACCES") == 2, output
    assert output.rstrip().endswith("done"), output
    # Reported as the job ran: one attempt, ended by itself with status 0, no shepherd lost.
    assert ended["state"] == "completed", ended
    (attempt,) = ended["tasks"][0]["attempts"]
    assert attempt["exit_code"] == 0 and not attempt.get("failure"), attempt
    # The execd still takes its own shepherds' hints: another job starts and ends as ever.
    again = cluster.submit_as(bob, "--", "true")
    assert cluster.wait_ended(again)["state"] == "completed"
