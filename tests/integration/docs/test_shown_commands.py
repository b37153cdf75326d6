"""The `drover` command lines the docs show in ```sh blocks (those that need root, two hosts or a
real Slurm, and so are not run: examples.py) are parsed by the very parser the command would
use, so that none names an option, a subcommand or a value the command no longer takes. The
command stops once its arguments are parsed: nothing of it runs. Likewise the `#DROVER` lines of
the job scripts the docs show are parsed as `drover submit` parses them, a second time, before
the command line's options, and their values checked as it checks them."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.docs.examples import fenced_blocks, shown_commands

from drover.cli.main import COMMANDS
from drover.core.errors import DroverError

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_ARGPARSE = {"task"}  # `drover task` reads its words itself, and only inside a parallel job


class _Parsed(Exception):
    pass


@contextlib.contextmanager
def parsing_only() -> Iterator[None]:
    """argparse parses for real (an error exits 2, saying why), then stops the command."""
    original = argparse.ArgumentParser.parse_args

    def parse(self: argparse.ArgumentParser, args: object = None, namespace: object = None) -> object:
        original(self, args, namespace)  # type: ignore[call-overload]
        raise _Parsed

    argparse.ArgumentParser.parse_args = parse  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_args = original  # type: ignore[method-assign]


def refusal(words: list[str]) -> str | None:
    """Why `drover` would refuse these words before running anything; None if it takes them."""
    if words[1:] in (["--version"], ["--help"]):
        return None
    name = words[1] if len(words) > 1 else ""
    if name not in COMMANDS:
        return f"no command {name!r}"
    module = importlib.import_module(f"drover.cli.commands.{COMMANDS[name][0]}")
    said = io.StringIO()
    with parsing_only(), contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
        try:
            module.run(name, words[2:])
        except _Parsed:
            return None
        except SystemExit as exit:
            return f"exit {exit.code}: {said.getvalue().strip()}"
        except DroverError as error:
            return str(error)
    return "the command ran without parsing its arguments with argparse"


SHOWN = [(page, line, words) for page in PAGES for line, words in shown_commands(page, "drover")
         if len(words) < 2 or words[1] not in NOT_ARGPARSE]


def test_the_docs_show_drover_command_lines() -> None:
    assert len(SHOWN) > 30 and {page.name for page, _, _ in SHOWN} >= {"many-hosts.md", "operations.md"}


@pytest.mark.parametrize("page,line,words", SHOWN, ids=[f"{page.name}:{line}" for page, line, _ in SHOWN])
def test_each_shown_drover_command_line_parses(page: Path, line: int, words: list[str]) -> None:
    why = refusal(words)
    assert why is None, f"{page.relative_to(ROOT)}:{line}: {' '.join(words)}: {why}"


def test_a_line_with_an_option_that_is_not_there_is_caught() -> None:
    assert refusal(["drover", "submit", "--no-such-option", "--", "true"]) is not None
    assert refusal(["drover", "queue", "set"]) is not None
    assert refusal(["drover", "nonsense"]) is not None
    assert refusal(["drover", "submit", "--array", "1-3", "--", "true"]) is None


def shown_scripts(page: Path) -> list[tuple[int, str]]:
    """The job scripts a page shows with `#DROVER` lines: each fenced block that has some (a
    console block's here-document without its `> ` prompts), from its first line to its end; and
    each `#DROVER ...` in a span of code, as a script of that one line. Each with its line."""
    import re

    found: list[tuple[int, str]] = []
    for info in ("", "sh", "bash", "console"):
        for start, body in fenced_blocks(page, info):
            lines = [line[2:] if info == "console" and line.startswith("> ") else line for line in body]
            first = next((index for index, line in enumerate(lines) if line.lstrip().startswith("#DROVER")), None)
            if first is not None:
                top = max((index for index in range(first) if lines[index].startswith("#!")), default=first)
                found.append((start + 1 + top, "\n".join(lines[top:]) + "\n"))
    for number, text in enumerate(page.read_text().splitlines(), start=1):
        found += [(number, span + "\n") for span in re.findall(r"`(#DROVER\s[^`]*)`", text)]
    return sorted(found)


def directive_refusal(script: str) -> str | None:
    """Why `drover submit job.sh` would refuse the script's `#DROVER` lines (submit's second
    parse: each line alone, then all of them before the command line's words) or the values
    they give; None if it takes them. Nothing is sent."""
    from drover.cli.commands import submit

    parser = submit.build_parser("submit")
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        try:
            args = submit._with_directives(parser, parser.parse_args(["job.sh"]), ["job.sh"], script)
            submit.jobs_from_arguments(args, [], script)
        except SystemExit as exit:
            return f"exit {exit.code}: {said.getvalue().strip()}"
        except DroverError as error:
            return str(error)
    return None


SCRIPTS = [(page, line, script) for page in PAGES for line, script in shown_scripts(page)]


def test_the_docs_show_scripts_with_drover_directives() -> None:
    assert len(SCRIPTS) >= 3 and {page.name for page, _, _ in SCRIPTS} >= {"methods.md", "getting-started.md"}


@pytest.mark.parametrize("page,line,script", SCRIPTS, ids=[f"{page.name}:{line}" for page, line, _ in SCRIPTS])
def test_each_shown_scripts_drover_directives_parse(page: Path, line: int, script: str) -> None:
    why = directive_refusal(script)
    assert why is None, f"{page.relative_to(ROOT)}:{line}: {why}\n{script}"
