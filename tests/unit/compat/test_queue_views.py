"""Drover's queues through the front ends, on plain records: sinfo's partitions, scontrol's
partition record and its update of partitions, qstat -g c, qconf -sql/-sq, qalter -q, qmod -d/-e."""

from __future__ import annotations

from typing import Any

import pytest

from drover.compat.gridengine import qalter, qconf, qmod
from drover.compat.gridengine.queues import (
    SUMMARY_HEADER,
    cluster_summary,
    ge_name,
    queue_conf,
    summary_line,
)
from drover.compat.gridengine.syntax import Given
from drover.compat.optiontable import Mark
from drover.compat.slurm import columns as fmt
from drover.compat.slurm.common import Refused
from drover.compat.slurm.scontrol import partition_changes
from drover.compat.slurm.scontrol_show import layout, partition_record
from drover.compat.slurm.sinfo import FORMATS, NAMES, fitted, starred
from drover.compat.slurm.sinfo_columns import groups
from drover.protocol.api import NodeInfo, QueueInfo


def node(name: str, cpus: int = 4, used: int = 0, state: str = "up", load: float | None = None) -> NodeInfo:
    return NodeInfo(name=name, state=state, cpus=cpus, memory_mib=8000, cpus_used=used, memory_mib_used=0,
                    running=used, last_seen=None, load=load)


NODES = [node("n1", used=4, load=4.0), node("n2", load=0.0), node("gpu1", cpus=8, state="drained")]


def queue(**fields: Any) -> QueueInfo:
    base: dict[str, Any] = dict(name="default", state="open", defined_in="built in",
                                node_names=["n1", "n2", "gpu1"], cpus=8, cpus_used=4)
    base.update(fields)
    return QueueInfo(**base)


SHORT = queue(name="short", defined_in="drover.toml", state="stopped", nodes=["n*"], node_names=["n1", "n2"],
              max_time_s=3600, default_time_s=600, priority=10, nice=5, max_memory_mib=4096, owner="alice",
              window="nights")


def test_sinfo_partitions_are_the_queues_with_their_state_limit_and_nodes() -> None:
    queues = [queue(), SHORT, queue(name="long", state="draining", node_names=["n2"], max_time_s=2 * 86400),
              queue(name="empty", state="inactive", nodes=["x*"], node_names=[])]
    lines = groups(queues, NODES, per_node=False)
    specs = starred(fitted(fmt.parse_names(FORMATS["default"], NAMES, []), lines, nodes_too=False))
    assert [fmt.header(specs)] + [fmt.line(specs, line) for line in lines] == [
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST",
        "default*     up   infinite      1  alloc n1",
        "default*     up   infinite      1   idle n2",
        "default*     up   infinite      1  drain gpu1",
        "short      down    1:00:00      1  alloc n1",
        "short      down    1:00:00      1   idle n2",
        "long      drain 2-00:00:00      1   idle n2",
        "empty     inact   infinite      0    n/a ",
    ]
    (line,) = [g for g in groups([SHORT], NODES, per_node=True) if g.nodes[0].name == "n2"]
    assert NAMES["defaulttime"].value(line) == "10:00" and NAMES["priorityjobfactor"].value(line) == "10"
    # A bare name (no queue known) stands for a partition of every node, up, without limits.
    assert [g.available for g in groups(["default"], NODES, per_node=False)] == ["up", "up", "up"]


def test_scontrol_show_partition_record() -> None:
    text = layout(partition_record(SHORT, NODES), one_liner=True)
    words = dict(word.split("=", 1) for word in text.split())
    assert words["PartitionName"] == "short" and words["Default"] == "NO"
    assert (words["State"], words["MaxTime"], words["DefaultTime"]) == ("DOWN", "01:00:00", "00:10:00")
    assert (words["Nodes"], words["TotalNodes"], words["TotalCPUs"]) == ("n[1-2]", "2", "8")
    assert (words["PriorityJobFactor"], words["MaxMemPerNode"], words["MaxCPUsPerNode"]) == ("10", "4096", "4")
    assert words["AllowGroups"] == "ALL"
    default = dict(w.split("=", 1) for w in layout(partition_record(queue(), NODES), True).split())
    assert (default["Default"], default["State"], default["MaxTime"], default["DefaultTime"]) == (
        "YES", "UP", "UNLIMITED", "NONE")
    states = [dict(w.split("=", 1) for w in layout(partition_record(queue(state=s), NODES), True).split())["State"]
              for s in ("draining", "inactive")]
    assert states == ["DRAIN", "INACTIVE"]


