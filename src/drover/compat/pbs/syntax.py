"""PBS's command-line syntax: its commands parse with getopt(3) (`-N name`, `-Nname`, `-hz`, `--`
ending the options), and qsub reads the same options from a script's directives: the `#PBS`
lines (another prefix with -C or $PBS_DPREFIX) of the script's first block of comments, up to its
first command. Pure."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable, Sequence

from drover.compat.optiontable import Given as Given  # the one shape PBS and LSF share
from drover.compat.optiontable import Option, UsageError, parse_gnu

EXIT_USAGE = 2  # qsub, qstat, qdel...: a bad command line


class PbsUsageError(Exception):
    """A command line or directive PBS refuses: its message, and whether the usage follows."""

    def __init__(self, message: str, status: int = EXIT_USAGE, usage: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.usage = usage


def parse(command: str, words: Sequence[str], options: Iterable[Option], permute: bool = True,
          source: str = "command line") -> tuple[list[Given], list[str]]:
    """The options given, in order, and the operands; getopt's own words for what it refuses."""
    try:
        found, operands = parse_gnu(list(words), options, permute)
    except UsageError as error:
        raise PbsUsageError(f"{command}: {error}") from None
    return [Given(option, value, source) for option, value in found], operands


def last(given: list[Given], key: str) -> Given | None:
    found = [g for g in given if g.key == key]
    return found[-1] if found else None


def every(given: list[Given], key: str) -> list[str]:
    return [g.value for g in given if g.key == key and g.value is not None]


def directive_words(script: str, prefix: str) -> list[str]:
    """The words of the script's directives: lines starting with `prefix`, read until the first
    line that is neither blank nor a comment (qsub stops there, as PBS does). An empty prefix
    reads none."""
    words: list[str] = []
    if not prefix:
        return words
    for number, line in enumerate(script.splitlines()):
        stripped = line.strip()
        if line.startswith(prefix):
            try:
                words += shlex.split(line[len(prefix):])
            except ValueError:
                raise PbsUsageError(f"qsub: directive error: {line}", usage=False) from None
            continue
        if stripped and not stripped.startswith("#") and not (number == 0 and stripped.startswith("#!")):
            break
    return words


def print_error(error: PbsUsageError, usage: str) -> int:
    print(error, file=sys.stderr)
    if error.usage and usage:
        print(usage, file=sys.stderr)
    return error.status
