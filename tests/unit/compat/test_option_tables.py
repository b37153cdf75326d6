"""The option tables the front ends parse from are the ones docs/compat.md shows."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from drover.compat.optiontable import (
    Arity,
    Mark,
    Option,
    begin_marker,
    end_marker,
    markdown_table,
    with_tables,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _generator():  # scripts/ is not a package
    spec = importlib.util.spec_from_file_location("compat_docs", ROOT / "scripts" / "compat_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_are_generated_from_the_option_tables() -> None:
    generator = _generator()
    document = (ROOT / "docs" / "compat.md").read_text()
    assert generator.generated(document) == document, "docs/compat.md is out of date: run make compat-docs"


def test_a_table_row_spells_every_name_and_the_mark() -> None:
    option = Option(("-J", "--job-name"), Arity.REQUIRED, Mark.SUPPORTED, "the job's name", "NAME")
    table = markdown_table([option])
    assert table.splitlines()[2] == "| `-J`, `--job-name` NAME | ✓ | the job's name |"
    assert option.key == "job-name"


def test_a_command_without_its_markers_is_an_error_not_a_silent_omission() -> None:
    with pytest.raises(ValueError, match="no section for sbatch"):
        with_tables("# nothing here\n", {"sbatch": "| table |"})
    document = f"a\n{begin_marker('x')}\nold\n{end_marker('x')}\nb\n"
    assert with_tables(document, {"x": "new"}) == f"a\n{begin_marker('x')}\nnew\n{end_marker('x')}\nb\n"
