"""Every format specifier the man pages of Slurm 23.11 document for squeue, sinfo, sacct, sstat,
sprio and sshare (tests/data/manpages/slurm/formats/) is in the front end's column table, and the
table offers nothing else: a documented specifier Drover does not offer is listed here with its
reason and is refused as the real command refuses it; a specifier the table offers beyond the 23.11
man page is listed here with the later Slurm release that documents it.

A specifier counts as offered when the front end's own parser takes it: a `%` letter or an -O
name of squeue and sinfo without an error, and a sacct, sstat or sshare field name (which these
commands match by prefix, the first field of the table that starts so) when it resolves to the
field of that very name."""

from __future__ import annotations

import pathlib
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from drover.compat.optiontable import Mark
from drover.compat.slurm import columns as fmt
from drover.compat.slurm import sacct, sinfo, sprio, squeue, sshare, sstat
from drover.compat.slurm.printfields import Field, UnknownField, choose
from drover.compat.slurm.sacct_columns import FIELDS as SACCT_FIELDS

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "manpages" / "slurm" / "formats"
COMMANDS = ("squeue", "sinfo", "sacct", "sstat", "sprio", "sshare")

# Specifiers that stand for every field rather than name one; test_every_field_at_once checks them.
EVERYTHING = {("squeue", "-o", "%all"), ("sinfo", "-o", "%all"), ("sinfo", "-O", "all"), ("sacct", "-o", "all")}

STEPS = "a field of job steps: Drover records no steps, and refuses squeue -s/--steps (its option table: ✗)"
# Documented, not offered: the front end reports each as the real command reports a field it lacks.
NOT_OFFERED = {
    ("squeue", "-O", "cpufreq"): STEPS,
    ("squeue", "-O", "nodes"): STEPS,
    ("squeue", "-O", "resvport"): STEPS,
    ("squeue", "-O", "stepid"): STEPS,
    ("squeue", "-O", "stepname"): STEPS,
    ("squeue", "-O", "stepstate"): STEPS,
    ("squeue", "-O", "tres-per-step"): STEPS,
    ("sinfo", "-O", "priority"): "the man page's `PriorityTier or Priority`, but src/sinfo/opts.c takes "
                                 "`PriorityTier` alone (in 23.11, as in 17.11 and 26.05): `Priority` is an "
                                 "error there, and here",
}

# Offered, though no 23.11 man page lists them: the Slurm release whose man page first does
# ("master": the development branch after 26.05, whose man page has it).
LATER = {
    ("squeue", "-o", "%s"): "25.11",  # SLUID
    ("squeue", "-O", "excnodes"): "24.05",
    ("squeue", "-O", "cronjob"): "25.05",
    ("squeue", "-O", "licensesalloc"): "25.05",
    ("squeue", "-O", "segmentsize"): "25.05",
    ("squeue", "-O", "exclusive"): "26.05",
    ("squeue", "-O", "sluid"): "26.05",
    ("squeue", "-O", "runtime"): "master",  # the runtime plugin (26.05's ContainerType)
    ("sacct", "-o", "stderr"): "24.05",
    ("sacct", "-o", "stdin"): "24.05",
    ("sacct", "-o", "stdout"): "24.05",
    ("sacct", "-o", "restarts"): "24.11",
    ("sacct", "-o", "qosreq"): "25.05",
    ("sacct", "-o", "reqreservation"): "25.05",
    ("sacct", "-o", "segmentsize"): "25.05",
    ("sacct", "-o", "exclusive"): "26.05",
    ("sacct", "-o", "originalsluid"): "26.05",
    ("sacct", "-o", "oversubscribe"): "26.05",
    ("sacct", "-o", "sluid"): "26.05",
    ("sstat", "-o", "alloctres"): "25.05",
    ("sstat", "-o", "sluid"): "26.05",
    ("sprio", "-o", "%s"): "26.05",  # SLUID
}

# Specifiers of Drover's own, in no Slurm man page: none.
DROVER_OWN: dict[tuple[str, str, str], str] = {}


