"""An attempt's lifeline ends only at its end of file (execd/attempts.py `_at_end`): what a
process of the same user might write into it, through /proc, is read away and ends nothing."""

from __future__ import annotations

import os

from drover.execd.attempts import _at_end


def test_only_the_end_of_file_ends_a_lifeline() -> None:
    lifeline, given = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        assert not _at_end(lifeline)
        os.write(given, b"x" * 10000)  # more than one read takes
        assert not _at_end(lifeline)
        assert not _at_end(lifeline)  # and it was all read away
        os.close(given)
        given = -1
        assert _at_end(lifeline)
    finally:
        os.close(lifeline)
        if given >= 0:
            os.close(given)
