"""The shepherd's one decoder of its `config` record (shepherd/config.py): what each key the
record may lack means, stated once, and a typed, frozen result."""

from __future__ import annotations

import dataclasses
import typing

import pytest
from tests.helpers.attempt_config import attempt_config

from drover.records import AttemptConfig
from drover.shepherd.config import STAGE_OUT_LIMIT_BYTES, ShepherdConfig, read_config

# What the shepherd cannot run an attempt without.
NEEDED = ("job_id", "task_index", "attempt_number", "is_array", "name", "owner", "node", "workdir", "submit_dir",
          "stdout", "stderr", "open_mode", "environment", "cpus", "cpu_ids", "memory_mib", "time_limit_s",
          "kill_grace_s", "priority")


def test_every_field_is_a_key_of_the_record_the_execd_writes() -> None:
    record_keys = set(typing.get_type_hints(AttemptConfig))
    assert {field.name for field in dataclasses.fields(ShepherdConfig)} <= record_keys


def test_a_whole_record_is_read_as_written() -> None:
    raw = attempt_config("/w", time_limit_s=30, pe="mpi", pe_slots=4, gres={"gpu": [1]}, pids_max=300,
                         queue_suspend_method="SIGUSR1", notify_s=5)
    config = read_config(raw)
    assert (config.job_id, config.task_index, config.attempt_number, config.workdir) == (7, 0, 1, "/w")
    assert (config.time_limit_s, config.kill_grace_s, config.identity_tries, config.chdir_retry_s) == (30, 0.5, 2, 0.05)
    assert (config.pe, config.pe_slots, config.gres, config.pids_max) == ("mpi", 4, {"gpu": [1]}, 300)
    assert (config.queue_suspend_method, config.notify_s, config.method_timeout_s) == ("SIGUSR1", 5, 60.0)


def test_what_a_record_may_lack_has_its_default() -> None:
    config = read_config({key: attempt_config("/w")[key] for key in NEEDED})  # type: ignore[literal-required]
    assert (config.identity_tries, config.identity_retry_s) == (3, 10.0)  # VOV 11: 3 tries, 10 s apart
    assert (config.chdir_tries, config.chdir_retry_s, config.method_timeout_s) == (3, 2.0, 600.0)
    assert (config.queue, config.cluster, config.warn_before_s) == ("default", "", 60.0)
    assert config.stage_out_limit_bytes == STAGE_OUT_LIMIT_BYTES
    assert (config.pids_max, config.job_pids_max, config.node_gpus, config.queue_nice) == (0, 0, 0, 0)
    assert (config.pe, config.pe_slots, config.pe_hosts, config.pe_task) == ("", None, [], None)
    assert (config.gres, config.rlimits, config.stage_out, config.environments) == ({}, {}, [], [])
    assert (config.identity, config.checkpoint, config.debug_pause_s, config.pty) == (None, None, 0.0, False)
    assert (config.node_prolog, config.starter_method, config.notify_s) == (None, None, None)


def test_a_record_without_what_the_shepherd_needs_is_refused_by_name() -> None:
    for key in NEEDED:
        raw = dict(attempt_config("/w"))
        del raw[key]
        with pytest.raises(KeyError, match=key):
            read_config(raw)


def test_a_command_that_is_not_text_is_none_and_the_config_is_frozen() -> None:
    config = read_config(attempt_config("/w", node_prolog=7, queue=None))
    assert (config.node_prolog, config.queue) == (None, "default")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.workdir = "/elsewhere"  # type: ignore[misc]
