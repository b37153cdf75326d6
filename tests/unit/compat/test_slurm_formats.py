"""Golden outputs of every format specifier of squeue (`-o` letters, `-O` names), sinfo and
sacct (every --helpformat field, columns and parsable forms), and of scontrol's records, on jobs
built as plain data (slurm_fixtures.py). The golden files are in tests/data/golden/slurm/; the
facts they hold (headers, widths, the `+` of a cut value, state names) are Slurm's, from
src/squeue/print.c, src/sacct/sacct.c and src/common/print_fields.c."""

from __future__ import annotations

import os
import pathlib
import time
from collections.abc import Iterator

import pytest
from tests.unit.compat.slurm_fixtures import ALL, ARRAY, KILLED, NOW, RUNNING, T0

from drover.compat.slurm import columns as fmt
from drover.compat.slurm.jobs import SlurmJob, slurm_jobs
from drover.compat.slurm.printfields import Printer, choose
from drover.compat.slurm.sacct_columns import FIELDS, Line, Units
from drover.compat.slurm.scontrol_show import job_record, layout
from drover.compat.slurm.squeue_columns import COLUMNS
from drover.protocol.api import NodeInfo

GOLDEN = pathlib.Path(__file__).resolve().parents[2] / "data" / "golden" / "slurm"


