"""Grid Engine's name of this host's architecture (ARC, SGE_ARCH; a node's arch= feature), e.g.
lx-amd64. Here because the node daemon announces it and the shepherd gives it to jobs, and the
shepherd imports nothing of Drover's but the spool and the records: both must say the same."""

from __future__ import annotations

import os

_MACHINES = {"x86_64": "amd64", "aarch64": "arm64", "i686": "x86", "ppc64le": "ppc64le"}


def architecture(machine: str | None = None) -> str:
    """lx-<Grid Engine's name of the machine>: lx-amd64 for x86_64, lx-arm64 for aarch64; a
    machine it has no name for keeps the kernel's (lx-riscv64)."""
    machine = machine or os.uname().machine
    return "lx-" + _MACHINES.get(machine, machine)
