"""sbatch's, srun's and salloc's option tables against their man pages' option lists (as data in
tests/data/manpages/), and every option parsed: accepted with its value, or refused in words."""

from __future__ import annotations

import pathlib

import pytest

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.slurm.request import OptionError, Refused, Request, apply_marks, parse
from drover.compat.slurm.submission import to_job
from drover.compat.slurm.submit_options import options_for
from drover.protocol.plain import JobRequest

MANPAGES = pathlib.Path(__file__).resolve().parents[2] / "data" / "manpages"
COMMANDS = ("sbatch", "srun", "salloc")
DROVERS_OWN = {"--strict"}


def man_page_options(command: str) -> dict[tuple[str, ...], Arity]:
    options = {}
    for line in (MANPAGES / f"{command}.options").read_text().splitlines():
        if line and not line.startswith("#"):
            *names, arity = line.split()
            options[tuple(names)] = Arity(arity)
    return options


@pytest.mark.parametrize("command", COMMANDS)
def test_the_table_is_the_man_pages_option_list(command: str) -> None:
    table = {option.names: option.arity for option in options_for(command) if option.names[-1] not in DROVERS_OWN}
    assert table == man_page_options(command)


def _argv(option: Option, value: str, short: bool) -> list[str]:
    name = option.names[0] if short else option.names[-1]
    if option.arity is Arity.NONE:
        return [name]
    if option.arity is Arity.OPTIONAL:
        return [name + value] if short else [f"{name}={value}"]
    return [name, value]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_is_parsed_in_each_spelling_and_marked(command: str, capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    for option in options_for(command):
        spellings = [True, False] if len(option.names[0]) == 2 else [False]
        for short in spellings:
            found, operands = parse(command, [*_argv(option, "1", short), "script.sh", "--not-ours"])
            assert operands == ["script.sh", "--not-ours"], option.names  # the first operand ends the options
            assert [(o.key, v) for o, v in found] == [(option.key, None if option.arity is Arity.NONE else "1")]
        request = Request(command)
        request.add(found, "the command line")
        if option.mark is Mark.REFUSED:
            with pytest.raises(Refused, match="is not supported by Drover"):
                apply_marks(request, strict=False)
            continue
        apply_marks(request, strict=False)
        warned = capsys.readouterr().err
        if option.mark is Mark.APPROXIMATED:
            assert f"{command}: warning: --{option.key}" in warned
            with pytest.raises(Refused, match="refused under --strict"):
                apply_marks(request, strict=True)
        else:
            assert warned == ""


@pytest.mark.parametrize("command", COMMANDS)
def test_unknown_options_get_getopts_error(command: str) -> None:
    for argv, message in ((["--bogus"], "unrecognized option '--bogus'"), (["-j"], "invalid option -- 'j'"),
                          (["--time"], "option '--time' requires an argument"),
                          (["--hold=yes"], "option '--hold' doesn't allow an argument")):
        with pytest.raises(OptionError) as refused:
            parse(command, argv)
        assert str(refused.value) == message and refused.value.try_help


def test_the_environment_sits_between_directives_and_the_command_line() -> None:
    request = Request("sbatch")
    request.add(parse("sbatch", ["-J", "from-script", "-t", "5", "-p", "a"])[0], "#SBATCH")
    request.add_environment({"SBATCH_JOB_NAME": "from-env", "SBATCH_TIMELIMIT": "10", "SBATCH_WAIT": "",
                             "SLURM_NTASKS": "4"})  # not an input variable of sbatch's
    request.add(parse("sbatch", ["--job-name=from-line"])[0], "the command line")
    assert request.value("job-name") == "from-line" and request.value("time") == "10"
    assert request.value("partition") == "a" and request.has("wait") and not request.has("ntasks")
    assert request.spelled("time") == "SBATCH_TIMELIMIT=10"


def test_srun_reads_the_jobs_own_variables_as_its_defaults() -> None:
    request = Request("srun")
    request.add_environment({"SLURM_NTASKS": "4", "SLURM_CPUS_PER_TASK": "2", "SLURM_JOB_ID": "7"})
    request.add(parse("srun", ["-n", "2"])[0], "the command line")
    assert (request.value("ntasks"), request.value("cpus-per-task"), request.value("jobid")) == ("2", "2", "7")


def test_values_that_ask_for_nothing_missing_are_not_refused() -> None:
    request = Request("sbatch")
    request.add(parse("sbatch", ["--begin=now", "--gres=none", "-i", "/dev/null"])[0], "the command line")
    apply_marks(request, strict=True)


@pytest.mark.parametrize("command", COMMANDS)
def test_heterogeneous_jobs_are_refused_by_name(command: str) -> None:
    with pytest.raises(Refused, match="heterogeneous jobs"):
        parse(command, ["-n", "1", ":", "-n", "2", "job.sh"])


def _job(*argv: str, command: str = "sbatch", environ: dict[str, str] | None = None,
         directives: tuple[str, ...] = ()) -> JobRequest:
    request = Request(command)
    if directives:
        request.add(parse(command, list(directives))[0], "#SBATCH")
    request.add_environment(environ or {})
    request.add(parse(command, list(argv))[0], "the command line")
    apply_marks(request, strict=True)  # each of these is honoured: refused under --strict otherwise
    return to_job(request, "#!/bin/sh\ntrue\n", "job", environ={})


@pytest.mark.parametrize(("argv", "gres"), [
    (["--gres=gpu:2"], "gpu:2"),
    (["--gres", "gpu:a100:1,nic:1"], "gpu:a100:1,nic:1"),
    (["--gres=nic,gpu"], "gpu:1,nic:1"),
    (["--gpus=2"], "gpu:2"), (["-G", "a100:1"], "gpu:a100:1"), (["-G2"], "gpu:2"),
    (["--gpus-per-node=v100:3"], "gpu:v100:3"),
    (["--gpus-per-task=1"], "gpu:1"),
    (["-n", "4", "--gpus-per-task=a100:2"], "gpu:a100:8"),  # per Slurm task, all on the one node
    (["--ntasks-per-node=2", "--gpus-per-task=1"], "gpu:2"),
    (["--gres=nic:1", "--gpus=2"], "gpu:2,nic:1"),
    (["--gres=gpu:2", "--gpus=2"], "gpu:2"),  # the same GPUs twice
    (["--gpus=4", "-n", "2", "--gpus-per-task=2"], "gpu:4"),  # consistent
])
def test_generic_resources_and_gpus_become_the_jobs_gres(argv: list[str], gres: str) -> None:
    assert _job(*argv)["gres"] == [gres]


@pytest.mark.parametrize("command", COMMANDS)
def test_gres_none_asks_for_nothing(command: str) -> None:
    assert "gres" not in _job("--gres=none", command=command) and "gres" not in _job()


@pytest.mark.parametrize(("argv", "message"), [
    (["--gres=gpu:0"], "Invalid generic resource \\(gres\\) specification: --gres 'gpu:0'"),
    (["--gres=9gpu:1"], "Invalid generic resource"),
    (["--gres=gpu:a:b:c"], "Invalid generic resource"),
    (["--gpus=x"], "Invalid generic resource .*--gpus 'x'"),
    (["--gpus-per-task=a100:0"], "--gpus-per-task 'a100:0'"),
    (["--gpus=2", "--gpus-per-node=3"], "--gpus-per-node=3 and --gpus=2 ask for different GPUs"),
    (["--gres=gpu:1", "--gpus=2"], "--gres=gpu:1 and --gpus=2 ask for different GPUs"),
    (["-n", "1000", "--gpus-per-task=100"], "gpu:100000.: the count must be at most"),
    (["-L", "matlab:0"], "Invalid license specification: 'matlab:0'"),
    (["-L", "a|b"], "Invalid license specification: 'a|b': one of several"),
    (["--exclusive=bogus"], "Invalid --exclusive specification"),
])
def test_bad_values_are_refused_before_anything_is_sent(argv: list[str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        _job(*argv)


@pytest.mark.parametrize("command", ("sbatch", "salloc", "srun"))
def test_constraint_licenses_and_exclusive(command: str) -> None:
    job = _job("-C", "avx512&bigmem", "-L", "matlab:2,foo,matlab", "--exclusive", command=command)
    assert (job["constraint"], job["licenses"], job["exclusive"]) == ("avx512&bigmem", {"matlab": 3, "foo": 1}, True)
    assert _job("--constraint=a|b")["constraint"] == "a|b"
    assert _job("--licenses=nastran@slurmdb:12")["licenses"] == {"nastran@slurmdb": 12}
    assert _job("--exclusive=exclusive")["exclusive"] is True
    plain = _job()
    assert not {"constraint", "licenses", "exclusive", "gres"} & set(plain)


@pytest.mark.parametrize("value", ["user", "mcs", "topo"])
def test_exclusive_to_users_mcs_or_topology_is_approximated(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    request = Request("sbatch")
    request.add(parse("sbatch", [f"--exclusive={value}"])[0], "the command line")
    apply_marks(request, strict=False)
    assert f"sbatch: warning: --exclusive={value}: ignored" in capsys.readouterr().err
    assert "exclusive" not in to_job(request, "#!/bin/sh\n", "job", environ={})
    with pytest.raises(Refused, match="refused under --strict"):
        apply_marks(request, strict=True)
    assert "exclusive" not in _job("--exclusive=oversubscribe")


@pytest.mark.parametrize(("command", "environ"), [
    ("sbatch", {"SBATCH_GRES": "nic:1", "SBATCH_GPUS": "a100:2", "SBATCH_CONSTRAINT": "bigmem",
                "SBATCH_EXCLUSIVE": ""}),
    ("salloc", {"SALLOC_GRES": "nic:1", "SALLOC_GPUS": "a100:2", "SALLOC_CONSTRAINT": "bigmem",
                "SALLOC_EXCLUSIVE": ""}),
    ("srun", {"SLURM_GRES": "nic:1", "SLURM_GPUS": "a100:2", "SLURM_CONSTRAINT": "bigmem",
              "SLURM_EXCLUSIVE": ""}),
])
def test_input_environment_variables_take_effect(command: str, environ: dict[str, str]) -> None:
    job = _job(command=command, environ=environ)
    assert (job["gres"], job["constraint"], job["exclusive"]) == (["gpu:a100:2,nic:1"], "bigmem", True)
    per_task = {f"{command.upper() if command != 'srun' else 'SLURM'}_GPUS_PER_TASK": "1"}
    assert _job("-n", "3", command=command, environ=per_task)["gres"] == ["gpu:3"]


def test_the_command_line_wins_over_the_environment_and_directives() -> None:
    job = _job("--gres=gpu:1", "-C", "fast", environ={"SBATCH_GRES": "gpu:4", "SBATCH_CONSTRAINT": "slow"},
               directives=("--gres=gpu:8", "-L", "matlab"))
    assert (job["gres"], job["constraint"], job["licenses"]) == (["gpu:1"], "fast", {"matlab": 1})
