"""Grid Engine's qsub -notify (submit(1)) and the queue's notify time (queue_conf(5)), with real
jobs that trap SIGUSR1, SIGUSR2 and SIGTERM and write down when each came: "If a SIGSTOP is
pending, the job will receive a SIGUSR1 several seconds before the SIGSTOP. If a SIGKILL is
pending, the job will receive a SIGUSR2 several seconds before the SIGKILL." """

from __future__ import annotations

from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

NOTIFY_S = 2
# The job: each tick, and each signal, with the time it came.
TIMED = """
now() { date +%s.%N; }
trap 'echo "USR1 $(now)" >> got' USR1
trap 'echo "USR2 $(now)" >> got' USR2
trap 'echo "TERM $(now)" >> got; exit 0' TERM
while :; do now >> ticks; sleep 0.05; done
"""


def _cluster() -> LocalCluster:
    return LocalCluster(config_toml=f"[queues.q]\nnotify_s = {NOTIFY_S}\n")


def _submit(cluster: LocalCluster, name: str, *options: str) -> tuple[int, Path]:
    where = cluster.workdir / name
    where.mkdir()
    (where / "job.sh").write_text(TIMED)
    job = cluster.submit("--queue", "q", *options, "job.sh", cwd=where)
    wait_until(lambda: (where / "ticks").exists(), describe="the job ticking")
    return job, where


def _got(where: Path, what: str) -> float:
    def find() -> float | None:
        path = where / "got"
        for line in path.read_text().splitlines() if path.exists() else []:
            name, _, when = line.partition(" ")
            if name == what:
                return float(when)
        return None

    return wait_until(find, describe=f"SIG{what} in the job")


def _last_tick(where: Path) -> float:
    return float((where / "ticks").read_text().split()[-1])


def test_gridengine_submit_notify_sigusr1_comes_notify_seconds_before_the_suspend(tmp_path: Path) -> None:
    cluster = _cluster()
    try:
        cluster.start()
        job, where = _submit(cluster, "suspend", "--notify")
        cluster.drover("suspend", str(job))
        usr1 = _got(where, "USR1")
        # frozen NOTIFY_S after the notice: the ticks go on until then, and stop then
        wait_until(lambda: _last_tick(where) >= usr1 + NOTIFY_S - 0.3, describe="ticks until the freeze")
        last = _last_tick(where)
        wait_until(lambda: _last_tick(where) == last and (where / "ticks").stat().st_mtime < last + 1.5,
                   timeout=NOTIFY_S + 5, describe="the freeze")
        frozen_after = _last_tick(where) - usr1
        assert NOTIFY_S - 0.3 <= frozen_after <= NOTIFY_S + 1.5, frozen_after
        cluster.drover("resume", str(job))
        wait_until(lambda: _last_tick(where) > last + 0.2, describe="ticking again")
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
    finally:
        assert not cluster.stop()


def test_gridengine_submit_notify_sigusr2_comes_notify_seconds_before_a_cancel_ends_the_job(tmp_path: Path) -> None:
    cluster = _cluster()
    try:
        cluster.start()
        job, where = _submit(cluster, "cancel", "--notify")
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
        usr2, term = _got(where, "USR2"), _got(where, "TERM")
        assert NOTIFY_S - 0.3 <= term - usr2 <= NOTIFY_S + 1.5, term - usr2
        assert cluster.drover_json("show", str(job))["state"] == "cancelled"
    finally:
        assert not cluster.stop()


def test_gridengine_submit_notify_sigusr2_comes_notify_seconds_before_the_time_limit_kill(tmp_path: Path) -> None:
    cluster = _cluster()
    try:
        cluster.start()
        job, where = _submit(cluster, "limit", "--notify", "--time", "2s")
        cluster.drover("wait", str(job), check=False)
        usr2, term = _got(where, "USR2"), _got(where, "TERM")
        assert NOTIFY_S - 0.3 <= term - usr2 <= NOTIFY_S + 1.5, term - usr2
        assert cluster.drover_json("show", str(job))["state"] == "timeout"
    finally:
        assert not cluster.stop()


def test_without_notify_a_suspend_and_a_cancel_come_at_once_with_no_notice(tmp_path: Path) -> None:
    cluster = _cluster()
    try:
        cluster.start()
        job, where = _submit(cluster, "plain")
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
        assert (where / "got").read_text().split()[0] == "TERM"
        assert "USR" not in (where / "got").read_text()
    finally:
        assert not cluster.stop()


def test_gridengine_qsub_notify_is_drovers_notify(tmp_path: Path) -> None:
    """qsub -notify through the Grid Engine front end: the same notice before a qdel."""
    from tests.helpers.compat_install import install, run

    cluster = _cluster()
    try:
        cluster.start()
        where = cluster.workdir / "qsub"
        where.mkdir()
        (where / "job.sh").write_text(TIMED)
        bin_dir = install(cluster)
        out = run(cluster, bin_dir, "qsub", "-terse", "-notify", "-q", "q", "-wd", str(where), str(where / "job.sh"))
        assert out.returncode == 0 and "notify" not in out.stderr, out.stderr
        job = out.stdout.split()[0]
        wait_until(lambda: (where / "ticks").exists(), describe="the job ticking")
        run(cluster, bin_dir, "qdel", job)
        cluster.drover("wait", job, check=False)
        usr2, term = _got(where, "USR2"), _got(where, "TERM")
        assert NOTIFY_S - 0.3 <= term - usr2 <= NOTIFY_S + 1.5, term - usr2
    finally:
        assert not cluster.stop()
