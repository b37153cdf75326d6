"""condor_submit's submit description language on plain data: lines, continuations, custom
attributes, queue statements in every form, macros, and the values of arguments, environment
and sizes in their old and new syntax."""

from __future__ import annotations

import pytest

from drover.compat.htcondor import values
from drover.compat.htcondor.submitfile import Queue, SubmitFileError, expand, parse, procs


def all_procs(text: str, files: dict[str, str] | None = None, **kwargs: object) -> list[dict[str, str]]:
    submit = parse(text, lambda path: (files or {})[path])
    return [p.values for p in procs(submit, "7", {"HOME": "/home/ann"}, **kwargs)]  # type: ignore[arg-type]


def test_commands_comments_continuations_and_custom_attributes() -> None:
    submit = parse("# a comment\nExecutable = /bin/echo\narguments = a \\\n  b\n+Project = \"x\"\nMY.Site = 3\nqueue\n")
    keys = [(s.key, s.spelled, s.value) for s in submit.statements if not isinstance(s, Queue)]
    assert keys == [("executable", "Executable", "/bin/echo"), ("arguments", "arguments", "a   b"),
                    ("my.project", "Project", '"x"'), ("my.site", "Site", "3")]


def test_queue_n_numbers_procs_and_expands_process_and_cluster() -> None:
    out = all_procs("output = out.$(Cluster).$(Process)\nqueue 3\n")
    assert [p["output"] for p in out] == ["out.7.0", "out.7.1", "out.7.2"]


def test_queue_in_a_list_sets_item_and_item_index() -> None:
    out = all_procs("arguments = $(Item) $(ItemIndex) $(Step)\nqueue 2 in (a, b)\n")
    assert [p["arguments"] for p in out] == ["a 0 0", "a 0 1", "b 1 0", "b 1 1"]


def test_queue_variables_from_a_multi_line_list_and_from_a_file() -> None:
    out = all_procs("arguments = $(x)-$(y)\nqueue x,y from (\n1 one\n2 two\n)\n")
    assert [p["arguments"] for p in out] == ["1-one", "2-two"]
    out = all_procs("arguments = $(name)\nqueue name from items.txt\n", {"items.txt": "alpha\n# skipped\nbeta\n"})
    assert [p["arguments"] for p in out] == ["alpha", "beta"]


def test_queue_matching_globs_files(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    import pathlib

    directory = pathlib.Path(str(tmp_path))
    for name in ("b.dat", "a.dat", "c.txt"):
        (directory / name).write_text("")
    (directory / "d.dat").mkdir()
    monkeypatch.chdir(directory)
    out = all_procs("input = $(file)\nqueue file matching files *.dat\n")
    assert [p["input"] for p in out] == ["a.dat", "b.dat"]


def test_several_queue_statements_take_the_values_set_before_each() -> None:
    out = all_procs("arguments = first\nqueue\narguments = second\nqueue 2\n")
    assert [p["arguments"] for p in out] == ["first", "second", "second"]


def test_command_line_values_come_first_and_append_comes_before_the_queue() -> None:
    out = all_procs("arguments = $(word)\nqueue\n", extra_before=[("word", "hi")], append=["arguments = x$(word)"])
    assert [p["arguments"] for p in out] == ["xhi"]
    out = all_procs("arguments = a\n", append=["queue 2"])
    assert len(out) == 2


def test_macros_defaults_env_and_filename_parts() -> None:
    names = {"path": "/data/in/file.tar.gz", "quoted": '"7.1"', "self": "$(self)"}
    assert expand("$(missing:dflt) $(missing)!", names, {}) == "dflt !"
    assert expand("$ENV(HOME)/x $ENV(NOPE:none)", names, {"HOME": "/home/ann"}) == "/home/ann/x none"
    assert expand("$Fn(path) $Fx(path) $Fp(path) $Fnx(path) $F(quoted)", names, {}) == \
        "file.tar .gz /data/in/ file.tar.gz 7.1"
    with pytest.raises(SubmitFileError):
        expand("$(self)", names, {})


def test_a_line_that_is_no_command_is_the_error_condor_submit_gives() -> None:
    with pytest.raises(SubmitFileError, match="ERROR: on Line 2 of submit file"):
        parse("executable = x\nthis is nonsense\nqueue\n")
    with pytest.raises(SubmitFileError, match="invalid Queue statement"):
        parse("queue 3 x\n")
    with pytest.raises(SubmitFileError, match="no closing"):
        parse("queue x in (\na\n")


@pytest.mark.parametrize(("text", "expected"), [
    ('"one ""two"" \'spacey \'\'quoted\'\' argument\'"', ["one", '"two"', "spacey 'quoted' argument"]),
    ('"a ""quoted"" word"', ["a", '"quoted"', "word"]),
    ("old style \\\"quoted\\\"", ["old", "style", '"quoted"']),
    ("", []),
])
def test_arguments_in_new_and_old_syntax(text: str, expected: list[str]) -> None:
    assert values.arguments(text) == expected


def test_environment_in_new_and_old_syntax() -> None:
    assert values.environment("\"A=1 B='x y' C=''\"") == {"A": "1", "B": "x y", "C": ""}
    assert values.environment("A=1;B=two") == {"A": "1", "B": "two"}
    with pytest.raises(values.SubmitValueError):
        values.environment('"1A=x"')


@pytest.mark.parametrize(("text", "unit", "kib"), [
    ("512", 1024, 512 * 1024), ("2 GB", 1024, 2 * 1024 * 1024), ("1.5g", 1024, 1572864), ("100", 1, 100),
    ("10M", 1, 10240), ("4096 B", 1, 4), ("floor(x)", 1024, None),
])
def test_sizes_with_units(text: str, unit: int, kib: int | None) -> None:
    assert values.size_kib(text, unit) == kib


def test_a_size_with_an_unknown_unit_is_refused() -> None:
    with pytest.raises(values.SubmitValueError):
        values.size_kib("3 parsecs", 1024)
