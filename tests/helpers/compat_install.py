"""The front ends (sbatch, qsub...) installed into a cluster's directory with `drover compat
install`, and run there as a user of that cluster runs them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.cluster import LocalCluster


def install(cluster: LocalCluster, flavor: str = "sge") -> Path:
    """Slurm's commands, and Grid Engine's (or with flavor "pbs", PBS's) qsub, qstat, qdel..."""
    bin_dir = cluster.root / ("bin" if flavor == "sge" else f"bin-{flavor}")
    cluster.drover("compat", "install", "--flavor", flavor, str(bin_dir))
    return bin_dir


def run(cluster: LocalCluster, bin_dir: Path, *args: str, stdin: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / args[0]), *args[1:]], capture_output=True, text=True,
                          env={**cluster.env, **(env or {})}, cwd=cluster.workdir, input=stdin, timeout=60)
