"""Text made fit to show on anyone's terminal (core/shown_text) is told clean at once and cleaned
by one pattern: the result is the same, for every input, as looking up each character's Unicode
category, as it was first written (`by_category` below)."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drover.core.shown_text import CUT_MARK, MAX_REASON, has_control_characters, shown_line


def by_category(text: str, limit: int = MAX_REASON) -> str:
    """shown_line as each character's category defines it: every control character (Cc) replaced,
    a tab or line break by a space and any other by U+FFFD, and the whole cut to `limit`."""
    if any(unicodedata.category(char) == "Cc" for char in text):
        text = "".join((" " if char in "\t\n\v\f\r" else "\ufffd") if unicodedata.category(char) == "Cc" else char
                       for char in text)
    if len(text) > limit:
        text = text[:limit - len(CUT_MARK)] + CUT_MARK
    return text


def test_every_code_point_is_told_and_replaced_as_its_category_says() -> None:
    points = range(sys.maxunicode + 1)
    assert [point for point in points if has_control_characters(chr(point))] == \
           [point for point in points if unicodedata.category(chr(point)) == "Cc"]
    every = "".join(map(chr, points))
    assert shown_line(every, len(every)) == by_category(every, len(every))


CASES = [
    "", "plain", "cgroup-v2", "exit_hook", "tab\there", "two\nlines", "crlf\r\n", "\x0b\x0c", "\x00", "\x1b[2J",
    "\x1b]0;owned\x07", "del\x7f", "c1\x80\x85\x9f", "\xa0no-break space", "line\u2028separator",
    "paragraph\u2029separator", "zero\u200bwidth", "bidi\u202eoverride", "\ufeffbom", "lone \udc80 surrogate",
    "e\u0301 combined", "日本語のテキスト", "emoji 🙂", "\x1c\x1d\x1e\x1f", "\t" * 50, "x" * MAX_REASON,
    "x" * (MAX_REASON + 1), "\n" * (MAX_REASON + 5), "é" * 2000, "a\x1b" * 700,
]


@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize("limit", [1, 2, 5, 100, MAX_REASON, 4096])
def test_shown_line_is_what_each_characters_category_makes_it(text: str, limit: int) -> None:
    assert shown_line(text, limit) == by_category(text, limit)
    assert has_control_characters(text) == any(unicodedata.category(char) == "Cc" for char in text)


def test_clean_text_within_its_limit_is_the_same_string() -> None:
    text = "a message a node sent, and a path: /scratch/alice/run-7/output.txt"
    assert shown_line(text, 4096) is text


# Text from every plane, with control characters, line breaks and separators drawn often.
ANY_TEXT = st.text(st.one_of(st.characters(), st.sampled_from("\t\n\r\x0b\x0c\x00\x1b\x7f\x85\x9f\u2028\u2029 ")),
                   max_size=300)


@settings(max_examples=500, deadline=None)
@given(ANY_TEXT, st.integers(min_value=1, max_value=400))
def test_any_text_is_shown_as_its_characters_categories_make_it(text: str, limit: int) -> None:
    assert shown_line(text, limit) == by_category(text, limit)
    assert has_control_characters(text) == any(unicodedata.category(char) == "Cc" for char in text)
