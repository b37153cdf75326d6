"""Regenerate docs/compat.md's option tables from the front ends' own option definitions.

    python scripts/compat_docs.py          # rewrite docs/compat.md
    python scripts/compat_docs.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import importlib
import pathlib
import sys

from drover.cli.commands.compat import COMMANDS, PBS_COMMANDS
from drover.compat.optiontable import markdown_table, with_tables

DOCUMENT = pathlib.Path(__file__).resolve().parent.parent / "docs" / "compat.md"


def tables() -> dict[str, str]:
    """Each command whose module defines OPTIONS → its markdown table. PBS's commands share
    names with Grid Engine's: their sections are marked `pbs qsub`, `pbs qstat`..."""
    out = {}
    commands = {**COMMANDS, **{f"pbs {name}": entry for name, entry in PBS_COMMANDS.items()}}
    for command, (module, _function) in commands.items():
        options = getattr(importlib.import_module(module), "OPTIONS", None)
        if options is not None:
            out[command] = markdown_table(options)
    return out


def generated(document: str) -> str:
    return with_tables(document, tables())


def main(argv: list[str]) -> int:
    current = DOCUMENT.read_text()
    wanted = generated(current)
    if "--check" in argv:
        if wanted != current:
            print("docs/compat.md is out of date: run make compat-docs", file=sys.stderr)
            return 1
        return 0
    DOCUMENT.write_text(wanted)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
