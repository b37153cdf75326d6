"""The controller service's settings, read once from drover.toml (controller/main.py). Every
default is the one its section states (config_schema.py), so a default is written in one place."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from drover.config_schema import (
    ControllerSection,
    DroverConfig,
    EnvironmentSection,
    ParallelEnvironmentSection,
    QueueSection,
    SchedulerSection,
)
from drover.controller.handlers.dispatch import OrderOptions
from drover.core.checkpoints import Environment as CheckpointEnvironment
from drover.core.exit_status import GRID_ENGINE, ExitSemantics
from drover.core.limits import Limits

_CONTROLLER = ControllerSection()  # [controller] as drover.toml leaves it: its defaults
MIN_JOB_AGE_S = 300  # [compat] min_job_age_s unset


@dataclass(frozen=True, slots=True)
class Settings:
    kill_grace_s: float = _CONTROLLER.kill_grace_s  # between the warning signal and SIGKILL when a job is stopped
    queues: Mapping[str, QueueSection] = field(default_factory=dict)  # [queues.NAME] of drover.toml
    files_dir: str = ""  # where staged-out files are kept until fetched
    smtp_host: str = _CONTROLLER.smtp_host
    smtp_port: int = _CONTROLLER.smtp_port
    mail_tries: int = 5
    # What an attempt's end means: [controller] requeue_held, forbid_reschedule, forbid_apperror
    exits: ExitSemantics = GRID_ENGINE
    node_timeout_s: float = _CONTROLLER.node_timeout_s  # a node down this long has lost its running jobs
    limits: Limits = field(default_factory=Limits)  # what one request and one user may ask
    min_job_age_s: int = MIN_JOB_AGE_S  # [compat]: how long the Slurm front ends still show an ended job
    heartbeat_s: float = _CONTROLLER.heartbeat_s  # how often nodes say they are there; silent for three, DOWN
    scheduler: SchedulerSection = field(default_factory=SchedulerSection)  # priority weights, backfill
    licenses: Mapping[str, int] = field(default_factory=dict)  # [licenses]: the cluster's counters
    user_queues: bool = _CONTROLLER.user_queues  # users may make queues of their own
    history_days: int = _CONTROLLER.history_days  # ended jobs are forgotten after this many days (0: never)
    environments: Mapping[str, EnvironmentSection] = field(default_factory=dict)  # [environments.NAME]
    # [parallel_environments.NAME]: Grid Engine's parallel environments
    parallel_environments: Mapping[str, ParallelEnvironmentSection] = field(default_factory=dict)
    checkpoints: Mapping[str, CheckpointEnvironment] = field(default_factory=dict)  # [checkpoints.NAME]
    public_metrics: bool = _CONTROLLER.public_metrics  # every user may read GET /metrics, not only admins

    @classmethod
    def of(cls, config: DroverConfig, files_dir: str, kill_grace_s: float | None = None) -> Settings:
        """The settings drover.toml gives (`kill_grace_s`: `drover controller --kill-grace`, which
        overrides [controller]'s)."""
        from drover.controller.handlers import parallel_envs

        section = config.controller
        return cls(
            kill_grace_s=kill_grace_s if kill_grace_s is not None else section.kill_grace_s, files_dir=files_dir,
            smtp_host=section.smtp_host, smtp_port=section.smtp_port,
            exits=ExitSemantics(forbid_reschedule=section.forbid_reschedule, forbid_apperror=section.forbid_apperror,
                                requeue_held=section.requeue_held),
            node_timeout_s=section.node_timeout_s, queues=config.queues, limits=section.limits(),
            heartbeat_s=section.heartbeat_s, scheduler=config.scheduler, licenses=config.licenses,
            user_queues=section.user_queues, history_days=section.history_days, environments=config.environments,
            parallel_environments=parallel_envs.in_effect(config.parallel_environments),
            min_job_age_s=config.compat.min_job_age_s if config.compat.min_job_age_s is not None else MIN_JOB_AGE_S,
            checkpoints={name: checkpoint.environment(name) for name, checkpoint in config.checkpoints.items()},
            public_metrics=section.public_metrics,
        )

    def order_options(self) -> OrderOptions:
        """What of these travels in every start order (handlers/dispatch.py)."""
        return OrderOptions(self.kill_grace_s, self.queues, self.scheduler, self.licenses, self.exits,
                            environments=self.environments, parallel_environments=self.parallel_environments,
                            checkpoints=self.checkpoints)
