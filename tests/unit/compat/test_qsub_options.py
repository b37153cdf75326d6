"""qsub parses every option of its man page as Grid Engine does, and does with each what its
table says: honours it, warns, ignores it as documented, or refuses it."""

from __future__ import annotations

import pathlib

import pytest

from drover.compat.gridengine import qsub
from drover.compat.gridengine.submission import build
from drover.compat.gridengine.submit_options import QSUB_OPTIONS
from drover.compat.gridengine.syntax import GeUsageError, Operands, parse
from drover.compat.optiontable import Arity, Mark
from drover.compat.submit_context import Context
from drover.core.errors import BadRequest

MANPAGE = pathlib.Path(__file__).resolve().parents[2] / "data" / "manpages" / "qsub.txt"


def man_options() -> list[tuple[str, int]]:
    rows = [line.split() for line in MANPAGE.read_text().splitlines() if line and not line.startswith("#")]
    return [(name, int(words)) for name, words in rows]


# A value of the right form for each option that takes one (the man page's own examples).
SAMPLES = {
    "-@": ["opts"], "-a": ["202612011200"], "-ac": ["stage=1"], "-ar": ["7"], "-A": ["physics"],
    "-binding": ["linear:1"], "-b": ["n"], "-c": ["n"], "-ckpt": ["blcr"], "-C": ["#PBS"], "-dc": ["stage"],
    "-dl": ["202612011200"], "-e": ["err.txt"], "-hold_jid": ["12"], "-hold_jid_ad": ["12"], "-i": ["in.txt"],
    "-j": ["y"], "-js": ["10"], "-jsv": ["/opt/jsv.sh"], "-l": ["h_rt=60"], "-m": ["be"], "-M": ["me@example.org"],
    "-masterq": ["all.q"], "-now": ["y"], "-N": ["name"], "-o": ["out.txt"], "-P": ["proj"], "-p": ["-5"],
    "-pe": ["smp", "2"], "-q": ["all.q"], "-R": ["y"], "-r": ["n"], "-sc": ["stage=2"], "-shell": ["y"],
    "-sync": ["n"], "-S": ["/bin/bash"], "-t": ["1-3"], "-tc": ["2"], "-v": ["A=1"], "-w": ["e"], "-wd": ["/tmp"],
}
CONTEXT = Context(cwd="/work/here", home="/home/me", user="me", host="node1", environ={"PATH": "/bin", "A": "a"},
                  is_dir=lambda path: False)
TABLE = {option.names[0]: option for option in QSUB_OPTIONS}


def _read(path: str) -> str:
    return "-N from_file # a comment\n# a comment line\n"


def test_the_table_lists_every_man_page_option_with_its_arity() -> None:
    man = dict(man_options())
    assert set(TABLE) == set(man)
    for name, words in man.items():
        arity = {0: Arity.NONE, 1: Arity.REQUIRED, 2: Arity.TWO}[words]
        assert TABLE[name].arity is arity, name


@pytest.mark.parametrize(("name", "words"), man_options())
def test_every_option_is_parsed_and_then_honoured_warned_ignored_or_refused(name: str, words: int) -> None:
    values = SAMPLES.get(name, [])
    assert len(values) == words, name
    parsed = parse([name, *values, "job.sh", "-N", "x"], QSUB_OPTIONS, read=_read)
    assert parsed.operands == ["job.sh", "-N", "x"]  # the script's own arguments are never qsub's
    if name == "-@":
        assert [(g.key, g.value) for g in parsed.given] == [("N", "from_file")]
        return
    (given,) = parsed.given
    assert given.option is TABLE[name] and given.value == (" ".join(values) or None)
    warnings: list[str] = []
    mark = TABLE[name].mark
    if mark is Mark.REFUSED:
        with pytest.raises(BadRequest, match=name):
            build(parsed.given, "echo hi\n", [], "job.sh", False, CONTEXT, warnings.append)
        return
    build(parsed.given, "echo hi\n", [], "job.sh", False, CONTEXT, warnings.append)
    if mark is Mark.APPROXIMATED:
        assert warnings and name in warnings[0]
    else:
        assert warnings == [], name


def test_an_unknown_option_gets_qsubs_error_and_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert qsub.main(["-cwd", "-bogus", "job.sh"]) == 2
    assert capsys.readouterr().err == 'qsub: ERROR! invalid option argument "-bogus"\n'
    # Grid Engine does not know getopt's forms: no abbreviation, no value glued on.
    for word in ("-hold", "-Nname", "--name=x"):
        with pytest.raises(GeUsageError, match=f'invalid option argument "{word}"'):
            parse([word, "job.sh"], QSUB_OPTIONS)


