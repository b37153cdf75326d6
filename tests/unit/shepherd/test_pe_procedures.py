"""GE shepherd: "Next a parallel environment startup procedure is run if the job is a parallel
job" and "followed by a parallel environment shutdown procedure for parallel jobs": which PE
methods an attempt runs (shepherd/parallel.py), with sge_pe(5)'s placeholders put in, quoted."""

from __future__ import annotations

from typing import Any

from tests.helpers.attempt_config import attempt_config

from drover.shepherd.config import ShepherdConfig, read_config
from drover.shepherd.environment import build_environment, pe_hostfile, site_environment
from drover.shepherd.methods import AFTER_JOB, BEFORE_JOB, Method, methods
from drover.shepherd.parallel import expand, placeholders, with_pe_methods


def a_config(**overrides: Any) -> ShepherdConfig:
    config = {
        "attempt": "7.0.2", "job_id": 7, "task_index": 0, "attempt_number": 1, "is_array": False,
        "array_first": None, "array_last": None, "array_step": None, "array_count": None, "name": "job",
        "owner": "nobody", "node": "n1", "workdir": "/w", "submit_dir": "/s", "stdout": "/w/out", "stderr": None,
        "environment": {}, "cpus": 4, "cpu_ids": [2, 3, 4, 5], "memory_mib": 0, "time_limit_s": None,
        "queue": "short", "cluster": "c1",
    }
    config.update(overrides)
    # Decoded as the shepherd decodes its record, over a whole one (tests/helpers/attempt_config.py)
    job_name = config.pop("name")
    return read_config({**attempt_config("/w", **config), "name": job_name})


def node_methods(**config: Any) -> Any:
    config = a_config(node_prolog="echo p", node_pe_start="echo node-start", node_pe_stop="echo node-stop",
                      node_epilog="echo e", **config)
    return config, methods(config, BEFORE_JOB), methods(config, AFTER_JOB)


def test_a_serial_job_runs_no_pe_methods_not_even_the_nodes() -> None:
    config, before, after = node_methods()
    before, after = with_pe_methods(config, "/spool/7.0.2", before, after)
    assert [(m.step, m.level) for m in before] == [("prolog", "node")]
    assert [(m.step, m.level) for m in after] == [("epilog", "node")]


def test_a_pe_job_runs_the_nodes_then_its_pes_start_and_the_reverse_after() -> None:
    config, before, after = node_methods(pe="mpi", pe_slots=4, pe_start="/opt/start $pe_hostfile $pe_slots",
                                         pe_stop="/opt/stop $job_name", pe_stop_as_site=True)
    before, after = with_pe_methods(config, "/spool/7.0.2", before, after)
    assert [(m.step, m.level) for m in before] == [("prolog", "node"), ("pe_start", "node"), ("pe_start", "pe")]
    assert [(m.step, m.level) for m in after] == [("pe_stop", "pe"), ("pe_stop", "node"), ("epilog", "node")]
    assert before[-1] == Method("pe_start", "pe", "/opt/start /spool/7.0.2/pe_hostfile 4", as_owner=True)
    assert after[0] == Method("pe_stop", "pe", "/opt/stop job", as_owner=False)  # root@: the site's


def test_placeholders_are_quoted_for_the_shell() -> None:
    values = placeholders(a_config(name="x; touch /tmp/owned", pe="mpi", pe_slots=4), "/spool/7.0.2")
    assert values["host"] == "n1" and values["processors"] == "2,3,4,5" and values["queue"] == "short"
    assert expand("/opt/start $job_name ${job_owner} $HOME", values) == (
        "/opt/start 'x; touch /tmp/owned' nobody $HOME")


def test_submit_1_pe_variables_only_for_a_job_of_a_pe() -> None:
    parallel = build_environment(a_config(pe="mpi", pe_slots=4), "/t")
    assert (parallel["PE"], parallel["NSLOTS"], parallel["NHOSTS"], parallel["NQUEUES"]) == ("mpi", "4", "1", "1")
    assert parallel["PE_HOSTFILE"] == "/t/pe_hostfile" and site_environment(a_config(pe="mpi", pe_slots=4))["PE"] == "mpi"
    serial = build_environment(a_config(cpus=1, cpu_ids=[0]), "/t")
    assert (serial["NSLOTS"], serial["NHOSTS"]) == ("1", "1") and not {"PE", "PE_HOSTFILE"} & set(serial)
    assert pe_hostfile(a_config(cpus=1, cpu_ids=[3], pe="smp", pe_slots=1)) == "n1 1 short@n1 3\n"


def test_pe_hostfile_of_a_job_on_several_hosts_has_each_involved_host_and_its_slots() -> None:
    """Process flow: "pe_hostfile: ... containing each involved host, the queues the job was
    spooled into and the number of reserved slots (tasks) per host"; submit(1)'s NHOSTS and
    NQUEUES count them, NSLOTS the slots on all of them."""
    config = a_config(cpus=2, cpu_ids=[2, 3], pe="mpi", pe_slots=5,
                      pe_hosts=[{"node": "n2", "cpu_ids": [0, 1]}, {"node": "n3", "cpu_ids": [7]}])
    assert pe_hostfile(config) == "n1 2 short@n1 2,3\nn2 2 short@n2 0,1\nn3 1 short@n3 7\n"
    facts = build_environment(config, "/t")
    assert (facts["NSLOTS"], facts["NHOSTS"], facts["NQUEUES"]) == ("5", "3", "3")
