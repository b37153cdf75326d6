"""drover completion bash|zsh|fish: print the shell's completion script for drover.

The scripts are generated from the commands' own parsers when Drover is built (`make
cli-files`) and shipped in the package, so completing costs the shell no Python start-up."""

from __future__ import annotations

import os

from drover.cli.common import parser

# shell → the script's file name in drover/data/completion
SCRIPTS = {"bash": "drover", "zsh": "_drover", "fish": "drover.fish"}

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
    args = p.parse_args(argv)
    print(script(args.shell), end="")
    return 0


def script(shell: str) -> str:
    # A plain path, not importlib.resources, whose imports would treble the cost of a command
    # that runs in every new shell (`eval "$(drover completion bash)"` in ~/.bashrc).
    import drover

    with open(os.path.join(os.path.dirname(drover.__file__), "data", "completion", SCRIPTS[shell])) as file:
        return file.read()
