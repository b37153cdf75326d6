"""docs/configuration.md is generated from drover.toml's schema: it is current, it lists every
key, and its example is a file the daemons accept."""

from __future__ import annotations

import pathlib
import re
import typing

import msgspec
from tests.helpers.scripts import script_module

from drover.config_file import parse_config
from drover.config_schema import DroverConfig, Section

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_docs_are_generated_from_the_schema() -> None:
    generator = script_module("config_docs")
    document = (ROOT / "docs" / "configuration.md").read_text()
    assert generator.generated() == document, (
        "docs/configuration.md is out of date: run .venv/bin/python scripts/config_docs.py")


def _sections(schema: type[Section], path: str) -> dict[str, type[Section]]:
    """Every table of the schema by its header, found independently of the generator."""
    found = {path: schema} if path else {}
    for info in msgspec.structs.fields(schema):
        kind = info.type
        if typing.get_origin(kind) is typing.Annotated:
            kind = typing.get_args(kind)[0]
        here = f"{path}.{info.encode_name}" if path else info.encode_name
        if typing.get_origin(kind) is dict:
            here, kind = f"{here}.NAME", typing.get_args(kind)[1]
        if isinstance(kind, type) and issubclass(kind, Section):
            found |= _sections(kind, here)
    return found


def test_every_table_and_key_of_the_schema_is_documented() -> None:
    generator = script_module("config_docs")
    documented = {table.name: {row.key for row in table.rows} for table in generator.tables()}
    sections = _sections(DroverConfig, "")
    assert {"controller", "execd", "execd.rlimits", "queues.NAME", "scheduler", "compat"} <= set(sections)
    for name, schema in sections.items():
        assert documented.get(name) == {info.encode_name for info in msgspec.structs.fields(schema)}, name
    assert documented["execd.rlimits"] >= {"as", "nofile"}  # the key, not the field `as_`
    assert documented["licenses"] == {"NAME"}  # a top-level table of free names has its own section
    document = generator.generated()
    for name in documented:
        assert f"\n## [{name}]\n" in document


def test_types_and_defaults_read_as_words() -> None:
    rows = {(table.name, row.key): row for table in script_module("config_docs").tables() for row in table.rows}
    assert rows["controller", "sqlite_synchronous"].type == '`"OFF"` \\| `"NORMAL"` \\| `"FULL"` \\| `"EXTRA"`'
    assert (rows["controller", "operators"].type, rows["controller", "operators"].default) == ("list of strings", "`[]`")
    assert (rows["execd", "cpus"].type, rows["execd", "cpus"].default) == ("int from 0 to 1048576", "unset")
    assert rows["controller", "max_request_bytes"].type == "int from 1 to 1099511627776"
    assert rows["controller", "heartbeat_s"].type == "float from 0.1 to 3600"
    assert rows["scheduler", "shares"].type == "table of string → float from 0 to 4294967295"
    assert rows["execd", "rlimits"].default == "see [execd.rlimits]"


def test_the_example_is_a_valid_drover_toml() -> None:
    document = (ROOT / "docs" / "configuration.md").read_text()
    examples = re.findall(r"```toml\n(.*?)```", document, re.DOTALL)
    assert len(examples) == 1
    loaded = parse_config(examples[0], "docs/configuration.md")
    assert loaded.from_file and loaded.config != DroverConfig()
