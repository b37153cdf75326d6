"""Generic resources (GPUs, NICs, anything a node has a countable few of), Slurm's GRES: what a
job's tasks ask for (--gres, --gpus), what a node has, and which of a node's free devices a task
gets. Pure.

A node's devices are numbered from 0 per name, in the node's order; a task is given device
indices, which become its CUDA_VISIBLE_DEVICES and SGE_HGR_<name>. A request names a resource,
optionally a type, and a count: "gpu:a100:2" wants two a100 GPUs, "gpu:2" any two GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MAX_COUNT = 65536  # Slurm's limit of one request, and more devices than any node has
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_TYPE = re.compile(r"[A-Za-z0-9_.-]+")
_COUNT = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class GresNeed:
    """What each task of a job needs on its node: `count` devices named `name`, of `type` (None:
    of any type)."""

    name: str
    type: str | None
    count: int

    def __str__(self) -> str:
        # The count always written, so that "gpu:2" (two of any type) never reads as a type.
        return f"{self.name}:{self.type}:{self.count}" if self.type else f"{self.name}:{self.count}"


@dataclass(frozen=True, slots=True, order=True)
class Device:
    """One device of a node: its name, its index among the node's devices of that name, and its
    type ("" untyped)."""

    name: str
    index: int
    type: str = ""

    def __str__(self) -> str:
        """As the node announces it: "gpu:a100" or "nic"; the index is the position."""
        return f"{self.name}:{self.type}" if self.type else self.name


def parse_request(text: str, *, option: str = "--gres") -> tuple[GresNeed, ...]:
    """One --gres value: a comma list of name[:type][:count], the count 1 when left out; "none"
    (or nothing, as describe writes no needs) for none. A part of digits only is a count
    ("gpu:2"), any other a type ("gpu:a100"). The same name and type twice are one need of both
    counts. Sorted by name, then type."""
    stripped = text.strip()
    if stripped.lower() in ("none", ""):
        return ()
    needs = []
    for part in stripped.split(","):
        fields = part.split(":")
        if len(fields) == 1:
            name, kind, count = fields[0], None, 1
        elif len(fields) == 2:
            if _COUNT.fullmatch(fields[1]):
                name, kind, count = fields[0], None, _count(fields[1], option, part)
            else:
                name, kind, count = fields[0], fields[1], 1
        elif len(fields) == 3:
            name, kind, count = fields[0], fields[1], _count(fields[2], option, part)
        else:
            raise ValueError(f"{option} {part!r}: write name[:type][:count], e.g. gpu:a100:2")
        _check_name(name, option, part)
        if kind is not None:
            _check_type(kind, option, part)
        needs.append(GresNeed(name, kind, count))
    return _checked(_merged(needs), option, text)


def parse_requests(items: Iterable[str], *, option: str = "--gres") -> tuple[GresNeed, ...]:
    """A job's stored list of --gres values, as one: merged, sorted by name, then type."""
    texts = list(items)
    needs = [need for text in texts for need in parse_request(text, option=option)]
    return _checked(_merged(needs), option, ",".join(texts))


def parse_gpus(text: str, *, option: str = "--gpus") -> tuple[GresNeed, ...]:
    """Slurm's --gpus and --gpus-per-task: a comma list of [type:]count, e.g. "2", "a100:1",
    "a100:1,v100:1"; GPUs named "gpu"."""
    needs = []
    for part in text.strip().split(","):
        fields = part.split(":")
        if len(fields) == 1:
            kind, count_text = None, fields[0]
        elif len(fields) == 2:
            kind, count_text = fields[0], fields[1]
            _check_type(kind, option, part)
        else:
            raise ValueError(f"{option} {part!r}: write [type:]count, e.g. 2 or a100:1")
        needs.append(GresNeed("gpu", kind, _count(count_text, option, part)))
    return _checked(_merged(needs), option, text)


def describe(needs: Iterable[GresNeed]) -> str:
    """The canonical form, which parse_request reads back: "gpu:a100:1,nic:1"; "" for none."""
    return ",".join(str(need) for need in _merged(needs))


def total_count(needs: Iterable[GresNeed], name: str) -> int:
    """How many devices named `name` the needs add up to (a task's GPUs, whatever their type)."""
    return sum(need.count for need in needs if need.name == name)


def node_devices(items: Iterable[str], *, option: str = "gres") -> tuple[Device, ...]:
    """A node's devices from its configured list, each entry name[:type][:count] (count 1 when
    left out): ["gpu:a100:2", "gpu:v100:1", "nic:1"] is gpu 0 and 1 (a100), gpu 2 (v100) and
    nic 0, numbered per name in the order listed."""
    devices: list[Device] = []
    next_index: dict[str, int] = {}
    for item in items:
        # An entry is one part of a request: the same forms, the same checks, no merging.
        if "," in item or item.strip().lower() == "none":
            raise ValueError(f"{option} {item!r}: one resource an entry, as name[:type][:count]")
        (need,) = parse_request(item, option=option)
        first = next_index.get(need.name, 0)
        devices += [Device(need.name, index, need.type or "") for index in range(first, first + need.count)]
        next_index[need.name] = first + need.count
    return tuple(devices)


