"""GPUs, licences, node features and exclusive nodes on a personal cluster, from the CLI and the
front ends. The node's GPUs are declared in drover.toml (fake: the jobs only read their
variables)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

CONFIG = """
[execd]
gres = ["gpu:a100:2", "gpu:v100:1"]
features = ["avx512", "bigmem"]

[licenses]
matlab = 2
"""

SHOW_GPUS = 'echo "$CUDA_VISIBLE_DEVICES|$SLURM_JOB_GPUS|$SGE_HGR_gpu|$DROVER_GRES"; sleep 2'


def _output(cluster: LocalCluster, job: int) -> str:
    info = cluster.drover_json("show", str(job))
    return Path(info["tasks"][0]["stdout"]).read_text().strip()


def test_each_job_gets_its_own_gpus_and_waits_for_them(tmp_path: Path) -> None:
    cluster = LocalCluster(cpus=4, config_toml=CONFIG)
    try:
        cluster.start()
        nodes = cluster.drover_json("nodes")
        assert nodes[0]["gres"] == "gpu:a100:2,gpu:v100:1"
        assert {"avx512", "bigmem"} <= set(nodes[0]["features"]) and any(
            f.startswith("arch=lx-") for f in nodes[0]["features"])
        first = cluster.submit("--gpus", "a100:1", "--", "sh", "-c", SHOW_GPUS, cwd=tmp_path)
        second = cluster.submit("--gres", "gpu:a100:1", "--", "sh", "-c", SHOW_GPUS, cwd=tmp_path)
        third = cluster.submit("--gpus", "a100:1", "--", "sh", "-c", SHOW_GPUS, cwd=tmp_path)  # waits for one
        cluster.drover("wait", str(first), str(second), str(third), timeout=60)
        seen = [_output(cluster, job) for job in (first, second, third)]
        firsts = {line.split("|")[0] for line in seen[:2]}
        assert firsts == {"0", "1"}, seen  # two jobs at once, each its own a100
        for line in seen:
            index = line.split("|")[0]
            assert line == f"{index}|{index}|{index}|gpu:{index}", line
        attempts = [cluster.drover_json("show", str(job))["tasks"][0]["attempts"][0] for job in (first, second, third)]
        assert attempts[2]["dispatched_at"] >= min(attempts[0]["ended_at"], attempts[1]["ended_at"])  # it waited
        show = cluster.drover("show", str(first)).stdout
        assert "gpu:a100:1" in show and "; gpu " in show, show
        refused = cluster.drover("submit", "--gpus", "4", "--", "true", check=False, cwd=tmp_path)
        assert refused.returncode != 0 and "no node has gres gpu (asked 4); the most one node has is 3" in refused.stderr
        too_many = cluster.submit("--gpus", "4", "--hold", "--", "true", cwd=tmp_path)  # for a node to come
        cluster.drover("release", str(too_many))
        wait_until(lambda: cluster.drover_json("show", str(too_many))["pending_reason"] == "no_node_matches",
                   describe="the released job to wait for a node with 4 GPUs")
        info = cluster.drover_json("show", str(too_many))
        assert info["pending_reason"] == "no_node_matches", info
        assert "no node that is up has gpu:4" in info["pending_explanation"]
        cluster.drover("cancel", str(too_many))
    finally:
        assert not cluster.stop()


def test_licences_constraints_exclusive_and_grid_engine_requests(tmp_path: Path) -> None:
    cluster = LocalCluster(cpus=4, config_toml=CONFIG)
    try:
        cluster.start()
        marker = tmp_path / "licensed"
        script = f'echo $$ >> {marker}; sleep 2; echo done'
        jobs = [cluster.submit("--licenses", "matlab:1", "--", "sh", "-c", script, cwd=tmp_path) for _ in range(3)]
        third = cluster.drover_json("show", str(jobs[2]))
        assert third["pending_reason"] == "licenses" and third["licenses"] == {"matlab": 1}, third
        cluster.drover("wait", *map(str, jobs), timeout=60)
        assert len(marker.read_text().split()) == 3
        unknown = cluster.drover("submit", "--licenses", "fortran", "--", "true", check=False, cwd=tmp_path)
        assert unknown.returncode != 0 and "unknown licence 'fortran'; this cluster has matlab" in unknown.stderr
        too_many = cluster.drover("submit", "-L", "matlab:3", "--", "true", check=False, cwd=tmp_path)
        assert too_many.returncode != 0 and "the cluster has 2 matlab in all" in too_many.stderr

        matched = cluster.submit("--constraint", "avx512&(bigmem|hugemem)", "--", "true", cwd=tmp_path)
        cluster.drover("wait", str(matched), timeout=30)
        refused = cluster.drover("submit", "-C", "hugemem", "--", "true", check=False, cwd=tmp_path)
        assert refused.returncode != 0 and "no node has the features hugemem" in refused.stderr, refused.stderr
        unmatched = cluster.submit("-C", "hugemem", "--hold", "--", "true", cwd=tmp_path)
        cluster.drover("release", str(unmatched))
        wait_until(lambda: cluster.drover_json("show", str(unmatched))["pending_reason"] == "no_node_matches",
                   describe="the released job to wait for a node with hugemem")
        info = cluster.drover_json("show", str(unmatched))
        assert info["pending_reason"] == "no_node_matches" and "lacks hugemem" in info["pending_explanation"], info
        cluster.drover("cancel", str(unmatched))
        bad = cluster.drover("submit", "-C", "a*2", "--", "true", check=False, cwd=tmp_path)
        assert bad.returncode != 0 and "not supported" in bad.stderr, bad.stderr

        exclusive = cluster.submit("--exclusive", "--", "sh", "-c", "echo $DROVER_CPUS $SLURM_CPUS_ON_NODE",
                                   cwd=tmp_path)
        cluster.drover("wait", str(exclusive), timeout=30)
        assert _output(cluster, exclusive) == "4 4"  # the whole node's CPUs

        bin_dir = tmp_path / "bin"
        cluster.drover("compat", "install", str(bin_dir))
        env = cluster.env

        qsub = subprocess.run([str(bin_dir / "qsub"), "-terse", "-cwd", "-b", "y", "-l", "gpu=1,arch=" + _arch(),
                               "-l", "matlab=1", "sh", "-c", SHOW_GPUS],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=30)
        assert qsub.returncode == 0, qsub.stderr
        job = int(qsub.stdout.strip())
        info = cluster.drover_json("show", str(job))
        assert info["gres"] == ["gpu:1"] and info["licenses"] == {"matlab": 1}, info
        assert info["constraint"] == f"arch={_arch()}"
        cluster.drover("wait", str(job), timeout=30)
        unknown_resource = subprocess.run([str(bin_dir / "qsub"), "-b", "y", "-l", "scratch=10", "true"],
                                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=30)
        assert unknown_resource.returncode != 0 and 'unknown resource "scratch"' in unknown_resource.stderr
        sbatch = subprocess.run([str(bin_dir / "sbatch"), "--parsable", "--gpus-per-task=1", "-C", "bigmem",
                                 "--wrap", SHOW_GPUS], capture_output=True, text=True, cwd=tmp_path, env=env,
                                timeout=30)
        assert sbatch.returncode == 0, sbatch.stderr
        job = int(sbatch.stdout.strip())
        cluster.drover("wait", str(job), timeout=30)
        assert cluster.drover_json("show", str(job))["gres"] == ["gpu:1"]
    finally:
        assert not cluster.stop()


def _arch() -> str:
    from drover.spool.architecture import architecture

    return architecture()


# Opens each fake GPU's device file and says how: ENXIO (no driver behind it: the cgroup let it
# through) or EPERM (the devices cgroup denied it); then the job's GPU variables.
TRY_GPUS = """python3 - "$@" <<'PY'
import errno, os, sys
for path in sys.argv[1:]:
    try:
        os.close(os.open(path, os.O_RDWR))
        print("opened")
    except OSError as error:
        print(errno.errorcode[error.errno])
