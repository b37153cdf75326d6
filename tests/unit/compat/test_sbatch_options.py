"""sbatch's, srun's and salloc's option tables against their man pages' option lists (as data in
tests/data/manpages/), and every option parsed: accepted with its value, or refused in words."""

from __future__ import annotations

import pathlib

import pytest

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.slurm.request import OptionError, Refused, Request, apply_marks, parse
from drover.compat.slurm.submit_options import options_for

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
