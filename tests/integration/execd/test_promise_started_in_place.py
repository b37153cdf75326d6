"""A stranded promise started in place on a real cluster ([scheduler] promises = true, two CPUs):
two jobs run, a third is promised behind one of them; the other ends first, and the third starts
at once on the CPU it left, as the same attempt, while the one it followed runs on. `drover
history` shows one attempt of it, no requeued one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.wait import wait_until

from drover.shepherd.setup import physical_cpus

PROMISING = "[scheduler]\npromises = true\n"


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(cpus=2, config_toml=PROMISING))


def test_a_promise_stranded_by_room_freed_beside_it_starts_there_as_the_same_attempt(cluster: LocalCluster) -> None:
    gates = {name: cluster.workdir / f"gate-{name}" for name in ("a", "b")}
    jobs = {name: cluster.submit("--", "sh", "-c", f"until [ -e {gate} ]; do sleep 0.02; done")
            for name, gate in gates.items()}
    third = cluster.submit("-o", "third.out", "--", "sh", "-c", "echo ran; grep Cpus_allowed_list /proc/self/status")

    def after() -> str | None:
        (attempt,) = cluster.drover_json("show", str(third))["tasks"][0]["attempts"]
        return attempt.get("after")

    wait_until(lambda: after() is not None, describe="the third job promised behind a running one")
    followed = next(name for name, job in jobs.items() if after() == f"{job}.0.1")
    other = "b" if followed == "a" else "a"
    gates[other].touch()  # the job it does not follow ends: its CPU is free beside the promise
    wait_until(lambda: cluster.drover_json("show", str(third))["state"] == "completed",
               describe="the third job run on the freed CPU")
    assert cluster.drover_json("show", str(jobs[followed]))["state"] == "running"  # it did not wait for it
    ran, allowed = (cluster.workdir / "third.out").read_text().splitlines()
    freed = cluster.drover_json("show", str(jobs[other]))["tasks"][0]["attempts"][0]["cpu_ids"]
    (moved,) = cluster.drover_json("show", str(third))["tasks"][0]["attempts"]
    assert ran == "ran" and moved["cpu_ids"] == freed and moved.get("after") is None, moved
    assert allowed.split()[-1] == ",".join(str(cpu) for cpu in sorted(physical_cpus(freed))), allowed  # pinned there
    rows = cluster.drover_json("history", "--job", str(third))
    assert [(row["attempt"], row["state"]) for row in rows] == [(1, "completed")], rows
    kinds = [event["kind"] for event in cluster.drover_json("events", str(third))]
    assert "promise_started_in_place" in kinds and "promise_taken_back" not in kinds, kinds
    assert "started in place on CPUs" in (cluster.state_dir / "execd.log").read_text()
    gates[followed].touch()
    assert cluster.drover("wait", *(str(job) for job in jobs.values())).returncode == 0
