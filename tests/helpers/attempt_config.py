"""A whole attempt config (drover.records.AttemptConfig) for tests that build a spool by hand:
every key the node writes, so a test runs the shepherd and the cleanup on the config they get."""

from __future__ import annotations

import os
import typing
from typing import Any

from drover.records import AttemptConfig

# The cluster tag of the hand-made attempts: their cgroups are drover-<tag>/<attempt>, beneath
# the machine's root. One tag per test process, so that two processes' attempts of the same name
# (pytest-xdist's workers, another test run) never share a cgroup; its empty parent goes when the
# process ends (tests/conftest.py).
CLUSTER = f"tests{os.getpid()}"


def attempt_config(root: str, name: str = "7.0.1", **overrides: Any) -> AttemptConfig:
    job_id, index, number = (int(part) for part in name.split("."))
    config: AttemptConfig = {
        "attempt": name, "job_id": job_id, "task_index": index, "attempt_number": number, "is_array": False,
        "array_first": None, "array_last": None, "array_step": None, "array_count": None,
        "name": "test", "owner": "someone", "node": "n1", "workdir": root, "submit_dir": root,
        "stdout": os.path.join(root, "out.txt"), "stderr": None, "open_mode": "truncate",
        "environment": {"PATH": os.environ["PATH"]}, "cpus": 1, "cpu_ids": [0], "memory_mib": 0,
        "time_limit_s": None, "kill_grace_s": 0.5, "priority": 0, "mail_user": None, "mail_type": [],
        "keep_spool": False, "stage_out": [], "job_prolog": None, "job_epilog": None, "epilog_sets_exit": False,
        "warn_signal": None, "warn_before_s": 0, "checkpoint_signal": None, "rerunnable": True, "pty": False,
        "queue": "default", "queue_prolog": None, "queue_epilog": None,
        "cluster": CLUSTER, "identity_tries": 2, "identity_retry_s": 0.05, "diagnostics_setuid": None,
        "chdir_tries": 2, "chdir_retry_s": 0.05, "diagnostics_chdir": None, "node_prolog": None,
        "node_epilog": None, "node_pe_start": None, "node_pe_stop": None, "method_timeout_s": 60.0,
        "rlimits": {}, "stage_out_limit_bytes": 64 * 1024 * 1024, "diagnostics_identity": None, "debug_pause_s": 0.0,
        "identity": None, "scratch": False,
    }
    unknown = set(overrides) - set(config) - set(typing.get_type_hints(AttemptConfig))  # its optional keys too
    assert not unknown, f"not keys of AttemptConfig: {sorted(unknown)}"
    config.update(overrides)  # type: ignore[typeddict-item]  # checked against the keys just above
    return config
