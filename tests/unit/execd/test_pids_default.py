"""Each job's default process limit, from the host's pid_max and CPUs (execd/host.py)."""

from __future__ import annotations

from tests.helpers.attempt_config import attempt_config

from drover.config_file import parse_config
from drover.execd.host import MAX_PIDS, MIN_PIDS, default_pids_max
from drover.execd.main import pids_max


def test_the_hosts_pids_are_shared_between_its_cpus_and_the_host_itself() -> None:
    assert default_pids_max(32768, 2) == 10922  # three shares: two jobs at their limit leave a third
    assert default_pids_max(4194304, 64) == 64527
    assert default_pids_max(4194304, 8) == MAX_PIDS  # no job needs more
    assert default_pids_max(32768, 256) == MIN_PIDS  # a build's make -j still forks
    assert default_pids_max(32768, 0) == 16384


def test_the_node_setting_wins_and_zero_means_no_limit() -> None:
    assert pids_max(parse_config("[execd]\npids_max = 300\n").config.execd) == 300
    assert pids_max(parse_config("[execd]\npids_max = 0\n").config.execd) == 0
    assert MIN_PIDS <= pids_max(parse_config("").config.execd) <= MAX_PIDS


def test_a_jobs_own_limit_holds_within_its_nodes() -> None:
    from drover.shepherd.config import read_config
    from drover.shepherd.main import pids_limit

    def limit(pids_max: int = 0, job_pids_max: int | None = None) -> int:
        return pids_limit(read_config(attempt_config("/w", pids_max=pids_max, job={"pids_max": job_pids_max})))

    assert limit(pids_max=4096, job_pids_max=64) == 64
    assert limit(pids_max=64, job_pids_max=4096) == 64
    assert limit(pids_max=0, job_pids_max=64) == 64
    assert limit(pids_max=0, job_pids_max=None) == 0
    assert limit() == 0
