"""Regenerate the man pages and the shell completion scripts from the commands' own parsers.

    python scripts/cli_files.py          # rewrite src/drover/data/man and data/completion
    python scripts/cli_files.py --check  # exit 1 if any of them is out of date

They are checked in, not written at build time: a wheel or sdist is then built by any PEP 517
front end without running Drover, and tests/unit/cli/test_cli_files.py fails when a parser
changed and they were not regenerated.

Each `drover` command builds its parser inside its `run` (so `drover --help` imports nothing
more); this script takes the parser at the moment the command would parse, by making argparse
raise it instead of parsing, and so describes exactly what the command accepts. The front
ends (sbatch, qsub, ...) parse from option tables (drover.compat.optiontable): their pages are
made from those tables. Completion scripts are made by shtab from one argparse tree of every
`drover` command.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import pathlib
import re
import sys
from dataclasses import dataclass, field

from drover import __version__
from drover.cli.commands.compat import COMMANDS as FRONT_ENDS
from drover.cli.commands.compat import PBS_COMMANDS
from drover.cli.main import COMMANDS
from drover.compat.optiontable import Arity, Mark, Option

DATA = pathlib.Path(__file__).resolve().parent.parent / "src" / "drover" / "data"
MAN_DIR = DATA / "man" / "man1"
# PBS's qsub, qstat... share Grid Engine's names: their pages go where `drover compat install
# --flavor pbs` takes them from, not beside drover(1).
PBS_MAN_DIR = DATA / "man" / "pbs" / "man1"
COMPLETION_DIR = DATA / "completion"
COMPLETION_FILES = {"bash": "drover", "zsh": "_drover", "fish": "drover.fish"}

# Commands whose parser is built only after a first look at the words (argv that reaches it).
SAMPLE_ARGV = {"run": ["--", "true"]}
# Commands with subcommands of their own, each with a parser of its own.
QUEUE_SUBCOMMANDS = ("list", "show", "create", "set", "stop", "start", "drain", "suspend", "unsuspend", "delete")


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


@contextlib.contextmanager
def _capturing() -> object:
    """argparse raises the parser it was asked to parse with, instead of parsing."""
    def capture(self: argparse.ArgumentParser, args: object = None, namespace: object = None) -> object:
        raise _Captured(self)

    original = argparse.ArgumentParser.parse_known_args
    argparse.ArgumentParser.parse_known_args = capture  # type: ignore[method-assign,assignment]
    try:
        yield None
    finally:
        argparse.ArgumentParser.parse_known_args = original  # type: ignore[method-assign]


def command_parser(name: str, argv: list[str] | None = None) -> argparse.ArgumentParser:
    module = importlib.import_module(f"drover.cli.commands.{COMMANDS[name][0]}")
    words = SAMPLE_ARGV.get(name, []) if argv is None else argv
    with _capturing(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            module.run(name, list(words))
        except _Captured as captured:
            return captured.parser
    raise RuntimeError(f"drover {name} {' '.join(words)} parsed no arguments with argparse")


@dataclass
class Page:
    """One `drover` command's man page: its parser, or its subcommands' parsers."""

    name: str
    summary: str
    parser: argparse.ArgumentParser | None = None
    subcommands: dict[str, argparse.ArgumentParser] = field(default_factory=dict)
    usage: str = ""  # a command without an argparse parser (drover task)


def pages() -> list[Page]:
    out = []
    for name, (module, summary) in COMMANDS.items():
        if name == "queue":
            subs = {sub: command_parser(name, [sub]) for sub in QUEUE_SUBCOMMANDS}
            out.append(Page(name, summary, subcommands=subs))
        elif name == "task":
            usage = importlib.import_module(f"drover.cli.commands.{module}").USAGE
            out.append(Page(name, summary, usage=usage.removeprefix("usage: ")))
        else:
            out.append(Page(name, summary, parser=command_parser(name)))
    return out


# -- man pages (roff, man(7) macros) -------------------------------------------------------------

def roff(text: str) -> str:
    """Text as roff reads it literally: backslashes escaped, no line starting a request."""
    text = text.replace("\\", "\\e")
    text = "".join(c if c.isascii() else f"\\[u{ord(c):04X}]" for c in text)  # groff reads ASCII alone
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in text.splitlines())


def bold_option(name: str) -> str:
    return "\\fB" + name.replace("-", "\\-") + "\\fR"


def _metavar(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        value = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    elif action.choices is not None:
        value = "{" + ",".join(map(str, action.choices)) + "}"
    else:
        value = action.dest.upper() if action.option_strings else action.dest
    if action.nargs == "?":
        return f"[{value}]"
    if action.nargs == "*":
        return f"[{value} ...]"
    if action.nargs == "+":
        return f"{value} [{value} ...]"
    if action.nargs == argparse.REMAINDER:
        return "..."
    if isinstance(action.nargs, int) and action.nargs > 1:
        return " ".join([value] * action.nargs)
    return value


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%" in text:
        params = {**vars(action), "prog": prog}
        if params.get("choices") is not None:
            params["choices"] = ", ".join(map(str, params["choices"]))
        text = text % params
    return text


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS]


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings and a.help != argparse.SUPPRESS]


def synopsis(parser: argparse.ArgumentParser) -> str:
    words = ["\\fB" + parser.prog + "\\fR"]
    if _options(parser):
        words.append("[\\fIOPTIONS\\fR]")
    for action in _positionals(parser):
        if isinstance(action, argparse._SubParsersAction):
            words.append("\\fI" + (action.metavar or "ACTION") + "\\fR ...")
        else:
            words.append("\\fI" + roff(_metavar(action)) + "\\fR")
    return " ".join(words)


def describe_parser(parser: argparse.ArgumentParser, heading: str = ".SH") -> list[str]:
    lines: list[str] = []
    positionals = [a for a in _positionals(parser) if not isinstance(a, argparse._SubParsersAction)]
    if positionals:
        lines.append(f"{heading} ARGUMENTS" if heading == ".SH" else ".PP\nArguments:")
        for action in positionals:
            lines += [".TP", "\\fI" + roff(_metavar(action)) + "\\fR", roff(_help(action, parser.prog) or "")]
    options = _options(parser)
    if options:
        lines.append(f"{heading} OPTIONS" if heading == ".SH" else ".PP\nOptions:")
        for action in options:
            names = ", ".join(bold_option(name) for name in action.option_strings)
            metavar = _metavar(action)
            lines += [".TP", names + (" \\fI" + roff(metavar) + "\\fR" if metavar else ""),
                      roff(_help(action, parser.prog))]
    return lines


def header(name: str, summary: str) -> list[str]:
    escaped = name.replace("-", "\\-")
    return [f'.TH {escaped.upper()} 1 "" "drover {__version__}" "Drover Manual"',
            ".SH NAME", f"{escaped} \\- {roff(summary)}"]


def command_page(page: Page) -> str:
    lines = header(f"drover-{page.name}", page.summary)
    lines.append(".SH SYNOPSIS")
    if page.parser is not None:
        lines.append(synopsis(page.parser))
        if page.parser.description:
            lines += [".SH DESCRIPTION", roff(page.parser.description)]
        lines += describe_parser(page.parser)
        for action in page.parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                lines.append(".SH SUBCOMMANDS")
                for sub, subparser in action.choices.items():
                    lines += [f".SS {roff(sub)}", synopsis(subparser)]
                    if subparser.description:
                        lines += [".PP", roff(subparser.description)]
                    lines += describe_parser(subparser, heading=".SS")
    elif page.subcommands:
        lines.append("\\fBdrover " + page.name + "\\fR \\fISUBCOMMAND\\fR [\\fIARGS\\fR]")
        lines += [".SH DESCRIPTION", roff(page.summary[:1].upper() + page.summary[1:] + ".")]
        lines.append(".SH SUBCOMMANDS")
        for sub, subparser in page.subcommands.items():
            lines += [f".SS {roff(sub)}", synopsis(subparser)]
            if subparser.description:
                lines += [".PP", roff(subparser.description)]
            lines += describe_parser(subparser, heading=".SS")
    else:
        lines += [roff(page.usage), ".SH DESCRIPTION",
                  roff(_first_paragraph(importlib.import_module(f"drover.cli.commands.{page.name}").__doc__))]
    lines += [".SH SEE ALSO", "\\fBdrover\\fR(1)"]
    return "\n".join(lines) + "\n"


def main_page(all_pages: list[Page]) -> str:
    lines = header("drover", "a batch job scheduler for Linux")
    lines += [".SH SYNOPSIS", "\\fBdrover\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR]", ".br",
              "\\fBdrover\\fR \\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR",
              ".SH DESCRIPTION",
              "Drover queues shell jobs, finds a machine with room, and runs each one under a shepherd "
              "that sets it up, runs it, forwards signals, enforces its limits, measures what it used and "
              "records the outcome durably. It works on one machine with no configuration, and the same "
              "code runs a cluster of many hosts. A personal cluster starts on the first "
              "\\fBdrover submit\\fR, or with \\fBdrover up\\fR.",
              ".PP", "Every command that prints takes \\fB\\-\\-json\\fR for programs, and "
              "\\fBdrover\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR lists its options.",
              ".SH COMMANDS"]
    for page in all_pages:
        lines += [".TP", f"\\fBdrover\\-{page.name}\\fR(1)", roff(page.summary)]
    lines += [".SH ENVIRONMENT",
              ".TP", "\\fBDROVER_SOCKET\\fR", "the API socket of the cluster to talk to (no cluster is started then)",
              ".TP", "\\fBDROVER_STATE_DIR\\fR",
              "where a personal cluster keeps its state (default: $XDG_STATE_HOME/drover, "
              "~/.local/state/drover)",
              ".SH FRONT ENDS",
              "Slurm's, Grid Engine's and HTCondor's commands, backed by Drover: "
              + ", ".join(f"\\fB{name}\\fR(1)" for name in FRONT_ENDS) + "."]
    return "\n".join(lines) + "\n"


_MARKS = {Mark.SUPPORTED: "Supported.", Mark.APPROXIMATED: "Honoured in part, with a warning (refused under "
          "\\-\\-strict).", Mark.MEANINGLESS: "Accepted; changes nothing on Drover.",
          Mark.REFUSED: "Refused with an error; nothing is done."}


def _first_paragraph(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


# drover.compat.<package> → the batch system whose command it stands in for.
BATCH_SYSTEMS = {"slurm": "Slurm", "gridengine": "Grid Engine", "pbs": "PBS Pro or Torque",
                 "htcondor": "HTCondor", "lsf": "LSF"}


def front_end_page(name: str, module_name: str) -> str:
    module = importlib.import_module(module_name)
    # The module's first paragraph, less where in the real command's sources it comes from.
    summary = re.sub(r" ?\([^()]*\.(c|py)\b[^()]*\)", "", _first_paragraph(module.__doc__).split(": ", 1)[-1])
    options: list[Option] = list(getattr(module, "OPTIONS", []))
    lines = header(name, summary.split(". ")[0].rstrip("."))
    lines += [".SH SYNOPSIS", f"\\fB{name}\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]",
              ".SH DESCRIPTION", roff(summary),
              ".PP", f"This \\fB{name}\\fR is Drover's: it talks to a Drover cluster, not to "
              + BATCH_SYSTEMS[module_name.split(".")[2]] + ". Each option below is marked "
              "with what Drover does with it.",
              ".SH OPTIONS"]
    for option in options:
        spelled = ", ".join(bold_option(n) for n in option.names)
        value = option.metavar or ("VALUE" if option.arity in (Arity.REQUIRED, Arity.TWO) else "")
        if value and option.arity is Arity.OPTIONAL:
            value = f"[{value}]"
        lines += [".TP", spelled + (" \\fI" + roff(value) + "\\fR" if value else ""),
                  _MARKS[option.mark] + (" " + roff(option.note) if option.note else "")]
    lines += [".SH SEE ALSO", "\\fBdrover\\fR(1), \\fBdrover\\-compat\\fR(1)"]
    return "\n".join(lines) + "\n"


def man_pages() -> dict[str, str]:
    all_pages = pages()
    out = {"drover.1": main_page(all_pages)}
    out.update({f"drover-{page.name}.1": command_page(page) for page in all_pages})
    out.update({f"{name}.1": front_end_page(name, module) for name, (module, _) in FRONT_ENDS.items()})
    return out


# -- completion ----------------------------------------------------------------------------------

_PATHS = ("FILE", "DIR", "DIRECTORY", "PATH", "SCRIPT")


# Job ids, from `drover status` (the first column of its table): asked only when a word that
# names a job is completed, and never starts a cluster (status only asks the one that runs).
JOB_IDS = {"bash": "_drover_job_ids", "zsh": "_drover_job_ids"}
JOB_IDS_PREAMBLE = {
    "bash": '_drover_job_ids() {\n'
            '  compgen -W "$(command drover status 2>/dev/null | awk \'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}\')" -- "$1"\n'
            '}\n',
    "zsh": '_drover_job_ids() {\n'
           '  local -a ids\n'
           '  ids=(${(f)"$(command drover status 2>/dev/null | awk \'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}\')"})\n'
           '  compadd -a ids\n'
           '}\n',
}
FISH_JOB_IDS = "(command drover status 2>/dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}')"


def _mark_paths(parser: argparse.ArgumentParser) -> None:
    """Options and arguments that name a file or a directory complete as paths, those that name
    a job as the cluster's job ids."""
    import shtab

    for action in parser._actions:
        words = f"{action.metavar or ''} {action.dest}".upper()
        if action.metavar == "JOB":
            action.complete = JOB_IDS  # type: ignore[attr-defined]
        elif any(word in words.split() or words.startswith(word) for word in _PATHS) and action.choices is None:
            kind = shtab.DIRECTORY if "DIR" in words else shtab.FILE
            action.complete = kind  # type: ignore[attr-defined]


