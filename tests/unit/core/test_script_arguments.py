"""A job script's arguments (`drover submit SCRIPT ARGS`, `qsub SCRIPT ARGS`) as its $1 $2 ..."""

from __future__ import annotations

import subprocess

from drover.core.script_arguments import with_arguments


def _run(script: str) -> str:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout


def test_arguments_follow_the_interpreter_line_and_keep_their_words() -> None:
    script = "#!/bin/bash\n#DROVER -J x\necho \"$# [$1] [$2]\"\n"
    given = with_arguments(script, ["a b", "$HOME;`x`"])
    assert given.splitlines()[0] == "#!/bin/bash" and given.splitlines()[2] == "#DROVER -J x"
    assert _run(given) == "2 [a b] [$HOME;`x`]\n"


def test_without_an_interpreter_line_or_its_newline() -> None:
    assert _run(with_arguments("echo $1", ["one"])) == "one\n"
    assert with_arguments("#!/bin/bash", ["one"]) == "#!/bin/bash\nset -- one\n"
    assert with_arguments("echo $1\n", []) == "echo $1\n"
