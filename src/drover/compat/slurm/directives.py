"""#SBATCH directives, read as sbatch reads them (src/sbatch/opt.c, _opt_batch_script and
get_argument): lines that begin with `#SBATCH` (or the old `#SLURM`), up to the first line that
is a command; words split at blanks, quoted with '' or "", `\\` escaping the next character, an
unquoted `#` ending the line. Pure: returns the words, each with its line number; parsing them is
the option table's job, as on Slurm, where they are one argument list."""

from __future__ import annotations

from dataclasses import dataclass, field


class DirectiveError(Exception):
    """A directive sbatch refuses; `fatal` ones are those sbatch reports with fatal()."""

    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


@dataclass
class Directives:
    words: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # the line of each word
    old_prefix: bool = False  # a `#SLURM` line was seen (sbatch says to change it)

    def line_of(self, word_index: int) -> int:
        return self.lines[word_index] if word_index < len(self.lines) else 0


def sbatch_directives(script: str, file: str = "stdin", prefix: str = "#SBATCH") -> Directives:
    found = Directives()
    for number, line in enumerate(script.split("\n"), start=1):
        if line.startswith(prefix):
            rest = line[len(prefix):]
        elif prefix == "#SBATCH" and line.startswith("#SLURM"):
            rest = line[len("#SLURM"):]
            found.old_prefix = True
        else:
            stripped = line.lstrip()
            if stripped and not stripped.startswith("#"):
                break  # the first command ends the directives
            continue
        first = rest.lstrip().split(None, 1)[0].lower() if rest.strip() else ""
        if first in ("hetjob", "packjob"):
            raise DirectiveError(f"{file}: line {number}: heterogeneous jobs ({first}) are not supported by Drover")
        for word in _arguments(rest, file, number, line):
            found.words.append(word)
            found.lines.append(number)
    return found


def _arguments(text: str, file: str, number: int, line: str) -> list[str]:
    """get_argument, applied until the line is used up."""
    words: list[str] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return words
        if text[i] == ":":
            raise DirectiveError(f"{file}: line {number}: Unexpected `:` in [{line}]", fatal=True)
        word: list[str] = []
        quote = ""
        while i < n and (quote or not text[i].isspace()):
            char = text[i]
            if char == "\\":
                i += 1
                if i < n:
                    word.append(text[i])  # the escaped character, whatever it is
                    i += 1
                continue
            if quote:
                if char == quote:
                    quote = ""
                else:
                    word.append(char)
                i += 1
                continue
            if char in "\"'":
                quote = char
                i += 1
                continue
            if char == "#":
                i = n  # an unquoted # starts a comment
                break
            word.append(char)
            i += 1
        if quote:
            raise DirectiveError(f"{file}: line {number}: Unmatched `{quote}` in [{line}]", fatal=True)
        if not word:
            return words  # as get_argument: an empty word ('' or a lone #) ends the line
        words.append("".join(word))

