"""jobd's many jobs in one script file, separated by lines #NEXT or #NEXTSCRIPT."""

from __future__ import annotations

from drover.cli.commands.submit import script_parts


def test_jobd_next_and_nextscript_lines_separate_the_parts_and_belong_to_none() -> None:
    script = "#!/bin/bash\necho one\n#NEXT\necho two\n  #NEXTSCRIPT  \necho three"
    assert script_parts(script) == [(1, "#!/bin/bash\necho one\n"), (4, "echo two\n"), (6, "echo three\n")]


def test_jobd_a_script_without_markers_is_one_job_as_it_is() -> None:
    assert script_parts("echo one\n# NEXT\n#NEXTJOB\necho #NEXT\n") == [(1, "echo one\n# NEXT\n#NEXTJOB\necho #NEXT\n")]


def test_jobd_a_part_of_blank_lines_only_is_no_job() -> None:
    assert script_parts("#NEXT\necho one\n#NEXT\n\n#NEXTSCRIPT\necho two\n#NEXT\n") == [(2, "echo one\n"), (6, "echo two\n")]
