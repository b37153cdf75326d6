"""drover install-units [--prefix DIR] [--bindir DIR]: write the systemd units that start a shared
cluster's daemons at boot (drover-controller.service, drover-execd.service), which the package
carries, with the path of this installation's `drover` in them.

Without --prefix they go to /etc/systemd/system, which only root may write: the command refuses
at once when run as anyone else, and says how to write them elsewhere. Enabling them stays the
admin's choice (`systemctl enable --now drover-controller drover-execd`)."""

from __future__ import annotations

import os
import sys

from drover.cli.common import parser
from drover.core.errors import BadRequest, Forbidden

SYSTEM_UNIT_DIR = "/etc/systemd/system"
UNITS = ("drover-controller.service", "drover-execd.service")


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Write the systemd units that start a shared cluster's controller and execd at boot, "
                        f"into {SYSTEM_UNIT_DIR} (as root) or the directory --prefix names.", json_flag=False)
    p.add_argument("--prefix", metavar="DIR",
                   help=f"write the units into DIR (made if missing) instead of {SYSTEM_UNIT_DIR}; needs no root")
    p.add_argument("--bindir", metavar="DIR",
                   help="the directory whose `drover` the units run (default: the one this command is in)")
    args = p.parse_args(argv)
    bindir = os.path.abspath(args.bindir) if args.bindir else installed_bindir()
    if args.prefix is None:
        if os.geteuid() != 0:
            raise Forbidden(f"writing {SYSTEM_UNIT_DIR} needs root: run it as root, or give --prefix DIR to "
                            "write the units somewhere else")
        target = SYSTEM_UNIT_DIR
    else:
        target = os.path.abspath(args.prefix)
    for path in write_units(target, bindir):
        print(path)
    if args.prefix is None and os.path.isdir("/run/systemd/system"):
        import subprocess

        subprocess.run(["systemctl", "daemon-reload"], check=False)
    return 0


def installed_bindir() -> str:
    """Where this installation's `drover` is: beside the interpreter of its environment (a venv's
    or pipx's bin), else the directory of the script that was run."""
    beside = os.path.join(os.path.dirname(sys.executable), "drover")
    if os.access(beside, os.X_OK):
        return os.path.dirname(os.path.abspath(beside))
    return os.path.dirname(os.path.abspath(sys.argv[0]))


def unit_text(name: str, bindir: str) -> str:
    import drover

    with open(os.path.join(os.path.dirname(drover.__file__), "data", "systemd", name)) as file:
        return file.read().replace("@BINDIR@", bindir)


def write_units(directory: str, bindir: str) -> list[str]:
    """Each unit written whole (a temporary file renamed over the old one), mode 0644."""
    if not os.path.isabs(bindir) or any(c.isspace() for c in bindir):
        raise BadRequest(f"the units need an absolute directory without spaces for drover, not {bindir!r}")
    os.makedirs(directory, exist_ok=True)
    written = []
    for name in UNITS:
        path = os.path.join(directory, name)
        temporary = path + ".tmp"
        with open(temporary, "w") as file:
            file.write(unit_text(name, bindir))
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
        written.append(path)
    return written
