"""#SBATCH lines read as sbatch reads them (src/sbatch/opt.c: _opt_batch_script, get_argument)."""

from __future__ import annotations

import pytest

from drover.compat.slurm.directives import DirectiveError, sbatch_directives


def test_directives_are_read_until_the_first_command() -> None:
    script = ("#!/bin/bash\n#SBATCH --job-name=\"my job\" # a comment\n#SBATCH -t 1:00:00\n\n"
              "# a plain comment\n  #SBATCH --ignored-as-indented\n#SBATCH --mem 2G\necho hi\n#SBATCH --late=yes\n")
    found = sbatch_directives(script)
    assert found.words == ["--job-name=my job", "-t", "1:00:00", "--mem", "2G"]
    assert found.lines == [2, 3, 3, 7, 7]


def test_words_are_split_as_get_argument_splits_them() -> None:
    script = "#!/bin/sh\n#SBATCH --comment='a # b' -J a\\ b --x=\"q\\\"q\" --y=a'b c'd\n#SBATCH--wckey=w\n"
    assert sbatch_directives(script).words == ["--comment=a # b", "-J", "a b", '--x=q"q', "--y=ab cd", "--wckey=w"]
    assert sbatch_directives("#!/bin/sh\n#SBATCH -J x '' --never\n").words == ["-J", "x"]  # '' ends the line


def test_the_old_prefix_is_read_and_noted() -> None:
    found = sbatch_directives("#!/bin/sh\n#SLURM -J old\n")
    assert found.words == ["-J", "old"] and found.old_prefix


def test_what_sbatch_calls_fatal_is_refused_with_its_line() -> None:
    with pytest.raises(DirectiveError, match=r"job.sh: line 2: Unmatched `'` in \[#SBATCH -J 'x\]") as refused:
        sbatch_directives("#!/bin/sh\n#SBATCH -J 'x\n", "job.sh")
    assert refused.value.fatal
    with pytest.raises(DirectiveError, match="line 3: heterogeneous jobs"):
        sbatch_directives("#!/bin/sh\n#SBATCH -n 1\n#SBATCH hetjob\n#SBATCH -n 2\n")
