"""A submit description file and HTCondor's commands, installed with `drover compat install`,
against a real cluster: condor_submit's clusters and their procs, condor_q's views and
constraints, condor_history, condor_rm/hold/release by cluster, proc, user and constraint,
condor_wait, condor_status, a sandbox whose files are staged in and brought back; and, on the
shared system cluster, the job event log written with the submitter's own rights only."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.compat_install import install, run
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.wait import wait_until

from drover.compat.htcondor import eventlog
from drover.config import pointer_dirs

GRACE = {"DROVER_HTCONDOR_FOLLOW_GRACE_S": "3"}

SWEEP = """\
# three procs, one per item
executable = /bin/sh
arguments = "-c 'echo $(Item) $0 $(Process); exit $(ItemIndex)' $(Cluster)"
output = sweep.$(Cluster).$(Process).out
error = sweep.$(Process).err
log = sweep.log
request_cpus = 1
request_memory = 32M
batch_name = sweep
+Project = "demo"
queue Item in (red, green, blue)
"""


def condor(cluster: LocalCluster, bin_dir: Path, *args: str, stdin: str | None = None) -> str:
    done = run(cluster, bin_dir, *args, stdin=stdin, env=GRACE)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def submitted(output: str) -> int:
    match = re.search(r"(\d+) job\(s\) submitted to cluster (\d+)\.\n$", output)
    assert match is not None, output
    return int(match.group(2))


def test_a_cluster_of_procs_runs_and_condor_q_and_condor_history_show_it(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    (cluster.workdir / "sweep.sub").write_text(SWEEP)
    out = condor(cluster, bin_dir, "condor_submit", "sweep.sub")
    assert out.startswith("Submitting job(s)...\n3 job(s) submitted to cluster ")
    job = submitted(out)
    waited = condor(cluster, bin_dir, "condor_wait", "-wait", "60", "sweep.log")
    assert waited == "All jobs done.\n"
    for proc, item in enumerate(("red", "green", "blue")):
        assert (cluster.workdir / f"sweep.{job}.{proc}.out").read_text() == f"{item} {job} {proc}\n"
    info = cluster.client().job(job)
    assert (info.array, info.name, info.memory_mib) == ("0-2", "sweep", 32)
    history = condor(cluster, bin_dir, "condor_history", str(job), "-af:j", "ExitCode", "Project", "JobStatus")
    assert history.splitlines() == [f"{job}.2 2 demo 4", f"{job}.1 1 demo 4", f"{job}.0 0 demo 4"]
    constrained = condor(cluster, bin_dir, "condor_history", "-constraint", f"ClusterId == {job} && ExitCode > 0",
                         "-format", "%d.", "ClusterId", "-format", "%d\\n", "ProcId")
    assert constrained == f"{job}.2\n{job}.1\n"
    ads = json.loads(condor(cluster, bin_dir, "condor_history", f"{job}.1", "-json"))
    assert [(ad["ClusterId"], ad["ProcId"], ad["Args"], ad["JobBatchName"]) for ad in ads] == [
        (job, 1, f"-c echo green $0 1; exit 1 {job}", "sweep")]
    assert condor(cluster, bin_dir, "condor_q", "-af", "ClusterId") == ""  # ended: gone from the queue
    log = (cluster.workdir / "sweep.log").read_text()
    assert log.count("Job terminated.") == 3 and log.count("\n...\n") == 12


def test_hold_release_and_remove_by_cluster_proc_user_and_constraint(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    me = pwd.getpwuid(os.getuid()).pw_name
    job = submitted(condor(cluster, bin_dir, "condor_submit", "-", stdin="executable = /bin/sleep\narguments = 300\n"
                           "hold = true\nlog = life.log\nqueue 2\n"))
    table = condor(cluster, bin_dir, "condor_q")
    assert f"\n{me:<5} ID: {job}" in table and f" {job}.0-1\n" in table
    assert "Total for query: 2 jobs; 0 completed, 0 removed, 0 idle, 0 running, 2 held, 0 suspended" in table
    nobatch = condor(cluster, bin_dir, "condor_q", "-nobatch").splitlines()
    assert nobatch[3].split()[:2] == ["ID", "OWNER"]
    assert [line.split()[0] for line in nobatch[4:6]] == [f"{job}.0", f"{job}.1"]
    assert all(line.split()[5] == "H" for line in nobatch[4:6])
    held = condor(cluster, bin_dir, "condor_q", "-hold").splitlines()
    assert held[3].split() == ["ID", "OWNER", "HELD_SINCE", "HOLD_REASON"]
    assert held[4].endswith(" submitted on hold at user's request")
    assert condor(cluster, bin_dir, "condor_q", f"{job}.0", "-af", "HoldReasonCode") == "15\n"
    assert condor(cluster, bin_dir, "condor_release", f"{job}.1") == f"Job {job}.1 released\n"
    wait_until(lambda: condor(cluster, bin_dir, "condor_q", f"{job}.1", "-af", "JobStatus") == "2\n",
               describe="the released proc to run")
    assert condor(cluster, bin_dir, "condor_q", "-constraint", "JobStatus == 5", "-af", "ProcId") == "0\n"
    refused = run(cluster, bin_dir, "condor_release", f"{job}.1")
    assert (refused.returncode, refused.stderr) == (1, f"Job {job}.1 not released\n")
    assert condor(cluster, bin_dir, "condor_rm", "-constraint", f"ClusterId == {job} && ProcId == 1") == \
        f"All jobs matching constraint (ClusterId == {job} && ProcId == 1) have been marked for removal\n"
    assert condor(cluster, bin_dir, "condor_rm", me) == f"All jobs of user \"{me}\" have been marked for removal\n"
    assert condor(cluster, bin_dir, "condor_wait", "-wait", "30", "life.log") == "All jobs done.\n"
    log = (cluster.workdir / "life.log").read_text()
    assert log.count("Job was held.") == 2 and log.count("Job was released.") == 1
    assert log.count("Job was aborted.\n\tvia condor_rm (by user ") == 2
    missing = run(cluster, bin_dir, "condor_rm", str(job))
    assert (missing.returncode, missing.stderr) == (1, f"Couldn't find/remove all jobs in cluster {job}\n")


def test_a_sandbox_stages_its_inputs_in_and_brings_its_outputs_back(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    (cluster.workdir / "data").mkdir()
    (cluster.workdir / "data" / "numbers.txt").write_text("1\n2\n3\n")
    (cluster.workdir / "sum.sh").write_text("#!/bin/sh\nawk '{s += $1} END {print s}' numbers.txt > total.txt\n"
                                            "pwd > where.txt\n")
    os.chmod(cluster.workdir / "sum.sh", 0o755)
    job = submitted(condor(cluster, bin_dir, "condor_submit", "-", stdin=(
        "executable = sum.sh\nshould_transfer_files = YES\ntransfer_input_files = data/numbers.txt\n"
        "transfer_output_files = total.txt\nlog = sandbox.log\nqueue\n")))
    assert condor(cluster, bin_dir, "condor_wait", "-wait", "60", "sandbox.log") == "All jobs done.\n"
    assert (cluster.workdir / "total.txt").read_text() == "6\n"
    assert not (cluster.workdir / "where.txt").exists()  # not asked for: stays in the sandbox
    log = (cluster.workdir / "sandbox.log").read_text()
    order = [line.split(" ", 4)[-1] for line in log.splitlines() if line[:3].isdigit()]
    # The image size where the attempt's memory is known: its max RSS, or its cgroup's peak (a
    # node without cgroups, with neither known, writes none, as HTCondor writes none unmeasured).
    usage = cluster.client().job(job).tasks[0].attempts[-1].usage
    assert usage is not None
    sized = bool(usage.max_rss_kib or usage.cgroup_peak_memory_bytes)
    assert order == ["Job submitted from host: " + order[0].split(": ", 1)[1], "Started transferring input files",
                     "Finished transferring input files", order[3], "Started transferring output files",
                     "Finished transferring output files", *([order[6]] if sized else []), "Job terminated."]
    assert order[3].startswith("Job executing on host: ")
    assert not sized or order[6].startswith("Image size of job updated: ")
    assert cluster.client().job(job).workdir == ""


def test_condor_status_shows_each_node_as_a_slot(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    node = cluster.client().nodes()[0].name
    lines = condor(cluster, bin_dir, "condor_status").splitlines()
    assert lines[0].split() == ["Name", "OpSys", "Arch", "State", "Activity", "LoadAv", "Mem", "ActvtyTime"]
    assert lines[2].split()[:5] == [f"slot1@{node}", "LINUX", lines[2].split()[2], "Unclaimed", "Idle"]
    assert condor(cluster, bin_dir, "condor_status", "-af", "Machine", "TotalCpus") == f"{node} 2\n"
    assert condor(cluster, bin_dir, "condor_status", "-constraint", "TotalCpus > 8", "-af", "Name") == ""


# -- the shared system cluster: the event log is written with the submitter's rights alone --------

@dataclass(frozen=True)
class Submitter:
    """An ordinary user of the shared cluster with a 0700 work directory in their home, running
    the HTCondor commands root installed."""

    name: str
    entry: pwd.struct_passwd
    work: Path
    bin_dir: Path
    shared: SystemCluster

    def run(self, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.shared.run_as(self.name, str(self.bin_dir / argv[0]), *argv[1:], input=stdin, cwd=self.work,
                                  env=GRACE)

    def ok(self, *argv: str, stdin: str | None = None) -> str:
        done = self.run(*argv, stdin=stdin)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        return done.stdout


@pytest.fixture
def submitter(system_cluster: SystemCluster, users: tuple[str, str]) -> Iterator[Submitter]:
    """The first test user, set up to submit; their event log followers and hand-over directory
    are gone afterwards."""
    entry = pwd.getpwnam(users[0])
    work = Path(entry.pw_dir) / "condor"
    work.mkdir(mode=0o700)
    os.chown(work, entry.pw_uid, entry.pw_gid)
    bin_dir = system_cluster.root / "bin-condor"
    system_cluster.as_root("compat", "install", str(bin_dir))
    yield Submitter(users[0], entry, work, bin_dir, system_cluster)
    for process in _followers(entry.pw_uid):
        process.kill()
    for base in pointer_dirs(entry.pw_uid):  # the hand-over directory made for the user, and its parent
        shutil.rmtree(os.path.join(base, "htcondor-follow"), ignore_errors=True)
        with contextlib.suppress(OSError):
            os.rmdir(base)  # if nothing else is in it (and never through a link)


@pytest.fixture
def root_secret() -> Iterator[Path]:
    path = Path(f"/var/tmp/drover-condor-secret-{uuid.uuid4().hex[:8]}")
    path.write_text("root only\n")
    os.chmod(path, 0o600)
    yield path
    path.unlink(missing_ok=True)


def test_the_job_event_log_is_written_as_the_submitter_never_through_a_swapped_link(
        submitter: Submitter, root_secret: Path) -> None:
    system_cluster, entry, work, as_user = submitter.shared, submitter.entry, submitter.work, submitter.ok
    job = submitted(as_user("condor_submit", "-", stdin="executable = /bin/echo\narguments = hi\nhold = true\n"
                            "log = own.log\noutput = out.txt\nqueue\n"))
    log = work / "own.log"
    assert log.stat().st_uid == entry.pw_uid  # created by condor_submit, as the submitter
    assert log.read_text().count("\n...\n") == 2  # submitted, held
    # The submitter swaps their log for a link to a root-only file; whatever writes the
    # events after that must not be able to follow it.
    log.unlink()
    log.symlink_to(root_secret)
    os.lchown(log, entry.pw_uid, entry.pw_gid)
    assert as_user("condor_release", str(job)) == f"All jobs in cluster {job} have been released\n"
    wait_until(lambda: system_cluster.job(job)["state"] == "completed", timeout=60, describe="the job to end")
    assert (work / "out.txt").read_text() == "hi\n"
    assert root_secret.read_text() == "root only\n"
    assert root_secret.stat().st_uid == 0
    # And a log the submitter may write gets every event, appended by the submitter's follower.
    job = submitted(as_user("condor_submit", "-", stdin="executable = /bin/true\nlog = second.log\nqueue\n"))
    assert as_user("condor_wait", "-wait", "60", "second.log") == "All jobs done.\n"
    second = work / "second.log"
    assert second.stat().st_uid == entry.pw_uid and "Job terminated." in second.read_text()


PLANTINGS = {
    # another user's directory where the submitter's would be, open to all, a hand-over one in it
    "directory": "mkdir -m 0777 {base} {base}/htcondor-follow && chmod 0777 {base} {base}/htcondor-follow",
    # a link there to a directory of the other user's
    "link": "ln -s {collect} {base}",
    # another user's directory whose hand-over directory is a link to theirs
    "link inside": "mkdir -m 0777 {base} && chmod 0777 {base} && ln -s {collect} {base}/htcondor-follow",
}


def test_a_hand_over_directory_another_user_planted_is_refused_and_learns_nothing(
        submitter: Submitter, users: tuple[str, str]) -> None:
    """Bob makes, before Alice's first submit, the directory her condor_submit hands its clusters
    over in (/tmp/drover-UID: /tmp is everyone's), or a link there, to read her requests (her
    logs' paths, her jobs) or to have her follower write where he chose. Her submit goes on, says
    plainly that her log will not be written past the submit and why, and puts nothing there."""
    bob = users[1]
    base = next(path for path in pointer_dirs(submitter.entry.pw_uid) if path.startswith("/tmp/"))
    if os.path.isdir(os.path.dirname(pointer_dirs(submitter.entry.pw_uid)[0])):
        pytest.fail("the submitter has a /run/user directory: the planted one would not be looked at")
    collect = Path(pwd.getpwnam(bob).pw_dir) / "collect"
    made = submitter.shared.run_as(bob, "/bin/sh", "-c", f"mkdir -m 0777 {collect} && chmod 0777 {collect}")
    assert made.returncode == 0, made.stderr
    try:
        for planting, script in PLANTINGS.items():
            _unplant(base)  # the last planting, or a removed user's leftover
            planted = submitter.shared.run_as(bob, "/bin/sh", "-c", script.format(base=base, collect=collect))
            assert planted.returncode == 0, (planting, planted.stderr)
            before = sorted(str(path) for path in Path(base).rglob("*"))
            done = submitter.run("condor_submit", "-", stdin="executable = /bin/echo\narguments = hi\n"
                                 f"log = {planting.replace(' ', '-')}.log\noutput = out.txt\nqueue\n")
            assert done.returncode == 0, (planting, done.stderr)  # the job is submitted all the same
            job = submitted(done.stdout)
            why = "is a symbolic link" if planting == "link" else f"belongs to {bob}, not to {submitter.name}"
            assert "WARNING: the job event log will not be written past the submit:" in done.stderr, done.stderr
            assert why in done.stderr, (planting, done.stderr)
            # Nothing of hers where he chose, and nothing of hers for him to read.
            assert sorted(str(path) for path in Path(base).rglob("*")) == before, planting
            assert list(collect.iterdir()) == [], planting
            assert not _followers(submitter.entry.pw_uid), planting
            # Her job runs; her log has what her own condor_submit wrote.
            wait_until(lambda job=job: submitter.shared.job(job)["state"] == "completed", timeout=60,  # type: ignore[misc]
                       describe=f"job {job} to end")
            events, rest = eventlog.read_events((submitter.work / f"{planting.replace(' ', '-')}.log").read_text())
            assert rest == "" and [(e.cluster, e.number) for e in events] == [(job, eventlog.SUBMIT)], planting
    finally:
        _unplant(base)


def _unplant(base: str) -> None:
    if os.path.islink(base) or os.path.isfile(base):
        os.unlink(base)
    shutil.rmtree(base, ignore_errors=True)


def test_condor_hold_vacates_a_running_proc_and_holds_it_until_released(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    job = submitted(condor(cluster, bin_dir, "condor_submit", "-", stdin=(
        "executable = /bin/sh\narguments = \"-c 'echo run >> runs.$(Process); sleep 300'\"\nlog = vacate.log\n"
        "queue 2\n")))
    wait_until(lambda: condor(cluster, bin_dir, "condor_q", str(job), "-af", "JobStatus") == "2\n2\n",
               describe="both procs to run")
    assert condor(cluster, bin_dir, "condor_hold", str(job)) == f"All jobs in cluster {job} have been held\n"
    assert condor(cluster, bin_dir, "condor_q", str(job), "-af", "JobStatus") == "5\n5\n"
    log = cluster.workdir / "vacate.log"
    wait_until(lambda: log.read_text().count("Job was held.") == 2, describe="both holds in the event log")

    def runs(proc: int) -> int:
        return (cluster.workdir / f"runs.{proc}").read_text().count("run\n")

    before = (runs(0), runs(1))
    assert condor(cluster, bin_dir, "condor_release", f"{job}.1") == f"Job {job}.1 released\n"
    wait_until(lambda: runs(1) == before[1] + 1, describe="proc 1 to run again")
    assert runs(0) == before[0]
    assert condor(cluster, bin_dir, "condor_rm", str(job)) == f"All jobs in cluster {job} have been marked for removal\n"
    assert condor(cluster, bin_dir, "condor_wait", "-wait", "30", "vacate.log") == "All jobs done.\n"
    text = log.read_text()
    for proc in (0, 1):  # each vacated (evicted, perhaps more than once: the scheduler may start it
        # again before the hold lands), then held; proc 1 ran again, then both were removed
        ident = f"({job:03d}.{proc:03d}.000)"
        events = [line.split(" ", 4)[-1] for line in text.splitlines() if ident in line]
        assert events.index("Job was evicted.") < events.index("Job was held.") < events.index("Job was released."
                                                                                              if proc else
                                                                                              "Job was aborted.")
        assert events[-1] == "Job was aborted."
    assert text.count("Job was held.") == 2 and text.count("Job was released.") == 1


def test_command_line_values_append_queue_terse_and_condor_wait_for_one_job_or_a_number(
        cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    (cluster.workdir / "plain.sub").write_text("executable = /bin/sh\narguments = \"-c 'echo $(word) $(Process)'\"\n"
                                               "output = plain.$(Process)\nlog = plain.log\n")
    terse = condor(cluster, bin_dir, "condor_submit", "-terse", "word=hello", "-append", "log = plain.log",
                   "-queue", "2", "plain.sub")
    match = re.fullmatch(r"(\d+)\.0 - (\d+)\.1\n", terse)
    assert match is not None and match.group(1) == match.group(2), terse
    first = int(match.group(1))
    second = submitted(condor(cluster, bin_dir, "condor_submit", "-batch-name", "again", "-a", "arguments = 30",
                              "-a", "executable = /bin/sleep", "-a", "output = second.out", "-a", "queue",
                              "plain.sub"))
    assert condor(cluster, bin_dir, "condor_wait", "-wait", "60", "plain.log", f"{first}") == "All jobs done.\n"
    assert [(cluster.workdir / f"plain.{proc}").read_text() for proc in (0, 1)] == ["hello 0\n", "hello 1\n"]
    assert cluster.client().job(second).name == "again"
    timed_out = run(cluster, bin_dir, "condor_wait", "-wait", "1", "plain.log")
    assert (timed_out.returncode, timed_out.stdout) == (1, "Time expired.\n")
    assert condor(cluster, bin_dir, "condor_wait", "-num", "2", "plain.log") == "Specifed number of jobs (2) done.\n"
    conflict = run(cluster, bin_dir, "condor_submit", "-queue", "1", "-", stdin="executable = /bin/true\nqueue\n")
    assert (conflict.returncode, conflict.stderr.strip()) == (
        1, "ERROR: -queue argument conflicts with queue statement in submit file")
    condor(cluster, bin_dir, "condor_rm", str(second))
    assert condor(cluster, bin_dir, "condor_wait", "-wait", "30", "plain.log") == "All jobs done.\n"


SPLIT = """\
# procs 0 and 1 ask for one CPU, proc 2 for two: two clusters, the procs keeping their numbers
executable = /bin/sh
arguments = "-c 'echo $(Process) $(n) $DROVER_ARRAY_TASK_ID > split.$(Process).out; while [ ! -e go ]; do sleep 0.2; done'"
log = split.log
request_cpus = $(n)
queue n from (
1
1
2
)
"""


def test_procs_whose_requests_differ_are_one_cluster_per_request_run_and_removed_by_cluster(
        cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    (cluster.workdir / "split.sub").write_text(SPLIT)
    out = condor(cluster, bin_dir, "condor_submit", "split.sub")
    lines = out.splitlines()
    assert lines[0] == "Submitting job(s)..." and len(lines) == 3, out
    counts = [re.fullmatch(r"(\d+) job\(s\) submitted to cluster (\d+)\.", line) for line in lines[1:]]
    assert all(m is not None for m in counts), out
    (n_ones, ones), (n_twos, twos) = [(int(m.group(1)), int(m.group(2))) for m in counts if m is not None]
    assert (n_ones, n_twos) == (2, 1) and twos > ones
    client = cluster.client()
    assert [(j.cpus, j.array) for j in (client.job(ones), client.job(twos))] == [(1, "0-1"), (2, "2")]
    # The two one-CPU procs fill the node; the two-CPU one waits.
    wait_until(lambda: condor(cluster, bin_dir, "condor_q", "-af:j", "JobStatus", "RequestCpus") ==
               f"{ones}.0 2 1\n{ones}.1 2 1\n{twos}.2 1 2\n", describe="cluster 1 running, cluster 2 idle")
    assert condor(cluster, bin_dir, "condor_rm", str(ones)) == f"All jobs in cluster {ones} have been marked for " \
                                                               "removal\n"
    wait_until(lambda: condor(cluster, bin_dir, "condor_q", "-af:j", "JobStatus") == f"{twos}.2 2\n",
               describe="the two-CPU proc to run once the others are removed")
    (cluster.workdir / "go").touch()
    assert condor(cluster, bin_dir, "condor_wait", "-wait", "60", "split.log") == "All jobs done.\n"
    assert [(cluster.workdir / f"split.{p}.out").read_text() for p in (0, 1, 2)] == ["0 1 0\n", "1 1 1\n",
                                                                                      "2 2 2\n"]
    history = condor(cluster, bin_dir, "condor_history", "-constraint", f"ClusterId >= {ones}", "-af:j", "JobStatus",
                     "RequestCpus")
    assert history.splitlines() == [f"{twos}.2 4 2", f"{ones}.1 3 1", f"{ones}.0 3 1"]
    events, rest = eventlog.read_events((cluster.workdir / "split.log").read_text())
    assert rest == ""

    def of(cluster_id: int, proc: int) -> list[int]:
        return [e.number for e in events if (e.cluster, e.proc) == (cluster_id, proc)]

    assert of(ones, 0) == of(ones, 1) == [eventlog.SUBMIT, eventlog.EXECUTE, eventlog.ABORTED]
    assert of(twos, 2) == [eventlog.SUBMIT, eventlog.EXECUTE, eventlog.IMAGE_SIZE, eventlog.TERMINATED]
    assert re.search(r"\n\t   Cpus +: +\S+ +2 +2 \n", (cluster.workdir / "split.log").read_text())  # its own request
    # -terse: each cluster's range; condor_rm takes both clusters
    terse = condor(cluster, bin_dir, "condor_submit", "-terse", "-", stdin=(
        "executable = /bin/true\nhold = true\nrequest_cpus = 1\nqueue\nrequest_cpus = 2\nqueue 2\n"))
    match = re.fullmatch(r"(\d+)\.0 - (\d+)\.0\n(\d+)\.1 - (\d+)\.2\n", terse)
    assert match is not None and match.group(1) == match.group(2) and match.group(3) == match.group(4), terse
    first, second = int(match.group(1)), int(match.group(3))
    assert condor(cluster, bin_dir, "condor_rm", str(first), str(second)) == (
        f"All jobs in cluster {first} have been marked for removal\n"
        f"All jobs in cluster {second} have been marked for removal\n")
    refused = run(cluster, bin_dir, "condor_submit", "-single-cluster", "-", stdin=(
        "executable = /bin/true\nrequest_cpus = 1\nqueue\nrequest_cpus = 2\nqueue\n"), env=GRACE)
    assert refused.returncode == 1 and "-single-cluster: the procs' requests differ" in refused.stderr


@pytest.fixture
def sampled_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """A personal cluster whose node samples its jobs' memory twice a second."""
    yield from serve(request, LocalCluster(config_toml="[execd]\nsample_s = 0.5\n"))


def test_a_job_whose_memory_grows_gets_an_image_size_event_each_time_it_is_seen_grown(
        sampled_cluster: LocalCluster) -> None:
    cluster = sampled_cluster
    bin_dir = install(cluster)
    (cluster.workdir / "grow.py").write_text("import time\nheld = []\nfor _ in range(8):\n"
                                             "    held.append(b'x' * (8 << 20))\n    time.sleep(0.6)\n")
    done = run(cluster, bin_dir, "condor_submit", "-", env={**GRACE, "DROVER_HTCONDOR_IMAGE_SIZE_S": "1"},
               stdin="executable = /usr/bin/python3\narguments = grow.py\nlog = grow.log\nqueue\n")
    assert done.returncode == 0, done.stderr
    job = submitted(done.stdout)
    assert condor(cluster, bin_dir, "condor_wait", "-wait", "60", "grow.log") == "All jobs done.\n"
    events, _ = eventlog.read_events((cluster.workdir / "grow.log").read_text())
    assert all((e.cluster, e.proc) == (job, 0) for e in events)
    numbers = [e.number for e in events]
    assert numbers[:2] == [eventlog.SUBMIT, eventlog.EXECUTE] and numbers[-2:] == [eventlog.IMAGE_SIZE,
                                                                                     eventlog.TERMINATED]
    # While it ran: a 006 each time the follower (every second) saw it bigger than at the last.
    sizes = [int(e.text.split("\n")[0].rsplit(" ", 1)[1]) for e in events[2:-2]]
    assert set(numbers[2:-2]) == {eventlog.IMAGE_SIZE} and len(sizes) >= 2, numbers
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0] + 8 * 1024, sizes


