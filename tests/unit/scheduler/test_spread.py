"""sge_pe(5)'s allocation rules spread a parallel job's slots over nodes, on plain data: which
nodes, how many slots each, the master node first (the pe_hostfile's "number of reserved slots
(tasks) per host")."""

from __future__ import annotations

import pytest

from drover.scheduler.spread import free_slots, nodes_needed, spread

NODES = [("n1", 4), ("n2", 4), ("n3", 2)]  # most suitable first


def test_pe_slots_puts_all_slots_on_one_host() -> None:
    assert spread("$pe_slots", 4, NODES) == (("n1", 4),)
    assert spread("$pe_slots", 2, [("n1", 1), ("n2", 3)]) == (("n2", 2),)
    assert spread("$pe_slots", 5, NODES) is None


def test_fill_up_fills_each_host_before_the_next() -> None:
    assert spread("$fill_up", 3, NODES) == (("n1", 3),)
    assert spread("$fill_up", 6, NODES) == (("n1", 4), ("n2", 2))
    assert spread("$fill_up", 10, NODES) == (("n1", 4), ("n2", 4), ("n3", 2))
    assert spread("$fill_up", 11, NODES) is None


def test_round_robin_takes_one_slot_of_each_host_in_turn() -> None:
    assert spread("$round_robin", 2, NODES) == (("n1", 1), ("n2", 1))
    assert spread("$round_robin", 3, NODES) == (("n1", 1), ("n2", 1), ("n3", 1))
    assert spread("$round_robin", 7, NODES) == (("n1", 3), ("n2", 2), ("n3", 2))


def test_round_robin_starts_again_from_the_first_host_and_skips_full_ones() -> None:
    assert spread("$round_robin", 9, NODES) == (("n1", 4), ("n2", 3), ("n3", 2))
    assert spread("$round_robin", 10, NODES) == (("n1", 4), ("n2", 4), ("n3", 2))
    assert spread("$round_robin", 11, NODES) is None


def test_an_integer_rule_fixes_the_number_of_slots_on_each_host() -> None:
    assert spread(2, 4, NODES) == (("n1", 2), ("n2", 2))
    assert spread(2, 6, NODES) == (("n1", 2), ("n2", 2), ("n3", 2))
    assert spread(4, 8, NODES) == (("n1", 4), ("n2", 4))
    assert spread(4, 12, NODES) is None  # n3 has 2 free
    assert spread(4, 6, NODES) is None  # not a multiple of 4: never


def test_an_integer_rule_of_one_puts_every_slot_on_another_host() -> None:
    assert spread(1, 3, NODES) == (("n1", 1), ("n2", 1), ("n3", 1))
    assert spread(1, 4, NODES) is None


def test_nodes_without_free_slots_are_passed_over() -> None:
    nodes = [("n1", 0), ("n2", 2), ("n3", 0), ("n4", 2)]
    assert spread("$round_robin", 2, nodes) == (("n2", 1), ("n4", 1))
    assert spread("$fill_up", 3, nodes) == (("n2", 2), ("n4", 1))
    assert spread(2, 2, nodes) == (("n2", 2),)
    assert spread("$fill_up", 1, []) is None


@pytest.mark.parametrize("rule", ["$pe_slots", "$fill_up", "$round_robin", 1])
def test_no_slots_never_fit(rule: str | int) -> None:
    assert spread(rule, 0, NODES) is None


def test_an_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown allocation rule"):
        spread("$fillup", 2, NODES)


def test_the_fewest_nodes_a_rule_could_ever_take() -> None:
    assert nodes_needed("$pe_slots", 8, 8) == 1
    assert nodes_needed("$pe_slots", 9, 8) is None
    assert nodes_needed("$fill_up", 17, 8) == 3
    assert nodes_needed("$round_robin", 8, 8) == 1
    assert nodes_needed(4, 12, 8) == 3
    assert nodes_needed(4, 10, 8) is None
    assert nodes_needed(16, 16, 8) is None


def test_a_nodes_free_slots_count_each_slots_memory() -> None:
    assert free_slots(8, 4096, 0) == 8
    assert free_slots(8, 4096, 1024) == 4
    assert free_slots(2, 4096, 1024) == 2