def completion_tree() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="drover", add_help=False)
    root.add_argument("-h", "--help", action="store_true", help="list the commands")
    root.add_argument("--version", action="store_true", help="print Drover's version")
    commands = root.add_subparsers(dest="command", metavar="COMMAND")
    for page in pages():
        if page.parser is not None:
            _mark_paths(page.parser)
            commands._name_parser_map[page.name] = page.parser
            commands._choices_actions.append(argparse.Action([], dest=page.name, help=page.summary, metavar=page.name))
            for action in page.parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    for subparser in action.choices.values():
                        _mark_paths(subparser)
        else:
            sub = commands.add_parser(page.name, help=page.summary)
            if page.subcommands:
                subs = sub.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
                for name, subparser in page.subcommands.items():
                    _mark_paths(subparser)
                    subs._name_parser_map[name] = subparser
                    subs._choices_actions.append(argparse.Action([], dest=name, help=subparser.description,
                                                                 metavar=name))
            else:
                sub.add_argument("action", choices=["start"])
    return root


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_options(parser: argparse.ArgumentParser, condition: str) -> list[str]:
    lines = []
    for action in _options(parser):
        words = [f"complete -c drover -n {_fish_quote(condition)}"]
        for name in action.option_strings:
            words.append(f"-l {name[2:]}" if name.startswith("--") else f"-s {name[1:]}")
        if action.nargs != 0:
            words.append("-r")
            kind = getattr(action, "complete", None)
            if action.choices is not None:
                words.append("-f -a " + _fish_quote(" ".join(map(str, action.choices))))
            elif kind is JOB_IDS:
                words.append("-f -a " + _fish_quote(FISH_JOB_IDS))
            elif kind is None:
                words.append("-f")
        if action.help:
            words.append("-d " + _fish_quote(_help(action, parser.prog).split(";")[0][:80]))
        lines.append(" ".join(words))
    return lines


