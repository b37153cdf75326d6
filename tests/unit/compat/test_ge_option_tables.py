"""Every Grid Engine front end parses every option of its man page, with the man page's arity,
from the table docs/compat.md is generated from; an unknown option gets Grid Engine's error."""

from __future__ import annotations

import importlib
import pathlib

import pytest

from drover.cli.commands.compat import GRIDENGINE_COMMANDS
from drover.compat.gridengine.syntax import GeUsageError, Operands, parse
from drover.compat.optiontable import Arity, Mark, Option

MANPAGES = pathlib.Path(__file__).resolve().parents[2] / "data" / "manpages" / "gridengine.txt"
ARITY = {"0": Arity.NONE, "1": Arity.REQUIRED, "2": Arity.TWO, "?": Arity.OPTIONAL}


def man_pages() -> dict[str, dict[str, Arity]]:
    pages = {}
    for line in MANPAGES.read_text().splitlines():
        if line and not line.startswith("#"):
            command, _, words = line.partition(": ")
            items = words.split()
            pages[command] = {name: ARITY[arity] for name, arity in zip(items[::2], items[1::2], strict=True)}
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


@pytest.mark.parametrize("command", ["qconf", "qmod", "qalter"])
def test_refused_options_are_refused_with_the_reason(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    module, function = GRIDENGINE_COMMANDS[command]
    main = getattr(importlib.import_module(module), function)
    refused = next(o for o in table(command) if o.mark is Mark.REFUSED and o.arity is not Arity.TWO)
    argv = [refused.names[0], *(["x"] if refused.arity is Arity.REQUIRED else []), "12"]
    assert main(argv) == 1
    assert capsys.readouterr().err == f"{command}: {refused.names[0]}: {refused.note}\n"
