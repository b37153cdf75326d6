"""A job script's arguments, as sbatch and qsub pass them (`SCRIPT ARG...`): the job runs the
script with bash, so they become its $1 $2 ... by a `set --` line at its top. Pure."""

from __future__ import annotations

import shlex


def with_arguments(script: str, arguments: list[str]) -> str:
    """`script` with `set -- ARGUMENTS` after its #! line (or first, without one); unchanged
    without arguments. Its other lines keep their order, its #! line its place."""
    if not arguments:
        return script
    set_arguments = f"set -- {shlex.join(arguments)}\n"
    first, _, rest = script.partition("\n")
    if first.startswith("#!"):
        return first + "\n" + set_arguments + rest
    return set_arguments + script
