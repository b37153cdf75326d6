"""The front ends (sbatch, qsub...) installed into a cluster's directory with `drover compat
install`, and run there as a user of that cluster runs them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.cluster import LocalCluster


def install(cluster: LocalCluster) -> Path:
    bin_dir = cluster.root / "bin"
    cluster.drover("compat", "install", str(bin_dir))
    return bin_dir


def run(cluster: LocalCluster, bin_dir: Path, *args: str, stdin: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / args[0]), *args[1:]], capture_output=True, text=True,
                          env={**cluster.env, **(env or {})}, cwd=cluster.workdir, input=stdin, timeout=60)
