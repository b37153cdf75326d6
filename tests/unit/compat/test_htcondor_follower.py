"""The job event log's follower on plain data: Drover's events of a cluster, in the order the
controller records them (the staged cleanup's steps among them), become HTCondor's events in
each proc's log, in the order HTCondor's shadow writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from drover.compat.htcondor import eventlog
from drover.compat.htcondor.follow import Follower, ProcState
from drover.protocol.api import AttemptInfo, AttemptSamples, JobSamples, SampleInfo, TaskInfo, Usage


@dataclass
class Event:
    seq: int
    kind: str
    index: int | None = None
    attempt: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    time: float = 1795800000.0
    job_id: int = 12


class FakeClient:
    def __init__(self, files: dict[str, bytes], usage: Usage | None = None) -> None:
        self.files = files
        self.usage = usage if usage is not None else Usage(user_cpu_s=61.0, sys_cpu_s=2.0, max_rss_kib=4096)

    def job(self, job_id: int) -> SimpleNamespace:
        """What the follower reads of the job: each task's last attempt's usage."""
        usage = self.usage
        attempt = AttemptInfo(number=1, node="n1", cpu_ids=[0], dispatched_at=1.0, started_at=2.0, ended_at=3.0,
                              exit_code=0, usage=usage)
        return SimpleNamespace(id=job_id, tasks=[TaskInfo(index=i, state="completed", state_since=3.0,
                                                          attempts=[attempt]) for i in range(2)])

    def staged_file(self, job_id: int, task: int, attempt: int, name: str) -> bytes | None:
        return self.files.get(name)


def follow(tmp_path: Path, events: list[Event], procs: int = 1, sandbox: bool = False,
           files: dict[str, bytes] | None = None) -> tuple[Follower, list[list[tuple[int, str]]]]:
    logs = {i: str(tmp_path / f"p{i}.log") for i in range(procs)}
    follower = Follower(cluster=12, owner="ann", logs=logs, iwds={i: str(tmp_path) for i in range(procs)},
                        sandbox=sandbox, staged_in=False, request=eventlog.Request(1, 64),
                        procs={i: ProcState() for i in range(procs)})
    client = FakeClient(files or {})
    for event in events:
        follower.handle(client, event)
    out = []
    for i in range(procs):
        path = Path(logs[i])
        parsed, rest = eventlog.read_events(path.read_text()) if path.is_file() else ([], "")
        assert rest == ""
        out.append([(e.number, e.text.split("\n", 1)[0]) for e in parsed])
    return follower, out


def run_to_end(index: int, exit_code: int | None = 0, signal: int | None = None, end: str = "completed",
               files: list[str] | None = None) -> list[Event]:
    events = [Event(1, "dispatched", index, 1, {"node": "n1"}), Event(2, "started", index, 1),
              Event(3, "exited", index, 1, {"exit_code": exit_code, "signal": signal, "failure": None})]
    if files is not None:
        events.append(Event(4, "staged_out", index, 1, {"files": files}))
    events += [Event(5, "cleanup_step", index, 1, {"step": step}) for step in ("exit_hook", "stage_out", "record",
                                                                               "report")]
    return [*events, Event(9, end, index, 1)]


def test_a_proc_that_runs_and_exits(tmp_path: Path) -> None:
    follower, (log,) = follow(tmp_path, [*run_to_end(0, exit_code=3, end="failed"), Event(10, "job_ended")])
    assert [number for number, _ in log] == [eventlog.EXECUTE, eventlog.IMAGE_SIZE, eventlog.TERMINATED]
    assert log[1][1] == "Image size of job updated: 4096"
    text = (tmp_path / "p0.log").read_text()
    assert "\t(1) Normal termination (return value 3)\n\t\tUsr 0 00:01:01, Sys 0 00:00:02" in text
    assert follower.done


def test_the_output_transfer_comes_before_the_termination_and_brings_files_back(tmp_path: Path) -> None:
    _, (log,) = follow(tmp_path, run_to_end(0, files=["result.txt", "../escape.txt"]), sandbox=True,
                       files={"result.txt": b"42\n", "../escape.txt": b"no\n"})
    assert not (tmp_path.parent / "escape.txt").exists()
    assert log == [(eventlog.EXECUTE, log[0][1]), (eventlog.FILE_TRANSFER, eventlog.TRANSFER_OUTPUT_STARTED),
                   (eventlog.FILE_TRANSFER, eventlog.TRANSFER_OUTPUT_FINISHED),
                   (eventlog.IMAGE_SIZE, log[3][1]), (eventlog.TERMINATED, "Job terminated.")]
    assert (tmp_path / "result.txt").read_text() == "42\n"


def test_a_signal_a_hold_and_release_of_the_whole_cluster_and_a_removal(tmp_path: Path) -> None:
    events = [Event(1, "held", None, None, {"tasks": 2}), Event(2, "released", None, None, {"tasks": 2}),
              *run_to_end(0, exit_code=None, signal=9, end="failed"),
              Event(20, "cancel_requested", 1, 1), Event(21, "cancelled", 1, 1), Event(22, "job_ended")]
    _, (first, second) = follow(tmp_path, events, procs=2)
    assert [n for n, _ in first] == [eventlog.HELD, eventlog.RELEASED, eventlog.EXECUTE, eventlog.IMAGE_SIZE,
                                     eventlog.TERMINATED]
    assert "(0) Abnormal termination (signal 9)" in (tmp_path / "p0.log").read_text()
    assert second == [(eventlog.HELD, "Job was held."), (eventlog.RELEASED, "Job was released."),
                      (eventlog.ABORTED, "Job was aborted.")]
    assert "via condor_rm (by user ann)" in (tmp_path / "p1.log").read_text()


def test_a_lost_node_a_requeue_and_a_job_that_could_not_start(tmp_path: Path) -> None:
    events = [Event(1, "dispatched", 0, 1, {"node": "n1"}), Event(2, "started", 0, 1),
              Event(3, "node_failed", 0, 1), Event(4, "requeued", 0, 1),
              Event(5, "dispatched", 0, 2, {"node": "n2"}), Event(6, "exited", 0, 2,
                                                                  {"exit_code": None, "signal": None,
                                                                   "failure": "cannot execute"}),
              Event(7, "held_in_error", 0, 2), Event(8, "released", 0, None),
              Event(9, "requeued", 0, 2)]
    _, (log,) = follow(tmp_path, events)
    assert [n for n, _ in log] == [eventlog.EXECUTE, eventlog.SHADOW_EXCEPTION, eventlog.HELD, eventlog.RELEASED,
                                   eventlog.EVICTED]
    text = (tmp_path / "p0.log").read_text()
    assert "Job lost its node n1" in text and "Error from slot1@n2: cannot execute\n\tCode 6 Subcode 0" in text


def test_a_log_that_cannot_be_written_is_given_up_without_stopping_the_rest(tmp_path: Path) -> None:
    (tmp_path / "p0.log").mkdir()  # not a file the follower can append to
    follower, (_, second) = follow(tmp_path, [*run_to_end(0), *run_to_end(1)], procs=2)
    assert follower.refused == {str(tmp_path / "p0.log")}
    assert [n for n, _ in second] == [eventlog.EXECUTE, eventlog.IMAGE_SIZE, eventlog.TERMINATED]


class SampledClient(FakeClient):
    """A running proc whose memory grows, then stays, as its node samples it."""

    def __init__(self) -> None:
        super().__init__({})
        self.rss_mib = [8, 40, 40]

    def samples(self, job_id: int) -> JobSamples:
        rss = self.rss_mib.pop(0) << 20
        latest = SampleInfo(at=1795800100.0, memory_bytes=rss, rss_bytes=rss, cpu=1.0, processes=1, threads=1)
        return JobSamples(job_id=job_id, attempts=[AttemptSamples(task=1, attempt=1, node="n1", latest=latest,
                                                                  peak_bytes=rss, memory_average_bytes=rss,
                                                                  cpu_average=1.0)])


def test_a_running_procs_growing_memory_is_a_006_each_time_it_changes_at_most_once_an_interval(
        tmp_path: Path) -> None:
    follower, _ = follow(tmp_path, [Event(1, "dispatched", 1, 1, {"node": "n1"}), Event(2, "started", 1, 1)],
                         procs=2)
    assert follower.sample_due is not None  # a proc runs: its memory is looked at in image_size_s
    assert follower.wait_s() <= follower.image_size_s
    client = SampledClient()
    for _ in range(3):
        follower.sample(client)
    parsed, _ = eventlog.read_events((tmp_path / "p1.log").read_text())
    sizes = [e.text.split("\n")[0] for e in parsed if e.number == eventlog.IMAGE_SIZE]
    assert sizes == ["Image size of job updated: 8192", "Image size of job updated: 40960"]  # the same again: none
    assert "\t40  -  MemoryUsage of job (MB)\n\t40960  -  ResidentSetSize of job (KB)" in (tmp_path / "p1.log").read_text()
    assert not (tmp_path / "p0.log").exists()  # proc 0 does not run
    follower.handle(client, Event(3, "cancelled", 1, 1))
    follower.sample(client)
    assert follower.sample_due is None  # nothing runs: no more looks


NOT_KNOWN = Usage(user_cpu_s=1.0, sys_cpu_s=0.0, max_rss_kib=0)  # accounting.md, Max RSS


def test_an_ended_proc_whose_max_rss_is_not_known_says_the_peak_its_samples_showed_not_0(tmp_path: Path) -> None:
    follower, _ = follow(tmp_path, [Event(1, "dispatched", 1, 1, {"node": "n1"}), Event(2, "started", 1, 1)],
                         procs=2)
    client = SampledClient()
    client.usage = NOT_KNOWN
    follower.sample(client)
    follower.sample(client)  # 8 MiB, then 40 MiB
    for event in run_to_end(1)[2:]:
        follower.handle(client, event)
    parsed, _ = eventlog.read_events((tmp_path / "p1.log").read_text())
    sizes = [e.text.split("\n")[0] for e in parsed if e.number == eventlog.IMAGE_SIZE]
    assert sizes == ["Image size of job updated: 8192", "Image size of job updated: 40960",
                     "Image size of job updated: 40960"]
    (ended,) = [e.text for e in parsed if e.number == eventlog.TERMINATED]
    assert [line.split() for line in ended.split("\n") if "Memory (MB)" in line] == [
        ["Memory", "(MB)", ":", "40", "64", "64"]]


def test_an_ended_proc_whose_max_rss_is_not_known_takes_its_cgroups_peak_or_says_no_size(tmp_path: Path) -> None:
    measured = Usage(user_cpu_s=1.0, sys_cpu_s=0.0, max_rss_kib=0, cgroup_peak_memory_bytes=3 << 20)
    for usage, sizes, memory in ((measured, ["Image size of job updated: 3072"], ["3"]), (NOT_KNOWN, [], [])):
        logs = {0: str(tmp_path / "p0.log")}
        (tmp_path / "p0.log").unlink(missing_ok=True)
        follower = Follower(cluster=12, owner="ann", logs=logs, iwds={0: str(tmp_path)}, sandbox=False,
                            staged_in=False, request=eventlog.Request(1, 64), procs={0: ProcState()})
        client = FakeClient({}, usage)
        for event in run_to_end(0):
            follower.handle(client, event)
        parsed, _ = eventlog.read_events((tmp_path / "p0.log").read_text())
        assert [e.text.split("\n")[0] for e in parsed if e.number == eventlog.IMAGE_SIZE] == sizes
        (ended,) = [e.text for e in parsed if e.number == eventlog.TERMINATED]
        (row,) = [line.split() for line in ended.split("\n") if "Memory (MB)" in line]
        assert row == ["Memory", "(MB)", ":", *memory, "64", "64"]  # not known: no usage, as formatUsageAd
