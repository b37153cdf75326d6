"""Every option of a front end, as data: its names as the real command's man page spells them,
whether it takes a value, and what Drover does with it.

The front ends parse from these tables, and docs/compat.md's option tables are generated from
them (`make compat-docs`), so the documentation cannot drift from the code.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class Mark(enum.Enum):
    """What Drover does with an option, as docs/compat.md marks it."""

    SUPPORTED = "✓"  # honoured as the real command honours it
    APPROXIMATED = "≈"  # honoured in part, with a warning on stderr (refused under --strict)
    MEANINGLESS = "–"  # accepted and documented as changing nothing on Drover
    REFUSED = "✗"  # refused with a clear error; nothing is submitted


# How the note of an option that the real command's man page lacks, and Drover adds, begins: the
# generated tables in docs/compat.md show it, and the tests allow such options in a table.
DROVER_OWN = "Drover's own"


class Arity(enum.Enum):
    NONE = "none"  # a flag
    REQUIRED = "required"  # a value: `--name=V`, `--name V`, `-nV` or `-n V`
    OPTIONAL = "optional"  # a value only in the attached form: `--name=V` or `-nV`
    TWO = "two"  # two words: Grid Engine's `-pe NAME SLOTS`


@dataclass(frozen=True)
class Option:
    names: tuple[str, ...]  # every spelling, short first: ("-J", "--job-name")
    arity: Arity
    mark: Mark
    note: str = ""
    metavar: str = ""  # how the table names the value: "NAME", "[B:]SIG[@TIME]"

    @property
    def key(self) -> str:
        """The name code refers to the option by: the first long name, else the short one."""
        long = [n for n in self.names if n.startswith("--")]
        return (long or list(self.names))[0].lstrip("-")

    @property
    def drover_own(self) -> bool:
        """An option the real command's man page lacks, which Drover adds (its note says so)."""
        return self.note.startswith(DROVER_OWN)


def markdown_table(options: Iterable[Option]) -> str:
    """The options as docs/compat.md shows them: one row each, spelled as the man page does."""
    lines = ["| option | mark | notes |", "| --- | --- | --- |"]
    for option in options:
        spelled = ", ".join(f"`{name}`" for name in option.names)
        if option.metavar:
            spelled += f" {option.metavar}"
        lines.append(f"| {spelled} | {option.mark.value} | {option.note} |")
    return "\n".join(lines)


def begin_marker(command: str) -> str:
    return f"<!-- generated: {command} options (make compat-docs) -->"


def end_marker(command: str) -> str:
    return f"<!-- end of generated: {command} options -->"


def with_tables(document: str, tables: dict[str, str]) -> str:
    """`document` with each command's generated section replaced by its table. A command whose
    markers are missing is an error: the table would silently not be shown."""
    for command, table in tables.items():
        begin, end = begin_marker(command), end_marker(command)
        start, stop = document.find(begin), document.find(end)
        if start < 0 or stop < start:
            raise ValueError(f"docs/compat.md has no section for {command}: add the lines\n{begin}\n{end}")
        document = document[: start + len(begin)] + "\n" + table + "\n" + document[stop:]
    return document


@dataclass(frozen=True)
class Given:
    """One option as a command line (or a script's directive) gave it: PBS's and LSF's commands
    read theirs into these, in order, the last of a key winning where it must."""

    option: Option
    value: str | None
    source: str = "command line"  # or "directive"

    @property
    def key(self) -> str:
        return self.option.key


class UsageError(Exception):
    """A command line the real command would refuse; the message is the one getopt prints."""


def parse_gnu(argv: list[str], options: Iterable[Option], permute: bool = False
              ) -> tuple[list[tuple[Option, str | None]], list[str]]:
    """Parse `argv` as GNU getopt_long does for Slurm's commands: `--name=V` and `--name V`,
    long names abbreviated to any unambiguous prefix, `-abc` as three flags, `-oV` and `-o V`,
    `--` ending the options. Without `permute` (sbatch, srun: their optstring starts with `+`),
    the first operand ends the options, so a script's own arguments are never read as sbatch's.

    Returns the options in command-line order, each with its value (None for a flag), and the
    operands. Raises UsageError with getopt's own words for what getopt refuses.
    """
    table = list(options)
    longs = {name: option for option in table for name in option.names if name.startswith("--")}
    shorts = {name: option for option in table for name in option.names if len(name) == 2 and name[0] == "-"
              and name[1] != "-"}
    found: list[tuple[Option, str | None]] = []
    operands: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--":
            operands += argv[i:]
            break
        if word.startswith("--"):
            name, has_value, value = word.partition("=")
            option = _long_option(name, longs)
            if option.arity is Arity.NONE and has_value:
                raise UsageError(f"option '{_long_name(option, name)}' doesn't allow an argument")
            if option.arity is Arity.REQUIRED and not has_value:
                if i >= len(argv):
                    raise UsageError(f"option '{_long_name(option, name)}' requires an argument")
                value, i = argv[i], i + 1
            found.append((option, value if (has_value or option.arity is Arity.REQUIRED) else None))
        elif word.startswith("-") and word != "-":
            j = 1
            while j < len(word):
                letter = word[j]
                if "-" + letter not in shorts:
                    raise UsageError(f"invalid option -- '{letter}'")
                option = shorts["-" + letter]
                rest = word[j + 1:]
                if option.arity is Arity.NONE:
                    found.append((option, None))
                    j += 1
                    continue
                if rest:
                    found.append((option, rest))
                elif option.arity is Arity.OPTIONAL:
                    found.append((option, None))
                elif i < len(argv):
                    found.append((option, argv[i]))
                    i += 1
                else:
                    raise UsageError(f"option requires an argument -- '{letter}'")
                break
        elif permute:
            operands.append(word)
        else:
            operands += argv[i - 1:]
            break
    return found, operands


def _long_option(name: str, longs: dict[str, Option]) -> Option:
    if name in longs:
        return longs[name]
    candidates = {id(option): (spelled, option) for spelled, option in longs.items() if spelled.startswith(name)}
    if len(candidates) == 1:
        return next(iter(candidates.values()))[1]
    if not candidates:
        raise UsageError(f"unrecognized option '{name}'")
    spelled = " ".join(sorted(spelling for spelling, _ in candidates.values()))
    raise UsageError(f"option '{name}' is ambiguous; possibilities: {spelled}")


def _long_name(option: Option, typed: str) -> str:
    """The full long name getopt names in its messages (the user may have typed a prefix)."""
    return next((name for name in option.names if name.startswith(typed)), typed)