@pytest.fixture(autouse=True)
def utc() -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in ("TZ", "SLURM_TIME_FORMAT")}
    os.environ["TZ"] = "UTC"
    os.environ.pop("SLURM_TIME_FORMAT", None)
    time.tzset()
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    time.tzset()


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("DROVER_WRITE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from its golden file"


def lines(split: bool = False) -> list[SlurmJob]:
    return [line for info in ALL for line in slurm_jobs(info, NOW, split_pending=split)]


def test_every_squeue_letter() -> None:
    letters = fmt.by_letter(COLUMNS)
    spec = "|".join(f"%{letter}" for letter in sorted(letters))
    errors: list[str] = []
    specs = fmt.parse_letters(spec, letters, errors)
    assert errors == []
    golden("squeue-letters.txt", "\n".join([fmt.header(specs)] + [fmt.line(specs, job) for job in lines()]) + "\n")


def test_every_squeue_name() -> None:
    names = fmt.by_name(COLUMNS)
    specs = fmt.parse_names(",".join(f"{column.name}:|" for column in COLUMNS), names, [])
    golden("squeue-names.txt", "\n".join([fmt.header(specs)] + [fmt.line(specs, job) for job in lines()]) + "\n")


def test_squeue_default_and_long_tables() -> None:
    from drover.compat.slurm.squeue import DEFAULT_FORMAT, LONG_FORMAT, NAMES

    out = []
    for chosen in (DEFAULT_FORMAT, LONG_FORMAT):
        specs = fmt.parse_names(chosen, NAMES, [])
        out += [fmt.header(specs)] + [fmt.line(specs, job) for job in lines()]
    golden("squeue-default.txt", "\n".join(out) + "\n")
    assert out[0] == "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"


def test_squeue_widths_justification_and_cuts() -> None:
    letters = fmt.by_letter(COLUMNS)
    (running,) = slurm_jobs(RUNNING, NOW)
    specs = fmt.parse_letters("%.3T|%3T|%.10i|%-5j|%R", letters, [])
    # `.3` right-justifies and cuts; `3` cuts and pads on the right; `%-5j` is no flag to squeue:
    # `-` is taken as the field letter, unknown, and printed as it is with what follows.
    assert fmt.line(specs, running) == "RUN|RUN|        42|%-5j|n1"
    assert fmt.parse_letters("%-5j", letters, errors := []) and errors == ["Invalid job format specification: -"]
    specs = fmt.parse_letters("before %i after", letters, [])
    assert fmt.line(specs, running) == "before 42 after"
    assert fmt.header(fmt.parse_letters("%.20R", letters, [])) == "    NODELIST(REASON)"
    # -O: 20 wide by default, `:.N` right-justified, `:N|` a suffix, `:` and no digits the whole value
    names = fmt.by_name(COLUMNS)
    assert fmt.line(fmt.parse_names("name", names, []), running) == "train" + " " * 15
    assert fmt.line(fmt.parse_names("name:.8,state:|,jobid:", names, []), running) == "   trainRUNNING|42"


def test_a_bare_percent_prints_an_empty_line_per_job_as_squeue_does() -> None:
    """squeue's parse_format: strtok finds no field in "%", so the header and each job print as
    nothing but their newline (src/squeue/print.c _print_one_job_from_format)."""
    (running,) = slurm_jobs(RUNNING, NOW)
    specs = fmt.parse_letters("%", fmt.by_letter(COLUMNS), errors := [])
    assert errors == [] and fmt.header(specs) == "" and fmt.line(specs, running) == ""


def test_a_width_past_the_largest_is_refused_not_a_traceback() -> None:
    """squeue keeps a width in a C int, which wraps; a width over MAX_WIDTH is refused in
    squeue's form of error (-o and -O), as sacct's `%WIDTH` is."""
    from drover.compat.slurm.common import Refused
    from drover.compat.slurm.printfields import UnknownField

    letters, names = fmt.by_letter(COLUMNS), fmt.by_name(COLUMNS)
    assert fmt.parse_letters(f"%.{fmt.MAX_WIDTH}i", letters, [])[0].width == fmt.MAX_WIDTH
    for text in (f"%{fmt.MAX_WIDTH + 1}i", "%" + "9" * 24 + "i"):
        with pytest.raises(Refused, match="Invalid field width in %"):
            fmt.parse_letters(text, letters, [])
    with pytest.raises(Refused, match="Invalid field width in jobid:"):
        fmt.parse_names("jobid:" + "9" * 24, names, [])
    with pytest.raises(UnknownField, match="Invalid field width in"):
        choose("JobID%" + "9" * 24, FIELDS)
    assert choose("JobID%-7", FIELDS)[0].width == -7


def test_squeue_array_lines() -> None:
    ids = [job.job_id_text for job in slurm_jobs(ARRAY, NOW)]
    assert ids == ["50_1", "50_2", "50_[3-6%2]"]
    split = [job.job_id_text for job in slurm_jobs(ARRAY, NOW, split_pending=True)]
    assert split == ["50_1", "50_2", "50_3", "50_4", "50_5", "50_6"]
    pending = slurm_jobs(ARRAY, NOW)[-1]
    assert (pending.compact_state, pending.reason, pending.array_task_text) == ("PD", "JobArrayTaskLimit", "3-6%2")


def _sacct(jobs: list[SlurmJob], fields: str, parsable: str | None, steps: bool = True) -> str:
    rows = [Line(job, step, Units()) for job in jobs for step in (None, "batch")
            if step is None or (steps and job.start is not None)]
    printer: Printer[Line] = Printer(choose(fields, FIELDS, allow_all=True), parsable)
    return "\n".join(printer.lines(rows)) + "\n"


def test_every_sacct_field_parsable() -> None:
    golden("sacct-all-parsable2.txt", _sacct(lines(), "ALL", "between"))


def test_every_sacct_field_in_columns() -> None:
    golden("sacct-all-columns.txt", _sacct(lines(), "ALL", None))


def test_sacct_columns_cut_with_a_plus_and_widths_by_percent() -> None:
    (killed,) = slurm_jobs(KILLED, NOW)
    text = _sacct([killed], "JobID,JobName,State,ExitCode,MaxRSS,TotalCPU,Elapsed,ReqMem", None)
    assert text.splitlines() == [
        "JobID           JobName      State ExitCode     MaxRSS   TotalCPU    Elapsed     ReqMem ",
        "------------ ---------- ---------- -------- ---------- ---------- ---------- ---------- ",
        "43           a-very-lo+     FAILED      0:9             01:01.750   00:02:00      1000M ",
        "43.batch          batch     FAILED      0:9      4356K  01:01.750   00:02:00            ",
    ]
    assert _sacct([killed], "jobid%-4,jobname%5,state%3", "ending", steps=False).splitlines() == [
        "JobID|JobName|State|", "43|a-very-long-job-name|FAILED|"]
    assert _sacct([killed], "jobid%-4,jobname%5,state%3", None, steps=False).splitlines()[2] == "43   a-ve+ FA+ "


def test_sacct_states_as_slurm_records_them() -> None:
    text = _sacct(lines(), "JobID,State,ExitCode", "between")
    assert "44|CANCELLED by 0|0:0" in text and "44.batch|CANCELLED|0:15" in text
    assert "45|TIMEOUT|0:0" in text and "45.batch|CANCELLED|0:15" in text
    assert "46|PENDING|0:0" in text and "46.batch" not in text


def test_scontrol_records() -> None:
    out = "".join(layout(job_record(job), one_liner=False) for job in lines())
    out += "".join(layout(job_record(job, details=True), one_liner=True) for job in lines())
    golden("scontrol-show-job.txt", out)
    first = layout(job_record(slurm_jobs(RUNNING, NOW)[0]), one_liner=False).splitlines()
    assert first[0] == "JobId=42 JobName=train"
    assert first[3] == "   JobState=RUNNING Reason=None Dependency=(null)"


def _nodes() -> list[NodeInfo]:
    return [NodeInfo(name="n1", state="up", cpus=4, memory_mib=8000, cpus_used=4, memory_mib_used=2048, running=2,
                     last_seen=T0),
            NodeInfo(name="n2", state="up", cpus=4, memory_mib=8000, cpus_used=0, memory_mib_used=0, running=0,
                     last_seen=T0),
            NodeInfo(name="n3", state="up", cpus=8, memory_mib=16000, cpus_used=0, memory_mib_used=0, running=0,
                     last_seen=T0),
            NodeInfo(name="gpu1", state="drained", cpus=2, memory_mib=4000, cpus_used=0, memory_mib_used=0,
                     running=0, last_seen=T0, reason="disk full"),
            NodeInfo(name="old", state="down", cpus=2, memory_mib=4000, cpus_used=0, memory_mib_used=0, running=0,
                     last_seen=None)]


def test_every_sinfo_letter_and_name() -> None:
    from drover.compat.slurm.sinfo import LETTERS as SINFO_LETTERS
    from drover.compat.slurm.sinfo import NAMES as SINFO_NAMES
    from drover.compat.slurm.sinfo_columns import COLUMNS as SINFO_COLUMNS
    from drover.compat.slurm.sinfo_columns import groups

    exact = groups(["default"], _nodes(), per_node=False, exact=True)
    assert [len(g.nodes) for g in exact] == [1, 1, 1, 1, 1]
    lines = groups(["default", "long"], _nodes(), per_node=False)
    assert [(g.partition, g.state, len(g.nodes)) for g in lines][:4] == [
        ("default", "alloc", 1), ("default", "idle", 2), ("default", "drain", 1), ("default", "down", 1)]
    out = []
    specs = fmt.parse_letters("|".join(f"%{letter}" for letter in sorted(SINFO_LETTERS)), SINFO_LETTERS, [])
    out += [fmt.header(specs)] + [fmt.line(specs, line) for line in lines]
    specs = fmt.parse_names(",".join(f"{column.name}:|" for column in SINFO_COLUMNS), SINFO_NAMES, [])
    out += [fmt.header(specs)] + [fmt.line(specs, line) for line in lines]
    golden("sinfo-fields.txt", "\n".join(out) + "\n")


def test_sinfo_default_table() -> None:
    from drover.compat.slurm.sinfo import FORMATS, NAMES, fitted, starred
    from drover.compat.slurm.sinfo_columns import groups

    lines = groups(["default"], _nodes(), per_node=False)
    specs = starred(fitted(fmt.parse_names(FORMATS["default"], NAMES, []), lines, nodes_too=False))
    assert [fmt.header(specs)] + [fmt.line(specs, line) for line in lines] == [
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST",
        "default*     up   infinite      1  alloc n1",
        "default*     up   infinite      2   idle n[2-3]",
        "default*     up   infinite      1  drain gpu1",
        "default*     up   infinite      1  down* old",
    ]
