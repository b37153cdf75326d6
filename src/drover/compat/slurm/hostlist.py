"""Slurm's hostlist syntax: "node[1-3,5],gpu07" ↔ ["node1", "node2", "node3", "node5", "gpu07"]. Pure.

Several bracket groups in one name multiply ("r[1-2]n[1-2]" is r1n1 r1n2 r2n1 r2n2), and a
range keeps the zero-padding of its first number ("n[01-03]" is n01 n02 n03), as in Slurm.
"""

from __future__ import annotations

from drover.core.errors import BadRequest
from drover.slurm_layout import compress_hosts

__all__ = ["compress_hosts", "expand"]  # the compact form is written at the level the shepherd reaches

MAX_RANGE = 1 << 20  # hosts in one range, as Slurm's hostlist.c bounds it (MAX_RANGE)


def expand(text: str) -> list[str]:
    names: list[str] = []
    for part in _top_level_split(text):
        names += _expand_one(part, text)
    return names


def _expand_one(part: str, whole: str) -> list[str]:
    if "[" not in part:
        if "]" in part:
            raise BadRequest(f"bad hostlist {whole!r}: unbalanced ]")
        return [part]
    prefix, _, rest = part.partition("[")
    ranges, closing, suffix = rest.partition("]")
    if not closing or "[" in ranges:
        raise BadRequest(f"bad hostlist {whole!r}: unbalanced [")
    tails = _expand_one(suffix, whole) if suffix else [""]
    out: list[str] = []
    for piece in ranges.split(","):
        first, dash, last = piece.partition("-")
        if not piece.isascii() or not first.isdigit() or (dash and not last.isdigit()):
            raise BadRequest(f"bad hostlist {whole!r}: {piece!r} is not a number or a range")
        low, high = int(first), int(last if dash else first)
        if low > high:
            raise BadRequest(f"bad hostlist {whole!r}: invalid range {piece!r}")
        if high - low + 1 > MAX_RANGE:
            raise BadRequest(f"bad hostlist {whole!r}: too many hosts in range {piece!r}")
        width = len(first)
        for number in range(low, high + 1):
            out += [f"{prefix}{number:0{width}d}{tail}" for tail in tails]
    return out


def _top_level_split(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        current += char
    if current:
        parts.append(current)
    return [p for p in parts if p]