def _followers(uid: int) -> list[psutil.Process]:
    """The user's event log followers."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.uids().real == uid and "drover.compat.htcondor.follow" in process.cmdline():
                found.append(process)
        except psutil.Error:
            continue
    return found


def test_one_event_log_follower_per_user_follows_every_submit_and_ends_when_all_have_ended(
        submitter: Submitter) -> None:
    entry, work, as_user = submitter.entry, submitter.work, submitter.ok
    first = submitted(as_user("condor_submit", "-", stdin="executable = /bin/sleep\narguments = 300\n"
                              "log = first.log\nqueue\n"))
    wait_until(lambda: "Job executing on host" in (work / "first.log").read_text(),
               describe="the first cluster followed")
    (follower,) = _followers(entry.pw_uid)
    second = submitted(as_user("condor_submit", "-", stdin="executable = /bin/true\nhold = true\n"
                               "log = second.log\nqueue 2\n"))
    assert _followers(entry.pw_uid) == [follower]  # the second submit's cluster went to the running one
    assert as_user("condor_release", str(second)) == f"All jobs in cluster {second} have been released\n"
    assert as_user("condor_wait", "-wait", "60", "second.log") == "All jobs done.\n"
    assert _followers(entry.pw_uid) == [follower]
    assert as_user("condor_rm", str(first)) == f"All jobs in cluster {first} have been marked for removal\n"
    assert as_user("condor_wait", "-wait", "60", "first.log") == "All jobs done.\n"
    wait_until(lambda: not _followers(entry.pw_uid), describe="the follower to end with nothing left to follow")
    logs = {}
    for name in ("first", "second"):
        events, rest = eventlog.read_events((work / f"{name}.log").read_text())
        assert rest == ""
        logs[name] = [(e.cluster, e.proc, e.number) for e in events]
    assert logs["first"] == [(first, 0, eventlog.SUBMIT), (first, 0, eventlog.EXECUTE), (first, 0, eventlog.ABORTED)]
    for proc in (0, 1):
        assert [n for c, p, n in logs["second"] if (c, p) == (second, proc)] == [
            eventlog.SUBMIT, eventlog.HELD, eventlog.RELEASED, eventlog.EXECUTE, eventlog.IMAGE_SIZE,
            eventlog.TERMINATED]


def test_a_proc_whose_log_cannot_be_opened_leaves_the_other_procs_logs_whole(cluster: LocalCluster) -> None:
    """Proc 0's log is in a directory that does not exist: condor_submit warns as HTCondor's
    does, and procs 1 and 2 still get every event in theirs."""
    bin_dir = install(cluster)
    for proc in (1, 2):
        (cluster.workdir / f"logs{proc}").mkdir()
    (cluster.workdir / "split.sub").write_text("executable = /bin/true\nlog = logs$(Process)/events.log\nqueue 3\n")
    done = run(cluster, bin_dir, "condor_submit", "split.sub", env=GRACE)
    assert done.returncode == 0, done.stderr
    assert "WARNING: Can't open" in done.stderr and "logs0/events.log" in done.stderr, done.stderr
    job = submitted(done.stdout)
    for proc in (1, 2):
        log = cluster.workdir / f"logs{proc}" / "events.log"
        wait_until(lambda log=log: "Job terminated." in (log.read_text() if log.exists() else ""),
                   describe=f"proc {proc}'s log to tell of its end")
        text = log.read_text()
        assert f"000 ({job:03d}.{proc:03d}.000)" in text and "Job submitted from host" in text, text
    assert not (cluster.workdir / "logs0").exists()
