"""The controller's settings come from drover.toml, and each default from its section alone."""

from __future__ import annotations

import msgspec

from drover.config_schema import ControllerSection, DroverConfig
from drover.controller.settings import Settings
from drover.protocol.node_channel import Welcome


def test_settings_take_each_key_of_drover_toml_and_the_kill_grace_option_over_it() -> None:
    config = msgspec.convert({
        "controller": {"kill_grace_s": 3.0, "heartbeat_s": 2.0, "node_timeout_s": 50.0, "smtp_host": "mx",
                       "smtp_port": 2525, "user_queues": True, "history_days": 7, "forbid_reschedule": True,
                       "max_jobs_per_request": 9},
        "compat": {"min_job_age_s": 60},
        "licenses": {"matlab": 4},
    }, DroverConfig)
    settings = Settings.of(config, "/srv/files")
    assert (settings.kill_grace_s, settings.heartbeat_s, settings.node_timeout_s) == (3.0, 2.0, 50.0)
    assert (settings.smtp_host, settings.smtp_port, settings.user_queues, settings.history_days) == ("mx", 2525, True, 7)
    assert settings.exits.forbid_reschedule and not settings.exits.forbid_apperror
    assert settings.limits.max_jobs_per_request == 9 and settings.min_job_age_s == 60
    assert settings.licenses == {"matlab": 4} and settings.files_dir == "/srv/files"
    assert {"smp", "slurm"} <= set(settings.parallel_environments)  # the built-in ones, always there
    assert Settings.of(config, "/srv/files", kill_grace_s=1.5).kill_grace_s == 1.5
    orders = settings.order_options()
    assert (orders.kill_grace_s, orders.licenses, orders.exits) == (3.0, {"matlab": 4}, settings.exits)


def test_an_empty_drover_toml_gives_the_defaults_its_sections_state() -> None:
    section, built, bare = ControllerSection(), Settings.of(DroverConfig(), ""), Settings()
    for key in ("kill_grace_s", "heartbeat_s", "node_timeout_s", "smtp_host", "smtp_port", "user_queues",
                "history_days"):
        assert getattr(built, key) == getattr(bare, key) == getattr(section, key), key
    assert built.min_job_age_s == bare.min_job_age_s
    assert Welcome("n1").heartbeat_s == section.heartbeat_s  # what a node assumes when told nothing
