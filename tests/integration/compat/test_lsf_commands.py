"""A script written for IBM Spectrum LSF, through bsub, bjobs, bkill, bstop, bresume, bqueues,
bhosts, bhist and bpeek installed with `drover compat install`: LSF's submission messages, job
ids, states, exit codes, output files and error messages."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until

HOST = socket.gethostname().split(".")[0]


def bsub(cluster: LocalCluster, bin_dir: Path, *args: str, stdin: str | None = None) -> str:
    """The job id bsub announced, once it succeeded."""
    done = run(cluster, bin_dir, "bsub", *args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Job <") and " is submitted to " in done.stdout, done.stdout
    return done.stdout.split("<")[1].split(">")[0]


def stat(cluster: LocalCluster, bin_dir: Path, job: str) -> str:
    done = run(cluster, bin_dir, "bjobs", "-o", "stat", "-noheader", job)
    return done.stdout.strip()


ARRAY_SCRIPT = """#!/bin/bash
#BSUB -J "sweep[1-3]%2"
#BSUB -n 1
#BSUB -R "span[hosts=1] rusage[mem=65536]"
#BSUB -W 5
#BSUB -o out.%J.%I
#BSUB -e err.%J.%I
echo "element $LSB_JOBINDEX of $LSB_JOBID ($LSB_JOBNAME) in $LSB_QUEUE on $LSB_HOSTS, $LSB_DJOB_NUMPROC slot(s)"
echo "submitted from $LSB_SUBCWD = $LS_SUBCWD, output $LSB_OUTPUTFILE"
echo "to stderr" >&2
"""


def test_an_array_script_on_stdin_runs_with_lsfs_variables_and_file_names(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    submitted = run(cluster, bin_dir, "bsub", stdin=ARRAY_SCRIPT)
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.split("<")[1].split(">")[0]
    assert submitted.stdout == f"Job <{job}> is submitted to default queue <normal>.\n"
    info = cluster.client().job(int(job))
    assert (info.name, info.array, info.max_running, info.memory_mib, info.time_limit_s) == (
        "sweep", "1-3", 2, 64, 300)  # rusage[mem=65536] in KB, LSF's default unit; -W 5 minutes
    cluster.drover("wait", job)
    node = cluster.client().nodes()[0].name
    for index in (1, 2, 3):
        output = (cluster.workdir / f"out.{job}.{index}").read_text()
        assert output == (f"element {index} of {job} (sweep[{index}]) in normal on {node}, 1 slot(s)\n"
                          f"submitted from {cluster.workdir} = {cluster.workdir}, output "
                          f"{cluster.workdir}/out.{job}.{index}\n")
        assert (cluster.workdir / f"err.{job}.{index}").read_text() == "to stderr\n"
    table = run(cluster, bin_dir, "bjobs", "-a", "-w", job).stdout.splitlines()
    assert table[0].split() == ["JOBID", "USER", "STAT", "QUEUE", "FROM_HOST", "EXEC_HOST", "JOB_NAME",
                                "SUBMIT_TIME"]
    rows = [line.split() for line in table[1:]]
    assert [row[:7] for row in rows] == [[job, info.owner, "DONE", "normal", HOST, node, f"sweep[{i}]"]
                                         for i in (1, 2, 3)]
    element = run(cluster, bin_dir, "bjobs", "-o", "jobid jobindex stat exit_code", "-json", f"{job}[2]")
    assert json.loads(element.stdout) == {"COMMAND": "bjobs", "JOBS": 1, "RECORDS": [
        {"JOBID": job, "JOBINDEX": "2", "STAT": "DONE", "EXIT_CODE": ""}]}


def test_a_command_line_job_that_fails_exits_with_its_code_and_bjobs_reports_it(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    # The command's words are joined by blanks and run by /bin/sh, as LSF runs them.
    job = bsub(cluster, bin_dir, "-J", "broken", "-oo", "broken.log", "echo", "failing;", "exit 3")
    cluster.drover("wait", job, check=False)
    assert (cluster.workdir / "broken.log").read_text() == "failing\n"
    record = json.loads(run(cluster, bin_dir, "bjobs", "-o", "jobid stat exit_code job_name", "-json", job).stdout)
    assert record["RECORDS"] == [{"JOBID": job, "STAT": "EXIT", "EXIT_CODE": "3", "JOB_NAME": "broken"}]
    long_form = run(cluster, bin_dir, "bjobs", "-l", job).stdout
    assert f"Job <{job}>, Job Name <broken>" in long_form and "Exited with exit code 3." in long_form
    history = run(cluster, bin_dir, "bhist", "-l", job).stdout
    assert "Exited with exit code 3." in history and "Dispatched 1 Task(s)" in history
    # bsub -K waits and exits with the job's exit code.
    waited = run(cluster, bin_dir, "bsub", "-K", "exit 5")
    assert waited.returncode == 5, waited.stderr
    assert "<<Waiting for dispatch ...>>" in waited.stderr and "<<Job is finished>>" in waited.stderr
    # Unfinished jobs only by default: none left.
    nothing = run(cluster, bin_dir, "bjobs")
    assert (nothing.returncode, nothing.stderr) == (255, "No unfinished job found\n")


def test_bstop_bresume_and_bkill_as_lsf_says_them(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    held = bsub(cluster, bin_dir, "-H", "-J", "waiting", "sleep", "300")
    assert stat(cluster, bin_dir, held) == "PSUSP"
    running = bsub(cluster, bin_dir, "-J", "runner", "-o", "runner.out", "echo started; sleep 300")
    wait_until(lambda: stat(cluster, bin_dir, running) == "RUN", describe="the job to run")
    wait_until(lambda: (cluster.workdir / "runner.out").exists()
               and "started" in (cluster.workdir / "runner.out").read_text(), describe="its output")
    peeked = run(cluster, bin_dir, "bpeek", running)
    assert peeked.stdout == "<< output from stdout >>\nstarted\n", peeked.stderr
    stopped = run(cluster, bin_dir, "bstop", running)
    assert stopped.stdout == f"Job <{running}> is being stopped\n", stopped.stderr
    wait_until(lambda: stat(cluster, bin_dir, running) == "USUSP", describe="the job to be suspended")
    assert run(cluster, bin_dir, "bresume", running).stdout == f"Job <{running}> is being resumed\n"
    wait_until(lambda: stat(cluster, bin_dir, running) == "RUN", describe="the job to run again")
    assert run(cluster, bin_dir, "bresume", held).stdout == f"Job <{held}> is being resumed\n"
    wait_until(lambda: stat(cluster, bin_dir, held) in ("PEND", "RUN"), describe="the held job to be released")
    killed = run(cluster, bin_dir, "bkill", "0")
    assert killed.returncode == 0, killed.stderr
    assert sorted(killed.stdout.splitlines()) == sorted(
        [f"Job <{held}> is being terminated", f"Job <{running}> is being terminated"])
    wait_until(lambda: stat(cluster, bin_dir, running) == "EXIT", describe="the killed job to end")
    again = run(cluster, bin_dir, "bkill", running)
    assert (again.returncode, again.stderr) == (255, f"Job <{running}>: Job has already finished\n")
    unknown = run(cluster, bin_dir, "bkill", "99999")
    assert (unknown.returncode, unknown.stderr) == (255, "Job <99999>: No matching job found\n")
    missing = run(cluster, bin_dir, "bjobs", "-o", "jobid stat", "-json", "99999")
    assert json.loads(missing.stdout)["RECORDS"] == [{"JOBID": "99999", "ERROR": "Job <99999> is not found"}]


def test_dependencies_wait_as_lsf_conditions_say(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    first = bsub(cluster, bin_dir, "-J", "first", "-H", "true")
    by_id = bsub(cluster, bin_dir, "-w", f"done({first})", "true")
    by_name = bsub(cluster, bin_dir, "-w", 'ended("first") && exit(first)', "true")
    one_of = bsub(cluster, bin_dir, "-w", f"done({first}) || exit({first})", "true")
    kinds = {job: [(d.kind, d.job) for d in cluster.client().job(int(job)).dependencies]
             for job in (by_id, by_name, one_of)}
    assert kinds == {by_id: [("afterok", int(first))],
                     by_name: [("afterany", int(first)), ("afternotok", int(first))],
                     one_of: [("afterok", int(first)), ("afternotok", int(first))]}
    assert cluster.client().job(int(one_of)).dependency_any
    refused = run(cluster, bin_dir, "bsub", "-w", "done(1) && !exit(2)", "true")
    assert refused.returncode == 255 and "Job not submitted." in refused.stderr
    unknown = run(cluster, bin_dir, "bsub", "-w", "done(99999)", "true")
    assert (unknown.returncode, unknown.stderr) == (255, "99999: No matching job found. Job not submitted.\n")
    run(cluster, bin_dir, "bkill", "0")


def test_bad_options_get_lsfs_own_errors_and_nothing_is_submitted(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    for command, args, message in (
            ("bsub", ["-Z", "true"], "bsub: illegal option -- Z\n"),
            ("bsub", ["-n"], "bsub: option requires an argument -- n\n"),
            ("bsub", ["-W", "x1", "true"], "x1: Bad RUNLIMIT specification. Job not submitted.\n"),
            ("bsub", ["-M", "lots", "true"], "lots: Bad argument for memory limit. Job not submitted.\n"),
            ("bjobs", ["-Q"], "bjobs: illegal option -- Q\n"),
            ("bjobs", ["-o", "jobid nonsense"], "nonsense: Illegal field name. Job not displayed.\n"),
            ("bkill", ["-s", "NOPE", "1"], "bkill: Illegal signal value: NOPE\n")):
        done = run(cluster, bin_dir, command, *args)
        assert done.returncode == 255, (command, args, done.stderr)
        assert done.stderr.startswith(message), (command, args, done.stderr)
        assert "Traceback" not in done.stderr
    assert cluster.client().jobs(include_ended=True) == []


def test_queues_and_hosts_as_lsf_lists_them(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    queues = run(cluster, bin_dir, "bqueues").stdout.splitlines()
    assert queues[0].split() == ["QUEUE_NAME", "PRIO", "STATUS", "MAX", "JL/U", "JL/P", "JL/H", "NJOBS", "PEND",
                                 "RUN", "SUSP"]
    assert queues[1].split()[0] == "normal" and queues[1].split()[2] == "Open:Active"
    node = cluster.client().nodes()[0]
    hosts = run(cluster, bin_dir, "bhosts").stdout.splitlines()
    assert hosts[0].split() == ["HOST_NAME", "STATUS", "JL/U", "MAX", "NJOBS", "RUN", "SSUSP", "USUSP", "RSV"]
    assert hosts[1].split()[:4] == [node.name, "ok", "-", str(node.cpus)]
    unknown = run(cluster, bin_dir, "bqueues", "nosuch")
    assert (unknown.returncode, unknown.stderr) == (255, "nosuch: No such queue\n")
    lsid = run(cluster, bin_dir, "lsid").stdout
    assert lsid.startswith("IBM Spectrum LSF Standard 10.1.0.0") and "My cluster name is drover" in lsid


def test_bjobs_selects_and_cuts_as_lsf_does(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    pending = bsub(cluster, bin_dir, "-J", "a_rather_long_job_name", "-b", "23:59", "-q", "normal", "true")
    held = bsub(cluster, bin_dir, "-H", "-J", "other", "true")
    done = bsub(cluster, bin_dir, "-J", "quick", "-e", "quick.err", "-L", "/bin/bash",
                "echo $LSB_ERRORFILE >&2; echo $BASH_VERSION")
    cluster.drover("wait", done)
    table = run(cluster, bin_dir, "bjobs").stdout.splitlines()
    assert [line.split()[0] for line in table[1:]] == [pending, held]
    assert table[1].split()[2:4] == ["PEND", "normal"] and "*_job_name" in table[1]  # cut to its end after *
    wide = run(cluster, bin_dir, "bjobs", "-w", "-noheader").stdout
    assert "a_rather_long_job_name" in wide and not wide.startswith("JOBID")
    assert run(cluster, bin_dir, "bjobs", "-noheader", "-o", "id", "-J", "a_rather*").stdout == f"{pending}\n"
    assert run(cluster, bin_dir, "bjobs", "-noheader", "-o", "id", "-d").stdout == f"{done}\n"
    assert run(cluster, bin_dir, "bjobs", "-noheader", "-o", "id", "-s").stdout == f"{held}\n"
    assert run(cluster, bin_dir, "bjobs", "-noheader", "-o", "id", "-p").stdout == f"{pending}\n{held}\n"
    assert run(cluster, bin_dir, "bjobs", "-noheader", "-o", "id", "-u", "all", "-a").stdout == \
        f"{pending}\n{held}\n{done}\n"
    none_running = run(cluster, bin_dir, "bjobs", "-r")
    assert (none_running.returncode, none_running.stderr) == (255, "No running job found\n")
    delimited = run(cluster, bin_dir, "bjobs", "-o", "jobid stat queue delimiter=','", done).stdout
    assert delimited == f"JOBID,STAT,QUEUE\n{done},DONE,normal\n"
    # -e named the error file (LSB_ERRORFILE, as the job writes it); -L ran the command with bash.
    assert (cluster.workdir / "quick.err").read_text() == f"{cluster.workdir}/quick.err\n"
    assert (cluster.workdir / f"{done}.out").read_text().strip()  # $BASH_VERSION: not empty
    assert "Done successfully." in run(cluster, bin_dir, "bjobs", "-l", done).stdout
    queue = run(cluster, bin_dir, "bqueues", "normal").stdout.splitlines()[1].split()
    assert queue[7:] == ["2", "1", "0", "1"]  # NJOBS PEND RUN SUSP: the held job is suspended (PSUSP)
    unfinished = run(cluster, bin_dir, "bhist").stdout.splitlines()  # by default, unfinished jobs only
    assert [line.split()[0] for line in unfinished[2:]] == [pending, held]
    summary = run(cluster, bin_dir, "bhist", "-a").stdout.splitlines()
    assert summary[1].split() == ["JOBID", "USER", "JOB_NAME", "PEND", "PSUSP", "RUN", "USUSP", "SSUSP", "UNKWN",
                                  "TOTAL"]
    assert [line.split()[0] for line in summary[2:]] == [pending, held, done]
    run(cluster, bin_dir, "bkill", "0")


def test_with_no_cluster_the_commands_say_so_as_lsf_does(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    elsewhere = {"DROVER_SOCKET": str(cluster.root / "no-such.sock")}
    for argv in (["bsub"], ["bjobs"], ["bkill", "1"], ["bqueues"], ["bhosts"]):
        done = run(cluster, bin_dir, *argv, stdin="true\n", env=elsewhere)
        assert (done.returncode, done.stdout) == (255, ""), done
        assert done.stderr == f"batch system daemon not responding ... still trying\n{argv[0]}: LSF is down. " \
                              "Please wait ...\n", done.stderr


def test_an_element_of_an_array_is_killed_by_its_id(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    array = bsub(cluster, bin_dir, "-H", "-J", "many[1-3]", "true")
    killed = run(cluster, bin_dir, "bkill", f"{array}[2]")
    assert (killed.returncode, killed.stdout) == (0, f"Job <{array}[2]> is being terminated\n"), killed.stderr
    states = run(cluster, bin_dir, "bjobs", "-a", "-noheader", "-o", "jobid jobindex stat", array).stdout
    assert [line.split() for line in states.splitlines()] == [
        [array, "1", "PSUSP"], [array, "2", "EXIT"], [array, "3", "PSUSP"]]
    signalled = run(cluster, bin_dir, "bkill", "-s", "USR1", f"{array}[9]")
    assert (signalled.returncode, signalled.stderr) == (255, f"Job <{array}[9]>: No matching job found\n")
    newer = bsub(cluster, bin_dir, "-H", "-J", "many", "true")
    # -J without an id or 0: the newest job of that name, as LSF takes it; with 0, every one.
    assert run(cluster, bin_dir, "bkill", "-J", "many").stdout == f"Job <{newer}> is being terminated\n"
    assert run(cluster, bin_dir, "bkill", "-J", "many*", "0").stdout == f"Job <{array}> is being terminated\n"
