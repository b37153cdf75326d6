"""Expand output file patterns: %j job id, %a array index, %x name, %u user, %N node, %% a percent. Pure."""

from __future__ import annotations

from drover.core.errors import BadRequest

KNOWN = "jaxuAN%"


def check_pattern(pattern: str) -> None:
    """Reject unknown placeholders at submission, before anything is stored."""
    position = pattern.find("%")
    while position != -1:
        letter = pattern[position + 1 : position + 2]
        if letter not in KNOWN or not letter:
            raise BadRequest(
                f"bad file pattern {pattern!r}: unknown placeholder %{letter} "
                "(known: %j job id, %a array index, %x name, %u user, %N node, %% percent)"
            )
        position = pattern.find("%", position + 2)


def expand(pattern: str, *, job_id: int, index: int, name: str, user: str, node: str = "%N") -> str:
    """`node` is known once the task is placed; before that %N stays as it is."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "%" and i + 1 < len(pattern):
            letter = pattern[i + 1]
            value = {"j": str(job_id), "A": str(job_id), "a": str(index), "x": name, "u": user, "N": node,
                     "%": "%"}.get(letter)
            if value is not None:
                out.append(value)
                i += 2
                continue
        out.append(char)
        i += 1
    return "".join(out)


def default_output(is_array: bool) -> str:
    """Like Slurm's slurm-%j.out and slurm-%A_%a.out, with stderr joined unless asked otherwise."""
    return "drover-%j_%a.out" if is_array else "drover-%j.out"
