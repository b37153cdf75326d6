"""A Grid Engine command line refused for a bad value says what is wrong on its first line, then
the usage (as qacct -t does), never the usage alone with the reason lost at its end."""

from __future__ import annotations

import pytest

from drover.compat.gridengine import qacct, qdel, qstat


@pytest.mark.parametrize(("main", "argv", "first"), [
    (qstat.main, ["-j", "-1"], 'ERROR! invalid option argument "-1"'),
    (qdel.main, ["-f", "-1"], 'ERROR! invalid option argument "-1"'),
    (qacct.main, ["-d", "-1"],
     'ERROR! invalid option argument "-d -1": the number of days must be a whole number from 1 to 100000'),
    (qacct.main, ["-b", "notadate"], 'ERROR! invalid option argument "notadate": a time is [[CC]YY]MMDDhhmm[.SS]'),
    (qstat.main, ["-s", "bogus"], "ERROR! wrong argument to -s option"),
])
def test_the_error_comes_first_then_the_usage(main: object, argv: list[str], first: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 1  # type: ignore[operator]
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == first
    assert lines[1].startswith("usage: ") and first not in lines[1:]
