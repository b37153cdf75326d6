"""The plain-text tables of listings (cli/render.table): what `drover status`, `nodes`, `history`
and the others print for people."""

from __future__ import annotations

import pytest

from drover.cli.render import table


def drawn(capsys: pytest.CaptureFixture[str], *args: object, **kwargs: object) -> list[str]:
    table(*args, **kwargs)  # type: ignore[arg-type]
    return capsys.readouterr().out.split("\n")


def test_columns_are_as_wide_as_their_widest_cell_two_spaces_apart(capsys: pytest.CaptureFixture[str]) -> None:
    lines = drawn(capsys, ["JOB", "NAME", "TASKS"], [(1, "a", 1), (12, "long-name", 100), (3, None, 2)],
                  right=["JOB", "TASKS"])
    assert lines == ["JOB  NAME       TASKS",
                     "  1  a              1",
                     " 12  long-name    100",
                     "  3  -              2",
                     ""]


def test_wide_characters_take_two_cells_and_a_cell_stays_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    lines = drawn(capsys, ["NAME", "USER"], [("日本", "a"), ("two\nlines", "b"), ("e\u0301t\u00e9", "c")])
    assert lines[:4] == ["NAME       USER", "日本       a   ", "two lines  b   ", "e\u0301t\u00e9        c   "]


def test_markup_in_a_cell_is_printed_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    assert drawn(capsys, ["NAME"], [("[bold]x[/bold]",)])[1] == "[bold]x[/bold]"
