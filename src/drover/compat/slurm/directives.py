"""#SBATCH directives: read from the script, before its first command, as sbatch does; the
command line wins over them. Pure: returns the argument list to parse."""

from __future__ import annotations

import shlex

from drover.core.errors import BadRequest


def directives(script: str, prefix: str = "#SBATCH") -> list[str]:
    """The options in the script's #SBATCH lines, in order. Like sbatch, reading stops at the
    first line that is neither a comment nor blank."""
    found: list[str] = []
    for number, line in enumerate(script.splitlines(), start=1):
        stripped = line.strip()
        if number == 1 and stripped.startswith("#!"):
            continue
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        if not stripped.startswith(prefix):
            continue
        body = stripped[len(prefix):]
        if body and not body[0].isspace():
            continue  # e.g. "#SBATCHX": not a directive
        body = body.split(" #", 1)[0]  # a trailing comment
        try:
            words = shlex.split(body)
        except ValueError as error:
            raise BadRequest(f"line {number}: bad {prefix} directive {stripped!r}: {error}") from None
        if words and not words[0].startswith("-"):
            raise BadRequest(f"line {number}: bad {prefix} directive {stripped!r}: expected an option such as --time")
        found.extend(words)
    return found
