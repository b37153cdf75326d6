"""LSF's command-line syntax: options are words of their own, several letters long (`-oo`,
`-cwd`, `-noheader`), each value in the next word; one-letter flags may be run together
(`bjobs -aw`) and a one-letter option's value may follow it in the same word (`-n4`). bsub reads
the same options from a script's `#BSUB` lines, before its first command. Pure."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence

from drover.compat.optiontable import Arity, Option
from drover.compat.optiontable import Given as Given  # the one shape PBS and LSF share

EXIT_USAGE = 255  # LSF's commands exit 255 on a bad command line, after their usage


class LsfUsageError(Exception):
    """A command line LSF refuses: its message, and whether the usage follows."""

    def __init__(self, message: str, status: int = EXIT_USAGE, usage: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.usage = usage


def parse(command: str, words: Sequence[str], options: Iterable[Option], permute: bool = True,
          source: str = "command line") -> tuple[list[Given], list[str]]:
    """The options given, in order, and the operands. Without `permute` (bsub), the first
    operand is the job's command and the rest its arguments. `--` ends the options."""
    table = list(options)
    names = {name: option for option in table for name in option.names}
    found: list[Given] = []
    operands: list[str] = []
    words = list(words)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            operands += words[i:]
            break
        if not word.startswith("-") or word == "-":
            if not permute:
                operands += words[i - 1:]
                break
            operands.append(word)
            continue
        option = names.get(word)
        if option is not None:
            if option.arity is Arity.NONE:
                found.append(Given(option, None, source))
            elif i < len(words):
                found.append(Given(option, words[i], source))
                i += 1
            else:
                raise LsfUsageError(f"{command}: option requires an argument -- {word[1:]}")
            continue
        found += _joined(command, word, names, source)
    return found, operands


def _joined(command: str, word: str, names: dict[str, Option], source: str) -> list[Given]:
    """`-aw` (flags run together) or `-n4` (a one-letter option and its value)."""
    first = names.get(word[:2])
    if first is not None and first.arity is not Arity.NONE:
        return [Given(first, word[2:], source)]
    out = []
    for letter in word[1:]:
        option = names.get("-" + letter)
        if option is None or option.arity is not Arity.NONE:
            raise LsfUsageError(f"{command}: illegal option -- {letter}")
        out.append(Given(option, None, source))
    return out


def approximate(command: str, given: list[Given]) -> None:
    """The options of a query or an action that Drover honours only in part: a warning each on
    stderr, or, under DROVER_COMPAT_STRICT=1, a refusal (bsub's are decided with its job)."""
    from drover.compat.lsf.common import is_strict
    from drover.compat.optiontable import Mark

    for g in given:
        if g.option.mark is Mark.APPROXIMATED:
            message = f"{g.option.names[0]}: {g.option.note}"
            if is_strict():
                raise LsfUsageError(f"{command}: {message} (refused under DROVER_COMPAT_STRICT=1)", usage=False)
            print(f"{command}: warning: {message}", file=sys.stderr)


def last(given: list[Given], key: str) -> Given | None:
    found = [g for g in given if g.key == key]
    return found[-1] if found else None


def value(given: list[Given], key: str) -> str:
    found = last(given, key)
    return (found.value or "") if found is not None else ""


def every(given: list[Given], key: str) -> list[str]:
    return [g.value for g in given if g.key == key and g.value is not None]


def directive_words(script: str) -> list[str]:
    """The words of the script's `#BSUB` lines, read until its first command."""
    from drover.compat.pbs.syntax import PbsUsageError
    from drover.compat.pbs.syntax import directive_words as words_of

    try:
        return words_of(script, "#BSUB")
    except PbsUsageError as error:
        line = str(error).partition(": directive error: ")[2]
        raise LsfUsageError(f"bsub: Bad #BSUB line: {line}", usage=False) from None


def print_error(error: LsfUsageError, usage: str) -> int:
    print(error, file=sys.stderr)
    if error.usage and usage:
        print(usage, file=sys.stderr)
    return error.status
