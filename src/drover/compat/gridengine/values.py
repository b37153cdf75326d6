"""Grid Engine's value formats (sge_types(1)): times, memory amounts, task ranges, job lists.
Pure."""

from __future__ import annotations

import re

from drover.core.errors import BadRequest

# sge_types(1) "memory_specifier": k K m M g G (t T); lower case is 1000-based, upper 1024-based.
_MEMORY_FACTORS = {"k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2, "g": 1000**3, "G": 1024**3,
                   "t": 1000**4, "T": 1024**4}


def memory_bytes(text: str) -> int:
    """`2G`, `500m`, `1048576` (bytes), as Grid Engine reads a memory value."""
    body = text.strip()
    factor = _MEMORY_FACTORS.get(body[-1:], 1) if body else 1
    if factor != 1:
        body = body[:-1]
    # Digits and one point, in ASCII: float() would also take '٥', '1_0', 'nan' and 'inf'.
    if not body.isascii() or not body.replace(".", "", 1).isdigit():
        raise BadRequest(f"bad memory value {text!r}: expected a number with k, K, m, M, g, G, t or T")
    # In whole numbers: a float rounds a long number, and overflows to infinity at 1e309.
    whole, _, fraction = body.partition(".")
    places: int = 10 ** len(fraction)
    return int(whole + fraction or "0") * factor // places


def memory_mib(text: str) -> int:
    """A memory value in MiB, rounded up."""
    return -(-memory_bytes(text) // 1024**2)


def time_s(text: str) -> int | None:
    """sge_types(1) "time_specifier": `[[hours:]minutes:]seconds` (a part may be empty) or
    plain seconds; INFINITY for none (None)."""
    body = text.strip()
    if body.upper() == "INFINITY":
        return None
    parts = body.split(":")
    if len(parts) > 3 or not body or not all((p.isascii() and p.isdigit()) or p == "" for p in parts):
        raise BadRequest(f"bad time value {text!r}: expected [[hours:]minutes:]seconds")
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part or 0)
    return seconds


def hms(seconds: float) -> str:
    """A duration as qstat and qacct print one: HH:MM:SS."""
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


_RANGE = re.compile(r"^([0-9]+)(?:-([0-9]+)(?::([0-9]+))?)?$")


def task_range(text: str) -> tuple[int, int, int]:
    """`-t n[-m[:s]]` → (first, last, step)."""
    match = _RANGE.match(text.strip())
    if not match:
        raise BadRequest(f'ERROR! invalid task range "{text}": expected n[-m[:s]]')
    first = int(match.group(1))
    last = int(match.group(2) or first)
    step = int(match.group(3) or 1)
    if first < 1 or last < first or step < 1:
        raise BadRequest(f'ERROR! invalid task range "{text}": expected 1 <= n <= m and s >= 1')
    return first, last, step


def array_label(first: int, last: int, step: int) -> str:
    """How qsub names an array job's tasks: `1-10:1`."""
    return f"{first}-{last}:{step}"


def task_indices(text: str) -> list[int]:
    """A task list, `1-5:2` or `3,7` (the part after the dot of `N.1-5:2`) → the indices."""
    indices: list[int] = []
    for part in text.split(","):
        first, last, step = task_range(part)
        indices += range(first, last + 1, step)
    return indices


def job_refs(words: list[str]) -> list[tuple[str, list[int] | None]]:
    """A wc_job_range_list (sge_types(1)): ids, names or patterns, each optionally with `.TASKS`,
    separated by commas or blanks. → (id or name, task indices or None)."""
    refs: list[tuple[str, list[int] | None]] = []
    for word in words:
        if not word.strip():  # an empty word names no job: one that does not exist, not nothing
            refs.append((word, None))
            continue
        for item in word.split(","):
            if not item:
                continue
            head, dot, tasks = item.partition(".")
            if dot and (head.isascii() and head.isdigit()):
                refs.append((head, task_indices(tasks)))
            else:
                refs.append((item, None))
    return refs
