"""Text that listings show on other users' and operators' terminals: one line, no control
characters. Pure; standard library only."""

from __future__ import annotations

import re

from drover.core.errors import BadRequest

MAX_REASON = 1000  # a reason's characters: a drain's, a queue's stop or suspension's, a node's leave

# The control characters (C0, DEL and C1: the 65 code points of Unicode's category Cc), as one
# class matched at C speed: asking unicodedata of each character took 3 % of a busy controller's
# time (bench/cluster.py B8), for every name and text of every report.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_LINE_SPACING = "\t\n\v\f\r"  # replaced by a space, so that words stay apart


def has_control_characters(text: str) -> bool:
    """Whether `text` holds a control character (C0, DEL or C1: a newline, or a terminal's escape
    sequence that would rewrite what another user's listing shows)."""
    # Every control character is unprintable: printable text (nearly all of it) is told at once.
    return not text.isprintable() and _CONTROL.search(text) is not None


def check_reason(reason: str) -> None:
    """Refuse a reason that is longer than a listing's line can hold or that would write on the
    terminal of whoever lists it."""
    if len(reason) > MAX_REASON or has_control_characters(reason):
        raise BadRequest(f"a reason is one line of at most {MAX_REASON} printable characters (no control "
                         "characters: listings show it on other users' and operators' terminals)")


CUT_MARK = "…"  # ends a text cut to its limit, so that a reader knows there was more


def shown_line(text: str, limit: int = MAX_REASON) -> str:
    """`text` made fit to show on anyone's terminal: each control character replaced (a tab or
    line break by a space, so that words stay apart; any other, an escape among them, by U+FFFD)
    and the whole cut to `limit` characters. For text that must not be lost when it is not clean
    (what a node reports, which an honest node may have taken from a failing command's message):
    refusing it would lose the report, so it is kept, cleaned."""
    if len(text) <= limit and text.isprintable():
        return text  # nothing to change, as for nearly every text: told without a look at each character
    text = _CONTROL.sub(_replacement, text)
    if len(text) > limit:
        text = text[:limit - len(CUT_MARK)] + CUT_MARK
    return text


def _replacement(control: re.Match[str]) -> str:
    return " " if control.group() in _LINE_SPACING else "\ufffd"
