"""Grid Engine's parallel environments (sge_pe(5)) on plain data: the allocation rule, a job's
slot request ("4", "2-8"), the start and stop procedures' `user@` prefix and placeholders, and
who may use a PE. Pure: no I/O.

Placeholders ($pe_hostfile, $host, $job_owner, $job_id, $job_name, $pe, $pe_slots, $processors,
$queue) are checked here when drover.toml is read, and replaced by the shepherd when it runs a
procedure (shepherd/parallel.py, which repeats the list: the shepherd imports no core module).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from drover.method_command import placeholder_names

PE_SLOTS, FILL_UP, ROUND_ROBIN = "$pe_slots", "$fill_up", "$round_robin"
RULES = (PE_SLOTS, FILL_UP, ROUND_ROBIN)
PLACEHOLDERS = ("pe_hostfile", "host", "job_owner", "job_id", "job_name", "pe", "pe_slots", "processors", "queue")
MAX_SLOTS = 9_999_999  # sge_pe(5): "valid values are 0 to 9999999"
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_USER_PREFIX = re.compile(r"([a-z_][a-z0-9_.-]*)@(?=\S)")


def parse_allocation_rule(text: str) -> str | int:
    """$pe_slots, $fill_up, $round_robin, or a whole number of slots on each node."""
    if text in RULES:
        return text
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise ValueError(f"allocation_rule must be $pe_slots, $fill_up, $round_robin or a whole number of 1 or more, "
                     f"not {text!r}")


@dataclass(frozen=True, slots=True)
class Procedure:
    """A start or stop procedure: its command line, and whether it runs as the node daemon's user
    (the "root@" prefix) rather than as the job's owner (sge_pe(5): "An optional prefix "user@"
    specifies the user under which this procedure is to be started"; without one, the owner)."""

    command: str
    as_site: bool


def parse_procedure(key: str, text: str | None) -> Procedure | None:
    """start_proc_args or stop_proc_args: None for unset or NONE; ValueError, naming `key`, for a
    user prefix other than root@ or a placeholder sge_pe(5) does not define."""
    if text is None or not text.strip() or text.strip() == "NONE":
        return None
    command, as_site = text.strip(), False
    prefix = _USER_PREFIX.match(command)
    if prefix is not None and "/" not in prefix[1]:
        if prefix[1] != "root":
            raise ValueError(f"{key}: only the prefix root@ is known (the node daemon's user); without a prefix "
                             f"the procedure runs as the job's owner, not {prefix[1]}@")
        command, as_site = command[prefix.end():], True
    for name in placeholder_names(command):
        if name not in PLACEHOLDERS:
            raise ValueError(f"{key}: unknown placeholder ${name}; known: "
                             + ", ".join(f"${known}" for known in PLACEHOLDERS))
    if "\0" in command:
        raise ValueError(f"{key} must not hold a NUL byte")
    return Procedure(command, as_site)


def parse_slots(text: str, most: int = MAX_SLOTS) -> tuple[int, int]:
    """qsub's -pe range: "4", "2-8", "-8" (1 to 8), "2-" (2 to `most`); each of 1 or more."""
    text = text.strip()
    found = re.fullmatch(r"(\d*)(-?)(\d*)", text)
    if not text or found is None or (not found[1] and not found[3]) or (not found[2] and not found[1]):
        raise ValueError(f"the slots of a parallel environment are a number or a range n-m, not {text!r}")
    low = int(found[1]) if found[1] else 1
    high = int(found[3]) if found[3] else (most if found[2] else low)
    if low < 1 or high < low:
        raise ValueError(f"the slot range {text!r} must run from 1 or more upwards")
    return low, high


def slots_on_one_node(rule: str | int, low: int, high: int, largest_node: int, pe_slots: int) -> int:
    """How many slots a job asking for low..high gets on one node under `rule`: the largest of
    the range that a node of `largest_node` CPUs and the PE's `pe_slots` can ever hold (an integer
    rule fixes the slots on each node, so one node holds exactly that many). ValueError, in the
    user's words, when none can."""
    if isinstance(rule, int):
        if low <= rule <= high and rule <= largest_node:
            return rule
        raise ValueError(f"the allocation rule {rule} puts {_slots(rule)} on each node: {_range(low, high)} "
                         f"slots would take {_nodes(low, high, rule)} nodes, and a job runs on one node")
    best = min(high, largest_node, pe_slots)
    if best < low:
        holder = (f"the parallel environment has {pe_slots} slots" if pe_slots < min(high, largest_node)
                  else f"the largest node has {largest_node} CPUs")
        raise ValueError(f"{_range(low, high)} slots cannot run on one node: {holder}")
    return best


def slots_across_nodes(rule: str | int, low: int, high: int, node_cpus: list[int], pe_slots: int) -> int:
    """How many slots a job asking for low..high gets when `rule` ($fill_up, $round_robin or an
    integer) spreads them over the nodes (`node_cpus`: each node's CPUs; none known: any): the
    largest of the range that the nodes and the PE's `pe_slots` can ever hold. ValueError, in the
    user's words, when none can."""
    total = sum(node_cpus) if node_cpus else high
    if isinstance(rule, int):
        if high // rule * rule < low:
            raise ValueError(f"the allocation rule {rule} puts {_slots(rule)} on each node: {_range(low, high)} slots "
                             f"are no multiple of {rule}")
        hosts = sum(1 for cpus in node_cpus if cpus >= rule) if node_cpus else high
        most = min(high, pe_slots, rule * hosts) // rule * rule
        if most >= low and most >= rule:
            return most
        raise ValueError(f"the allocation rule {rule} puts {_slots(rule)} on each node: {_range(low, high)} slots "
                         f"would take {_nodes(low, high, rule)} nodes of {rule} CPU{'s' if rule > 1 else ''} or more, and "
                         f"{hosts} {'is' if hosts == 1 else 'are'} there" if pe_slots >= low
                         else f"the parallel environment has {pe_slots} slots")
    best = min(high, total, pe_slots)
    if best < low:
        holder = (f"the parallel environment has {pe_slots} slots" if pe_slots < min(high, total)
                  else f"the nodes have {total} CPUs in all")
        raise ValueError(f"{_range(low, high)} slots cannot run: {holder}")
    return best


def _range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _slots(count: int) -> str:
    return f"{count} slot{'s' if count != 1 else ''}"


def _nodes(low: int, high: int, rule: int) -> str:
    counts = sorted({-(-count // rule) for count in (low, high)})
    return "-".join(str(count) for count in counts)


def may_use(owner: str, user_lists: list[str], xuser_lists: list[str]) -> bool:
    """sge_pe(5) user_lists and xuser_lists (here lists of user names): a user in xuser_lists is
    refused; when user_lists is set, only its users are let in."""
    if owner in xuser_lists:
        return False
    return not user_lists or owner in user_lists

