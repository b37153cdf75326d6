"""LSF's value syntaxes (compat/lsf/values.py) and its command-line syntax (compat/lsf/syntax.py),
on plain data."""

from __future__ import annotations

from datetime import datetime

import pytest

from drover.compat.lsf.bjobs import OPTIONS as BJOBS
from drover.compat.lsf.bsub import OPTIONS as BSUB
from drover.compat.lsf.syntax import LsfUsageError, approximate, directive_words, parse
from drover.compat.lsf.values import (
    Dependency,
    LsfValueError,
    begin_time,
    dependencies,
    environment_spec,
    job_name,
    requirement,
    run_limit_s,
    size_mib,
)


def test_memory_sizes_in_the_limits_unit_or_their_own() -> None:
    assert size_mib("1048576") == 1024  # KB, LSF's default unit
    assert size_mib("1073742") == 1049  # dask-jobqueue's 1 GiB in decimal KB, which LSF reads as KiB
    assert size_mib("512", "MB") == 512 and size_mib("4GB") == 4096 and size_mib("2g") == 2048
    assert size_mib("524288KB") == 512 and size_mib("1.5G") == 1536
    for bad in ("lots", "", "4XB", "-1"):
        with pytest.raises(LsfValueError, match="Bad argument for memory limit"):
            size_mib(bad)


def test_run_limits() -> None:
    assert run_limit_s("30") == 1800 and run_limit_s("1:30") == 5400 and run_limit_s("0:5/hostA") == 300
    assert run_limit_s("120") == 7200
    for bad in ("x1", "1:2:3", "0", ""):
        with pytest.raises(LsfValueError, match="Bad RUNLIMIT specification"):
            run_limit_s(bad)


def test_begin_times_are_the_next_such_moment() -> None:
    now = datetime(2026, 11, 28, 10, 0).timestamp()
    assert begin_time("11:30", now) == datetime(2026, 11, 28, 11, 30).timestamp()
    assert begin_time("9:00", now) == datetime(2026, 11, 29, 9, 0).timestamp()  # tomorrow
    assert begin_time("12:9:00", now) == datetime(2026, 12, 12, 9, 0).timestamp()
    assert begin_time("2027:1:2:3:04", now) == datetime(2027, 1, 2, 3, 4).timestamp()
    with pytest.raises(LsfValueError, match="Bad time specification"):
        begin_time("25:00", now)


def test_job_names_and_arrays() -> None:
    assert job_name("plain") == ("plain", None, None)
    assert job_name("sweep[1-10]%2") == ("sweep", "1-10", 2)
    assert job_name("a[1-9:2,15,20-22]") == ("a", "1-9:2,15,20-22", None)
    for bad in ("x[3-1]", "x[a]", "x[1-3", "x[1]%0"):
        with pytest.raises(LsfValueError):
            job_name(bad)


def test_resource_requirement_strings() -> None:
    wanted = requirement('span[hosts=1] rusage[mem=4096:duration=10]')
    assert wanted.span == {"hosts": "1"} and wanted.rusage == {"mem": "4096", "duration": "10"}
    more = requirement("avx2 && bigmem order[r15s] span[ptile=4]")
    assert more.select == ["avx2 && bigmem"] and more.span == {"ptile": "4"} and more.other == ["order"]
    merged = requirement("select[gpu]", requirement("rusage[mem=1G]"))
    assert merged.select == ["gpu"] and merged.rusage == {"mem": "1G"}
    with pytest.raises(LsfValueError, match="Bad resource requirement syntax"):
        requirement("span[hosts]")


def test_dependency_expressions_map_onto_droverss_kinds() -> None:
    found, any_one = dependencies("done(12) && ended(\"prep\") && exit(13[2])")
    assert not any_one and found == [Dependency("afterok", 12), Dependency("afterany", None, None, "prep"),
                                     Dependency("afternotok", 13, 2)]
    found, any_one = dependencies("started(4) || 5")
    assert any_one and found == [Dependency("after", 4), Dependency("afterok", 5)]
    (counted,), _ = dependencies("numdone(7, *)")
    assert counted == Dependency("afterok", 7)
    (code,), _ = dependencies("exit(8, 3)")
    assert code.kind == "afternotok" and code.approximate
    for refused in ("done(1) && exit(2) || ended(3)", "!done(1)", "numdone(7, 3)", "numrun(7, *)", "foo(1)",
                    "done(1", "done(a*)", ""):
        with pytest.raises(LsfValueError):
            dependencies(refused)


def test_environment_specifications() -> None:
    assert environment_spec("all").everything
    none = environment_spec("none")
    assert not none.everything and none.chosen == ()
    chosen = environment_spec("all, ~SECRET, A=1, B")
    assert chosen.everything and chosen.excluded == {"SECRET"} and chosen.chosen == (("A", "1"), ("B", None))
    assert environment_spec("X='a,b'").chosen == (("X", "a,b"),)
    with pytest.raises(LsfValueError):
        environment_spec("none, A=1")


def test_lsfs_command_line_syntax() -> None:
    given, operands = parse("bsub", ["-n4", "-oo", "out", "-J", "x", "sleep", "-n", "9"], BSUB, permute=False)
    assert [(g.key, g.value) for g in given] == [("n", "4"), ("oo", "out"), ("J", "x")]
    assert operands == ["sleep", "-n", "9"]  # the job's own words
    flags, ids = parse("bjobs", ["-aw", "12", "-noheader"], BJOBS)
    assert [g.key for g in flags] == ["a", "w", "noheader"] and ids == ["12"]
    for words, message in ((["-Z"], "bjobs: illegal option -- Z"), (["-u"], "bjobs: option requires an argument -- u"),
                           (["-aZ"], "bjobs: illegal option -- Z")):
        with pytest.raises(LsfUsageError, match=message):
            parse("bjobs", words, BJOBS)


def test_directives_are_read_up_to_the_first_command() -> None:
    script = '#!/bin/bash\n#BSUB -J "a b"\n\n# a comment\n#BSUB -n 2\nhostname\n#BSUB -q late\n'
    assert directive_words(script) == ["-J", "a b", "-n", "2"]
    with pytest.raises(LsfUsageError, match="Bad #BSUB line"):
        directive_words('#BSUB -J "unclosed\n')


def test_an_approximated_option_of_a_query_warns_or_is_refused_when_strict(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    given, _ = parse("bjobs", ["-A", "-w"], BJOBS)
    approximate("bjobs", given)
    assert capsys.readouterr().err == "bjobs: warning: -A: an array is shown element by element\n"
    monkeypatch.setenv("DROVER_COMPAT_STRICT", "1")
    with pytest.raises(LsfUsageError, match="refused under DROVER_COMPAT_STRICT=1"):
        approximate("bjobs", given)