def test_scontrol_update_partition_maps_onto_queue_calls() -> None:
    assert partition_changes({"partitionname": "short", "state": "down", "reason": "disk"}) == (
        "short", {}, ["stop"], "disk")
    assert partition_changes({"partitionname": "short", "state": "INACTIVE"})[2] == ["drain", "stop"]
    assert partition_changes({"partitionname": "short", "state": "up"})[2] == ["start"]
    assert partition_changes({"partitionname": "s", "maxtime": "2-00:00:00", "defaulttime": "INFINITE",
                              "nodes": "n[1-3],big", "priorityjobfactor": "7"}) == (
        "s", {"max_time": "2-00:00:00", "default_time": "UNLIMITED", "nodes": "n1,n2,n3,big", "priority": "7"}, [], "")
    assert partition_changes({"partitionname": "s", "nodes": "ALL"})[1] == {"nodes": "*"}
    for settings, message in (({"partitionname": "s", "state": "sideways"}, "State=sideways"),
                              ({"partitionname": "s", "maxnodes": "2"}, "update maxnodes of a partition"),
                              ({"partitionname": "s"}, "nothing to change"),
                              ({"partitionname": "s", "reason": "x"}, "Reason goes with State"),
                              ({"partitionname": "s", "priorityjobfactor": "-1"}, "PriorityJobFactor=-1"),
                              ({"partitionname": ""}, "Invalid partition name")):
        with pytest.raises(Refused, match=message):
            partition_changes(settings)


def test_qstat_cluster_queue_summary() -> None:
    text = cluster_summary([queue(), SHORT, queue(name="night", window="nights", window_open=False)], NODES)
    lines = text.splitlines()
    assert lines[0] == SUMMARY_HEADER
    assert lines[0].startswith("CLUSTER QUEUE                   CQLOAD   USED    RES  AVAIL  TOTAL aoACDS  cdsuE")
    assert lines[1] == "-" * 80
    by_name = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert list(by_name) == ["all.q", "night", "short"]
    # all.q: load per CPU averaged over the nodes that report one; n2's 4 CPUs free; gpu1 drained
    assert by_name["all.q"] == ["0.50", "4", "0", "4", "16", "0", "8"]
    assert by_name["short"] == ["0.50", "4", "0", "0", "8", "0", "8"]  # stopped: every slot disabled
    assert by_name["night"] == ["0.50", "4", "0", "0", "16", "8", "8"]  # window closed: calendar
    assert summary_line(queue(node_names=[]), NODES).split()[1] == "-NA-"
    assert len(lines[2]) == len(SUMMARY_HEADER)


def _given(key: str, value: str | None = None) -> Given:
    option = next(o for o in qconf.OPTIONS if o.names[0] == f"-{key}")
    return Given(option, value)


def test_qconf_lists_and_shows_the_queues() -> None:
    queues = [queue(), SHORT]
    assert qconf.show(_given("sql"), NODES, queues) == ("all.q\nshort\n", 0)
    text, status = qconf.show(_given("sq", "short"), NODES, queues)
    rows = dict(line.split(None, 1) for line in text.splitlines())
    assert status == 0 and rows["qname"] == "short" and rows["hostlist"] == "n1 n2"
    assert (rows["priority"], rows["calendar"], rows["owner_list"], rows["initial_state"]) == (
        "5", "nights", "alice", "disabled")
    assert (rows["h_rt"], rows["h_vmem"], rows["s_rt"], rows["slots"]) == ("1:00:00", "4G", "INFINITY",
                                                                           "1,[n1=4],[n2=4]")
    assert dict(queue_conf(queue(), NODES))["hostlist"] == "@allhosts"
    assert qconf.show(_given("sq", "nosuch"), NODES, queues)[1] == 1
    assert qconf.show(_given("sq", "*"), NODES, queues)[0].count("qname") == 2
    assert ge_name("default") == "all.q"


def test_qalter_q_names_one_queue() -> None:
    assert [qalter.target_queue(t) for t in ("all.q", "short", "short@n1", "a,b", "*.q", "")] == [
        "default", "short", "short", None, None, None]
    option = next(o for o in qalter.OPTIONS if o.names[0] == "-q")
    assert option.mark is Mark.SUPPORTED


def test_qmod_d_and_e_are_queue_states_and_instances_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    marks = {o.names[0]: o.mark for o in qmod.OPTIONS}
    assert marks["-d"] is Mark.SUPPORTED and marks["-e"] is Mark.SUPPORTED and marks["-sq"] is Mark.SUPPORTED
    assert qmod.queue_state("qmod", "stop", ["all.q@n1"]) == 1
    assert "one state on all its nodes" in capsys.readouterr().err
    assert qmod.main(["-d", "-e", "all.q"]) == 1
    assert "one of -d and -e" in capsys.readouterr().err
