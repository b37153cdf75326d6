"""Regenerate docs/configuration.md, the reference of drover.toml, from its schema
(src/drover/config_schema.py): every table the schema has, each key with its type, default and
meaning, and an example file.

    python scripts/config_docs.py          # rewrite docs/configuration.md
    python scripts/config_docs.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import inspect
import pathlib
import re
import sys
import types
import typing

import msgspec

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generated import write_or_check  # noqa: E402  # scripts/ is no package

from drover.config import STATE_DIR_VARIABLE, SYSTEM_STATE_DIR, Paths  # noqa: E402
from drover.config_file import number_text, toml_key, toml_value  # noqa: E402
from drover.config_schema import DroverConfig, Section  # noqa: E402

DOCUMENT = pathlib.Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
REGENERATE = ".venv/bin/python scripts/config_docs.py"
FILE_NAME = pathlib.PurePath(Paths("/").config_file).name

MIB = 1024 * 1024
DAY = 86400
HOUR = 3600

# A valid drover.toml (tests/unit/config/test_configuration_doc.py reads it with the daemons' loader).
EXAMPLE = """\
# The host of a small cluster's controller, which is one of its nodes too.

[controller]
kill_grace_s = 30
sqlite_synchronous = "FULL"       # survive a power loss too
operators = ["alice"]             # alice manages every job
max_pending_jobs_per_user = 20000

[execd]
cpus = 32
memory_mib = 128000
features = ["ssd", "infiniband"]  # jobs ask for them with --constraint
spool = "/var/spool/drover"       # the spool on disk rather than tmpfs
prolog = "/etc/drover/prolog.sh"
method_timeout_s = 120

[execd.rlimits]
nofile = 65536
core = 0                          # no core files

[queues.short]
priority = 10
default_time_s = 600
max_time_s = 3600

[queues.long]
default_time_s = 86400
max_time_s = 604800

[scheduler]
priority_weight_age = 1000
priority_weight_fairshare = 10000
priority_weight_queue = 1000
priority_weight_job = 1
fairshare_half_life_s = 86400

[compat]
min_job_age_s = 600
"""


class Row(typing.NamedTuple):
    key: str
    type: str
    default: str
    meaning: str


class Table(typing.NamedTuple):
    name: str  # as its header says: "execd.rlimits", "queues.NAME"
    about: str
    rows: list[Row]


def tables(schema: type[Section] = DroverConfig, path: tuple[str, ...] = ()) -> list[Table]:
    """The tables of `schema` at `path`, in the schema's order, each followed by those nested in it.
    The keys of the file's top level that are not themselves sections (such as [licenses], a
    table of names) are each a table of their own."""
    own = Table(".".join(path), _about_class(schema), [])
    nested: list[Table] = []
    for info in msgspec.structs.fields(schema):
        kind, meta = _unannotated(info.type)
        key = toml_key(info.encode_name)
        here = (*path, key)
        if _is_section(kind):
            nested += tables(kind, here)
            if path:
                own.rows.append(Row(key, "table", f"see [{'.'.join(here)}]", _meaning(meta)))
        elif typing.get_origin(kind) is dict and _is_section(typing.get_args(kind)[1]):
            nested += tables(typing.get_args(kind)[1], (*here, "NAME"))
            if path:
                own.rows.append(Row(key, "tables", f"see [{'.'.join(here)}.NAME]", _meaning(meta)))
        elif not path and typing.get_origin(kind) is dict:
            # A top-level table of free names ([licenses] matlab = 4): its own section.
            value_type = _type_text(typing.get_args(kind)[1])
            nested.append(Table(key, _sentence(_meaning(meta)),
                                [Row("NAME", value_type, "none", "one key for each name, any name")]))
        else:
            own.rows.append(_row(key, info, kind, meta))
    return ([own] if own.rows else []) + nested


def _row(key: str, info: msgspec.structs.FieldInfo, kind: object, meta: msgspec.Meta | None) -> Row:
    return Row(key, _type_text(kind, meta), _default_text(info), _meaning(meta))


def _is_section(kind: object) -> typing.TypeGuard[type[Section]]:
    return inspect.isclass(kind) and issubclass(kind, Section)


def _unannotated(kind: object) -> tuple[object, msgspec.Meta | None]:
    """The type without its Annotated metadata, and the key's Meta (description, bound)."""
    if typing.get_origin(kind) is typing.Annotated:
        base, *extras = typing.get_args(kind)
        return base, next((extra for extra in extras if isinstance(extra, msgspec.Meta)), None)
    return kind, None


def _type_text(kind: object, meta: msgspec.Meta | None = None) -> str:
    """A type in words: `int`, `list of strings`, `"OFF" | "NORMAL"`, `table of string → int`."""
    kind, inner = _unannotated(kind)
    meta = meta or inner
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):  # `X | None`: None is "unset", the default
        text = " or ".join(_type_text(arg) for arg in args if arg is not type(None))
    elif origin is typing.Literal:
        text = " \\| ".join(f"`{toml_value(arg)}`" for arg in args)
    elif origin is list:
        text = f"list of {_plural(_type_text(args[0]))}"
    elif origin is dict:
        text = f"table of {_type_text(args[0])} → {_type_text(args[1])}"
    elif _is_section(kind):
        text = "table"
    else:
        text = {bool: "bool", int: "int", float: "float", str: "string"}.get(
            kind, getattr(kind, "__name__", str(kind)))  # type: ignore[call-overload]
    if meta is not None and meta.ge is not None and meta.le is not None:
        text += f" from {number_text(meta.ge)} to {number_text(meta.le)}"
    elif meta is not None and meta.ge is not None:
        text += f" ≥ {number_text(meta.ge)}"
    return text


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and not isinstance(value, float) else f"{value:g}"


