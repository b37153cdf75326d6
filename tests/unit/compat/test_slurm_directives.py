"""#SBATCH directives and option translation, on plain data."""

from __future__ import annotations

import pytest

from drover.compat.slurm.directives import directives
from drover.compat.slurm.sbatch import dependencies, parser, pattern, split_known, to_job
from drover.core.errors import BadRequest


def test_directives_are_read_until_the_first_command() -> None:
    script = ("#!/bin/bash\n#SBATCH --job-name=\"my job\" # a comment\n#SBATCH -t 1:00:00\n\n"
              "# a plain comment\n#SBATCH --mem 2G\necho hi\n#SBATCH --ignored=yes\n")
    assert directives(script) == ["--job-name=my job", "-t", "1:00:00", "--mem", "2G"]


def test_a_bad_directive_names_its_line() -> None:
    with pytest.raises(BadRequest, match="line 3: bad #SBATCH directive"):
        directives("#!/bin/bash\n#SBATCH -J ok\n#SBATCH notanoption\n")
    with pytest.raises(BadRequest, match="line 2"):
        directives("#!/bin/bash\n#SBATCH --job-name='unterminated\n")


def test_options_translate_to_a_drover_job() -> None:
    args = parser().parse_args(["-J", "x", "-c", "2", "--mem-per-cpu", "1G", "-t", "1-00:00:00", "-a", "1-4%2",
                                "-d", "afterok:5:6", "-p", "default", "--nice", "5", "-o", "o-%A_%a.%J.out"])
    job = to_job(args, "#!/bin/bash\ntrue\n", strict=False)
    assert job["cpus"] == 2 and job["memory_mib"] == 2048 and job["time_limit_s"] == 86400
    assert job["array"] == "1-4%2" and job["after_ok"] == [5, 6] and job["priority"] == -5
    assert job["output"] == "o-%A_%a.%j.0.out"


def test_approximations_warn_or_are_refused_under_strict(capsys: pytest.CaptureFixture[str]) -> None:
    args = parser().parse_args(["-n", "4"])
    assert to_job(args, "#!/bin/sh\n", strict=False)["cpus"] == 4
    assert "one task with 4 CPUs" in capsys.readouterr().err
    with pytest.raises(BadRequest, match="refused under --strict"):
        to_job(args, "#!/bin/sh\n", strict=True)
    with pytest.raises(BadRequest, match="one node"):
        to_job(parser().parse_args(["-N", "2"]), "#!/bin/sh\n", strict=False)


def test_harmless_options_are_dropped_with_their_values() -> None:
    kept, dropped = split_known(["-A", "proj", "--qos=high", "-J", "x", "--requeue"])
    assert kept == ["-J", "x"] and dropped == ["-A", "--qos", "--requeue"]


def test_patterns_and_dependencies() -> None:
    assert pattern("%x-%J-%t-%N.out") == "%x-%j.0-0-%N.out"
    assert dependencies("afterok:12:13_4") == [12, 13]
    with pytest.raises(BadRequest, match="only afterok"):
        dependencies("afterany:12")


def test_hostlists_expand_as_slurm_does() -> None:
    from drover.compat.slurm.hostlist import expand

    assert expand("node[1-3,5],gpu07") == ["node1", "node2", "node3", "node5", "gpu07"]
    assert expand("n[08-10]") == ["n08", "n09", "n10"]
    with pytest.raises(BadRequest, match="unbalanced"):
        expand("node[1-3")