def devices_from_hello(items: Sequence[str]) -> tuple[Device, ...]:
    """A node's devices as it announced them: ["gpu:a100", "gpu:a100", "nic"] is gpu 0 and 1
    (a100) and nic 0; each name's devices numbered in the order given."""
    devices = []
    next_index: dict[str, int] = {}
    for item in items:
        name, colon, kind = item.partition(":")
        if not _NAME.fullmatch(name) or (colon and not _TYPE.fullmatch(kind)):
            raise ValueError(f"a node's device {item!r} is not name or name:type")
        index = next_index.get(name, 0)
        devices.append(Device(name, index, kind))
        next_index[name] = index + 1
    return tuple(devices)


def hello_form(devices: Iterable[Device]) -> list[str]:
    """How a node announces its devices, which devices_from_hello reads back: one string a
    device, by name, then index. Each name's indices must be 0, 1, 2...: the position is the
    index."""
    ordered = sorted(devices)
    next_index: dict[str, int] = {}
    for device in ordered:
        if device.index != next_index.get(device.name, 0):
            raise ValueError(f"the devices named {device.name} are not numbered 0, 1, 2...")
        next_index[device.name] = device.index + 1
    return [str(device) for device in ordered]


def allocate(needs: Sequence[GresNeed], free: Iterable[Device]) -> dict[str, tuple[int, ...]] | None:
    """Which of the free devices a task gets: name → its indices, sorted; None when the needs
    cannot be met; {} for no needs. Lowest indices first. Typed needs are served before the
    untyped need of the same name, which takes any of what is left: so "gpu:1" never takes the
    one a100 that "gpu:a100:1" of the same task needs, and whatever can be met is."""
    if not needs:
        return {}  # the planner's common case: no walk over the node's devices
    wanted: dict[str, dict[str | None, int]] = {}
    for need in needs:
        per_type = wanted.setdefault(need.name, {})
        per_type[need.type] = per_type.get(need.type, 0) + need.count
    pools: dict[str, dict[int, str]] = {name: {} for name in wanted}
    for device in free:
        pool = pools.get(device.name)
        if pool is not None:
            pool[device.index] = device.type  # a device listed twice is still one device
    result: dict[str, tuple[int, ...]] = {}
    for name, per_type in wanted.items():
        available = sorted(pools[name].items())
        taken: set[int] = set()
        # Each type's devices serve only its need, so serving the typed needs first never costs
        # the untyped one a device it could have had and another need could not.
        for kind, count in per_type.items():
            if kind is not None and count > 0:
                chosen = [index for index, device_type in available if device_type == kind][:count]
                if len(chosen) < count:
                    return None
                taken.update(chosen)
        untyped = per_type.get(None, 0)
        if untyped > 0:
            chosen = [index for index, _ in available if index not in taken][:untyped]
            if len(chosen) < untyped:
                return None
            taken.update(chosen)
        result[name] = tuple(sorted(taken))
    return result


def _merged(needs: Iterable[GresNeed]) -> tuple[GresNeed, ...]:
    """One need a name and type, counts summed; sorted by name, then type (untyped first)."""
    counts: dict[tuple[str, str | None], int] = {}
    for need in needs:
        key = (need.name, need.type)
        counts[key] = counts.get(key, 0) + need.count
    ordered = sorted(counts.items(), key=lambda item: (item[0][0], item[0][1] or ""))
    return tuple(GresNeed(name, kind, count) for (name, kind), count in ordered)


def _checked(needs: tuple[GresNeed, ...], option: str, text: str) -> tuple[GresNeed, ...]:
    # Each part is bounded, but parts of the same name and type add up.
    for need in needs:
        if need.count > MAX_COUNT:
            raise ValueError(f"{option} {text!r}: {need.name}{':' + need.type if need.type else ''} "
                             f"adds up to more than {MAX_COUNT}")
    return needs


def _count(text: str, option: str, part: str) -> int:
    if not _COUNT.fullmatch(text):
        raise ValueError(f"{option} {part!r}: the count {text!r} is not a number")
    # Bounded before int(): a thousand digits are refused without being read.
    count = int(text) if len(text) <= 6 else MAX_COUNT + 1
    if count < 1:
        raise ValueError(f"{option} {part!r}: the count must be 1 or more")
    if count > MAX_COUNT:
        raise ValueError(f"{option} {part!r}: the count must be at most {MAX_COUNT}")
    return count


def _check_name(name: str, option: str, part: str) -> None:
    if not _NAME.fullmatch(name):
        raise ValueError(f"{option} {part!r}: the name {name!r} must be a letter, then letters, digits or _")


def _check_type(kind: str, option: str, part: str) -> None:
    if re.fullmatch(r"[-+][0-9]+", kind):  # a signed count, not a type named "-1"
        raise ValueError(f"{option} {part!r}: the count must be 1 or more")
    if not _TYPE.fullmatch(kind):
        raise ValueError(f"{option} {part!r}: the type {kind!r} may hold only letters, digits, _ . and -")
