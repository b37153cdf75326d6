"""One sbatch, srun or salloc invocation's options, gathered as Slurm gathers them: #SBATCH
directives first, then the INPUT ENVIRONMENT VARIABLES, then the command line, each later one
winning. Then each option's mark is applied: ✗ refused, ≈ warned about (refused under
--strict), – accepted in silence (said with -v). Pure but for the warnings on stderr."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass

from drover.compat.optiontable import Arity, Mark, Option, UsageError, parse_gnu
from drover.compat.slurm.submit_options import INPUT_ENVIRONMENT, options_for


class OptionError(Exception):
    """An option Slurm's own command refuses while it reads its options: it prints the message
    (and getopt's "Try ... --help" for an unknown option) and exits with status 255."""

    def __init__(self, message: str, try_help: bool = False) -> None:
        super().__init__(message)
        self.try_help = try_help


class Refused(Exception):
    """An option Drover cannot honour (✗), or cannot honour exactly under --strict: nothing is
    submitted; the command exits with its error status (1, or SLURM_EXIT_ERROR)."""


@dataclass(frozen=True)
class Given:
    option: Option
    value: str | None
    source: str  # "the command line", "#SBATCH", or the environment variable's name
    from_environment: bool = False
    raw: str | None = None  # the environment variable's value, also for a flag's


class Request:
    """The options in force, by key (the long name without dashes), the last source winning."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.options = options_for(command)
        self.given: dict[str, Given] = {}
        self.verbose = 0

    def add(self, found: list[tuple[Option, str | None]], source: str) -> None:
        for option, value in found:
            if option.key == "verbose":
                self.verbose += 1
            self.given[option.key] = Given(option, value, source)

    def add_environment(self, environ: Mapping[str, str]) -> None:
        """The command's INPUT ENVIRONMENT VARIABLES: each sets its option as the option's value
        would (a flag's variable sets the flag, whatever its value)."""
        by_key = {option.key: option for option in self.options}
        for variable, key in INPUT_ENVIRONMENT[self.command].items():
            value = environ.get(variable)
            if value is None or key not in by_key:
                continue
            option = by_key[key]
            if key == "verbose":
                self.verbose += 1
            self.given[key] = Given(option, None if option.arity is Arity.NONE else value, variable, True, value)

    def has(self, key: str) -> bool:
        return key in self.given

    def value(self, key: str, default: str | None = None) -> str | None:
        given = self.given.get(key)
        return default if given is None or given.value is None else given.value

    def spelled(self, key: str) -> str:
        """The option as the user gave it, for messages: `--ntasks=4`, or `SBATCH_ACCOUNT=x`."""
        given = self.given[key]
        if given.from_environment:
            return f"{given.source}={given.raw or ''}"
        name = "--" + key
        return name if given.value is None else f"{name}={given.value}"

    def integer(self, key: str, minimum: int = 0) -> int | None:
        text = self.value(key)
        if text is None:
            return None
        digits = text.strip()
        if not digits.isascii() or not digits.removeprefix("-").isdigit():  # int() also takes '٣' and '1_0'
            raise OptionError(f"Invalid numeric value \"{text}\" for --{key}.")
        number = int(digits)
        if number < minimum:
            raise OptionError(f"Invalid --{key} specification")
        return number


def parse(command: str, argv: list[str]) -> tuple[list[tuple[Option, str | None]], list[str]]:
    """The command line, as getopt_long reads it with the `+` optstring: options end at the
    first operand (the script, or the program to run)."""
    try:
        found, operands = parse_gnu(argv, options_for(command), permute=False)
    except UsageError as error:
        raise OptionError(str(error), try_help=True) from None
    if operands[:1] == [":"]:
        raise Refused(f"heterogeneous jobs ({command} OPTIONS : OPTIONS ...) are not supported by Drover")
    return found, operands


# Values of refused options that ask for nothing Drover lacks.
_HARMLESS_VALUES = {"begin": ("now", "now+0"), "gres": ("none",), "input": ("/dev/null",), "relative": ("0",),
                    "mpi": ("none",)}

# Values that make an honoured option approximated: key → (the values, what Drover does instead).
_APPROXIMATED_VALUES = {
    "exclusive": (("user", "mcs", "topo"), "ignored: the job gets the CPUs it asked for, on a node it may share"),
}


def apply_marks(request: Request, strict: bool) -> None:
    """Refuse the ✗ options, warn about the ≈ ones (refuse them under --strict), and under -v
    say which change nothing. Options whose value is handled elsewhere (srun's --jobid,
    --nodes) are checked where they are used."""
    for key, given in request.given.items():
        mark = given.option.mark
        value = (given.value or "").strip().lower()
        if value in _HARMLESS_VALUES.get(key, ()):
            continue
        spelled = request.spelled(key)
        note = given.option.note
        if mark is Mark.SUPPORTED and value in _APPROXIMATED_VALUES.get(key, ((), ""))[0]:
            mark, note = Mark.APPROXIMATED, _APPROXIMATED_VALUES[key][1]
        if mark is Mark.REFUSED:
            raise Refused(f"{spelled} is not supported by Drover" + (f": {note}" if note else ""))
        if mark is Mark.APPROXIMATED:
            if strict:
                raise Refused(f"{spelled} can only be approximated by Drover ({note}); refused under --strict")
            warn(request.command, f"{spelled}: {note}" if note else f"{spelled} is approximated")
        elif mark is Mark.MEANINGLESS and request.verbose:
            info(request.command, f"{spelled} changes nothing on Drover" + (f": {note}" if note else ""))


def warn(command: str, message: str) -> None:
    print(f"{command}: warning: {message}", file=sys.stderr)


def info(command: str, message: str) -> None:
    print(f"{command}: {message}", file=sys.stderr)
