"""`#DROVER` lines in a job script: options for `drover submit`, as `#SBATCH` lines are for sbatch
and `#$` lines for qsub. Read from the top of the script up to its first command; each line's
words split as a shell splits them. Options on the command line win over them."""

from __future__ import annotations

import shlex

from drover.core.errors import BadRequest

PREFIX = "#DROVER"


def directives(script: str, source: str) -> list[tuple[int, list[str]]]:
    """(line number, words) of each directive line; `source` names the script in errors."""
    found: list[tuple[int, list[str]]] = []
    for number, line in enumerate(script.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or (number == 1 and stripped.startswith("#!")):
            continue
        if not stripped.startswith("#"):
            break  # the first command ends the directives, as in sbatch
        body = stripped[len(PREFIX):]
        if not stripped.startswith(PREFIX) or (body and not body[0].isspace()):
            continue  # a comment, or #DROVERS and the like
        try:
            words = shlex.split(body, comments=True)
        except ValueError as error:
            raise BadRequest(f"{source}: line {number}: bad {PREFIX} line: {error}") from None
        if words and not words[0].startswith("-"):
            raise BadRequest(f"{source}: line {number}: {PREFIX} {words[0]}: expected an option, such as --time 10m")
        if words:
            found.append((number, words))
    return found
