"""sbatch, salloc and srun (outside a job) with -N above 1: a job of the built-in parallel
environment `slurm` with its own CPUs on each node, on plain data."""

from __future__ import annotations

import pytest

from drover.compat.slurm.request import OptionError, Refused, Request, parse
from drover.compat.slurm.submission import to_job


def a_job(*argv: str, command: str = "sbatch") -> dict[str, object]:
    request = Request(command)
    request.add(parse(command, list(argv))[0], "the command line")
    return dict(to_job(request, "#!/bin/sh\n", "x", environ={}))


def pe_of(job: dict[str, object]) -> tuple[object, ...]:
    return job["cpus"], job.get("pe"), job.get("pe_slots"), job.get("pe_per_node")


@pytest.mark.parametrize(("argv", "shape", "ntasks"), [
    (("-N", "2"), (1, "slurm", "2", 1), "2"),  # one task on each node
    (("-N", "2", "--ntasks-per-node=2"), (1, "slurm", "4", 2), "4"),
    (("-N", "2", "--ntasks-per-node=2", "-c", "3"), (1, "slurm", "12", 6), "4"),
    (("-N", "2", "-n", "4"), (1, "slurm", "4", 2), "4"),
    (("-N", "2", "-n", "3"), (1, "slurm", "4", 2), "3"),  # 2 and 1 tasks, 2 CPUs held on each
    (("-N", "2", "-n", "2", "--ntasks-per-node=4"), (1, "slurm", "2", 1), "2"),  # with -n, Slurm's maximum
    (("-N", "2", "-n", "6", "--ntasks-per-node=4"), (1, "slurm", "6", 3), "6"),
    (("-N", "2", "--mincpus=4"), (1, "slurm", "8", 4), "2"),
    (("-N", "1", "-n", "4"), (4, None, None, None), "4"),  # one node: as before
])
def test_nodes_make_a_job_of_the_slurm_parallel_environment(argv: tuple[str, ...], shape: tuple[object, ...],
                                                            ntasks: str) -> None:
    for command in ("sbatch", "salloc", "srun"):
        job = a_job(*argv, command=command)
        assert pe_of(job) == shape
        assert job["environment"]["SLURM_NTASKS"] == ntasks  # type: ignore[index]


def test_tasks_per_node_and_memory_per_node_are_each_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    job = a_job("-N", "2", "--ntasks-per-node=3", "--mem=1G")
    env = job["environment"]
    assert job["memory_mib"] == 2048  # --mem is on each node
    assert (env["SLURM_NTASKS_PER_NODE"], env["SLURM_MEM_PER_NODE"]) == ("3", "1024")  # type: ignore[index]
    assert a_job("-N", "2", "-n", "2", "--mem-per-cpu=100M")["memory_mib"] == 200
    assert capsys.readouterr().err == ""


def test_a_range_takes_its_least_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert pe_of(a_job("-N", "2-4")) == (1, "slurm", "2", 1)
    assert capsys.readouterr().err == "sbatch: warning: --nodes=2-4: the job gets 2 nodes, the least of the range\n"
    assert pe_of(a_job("-N", "1-4")) == (1, None, None, None)
    assert "the job gets 1 node, the least" in capsys.readouterr().err
    assert pe_of(a_job("-N", "3-3"))[1:] == ("slurm", "3", 1)
    assert capsys.readouterr().err == ""


def test_fewer_tasks_than_nodes_lower_the_nodes_as_slurm_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert pe_of(a_job("-N", "3", "-n", "2")) == (1, "slurm", "2", 1)
    assert pe_of(a_job("-N", "2", "-n", "1")) == (1, None, None, None)
    assert "can't run 1 processes on 2 nodes, setting nnodes to 1" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "words"), [
    (("-N", "2", "--exclusive"), "--exclusive with --nodes=2: Drover keeps a job that asks for devices or whole "
                                 "nodes on one node"),
    (("-N", "2", "--gres=gpu:1"), "--gres=gpu:1 with --nodes=2"),
    (("-N", "2", "--gpus-per-node=1"), "--gpus-per-node=1 with --nodes=2"),
    (("-N", "2", "-n", "5", "--ntasks-per-node=2"), "--ntasks=5 with --nodes=2 and --ntasks-per-node=2: 5 tasks "
                                                    "do not fit 2 on each of 2 nodes"),
])
def test_what_cannot_run_on_several_nodes_is_refused(argv: tuple[str, ...], words: str) -> None:
    with pytest.raises(Refused, match=words.replace("(", r"\(")):
        a_job(*argv)


def test_bad_node_counts_are_refused_as_sbatch_refuses_them() -> None:
    for text in ("two", "0", "4-2"):
        with pytest.raises(OptionError, match=f'"{text}" is not a valid node count'):
            a_job("-N", text)


def test_srun_on_a_terminal_stays_on_one_node() -> None:
    from drover.compat.slurm.srun import _on_terminal

    request = Request("srun")
    request.add(parse("srun", ["-N", "2", "--pty"])[0], "the command line")
    with pytest.raises(Refused, match="--pty with --nodes=2: a terminal is given to a job on one node"):
        _on_terminal(request, ["bash"])


def test_srun_in_a_job_on_one_node_refuses_more_nodes_in_sruns_words(monkeypatch: pytest.MonkeyPatch) -> None:
    from drover.compat.slurm.srun import run_step

    for name, value in {"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n1", "SLURM_CPUS_ON_NODE": "2"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SLURM_JOB_CPUS_PER_NODE", raising=False)
    request = Request("srun")
    request.add(parse("srun", ["-N", "2", "true"])[0], "the command line")
    with pytest.raises(Refused, match="Only allocated 1 nodes asked for 2"):
        run_step(request, ["true"], "7")
