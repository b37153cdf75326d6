"""The shell examples of README.md and docs/*.md: found, run and compared as a reader would.

A fenced block opened with ```console is an example that runs. In it, a line starting `$ ` is a
command; lines starting `> ` right after it continue it (a here-document, a long command); the
lines up to the next `$ ` are what the command prints, stdout and stderr together. In that
expected output:

- a line that is `...` alone stands for any number of lines, none included;
- `<id>` stands for a job or task id (`12`, `12.3`, `12_3`), `<n>` for any number, `<time>` for
  one word of a date, time or duration, `<user>` for a user's name, and `<...>` for any text within the line;
- runs of spaces count as one space, and trailing blank lines are ignored, so that a table
  whose columns widen with an id still matches.

A command must exit with status 0; an example that shows a failing status says so itself
(`drover wait 4 || echo "exit status $?"`). Every block of a file runs, in the file's order, in
one working directory and against one fresh personal cluster (its state directory alone): ids
count from 1 on each page, and a page starts its cluster with `drover up` as a reader does. Each
block runs in a bash of its own, so shell variables do not carry from one block to the next.

Blocks fenced ```sh (or ```bash, ```toml ...) are shown and never run: those that need two
machines, root, or a real Slurm or Grid Engine. The `drover` command lines in ```sh blocks are
parsed all the same, by the parser the command would use, so that none names an option or a
subcommand that is not there (test_shown_commands.py).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>[^`\s]*)\s*$")
PLACEHOLDERS = {
    "<id>": r"[0-9]+(?:[._][0-9]+)*",
    "<n>": r"-?[0-9]+(?:\.[0-9]+)?",
    "<time>": r"\S+",
    "<user>": r"\S+",
    "<...>": r".*?",
}
PLACEHOLDER = re.compile("|".join(re.escape(token) for token in PLACEHOLDERS))
ANY_LINES = "..."


@dataclass
class Command:
    """One `$ ` line (and its `> ` continuations) and the output it is expected to print."""

    line: int  # in the file, 1-based, of the `$ `
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence
    commands: list[Command]

    def where(self) -> str:
        return f"{self.path}:{self.line}"


class MalformedBlock(ValueError):
    pass


def fenced_blocks(path: Path, info: str) -> list[tuple[int, list[str]]]:
    """Every block of a Markdown file fenced ```INFO, in order: its opening fence's line (1-based)
    and its lines, unindented."""
    lines = path.read_text().splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, kind = len(opening["indent"]), opening["info"]
        body_start = index + 1
        index += 1
        while index < len(lines) and not _closes(lines[index]):
            index += 1
        if kind == info:
            blocks.append((body_start, [text[indent:] if text[:indent].isspace() else text.lstrip()
                                        for text in lines[body_start:index]]))
        index += 1
    return blocks


def console_blocks(path: Path) -> list[Block]:
    """Every ```console block of a Markdown file, in order, with its commands parsed."""
    return [Block(path, start, parse_console(path, start + 1, body)) for start, body in fenced_blocks(path, "console")]


def shown_commands(path: Path, program: str) -> list[tuple[int, list[str]]]:
    """The command lines of `program` in a file's ```sh blocks (shown, not run): each one's line
    and its words, as the shell would pass them (continued lines joined, `#` comments, pipes,
    `&&`, `;` and redirections cut off; a variable stays as it is written)."""
    import shlex

    found = []
    for start, body in fenced_blocks(path, "sh"):
        number, joined = start + 1, ""
        for offset, text in enumerate(body):
            if not joined:
                number = start + 1 + offset
            if text.rstrip().endswith("\\"):
                joined += text.rstrip()[:-1] + " "
                continue
            joined += text
            try:
                words = shlex.split(joined, comments=True, posix=True)
            except ValueError:
                words = []
            joined = ""
            command: list[str] = []
            for word in words + [";"]:
                if word in ("|", "||", "&&", ";", "&") or word.startswith((">", "<", "2>")):
                    if command and command[0] == program:
                        found.append((number, command))
                    command = [] if word in ("|", "||", "&&", ";", "&") else ["<redirected>"]
                elif command != ["<redirected>"]:
                    command.append(word)
    return found


def _closes(line: str) -> bool:
    fence = FENCE.match(line)
    return fence is not None and not fence["info"]


def parse_console(path: Path, first_line: int, body: list[str]) -> list[Command]:
    commands: list[Command] = []
    continuing = False
    for offset, text in enumerate(body):
        number = first_line + offset
        if text.startswith("$ ") or text == "$":
            commands.append(Command(number, text[2:]))
            continuing = True
        elif continuing and (text.startswith("> ") or text == ">"):
            commands[-1].text += "\n" + text[2:]
        elif not commands:
            raise MalformedBlock(f"{path}:{number}: a console block must start with a `$ ` command line: {text!r}")
        else:
            continuing = False
            commands[-1].expected.append(text)
    return commands


def _normal(text: str) -> str:
    return " ".join(text.split())


def _line_pattern(expected: str) -> re.Pattern[str]:
    parts, last = [], 0
    normal = _normal(expected)
    for found in PLACEHOLDER.finditer(normal):
        parts.append(re.escape(normal[last:found.start()]))
        parts.append(PLACEHOLDERS[found.group()])
        last = found.end()
    parts.append(re.escape(normal[last:]))
    return re.compile("".join(parts))


def _trimmed(lines: list[str]) -> list[str]:
    lines = list(lines)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether the actual lines are what the expected ones describe (the conventions above)."""
    wanted = _trimmed(expected)
    got = [_normal(text) for text in _trimmed(actual)]
    patterns = [None if text.strip() == ANY_LINES else _line_pattern(text) for text in wanted]
    # reachable[j]: the first i patterns can account for the first j lines.
    reachable = [True] + [False] * len(got)
    for pattern in patterns:
        following = [False] * (len(got) + 1)
        for j in range(len(got) + 1):
            if pattern is None:
                following[j] = reachable[j] or (j > 0 and following[j - 1])
            elif j > 0 and reachable[j - 1] and pattern.fullmatch(got[j - 1]):
                following[j] = True
        reachable = following
    return reachable[len(got)]


def difference(command: Command, block: Block, actual: list[str], status: int) -> str:
    """A failed command's report: the file and line, the command, and a diff of the output."""
    header = f"{block.path}:{command.line} (block at line {block.line}): $ {command.text}"
    if status != 0:
        header += f"\n  exited with status {status} (an example must exit 0, or show its status itself)"
    diff = difflib.unified_diff(_trimmed(command.expected), _trimmed(actual),
                                "expected (in the docs)", "actual", lineterm="", n=2)
    return header + "\n" + "\n".join("  " + text for text in diff)
