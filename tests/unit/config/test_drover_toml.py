"""drover.toml read into its schema: every section, defaults, and each refusal naming the file,
the line and the key."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from drover.config_file import ConfigError, KeyLines, parse_config, read_config
from drover.config_schema import (
    ControllerSection,
    DroverConfig,
    ExecdSection,
    QueueSection,
    RlimitsSection,
)
from drover.core.limits import Limits
from drover.execd.main import cleanup_settings, shepherd_options
from drover.shepherd.setup import RLIMITS


def refusal(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "drover.toml")
    return str(caught.value)


# -- what is read ---------------------------------------------------------------------------------

def test_no_file_means_every_default(tmp_path: Path) -> None:
    loaded = read_config(str(tmp_path / "drover.toml"))
    assert not loaded.found and loaded.from_file == frozenset()
    assert loaded.config == DroverConfig()


def test_defaults_are_those_the_daemons_used() -> None:
    controller, execd = ControllerSection(), ExecdSection()
    assert (controller.kill_grace_s, controller.sqlite_synchronous, controller.node_timeout_s) == (10.0, "NORMAL", 300.0)
    assert (controller.shared, controller.operators, controller.allow_root_jobs, controller.requeue_held) == (
        False, [], False, False)
    assert (controller.smtp_host, controller.smtp_port) == ("localhost", 25)
    assert all(getattr(controller.limits(), key) == getattr(Limits, key) for key in Limits.KEYS)
    assert (execd.node_name, execd.cpus, execd.memory_mib, execd.spool, execd.exit_hook) == (None,) * 5
    assert (execd.keep_spool, execd.smtp_host, execd.smtp_port, execd.mail_tries) == (False, "localhost", 25, 5)
    assert (execd.identity_tries, execd.identity_retry_s, execd.chdir_tries, execd.chdir_retry_s) == (3, 10.0, 3, 2.0)
    assert (execd.method_timeout_s, execd.stage_out_limit_bytes, execd.rlimits.set()) == (600.0, 64 << 20, {})
    assert DroverConfig().queues == {} and DroverConfig().compat.min_job_age_s is None


def test_every_section_is_read() -> None:
    loaded = parse_config("""
[controller]
kill_grace_s = 2          # an integer is a number too
sqlite_synchronous = "FULL"
node_timeout_s = 1.5
shared = true
operators = ["alice", "bob"]
allow_root_jobs = true
smtp_host = "mail"
smtp_port = 2525
requeue_held = true
max_array_size = 10
max_stage_in_bytes = 2048

[execd]
node_name = "n1"
cpus = 4
memory_mib = 2048
spool = "/var/spool/drover"
exit_hook = "/site/hook"
keep_spool = true
mail_tries = 2
prolog = "echo prolog"
pe_stop = "echo stop"
rlimits = {nofile = 4096, core = 0, as = -1}

[queues.fast]
prolog = "echo fast"

[queues."big jobs"]
epilog = "echo big"

