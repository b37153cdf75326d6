"""A job no node of the cluster could ever run is refused at submission, through each front end,
naming what no node has, with a non-zero exit and nothing queued: GPUs on a cluster without any
(`drover submit --gpus 1`, `sbatch --gres gpu:1`, `qsub -l gpu=1`), a feature no node has
(`-C avx512`), more memory than any node. Held (--hold, sbatch -H, qsub -h), it is accepted to
wait for such a node, and once released it waits with a reason `drover why` and squeue give."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until


def front_end(cluster: LocalCluster, bin_dir: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / argv[0]), *argv[1:]], capture_output=True, text=True, env=cluster.env,
                          cwd=cluster.workdir, timeout=60)


@pytest.fixture
def bin_dir(cluster: LocalCluster) -> Path:
    installed = cluster.root / "bin"
    cluster.drover("compat", "install", str(installed))
    return installed


def nothing_queued(cluster: LocalCluster) -> None:
    assert cluster.drover_json("status", "--all") == []


@pytest.mark.parametrize(("argv", "said"), [
    (("drover", "submit", "--gpus", "1", "--", "true"), "no node has gres gpu (asked 1); nodes offer: none"),
    (("drover", "submit", "-C", "avx512", "--", "true"), "no node has the features avx512 (--constraint)"),
    (("drover", "submit", "--mem", "1T", "--", "true"), "no node can run a task of 1 CPU, 1048576 MiB"),
    (("sbatch", "--gres", "gpu:1", "--wrap", "true"), "no node has gres gpu (asked 1); nodes offer: none"),
    (("sbatch", "--constraint", "avx512", "--wrap", "true"), "no node has the features avx512"),
    (("qsub", "-b", "y", "-l", "gpu=1", "true"), "no node has gres gpu (asked 1); nodes offer: none"),
])
def test_what_no_node_has_is_refused_and_nothing_is_queued(cluster: LocalCluster, bin_dir: Path,
                                                           argv: tuple[str, ...], said: str) -> None:
    done = (cluster.drover(*argv[1:], check=False) if argv[0] == "drover" else front_end(cluster, bin_dir, *argv))
    assert done.returncode != 0, done.stdout
    assert said in done.stderr, done.stderr
    assert "--hold" in done.stderr  # the escape, for nodes that come later
    assert "Traceback" not in done.stderr
    nothing_queued(cluster)


def test_held_it_is_accepted_and_waits_with_a_reason_once_released(cluster: LocalCluster, bin_dir: Path) -> None:
    job = cluster.submit("--gpus", "1", "--hold", "--", "true")
    sbatch = front_end(cluster, bin_dir, "sbatch", "--parsable", "-H", "--gres", "gpu:1", "--wrap", "true")
    assert sbatch.returncode == 0, sbatch.stderr
    qsub = front_end(cluster, bin_dir, "qsub", "-terse", "-h", "-b", "y", "-l", "gpu=1", "true")
    assert qsub.returncode == 0, qsub.stderr
    jobs = [job, int(sbatch.stdout.strip()), int(qsub.stdout.strip())]
    assert {row["state"] for row in cluster.drover_json("status")} == {"held"}
    cluster.drover("release", *map(str, jobs))
    for each in jobs:
        wait_until(lambda each=each: cluster.drover_json("show", str(each))["pending_reason"] == "no_node_matches",
                   describe=f"job {each} to wait for a node with a GPU")
    why = cluster.drover("why", str(job)).stdout
    assert "no node that is up has gpu:1" in why, why
    squeue = front_end(cluster, bin_dir, "squeue", "-h", "-o", "%i %r")
    assert squeue.returncode == 0, squeue.stderr
    reasons = dict(line.split() for line in squeue.stdout.splitlines())
    assert reasons == {str(each): "BadConstraints" for each in jobs}, squeue.stdout
    cluster.drover("cancel", *map(str, jobs))
