"""PBS's value syntaxes on plain data: sizes, walltimes, select and nodes chunks, -J and -t
arrays, -W depend= lists, -a dates, job ids; and qsub's options made into a Drover job."""

from __future__ import annotations

from datetime import datetime

import pytest

from drover.compat.pbs.common import parse_ref
from drover.compat.pbs.submission import build
from drover.compat.pbs.submit_options import QSUB_OPTIONS
from drover.compat.pbs.syntax import PbsUsageError, directive_words, parse
from drover.compat.pbs.values import (
    Chunk,
    Dependency,
    PbsValueError,
    array_range,
    date_time,
    depend,
    duration_s,
    nodes,
    select,
    size_mib,
    torque_array,
)
from drover.compat.submit_context import Context
from drover.core.errors import BadRequest


def test_sizes_in_pbs_units() -> None:
    assert [size_mib(text) for text in ("1gb", "512MB", "1048576kb", "1024", "2GW", "1tb")] == [
        1024, 512, 1024, 1, 16384, 1024 * 1024]
    for bad in ("1g", "ten", "1.5gb", "-1gb", ""):
        with pytest.raises(PbsValueError, match="Illegal attribute or resource value"):
            size_mib(bad)


def test_walltimes() -> None:
    assert [duration_s(text) for text in ("01:00:00", "10:00", "90", "1:2:3", "00:00:01.5")] == [3600, 600, 90, 3723, 2]
    for bad in ("1:2:3:4", "ten", "1.5:00", ""):
        with pytest.raises(PbsValueError):
            duration_s(bad)


def test_select_chunks() -> None:
    assert select("2:ncpus=4:mem=2gb:ngpus=1") == [Chunk(2, 4, 2048, 1)]
    assert select("ncpus=8") == [Chunk(1, 8)]
    assert select("1:ncpus=2:mpiprocs=2:host=n1+3:ncpus=2") == [Chunk(1, 2, None, 0, (("host", "n1"),)), Chunk(3, 2)]
    for bad in ("0:ncpus=1", "1:ncpus=0", "1:ncpus", "1:ncpus=x"):
        with pytest.raises(PbsValueError):
            select(bad)


def test_torque_nodes() -> None:
    assert nodes("2:ppn=4") == [Chunk(2, 4)]
    assert nodes("1:ppn=2:gpus=1:bigmem") == [Chunk(1, 2, None, 1, (("property", "bigmem"),))]
    assert nodes("n07:ppn=2") == [Chunk(1, 2, None, 0, (("host", "n07"),))]
    with pytest.raises(PbsValueError):
        nodes("1:ppn=0")


def test_arrays() -> None:
    assert array_range("1-10") == (1, 10, 1) and array_range("0-20:5") == (0, 20, 5)
    for bad in ("5", "5-2", "3-3", "1-10:0", "a-b"):
        with pytest.raises(PbsValueError, match="illegal -J value"):
            array_range(bad)
    assert torque_array("1-5,7") == ("1-5,7", None) and torque_array("0-99%10") == ("0-99", 10)
    for bad in ("5-1", "1-5%0", "x"):
        with pytest.raises(PbsValueError, match="illegal -t value"):
            torque_array(bad)


def test_dependencies() -> None:
    assert depend("afterok:12.server:13,afterany:14[2].server") == [
        Dependency("afterok", 12), Dependency("afterok", 13), Dependency("afterany", 14, 2)]
    assert depend("afternotok:7") == [Dependency("afternotok", 7)]
    with pytest.raises(PbsValueError, match="Drover has no beforeok dependencies"):
        depend("beforeok:12")
    for bad in ("afterok", "afterok:", "sometime:12", "afterok:x"):
        with pytest.raises(PbsValueError, match="illegal -W value"):
            depend(bad)


def test_dates_are_the_next_such_moment() -> None:
    now = datetime(2026, 11, 28, 12, 0).timestamp()
    assert date_time("1330", now) == datetime(2026, 11, 28, 13, 30).timestamp()
    assert date_time("1130", now) == datetime(2026, 11, 29, 11, 30).timestamp()  # past today: tomorrow
    assert date_time("202701020304.05", now) == datetime(2027, 1, 2, 3, 4, 5).timestamp()
    with pytest.raises(PbsValueError):
        date_time("2561", now)


