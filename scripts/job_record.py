"""Regenerate the `JobRecord` TypedDict of src/drover/records.py (and `JOB_DEFAULTS`) from the job
spec's msgspec model, core/job_spec.py's `JobSpec`, as it stands when it runs: the spec as an
attempt's order carries it whole, read by the shepherd, which imports only the standard library.
Every key is required (the controller always sends every field); the defaults are for a `config`
record written before the order carried the spec (records.config_in_current_layout).

    python scripts/job_record.py          # rewrite the generated part of src/drover/records.py
    python scripts/job_record.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import json
import pathlib
import re
import sys
from collections.abc import Iterable

import msgspec

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generated import write_or_check  # noqa: E402  # scripts/ is no package
from plain_shapes import Comments, ShapeError, field_comments, spelled  # noqa: E402

from drover.core.job_spec import JobSpec, marked  # noqa: E402

MODULE = pathlib.Path(__file__).resolve().parent.parent / "src" / "drover" / "records.py"
REGENERATE = ".venv/bin/python scripts/job_record.py"
BEGIN = f"# Generated from core/job_spec.py's JobSpec by scripts/job_record.py; do not edit. Regenerate: {REGENERATE}\n"
END = "# End of the generated part.\n"
BLOCK = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.DOTALL)


def generated() -> str:
    """The TypedDict and the defaults, each key in the model's order, with the model's comments."""
    comments = field_comments(JobSpec)
    lines = ["class JobRecord(TypedDict):",
             '    """The job\'s spec (core/job_spec.py, JobSpec) as the order carries it: its canonical',
             '    encoding, every field, as the store holds it."""', ""]
    for field in msgspec.structs.fields(JobSpec):
        noted = comments.get(field.name, Comments([], None))
        kind = spelled(field.type, {}, set(), f"JobSpec.{field.name}")
        lines += [f"    {comment}" for comment in noted.above]
        lines.append(f"    {field.encode_name}: {kind}" + (f"  {noted.after}" if noted.after else ""))
    defaults = msgspec.to_builtins(JobSpec())
    lines += ["", "", "# A spec's fields at their defaults: what an order of an older layout did not say.",
              "JOB_DEFAULTS: JobRecord = {"]
    lines += [f"    {literal(name)}: {literal(value)}," for name, value in defaults.items()]
    lines.append("}")
    signed = marked("signed")
    lines += ["", "# What the owner signs of the spec (cluster/signing.py): these fields always; those after them",
              "# only when set (signed since a later release, so that older credentials still match).",
              f"SIGNED: tuple[str, ...] = {tuple_literal(n for n, when in signed.items() if when == 'always')}",
              f"SIGNED_WHEN_SET: tuple[str, ...] = {tuple_literal(n for n, when in signed.items() if when == 'when_set')}",
              "# The environment variables a job finds its spec's fields in, when set (shepherd/environment.py).",
              "JOB_VARIABLES: dict[str, str] = {" + ", ".join(f"{literal(name)}: {literal(variable)}"
                                                        for name, variable in marked("variable").items()) + "}"]
    return BEGIN + "\n".join(lines) + "\n" + END


def literal(value: object) -> str:
    """A JSON value in Python's spelling, strings in double quotes as the sources write them."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(key)}: {literal(item)}" for key, item in value.items()) + "}"
    return repr(value)


def tuple_literal(names: Iterable[str]) -> str:
    items = [literal(name) for name in names]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def main(argv: list[str]) -> int:
    try:
        block = generated()
    except ShapeError as error:
        print(f"scripts/job_record.py: {error}", file=sys.stderr)
        return 1
    current = MODULE.read_text()
    if not BLOCK.search(current):
        print(f"{MODULE}: no generated part (a line {BEGIN.strip()!r} ... {END.strip()!r})", file=sys.stderr)
        return 1
    return write_or_check(argv, MODULE, BLOCK.sub(lambda _: block, current), REGENERATE)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
