"""An array's task output as `drover run --array` shows it: each line prefixed with the task's
index (srun --label), whatever the pieces it arrives in."""

from __future__ import annotations

import io

from drover.cli.output_files import Labelled


def test_each_line_is_labelled_once_however_it_arrives() -> None:
    out = io.BytesIO()
    labelled = Labelled(out, 7)
    for piece in (b"fir", b"st\nsec", b"ond\n\nthi", b"rd"):
        labelled.write(piece)
    assert out.getvalue() == b"7: first\n7: second\n7: \n"
    labelled.close()
    assert out.getvalue() == b"7: first\n7: second\n7: \n7: third\n"
    labelled.close()  # nothing left: nothing more
    assert out.getvalue().count(b"third") == 1
