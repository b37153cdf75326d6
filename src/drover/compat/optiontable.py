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


class Arity(enum.Enum):
    NONE = "none"  # a flag
    REQUIRED = "required"  # a value: `--name=V`, `--name V`, `-nV` or `-n V`
    OPTIONAL = "optional"  # a value only in the attached form: `--name=V` or `-nV`


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
