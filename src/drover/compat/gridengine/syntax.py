"""Grid Engine's command-line syntax, as cull_parse_cmdline (source/common/parse_qsub.c) reads it.

Each option is a whole word (`-cwd`, `-hold_jid`): never abbreviated, never glued to its value.
It takes a fixed number of value words (`-pe NAME SLOTS` two; `-binding` one, or two when the
first is `set`, `env` or `pe`). `-hard` and `-soft` set the scope of the requests that follow.
For qsub the first word that is not an option is the script, and every word after it is the
script's own; `--` instead means "no script: read it from stdin, these are its arguments".
Option files (`-@ FILE`, sge_request) and `#$` directives are split into words the same way,
with `#` starting a comment. Pure: reading a file is left to the caller's `read`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from drover.compat.optiontable import Arity, Option

# Grid Engine's answer statuses (sgeobj/sge_answer.h); a client exits with the first error's.
STATUS_ESEMANTIC = 2  # an unknown option, a missing value
STATUS_ESYNTAX = 7  # a value of the wrong form


class GeUsageError(Exception):
    """A command line Grid Engine refuses; the message is the one its clients print."""

    def __init__(self, message: str, status: int = STATUS_ESEMANTIC) -> None:
        super().__init__(message)
        self.status = status


class Operands(enum.Enum):
    SCRIPT = "script"  # qsub, qrsh: the first non-option word and all after it
    JOBS = "jobs"  # qalter, qdel, qhold...: job ids, anywhere among the options; `--` then job arguments
    NONE = "none"  # option files and directives: every word must be an option or its value


@dataclass(frozen=True)
class Given:
    """One option as it was given, with its value and the scope it was given in."""

    option: Option
    value: str | None  # None for a flag; "NAME SLOTS" for -pe; "[set|env|pe ]STRATEGY" for -binding
    soft: bool = False  # after -soft (and before the next -hard)
    source: str = "command line"  # or the option file or script it was read from

    @property
    def key(self) -> str:
        return self.option.key


@dataclass(frozen=True)
class Parsed:
    given: list[Given]
    operands: list[str]  # SCRIPT: [script, *its arguments] ("-" for stdin); JOBS: the job ids
    arguments: list[str]  # JOBS: the words after `--`


YES, NO = ("y", "yes"), ("n", "no")


def yes_no(given: Given) -> bool:
    """A `y[es]|n[o]` value, in any case, as set_yn_option() reads it."""
    value = (given.value or "").lower()
    if value in YES:
        return True
    if value in NO:
        return False
    raise GeUsageError(f'invalid option argument "{given.option.names[0]} {given.value}"', STATUS_ESYNTAX)


def parse(words: Sequence[str], options: Iterable[Option], operands: Operands = Operands.SCRIPT,
          source: str = "command line", read: Callable[[str], str] | None = None) -> Parsed:
    """Parse `words` against the option table. `-@ FILE` is expanded in place through `read`
    (FILE's text), as Grid Engine expands it: recursively, at the position it was given."""
    table = {name: option for option in options for name in option.names}
    given: list[Given] = []
    found: list[str] = []
    arguments: list[str] = []
    soft = False
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--" and operands is not Operands.NONE:
            if not words[i:]:
                raise GeUsageError("ERROR! -- option must be followed by job arguments")
            if operands is Operands.SCRIPT:
                found += ["-", *words[i:]]
            else:
                arguments += words[i:]
            break
        if word.startswith("-") and word != "-":
            option = table.get(word)
            if option is None:
                raise GeUsageError(f'ERROR! invalid option argument "{word}"')
            value, i = _value(option, word, words, i)
            if option.key == "hard":
                soft = False
            elif option.key == "soft":
                soft = True
            if option.key == "@":
                assert value is not None
                if read is None:
                    raise GeUsageError(f'ERROR! invalid option argument "{word}"')
                nested = parse(file_words(read(value)), table.values(), Operands.NONE, value, read)
                given += nested.given
                continue
            given.append(Given(option, value, soft, source))
            continue
        if operands is Operands.SCRIPT:
            found += words[i - 1:]
            break
        if operands is Operands.JOBS and word != "-":
            found.append(word)
            continue
        raise GeUsageError(f'ERROR! invalid option argument "{word}"')
    return Parsed(given, found, arguments)


def _value(option: Option, word: str, words: Sequence[str], i: int) -> tuple[str | None, int]:
    if option.arity is Arity.NONE:
        return None, i
    if option.arity is Arity.OPTIONAL:  # `-j [job_list]`: the next word, unless it is an option
        if i < len(words) and not words[i].startswith("-"):
            return words[i], i + 1
        return None, i
    if option.arity is Arity.TWO:
        if i >= len(words):
            raise GeUsageError(f"ERROR! {word} option must have {option.metavar.split()[0]} argument")
        if i + 1 >= len(words):
            raise GeUsageError(f"ERROR! {word} option must have range as 2nd argument")
        return f"{words[i]} {words[i + 1]}", i + 2
    if i >= len(words):
        if option.key == "@":
            raise GeUsageError("ERROR! -@ option must have file argument")
        raise GeUsageError(f"ERROR! {word} option must have argument")
    value, i = words[i], i + 1
    if option.key == "binding" and value in ("set", "env", "pe"):  # an instance, then the strategy
        if i >= len(words):
            raise GeUsageError(f"ERROR! {word} option must have argument")
        value, i = f"{value} {words[i]}", i + 1
    return value, i


def file_words(text: str) -> list[str]:
    """The words of an option file (sge_request, `-@ FILE`): lines starting with `#` are
    comments, and so is the rest of a line from a `#`."""
    words: list[str] = []
    for line in text.splitlines():
        if not line.startswith("#"):
            words += line_words(line)
    return words


def directive_words(script: str, prefix: str = "#$") -> list[str]:
    """The options in a script's directives: every line, anywhere in the script, that starts
    with `prefix` in its first column (Grid Engine reads them all, not only a leading block).
    An empty prefix means the script is not scanned (qsub -C '')."""
    words: list[str] = []
    if not prefix:
        return words
    for line in script.splitlines():
        if line.startswith(prefix):
            words += line_words(line[len(prefix):])
    return words


def line_words(line: str) -> list[str]:
    """A line split at blanks after dropping a `#` comment. Every quote character is then
    dropped (sge_strip_quotes): quotes group nothing, so `-N "a b"` is `-N a` and a stray `b`."""
    body = line.split("#", 1)[0]
    return [word.replace('"', "").replace("'", "") for word in body.split()]
