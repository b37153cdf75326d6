"""Regenerate docs/compat.md's option tables from the front ends' own option definitions.

    python scripts/compat_docs.py          # rewrite docs/compat.md
    python scripts/compat_docs.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import importlib
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generated import write_or_check  # noqa: E402  # scripts/ is no package

from drover.cli.commands.compat import COMMANDS, PBS_COMMANDS  # noqa: E402
from drover.compat.optiontable import markdown_table, with_tables  # noqa: E402

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
    from drover.compat.htcondor.submit_commands import SUBMIT_COMMANDS

    out["condor_submit file"] = markdown_table(SUBMIT_COMMANDS).replace("| option |", "| command |", 1)
    return out


def generated(document: str) -> str:
    return with_tables(document, tables())


def main(argv: list[str]) -> int:
    return write_or_check(argv, DOCUMENT, generated(DOCUMENT.read_text()), ".venv/bin/python scripts/compat_docs.py")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
