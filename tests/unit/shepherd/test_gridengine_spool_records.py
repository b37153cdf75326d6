"""Grid Engine's spool files on plain data: what `osjobid` and `processor_set_number` say, and how
the shepherd reads the `signal` record (seeds/gridengine-shepherd-process-flow.txt)."""

from __future__ import annotations

import signal
from pathlib import Path

from drover.execd.lost_shepherd import reason
from drover.records import ContainmentRecord
from drover.shepherd.spool_files import cpu_list, osjobid
from drover.spool.signal_record import SignalReader, append


def test_gridengine_process_flow_osjobid_names_the_attempts_cgroups_or_its_subreaper() -> None:
    v2: ContainmentRecord = {"backend": "cgroup-v2", "cgroups": {"": "/sys/fs/cgroup/drover/7.0.1"},
                             "shepherd": 10, "session": 10}
    v1: ContainmentRecord = {"backend": "cgroup-v1", "shepherd": 10, "session": 10,
                             "cgroups": {"memory": "/sys/fs/cgroup/memory/drover/7.0.1",
                                         "freezer": "/sys/fs/cgroup/freezer/drover/7.0.1"}}
    none: ContainmentRecord = {"backend": "subreaper", "cgroups": {}, "shepherd": 10, "session": 9}
    assert osjobid(v2) == "/sys/fs/cgroup/drover/7.0.1"
    assert osjobid(v1) == "/sys/fs/cgroup/freezer/drover/7.0.1 /sys/fs/cgroup/memory/drover/7.0.1"
    assert osjobid(none) == "subreaper 10 9"


def test_gridengine_process_flow_processor_set_number_is_a_cpuset_list() -> None:
    assert cpu_list({0}) == "0"
    assert cpu_list({0, 1, 2, 3, 8}) == "0-3,8"
    assert cpu_list(frozenset({5, 1, 2, 7})) == "1-2,5,7"


def test_gridengine_process_flow_signal_file_each_name_is_read_once(tmp_path: Path) -> None:
    """The execd only appends; a SIGTTIN that comes twice, or a read with none, sends nothing twice."""
    record = str(tmp_path / "signal")
    reader = SignalReader(record)
    assert reader.new() == []  # not written yet
    append(record, signal.SIGTERM)
    append(record, signal.SIGKILL)
    assert reader.new() == [signal.SIGTERM, signal.SIGKILL]
    assert reader.new() == []
    append(record, signal.SIGCONT)
    assert reader.new() == [signal.SIGCONT]
    assert (tmp_path / "signal").stat().st_mode & 0o777 == 0o600


def test_gridengine_process_flow_shepherd_about_to_exit_tells_how_far_a_lost_shepherd_got() -> None:
    killed = 9  # the wait status of a process killed by SIGKILL
    assert reason(killed) == "the shepherd died (signal 9) before recording how the job ended"
    assert reason(killed, about_to_exit=True) == (
        "the shepherd died (signal 9) after the job and its epilogs had ended, before recording how the job ended")
