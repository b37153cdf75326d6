"""Queues at runtime on a personal cluster: `drover queue list|show|create|set|stop|start|drain|
delete`, `drover alter --queue`, and the same through the front ends (qmod -d/-e, qalter -q,
qstat -g c, qconf -sql, sinfo, scontrol show/update partition, scontrol update JobId Partition=)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until

CONFIG = """[controller]
user_queues = true

[queues.short]
priority = 5
max_time_s = 3600

[queues.batch]
nice = 2
"""


@pytest.fixture
def queues_cluster() -> Iterator[LocalCluster]:
    cluster = LocalCluster(config_toml=CONFIG)
    try:
        cluster.start()
        yield cluster
    finally:
        assert not cluster.stop()


def listed(cluster: LocalCluster) -> dict[str, Any]:
    return {q["name"]: q for q in cluster.drover_json("queue", "list")}


def state(cluster: LocalCluster, job: int) -> str:
    return str(cluster.drover_json("show", str(job))["state"])


def stays_pending(cluster: LocalCluster, job: int, seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if state(cluster, job) != "pending":
            return False
        time.sleep(0.2)
    return True


def test_queue_commands_and_moving_jobs(queues_cluster: LocalCluster) -> None:
    cluster = queues_cluster
    queues = listed(cluster)
    assert {"default", "short", "batch"} <= set(queues)
    assert (queues["short"]["state"], queues["short"]["priority"], queues["short"]["max_time_s"]) == ("open", 5, 3600)
    assert queues["default"]["defined_in"] == "built in" and queues["short"]["defined_in"] == "drover.toml"
    table = cluster.drover("queue", "list").stdout.splitlines()
    assert table[0].split() == ["QUEUE", "STATE", "PRIORITY", "NODES", "RUNNING", "PENDING", "LIMITS", "WINDOW",
                                "REASON"]
    assert "Queue short" in cluster.drover("queue", "show", "short").stdout

    # stop: the queue takes jobs and starts none, until started again
    stopped = cluster.drover("queue", "stop", "short", "--reason", "maintenance")
    assert stopped.stdout.startswith("queue short: stopped"), stopped.stdout
    assert listed(cluster)["short"]["state"] == "stopped"
    assert "maintenance" in (listed(cluster)["short"]["reason"] or "")
    job = cluster.submit("--queue", "short", "--", "true")
    assert stays_pending(cluster, job)
    cluster.drover("queue", "start", "short")
    cluster.drover("wait", str(job), timeout=60)

    # drain: no new jobs; stop on a draining queue leaves it inactive; start clears both
    cluster.drover("queue", "drain", "short")
    assert listed(cluster)["short"]["state"] == "draining"
    refused = cluster.drover("submit", "--queue", "short", "--", "true", check=False)
    assert refused.returncode != 0 and refused.stderr
    cluster.drover("queue", "stop", "short")
    assert listed(cluster)["short"]["state"] == "inactive"
    cluster.drover("queue", "start", "short")
    assert listed(cluster)["short"]["state"] == "open"

    # set: a runtime change shows as such, and an empty value undoes it
    changed = cluster.drover_json("queue", "set", "short", "max_running=1", "priority=7")
    assert (changed["max_running"], changed["priority"]) == (1, 7)
    assert set(changed["changed"]) == {"max_running", "priority"}
    assert "changed at runtime" in cluster.drover("queue", "show", "short").stdout
    undone = cluster.drover_json("queue", "set", "short", "max_running=", "priority=")
    assert (undone["max_running"], undone["priority"], undone["changed"]) == (None, 5, {})
    bad = cluster.drover("queue", "set", "short", "max_running=lots", check=False)
    assert bad.returncode != 0 and "max_running" in bad.stderr
    usage = cluster.drover("queue", "set", "short", "colour=red", check=False)
    assert usage.returncode == 2 and "unknown setting 'colour'" in usage.stderr

    # moving a waiting job to another queue
    cluster.drover("queue", "stop", "batch")
    cluster.drover("queue", "stop", "short")
    waiting = cluster.submit("--queue", "batch", "--", "true")
    assert stays_pending(cluster, waiting, 1.0)
    cluster.drover("alter", str(waiting), "--queue", "short")
    assert cluster.drover_json("show", str(waiting))["queue"] == "short"
    assert listed(cluster)["short"]["pending"] == 1 and listed(cluster)["batch"]["pending"] == 0
    cluster.drover("queue", "start", "short")
    cluster.drover("wait", str(waiting), timeout=60)
    assert cluster.drover_json("show", str(waiting))["queue"] == "short"  # and so it is recorded
    cluster.drover("queue", "start", "batch")
    assert cluster.drover("alter", str(waiting), check=False).returncode == 2

    # a queue of one's own, made and removed at runtime
    made = cluster.drover_json("queue", "create", "mine", "priority=3")
    assert (made["name"], made["defined_in"], made["priority"]) == ("mine", "drover queue create", 3)
    assert "mine" in listed(cluster)
    assert cluster.drover("queue", "delete", "mine").stdout == "queue mine: deleted\n"
    assert "mine" not in listed(cluster)
    missing = cluster.drover("queue", "show", "nosuch", check=False)
    assert missing.returncode != 0 and "nosuch" in missing.stderr


def test_queues_through_the_front_ends(queues_cluster: LocalCluster) -> None:
    cluster = queues_cluster
    bin_dir = install(cluster)
    node = cluster.drover_json("nodes")[0]

    # Grid Engine: qconf lists the queues; qmod -d/-e disable and enable them; qstat -g c sums them up
    assert run(cluster, bin_dir, "qconf", "-sql").stdout == "all.q\nbatch\nshort\n"
    disabled = run(cluster, bin_dir, "qmod", "-d", "all.q")
    assert disabled.returncode == 0 and disabled.stdout.endswith('changed state of "all.q" (disabled)\n')
    assert listed(cluster)["default"]["state"] == "stopped"
    again = run(cluster, bin_dir, "qmod", "-d", "all.q")
    assert "already in the specified state: disabled" in again.stdout
    summary = run(cluster, bin_dir, "qstat", "-g", "c").stdout.splitlines()
    assert summary[0].split() == ["CLUSTER", "QUEUE", "CQLOAD", "USED", "RES", "AVAIL", "TOTAL", "aoACDS", "cdsuE"]
    rows = {line.split()[0]: line.split()[1:] for line in summary[2:]}
    assert rows["all.q"][4:] == [str(node["cpus"]), "0", str(node["cpus"])]  # every slot disabled
    assert rows["short"][3:] == [str(node["cpus"]), str(node["cpus"]), "0", "0"]
    assert run(cluster, bin_dir, "qmod", "-e", "all.q").returncode == 0
    assert listed(cluster)["default"]["state"] == "open"
    assert run(cluster, bin_dir, "qmod", "-d", "all.q@" + node["name"]).returncode == 1

    # qalter -q moves a waiting job
    run(cluster, bin_dir, "qmod", "-d", "batch")
    job = run(cluster, bin_dir, "qsub", "-terse", "-b", "y", "-q", "batch", "true").stdout.strip()
    run(cluster, bin_dir, "qmod", "-d", "short")
    moved = run(cluster, bin_dir, "qalter", "-q", "short", job)
    assert moved.returncode == 0 and moved.stdout == f"modified hard queue list of job {job}\n", moved.stderr
    assert cluster.drover_json("show", job)["queue"] == "short"
    assert run(cluster, bin_dir, "qmod", "-e", "short").returncode == 0

    # Slurm: partitions are the queues, with their state and time limit
    lines = run(cluster, bin_dir, "sinfo", "-h", "-o", "%P %a %l %D").stdout.splitlines()
    assert lines == ["default* up infinite 1", "batch down infinite 1", "short up 1:00:00 1"], lines
    assert run(cluster, bin_dir, "scontrol", "update", "PartitionName=short", "State=DOWN",
               "Reason=testing").returncode == 0
    assert listed(cluster)["short"]["state"] == "stopped"
    record = run(cluster, bin_dir, "scontrol", "show", "partition", "short", "-o").stdout
    words = dict(word.split("=", 1) for word in record.split())
    assert (words["State"], words["MaxTime"], words["PriorityJobFactor"], words["Nodes"]) == (
        "DOWN", "01:00:00", "5", node["name"])
    assert run(cluster, bin_dir, "scontrol", "update", "PartitionName=short", "State=UP",
               "MaxTime=2:00:00").returncode == 0
    assert (listed(cluster)["short"]["state"], listed(cluster)["short"]["max_time_s"]) == ("open", 7200)
    run(cluster, bin_dir, "scontrol", "update", "PartitionName=short", "State=DOWN")
    waiting = cluster.submit("--queue", "batch", "--", "true")
    updated = run(cluster, bin_dir, "scontrol", "update", f"JobId={waiting}", "Partition=short")
    assert updated.returncode == 0, updated.stderr
    assert cluster.drover_json("show", str(waiting))["queue"] == "short"
    run(cluster, bin_dir, "scontrol", "update", "PartitionName=short", "State=UP")
    wait_until(lambda: state(cluster, waiting) == "completed", describe="the moved job to run")
    refused = run(cluster, bin_dir, "scontrol", "update", "PartitionName=short", "MaxNodes=2")
    assert refused.returncode == 1 and "not supported by Drover" in refused.stderr
