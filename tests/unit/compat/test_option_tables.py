"""The option tables the front ends parse from are the ones docs/compat.md shows."""

from __future__ import annotations

import pathlib

import pytest
from tests.helpers.scripts import script_module

from drover.compat.optiontable import (
    Arity,
    Mark,
    Option,
    UsageError,
    begin_marker,
    end_marker,
    markdown_table,
    parse_gnu,
    with_tables,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_docs_are_generated_from_the_option_tables() -> None:
    generator = script_module("compat_docs")
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


SBATCH_LIKE = [
    Option(("-J", "--job-name"), Arity.REQUIRED, Mark.SUPPORTED),
    Option(("-H", "--hold"), Arity.NONE, Mark.SUPPORTED),
    Option(("-W", "--wait"), Arity.NONE, Mark.SUPPORTED),
    Option(("--exclusive",), Arity.OPTIONAL, Mark.APPROXIMATED),
    Option(("--export",), Arity.REQUIRED, Mark.SUPPORTED),
    Option(("--export-file",), Arity.REQUIRED, Mark.SUPPORTED),
]


def _parsed(argv: list[str], permute: bool = False) -> tuple[list[tuple[str, str | None]], list[str]]:
    found, operands = parse_gnu(argv, SBATCH_LIKE, permute)
    return [(option.key, value) for option, value in found], operands


def test_gnu_forms_of_values_flags_and_clusters() -> None:
    assert _parsed(["-Jone", "-J", "two", "--job-name=three", "--job-name", "four", "-HW", "x.sh", "-J", "5"]) == (
        [("job-name", "one"), ("job-name", "two"), ("job-name", "three"), ("job-name", "four"),
         ("hold", None), ("wait", None)],
        ["x.sh", "-J", "5"],
    )
    assert _parsed(["--exclusive", "--exclusive=user", "a", "-H"], permute=True) == (
        [("exclusive", None), ("exclusive", "user"), ("hold", None)], ["a"])
    assert _parsed(["-H", "--", "-J", "x"]) == ([("hold", None)], ["-J", "x"])


def test_long_names_abbreviate_to_an_unambiguous_prefix_as_getopt_long_allows() -> None:
    assert _parsed(["--job=x", "--ho"])[0] == [("job-name", "x"), ("hold", None)]
    assert _parsed(["--export=ALL"])[0] == [("export", "ALL")]  # an exact name wins over a longer one
    with pytest.raises(UsageError, match="option '--exp' is ambiguous; possibilities: --export --export-file"):
        _parsed(["--exp=x"])


def test_what_getopt_refuses_it_refuses_in_its_words() -> None:
    for argv, message in ((["--bogus"], "unrecognized option '--bogus'"), (["-Z"], "invalid option -- 'Z'"),
                          (["-J"], "option requires an argument -- 'J'"),
                          (["--job"], "option '--job-name' requires an argument"),
                          (["--hold=1"], "option '--hold' doesn't allow an argument")):
        with pytest.raises(UsageError) as refused:
            _parsed(argv)
        assert str(refused.value) == message
