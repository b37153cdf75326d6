"""Every option of the man pages of squeue, sacct, sinfo, scontrol, scancel, sstat, sprio and
sshare (tests/data/manpages/slurm/) is in the front end's option table with the arity the real
command gives it, is parsed with its value in every spelling getopt_long takes, and is refused
with a clear message where the table says ✗; an unknown option gets the real command's error."""

from __future__ import annotations

import importlib
import pathlib

import pytest

from drover.compat.optiontable import Arity, Mark, Option, parse_gnu

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "manpages" / "slurm"
COMMANDS = ("squeue", "sacct", "sinfo", "scontrol", "scancel", "sstat", "sprio", "sshare")


def man_page(command: str) -> list[tuple[list[str], Arity]]:
    entries = []
    for line in (DATA / f"{command}.txt").read_text().splitlines():
        *names, arity = line.split()
        entries.append((names, Arity(arity)))
    return entries


def table(command: str) -> list[Option]:
    return list(importlib.import_module(f"drover.compat.slurm.{command}").OPTIONS)


CASES = [(command, names, arity) for command in COMMANDS for names, arity in man_page(command)]


@pytest.mark.parametrize(("command", "names", "arity"), CASES,
                         ids=[f"{c}{n[-1]}" for c, n, _ in CASES])
def test_every_man_page_option_is_parsed_with_its_value(command: str, names: list[str], arity: Arity) -> None:
    options = table(command)
    for name in names:
        if arity is Arity.NONE:
            argvs = [[name]]
        elif arity is Arity.REQUIRED:
            argvs = [[name, "v1"]] + ([[f"{name}=v1"]] if name.startswith("--") else [[f"{name}v1"]])
        else:
            argvs = [[f"{name}=v1"] if name.startswith("--") else [f"{name}v1"]]
        for argv in argvs:
            found, operands = parse_gnu(argv, options, permute=True)
            assert operands == [], (argv, operands)
            ((option, value),) = found
            assert option.arity is arity, (name, option.names)
            assert value == (None if arity is Arity.NONE else "v1"), argv
            # The man page's spelling and the table's name the same option (a man page may name
            # a long option by a prefix getopt_long accepts, as squeue's --account).
            assert any(spelled.startswith(name) or name.startswith(spelled) for spelled in option.names)


@pytest.mark.parametrize("command", COMMANDS)
def test_the_table_holds_nothing_the_man_page_does_not_list(command: str) -> None:
    listed = {name for names, _ in man_page(command) for name in names}
    for option in table(command):
        if option.key == "autocomplete":
            continue  # hidden in every man page; bash completion sends it
        assert any(name in listed or any(m.startswith(name) or name.startswith(m) for m in listed
                                         if m.startswith("--") and name.startswith("--"))
                   for name in option.names), option.names


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_a_mark_and_refusals_say_why(command: str) -> None:
    for option in table(command):
        assert isinstance(option.mark, Mark)
        if option.mark in (Mark.REFUSED, Mark.APPROXIMATED, Mark.MEANINGLESS):
            assert option.note, f"{command} {option.names}: a ✗, ≈ or – needs its reason"


@pytest.mark.parametrize("command", COMMANDS)
def test_refused_options_exit_1_with_a_clear_message(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    main = importlib.import_module(f"drover.compat.slurm.{command}").main
    for option in table(command):
        if option.mark is not Mark.REFUSED:
            continue
        argv = [option.names[-1]] + (["1"] if option.arity is Arity.REQUIRED else [])
        if command == "scontrol":
            argv += ["show", "job"]
        if command in ("sacct", "sstat") and option.key in ("batch-script", "env-vars"):
            argv += ["-j", "1"]
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert "not supported by Drover" in err or "job completion is disabled" in err, (argv, err)


HINTED = {"squeue", "sinfo", "scontrol", "scancel", "sprio", "sshare"}  # sacct and sstat print no hint


@pytest.mark.parametrize("command", COMMANDS)
def test_unknown_options_get_getopts_words(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    main = importlib.import_module(f"drover.compat.slurm.{command}").main
    assert main(["--no-such-option"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"{command}: unrecognized option '--no-such-option'"
    assert err[1:] == ([f'Try "{command} --help" for more information'] if command in HINTED else [])
    assert main(["-%"]) == 1
    assert capsys.readouterr().err.splitlines()[0] == f"{command}: invalid option -- '%'"


@pytest.mark.parametrize("command", COMMANDS)
def test_autocomplete_lists_the_long_options_that_start_so(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    main = importlib.import_module(f"drover.compat.slurm.{command}").main
    assert main(["--autocomplete=--v"]) == 0
    assert capsys.readouterr().out.split() == [
        name + ("=" if option.arity is Arity.REQUIRED else "") for option in table(command)
        for name in option.names if name.startswith("--v")]
