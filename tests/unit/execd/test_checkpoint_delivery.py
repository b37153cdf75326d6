"""`drover checkpoint` and `drover migrate` of a job in a checkpoint environment reach its
shepherd as CHECKPOINT and MIGRATE (shepherd/checkpoint.py), which no job signal can be."""

from __future__ import annotations

import signal

from drover.core.signals import JOB_SIGNALS
from drover.execd.job_signals import delivery
from drover.shepherd.checkpoint import CHECKPOINT, MIGRATE
from drover.shepherd.signals import HANDLED
from drover.shepherd.supervise import FORWARDED
from drover.shepherd.supervise import JOB_SIGNALS as SHEPHERD_SIGNALS


def test_gridengine_checkpoint_and_migrate_go_to_the_shepherd() -> None:
    assert delivery("checkpoint") == (CHECKPOINT, False)
    assert delivery("migrate") == (MIGRATE, False)


def test_checkpoint_and_migrate_are_no_signal_a_job_is_sent_or_the_shepherd_forwards() -> None:
    for signum in (CHECKPOINT, MIGRATE):
        assert signum in HANDLED  # the shepherd hears them (a handler wakes its loop)
        assert signum not in FORWARDED and signum not in SHEPHERD_SIGNALS
        assert signum not in {int(s) for s in JOB_SIGNALS}
        assert signum != int(signal.SIGRTMIN)  # what a job's own --checkpoint-signal SIGRTMIN may be
