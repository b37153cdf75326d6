"""What squeue selects and how it sorts, from its options: states (names, codes, `all`), jobs
(`-j` attached or as the next word), users, names, partitions, nodes, and the sort keys."""

from __future__ import annotations

import os

import pytest
from tests.unit.compat.slurm_fixtures import ALL, NOW

from drover.compat.optiontable import parse_gnu
from drover.compat.slurm.common import Refused
from drover.compat.slurm.jobs import slurm_jobs
from drover.compat.slurm.squeue import LETTERS, OPTIONS, Query, render
from drover.compat.slurm.squeue_sort import sort_jobs


def listed(argv: list[str], environ: dict[str, str] | None = None) -> list[str]:
    found, operands = parse_gnu(argv, OPTIONS, permute=True)
    query = Query(found, operands, environ or {})
    out: list[str] = []
    render(query, [job for info in ALL for job in slurm_jobs(info, NOW)], out, [])
    return out


def test_default_lists_active_jobs_sorted_by_state_then_priority() -> None:
    ids = [line.split()[0] for line in listed(["-h"])]
    assert ids == ["50_[3-6%2]", "46", "42", "50_2"]


def test_states_jobs_users_and_names() -> None:
    assert [line.split()[0] for line in listed(["-h", "-t", "all", "-S", "i"])] == [
        "42", "43", "44", "45", "46", "50_1", "50_2", "50_[3-6%2]"]
    assert listed(["-h", "-t", "cd,F", "-o", "%i %t"]) == ["50_1 CD", "43 F"]
    assert listed(["-h", "--states=completed", "-o", "%i"]) == ["50_1"]
    assert listed(["-h", "-j", "42", "-o", "%i %T"]) == ["42 RUNNING"]
    assert listed(["-h", "--jobs=50_4", "-o", "%i"]) == ["50_[3-6%2]"]  # a pending group holds it
    assert listed(["-h", "-j", "43", "-o", "%i"]) == []  # ended: not listed without -t
    assert listed(["-h", "-u", str(os.getuid()), "-n", "later", "-o", "%i"]) == ["46"]
    assert listed(["-h", "-w", "n[1-3]", "-S", "-i", "-o", "%i"]) == ["50_2", "42"]
    assert listed(["-h", "-p", "other"]) == []


def test_environment_variables_and_their_precedence() -> None:
    assert listed(["-h"], {"SQUEUE_FORMAT": "%i|%t"})[0] == "50_[3-6%2]|PD"
    assert listed(["-h"], {"SQUEUE_FORMAT2": "jobid:5,name:6"})[0] == "50   sweep "
    assert listed(["-h", "-o", "%i"], {"SQUEUE_FORMAT": "%t"})[0] == "50_[3-6%2]"


def test_refusals_in_squeues_words() -> None:
    with pytest.raises(Refused, match="Invalid job state specified: nope"):
        listed(["-t", "nope"])
    with pytest.raises(Refused, match="Invalid job id: x1"):
        listed(["-j", "x1"])
    with pytest.raises(Refused, match=r"-O \(--Format\) is incompatible with -o \(--format\)"):
        listed(["-o", "%i", "-O", "jobid"])
    with pytest.raises(Refused, match="Options -o\\(--format\\) and -l\\(--long\\) are mutually exclusive"):
        listed(["-l", "-o", "%i"])
    with pytest.raises(Refused, match="Unrecognized option: stray"):
        listed(["stray"])
    with pytest.raises(Refused, match="Invalid sort specification"):
        sort_jobs([job for info in ALL for job in slurm_jobs(info, NOW)], "!", LETTERS)


def test_an_approximated_option_is_refused_under_strictness(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from drover.compat.slurm.squeue import main

    monkeypatch.setenv("DROVER_COMPAT_STRICT", "1")
    assert main(["--start"]) == 1
    assert capsys.readouterr().err == ("squeue: error: --start is only approximated by Drover (Drover does not "
                                       "estimate start times: they show as N/A); refused because "
                                       "DROVER_COMPAT_STRICT is set\n")


def test_percent_all_prints_every_letter() -> None:
    header = listed(["-o", "%all"])[0].split("|")
    assert header[:3] == ["ACCOUNT", "TRES_PER_NODE", "MIN_CPUS"] and len(header) == len(LETTERS)


def test_an_unknown_user_is_reported_and_matches_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert listed(["-h", "-u", "no-such-user-here"]) == []
    assert capsys.readouterr().err == "squeue: error: Invalid user: no-such-user-here\n"