@dataclass(frozen=True)
class Entry:
    option: str  # -o or -O
    spec: str  # `%a`, or a name as the man page spells it
    tag: str  # "" (the man page), "steps", "source" or "helpformat": see the data files' headers

    @property
    def key(self) -> str:
        return self.spec if self.spec.startswith("%") and self.spec != "%all" else self.spec.lower()


def man_page(command: str) -> list[Entry]:
    entries = []
    for line in (DATA / f"{command}.txt").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        option, spec, *tag = line.split()
        entries.append(Entry(option, spec, tag[0] if tag else ""))
    return entries


def _letters(table: Mapping[str, fmt.Column[Any]]) -> Callable[[str], bool]:
    def takes(spec: str) -> bool:
        errors: list[str] = []
        specs: list[fmt.Spec[Any]] = fmt.parse_letters(spec, table, errors)
        return not errors and [s.column.letter for s in specs if s.column] == [spec[1:]]
    return takes


def _names(table: Mapping[str, fmt.Column[Any]]) -> Callable[[str], bool]:
    def takes(spec: str) -> bool:
        errors: list[str] = []
        specs: list[fmt.Spec[Any]] = fmt.parse_names(spec, table, errors)
        return not errors and [s.column.name.lower() for s in specs if s.column] == [spec]
    return takes


def _fields(fields: list[Field[Any]]) -> Callable[[str], bool]:
    def takes(spec: str) -> bool:
        try:
            chosen = choose(spec, fields)
        except UnknownField:
            return False
        return [field.name.lower() for field in chosen] == [spec]
    return takes


# How each front end reads a specifier (True: offered), and what its table offers.
PARSERS: dict[tuple[str, str], Callable[[str], bool]] = {
    ("squeue", "-o"): _letters(squeue.LETTERS), ("squeue", "-O"): _names(squeue.NAMES),
    ("sinfo", "-o"): _letters(sinfo.LETTERS), ("sinfo", "-O"): _names(sinfo.NAMES),
    ("sacct", "-o"): _fields(SACCT_FIELDS), ("sstat", "-o"): _fields(sstat.FIELDS),
    ("sshare", "-o"): _fields(sshare.FIELDS), ("sprio", "-o"): _letters(sprio.LETTERS),
}
TABLES: dict[tuple[str, str], set[str]] = {
    ("squeue", "-o"): {f"%{letter}" for letter in squeue.LETTERS}, ("squeue", "-O"): set(squeue.NAMES),
    ("sinfo", "-o"): {f"%{letter}" for letter in sinfo.LETTERS}, ("sinfo", "-O"): set(sinfo.NAMES),
    ("sacct", "-o"): {field.name.lower() for field in SACCT_FIELDS},
    ("sstat", "-o"): {field.name.lower() for field in sstat.FIELDS},
    ("sshare", "-o"): {field.name.lower() for field in sshare.FIELDS},
    ("sprio", "-o"): {f"%{letter}" for letter in sprio.LETTERS},
}


def test_the_data_files_read_cleanly() -> None:
    for command in COMMANDS:
        entries = man_page(command)
        assert entries, command
        for entry in entries:
            assert (command, entry.option) in PARSERS, (command, entry)
            assert entry.tag in ("", "steps", "source", "helpformat"), (command, entry)
    # the man pages' own counts, as a guard against a file cut short
    assert [len(man_page(c)) for c in COMMANDS] == [179, 96, 113, 51, 24, 15]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_documented_specifier_is_offered_or_listed_as_not_offered(command: str) -> None:
    missing = []
    for entry in man_page(command):
        key = (command, entry.option, entry.key)
        if entry.tag in ("source", "steps") or key in EVERYTHING:
            continue  # a second spelling is not required; steps and `%all` have tests of their own
        if key in NOT_OFFERED:
            assert not PARSERS[command, entry.option](entry.key), f"{key} is offered: drop it from NOT_OFFERED"
        elif not PARSERS[command, entry.option](entry.key):
            missing.append(f"{entry.option} {entry.spec}")
    assert missing == [], f"{command}: documented, not offered and not listed in NOT_OFFERED"


