"""Every Grid Engine front end parses every option of its man page, with the man page's arity,
from the table docs/compat.md is generated from, and its table holds no option the man page lacks
but Drover's own; an unknown option gets Grid Engine's error; every option the table marks ✗ is
refused with the reason, a non-zero exit status and nothing done."""

from __future__ import annotations

import importlib
import pathlib

import pytest

from drover.cli.commands.compat import GRIDENGINE_COMMANDS
from drover.compat.gridengine.syntax import GeUsageError, Operands, parse
from drover.compat.optiontable import Arity, Mark, Option

MANPAGES = pathlib.Path(__file__).resolve().parents[2] / "data" / "manpages"
ARITY = {"0": Arity.NONE, "1": Arity.REQUIRED, "2": Arity.TWO, "?": Arity.OPTIONAL}


def man_pages() -> dict[str, dict[str, Arity]]:
    """Each command's man-page options and their arity: gridengine.txt, and qsub.txt for qsub."""
    pages = {}
    for line in (MANPAGES / "gridengine.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            command, _, words = line.partition(": ")
            items = words.split()
            pages[command] = {name: ARITY[arity] for name, arity in zip(items[::2], items[1::2], strict=True)}
    pages["qsub"] = {name: ARITY[arity] for name, arity in (
        line.split() for line in (MANPAGES / "qsub.txt").read_text().splitlines() if line and not line.startswith("#"))}
    return pages


def table(command: str) -> list[Option]:
    module, _function = GRIDENGINE_COMMANDS[command]
    options: list[Option] = importlib.import_module(module).OPTIONS
    return options


CASES = [(command, name, arity) for command, page in man_pages().items() for name, arity in page.items()]


@pytest.mark.parametrize(("command", "name", "arity"), CASES)
def test_each_man_page_option_is_in_the_table_and_parsed_with_its_arity(command: str, name: str,
                                                                         arity: Arity) -> None:
    options = {o.names[0]: o for o in table(command)}
    assert name in options, f"{command} lacks {name}"
    option = options[name]
    assert option.arity is arity, (command, name)
    assert option.note, "every row says what Drover does with the option"
    values = {Arity.NONE: [], Arity.REQUIRED: ["v"], Arity.TWO: ["smp", "2"], Arity.OPTIONAL: ["v"]}[arity]
    parsed = parse([name, *values], table(command), Operands.NONE, read=lambda path: "")
    if name == "-@":
        assert parsed.given == []
        return
    (given,) = parsed.given
    assert given.option is option and given.value == (" ".join(values) or None)


@pytest.mark.parametrize("command", sorted(GRIDENGINE_COMMANDS))
def test_an_unknown_option_gets_grid_engines_error(command: str) -> None:
    with pytest.raises(GeUsageError, match='^ERROR! invalid option argument "-no_such_option"$'):
        parse(["-no_such_option"], table(command), Operands.NONE)


def test_an_optional_value_is_taken_only_when_the_next_word_is_not_an_option() -> None:
    options = table("qstat")
    assert [(g.key, g.value) for g in parse(["-j", "12", "-xml"], options, Operands.NONE).given] == [
        ("j", "12"), ("xml", None)]
    assert [(g.key, g.value) for g in parse(["-j", "-xml"], options, Operands.NONE).given] == [
        ("j", None), ("xml", None)]


@pytest.mark.parametrize("command", sorted(GRIDENGINE_COMMANDS))
def test_the_table_holds_nothing_the_man_page_lacks_but_drovers_own_options(command: str) -> None:
    page = man_pages()[command]
    for option in table(command):
        listed = [name for name in option.names if name in page]
        if option.drover_own:
            assert not listed, f"{command} {option.names}: the man page has it, so it is not Drover's own"
        else:
            assert listed == list(option.names), f"{command} {option.names}: not in the man page, nor Drover's own"


REFUSED = [(command, option) for command in sorted(GRIDENGINE_COMMANDS) for option in table(command)
           if option.mark is Mark.REFUSED]
VALUES = {Arity.NONE: [], Arity.REQUIRED: ["x"], Arity.TWO: ["smp", "2"], Arity.OPTIONAL: []}


def nothing_may_run(*args: object, **kwargs: object) -> None:
    raise AssertionError("a refused option reached the cluster")


@pytest.fixture
def refusing_only(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> pathlib.Path:
    """No cluster to reach (reaching it fails the test), no sge_request file to read, a script."""
    monkeypatch.setattr("drover.client.client.Client", nothing_may_run)
    monkeypatch.setattr("drover.cli.cluster.ensure_running", nothing_may_run)
    monkeypatch.setattr("drover.cli.main.main", nothing_may_run)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SGE_ROOT", raising=False)
    monkeypatch.delenv("DROVER_COMPAT_STRICT", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.sh").write_text("#!/bin/sh\ntrue\n")
    return tmp_path


@pytest.mark.parametrize(("command", "option"), REFUSED, ids=[f"{c}{o.names[0]}" for c, o in REFUSED])
def test_every_refused_option_is_refused_with_the_reason(command: str, option: Option, refusing_only: pathlib.Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    module, function = GRIDENGINE_COMMANDS[command]
    main = getattr(importlib.import_module(module), function)
    # After the option, what the command acts on: a script for qsub, a command for qrsh, a job.
    target = {"qsub": "job.sh", "qrsh": "true"}.get(command, "12")
    assert main([option.names[0], *VALUES[option.arity], target]) != 0
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"{command}: ") and option.names[0] in [word.rstrip(":") for word in line.split()]
    assert option.note in line, "the message gives the table's reason"
