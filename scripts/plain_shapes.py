"""Regenerate src/drover/protocol/plain.py, the API's shapes as plain data for the client's fast
paths, from the msgspec models of src/drover/protocol/api.py as they stand when it runs: each
shape's keys (the fields' names on the wire), their types as JSON carries them, which keys a
request must hold, and the comments the model's source gives its fields.

    python scripts/plain_shapes.py          # rewrite src/drover/protocol/plain.py
    python scripts/plain_shapes.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import ast
import enum
import inspect
import io
import keyword
import pathlib
import sys
import textwrap
import tokenize
import types
import typing

import msgspec

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generated import write_or_check  # noqa: E402  # scripts/ is no package

from drover.protocol import api  # noqa: E402

MODULE = pathlib.Path(__file__).resolve().parent.parent / "src" / "drover" / "protocol" / "plain.py"
REGENERATE = ".venv/bin/python scripts/plain_shapes.py"


class Shape(typing.NamedTuple):
    name: str  # the TypedDict's
    model: str  # a model of protocol/api.py, read when the script runs
    about: str  # its docstring; {model} is the model's name
    sent: bool  # a request: keys whose field has a default may be left out; else a reply, every key there
    keys: tuple[str, ...] | None = None  # the fields it has (the fast paths read only these); None: all


# In the order they are written: a shape comes after those its keys hold.
SHAPES = (
    Shape("StagedFileRequest", "StagedFile", "{model}: a file staged in with a job.", sent=True),
    Shape("DependencyRequest", "DependencyOn", "{model}, as a submission names it.", sent=True),
    Shape("JobRequest", "JobSubmission", "{model}: one job to submit; a key left out takes the model's default.",
          sent=True),
    Shape("AttemptSummary", "AttemptInfo", "Of {model}, what the fast paths read.", sent=False,
          keys=("number", "node", "pty_socket")),
    Shape("TaskSummary", "TaskInfo", "Of {model}, what the fast paths read.", sent=False,
          keys=("index", "state", "exit_status", "attempts")),
    Shape("DependencySummary", "DependencyOn", "{model}, as a job's summary shows it.", sent=False),
    Shape("JobSummary", "JobInfo", "{model}, what a long poll on a job answers with.", sent=False),
    Shape("ActionOutcome", "ActionResult",
          "{model}: one reference's outcome of an action (cancel, hold, signal...).", sent=False),
)

# A reply that has no model of its own: the controller writes it as plain JSON (api/jobs.py).
WAIT_REPLY = '''\
class WaitReply(TypedDict):
    """What a long poll on a job answers (GET /v1/jobs/{job_id}/wait): whether it ended, and the job."""

    ended: bool
    job: JobSummary
'''

HEADER = f'''\
"""The API's shapes as plain data, for the client's fast paths: `drover submit`, `wait`, `run`
and the actions, and the front ends, which must start in a few tens of milliseconds and so never
import msgspec (about 18 ms) to build a request or read a reply.

