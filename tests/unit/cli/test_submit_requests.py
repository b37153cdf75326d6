"""drover submit's node and cluster requests (--gres, --gpus, -C, --exclusive, -L) made into the
job request, and bad values refused before anything is sent."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from drover.cli.commands.submit import _with_directives, build_parser, jobs_from_arguments
from drover.core.errors import BadRequest
from drover.protocol.plain import JobRequest


def _job(*argv: str) -> JobRequest:
    args = build_parser("submit").parse_args(list(argv))
    (job,) = jobs_from_arguments(args, ["true"])
    return job


def test_resources_go_into_the_request() -> None:
    job = _job("--gres", "gpu:2", "--gres", "nic:1,gpu:1", "--gpus", "a100:1", "-C", "avx512&bigmem",
               "--exclusive", "-L", "matlab:2,foo")
    assert job["gres"] == ["gpu:3,gpu:a100:1,nic:1"]  # one request, canonical and merged
    assert (job["constraint"], job["exclusive"], job["licenses"]) == ("avx512&bigmem", True, {"matlab": 2, "foo": 1})
    assert _job("--gpus", "2")["gres"] == ["gpu:2"] and _job("--constraint=a|b")["constraint"] == "a|b"


def test_nothing_asked_for_sends_nothing() -> None:
    for job in (_job(), _job("--gres", "none")):
        assert not {"gres", "licenses", "constraint", "exclusive"} & set(job)


def test_run_takes_them_too() -> None:
    args = build_parser("run").parse_args(["--gpus", "1", "--exclusive"])
    (job,) = jobs_from_arguments(args, ["nvidia-smi"])
    assert job["gres"] == ["gpu:1"] and job["exclusive"] is True


@pytest.mark.parametrize(("argv", "message"), [
    (["--gres", "gpu:0"], "argument --gres: 'gpu:0': the count must be 1 or more"),
    (["--gres", "9x"], "argument --gres: '9x': the name '9x' must be a letter"),
    (["--gpus", "two"], "argument --gpus: 'two': the count 'two' is not a number"),
    (["--gpus", "a:b:1"], "argument --gpus: 'a:b:1': write [type:]count"),
    (["-L", "matlab:0"], "argument -L/--licenses: 'matlab:0': the count must be from 1"),
    (["--licenses", "a,,b"], "an empty licence between commas"),
    (["-C", " "], "argument -C/--constraint: a constraint must name at least one node feature"),
])
def test_bad_values_are_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser("submit").parse_args(argv)
    assert exited.value.code == 2 and message in capsys.readouterr().err


def test_gpus_adding_up_past_the_limit_are_refused() -> None:
    with pytest.raises(BadRequest, match="adds up to more than"):
        _job("--gres", "gpu:65536", "--gpus", "1")


def test_directives_take_them_and_a_bad_one_names_its_line(tmp_path: pathlib.Path) -> None:
    parser = build_parser("submit")
    script = "#!/bin/bash\n#DROVER --gpus 2 -L matlab\n#DROVER --exclusive -C bigmem\ntrue\n"
    path = tmp_path / "job.sh"
    path.write_text(script)
    args = _with_directives(parser, parser.parse_args([str(path)]), [str(path)], script)
    (job,) = jobs_from_arguments(args, [], script)
    assert (job["gres"], job["licenses"], job["exclusive"], job["constraint"]) == (
        ["gpu:2"], {"matlab": 1}, True, "bigmem")
    bad = "#!/bin/bash\n#DROVER --licenses matlab:x\ntrue\n"
    with pytest.raises(BadRequest, match=r"job.sh: line 2: .*argument -L/--licenses: 'matlab:x'"):
        _with_directives(parser, parser.parse_args([str(path)]), [str(path)], bad)


def test_help_imports_no_resource_parsing() -> None:
    code = ("import sys; from drover.cli.commands.submit import build_parser; build_parser('submit').format_help(); "
            "print(sorted(m for m in ('drover.core.gres', 'drover.core.licenses') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("text", ["afterok:5:6", "after:12.3?afterany:4", "aftercorr:7", "singleton",
                                  "afternotok:3,singleton"])
def test_dependencies_are_sent_as_the_core_spells_them(text: str) -> None:
    from drover.cli.commands.submit import add_dependencies
    from drover.core.dependencies import parse_dependencies, request_fields

    job: JobRequest = {"script": "true\n", "workdir": "/"}
    add_dependencies(job, parse_dependencies(text))
    assert {key: job[key] for key in ("dependencies", "dependency_any")} == request_fields(parse_dependencies(text))
    assert _job("-d", text)["dependencies"] == job["dependencies"]


def test_a_request_with_every_kind_of_option_is_built_without_msgspec(tmp_path: pathlib.Path) -> None:
    (tmp_path / "in.dat").write_text("x")
    code = ("import sys; sys.modules['msgspec'] = None\n"
            "from drover.cli.commands.submit import build_parser, jobs_from_arguments\n"
            "import drover.client.client\n"
            "args = build_parser('submit').parse_args(sys.argv[1:])\n"
            "(job,) = jobs_from_arguments(args, ['true'])\n"
            "print(sorted(job))")
    argv = ["-q", "q", "-J", "n", "-o", "o-%j", "--mem", "1G", "--gpus", "1", "-L", "matlab", "--pe", "mpi", "2",
            "-t", "10m", "-a", "1-3", "-d", "afterok:5", "-b", "now+1hours", "--mail-user", "ann", "--zap",
            "--pids-max", "9", "--signal", "USR1@30", "--checkpoint", "blcr", "--checkpoint-interval", "sx",
            "--stage-in", str(tmp_path / "in.dat"), "--stage-out", "*.out", "--notify"]
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "'dependencies'" in done.stdout and "'stage_in'" in done.stdout and "'checkpoint_occasion'" in done.stdout