@pytest.mark.parametrize("command", COMMANDS)
def test_the_table_offers_nothing_undocumented(command: str) -> None:
    documented = {(command, entry.option, entry.key) for entry in man_page(command)}
    extra = sorted(f"{option} {spec}" for (c, option), offered in TABLES.items() if c == command
                   for spec in offered
                   if (command, option, spec) not in documented | set(LATER) | set(DROVER_OWN))
    assert extra == [], f"{command}: offered, in no 23.11 man page, and not marked in LATER or DROVER_OWN"


def test_steps_fields_are_not_job_fields_and_steps_are_refused() -> None:
    for entry in man_page("squeue"):
        also_for_jobs = any(e.key == entry.key and e.option == entry.option and e.tag != "steps"
                            for e in man_page("squeue"))
        if entry.tag == "steps" and not also_for_jobs:
            assert NOT_OFFERED.get(("squeue", entry.option, entry.key)) == STEPS, entry
    (steps,) = [option for option in squeue.OPTIONS if option.key == "steps"]
    assert steps.mark is Mark.REFUSED and steps.note


def test_specifiers_not_offered_get_the_real_commands_error() -> None:
    for (command, option, spec), reason in NOT_OFFERED.items():
        assert reason, spec
        assert any(e.option == option and e.key == spec for e in man_page(command)), f"{spec}: not documented"
        errors: list[str] = []
        table = squeue.NAMES if command == "squeue" else sinfo.NAMES
        assert option == "-O" and command in ("squeue", "sinfo")
        fmt.parse_names(spec, table, errors)
        assert errors == [f"Invalid job format specification: {spec}"]


def test_later_and_own_specifiers_are_offered_and_not_documented_for_23_11() -> None:
    for command, option, spec in set(LATER) | set(DROVER_OWN):
        assert spec in TABLES[command, option], f"{command} {option} {spec}: not offered; drop it from the list"
        assert not any(e.option == option and e.key == spec for e in man_page(command)), (command, spec)
    for release in LATER.values():
        assert release == "master" or (release.count(".") == 1 and release > "23.11"), release


def test_print_fields_commands_reject_what_they_lack() -> None:
    # sacct, sstat and sshare stop at an unknown field, in the real commands' words.
    for fields in (SACCT_FIELDS, sstat.FIELDS, sshare.FIELDS):
        with pytest.raises(UnknownField, match='Invalid field requested: "NoSuchField"'):
            choose("NoSuchField", fields)
    assert sacct.choose_fields("jobid,ALL")[1:] == SACCT_FIELDS


def test_every_field_at_once() -> None:
    # squeue -o %all: a..z then A..Z, `|` between; letters squeue lacks are left out.
    (format_option,) = [option for option in squeue.OPTIONS if option.key == "format"]
    errors: list[str] = []
    specs = squeue.Query([(format_option, "%all")], [], {}).specs(errors)
    order = string.ascii_lowercase + string.ascii_uppercase
    assert errors == []
    assert [s.column.letter for s in specs if s.column] == [letter for letter in order if letter in squeue.LETTERS]
    assert {s.suffix for s in specs[:-1]} == {"|"}
    # sinfo -o %all (and -O All, which stands for it among other names): `%a|`…`%z|%A |`…`%Z `.
    specs = sinfo.specs({"format": "%ALL"}, set(), {}, errors)
    assert errors == []
    assert [s.column.letter for s in specs if s.column] == [letter for letter in order if letter in sinfo.LETTERS]
    assert [(s.column.letter, s.suffix) for s in specs if s.column and s.column.letter in "azAZ"] == [
        ("a", "|"), ("z", "|"), ("A", " |"), ("Z", " ")]
    assert sinfo.specs({"Format": "All"}, set(), {}, errors) == specs
    both = sinfo.specs({"Format": "nodes:5,all:3,cpus"}, set(), {}, errors)
    assert errors == [] and both[1:-1] == specs
    assert [(s.column.name, s.width) for s in (both[0], both[-1]) if s.column] == [("Nodes", 5), ("CPUs", 20)]
    # sacct -o ALL, or any prefix of it
    assert sacct.choose_fields("ALL") == sacct.choose_fields("a") == SACCT_FIELDS
