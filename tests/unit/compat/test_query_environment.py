"""The query commands' input environment variables: squeue's SQUEUE_*, sinfo's SINFO_* and
scancel's SCANCEL_*, as their man pages (ENVIRONMENT VARIABLES) pair them with options. Each sets
its option as the option table reads it (a flag's variable sets the flag whatever its value),
and the command line wins. Run through each command's main() against a fake cluster."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.unit.compat.slurm_fixtures import job

from drover.compat.optiontable import Arity
from drover.compat.slurm import scancel, sinfo, squeue
from drover.compat.slurm.common import current_user, environment_defaults
from drover.protocol.api import ActionResult, AttemptInfo, JobInfo, NodeInfo, QueueInfo, TaskInfo

ME = current_user()
OTHER = "nobody" if ME != "nobody" else "root"
NOW = time.time()

# The man pages' variables and the option each stands for (squeue(1), sinfo(1), scancel(1),
# ENVIRONMENT VARIABLES; Slurm 23.11). sinfo(1) spells SINFO_FUTURE as SCONTROL_FUTURE; sinfo's
# source reads SINFO_FUTURE. squeue's source also reads SQUEUE_SIB, as --sib.
MAN_PAGES: dict[Any, dict[str, str]] = {
    squeue: {"SQUEUE_ACCOUNT": "--accounts", "SQUEUE_ALL": "--all", "SQUEUE_ARRAY": "--array",
             "SQUEUE_NAMES": "--name", "SQUEUE_FEDERATION": "--federation", "SQUEUE_LICENSES": "--licenses",
             "SQUEUE_LOCAL": "--local", "SQUEUE_PARTITION": "--partitions", "SQUEUE_PRIORITY": "--priority",
             "SQUEUE_QOS": "--qos", "SQUEUE_SIBLING": "--sibling", "SQUEUE_SIB": "--sib", "SQUEUE_SORT": "--sort",
             "SQUEUE_STATES": "--states", "SQUEUE_USERS": "--users"},
    sinfo: {"SINFO_ALL": "--all", "SINFO_FEDERATION": "--federation", "SINFO_FUTURE": "--future",
            "SINFO_LOCAL": "--local", "SINFO_PARTITION": "--partition", "SINFO_SORT": "--sort"},
    scancel: {"SCANCEL_ACCOUNT": "--account", "SCANCEL_BATCH": "--batch", "SCANCEL_CTLD": "--ctld",
              "SCANCEL_CRON": "--cron", "SCANCEL_FULL": "--full", "SCANCEL_HURRY": "--hurry",
              "SCANCEL_INTERACTIVE": "--interactive", "SCANCEL_NAME": "--name", "SCANCEL_PARTITION": "--partition",
              "SCANCEL_QOS": "--qos", "SCANCEL_STATE": "--state", "SCANCEL_USER": "--user",
              "SCANCEL_VERBOSE": "--verbose", "SCANCEL_WCKEY": "--wckey"},
}


def running(job_id: int, **fields: Any) -> JobInfo:
    attempt = AttemptInfo(number=1, node="n1", cpu_ids=[0], dispatched_at=NOW - 61, started_at=NOW - 60,
                          ended_at=None, exit_code=None, signal=None, usage=None)
    return job(id=job_id, submitted_at=NOW - 100, task_counts={"running": 1},
               tasks=[TaskInfo(index=0, state="running", state_since=NOW - 60, attempts=[attempt])], **fields)


def pending(job_id: int, **fields: Any) -> JobInfo:
    return job(id=job_id, state="pending", submitted_at=NOW - 100, task_counts={"pending": 1},
               tasks=[TaskInfo(index=0, state="pending", state_since=NOW - 100)], **fields)


JOBS = [running(1, name="train", owner=ME, priority=5), running(2, name="eval", owner=OTHER, queue="other"),
        pending(3, name="train", owner=ME, priority=9),
        job(id=4, name="sweep", owner=ME, state="pending", submitted_at=NOW - 100, array="1-3",
            task_counts={"pending": 3}, tasks=[])]
NODES = [NodeInfo(name=name, state="up", cpus=2, memory_mib=1000, cpus_used=0, memory_mib_used=0, running=0,
                  last_seen=NOW) for name in ("n1", "n2", "n3")]


class FakeCluster:
    """Stands in for the Client class: the jobs above, three nodes; what is cancelled is kept
    in the class, which the commands instantiate."""

    cancelled: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> FakeCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def jobs(self, include_ended: bool = False, user: str | None = None, **_: Any) -> list[JobInfo]:
        return [j for j in JOBS if (include_ended or j.ended_at is None) and user in (None, j.owner)]

    def job(self, job_id: int) -> JobInfo:
        return next(j for j in JOBS if j.id == job_id)

    def nodes(self) -> list[NodeInfo]:
        return NODES

    def queues(self) -> list[QueueInfo]:
        """`default` and the queues the jobs name, each on every node."""
        names = sorted({"default", *(j.queue for j in JOBS)})
        return [QueueInfo(name=name, state="open", defined_in="drover.toml", node_names=[n.name for n in NODES])
                for name in names]

    def cancel(self, refs: list[str]) -> list[ActionResult]:
        self.cancelled += refs
        return [ActionResult(ref=ref, ok=True, message="") for ref in refs]


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeCluster]]:
    monkeypatch.setattr("drover.client.client.Client", FakeCluster)
    monkeypatch.setattr(FakeCluster, "cancelled", [])
    for name in list(os.environ):
        if name.startswith(("SQUEUE_", "SINFO_", "SCANCEL_", "SLURM_", "DROVER_COMPAT")):
            monkeypatch.delenv(name)
    yield FakeCluster


def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: Any, argv: list[str],
        **environ: str) -> tuple[int, list[str], str]:
    """The command's exit status, its output lines and its stderr, with `environ` set."""
    with monkeypatch.context() as scoped:
        for name, value in environ.items():
            scoped.setenv(name, value)
        status = command.main(argv)
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


