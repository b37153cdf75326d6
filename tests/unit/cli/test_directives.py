"""#DROVER lines: read from the top of the script to its first command, split as a shell splits."""

from __future__ import annotations

import pytest

from drover.cli.directives import directives
from drover.core.errors import BadRequest


def test_lines_up_to_the_first_command_with_their_numbers() -> None:
    script = ("#!/bin/bash\n#DROVER --time 10m -J 'my job'  # a comment\n\n# a plain comment\n#DROVERS --nope\n"
              "#DROVER --mem=1G\necho hi\n#DROVER --cpus 4\n")
    assert directives(script, "job.sh") == [(2, ["--time", "10m", "-J", "my job"]), (6, ["--mem=1G"])]


@pytest.mark.parametrize(("line", "message"), [
    ("#DROVER --name 'unclosed", "job.sh: line 2: bad #DROVER line: No closing quotation"),
    ("#DROVER walltime=1h", "job.sh: line 2: #DROVER walltime=1h: expected an option"),
])
def test_a_malformed_line_names_its_number(line: str, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        directives(f"#!/bin/sh\n{line}\ntrue\n", "job.sh")
