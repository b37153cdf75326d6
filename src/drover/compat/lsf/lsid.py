"""lsid: the cluster's name and master host, as IBM Spectrum LSF's lsid says them; the first
line names the release (clients read its version from it)."""

from __future__ import annotations

import sys

from drover.compat.lsf.common import failed, host_name, version
from drover.compat.lsf.syntax import LsfUsageError, parse, print_error
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import DroverError

OPTIONS = [
    Option(("-h",), Arity.NONE, Mark.SUPPORTED, "print the usage"),
    Option(("-V",), Arity.NONE, Mark.SUPPORTED, "print Drover's version, as LSF's release"),
]
USAGE = "Usage: lsid [-h] [-V]"


def main(argv: list[str] | None = None) -> int:
    try:
        given, operands = parse("lsid", list(sys.argv[1:] if argv is None else argv), OPTIONS)
        if operands:
            raise LsfUsageError(f"lsid: extra operand {operands[0]}")
        if any(g.key == "h" for g in given):
            print(USAGE, file=sys.stderr)
            return 0
        from drover.client.client import Client

        with Client() as client:
            client.ping()
    except LsfUsageError as error:
        return print_error(error, USAGE)
    except DroverError as error:
        return failed("lsid", error)
    print(f"IBM Spectrum LSF Standard 10.1.0.0 (Drover {version()})")
    print("\nMy cluster name is drover")
    print(f"My master name is {host_name()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
