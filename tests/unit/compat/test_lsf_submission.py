"""From bsub's options to a Drover job (compat/lsf/submission.py), on plain data."""

from __future__ import annotations

import pytest

from drover.compat.lsf.submission import Context, Submission, build, command_line_script
from drover.compat.lsf.submit_options import BSUB_OPTIONS
from drover.compat.lsf.syntax import LsfUsageError, parse
from drover.core.errors import BadRequest

CTX = Context(cwd="/home/u/work", home="/home/u", user="u", host="login1",
              environ={"PATH": "/opt/bin:/bin", "HOME": "/home/u", "SECRET": "x"}, now=0.0,
              is_dir=lambda path: path == "/home/u/work/logs")


def submit(*words: str, approximations: list[str] | None = None, ctx: Context = CTX) -> Submission:
    given, _ = parse("bsub", list(words), BSUB_OPTIONS, permute=False)
    notes = approximations if approximations is not None else []
    return build(given, "hostname\n", "hostname", [], ctx, notes.append)


def test_the_defaults_are_lsfs() -> None:
    job = submit().job
    assert (job["name"], job["workdir"], job["submit_dir"], job["cpus"]) == ("hostname", "/home/u/work",
                                                                           "/home/u/work", 1)
    assert job["output"] == "/home/u/work/%j.out" and job["error"] is None and "open_mode" not in job
    assert job["environment"]["SECRET"] == "x" and job["environment"]["LSB_SUB_HOST"] == "login1"
    # An array's elements each get their own file without -o; with it, they append to the one named.
    assert submit("-J", "a[1-3]").job["output"] == "/home/u/work/%j_%a.out"
    assert submit("-J", "a[1-3]", "-o", "all.log").job["output"] == "/home/u/work/all.log"


def test_output_files_append_or_overwrite_with_ids_and_indices() -> None:
    job = submit("-o", "out.%J.%I", "-e", "logs").job
    assert job["output"] == "/home/u/work/out.%j.%a" and job["error"] == "/home/u/work/logs/%j.err"
    assert job["open_mode"] == "append"
    overwritten = submit("-oo", "o.txt", "-cwd", "/scratch").job
    assert overwritten["output"] == "/scratch/o.txt" and "open_mode" not in overwritten
    assert overwritten["environment"]["LSB_OUTPUTFILE"] == "o.txt"


def test_slots_spans_memory_and_limits() -> None:
    job = submit("-n", "4", "-R", "span[hosts=1] rusage[mem=2048]", "-W", "1:30", "-q", "normal").job
    assert (job["cpus"], job["memory_mib"], job["time_limit_s"], job["queue"]) == (4, 2, 5400, "default")
    spread = submit("-n", "8", "-R", "span[ptile=4]", "-M", "4GB").job
    assert (spread["cpus"], spread["pe"], spread["pe_slots"], spread["pe_per_node"]) == (1, "slurm", "8", 4)
    assert spread["memory_mib"] == 4096
    with pytest.raises(BadRequest, match="multiple of ptile"):
        submit("-n", "6", "-R", "span[ptile=4]")
    featured = submit("-R", "select[avx2 && bigmem]", "-gpu", "num=2/task").job
    assert featured["constraint"] == "avx2&bigmem" and featured["gres"] == ["gpu:2"]


def test_arrays_holds_mail_and_the_rest() -> None:
    submission = submit("-J", "sweep[1-5]%2", "-H", "-B", "-N", "-u", "me@x", "-x", "-rn", "-sp", "100",
                        "-E", "prep", "-Ep", "post", "-Jd", "a note", "-K", "-p", "50")
    job = submission.job
    assert submission.array and submission.block and job["array"] == "1-5%2" and job["name"] == "sweep"
    assert job["hold"] and job["exclusive"] and job["rerunnable"] is False and job["priority"] == 1023
    assert (job["mail_user"], job["mail_type"]) == ("me@x", ["BEGIN", "END"])
    assert (job["prolog"], job["epilog"], job["comment"], job["pids_max"]) == ("prep", "post", "a note", 50)


def test_environment_choices_add_up() -> None:
    none = submit("-env", "none").job["environment"]
    assert set(none) == {"PATH", "LSB_SUB_HOST"} and none["PATH"] == "/usr/local/bin:/bin:/usr/bin"
    chosen = submit("-env", "all, ~SECRET", "-env", "A=1").job["environment"]
    assert "SECRET" not in chosen and chosen["A"] == "1" and chosen["PATH"] == "/opt/bin:/bin"


def test_approximations_warn_and_refusals_refuse() -> None:
    notes: list[str] = []
    submit("-P", "proj", "-nnodes", "1", "-w", "exit(3, 2)", approximations=notes)
    assert [note.split(":")[0] for note in notes] == ["-P proj", "-nnodes 1", "-w"]
    with pytest.raises(BadRequest, match="-i is not supported by Drover"):
        submit("-i", "input.txt")
    with pytest.raises(LsfUsageError, match="Bad user priority"):
        submit("-sp", "0")


def test_a_command_line_is_run_by_sh_with_its_words_joined() -> None:
    assert command_line_script(["echo", "a b", ";", "exit", "3"]) == "#!/bin/sh\nexec /bin/sh -c 'echo a b ; exit 3 '\n"