def _plural(text: str) -> str:
    return f"{text}s" if re.fullmatch(r"\w+", text) else f"({text})"


def _default_text(info: msgspec.structs.FieldInfo) -> str:
    has_factory = info.default_factory is not msgspec.NODEFAULT
    value = info.default_factory() if info.default is msgspec.NODEFAULT and has_factory else info.default
    if value is None:
        return "unset"
    if value is msgspec.NODEFAULT:
        return "required"
    text = f"`{toml_value(value)}`"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return text
    if info.encode_name.endswith("_bytes") and value >= MIB and value % MIB == 0:
        text += f" ({int(value) // MIB} MiB)"
    elif info.encode_name.endswith("_s") and value >= DAY and value % DAY == 0:
        days = int(value) // DAY
        text += f" ({days} day{'s' if days > 1 else ''})"
    elif info.encode_name.endswith("_s") and value >= HOUR and value % HOUR == 0:
        hours = int(value) // HOUR
        text += f" ({hours} hour{'s' if hours > 1 else ''})"
    return text


def _meaning(meta: msgspec.Meta | None) -> str:
    return _escape(meta.description or "") if meta is not None else ""


def _about_class(schema: type[Section]) -> str:
    doc = schema.__dict__.get("__doc__") or ""
    return _sentence(_escape(" ".join(doc.split())))


def _sentence(text: str) -> str:
    """`[controller]: the controller daemon` → `The controller daemon.`"""
    text = re.sub(r"^\[[^\]]*\]:\s*", "", text)
    if text and not text.endswith("."):
        text += "."
    return text[:1].upper() + text[1:]


def _escape(text: str) -> str:
    """Text for a markdown table cell: `|` escaped, and `<`, `>` outside code spans (a `<spool>`
    would be read as HTML)."""
    parts = text.split("`")
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts).replace("|", "\\|")


def _markdown(table: Table) -> str:
    lines = [f"## [{table.name}]", ""]
    if table.about:
        lines += [table.about, ""]
    lines += ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    lines += [f"| `{row.key}` | {row.type} | {row.default} | {row.meaning} |" for row in table.rows]
    return "\n".join(lines)


def _intro(found: list[Table]) -> str:
    system_file = Paths(SYSTEM_STATE_DIR).config_file
    listed = ", ".join(f"`[{table.name}]`" for table in found)
    return f"""\
<!-- Generated from src/drover/config_schema.py by scripts/config_docs.py; do not edit.
     Regenerate with: {REGENERATE} -->

# Configuration: {FILE_NAME}

Drover needs no configuration: without a `{FILE_NAME}`, or without one of its tables, every
setting is its default. An optional `{FILE_NAME}` in a cluster's state directory sets the
daemons' options:

- a personal cluster: `$XDG_STATE_HOME/drover/{FILE_NAME}` (by default
  `~/.local/state/drover/{FILE_NAME}`; `{STATE_DIR_VARIABLE}` moves the state directory, and the
  file with it);
- a shared cluster (`drover up --system`): `{system_file}`;
- a node's execd started by hand, `drover execd --state-dir DIR`: `DIR/{FILE_NAME}`.

The controller reads the file of its own state directory, and each node's execd that of its
host: `[execd]` belongs in each node's file, the other tables in the controller's.

The file is [TOML](https://toml.io). Its tables are {listed}. A key that is not listed below is
refused, and so is a value of the wrong type: the daemons do not start, and the error names the
file, the line and the key, for instance

    {FILE_NAME}:7: [execd] unknown key 'prologue' (did you mean 'prolog'?)

Every number has a range, given with its type below; a value outside it (`nan` and `inf`
included) is refused the same way, with the range:

    {FILE_NAME}:2: [controller] heartbeat_s must be a number from 0.1 to 3600, not -5

(`unit/config/test_number_ranges.py` walks the schema: every number has a range, and a value
past either end is refused naming the key and the range.)

`drover config check [--state-dir DIR]` reads the file as the daemons do and prints every
setting in effect, defaults included, marking those the file sets; it exits with status 1, and
that one line, when the daemons would refuse the file.

In the tables below, a default of "unset" means the key has no value unless the file gives one
(TOML cannot write "unset": leave the key out); its meaning says what happens then. How
`[scheduler]` orders jobs is explained in [scheduling.md](scheduling.md)."""


def generated() -> str:
    found = tables()
    parts = [_intro(found), *(_markdown(table) for table in found)]
    parts.append(f"## An example\n\nA `{FILE_NAME}` that sets a few keys of most tables:\n\n"
                 f"```toml\n{EXAMPLE}```")
    return "\n\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    return write_or_check(argv, DOCUMENT, generated(), REGENERATE)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
