"""Slurm's print_fields (src/common/print_fields.c), which sacct, sstat and sshare share: fixed
columns of a width each (negative: left-justified), a header and a rule of dashes, every cell
followed by a space, a value too long for its column cut and ended with `+`; or, with `-p` and
`-P`, values separated by `|` (after every field with `-p`, between fields with `-P`). Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

Row = TypeVar("Row")


@dataclass(frozen=True)
class Field(Generic[Row]):
    width: int  # negative: left-justified
    name: str
    value: Callable[[Row], str | None]  # None prints as empty


class UnknownField(ValueError):
    """A field the command refuses, in its words: a name it does not have, or a width over
    columns.MAX_WIDTH (the real command's int would wrap)."""


def choose(text: str, table: list[Field[Row]], allow_all: bool = False) -> list[Field[Row]]:
    """A --format list as sacct, sstat and sshare read it: names case-insensitive and abbreviated
    to a prefix (the first field of the table that starts so), `%WIDTH` after a name; with
    `allow_all` (sacct), `ALL` or a prefix of it for every field."""
    chosen: list[Field[Row]] = []
    for word in (w.strip() for w in text.split(",")):
        if not word:
            continue
        name, percent, width_text = word.partition("%")
        width = _width(width_text, word) if percent else None
        if allow_all and name and "all".startswith(name.lower()):
            chosen += [sized(field, width) for field in table]
            continue
        field = next((f for f in table if f.name.lower().startswith(name.lower())), None) if name else None
        if field is None:
            raise UnknownField(f'Invalid field requested: "{name}"')
        chosen.append(sized(field, width))
    return chosen


def _width(text: str, word: str) -> int:
    """`%WIDTH` as atoi reads it: a sign and ASCII digits, else 0; over MAX_WIDTH refused."""
    from drover.compat.slurm.columns import MAX_WIDTH

    digits = text.removeprefix("-")
    if not digits or not digits.isascii() or not digits.isdigit():
        return 0
    if len(digits) > len(str(MAX_WIDTH)) or int(digits) > MAX_WIDTH:
        raise UnknownField(f'Invalid field width in "{word[:40]}": at most {MAX_WIDTH}')
    return -int(digits) if text.startswith("-") else int(digits)


def sized(field: Field[Row], width: int | None) -> Field[Row]:
    return field if width is None else Field(width, field.name, field.value)


class Printer(Generic[Row]):
    def __init__(self, fields: list[Field[Row]], parsable: str | None = None, delimiter: str | None = None,
                 header: bool = True) -> None:
        """`parsable`: None for columns, "ending" (-p) or "between" (-P)."""
        self.fields, self.parsable, self.header = fields, parsable, header
        self.delimiter = delimiter if delimiter is not None else "|"

    def lines(self, rows: list[Row]) -> list[str]:
        out: list[str] = []
        if self.header:
            out.append(self.row([field.name for field in self.fields], header=True))
            if self.parsable is None:
                out.append("".join("-" * abs(field.width) + " " for field in self.fields))
        for row in rows:
            out.append(self.row([field.value(row) for field in self.fields]))
        return out

    def row(self, values: list[str | None], header: bool = False) -> str:
        if self.parsable is not None:
            text = self.delimiter.join(value or "" for value in values)
            return text + self.delimiter if self.parsable == "ending" else text
        cells = []
        for field, value in zip(self.fields, values):
            width = abs(field.width)
            if value is None:
                value = " "
            elif len(value) > width and not header:
                value = value[:width - 1] + "+"  # print_fields_str marks a cut value
            value = value[:width]
            cells.append((value.ljust(width) if field.width < 0 else value.rjust(width)) + " ")
        return "".join(cells)