[compat]
min_job_age_s = 300
""")
    config = loaded.config
    assert config.controller.kill_grace_s == 2.0 and isinstance(config.controller.kill_grace_s, float)
    assert config.controller.operators == ["alice", "bob"] and config.controller.shared
    limits = config.controller.limits()
    assert (limits.max_array_size, limits.max_stage_in_bytes, limits.max_name_bytes) == (10, 2048, Limits.max_name_bytes)
    assert (config.execd.node_name, config.execd.cpus, config.execd.prolog) == ("n1", 4, "echo prolog")
    assert config.execd.rlimits.set() == {"nofile": 4096, "core": 0, "as": -1}
    assert config.queues == {"fast": QueueSection(prolog="echo fast"), "big jobs": QueueSection(epilog="echo big")}
    assert config.compat.min_job_age_s == 300
    assert ("controller", "kill_grace_s") in loaded.from_file and ("execd", "rlimits", "as") in loaded.from_file
    assert ("queues", "big jobs", "epilog") in loaded.from_file
    assert ("controller", "smtp_port") in loaded.from_file and ("execd", "smtp_port") not in loaded.from_file


def test_the_execd_builds_its_settings_from_the_section() -> None:
    execd = parse_config('[execd]\nexit_hook = ""\nmail_tries = 2\nepilog = "e"\n'
                         '[execd.rlimits]\nnofile = 64\n').config.execd
    cleanup = cleanup_settings(execd)
    assert (cleanup.exit_hook, cleanup.mail_tries, cleanup.smtp_port) == (None, 2, 25)
    options = shepherd_options(execd, "tag")
    assert options["cluster"] == "tag" and options["node_epilog"] == "e" and options["node_prolog"] is None
    assert options["rlimits"] == {"nofile": 64} and options["stage_out_limit_bytes"] == 64 << 20


def test_accelerator_step_14_the_diagnostics_user_is_the_service_account_else_nobody_never_root() -> None:
    import os
    import pwd

    from drover.config import SERVICE_USER

    if os.geteuid() != 0:
        assert shepherd_options(parse_config("").config.execd)["diagnostics_identity"] is None
        return
    chosen = shepherd_options(parse_config("").config.execd)["diagnostics_identity"]
    expected = next((name for name in (SERVICE_USER, "nobody") if _exists(name)), None)
    assert (chosen["user"] if chosen else None) == expected
    if chosen is not None:
        assert chosen["uid"] == pwd.getpwnam(chosen["user"]).pw_uid != 0
    named = shepherd_options(parse_config('[execd]\ndiagnostics_user = "nobody"\n').config.execd)
    assert named["diagnostics_identity"] is not None and named["diagnostics_identity"]["user"] == "nobody"
    with pytest.raises(SystemExit, match="root; the diagnostics scripts never run as root"):
        shepherd_options(parse_config('[execd]\ndiagnostics_user = "root"\n').config.execd)
    with pytest.raises(SystemExit, match="no user no-such-user-here on this node"):
        shepherd_options(parse_config('[execd]\ndiagnostics_user = "no-such-user-here"\n').config.execd)


def _exists(name: str) -> bool:
    import pwd

    try:
        return pwd.getpwnam(name).pw_uid != 0
    except KeyError:
        return False


def test_accelerator_step_10_the_debug_pause_comes_from_the_environment_or_the_file_bounded() -> None:
    execd = parse_config("[execd]\ndebug_shepherd_s = 5\n").config.execd
    assert shepherd_options(execd, environ={})["debug_pause_s"] == 5
    assert shepherd_options(execd, environ={"DROVER_DEBUG_SHEPHERD": "12"})["debug_pause_s"] == 12
    assert shepherd_options(parse_config("").config.execd, environ={})["debug_pause_s"] == 0
    for bad in ("3601", "-1", "soon", "nan"):
        with pytest.raises(SystemExit, match="DROVER_DEBUG_SHEPHERD must be a number of seconds from 0 to 3600"):
            shepherd_options(execd, environ={"DROVER_DEBUG_SHEPHERD": bad})
    assert refusal("[execd]\ndebug_shepherd_s = 4000\n").endswith("debug_shepherd_s must be a number from 0 to 3600, not 4000")


def test_the_schema_holds_every_limit_and_every_rlimit_the_shepherd_sets() -> None:
    assert set(Limits.KEYS) <= set(ControllerSection.__struct_fields__)
    names = {info.encode_name for info in msgspec.structs.fields(RlimitsSection)}
    assert names == set(RLIMITS)


# -- what is refused, and where -------------------------------------------------------------------

def test_an_unknown_key_is_refused_with_its_line_and_a_suggestion() -> None:
    text = "[controller]\nkill_grace_s = 2\n\n[execd]\ncpus = 2\n\nprologue = \"x\"\n"
    assert refusal(text) == "drover.toml:7: [execd] unknown key 'prologue' (did you mean 'prolog'?)"
    assert refusal("[controller]\nfoo = 1\n") == "drover.toml:2: [controller] unknown key 'foo'"


@pytest.mark.parametrize(("text", "expected"), [
    ('[queues.fast]\nprolog = "a"\n[queues.slow]\nepilogue = "b"\n',
     "drover.toml:4: [queues.slow] unknown key 'epilogue' (did you mean 'epilog'?)"),
    ("[execd]\nrlimits = {nofile = 10, nofiles = 3}\n",
     "drover.toml:2: [execd.rlimits] unknown key 'nofiles' (did you mean 'nofile'?)"),
    ("[execd.rlimits]\ncore = 0\nrss = 1\n", "drover.toml:3: [execd.rlimits] unknown key 'rss'"),
    ("[compat]\nmin_job_age = 1\n", "drover.toml:2: [compat] unknown key 'min_job_age' (did you mean 'min_job_age_s'?)"),
    ("# a comment\n[exced]\ncpus = 1\n", "drover.toml:2: unknown section [exced] (did you mean [execd]?)"),
    ("[queue.fast]\nprolog = \"x\"\n", "drover.toml:1: unknown section [queue] (did you mean [queues]?)"),
])
def test_unknown_keys_in_every_section(text: str, expected: str) -> None:
    assert refusal(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ('[controller]\n# the grace\nkill_grace_s = "ten"\n', 'drover.toml:3: [controller] kill_grace_s must be a number from 0 to 3600, not "ten"'),
    ("[controller]\nshared = 1\n", "drover.toml:2: [controller] shared must be true or false, not 1"),
    ("[controller]\nsmtp_port = 25.5\n", "drover.toml:2: [controller] smtp_port must be a whole number from 1 to 65535, not 25.5"),
    ("[controller]\nsmtp_port = true\n", "drover.toml:2: [controller] smtp_port must be a whole number from 1 to 65535, not true"),
    ('[controller]\noperators = "alice"\n', 'drover.toml:2: [controller] operators must be a list of strings, not "alice"'),
    ('[controller]\noperators = ["alice", 3]\n', 'drover.toml:2: [controller] operators must be a list of strings, not ["alice", 3]'),
    ("[controller]\nmax_array_size = 0\n",
     "drover.toml:2: [controller] max_array_size must be a whole number from 1 to 2147483648, not 0"),
    ('[controller]\nsqlite_synchronous = "SOMETIMES"\n',
     'drover.toml:2: [controller] sqlite_synchronous must be one of "EXTRA", "FULL", "NORMAL", "OFF", not "SOMETIMES"'),
    ("[execd]\nprolog = 5\n", "drover.toml:2: [execd] prolog must be a string, not 5"),
    ('[execd]\ncpus = "8"\n', 'drover.toml:2: [execd] cpus must be a whole number from 0 to 1048576, not "8"'),
    ("[execd]\nmethod_timeout_s = [1]\n", "drover.toml:2: [execd] method_timeout_s must be a number from 1 to 604800, not [1]"),
    ('[execd]\nrlimits.nofile = 3\nrlimits.cpu = "a"\n', 'drover.toml:3: [execd.rlimits] cpu must be a whole number from -1 to 9223372036854775807, not "a"'),
    ('[queues.fast]\nepilog = false\n', "drover.toml:2: [queues.fast] epilog must be a string, not false"),
    ("[compat]\nmin_job_age_s = 1.5\n", "drover.toml:2: [compat] min_job_age_s must be a whole number from 0 to 31622400, not 1.5"),
    ("controller.kill_grace_s = true\n", "drover.toml:1: [controller] kill_grace_s must be a number from 0 to 3600, not true"),
])
def test_wrong_types_are_refused_with_the_line_the_key_and_the_value(text: str, expected: str) -> None:
    assert refusal(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("execd = 5\n", "drover.toml:1: execd must be a table ([execd]), not 5"),
    ('[execd]\nrlimits = "none"\n', 'drover.toml:2: execd.rlimits must be a table ([execd.rlimits]), not "none"'),
    ("queues = 3\n", "drover.toml:1: queues must be a table ([queues.NAME]), not 3"),
    ('[queues]\nfast = "x"\n', 'drover.toml:2: queues.fast must be a table ([queues.fast]), not "x"'),
])
def test_a_value_where_a_table_belongs_is_refused(text: str, expected: str) -> None:
    assert refusal(text) == expected


def test_a_syntax_error_names_its_line() -> None:
    assert refusal("[controller]\n\nkill_grace_s = = 3\n").startswith("drover.toml:3: not valid TOML: Invalid value")
    assert refusal("[controller]\nkill_grace_s = 1\nkill_grace_s = 2\n").startswith("drover.toml:3: not valid TOML")
    assert refusal('[execd]\nprolog = """\nunterminated\n').startswith("drover.toml:4: not valid TOML")


