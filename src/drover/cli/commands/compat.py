"""drover compat install DIR: put Slurm's commands (sbatch, squeue, scancel, sacct), backed by
Drover, into DIR. Opt-in, so they never shadow a real Slurm by accident."""

from __future__ import annotations

import os
import sys

from drover.cli.common import parser
from drover.core.errors import BadRequest

COMMANDS = {"sbatch": "drover.compat.slurm.sbatch", "squeue": "drover.compat.slurm.squeue",
            "scancel": "drover.compat.slurm.scancel", "sacct": "drover.compat.slurm.sacct"}


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Install Slurm's commands, backed by Drover, into a directory.", json_flag=False)
    p.add_argument("action", choices=["install"])
    p.add_argument("directory")
    p.add_argument("--force", action="store_true", help="replace files of the same names")
    args = p.parse_args(argv)
    os.makedirs(args.directory, exist_ok=True)
    for name, module in COMMANDS.items():
        path = os.path.join(args.directory, name)
        if os.path.exists(path) and not args.force:
            raise BadRequest(f"{path} exists; --force replaces it")
        with open(path, "w") as file:
            file.write(f"#!{sys.executable}\nfrom {module} import main\nraise SystemExit(main())\n")
        os.chmod(path, 0o755)
        print(path)
    return 0