@pytest.mark.parametrize("command", list(MAN_PAGES), ids=lambda command: command.__name__.rsplit(".", 1)[-1])
def test_each_variable_of_the_man_page_sets_its_option_as_the_table_reads_it(command: Any) -> None:
    by_name = {name: option for option in command.OPTIONS for name in option.names}
    assert set(MAN_PAGES[command]) <= set(command.ENVIRONMENT) | set(getattr(command, "YES_NO", {}))
    for variable, name in MAN_PAGES[command].items():
        option = by_name[name]
        if variable in getattr(command, "YES_NO", {}):
            assert command.YES_NO[variable] == option.key, variable
            continue
        assert command.ENVIRONMENT[variable] == option.key, variable
        # A flag's variable sets the flag whatever its value, even empty; a value's is the value.
        value = "" if option.arity is Arity.NONE else "v1"
        assert environment_defaults(command.OPTIONS, command.ENVIRONMENT, {variable: value}) == [
            (option, None if option.arity is Arity.NONE else "v1")], variable


def test_squeue_states_users_sort_names_and_partitions(cluster: type[FakeCluster], capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def ids(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str,
            **environ: str) -> list[str]:
        status, out, err = run(capsys, monkeypatch, squeue, ["-h", "-o", "%i", *argv], **environ)
        assert (status, err) == (0, ""), err
        return out

    assert ids(capsys, monkeypatch, "-S", "i") == ["1", "2", "3", "4_[1-3]"]
    assert ids(capsys, monkeypatch, "-S", "i", SQUEUE_STATES="PD") == ["3", "4_[1-3]"]
    assert ids(capsys, monkeypatch, "-S", "i", "-t", "R", SQUEUE_STATES="PD") == ["1", "2"]
    assert ids(capsys, monkeypatch, "-S", "i", SQUEUE_USERS=OTHER) == ["2"]
    assert ids(capsys, monkeypatch, "-S", "i", "-u", ME, SQUEUE_USERS=OTHER) == ["1", "3", "4_[1-3]"]
    assert ids(capsys, monkeypatch, "-S", "i", "--me", SQUEUE_USERS=OTHER) == ["1", "3", "4_[1-3]"]
    assert ids(capsys, monkeypatch, SQUEUE_SORT="-i") == ["4_[1-3]", "3", "2", "1"]
    assert ids(capsys, monkeypatch, "-S", "i", SQUEUE_SORT="-i") == ["1", "2", "3", "4_[1-3]"]
    assert ids(capsys, monkeypatch, "-S", "i", SQUEUE_NAMES="train") == ["1", "3"]
    assert ids(capsys, monkeypatch, "-S", "i", "-n", "eval", SQUEUE_NAMES="train") == ["2"]
    assert ids(capsys, monkeypatch, "-S", "i", SQUEUE_PARTITION="other") == ["2"]
    assert ids(capsys, monkeypatch, "-S", "i", "-p", "default", SQUEUE_PARTITION="other") == ["1", "3", "4_[1-3]"]
    # SQUEUE_ARRAY is a flag: any value, even an empty one, is -r.
    assert ids(capsys, monkeypatch, "-S", "i", "-t", "PD", SQUEUE_ARRAY="") == ["3", "4_1", "4_2", "4_3"]


def test_a_bad_squeue_value_from_the_environment_is_refused_unless_the_command_line_overrides_it(
        cluster: type[FakeCluster], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = run(capsys, monkeypatch, squeue, ["-h"], SQUEUE_STATES="bogus")
    assert status == 1 and out == [] and err.startswith("squeue: error: Invalid job state specified: bogus\n")
    status, out, err = run(capsys, monkeypatch, squeue, ["-h", "-o", "%i", "-t", "R", "-S", "i"],
                           SQUEUE_STATES="bogus")
    assert (status, out, err) == (0, ["1", "2"], "")
    status, out, err = run(capsys, monkeypatch, squeue, ["-h"], SQUEUE_SORT="!")
    assert status == 1 and "Invalid sort specification" in err


def test_sinfo_partition_sort_and_format(cluster: type[FakeCluster], capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def sinfo_lines(*argv: str, **environ: str) -> list[str]:
        status, out, err = run(capsys, monkeypatch, sinfo, ["-h", *argv], **environ)
        assert (status, err) == (0, ""), err
        return out

    assert sinfo_lines("-o", "%P") == ["default*", "other"]
    assert sinfo_lines("-o", "%P", SINFO_PARTITION="other") == ["other"]
    assert sinfo_lines("-o", "%P", "-p", "default", SINFO_PARTITION="other") == ["default*"]
    assert sinfo_lines("-N", "-p", "default", "-o", "%N", SINFO_SORT="-N") == ["n3", "n2", "n1"]
    assert sinfo_lines("-N", "-p", "default", "-o", "%N", "-S", "N", SINFO_SORT="-N") == ["n1", "n2", "n3"]
    assert sinfo_lines(SINFO_FORMAT="%P|%D") == ["default*|3", "other|3"]
    assert sinfo_lines("-o", "%P", SINFO_FORMAT="%P|%D") == ["default*", "other"]
    assert sinfo_lines("-o", "%P", SINFO_ALL="", SINFO_FUTURE="") == ["default*", "other"]  # change nothing


def test_sinfo_refuses_sinfo_all_with_sinfo_partition_as_sinfo_does(
        cluster: type[FakeCluster], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = run(capsys, monkeypatch, sinfo, ["-p", "default"], SINFO_ALL="1", SINFO_PARTITION="other")
    assert (status, out) == (1, [])
    assert err == ("sinfo: error: Conflicting options, SINFO_ALL and SINFO_PARTITION, specified. "
                   "Please choose one or the other.\n")


def test_scancel_filters_from_the_environment_and_the_command_line_wins(
        cluster: type[FakeCluster], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def cancelled(*argv: str, **environ: str) -> list[str]:
        cluster.cancelled.clear()
        status, out, err = run(capsys, monkeypatch, scancel, list(argv), **environ)
        assert (status, out, err) == (0, [], ""), err
        return sorted(cluster.cancelled)

    assert cancelled(SCANCEL_NAME="train") == ["1", "3"]
    assert cancelled("-n", "eval", SCANCEL_NAME="train") == ["2"]
    assert cancelled(SCANCEL_USER=OTHER) == ["2"]
    assert cancelled("-u", ME, SCANCEL_USER=OTHER) == ["1", "3", "4"]
    assert cancelled("--me", SCANCEL_NAME="train") == ["1", "3"]
    assert cancelled(SCANCEL_STATE="PENDING", SCANCEL_USER=ME) == ["3", "4.1", "4.2", "4.3"]
    assert cancelled("-t", "RUNNING", SCANCEL_STATE="PENDING") == ["1", "2"]
    assert cancelled(SCANCEL_PARTITION="other") == ["2"]
    assert cancelled("-p", "default", "-n", "train", SCANCEL_PARTITION="other") == ["1", "3"]
    # Among the jobs named, only those that match.
    assert cancelled("1", "2", "3", SCANCEL_NAME="train") == ["1", "3"]
    # Filters that Drover has nothing for: no job matches, as none would on Slurm.
    assert cancelled(SCANCEL_QOS="high") == []


def test_scancels_true_or_false_variables(cluster: type[FakeCluster], capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """scancel reads SCANCEL_BATCH, _FULL, _INTERACTIVE and _VERBOSE as `true`/`T` or
    `false`/`F`, in any case; it reports any other value and leaves the flag unset."""
    batch_warning = "scancel: warning: --batch: the signal goes to all of the job's processes, the batch shell among them\n"
    for value in ("true", "T", "t", "TRUE"):
        assert run(capsys, monkeypatch, scancel, ["1"], SCANCEL_BATCH=value) == (0, [], batch_warning), value
    for value in ("false", "F", "f"):
        assert run(capsys, monkeypatch, scancel, ["1"], SCANCEL_BATCH=value) == (0, [], ""), value
    assert run(capsys, monkeypatch, scancel, ["1"], SCANCEL_BATCH="yes") == (
        0, [], "scancel: error: Unrecognized SCANCEL_BATCH value: yes\n")
    assert run(capsys, monkeypatch, scancel, ["1", "-b"], SCANCEL_BATCH="false") == (0, [], batch_warning)
    status, out, err = run(capsys, monkeypatch, scancel, ["1"], SCANCEL_INTERACTIVE="T")
    assert status == 1 and err.startswith("scancel: error: --interactive is not supported by Drover")
    assert run(capsys, monkeypatch, scancel, ["1"], SCANCEL_INTERACTIVE="F") == (0, [], "")
    status, out, err = run(capsys, monkeypatch, scancel, ["1"], SCANCEL_BATCH="true", DROVER_COMPAT_STRICT="1")
    assert status == 1 and "--batch is only approximated by Drover" in err
