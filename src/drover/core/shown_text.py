"""Text that listings show on other users' and operators' terminals: one line, no control
characters. Pure; standard library only."""

from __future__ import annotations

import unicodedata

from drover.core.errors import BadRequest

MAX_REASON = 1000  # a reason's characters: a drain's, a queue's stop or suspension's, a node's leave


def has_control_characters(text: str) -> bool:
    """Whether `text` holds a control character (C0, DEL or C1: a newline, or a terminal's escape
    sequence that would rewrite what another user's listing shows)."""
    return any(unicodedata.category(char) == "Cc" for char in text)


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
    if has_control_characters(text):
        text = "".join(_replacement(char) for char in text)
    if len(text) > limit:
        text = text[:limit - len(CUT_MARK)] + CUT_MARK
    return text


def _replacement(char: str) -> str:
    if unicodedata.category(char) != "Cc":
        return char
    return " " if char in "\t\n\v\f\r" else "\ufffd"
