"""The `%`-format engine squeue and sinfo share: `-o "%.18i %9P %j"` and `-O "JobID:.10,Name"`.
Pure.

What is copied from the real commands (src/squeue/opts.c `parse_format`, `_parse_token`,
`parse_long_format`, `_parse_long_token`; src/squeue/print.c `_print_str`):

- `-o`: text before the first `%` is printed as it is; each `%` starts a field: an optional `.`
  (right-justify), a width in digits, one letter, then any text up to the next `%`, printed
  after the field. An unknown letter is an error message, and the `%...` text is printed as is.
- `-O`: comma-separated names, case-insensitive, each with an optional `:[.]WIDTH[SUFFIX]`.
  Without `:`, the width is 20, left-justified; with `:` and no digits, the width is 0 (the whole
  value) and the rest is a suffix printed after the field (`-O "JobID:|,State:|"`).
- A width is a C int there, and wraps past 2^31; here a width over MAX_WIDTH is refused.
- A field of width 0 is printed whole. Left-justified, a value is cut to the width and padded;
  right-justified, padded on the left, and cut to the width only for the fields that cut.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

Row = TypeVar("Row")

MAX_WIDTH = 65_536  # no column is wider; the real commands' int would wrap, and a wider pad is memory


def width_of(digits: str, field: str) -> int:
    """A field's width as written (ASCII digits, "" for none); over MAX_WIDTH is refused."""
    from drover.compat.slurm.common import Refused

    if len(digits) > len(str(MAX_WIDTH)) or int(digits or 0) > MAX_WIDTH:
        raise Refused(f"Invalid field width in {field[:40]}: at most {MAX_WIDTH}")
    return int(digits or 0)


@dataclass(frozen=True)
class Column(Generic[Row]):
    """One field a command can print: its `-O` name, its `-o` letter ("" for none), its header,
    how it reads a row, and whether a right-justified value is cut to the width."""

    name: str
    letter: str
    header: str
    value: Callable[[Row], str]
    cut: bool = True


@dataclass(frozen=True)
class Spec(Generic[Row]):
    """A column as one format string asks for it. `column` None is text printed as it is (a
    prefix, or an unknown field's `%` text)."""

    column: Column[Row] | None
    width: int = 0
    right: bool = False
    suffix: str = ""


def fit(text: str, width: int, right: bool, cut: bool = True) -> str:
    """Slurm's `_print_str`: `%.Ws` left-justified (always cut), `%Ws` right-justified (cut only
    when `cut`), padded with spaces to the width; width 0 prints the whole value."""
    if width <= 0:
        return text
    if right:
        text = text.rjust(width)
        return text[:width] if cut else text
    return text[:width].ljust(width)


def parse_letters(fmt: str, columns: Mapping[str, Column[Row]], errors: list[str]
                  ) -> list[Spec[Row]]:
    """An `-o` format string, with the columns by letter. Unknown letters are appended to
    `errors` in the real command's words (it prints them and goes on)."""
    specs: list[Spec[Row]] = []
    first = fmt.find("%")
    if first < 0:
        return [Spec(None, suffix=fmt)]
    if first > 0:
        specs.append(Spec(None, suffix=fmt[:first]))
    for token in fmt[first:].split("%"):
        if not token:
            continue  # strtok skips empty tokens: "%%" prints nothing
        i, right = 0, token.startswith(".")
        i += right
        digits = ""
        while i < len(token) and "0" <= token[i] <= "9":
            digits += token[i]
            i += 1
        letter, suffix = token[i:i + 1], token[i + 1:]
        column = columns.get(letter)
        if column is None:
            errors.append(f"Invalid job format specification: {letter}")
            specs.append(Spec(None, suffix="%" + token))
            continue
        specs.append(Spec(column, width_of(digits, "%" + token), right, suffix))
    return specs


def parse_names(fmt: str, columns: Mapping[str, Column[Row]], errors: list[str]) -> list[Spec[Row]]:
    """An `-O` format string, with the columns by lower-cased name. Unknown names are appended to
    `errors`; they print only their suffix."""
    specs: list[Spec[Row]] = []
    for token in fmt.split(","):
        if not token:
            continue
        name, colon, rest = token.partition(":")
        width, right, suffix = 20, False, ""
        if colon:
            right = rest.startswith(".")
            rest = rest[1:] if right else rest
            count = len(rest) - len(rest.lstrip("0123456789"))
            width, suffix = width_of(rest[:count], token), rest[count:]
        column = columns.get(name.lower())
        if column is None:
            errors.append(f"Invalid job format specification: {name}")
            specs.append(Spec(None, width, right, suffix))
            continue
        specs.append(Spec(column, width, right, suffix))
    return specs


def header(specs: list[Spec[Row]]) -> str:
    return "".join((fit(spec.column.header, spec.width, spec.right, spec.column.cut) if spec.column else "")
                   + spec.suffix for spec in specs)


def line(specs: list[Spec[Row]], row: Row) -> str:
    out = []
    for spec in specs:
        if spec.column is None:  # text, or an unknown field: the real command prints its text alone
            out.append(spec.suffix)
            continue
        out.append(fit(spec.column.value(row), spec.width, spec.right, spec.column.cut) + spec.suffix)
    return "".join(out)


def by_letter(columns: list[Column[Row]]) -> dict[str, Column[Row]]:
    """The `-o` letters; where two names share a letter, the first in the table wins, as the real
    command's linear search does."""
    out: dict[str, Column[Row]] = {}
    for column in columns:
        if column.letter and column.letter not in out:
            out[column.letter] = column
    return out


def by_name(columns: list[Column[Row]]) -> dict[str, Column[Row]]:
    out: dict[str, Column[Row]] = {}
    for column in columns:
        out.setdefault(column.name.lower(), column)
    return out
