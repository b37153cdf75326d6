"""A whole attempt config (drover.records.AttemptConfig) for tests that build a spool by hand:
every key the node writes (the job's spec in its `job`), so a test runs the shepherd and the cleanup on the config they get."""

from __future__ import annotations

import os
import typing
from typing import Any

from drover.records import JOB_DEFAULTS, AttemptConfig

# The cluster tag of the hand-made attempts: their cgroups are drover-<tag>/<attempt>, beneath
# the machine's root. One tag per test process, so that two processes' attempts of the same name
# (pytest-xdist's workers, another test run) never share a cgroup; its empty parent goes when the
# process ends (tests/conftest.py).
CLUSTER = f"tests{os.getpid()}"
# What a node daemon adds to every order's config of its own ([execd] options): here only the
# cluster's tag, which names the attempts' cgroups (drover-<tag>/<attempt>). An order carries
# none, so a node daemon made in a test without it would put its attempts in drover/<attempt>,
# the same cgroup as another worker's attempt of that name, and end that one's processes too.
NODE_OPTIONS: dict[str, Any] = {"cluster": CLUSTER}


def attempt_config(root: str, name: str = "7.0.1", job: dict[str, Any] | None = None, **overrides: Any) -> AttemptConfig:
    """`overrides`: the config's keys, and the job's spec fields that are no key of the config
    (`prolog=`, `time_limit_s=`), which go into its `job`; `workdir` sets both. `job`: spec
    fields that share a config key's name (`gres`, `pids_max`, `checkpoint`)."""
    job_id, index, number = (int(part) for part in name.split("."))
    config_keys = set(typing.get_type_hints(AttemptConfig))
    spec_fields = {key: overrides.pop(key) for key in list(overrides) if key in JOB_DEFAULTS and key not in config_keys}
    if "workdir" in overrides:
        spec_fields["workdir"] = overrides["workdir"]
    spec = {**JOB_DEFAULTS, "workdir": root, "submit_dir": root, "epilog_sets_exit": False, **spec_fields,
            **(job or {})}
    unknown_fields = set(spec) - set(JOB_DEFAULTS)
    assert not unknown_fields, f"not fields of JobRecord: {sorted(unknown_fields)}"
    config: AttemptConfig = {
        "attempt": name, "job_id": job_id, "task_index": index, "attempt_number": number, "is_array": False,
        "array_first": None, "array_last": None, "array_step": None, "array_count": None,
        "name": "test", "owner": "someone", "node": "n1", "priority": 0, "workdir": root,
        "stdout": os.path.join(root, "out.txt"), "stderr": None,
        "environment": {"PATH": os.environ["PATH"]}, "cpus": 1, "cpu_ids": [0], "memory_mib": 0,
        "kill_grace_s": 0.5, "queue_prolog": None, "queue_epilog": None,
        "job": spec,  # type: ignore[typeddict-item]  # checked against JobRecord's keys just above
        "cluster": CLUSTER, "identity_tries": 2, "identity_retry_s": 0.05, "diagnostics_setuid": None,
        "chdir_tries": 2, "chdir_retry_s": 0.05, "diagnostics_chdir": None, "node_prolog": None,
        "node_epilog": None, "node_pe_start": None, "node_pe_stop": None, "method_timeout_s": 60.0,
        "rlimits": {}, "stage_out_limit_bytes": 64 * 1024 * 1024, "diagnostics_identity": None, "debug_pause_s": 0.0,
        "identity": None, "scratch": False,
    }
    unknown = set(overrides) - config_keys  # its optional keys too
    assert not unknown, f"not keys of AttemptConfig: {sorted(unknown)}"
    config.update(overrides)  # type: ignore[typeddict-item]  # checked against the keys just above
    return config
