"""What the generators in scripts/ share: each computes the text a file must hold from the code
it documents or types, then either writes it or, with --check, says the file is out of date and
how to regenerate it (the tests run each with --check, so a file cannot drift from its source).

    from generated import write_or_check
    raise SystemExit(write_or_check(sys.argv[1:], PATH, wanted_text, ".venv/bin/python scripts/x.py"))
"""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def write_or_check(argv: list[str], path: pathlib.Path, wanted: str, regenerate: str) -> int:
    """Write `wanted` to `path` (only if it differs), or with --check in `argv` compare: 1 and a
    line on stderr when the file is not `wanted`."""
    current = path.read_text() if path.exists() else ""
    if "--check" in argv:
        if wanted != current:
            print(f"{path.relative_to(ROOT)} is out of date: run {regenerate}", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        path.write_text(wanted)
    return 0
