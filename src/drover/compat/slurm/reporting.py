"""How sbatch, srun and salloc end on an error: getopt's complaints with status 255 and the
`--help` hint, everything else as `COMMAND: error: ...` with SLURM_EXIT_ERROR (or 1)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from drover.compat.slurm.common import slurm_words
from drover.compat.slurm.directives import DirectiveError
from drover.compat.slurm.request import OptionError, Refused
from drover.core.errors import DroverError, Unreachable

# What srun and salloc say before slurm_strerror when their allocation cannot be asked for.
UNREACHABLE_PREFIX = {"srun": "Unable to allocate resources: ", "salloc": "Job submission failed: "}


def reporting_errors(command: str, body: Callable[[], int]) -> int:
    """Run `body` (the command's work) and report what it raises as `command` does."""
    error_exit = exit_status_for_errors(command)
    try:
        return body()
    except OptionError as error:
        print(f"{command}: {error}" if error.try_help else f"{command}: error: {error}", file=sys.stderr)
        if error.try_help:
            print(f'Try "{command} --help" for more information', file=sys.stderr)
        return 255
    except DirectiveError as error:
        print(f"{command}: {'fatal' if error.fatal else 'error'}: {error}", file=sys.stderr)
        return error_exit
    except (Refused, DroverError) as error:
        print(f"{command}: error: {UNREACHABLE_PREFIX.get(command, '') if isinstance(error, Unreachable) else ''}"
              f"{slurm_words(error)}", file=sys.stderr)
        return error_exit


def exit_status_for_errors(command: str) -> int:
    """SLURM_EXIT_ERROR, if set to a number other than 0; else 1."""
    text = os.environ.get("SLURM_EXIT_ERROR")
    if text is None:
        return 1
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0:
        print(f"{command}: error: SLURM_EXIT_ERROR has zero value", file=sys.stderr)
        return 1
    return value & 0xFF
