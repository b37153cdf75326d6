"""Parse what users type for memory, time limits and array ranges. Pure; cheap to import.

Formats follow Slurm, since that is what most users type today:
- memory: ``512`` (MiB), ``512M``, ``4G``, ``1.5G``, ``2T``, ``100K``; a trailing ``B`` or ``iB`` is
  allowed. Units are binary (1G = 1024M), as in Slurm and Grid Engine.
- time: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS`` (Slurm), or a number
  with a unit: ``90s``, ``10m``, ``2h``, ``1d``. A bare number is minutes, as in Slurm.
- arrays: ``1-10``, ``1-10:2``, ``1,4,7-9``, each optionally ending ``%N`` (at most N at once).
"""

from __future__ import annotations

from drover.core.errors import BadRequest
from drover.core.limits import MAX_INDEX

_MEMORY_UNITS_KIB = {"K": 1, "M": 1024, "G": 1024 ** 2, "T": 1024 ** 3}
_TIME_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_ARRAY_TASKS = 1_000_000  # the default of max_array_size (core/limits.py)


def _scaled_up(decimal: str, numerator: int, denominator: int = 1) -> int:
    """`decimal` ("12" or "1.5", ASCII digits) times numerator / denominator, rounded up, in
    whole numbers: a float would round a long number, and overflow to infinity at 1e309."""
    whole, _, fraction = decimal.partition(".")
    scaled = int(whole + fraction or "0") * numerator
    places: int = 10 ** len(fraction)
    return -(-scaled // (denominator * places))


def parse_memory_mib(text: str) -> int:
    """Return a memory amount in MiB, rounded up."""
    raw = text.strip()
    body = raw.upper()
    for suffix in ("IB", "B"):
        if body.endswith(suffix) and len(body) > len(suffix) and body[-len(suffix) - 1] in _MEMORY_UNITS_KIB:
            body = body[: -len(suffix)]
            break
    factor_kib = 1024
    if body and body[-1] in _MEMORY_UNITS_KIB:
        factor_kib = _MEMORY_UNITS_KIB[body[-1]]
        body = body[:-1]
    # Digits and one point, in ASCII: float() would also take '٥', '1_0', '1e3', 'nan' and 'inf'.
    if not body.isascii() or not body.replace(".", "", 1).isdigit():
        if body.startswith("-") and body[1:].replace(".", "", 1).isdigit():
            raise BadRequest(f"bad memory amount {text!r}: must be zero or more")
        raise BadRequest(f"bad memory amount {text!r}: expected e.g. 512M, 4G or 1.5G")
    return _scaled_up(body, factor_kib, 1024)


def parse_duration_s(text: str) -> int:
    """Return a time limit in whole seconds (Slurm's formats, or a number with s/m/h/d)."""
    raw = text.strip()
    bad = BadRequest(
        f"bad time {text!r}: expected minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]], or e.g. 90s, 10m, 2h, 1d"
    )
    if not raw or not raw.isascii():  # str.isdigit() below would take '٣'
        raise bad
    if raw[-1].lower() in _TIME_UNITS_S and raw[:-1].replace(".", "", 1).isdigit():
        return _scaled_up(raw[:-1], _TIME_UNITS_S[raw[-1].lower()])
    days = 0
    rest = raw
    if "-" in raw:
        day_text, _, rest = raw.partition("-")
        if not day_text.isdigit() or not rest:
            raise bad
        days = int(day_text)
    parts = rest.split(":")
    if not all(part.isdigit() for part in parts) or len(parts) > 3:
        raise bad
    numbers = [int(part) for part in parts]
    if "-" in raw:
        # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = (numbers + [0, 0])[:3]
    elif len(numbers) == 1:
        hours, minutes, seconds = 0, numbers[0], 0
    elif len(numbers) == 2:
        hours, minutes, seconds = 0, numbers[0], numbers[1]
    else:
        hours, minutes, seconds = numbers
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def format_duration(seconds: float | None) -> str:
    """Slurm-style elapsed time: ``MM:SS``, ``HH:MM:SS`` or ``D-HH:MM:SS``."""
    if seconds is None:
        return "-"
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{minutes:02d}:{secs:02d}"


def format_memory_kib(kib: int | None) -> str:
    if kib is None:
        return "-"
    for unit, size in (("G", 1024 * 1024), ("M", 1024)):
        if kib >= size:
            return f"{kib / size:.1f}{unit}"
    return f"{kib}K"


def _index(text: str) -> int:
    """An array index, step or count: ASCII digits, at most MAX_INDEX (int() alone takes '٣'
    and '1_0', and any size)."""
    if not text.isascii() or not text.isdigit() or len(text) > 10 or int(text) > MAX_INDEX:
        if text.isascii() and text.isdigit():
            raise BadRequest(f"array indices are at most {MAX_INDEX}, not {text}")
        raise ValueError(text)
    return int(text)


def parse_array(text: str, max_tasks: int = MAX_ARRAY_TASKS) -> tuple[tuple[tuple[int, int, int], ...], int | None]:
    """``"1-10:2%3"`` → (((1, 10, 2),), 3). Ranges are inclusive; indices must not repeat, and
    lie within 0..MAX_INDEX (2^31 - 1, as Grid Engine and Slurm bound them); at most
    `max_tasks` tasks (the cluster's max_array_size)."""
    raw = text.strip()
    max_running: int | None = None
    if "%" in raw:
        raw, _, limit = raw.partition("%")
        if not limit.isascii() or not limit.isdigit() or len(limit) > 10 or not 1 <= int(limit) <= MAX_INDEX:
            raise BadRequest(f"bad array {text!r}: the number after % must be between 1 and {MAX_INDEX}")
        max_running = int(limit)
    ranges: list[tuple[int, int, int]] = []
    for part in raw.split(","):
        body, _, step_text = part.partition(":")
        first_text, dash, last_text = body.partition("-")
        try:
            first = _index(first_text)
            last = _index(last_text) if dash else first
            step = _index(step_text) if step_text else 1
        except ValueError:
            raise BadRequest(
                f"bad array {text!r}: expected e.g. 1-100, 1-100:2, 1,3,5-9, with an optional %N"
            ) from None
        if first < 0 or last < first or step < 1:
            raise BadRequest(f"bad array {text!r}: {part!r} must be FIRST-LAST with 0 <= FIRST <= LAST and STEP >= 1")
        last = first + (last - first) // step * step
        ranges.append((first, last, step))
    count = sum((last - first) // step + 1 for first, last, step in ranges)
    if count > max_tasks:
        raise BadRequest(f"bad array {text!r}: {count} tasks is over this cluster's limit of {max_tasks} "
                         "(max_array_size in [controller] of drover.toml)")
    seen: set[int] = set()
    if len(ranges) > 1:
        for first, last, step in ranges:
            block = set(range(first, last + 1, step))
            if seen & block:
                raise BadRequest(f"bad array {text!r}: index {min(seen & block)} appears twice")
            seen |= block
    return tuple(ranges), max_running
