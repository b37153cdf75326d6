"""sge_pe(5) on plain data (core/parallel_env.py): allocation rules, slot requests and ranges,
the procedures' root@ prefix and placeholders, who may use a PE; and a drover.toml that defines
parallel environments, with each refusal naming the file, the line and the table."""

from __future__ import annotations

import pytest

from drover.config_file import ConfigError, parse_config
from drover.core.parallel_env import (
    FILL_UP,
    PE_SLOTS,
    ROUND_ROBIN,
    Procedure,
    may_use,
    parse_allocation_rule,
    parse_procedure,
    parse_slots,
    slots_across_nodes,
    slots_on_one_node,
)


def test_sge_pe_allocation_rules_are_the_three_names_or_a_whole_number() -> None:
    assert [parse_allocation_rule(rule) for rule in ("$pe_slots", "$fill_up", "$round_robin", "4")] == [
        PE_SLOTS, FILL_UP, ROUND_ROBIN, 4]
    for bad in ("$fillup", "0", "-1", "two", ""):
        with pytest.raises(ValueError, match="allocation_rule must be"):
            parse_allocation_rule(bad)


def test_qsub_pe_slot_ranges() -> None:
    assert parse_slots("4") == (4, 4)
    assert parse_slots("2-8") == (2, 8)
    assert parse_slots("-8") == (1, 8)
    assert parse_slots("2-", most=16) == (2, 16)
    for bad in ("", "-", "a", "8-2", "0", "0-3", "1-2-3"):
        with pytest.raises(ValueError):
            parse_slots(bad)


def test_a_range_gets_the_largest_a_node_and_the_pe_can_hold() -> None:
    assert slots_on_one_node(PE_SLOTS, 2, 8, largest_node=4, pe_slots=100) == 4
    assert slots_on_one_node(FILL_UP, 2, 8, largest_node=16, pe_slots=6) == 6
    assert slots_on_one_node(ROUND_ROBIN, 3, 3, largest_node=4, pe_slots=10) == 3
    with pytest.raises(ValueError, match="cannot run on one node: the largest node has 4 CPUs"):
        slots_on_one_node(PE_SLOTS, 8, 8, largest_node=4, pe_slots=100)
    with pytest.raises(ValueError, match="the parallel environment has 2 slots"):
        slots_on_one_node(FILL_UP, 3, 4, largest_node=8, pe_slots=2)


def test_an_integer_rule_fixes_the_slots_of_each_node() -> None:
    assert slots_on_one_node(4, 4, 4, largest_node=8, pe_slots=100) == 4
    assert slots_on_one_node(4, 2, 8, largest_node=8, pe_slots=100) == 4
    with pytest.raises(ValueError, match="8 slots would take 2 nodes, and a job runs on one node"):
        slots_on_one_node(4, 8, 8, largest_node=16, pe_slots=100)


def test_procedures_run_as_the_owner_unless_prefixed_root() -> None:
    assert parse_procedure("start_proc_args", None) is None
    assert parse_procedure("start_proc_args", "NONE") is None
    assert parse_procedure("start_proc_args", "/opt/mpi/start.sh $pe_hostfile $job_id") == Procedure(
        "/opt/mpi/start.sh $pe_hostfile $job_id", as_site=False)
    assert parse_procedure("stop_proc_args", "root@/opt/mpi/stop.sh ${pe}") == Procedure(
        "/opt/mpi/stop.sh ${pe}", as_site=True)
    with pytest.raises(ValueError, match="only the prefix root@ is known"):
        parse_procedure("start_proc_args", "sgeadmin@/opt/mpi/start.sh")
    with pytest.raises(ValueError, match=r"start_proc_args: unknown placeholder \$sge_root; known: \$pe_hostfile"):
        parse_procedure("start_proc_args", "/opt/start.sh $sge_root")


def test_user_lists_and_xuser_lists() -> None:
    assert may_use("alice", [], [])
    assert may_use("alice", ["alice"], []) and not may_use("bob", ["alice"], [])
    assert not may_use("alice", ["alice"], ["alice"])  # in both: refused, as sge_pe(5) says


def refusal(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "drover.toml")
    return str(caught.value)


def test_drover_toml_parallel_environments_are_read_and_checked() -> None:
    loaded = parse_config('[parallel_environments.mpi]\nslots = 16\nallocation_rule = "$fill_up"\n'
                          'start_proc_args = "root@/opt/mpi/start $pe_hostfile"\ncontrol_slaves = true\n')
    mpi = loaded.config.parallel_environments["mpi"]
    assert (mpi.slots, mpi.allocation_rule, mpi.control_slaves, mpi.job_is_first_task) == (16, "$fill_up", True, True)
    text = '[queues.fast]\nnice = 1\n\n[parallel_environments.mpi]\nslots = 4\nallocation_rule = "$fillup"\n'
    assert refusal(text) == ("drover.toml:4: [parallel_environments.mpi] allocation_rule must be $pe_slots, "
                             "$fill_up, $round_robin or a whole number of 1 or more, not '$fillup'")
    assert refusal('[parallel_environments.mpi]\nslots = 4\nstop_proc_args = "/x $nope"\n').startswith(
        "drover.toml:1: [parallel_environments.mpi] stop_proc_args: unknown placeholder $nope")
    assert refusal('[parallel_environments.mpi]\nslots = -1\n') == (
        "drover.toml:2: [parallel_environments.mpi] slots must be a whole number from 0 to 9999999, not -1")
    assert refusal('[parallel_environments.mpi]\nslot = 4\n') == (
        "drover.toml:2: [parallel_environments.mpi] unknown key 'slot' (did you mean 'slots'?)")


def test_a_range_under_a_rule_across_hosts_gets_the_largest_the_nodes_can_ever_hold() -> None:
    assert slots_across_nodes(FILL_UP, 2, 16, [4, 4, 2], pe_slots=100) == 10  # all the nodes' CPUs
    assert slots_across_nodes(ROUND_ROBIN, 2, 16, [4, 4], pe_slots=6) == 6  # the PE's slots
    assert slots_across_nodes(FILL_UP, 4, 4, [], pe_slots=100) == 4  # no node known yet: any
    assert slots_across_nodes(2, 1, 7, [4, 4, 1], pe_slots=100) == 4  # 2 on each node of 2 CPUs or more
    assert slots_across_nodes(4, 4, 16, [8, 8, 8], pe_slots=100) == 12
    with pytest.raises(ValueError, match="the nodes have 8 CPUs in all"):
        slots_across_nodes(ROUND_ROBIN, 9, 9, [4, 4], pe_slots=100)
    with pytest.raises(ValueError, match="3 slots are no multiple of 2"):
        slots_across_nodes(2, 3, 3, [4, 4], pe_slots=100)
    with pytest.raises(ValueError, match="would take 3 nodes of 2 CPUs or more, and 2 are there"):
        slots_across_nodes(2, 6, 6, [4, 4], pe_slots=100)
    with pytest.raises(ValueError, match="the parallel environment has 4 slots"):
        slots_across_nodes(2, 6, 6, [4, 4, 4], pe_slots=4)
