"""cgroup v1: the cpuset of a slot (a set of CPUs) is made once and kept for the next attempt
given those CPUs (shepherd/containment/slots.py), while every other cgroup stays the attempt's
own: the second attempt on a slot gets its own CPUs, its own memory limit and its own peak; and
a slot's cpuset with a process left in it is not taken (the attempt makes one of its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.attempts import backend_unusable
from tests.helpers.spools import exit_status, make_spool, usage

from drover.shepherd.setup import physical_cpus

# Holds about `MIB` MiB for a moment, then says which CPUs it may run on.
JOB = """python3 -c 'b = bytearray({mib} << 20); b[::4096] = b"x" * len(b[::4096])'
grep Cpus_allowed_list /proc/self/status > {out}
"""


@pytest.fixture
def v1() -> Iterator[None]:
    why_not = backend_unusable("cgroup-v1")
    if why_not:
        pytest.skip(why_not)
    yield


def run_attempt(tmp_path: Path, name: str, mib: int, cpu_ids: list[int], memory_mib: int) -> dict[str, object]:
    out = tmp_path / f"{name}.cpus"
    spool = make_spool(tmp_path, JOB.format(mib=mib, out=out), name=name, cpu_ids=cpu_ids, memory_mib=memory_mib)
    subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], start_new_session=True, timeout=60,
                   env={**os.environ, "DROVER_CONTAINMENT": "cgroup-v1"}, check=True)
    assert exit_status(spool)["exit_code"] == 0, (spool / "error").read_text() if (spool / "error").exists() else ""
    return {
        "cgroups": json.loads((spool / "containment").read_text())["cgroups"],
        "usage": usage(spool),
        "cpus": out.read_text().split()[-1],
    }


def test_the_second_attempt_on_a_slot_takes_its_cpuset_with_its_own_limits_and_usage(tmp_path: Path, v1: None) -> None:
    cpu = sorted(os.sched_getaffinity(0))[-1]
    index = sorted(os.sched_getaffinity(0)).index(cpu)
    first = run_attempt(tmp_path, "31.0.1", mib=120, cpu_ids=[index], memory_mib=400)
    second = run_attempt(tmp_path, "31.0.2", mib=10, cpu_ids=[index], memory_mib=200)
    # One cpuset for both, the slot's, kept after the first ended; the rest each attempt's own.
    slot = first["cgroups"]["cpuset"]  # type: ignore[index]
    assert os.path.basename(slot).startswith("slot-") and second["cgroups"]["cpuset"] == slot  # type: ignore[index]
    assert os.path.isdir(slot)
    for controller in ("memory", "freezer", "cpuacct"):
        assert first["cgroups"][controller].endswith("31.0.1")  # type: ignore[index]
        assert second["cgroups"][controller].endswith("31.0.2")  # type: ignore[index]
        assert not os.path.exists(second["cgroups"][controller])  # type: ignore[index]
    assert first["cpus"] == second["cpus"] == str(min(physical_cpus([index])))
    # The second's peak is its own: not the first's 120 MiB.
    first_peak = first["usage"]["cgroup_peak_memory_bytes"]  # type: ignore[index]
    second_peak = second["usage"]["cgroup_peak_memory_bytes"]  # type: ignore[index]
    assert first_peak > 100 << 20 and second_peak < 60 << 20, (first_peak, second_peak)


def test_a_slot_cpuset_with_a_process_left_in_it_is_not_taken(tmp_path: Path, v1: None) -> None:
    index = 0
    first = run_attempt(tmp_path, "32.0.1", mib=1, cpu_ids=[index], memory_mib=0)
    slot = first["cgroups"]["cpuset"]  # type: ignore[index]
    assert os.path.basename(slot).startswith("slot-")
    left = subprocess.Popen(["sleep", "300"])
    try:
        Path(slot, "cgroup.procs").write_text(str(left.pid))
        second = run_attempt(tmp_path, "32.0.2", mib=1, cpu_ids=[index], memory_mib=0)
        own = second["cgroups"]["cpuset"]  # type: ignore[index]
        assert own != slot and own.endswith("32.0.2")
        assert not os.path.exists(own)  # removed with the attempt's other cgroups
        assert second["cpus"] == str(min(physical_cpus([index])))
        assert Path(slot, "cgroup.procs").read_text().split() == [str(left.pid)]  # the slot's left alone
    finally:
        left.kill()
        left.wait()