for name in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"):
    print(name, repr(os.environ.get(name)))
PY
"""


def test_the_gpus_a_job_was_not_given_are_hidden_and_denied(tmp_path: Path) -> None:
    """Slurm's ConstrainDevices on cgroup v1. 1. A node has two (fake) GPUs, /dev/nvidia0 and
    /dev/nvidia1 (char 195:0 and 195:1, made here: no driver answers them). 2. A job given GPU 0
    may open its device (the kernel then finds no driver: ENXIO) but not GPU 1's (EPERM, from
    the devices cgroup); its CUDA_VISIBLE_DEVICES is 0. 3. A job given no GPU may open neither,
    and its CUDA, ROCm and OpenCL variables select none."""
    from tests.integration.shepherd.test_containment import devices_controller_unusable

    why_not = devices_controller_unusable()
    if why_not:
        pytest.skip(why_not)
    devices = []
    for index in (0, 1):
        path = tmp_path / f"nvidia{index}"
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(195, index))
        devices.append(str(path))
    script = tmp_path / "try_gpus.sh"
    script.write_text(TRY_GPUS)
    cluster = LocalCluster(config_toml='[execd]\ngres = ["gpu:fake:2"]\n')
    try:
        cluster.start()
        with_gpu = cluster.submit("--gpus", "1", "--", "bash", str(script), *devices, cwd=tmp_path)
        cluster.drover("wait", str(with_gpu), timeout=60)
        given = cluster.drover_json("show", str(with_gpu))["tasks"][0]["attempts"][0]["gres"]["gpu"]
        other = 1 - given[0]
        seen = _output(cluster, with_gpu).splitlines()
        assert seen[given[0]] == "ENXIO" and seen[other] == "EPERM", seen
        assert seen[2:] == [f"{name} '{given[0]}'" for name in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                                                 "GPU_DEVICE_ORDINAL")]
        without = cluster.submit("--", "bash", str(script), *devices, cwd=tmp_path)
        cluster.drover("wait", str(without), timeout=60)
        assert _output(cluster, without).splitlines() == [
            "EPERM", "EPERM", "CUDA_VISIBLE_DEVICES ''", "ROCR_VISIBLE_DEVICES ''", "GPU_DEVICE_ORDINAL ''"]
    finally:
        assert not cluster.stop()