def test_a_missing_value_and_a_bad_yes_no_are_refused_in_grid_engines_words() -> None:
    with pytest.raises(GeUsageError, match="^ERROR! -N option must have argument$") as missing:
        parse(["-N"], QSUB_OPTIONS)
    assert missing.value.status == 2
    with pytest.raises(GeUsageError, match="^ERROR! -pe option must have range as 2nd argument$"):
        parse(["-pe", "smp"], QSUB_OPTIONS)
    given = parse(["-j", "maybe"], QSUB_OPTIONS).given
    with pytest.raises(GeUsageError, match='^invalid option argument "-j maybe"$') as bad:
        build(given, "true\n", [], "job.sh", False, CONTEXT, lambda message: None)
    assert bad.value.status == 7


def test_hard_and_soft_scopes_and_the_double_dash() -> None:
    parsed = parse(["-l", "h_rt=60", "-soft", "-l", "arch=x86", "-q", "fast.q", "-hard", "-l", "h_vmem=1G",
                    "--", "a", "b"], QSUB_OPTIONS)
    assert [(g.value, g.soft) for g in parsed.given if g.key in ("l", "q")] == [
        ("h_rt=60", False), ("arch=x86", True), ("fast.q", True), ("h_vmem=1G", False)]
    assert parsed.operands == ["-", "a", "b"]  # no script: read from stdin, with these arguments
    job = build(parsed.given, "true\n", ["a", "b"], "-", False, CONTEXT, pytest.fail).job
    assert job["time_limit_s"] == 60 and job["memory_mib"] == 1024 and "queue" not in job  # soft: a preference
    assert job["name"] == "STDIN"
    with pytest.raises(GeUsageError, match="-- option must be followed by job arguments"):
        parse(["--"], QSUB_OPTIONS)


def test_binding_takes_its_instance_word_and_operands_may_start_with_a_dash_after_the_script() -> None:
    parsed = parse(["-binding", "env", "linear:2", "-b", "y", "ls", "-l"], QSUB_OPTIONS, Operands.SCRIPT)
    assert [(g.key, g.value) for g in parsed.given] == [("binding", "env linear:2"), ("b", "y")]
    assert parsed.operands == ["ls", "-l"]


def test_binary_commands_are_joined_for_the_shell_as_grid_engine_does() -> None:
    given = parse(["-b", "y"], QSUB_OPTIONS).given
    job = build(given, "bash", ["-c", "exit 4"], "bash", True, CONTEXT, pytest.fail).job
    assert job["script"] == "#!/bin/sh\nexec /bin/sh -c 'bash -c exit 4 '\n" and job["name"] == "bash"
    given = parse(["-b", "y", "-shell", "n"], QSUB_OPTIONS).given
    job = build(given, "bash", ["-c", "exit 4"], "bash", True, CONTEXT, pytest.fail).job
    assert job["script"] == "#!/bin/sh\nexec bash -c 'exit 4'\n"


def test_output_paths_defaults_and_pseudo_variables() -> None:
    given = parse(["-cwd", "-t", "2-10:2", "-tc", "3", "-o", "node9:/x/$JOB_NAME.$JOB_ID.$TASK_ID",
                   "-e", "logs", "-N", "sweep"], QSUB_OPTIONS).given
    ctx = Context(cwd="/w", home="/h", user="me", host="node1", environ={}, is_dir=lambda p: p == "/w/logs")
    job = build(given, "true\n", [], "job.sh", False, ctx, pytest.fail).job
    assert job["workdir"] == "/w" and job["array"] == "2-10:2%3"
    assert job["output"] == "/x/%x.%j.%a" and job["error"] == "logs/%x.e%j.%a"
    home = build(parse(["-j", "y"], QSUB_OPTIONS).given, "true\n", [], "/s/run.sh", False, ctx, pytest.fail).job
    assert home["workdir"] == "/h" and home["output"] == "%x.o%j" and home["error"] is None
    assert home["name"] == "run.sh"


