"""A script written for PBS Pro or Torque, through qsub, qstat, qhold, qrls, qalter, qsig,
qrerun, qdel and pbsnodes installed with `drover compat install --flavor pbs`: PBS's job ids,
file names, states, exit statuses and error messages."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until

SERVER = socket.gethostname().split(".")[0]


def qsub(cluster: LocalCluster, bin_dir: Path, *args: str, stdin: str | None = None) -> str:
    """The job id qsub printed, once it succeeded."""
    done = run(cluster, bin_dir, "qsub", *args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()

SCRIPT = """#!/bin/bash
#PBS -N sweep
#PBS -J 1-3
#PBS -l select=1:ncpus=1:mem=64mb
#PBS -l walltime=00:05:00
cd "$PBS_O_WORKDIR"
echo "subjob $PBS_ARRAY_INDEX of $PBS_JOBID ($PBS_JOBNAME) in $PBS_QUEUE"
echo "to stderr" >&2
"""


def test_a_pbs_pro_array_script_runs_with_its_ids_and_file_names(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    (cluster.workdir / "sweep.sh").write_text(SCRIPT)
    submitted = run(cluster, bin_dir, "qsub", "sweep.sh")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split("[")[0]
    assert submitted.stdout == f"{job}[].{SERVER}\n"
    cluster.drover("wait", job)
    for index in (1, 2, 3):
        output = (cluster.workdir / f"sweep.o{job}.{index}").read_text()
        assert output == f"subjob {index} of {job}[{index}].{SERVER} (sweep) in workq\n"
        assert (cluster.workdir / f"sweep.e{job}.{index}").read_text() == "to stderr\n"
    finished = run(cluster, bin_dir, "qstat", f"{job}[]")
    assert finished.returncode == 35
    assert "Job has finished, use -x or -H to obtain historical job information" in finished.stderr
    history = json.loads(run(cluster, bin_dir, "qstat", "-x", "-t", "-f", "-F", "json", f"{job}[]").stdout)
    jobs = history["Jobs"]
    assert jobs[f"{job}[].{SERVER}"]["job_state"] == "F"
    assert [jobs[f"{job}[{i}].{SERVER}"]["job_state"] for i in (1, 2, 3)] == ["X", "X", "X"]
    assert all(jobs[f"{job}[{i}].{SERVER}"]["Exit_status"] == 0 for i in (1, 2, 3))
    assert jobs[f"{job}[].{SERVER}"]["Resource_List"]["walltime"] == "00:05:00"
    subjob = run(cluster, bin_dir, "qstat", "-fx", f"{job}[2]").stdout
    assert subjob.startswith(f"Job Id: {job}[2].{SERVER}\n") and "    job_state = X\n" in subjob
    assert f"    array_id = {job}[].{SERVER}\n" in subjob and "    array_index = 2\n" in subjob


def test_a_script_on_stdin_and_the_default_table_and_full_listing(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    held = qsub(cluster, bin_dir, "-h", "-N", "waiting", stdin="sleep 60\n")
    assert held.endswith(f".{SERVER}")
    stdin_job = qsub(cluster, bin_dir, stdin="echo from stdin\n")
    number = stdin_job.split(".")[0]
    cluster.drover("wait", number)
    assert (cluster.workdir / f"STDIN.o{number}").read_text() == "from stdin\n"
    table = run(cluster, bin_dir, "qstat").stdout.splitlines()
    assert table[0] == "Job id            Name             User              Time Use S Queue"
    assert table[1] == "----------------  ---------------- ----------------  -------- - -----"
    row = next(line.split() for line in table[2:] if line.startswith(held.split(".")[0] + "."))
    assert row[1] == "waiting" and row[4] == "H" and row[5] == "workq"
    full = run(cluster, bin_dir, "qstat", "-f", held).stdout
    assert full.startswith(f"Job Id: {held}\n    Job_Name = waiting\n")
    assert "    job_state = H\n" in full and "    Hold_Types = u\n" in full
    assert run(cluster, bin_dir, "qrls", held).returncode == 0
    wait_until(lambda: run(cluster, bin_dir, "qstat", "-F", "json", held).stdout.count('"job_state": "R"') == 1,
               describe="the released job to run")
    deleted = run(cluster, bin_dir, "qdel", held)
    assert (deleted.returncode, deleted.stdout, deleted.stderr) == (0, "", "")
    cluster.drover("wait", held.split(".")[0], check=False)
    record = json.loads(run(cluster, bin_dir, "qstat", "-x", "-f", "-F", "json", held).stdout)["Jobs"][held]
    assert record["job_state"] == "F" and record["Exit_status"] == 265  # deleted while it ran


def test_exit_statuses_as_pbs_pro_reports_them(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    failing = qsub(cluster, bin_dir, "-j", "oe", stdin="exit 3\n")
    killed = qsub(cluster, bin_dir, stdin="kill -SEGV $$\n")
    blocked = run(cluster, bin_dir, "qsub", "-W", "block=true", stdin="exit 5\n")
    assert blocked.returncode == 5
    for job in (failing, killed):
        cluster.drover("wait", job.split(".")[0], check=False)
    statuses = json.loads(run(cluster, bin_dir, "qstat", "-x", "-f", "-F", "json", failing, killed).stdout)["Jobs"]
    assert statuses[failing]["Exit_status"] == 3
    assert statuses[killed]["Exit_status"] == 256 + 11
    full = run(cluster, bin_dir, "qstat", "-fx", failing).stdout
    assert "    Exit_status = 3\n" in full and "    Join_Path = oe\n" in full


def test_dependencies_holds_signals_and_changes(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    first = qsub(cluster, bin_dir, "-h", stdin="true\n")
    after = qsub(cluster, bin_dir, "-W", f"depend=afterok:{first}", stdin="true\n")
    info = cluster.client().job(int(after.split(".")[0]))
    assert [(d.kind, d.job) for d in info.dependencies] == [("afterok", int(first.split(".")[0]))]
    assert run(cluster, bin_dir, "qalter", "-p", "7", after).returncode == 0
    assert cluster.client().job(int(after.split(".")[0])).priority == 7
    assert run(cluster, bin_dir, "qrls", first).returncode == 0
    cluster.drover("wait", after.split(".")[0])
    sleeper = qsub(cluster, bin_dir, stdin="trap 'echo got USR1; exit 0' USR1\nsleep 60 & wait\n")
    number = sleeper.split(".")[0]
    wait_until(lambda: cluster.client().job(int(number)).state == "running", describe="the job to run")
    wait_until(lambda: any(a.started_at for t in cluster.client().job(int(number)).tasks for a in t.attempts),
               describe="its script to start")
    assert run(cluster, bin_dir, "qsig", "-s", "USR1", sleeper).returncode == 0
    cluster.drover("wait", number)
    assert cluster.client().job(int(number)).exit_status == 0


def test_bad_command_lines_get_pbs_own_errors(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    bad = run(cluster, bin_dir, "qsub", "-Y", stdin="true\n")
    assert bad.returncode == 2 and bad.stderr.startswith("qsub: invalid option -- 'Y'\nusage: qsub")
    missing = run(cluster, bin_dir, "qsub", "-N")
    assert missing.returncode == 2 and missing.stderr.startswith("qsub: option requires an argument -- 'N'")
    walltime = run(cluster, bin_dir, "qsub", "-l", "walltime=ten", stdin="true\n")
    assert walltime.returncode == 1 and "Illegal attribute or resource value" in walltime.stderr
    array = run(cluster, bin_dir, "qsub", "-J", "5-2", stdin="true\n")
    assert (array.returncode, array.stderr) == (1, "qsub: illegal -J value\n")
    unknown = run(cluster, bin_dir, "qdel", "999999")
    assert (unknown.returncode, unknown.stderr) == (153, "qdel: Unknown Job Id 999999\n")
    depend = run(cluster, bin_dir, "qsub", "-W", "depend=afterok:999999", stdin="true\n")
    assert (depend.returncode, depend.stderr) == (153, f"qsub: Unknown Job Id 999999.{SERVER}\n")
    stat = run(cluster, bin_dir, "qstat", "-Z")
    assert stat.returncode == 2 and stat.stderr.startswith("qstat: invalid option -- 'Z'\nusage:")
    assert "Traceback" not in "".join(r.stderr for r in (bad, missing, walltime, array, unknown, depend, stat))
    assert not cluster.client().jobs(include_ended=True)


def test_queues_server_and_nodes(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    queues = run(cluster, bin_dir, "qstat", "-Q").stdout.splitlines()
    assert queues[0].startswith("Queue              Max   Tot Ena Str") and queues[2].startswith("workq ")
    server = run(cluster, bin_dir, "qstat", "-B").stdout.splitlines()
    assert server[2].split()[0] == SERVER and server[2].endswith("Active")
    node = cluster.drover_json("nodes")[0]
    listing = run(cluster, bin_dir, "pbsnodes", "-a").stdout
    assert listing.startswith(f"{node['name']}\n     Mom = {node['name']}\n") and "     state = free\n" in listing
    nodes = json.loads(run(cluster, bin_dir, "pbsnodes", "-a", "-F", "json").stdout)["nodes"]
    assert nodes[node["name"]]["resources_available"]["ncpus"] == node["cpus"]


TORQUE = """#!/bin/bash
#PBS -N tarr
#PBS -t 1-2
#PBS -l nodes=1:ppn=1,walltime=00:05:00
#PBS -d .
echo "$PBS_ARRAYID $PBS_JOBID"
"""


def test_a_torque_array_and_the_subjob_table(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    (cluster.workdir / "tarr.sh").write_text(TORQUE)
    array = qsub(cluster, bin_dir, "-h", "tarr.sh")
    number = array.split("[")[0]
    rows = [line.split() for line in run(cluster, bin_dir, "qstat", "-t").stdout.splitlines()[2:]]
    assert [(row[0], row[4]) for row in rows] == [(array, "H"), (f"{number}[1].{SERVER}", "H"),
                                                  (f"{number}[2].{SERVER}", "H")]
    assert run(cluster, bin_dir, "qrls", array).returncode == 0
    cluster.drover("wait", number)
    for index in (1, 2):  # -d .: it ran where qsub did, its output named as Torque names it
        assert (cluster.workdir / f"tarr.o{number}-{index}").read_text() == f"{index} {number}[{index}].{SERVER}\n"
    mine = run(cluster, bin_dir, "qstat", "-x", "-u", cluster.client().job(int(number)).owner).stdout
    assert mine.splitlines()[2].split()[:5] == [array, "tarr", cluster.client().job(int(number)).owner, "00:00:00",
                                                "F"]


def test_walltime_waiting_rerun_and_refusals_of_the_other_commands(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    later = qsub(cluster, bin_dir, "-a", "2359.59", stdin="true\n")
    assert run(cluster, bin_dir, "qstat", later).stdout.splitlines()[2].split()[4] == "W"
    assert run(cluster, bin_dir, "qdel", later).returncode == 0
    slow = qsub(cluster, bin_dir, "-l", "walltime=00:00:02", stdin="sleep 60\n")
    cluster.drover("wait", slow.split(".")[0], check=False)
    record = json.loads(run(cluster, bin_dir, "qstat", "-fx", "-F", "json", slow).stdout)["Jobs"][slow]
    assert record["Exit_status"] == 271  # killed at its walltime: 256 + SIGTERM
    again = qsub(cluster, bin_dir, stdin="echo run $((${RESTARTED:-0}))\nsleep 60\n")
    number = again.split(".")[0]
    wait_until(lambda: any(a.started_at for t in cluster.client().job(int(number)).tasks for a in t.attempts),
               describe="the job to start")
    assert run(cluster, bin_dir, "qrerun", again).returncode == 0
    wait_until(lambda: len(cluster.client().job(int(number)).tasks[0].attempts) == 2, describe="a second attempt")
    assert run(cluster, bin_dir, "qdel", again).returncode == 0
    refusals = [run(cluster, bin_dir, *argv) for argv in (
        ("qhold", "-h", "o", again), ("qsig", "-s", "BOGUS", again), ("qalter", "-l", "walltime=1:00", again),
        ("qstat", "-F", "dsv"), ("pbsnodes", "-o", "x"))]
    assert [r.returncode for r in refusals] == [1, 15013 % 256, 1, 2, 1]  # PBSE_UNKSIG
    assert refusals[0].stderr == "qhold: -h o: Drover has user holds only (-h u)\n"
    assert refusals[1].stderr == "qsig: Unknown signal name BOGUS\n"
    assert refusals[2].stderr.startswith("qalter: -l: Drover changes -p, -q and -h")
    assert "Traceback" not in "".join(r.stderr for r in refusals)


def test_a_command_after_dashes_and_directives_under_another_prefix(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    command = qsub(cluster, bin_dir, "-j", "oe", "--", "/bin/echo", "two words", "and")
    number = command.split(".")[0]
    cluster.drover("wait", number)
    assert (cluster.workdir / f"echo.o{number}").read_text() == "two words and\n"  # named after the command
    (cluster.workdir / "prefixed.sh").write_text("#!/bin/bash\n#MY -N mine\n#PBS -N ignored\necho hi\n")
    prefixed = qsub(cluster, bin_dir, "-C", "#MY", "prefixed.sh")
    assert cluster.client().job(int(prefixed.split(".")[0])).name == "mine"
    overridden = qsub(cluster, bin_dir, "-N", "cli", "prefixed.sh")  # the command line wins
    assert cluster.client().job(int(overridden.split(".")[0])).name == "cli"


def test_with_no_server_the_commands_say_so_as_pbs_does(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    elsewhere = {"DROVER_SOCKET": str(cluster.root / "no-such.sock")}
    for argv in (["qsub"], ["qstat"], ["qdel", "1"], ["pbsnodes", "-a"]):
        done = run(cluster, bin_dir, *argv, stdin="true\n", env=elsewhere)
        assert (done.returncode, done.stdout) == (255, ""), done
        assert done.stderr == f"Connection refused\n{argv[0]}: cannot connect to server {SERVER} (errno=15010)\n"
