"""The LSF variables of a job bsub submitted, as the shepherd builds them (shepherd/lsf_environment.py),
on plain data; a job submitted otherwise gets none."""

from __future__ import annotations

from pathlib import Path

from tests.unit.compat.test_job_environment_facts import a_config, a_job_on_three_hosts

from drover.shepherd.environment import build_environment
from drover.shepherd.lsf_environment import write_hostfile
from drover.shepherd.pbs_environment import nodefile

BSUB = {"LSB_SUB_HOST": "login1", "LSB_OUTPUTFILE": "out.%J"}


def test_a_bsub_job_gets_lsfs_names_for_its_facts() -> None:
    env = build_environment(a_config(environment=BSUB, queue="default"), "/t")
    assert (env["LSB_JOBID"], env["LSB_JOBINDEX"], env["LSB_JOBNAME"], env["LSB_QUEUE"]) == ("7", "0", "job", "normal")
    assert (env["LSB_HOSTS"], env["LSB_MCPU_HOSTS"], env["LSB_DJOB_NUMPROC"]) == ("n1 n1 n1 n1", "n1 4", "4")
    assert (env["LSB_SUBCWD"], env["LS_SUBCWD"], env["LSB_SUB_HOST"]) == ("/s", "/s", "login1")
    assert env["LSB_OUTPUTFILE"] == "/w/out" and "LSB_ERRORFILE" not in env  # as this attempt writes it
    assert env["LSB_DJOB_HOSTFILE"] == "/t/lsf_hostfile"


def test_an_array_element_and_a_job_on_several_hosts() -> None:
    element = build_environment(a_config(environment=BSUB, is_array=True, task_index=3, array_first=1,
                                         array_last=9, array_step=2, array_count=5), "/t")
    assert (element["LSB_JOBID"], element["LSB_JOBINDEX"], element["LSB_BATCH_JID"]) == ("7", "3", "7[3]")
    assert (element["LSB_JOBNAME"], element["LSB_JOBINDEX_END"], element["LSB_JOBINDEX_STEP"]) == ("job[3]", "9", "2")
    spread = build_environment(a_job_on_three_hosts(environment=BSUB), "/t")
    assert spread["LSB_MCPU_HOSTS"] == "n1 4 n2 4 m7 2" and spread["LSB_DJOB_NUMPROC"] == "10"
    assert spread["LSB_HOSTS"].split() == ["n1"] * 4 + ["n2"] * 4 + ["m7"] * 2


def test_a_job_submitted_otherwise_gets_none_of_them() -> None:
    env = build_environment(a_config(environment={"PBS_O_WORKDIR": "/s", "PBS_O_HOST": "h"}), "/t")
    assert not [name for name in env if name.startswith(("LSB_", "LS_"))]


def test_the_host_file_names_each_host_once_per_slot(tmp_path: Path) -> None:
    config = a_job_on_three_hosts(environment=BSUB)
    env = build_environment(config, str(tmp_path))
    write_hostfile(config, env, str(tmp_path))
    assert (tmp_path / "lsf_hostfile").read_text() == nodefile(config) == "n1\n" * 4 + "n2\n" * 4 + "m7\n" * 2
    elsewhere = {"LSB_DJOB_HOSTFILE": str(tmp_path / "elsewhere")}
    write_hostfile(config, elsewhere, str(tmp_path))  # only where the shepherd itself put it
    assert not (tmp_path / "elsewhere").exists()
