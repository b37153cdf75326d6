"""Licences: cluster-wide counters a job's tasks hold while they run (Slurm's -L/--licenses,
Grid Engine's consumable complexes). Pure: text in, counts out."""

from __future__ import annotations

import re
from collections.abc import Mapping

MAX_COUNT = 1_000_000
# A name as Slurm's licenses.conf spells one; `name@server` (a remote licence) is a name whole.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+\-]*")


def parse_licenses(text: str) -> dict[str, int]:
    """`matlab:2,foo` → {"matlab": 2, "foo": 1}: NAME[:COUNT] joined with commas, COUNT 1 when
    omitted; a name given twice asks for the sum. Raises ValueError naming the bad part."""
    if not text.strip():
        raise ValueError("no licence named; give NAME[:COUNT][,NAME[:COUNT]...], e.g. matlab:2")
    counts: dict[str, int] = {}
    for part in text.split(","):
        item = part.strip()
        if not item:
            raise ValueError(f"{text!r}: an empty licence between commas")
        if "|" in item:
            raise ValueError(f"{item!r}: one of several licences (a|b) is not supported; name each licence needed")
        name, colon, count_text = item.partition(":")
        name = name.strip()
        if not _NAME.fullmatch(name):
            raise ValueError(f"{item!r}: {name!r} is not a licence name (letters, digits, _ . @ + -)")
        count = 1
        if colon:
            count_text = count_text.strip()
            if not count_text.isascii() or not count_text.isdigit():
                raise ValueError(f"{item!r}: the count after ':' must be a whole number, not {count_text!r}")
            count = int(count_text)
            if not 1 <= count <= MAX_COUNT:
                raise ValueError(f"{item!r}: the count must be from 1 to {MAX_COUNT:,}, not {count}")
        total = counts.get(name, 0) + count
        if total > MAX_COUNT:
            raise ValueError(f"{name!r}: {total} in all, more than the limit of {MAX_COUNT:,}")
        counts[name] = total
    return counts


def describe_licenses(licenses: Mapping[str, int]) -> str:
    """{"matlab": 2, "foo": 1} → "foo:1,matlab:2": sorted by name, as squeue and scontrol show them."""
    return ",".join(f"{name}:{count}" for name, count in sorted(licenses.items()))
