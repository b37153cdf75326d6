"""Slurm's hostlist syntax: "node[1-3,5],gpu07" ↔ ["node1", "node2", "node3", "node5", "gpu07"]. Pure."""

from __future__ import annotations

from drover.core.errors import BadRequest


def expand(text: str) -> list[str]:
    names: list[str] = []
    for part in _top_level_split(text):
        if "[" not in part:
            names.append(part)
            continue
        prefix, _, rest = part.partition("[")
        ranges, closing, suffix = rest.partition("]")
        if not closing:
            raise BadRequest(f"bad hostlist {text!r}: unbalanced [")
        for piece in ranges.split(","):
            first, dash, last = piece.partition("-")
            if not dash:
                names.append(prefix + first + suffix)
                continue
            width = len(first)
            for number in range(int(first), int(last) + 1):
                names.append(f"{prefix}{number:0{width}d}{suffix}")
    return names


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
