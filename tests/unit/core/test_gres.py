"""Generic resources on plain data (core/gres.py): every form of --gres, --gpus and a node's list,
bad input refused with the part named, and the allocation of a node's free devices checked
against every possible assignment on small inputs."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drover.core.gres import (
    Device,
    GresNeed,
    allocate,
    describe,
    devices_from_hello,
    hello_form,
    node_devices,
    parse_gpus,
    parse_request,
    parse_requests,
    total_count,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("gpu", (GresNeed("gpu", None, 1),)),
    ("gpu:2", (GresNeed("gpu", None, 2),)),
    ("gpu:a100", (GresNeed("gpu", "a100", 1),)),
    ("gpu:a100:2", (GresNeed("gpu", "a100", 2),)),
    ("gpu:3090:1", (GresNeed("gpu", "3090", 1),)),  # three parts: the middle one is a type
    ("gpu:2,nic:1", (GresNeed("gpu", None, 2), GresNeed("nic", None, 1))),
    ("nic,gpu:a100-sxm4.40g_x", (GresNeed("gpu", "a100-sxm4.40g_x", 1), GresNeed("nic", None, 1))),
    ("gpu:1,gpu:a100,gpu:2,gpu:a100:3", (GresNeed("gpu", None, 3), GresNeed("gpu", "a100", 4))),
    ("gpu:65536", (GresNeed("gpu", None, 65536),)),
    ("gpu:007", (GresNeed("gpu", None, 7),)),
    ("none", ()), ("None", ()), ("", ()), (" gpu:2 ", (GresNeed("gpu", None, 2),)),
])
def test_slurm_gres_forms(text: str, expected: tuple[GresNeed, ...]) -> None:
    assert parse_request(text) == expected


@pytest.mark.parametrize(("text", "words"), [
    ("gpu:0", "--gres 'gpu:0': the count must be 1 or more"),
    ("gpu:a100:0", "'gpu:a100:0': the count must be 1 or more"),
    ("gpu:65537", "'gpu:65537': the count must be at most 65536"),
    ("gpu:" + "9" * 1000, "the count must be at most 65536"),
    ("gpu:a100:x", "'gpu:a100:x': the count 'x' is not a number"),
    ("gpu:a100:-1", "the count '-1' is not a number"),
    ("gpu:a:1:2", "'gpu:a:1:2': write name\\[:type\\]\\[:count\\]"),
    ("1gpu", "'1gpu': the name '1gpu' must be a letter"),
    ("g-pu:1", "the name 'g-pu'"),
    ("gpu:a/b", "'gpu:a/b': the type 'a/b' may hold only"),
    ("gpu:", "the type ''"),
    (",", "--gres '': the name ''"),
    ("gpu,,nic", "--gres '': the name ''"),
    ("gpu:40000,gpu:30000", "gpu adds up to more than 65536"),
])
def test_bad_gres_is_refused_with_the_part_named(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_request(text)


def test_the_option_named_in_errors_is_the_callers() -> None:
    with pytest.raises(ValueError, match="^#SBATCH --gres 'gpu:0'"):
        parse_request("gpu:0", option="#SBATCH --gres")


def test_a_jobs_stored_list_is_one_need_a_name_and_type() -> None:
    needs = parse_requests(["nic:1,gpu:a100", "gpu:2", "none", "gpu:a100:2"])
    assert needs == (GresNeed("gpu", None, 2), GresNeed("gpu", "a100", 3), GresNeed("nic", None, 1))
    assert parse_requests([]) == ()
    with pytest.raises(ValueError, match="adds up to more than 65536"):
        parse_requests(["gpu:65536", "gpu:1"])


@pytest.mark.parametrize(("text", "expected"), [
    ("2", (GresNeed("gpu", None, 2),)),
    ("a100:1", (GresNeed("gpu", "a100", 1),)),
    ("a100:1,v100:1", (GresNeed("gpu", "a100", 1), GresNeed("gpu", "v100", 1))),
    ("1,a100:1,2", (GresNeed("gpu", None, 3), GresNeed("gpu", "a100", 1))),
])
def test_slurm_gpus_forms(text: str, expected: tuple[GresNeed, ...]) -> None:
    assert parse_gpus(text) == expected


@pytest.mark.parametrize(("text", "words"), [
    ("0", "--gpus '0': the count must be 1 or more"), ("a100", "the count 'a100' is not a number"),
    ("gpu:a100:1", "'gpu:a100:1': write \\[type:\\]count"), ("a/b:1", "the type 'a/b'"),
    ("", "the count '' is not a number"), ("70000", "at most 65536"),
])
def test_bad_gpus_are_refused(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_gpus(text)
    with pytest.raises(ValueError, match="^--gpus-per-task"):
        parse_gpus(text, option="--gpus-per-task")


def test_needs_are_written_canonically_and_counted_by_name() -> None:
    needs = [GresNeed("nic", None, 1), GresNeed("gpu", "a100", 1), GresNeed("gpu", None, 2), GresNeed("nic", None, 1)]
    assert str(GresNeed("gpu", "a100", 1)) == "gpu:a100:1" and str(GresNeed("gpu", None, 2)) == "gpu:2"
    assert describe(needs) == "gpu:2,gpu:a100:1,nic:2"
    assert describe([]) == ""
    assert total_count(needs, "gpu") == 3 and total_count(needs, "fpga") == 0


def test_a_nodes_configured_devices_are_numbered_per_name_in_the_order_listed() -> None:
    devices = node_devices(["gpu:a100:2", "gpu:v100:1", "nic:1"])
    assert devices == (Device("gpu", 0, "a100"), Device("gpu", 1, "a100"), Device("gpu", 2, "v100"), Device("nic", 0))
    assert node_devices(["gpu", "gpu:2", "fpga:x1"]) == (
        Device("gpu", 0), Device("gpu", 1), Device("gpu", 2), Device("fpga", 0, "x1"))
    assert node_devices([]) == ()
    assert [str(device) for device in devices] == ["gpu:a100", "gpu:a100", "gpu:v100", "nic"]


@pytest.mark.parametrize(("items", "words"), [
    (["gpu:0"], "^\\[execd\\] gres 'gpu:0': the count must be 1 or more"),
    (["gpu:2,nic:1"], "'gpu:2,nic:1': one resource an entry"),
    (["none"], "'none': one resource an entry"),
    (["gpu:a:b:c"], "write name"),
    (["9gpu"], "the name '9gpu'"),
])
def test_bad_node_devices_are_refused_with_the_key_named(items: list[str], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        node_devices(items, option="[execd] gres")


def test_the_hello_form_is_one_string_a_device() -> None:
    devices = node_devices(["nic:1", "gpu:a100:2", "gpu:1"])
    assert hello_form(devices) == ["gpu:a100", "gpu:a100", "gpu", "nic"]
    assert devices_from_hello(["gpu:a100", "gpu:a100", "gpu", "nic"]) == tuple(sorted(devices))
    assert devices_from_hello([]) == () and hello_form([]) == []
    with pytest.raises(ValueError, match="not numbered 0, 1, 2"):
        hello_form([Device("gpu", 1)])
    with pytest.raises(ValueError, match="'gpu:a:b' is not name or name:type"):
        devices_from_hello(["gpu:a:b"])
    with pytest.raises(ValueError, match="is not name"):
        devices_from_hello(["gpu:"])


FOUR = (Device("gpu", 0, "a100"), Device("gpu", 1, "v100"), Device("gpu", 2, "a100"), Device("gpu", 3),
        Device("nic", 0), Device("nic", 1))


@pytest.mark.parametrize(("needs", "expected"), [
    ("", {}),
    ("gpu:1", {"gpu": (0,)}),
    ("gpu:2,nic:1", {"gpu": (0, 1), "nic": (0,)}),
    ("gpu:a100:1,gpu:1", {"gpu": (0, 1)}),
    ("gpu:v100:1,gpu:2", {"gpu": (0, 1, 2)}),
    ("gpu:a100:2,gpu:2", {"gpu": (0, 1, 2, 3)}),
    ("gpu:a100:3", None),
    ("gpu:5", None),
    ("gpu:a100:2,gpu:v100:1,gpu:2", None),
    ("gpu:h100:1", None),
    ("fpga:1", None),
])
def test_allocation_examples(needs: str, expected: dict[str, tuple[int, ...]] | None) -> None:
    assert allocate(parse_request(needs) if needs else (), FOUR) == expected


def test_a_typed_need_is_served_before_the_untyped_one_of_its_task() -> None:
    """The untyped need comes first in the list and the a100 is the lowest index: served in
    order, it would take the one a100."""
    free = [Device("gpu", 0, "a100"), Device("gpu", 1, "v100")]
    assert allocate([GresNeed("gpu", None, 1), GresNeed("gpu", "a100", 1)], free) == {"gpu": (0, 1)}


def test_only_free_devices_are_given_and_each_once() -> None:
    free = [Device("gpu", 3), Device("gpu", 1), Device("gpu", 3)]
    assert allocate([GresNeed("gpu", None, 2)], free) == {"gpu": (1, 3)}
    assert allocate([GresNeed("gpu", None, 3)], free) is None
    assert allocate([GresNeed("gpu", None, 1)], iter(free)) == {"gpu": (1,)}


# Small worlds, so that every assignment can be tried.
NAMES = st.sampled_from(["gpu", "nic"])
TYPES = st.sampled_from(["", "a100", "v100"])
free_devices = st.lists(st.tuples(NAMES, st.integers(0, 5), TYPES), max_size=7).map(
    lambda rows: [Device(name, index, kind) for name, index, kind in rows])
needs_lists = st.lists(st.builds(GresNeed, NAMES, st.sampled_from([None, "a100", "v100"]), st.integers(1, 3)),
                       max_size=3)


def _units(needs: list[GresNeed]) -> list[GresNeed]:
    return [GresNeed(need.name, need.type, 1) for need in needs for _ in range(need.count)]


def _fits(device: Device, need: GresNeed) -> bool:
    return device.name == need.name and need.type in (None, device.type)


def _assignable(needs: list[GresNeed], devices: list[Device]) -> bool:
    """Whether every unit of every need can have a device of its own: every injection tried."""
    units = _units(needs)
    if len(units) > len(devices):
        return False
    return any(all(_fits(device, unit) for device, unit in zip(chosen, units, strict=True))
               for chosen in itertools.permutations(devices, len(units)))


def _distinct(free: list[Device]) -> list[Device]:
    """The free devices as the node has them: one device an index of a name."""
    seen: dict[tuple[str, int], Device] = {}
    for device in free:
        seen.setdefault((device.name, device.index), device)
    return list(seen.values())


@given(needs_lists, free_devices)
def test_allocation_is_exact_against_every_assignment(needs: list[GresNeed], free: list[Device]) -> None:
    # A device listed twice counts once; which of its listings allocate keeps is its business, so
    # the world here has one listing a device.
    free = _distinct(free)
    result = allocate(needs, free)
    assert (result is not None) == _assignable(needs, free)
    if result is None:
        return
    by_key = {(device.name, device.index): device for device in free}
    given_devices = []
    for name, indices in result.items():
        assert list(indices) == sorted(set(indices)), "each index once, sorted"
        assert all((name, index) in by_key for index in indices), "only free devices"
        assert len(indices) == total_count(needs, name), "no more, no fewer than asked"
        given_devices += [by_key[name, index] for index in indices]
    assert set(result) == {need.name for need in needs}
    assert _assignable(needs, given_devices), "every need's type and count met by what was given"


@given(needs_lists, free_devices)
def test_allocation_is_deterministic_whatever_the_order(needs: list[GresNeed], free: list[Device]) -> None:
    free = _distinct(free)
    assert allocate(needs, free) == allocate(list(reversed(needs)), list(reversed(free)))


names = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True)
# A type as --gres takes one: a signed number ("-0", "+3") is refused as a count below 1 or a sign
# (`_check_type`), never read as a type.
kinds = st.none() | st.from_regex(r"[A-Za-z0-9_.-]{1,6}", fullmatch=True).filter(
    lambda kind: not re.fullmatch(r"[-+][0-9]+", kind))


@given(st.lists(st.builds(GresNeed, names, kinds, st.integers(1, 1000)), max_size=5))
def test_describe_and_parse_are_inverses(needs: list[GresNeed]) -> None:
    canonical = parse_request(describe(needs))
    assert describe(canonical) == describe(needs)
    assert sum(need.count for need in canonical) == sum(need.count for need in needs)
    assert parse_request(describe(canonical)) == canonical


@given(st.lists(st.tuples(names, st.sampled_from(["", "a100", "v100"])), max_size=8))
def test_hello_form_and_devices_from_hello_are_inverses(announced: list[tuple[str, str]]) -> None:
    items = [f"{name}:{kind}" if kind else name for name, kind in announced]
    devices = devices_from_hello(items)
    assert devices_from_hello(hello_form(devices)) == tuple(sorted(devices))
    assert hello_form(devices_from_hello(hello_form(devices))) == hello_form(devices)