def test_resources_are_per_slot_and_the_environment_carries_sge_o() -> None:
    given = parse(["-pe", "smp", "4", "-l", "h_vmem=2G,h_rt=1:30:00", "-v", "A,B=2", "-m", "ea"],
                  QSUB_OPTIONS).given
    job = build(given, "true\n", [], "job.sh", False, CONTEXT, pytest.fail).job
    assert (job["pe"], job["pe_slots"]) == ("smp", "4") and "cpus" not in job
    assert job["memory_mib"] == 8192 and job["time_limit_s"] == 5400
    assert job["environment"]["A"] == "a" and job["environment"]["B"] == "2"
    assert job["environment"]["SGE_O_WORKDIR"] == "/work/here" and job["environment"]["SGE_O_HOST"] == "node1"
    assert job["mail_user"] == "me" and job["mail_type"] == ["END", "FAIL"]


def _job_with(*argv: str) -> dict[str, object]:
    given = parse(list(argv), QSUB_OPTIONS).given
    return dict(build(given, "true\n", [], "job.sh", False, CONTEXT, pytest.fail).job)


@pytest.mark.parametrize(("requests", "expected"), [
    (["gpu=2"], {"gres": ["gpu:2"]}),
    (["gpus=1"], {"gres": ["gpu:1"]}),
    (["gpu=1", "gpu=3"], {"gres": ["gpu:3"]}),  # a later request of the same name wins
    (["arch=lx-amd64"], {"constraint": "arch=lx-amd64"}),
    (["a=lx-arm64"], {"constraint": "arch=lx-arm64"}),
    (["arch=lx-amd64|lx-arm64"], {"constraint": "(arch=lx-amd64|arch=lx-arm64)"}),
    (["exclusive=true"], {"exclusive": True}), (["exclusive=TRUE"], {"exclusive": True}),
    (["excl=1"], {"exclusive": True}), (["exclusive"], {"exclusive": True}),
    (["exclusive=true", "exclusive=false"], {"exclusive": False}),
    (["matlab=2"], {"resource_requests": {"matlab": "2"}}),
    (["bigmem=TRUE,scratch=100G"], {"resource_requests": {"bigmem": "TRUE", "scratch": "100G"}}),
    (["infiniband"], {"resource_requests": {"infiniband": "TRUE"}}),
    (["h_rt=60,gpu=1,arch=x86_64,exclusive=1,matlab=1"],
     {"time_limit_s": 60, "gres": ["gpu:1"], "constraint": "arch=x86_64", "exclusive": True,
      "resource_requests": {"matlab": "1"}}),
])
def test_hard_resource_requests_are_sent(requests: list[str], expected: dict[str, object]) -> None:
    job = _job_with(*[word for item in requests for word in ("-l", item)])
    assert {key: job.get(key) for key in expected} == expected
    fields = {"gres", "constraint", "exclusive", "resource_requests"} - set(expected)
    assert not fields & set(job), fields & set(job)


def test_soft_resource_requests_stay_preferences() -> None:
    job = _job_with("-soft", "-l", "gpu=2,arch=x86_64,exclusive=true,matlab=1", "-hard", "-l", "h_rt=60")
    assert job["time_limit_s"] == 60
    assert not {"gres", "constraint", "exclusive", "resource_requests"} & set(job)


@pytest.mark.parametrize(("request_", "message"), [
    ("gpu=0", "-l gpu=0: 'gpu:0': the count must be 1 or more"),
    ("gpu=two", "-l gpu=two: expected a number of GPUs"),
    ("gpus=", "-l gpus=: expected a number of GPUs"),
    ("gpu=99999999", "the count must be at most"),
    ("arch=lx*", "-l arch=lx\\*: expected an architecture"),
    ("arch=", "expected an architecture"),
    ("arch=a||b", "expected an architecture"),
    ("exclusive=maybe", "-l exclusive=maybe: expected true or false"),
    ("=3", "-l =3: expected resource=value"),
])
def test_bad_resource_values_are_refused(request_: str, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        _job_with("-l", request_)


def test_qrsh_sends_gpus_arch_and_exclusive_and_warns_about_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    from drover.compat.gridengine.qrsh import drover_run_arguments
    from drover.compat.gridengine.submit_options import QRSH_OPTIONS

    given = parse(["-l", "gpu=2,arch=x86_64,exclusive=true,matlab=1"], QRSH_OPTIONS, Operands.SCRIPT).given
    argv = drover_run_arguments(given, ["hostname"], on_terminal=False)
    assert argv[argv.index("--gres") + 1] == "gpu:2" and argv[argv.index("--constraint") + 1] == "arch=x86_64"
    assert "--exclusive" in argv and argv[-2:] == ["--", "hostname"]
    assert "-l matlab: qrsh on Drover sends only" in capsys.readouterr().err
