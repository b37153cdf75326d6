"""drover completion bash|zsh|fish: print the shell's completion script for drover.

The scripts are generated from the commands' own parsers when Drover is built (`make
cli-files`) and shipped in the package, so completing costs the shell no Python start-up."""

from __future__ import annotations

import os

from drover.cli.common import parser

# shell → the script's file name in drover/data/completion: drover's, and the front ends'
SCRIPTS = {"bash": "drover", "zsh": "_drover", "fish": "drover.fish"}
FRONT_END_SCRIPTS = {"bash": "front-ends.bash", "zsh": "_drover_front_ends", "fish": "front-ends.fish"}

_HOW = {
    "bash": 'eval "$(drover completion bash)" in ~/.bashrc, or save it as '
            "~/.local/share/bash-completion/completions/drover",
    "zsh": "save it as _drover in a directory of $fpath, before compinit runs",
    "fish": "save it as ~/.config/fish/completions/drover.fish",
}


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Print the completion script of a shell for drover. "
                        + "; ".join(f"{shell}: {how}" for shell, how in _HOW.items()) + ".", json_flag=False)
    p.add_argument("shell", choices=list(SCRIPTS), help="the shell to complete in")
    p.add_argument("--front-ends", action="store_true",
                   help="the script of the front ends instead (sbatch, squeue, qsub, ...: drover compat install), "
                        "for where they stand in for Slurm's or Grid Engine's own, whose completion it would shadow")
    args = p.parse_args(argv)
    print(script(args.shell, front_ends=args.front_ends), end="")
    return 0


def script(shell: str, front_ends: bool = False) -> str:
    # A plain path, not importlib.resources, whose imports would treble the cost of a command
    # that runs in every new shell (`eval "$(drover completion bash)"` in ~/.bashrc).
    import drover

    with open(os.path.join(os.path.dirname(drover.__file__), "data", "completion",
                           (FRONT_END_SCRIPTS if front_ends else SCRIPTS)[shell])) as file:
        return file.read()