def fish(tree: argparse.ArgumentParser) -> str:
    """fish's completions (shtab has none): commands, then each command's options and choices."""
    lines = ["# drover's completions for fish: generated by scripts/cli_files.py from the commands' parsers.",
             "complete -c drover -f"]
    commands = next(a for a in tree._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {a.dest: a.help or "" for a in commands._choices_actions}
    top = "__fish_use_subcommand"
    lines += _fish_options(tree, top)
    for name in commands.choices:
        lines.append(f"complete -c drover -n {top} -a {name} -d {_fish_quote(summaries.get(name, '')[:80])}")
    for name, parser in commands.choices.items():
        seen = f"__fish_seen_subcommand_from {name}"
        lines += _fish_options(parser, seen)
        for action in _positionals(parser):
            if isinstance(action, argparse._SubParsersAction):
                subs = " ".join(action.choices)
                lines.append(f"complete -c drover -n {_fish_quote(seen + '; and not __fish_seen_subcommand_from ' + subs)}"
                             f" -a {_fish_quote(subs)}")
                for sub, subparser in action.choices.items():
                    lines += _fish_options(subparser, f"{seen}; and __fish_seen_subcommand_from {sub}")
            elif action.choices is not None:
                lines.append(f"complete -c drover -n {_fish_quote(seen)} -a {_fish_quote(' '.join(map(str, action.choices)))}")
            elif getattr(action, "complete", None) is JOB_IDS:
                lines.append(f"complete -c drover -n {_fish_quote(seen)} -a {_fish_quote(FISH_JOB_IDS)}")
            elif getattr(action, "complete", None) is not None:
                lines.append(f"complete -c drover -n {_fish_quote(seen)} -F")
    return "\n".join(lines) + "\n"


def completions() -> dict[str, str]:
    import shtab

    tree = completion_tree()
    out = {file: shtab.complete(tree, shell=shell, preamble=JOB_IDS_PREAMBLE[shell])
           for shell, file in COMPLETION_FILES.items() if shell != "fish"}
    out[COMPLETION_FILES["fish"]] = fish(tree)
    options = front_end_options()
    out[FRONT_END_FILES["bash"]] = front_ends_bash(options)
    out[FRONT_END_FILES["zsh"]] = front_ends_zsh(options)
    out[FRONT_END_FILES["fish"]] = front_ends_fish(options)
    return out


# -- the front ends' completion -------------------------------------------------------------------
# Apart from drover's, and loaded only by those who use the front ends in place of the real
# commands (`drover completion SHELL --front-ends`): it would shadow Slurm's or Grid Engine's own.

FRONT_END_FILES = {"bash": "front-ends.bash", "zsh": "_drover_front_ends", "fish": "front-ends.fish"}
# The commands whose words are jobs: they complete as the cluster's job ids, the others as files.
JOB_WORDS = frozenset({"scancel", "sstat", "qdel", "qhold", "qrls", "qalter"})


def front_end_options() -> dict[str, list[str]]:
    """Each front end → the option names its table accepts, as a user types them."""
    out = {}
    for name, (module_name, _) in FRONT_ENDS.items():
        options: list[Option] = list(getattr(importlib.import_module(module_name), "OPTIONS", []))
        out[name] = sorted({spelled for option in options for spelled in option.names if spelled.startswith("-")})
    return out


def front_ends_bash(options: dict[str, list[str]]) -> str:
    lines = ["# The completion of Drover's front ends (sbatch, qsub, ...) for bash: generated by",
             "# scripts/cli_files.py from their option tables. Load it where they stand in for the real ones.",
             JOB_IDS_PREAMBLE["bash"].rstrip("\n"),
             "_drover_front_end() {",
             '  local word="${COMP_WORDS[COMP_CWORD]}" options=""',
             '  case "${1##*/}" in']
    lines += [f'    {name}) options="{" ".join(names)}" ;;' for name, names in options.items()]
    lines += ["  esac",
              '  if [[ "$word" == -* ]]; then',
              '    COMPREPLY=($(compgen -W "$options" -- "$word"))',
              '  elif [[ "${1##*/}" =~ ^(' + "|".join(sorted(JOB_WORDS)) + ')$ ]]; then',
              '    COMPREPLY=($(_drover_job_ids "$word"))',
              "  else",
              '    COMPREPLY=($(compgen -f -- "$word"))',
              "  fi",
              "}",
              "complete -F _drover_front_end " + " ".join(options)]
    return "\n".join(lines) + "\n"


def front_ends_zsh(options: dict[str, list[str]]) -> str:
    """zsh runs bash's completion functions through its bashcompinit."""
    return ("#compdef " + " ".join(options) + "\n"
            "# The completion of Drover's front ends for zsh: bash's (scripts/cli_files.py), through bashcompinit.\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + front_ends_bash(options))


def front_ends_fish(options: dict[str, list[str]]) -> str:
    lines = ["# The completion of Drover's front ends (sbatch, qsub, ...) for fish: generated by",
             "# scripts/cli_files.py from their option tables. Load it where they stand in for the real ones."]
    for name, names in options.items():
        for spelled in names:
            if spelled.startswith("--"):
                lines.append(f"complete -c {name} -l {spelled[2:]}")
            elif len(spelled) == 2:
                lines.append(f"complete -c {name} -s {spelled[1:]}")
            else:  # Grid Engine's one-dash words: -hold_jid, -pe
                lines.append(f"complete -c {name} -o {spelled[1:]}")
        if name in JOB_WORDS:
            lines.append(f"complete -c {name} -f -a {_fish_quote(FISH_JOB_IDS)}")
    return "\n".join(lines) + "\n"


def wanted() -> dict[pathlib.Path, str]:
    files = {MAN_DIR / name: text for name, text in man_pages().items()}
    files.update({PBS_MAN_DIR / f"{name}.1": front_end_page(name, module) for name, (module, _) in PBS_COMMANDS.items()})
    files.update({COMPLETION_DIR / name: text for name, text in completions().items()})
    return files


def main(argv: list[str]) -> int:
    files = wanted()
    stale = sorted(str(path.relative_to(DATA)) for path, text in files.items()
                   if not path.exists() or path.read_text() != text)
    extra = sorted(str(path.relative_to(DATA)) for directory in (MAN_DIR, PBS_MAN_DIR, COMPLETION_DIR) if directory.exists()
                   for path in directory.iterdir() if path not in files)
    if "--check" in argv:
        if stale or extra:
            print("out of date (run make cli-files): " + ", ".join(stale + extra), file=sys.stderr)
            return 1
        return 0
    for directory in (MAN_DIR, PBS_MAN_DIR, COMPLETION_DIR):
        directory.mkdir(parents=True, exist_ok=True)
    for name in extra:
        (DATA / name).unlink()
    for path, text in files.items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
