"""What the commands share: the parser they start from, the client, JSON output, errors."""

from __future__ import annotations

import argparse
import json
import os
import sys

from drover.core.errors import BadRequest

TYPE_CHECKING = False  # typing costs milliseconds at start-up; type checkers read this as True
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    from drover.client import Client


class NotRegularFile(OSError):
    """A script path that names a FIFO, a device or a directory: refused at once, never waited on."""


def read_regular_file(path: str, limit: int | None = None) -> bytes:
    """The whole of a regular file. Opened without blocking, so a FIFO with no writer is refused
    at once instead of hanging the command, and a device (/dev/zero) is never read forever."""
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as file:  # a directory: IsADirectoryError, "Is a directory"
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{path} is not a regular file")
        return file.read() if limit is None else file.read(limit + 1)


def read_regular(path: str, limit: int | None = None) -> tuple[bytes, int]:
    """A regular file's bytes and permission bits, from one descriptor opened without blocking
    (a FIFO or a device is refused before anything is read). `limit`: read at most one byte
    more than that, enough for the caller to tell the file is too big without holding it all."""
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(fd)  # before the file object, which refuses a directory in words of its own
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFile(f"{path} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    with open(fd, "rb") as file:
        return (file.read() if limit is None else file.read(limit + 1)), stat.S_IMODE(status.st_mode) & 0o777


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter asks shutil for the terminal's width on every add_argument, and
    importing shutil costs `drover submit` 2 ms: take $COLUMNS (or 100) instead."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        columns = os.environ.get("COLUMNS", "")
        super().__init__(prog, indent_increment, max_help_position,
                         width or (int(columns) - 2 if columns.isdigit() else 98))


class _Parser(argparse.ArgumentParser):
    # Where the words being parsed come from, when not the command line (a script's directive
    # line): errors then name it, and are errors of the input (exit status 1), not of the usage.
    source: str | None = None

    def error(self, message: str) -> NoReturn:
        """Bad options: one line naming the problem, exit status 2 (as argparse does)."""
        if self.source is not None:
            raise BadRequest(f"{self.source}: {message}")
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def parse_from(p: argparse.ArgumentParser, source: str | None) -> None:
    """Say where the words `p` parses next come from (None: the command line); see _Parser."""
    if isinstance(p, _Parser):
        p.source = source


def parser(command: str, description: str, json_flag: bool = True) -> argparse.ArgumentParser:
    result = _Parser(prog=f"drover {command}", description=description, formatter_class=_Formatter)
    if json_flag:
        result.add_argument("--json", action="store_true", help="print JSON for programs")
    return result


def whole_number(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number in ASCII digits (int() would also take '٣', '1_0' and
    ' 7'), from `minimum` to `maximum` (default: the largest id the cluster keeps)."""
    from drover.core.limits import MAX_ID

    highest = MAX_ID if maximum is None else maximum

    def parse(text: str) -> int:
        digits = text.removeprefix("-")
        if not digits.isascii() or not digits.isdigit():
            raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}")
        value = int(text)
        if not minimum <= value <= highest:
            raise argparse.ArgumentTypeError(f"must be between {minimum} and {highest}, not {text}")
        return value

    return parse


def seconds(text: str) -> float:
    """An argparse type: a number of seconds, 0 or more (float() would also take 'nan' and '-1')."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not text.isascii() or not 0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, 0 or more, not {text!r}")
    return value


def seconds_up_to(maximum: float) -> Callable[[str], float]:
    """An argparse type: a number of seconds from 0 to `maximum`."""

    def parse(text: str) -> float:
        value = seconds(text)
        if value > maximum:
            raise argparse.ArgumentTypeError(f"expected a number of seconds from 0 to {maximum:g}, not {text!r}")
        return value

    return parse


def client(timeout_s: float | None = 60.0) -> Client:
    from drover.client.client import Client

    return Client(timeout_s=timeout_s)


def print_json(value: Any) -> None:
    if hasattr(value, "__struct_fields__") or isinstance(value, list) and value and hasattr(value[0], "__struct_fields__"):
        import msgspec

        value = msgspec.to_builtins(value)
    json.dump(value, sys.stdout, indent=2)
    sys.stdout.write("\n")


def job_ids(refs: list[str]) -> list[int]:
    """Whole-job ids from the command line; a bad one is refused before anything is sent."""
    from drover.core.ids import parse_job_ref

    out = []
    for ref in refs:
        job_id, index = parse_job_ref(ref)
        if index is not None:
            raise BadRequest(f"{ref!r} names one task; this command takes whole jobs")
        out.append(job_id)
    return out