def test_the_file_path_is_named(tmp_path: Path) -> None:
    path = tmp_path / "drover.toml"
    path.write_text("[execd]\nkeep_spool = \"yes\"\n")
    with pytest.raises(ConfigError) as caught:
        read_config(str(path))
    assert str(caught.value) == f'{path}:2: [execd] keep_spool must be true or false, not "yes"'
    assert (caught.value.path, caught.value.line, caught.value.exit_code) == (str(path), 2, 1)
    path.write_bytes(b"[execd]\nprolog = \"\xff\"\n")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        read_config(str(path))


# -- finding a key's line -------------------------------------------------------------------------

def test_key_lines_follow_headers_dotted_and_quoted_keys_and_skip_multiline_strings() -> None:
    lines = KeyLines("""\
top = 1
[execd]
prolog = '''
[controller]
kill_grace_s = 1
'''
rlimits = { nofile = 3 }
  "quoted key" = 2
[ queues . "my.queue" ]
prolog = "x"
[[array]]
item = 1
""")
    assert lines.line_of(("top",)) == 1
    assert lines.line_of(("execd", "prolog")) == 3
    assert lines.line_of(("controller", "kill_grace_s")) is None  # that was inside a string
    assert lines.line_of(("execd", "rlimits", "nofile")) == 7  # inside the inline table's line
    assert lines.line_of(("execd", "quoted key")) == 8
    assert lines.line_of(("queues", "my.queue")) == 9
    assert lines.line_of(("queues", "my.queue", "prolog")) == 10
    assert lines.line_of(("array", "item")) == 12
    assert lines.line_of(("execd", "missing")) == 2  # the table that holds it
