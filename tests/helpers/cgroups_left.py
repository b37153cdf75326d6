"""A test leaves no cgroup behind: the empty cgroups drover-<tag> (and below) a cluster's
shepherds made, removed depth first, in every hierarchy. Each is looked for at the hierarchy's
root and beneath this process's own cgroup there (where a node daemon started by this process
makes them: a v1 memory hierarchy in a container is often not at its root). rmdir refuses a
cgroup with processes or children left, so only empty ones go."""

from __future__ import annotations

import contextlib
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
HIERARCHIES = (ROOT, ROOT / "unified", *(ROOT / name for name in
                                         ("freezer", "memory", "cpuacct", "cpuset", "cpu,cpuacct", "pids", "devices")))


def remove_cgroups_of(tag: str) -> None:
    for top in sorted(_tops(f"drover-{tag}")):
        if not top.is_dir():
            continue
        for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def _tops(name: str) -> set[Path]:
    tops = {hierarchy / name for hierarchy in HIERARCHIES}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return tops
    for line in lines:
        _, controllers, own = line.split(":", 2)
        names = [c.removeprefix("name=") for c in controllers.split(",") if c]
        mounts = [ROOT / c for c in names] if names else [ROOT / "unified", ROOT]
        tops.update(mount / own.lstrip("/") / name for mount in mounts)
    return tops
