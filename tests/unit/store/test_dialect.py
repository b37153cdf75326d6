"""The dialect layer on plain data: `?` placeholders become psycopg's outside quotes only, and a
GLOB pattern becomes a regular expression that matches exactly what SQLite's GLOB matches."""

from __future__ import annotations

import re
import sqlite3

import pytest

from drover.store.dialect import glob_to_regex, to_format_style


def test_placeholders_are_translated_outside_quoted_text_only() -> None:
    assert to_format_style("SELECT a FROM t WHERE b = ? AND c IN (?, ?)") == (
        "SELECT a FROM t WHERE b = %s AND c IN (%s, %s)")
    assert to_format_style("SELECT '?', \"a?\" FROM t WHERE d LIKE '5%' AND e = ?") == (
        "SELECT '?', \"a?\" FROM t WHERE d LIKE '5%%' AND e = %s")


NAMES = ["align-1", "align-22", "ALIGN-1", "train", "a.b", "a*b", "x[1]", "plot 7", "résumé", "a+b", "a^b", ""]
PATTERNS = ["align-*", "align-?", "ALIGN-*", "*", "a.b", "a?b", "a[.*]b", "x[[]1]", "[^a]*", "[a-c]*", "plot ?",
            "r?sum?", "a+b", "a^b", "[]]", "*-[0-9]"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_glob_matches_as_sqlite_matches_it(pattern: str) -> None:
    sqlite = sqlite3.connect(":memory:")
    expected = [name for name in NAMES if sqlite.execute("SELECT ? GLOB ?", (name, pattern)).fetchone()[0]]
    assert [name for name in NAMES if re.search(glob_to_regex(pattern), name)] == expected
