"""The shepherd's one decoder of its `config` record (shepherd/config.py): what each key the
record may lack means, stated once, and a typed, frozen result."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import msgspec
import pytest
from tests.helpers.attempt_config import attempt_config

from drover.core.job_spec import JobSpec
from drover.records import AttemptConfig
from drover.shepherd.config import STAGE_OUT_LIMIT_BYTES, ShepherdConfig, read_config

# What the shepherd cannot run an attempt without.
NEEDED = ("job_id", "task_index", "attempt_number", "is_array", "name", "owner", "node", "workdir",
          "stdout", "stderr", "environment", "cpus", "cpu_ids", "memory_mib", "kill_grace_s", "priority")
EARLIER = Path(__file__).resolve().parents[2] / "data" / "releases" / "0.1.0" / "spool" / "2.0.1" / "config"


def test_every_field_is_a_key_of_the_record_the_execd_writes() -> None:
    record_keys = set(typing.get_type_hints(AttemptConfig))
    assert {field.name for field in dataclasses.fields(ShepherdConfig)} <= record_keys


def test_a_whole_record_is_read_as_written() -> None:
    raw = attempt_config("/w", time_limit_s=30, pe="mpi", pe_slots=4, gres={"gpu": [1]}, pids_max=300,
                         queue_suspend_method="SIGUSR1", notify_s=5, job={"pids_max": 20})
    config = read_config(raw)
    assert (config.job_id, config.task_index, config.attempt_number, config.workdir) == (7, 0, 1, "/w")
    assert (config.job["time_limit_s"], config.kill_grace_s, config.identity_tries, config.chdir_retry_s) == \
        (30, 0.5, 2, 0.05)
    assert (config.job["pe"], config.job["pe_slots"], config.gres, config.pids_max) == ("mpi", 4, {"gpu": [1]}, 300)
    assert config.job["pids_max"] == 20 and config.job == raw["job"]
    assert (config.queue_suspend_method, config.notify_s, config.method_timeout_s) == ("SIGUSR1", 5, 60.0)


def test_what_a_record_may_lack_has_its_default() -> None:
    whole = attempt_config("/w")
    config = read_config({"job": whole["job"], **{key: whole[key] for key in NEEDED}})  # type: ignore[literal-required]
    assert (config.identity_tries, config.identity_retry_s) == (3, 10.0)  # VOV 11: 3 tries, 10 s apart
    assert (config.chdir_tries, config.chdir_retry_s, config.method_timeout_s) == (3, 2.0, 600.0)
    assert config.cluster == ""
    assert config.stage_out_limit_bytes == STAGE_OUT_LIMIT_BYTES
    assert (config.pids_max, config.node_gpus, config.queue_nice) == (0, 0, 0)
    assert (config.pe_hosts, config.pe_task) == ([], None)
    assert (config.gres, config.rlimits, config.environments) == ({}, {}, [])
    assert (config.identity, config.checkpoint, config.debug_pause_s) == (None, None, 0.0)
    assert (config.node_prolog, config.starter_method, config.notify_s) == (None, None, None)


def test_a_record_without_what_the_shepherd_needs_is_refused_by_name() -> None:
    for key in NEEDED:
        raw = dict(attempt_config("/w"))
        del raw[key]
        with pytest.raises(KeyError, match=key):
            read_config(raw)


def test_a_command_that_is_not_text_is_none_and_the_config_is_frozen() -> None:
    config = read_config(attempt_config("/w", node_prolog=7))
    assert config.node_prolog is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.workdir = "/elsewhere"  # type: ignore[misc]


def test_the_job_is_the_spec_whole_every_field_of_job_spec() -> None:
    """A new job option reaches the shepherd as config.job["NAME"] with no line in read_config."""
    spec = msgspec.to_builtins(JobSpec(workdir="/w", time_limit_s=5, prolog="true"))
    config = read_config({**attempt_config("/w"), "job": spec})
    assert config.job == spec and set(config.job) == {field.name for field in msgspec.structs.fields(JobSpec)}


def test_a_record_of_the_earlier_layout_is_read_with_its_spec_gathered() -> None:
    """The previous release's execd wrote the spec's fields flat (job_prolog, output_pattern...):
    an attempt it left, re-attached or started after an upgrade, is read all the same."""
    raw = json.loads(EARLIER.read_text())
    config = read_config(raw)
    assert (config.name, config.workdir, config.cpus) == ("finished", "/tmp/drv-9rcdtt11/work", 1)
    assert config.job == {**msgspec.to_builtins(JobSpec()), "workdir": "/tmp/drv-9rcdtt11/work",
                          "submit_dir": "/tmp/drv-9rcdtt11/work", "keep_spool": True, "output": "drover-%j.out"}
    flat = dict(raw, job_prolog="echo before", job_pids_max=12, pty=True, queue="fast", scratch=True,
                environment_names=["gcc"], done_output_pattern="done-%j", warn_signal="SIGUSR1")
    job = read_config(flat).job
    assert (job["prolog"], job["pids_max"], job["pty"], job["queue"], job["workdir"]) == \
        ("echo before", 12, True, "fast", "")
    assert (job["environments"], job["done_output"], job["warn_signal"]) == (["gcc"], "done-%j", "SIGUSR1")
    assert job["pids_max"] != raw["pids_max"]  # the node's limit stays the node's