def test_job_ids_as_pbs_commands_take_them() -> None:
    assert [parse_ref(text) for text in ("12", "12.server", "12[]", "12[].srv.example.com", "12[3].server")] == [
        (12, None), (12, None), (12, None), (12, None), (12, 3)]
    assert parse_ref("twelve") is None and parse_ref("12[x]") is None


def test_directives_stop_at_the_first_command() -> None:
    script = '#!/bin/bash\n#PBS -N "a b"\n# comment\n\n#PBS -l walltime=1:00\necho hi\n#PBS -q late\n'
    assert directive_words(script, "#PBS") == ["-N", "a b", "-l", "walltime=1:00"]
    assert directive_words(script, "") == []


CTX = Context(cwd="/work", home="/home/u", user="u", host="login1.example.com",
              environ={"PATH": "/bin", "HOME": "/home/u", "SECRET": "s", "KEEP": "k"}, now=0.0,
              is_dir=lambda path: path == "/work/logs")


def job_of(*argv: str, script: str = "true\n", warnings: list[str] | None = None) -> dict[str, object]:
    given, _ = parse("qsub", list(argv), QSUB_OPTIONS, permute=False)
    return dict(build(given, script, "run.sh", [], CTX, (warnings if warnings is not None else []).append).job)


def test_qsub_defaults_are_pbs() -> None:
    job = job_of()
    assert (job["name"], job["workdir"], job["output"], job["error"]) == (
        "run.sh", "/home/u", "/work/run.sh.o%j", "/work/run.sh.e%j")
    environment = job["environment"]
    assert isinstance(environment, dict) and "SECRET" not in environment
    assert environment["PBS_O_WORKDIR"] == "/work" and environment["PBS_O_HOST"] == "login1.example.com"


def test_qsub_requests() -> None:
    job = job_of("-l", "select=1:ncpus=4:mem=2gb:ngpus=1", "-l", "walltime=00:30:00", "-N", "x", "-j", "oe",
                 "-o", "logs", "-q", "workq", "-p", "-5", "-r", "n", "-h", "-v", "KEEP,NEW=1", "-J", "1-9:2")
    assert (job["cpus"], job["memory_mib"], job["gres"], job["time_limit_s"]) == (4, 2048, ["gpu:1"], 1800)
    assert (job["output"], job["error"], job["queue"], job["priority"]) == ("/work/logs/x.o%j.%a", None, "default", -5)
    assert (job["rerunnable"], job["hold"], job["array"]) == (False, True, "1-9:2")
    environment = job["environment"]
    assert isinstance(environment, dict) and (environment["KEEP"], environment["NEW"]) == ("k", "1")


def test_chunks_on_several_nodes_are_the_built_in_parallel_environment() -> None:
    job = job_of("-l", "select=3:ncpus=2:mem=1gb")
    assert (job["cpus"], job["pe"], job["pe_slots"], job["pe_per_node"], job["memory_mib"]) == (1, "slurm", "6", 2, 3072)
    torque = job_of("-l", "nodes=2:ppn=4", "-t", "1-3%2", "-j", "eo")
    assert (torque["pe_slots"], torque["array"], torque["output"], torque["error"]) == (
        "8", "1-3%2", "/work/run.sh.e%j-%a", None)


def test_qsub_dependencies_and_refusals() -> None:
    job = job_of("-W", "depend=afterok:12.server:13[4]")
    assert job["dependencies"] == [{"kind": "afterok", "job": 12, "task": None},
                                   {"kind": "afterok", "job": 13, "task": 4}]
    with pytest.raises(BadRequest, match="-u is not supported by Drover"):
        job_of("-u", "other")
    with pytest.raises(BadRequest, match="chunks of different sizes"):
        job_of("-l", "select=1:ncpus=2+1:ncpus=4")
    with pytest.raises(PbsUsageError, match="illegal -j value"):
        job_of("-j", "x")
    with pytest.raises(PbsUsageError, match="qsub: invalid option -- 'Y'"):
        job_of("-Y")
    warnings: list[str] = []
    job_of("-A", "acct", "-l", "cput=10:00", warnings=warnings)
    assert [w.split(":")[0] for w in warnings] == ["-A acct", "-l cput"]