Generated from the msgspec models of protocol/api.py by scripts/plain_shapes.py; do not edit.
Regenerate with: {REGENERATE}
tests/unit/api/test_plain_shapes.py fails when this file is not what the script writes, and the
controller validates every request against its model (unknown fields refused).
"""

# No `from __future__ import annotations`: TypedDict reads Required[] only from evaluated annotations.
'''


class ShapeError(Exception):
    """A model the script cannot write as plain data; the message says what to change."""


class Comments(typing.NamedTuple):
    above: list[str]  # the comment lines just above the field
    after: str | None  # the comment at the end of its line


def model(shape: Shape) -> type[msgspec.Struct]:
    found = getattr(api, shape.model, None)
    if not (isinstance(found, type) and issubclass(found, msgspec.Struct)):
        raise ShapeError(f"{shape.name}: protocol/api.py has no model {shape.model}")
    return found


def model_name(struct: type) -> str:
    return f"{struct.__module__.removeprefix('drover.protocol.')}.{struct.__qualname__}"


def field_comments(struct: type[msgspec.Struct]) -> dict[str, Comments]:
    """Each field's comments in the source of the class that defines it (a model may take fields
    from the models it derives from); a field with none is left out."""
    found: dict[str, Comments] = {}
    for cls in reversed(struct.__mro__):  # a class's own definition of a field wins
        if not issubclass(cls, msgspec.Struct) or cls is msgspec.Struct:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(cls))
        except (OSError, TypeError):  # no source (made at run time): no comments to carry over
            continue
        found |= _class_comments(source)
    return found


def _class_comments(source: str) -> dict[str, Comments]:
    lines: dict[int, tuple[str, bool]] = {}  # line number → (comment, alone on its line)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines[token.start[0]] = (token.string, not token.line[:token.start[1]].strip())
    (definition,) = ast.parse(source).body
    assert isinstance(definition, ast.ClassDef)
    found: dict[str, Comments] = {}
    for statement in definition.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        above: list[str] = []
        number = statement.lineno - 1
        while number in lines and lines[number][1]:
            above.insert(0, lines[number][0])
            number -= 1
        end = lines.get(statement.end_lineno or statement.lineno)
        after = end[0] if end is not None and not end[1] else None
        if above or after:
            found[statement.target.id] = Comments(above, after)
    return found


def spelled(kind: object, names: dict[type, str], imports: set[str], where: str) -> str:
    """`kind` as plain JSON carries it, in Python's spelling: a model as its shape's name."""
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Annotated:  # msgspec's constraints are checked by the controller
        return spelled(arguments[0], names, imports, where)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(spelled(argument, names, imports, where) for argument in arguments)
    if origin in (list, dict):
        inner = ", ".join(spelled(argument, names, imports, where) for argument in arguments)
        return f"{origin.__name__}[{inner}]"
    if origin is typing.Literal:
        imports.add("Literal")
        return f"Literal[{', '.join(repr(argument) for argument in arguments)}]"
    if kind is None or kind is type(None):
        return "None"
    if kind is typing.Any:
        imports.add("Any")
        return "Any"
    if kind is bytes:
        return "str"  # base64 in JSON
    if kind in (str, int, float, bool):
        return typing.cast(type, kind).__name__
    if isinstance(kind, type) and issubclass(kind, enum.StrEnum | enum.IntEnum):  # sent as their values
        return "str" if issubclass(kind, str) else "int"
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        if kind not in names:
            raise ShapeError(f"{where} holds {model_name(kind)}, which has no plain shape written before it: "
                             "add one to SHAPES in scripts/plain_shapes.py")
        return names[kind]
    raise ShapeError(f"{where}: the type {kind!r} has no plain spelling in scripts/plain_shapes.py")


def written(shape: Shape, names: dict[type, str], imports: set[str]) -> str:
    """The shape's TypedDict, its keys in the model's order."""
    struct = model(shape)
    fields = {field.name: field for field in msgspec.structs.fields(struct)}
    wanted = shape.keys if shape.keys is not None else tuple(fields)
    for key in wanted:
        if key not in fields:
            raise ShapeError(f"{shape.name}.{key} is not a field of {model_name(struct)}")
    optional = shape.sent and any(not fields[key].required for key in wanted)
    lines = [f"class {shape.name}(TypedDict{', total=False' if optional else ''}):",
             f'    """{shape.about.format(model=model_name(struct))}"""', ""]
    comments = field_comments(struct)
    for key in wanted:
        field = fields[key]
        if not field.encode_name.isidentifier() or keyword.iskeyword(field.encode_name):
            raise ShapeError(f"{model_name(struct)}.{key} is {field.encode_name!r} on the wire, "
                             "not a name a class body can hold")
        kind = spelled(field.type, names, imports, f"{model_name(struct)}.{key}")
        if optional and field.required:
            kind = f"Required[{kind}]"
            imports.add("Required")
        noted = comments.get(key, Comments([], None))
        lines += [f"    {comment}" for comment in noted.above]
        lines.append(f"    {field.encode_name}: {kind}" + (f"  {noted.after}" if noted.after else ""))
    return "\n".join(lines) + "\n"


def generated() -> str:
    imports = {"TypedDict"}
    bodies: list[str] = []
    names: dict[bool, dict[type, str]] = {True: {}, False: {}}  # requests' and replies' shapes
    for shape in SHAPES:
        bodies.append(written(shape, names[shape.sent], imports))
        names[shape.sent][model(shape)] = shape.name
    bodies.append(WAIT_REPLY)
    return HEADER + f"from typing import {', '.join(sorted(imports))}\n\n\n" + "\n\n".join(bodies)


def main(argv: list[str]) -> int:
    try:
        wanted = generated()
    except ShapeError as error:
        print(f"scripts/plain_shapes.py: {error}", file=sys.stderr)
        return 1
    return write_or_check(argv, MODULE, wanted, REGENERATE)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
