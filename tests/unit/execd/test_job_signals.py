"""The execd delivers the shepherd's signal contract and nothing else, whatever an order says."""

from __future__ import annotations

import signal

import pytest

from drover.compat.gridengine.submission import build
from drover.compat.gridengine.submit_options import QSUB_OPTIONS
from drover.compat.gridengine.syntax import parse
from drover.compat.submit_context import Context
from drover.execd.job_signals import delivery
from drover.shepherd.supervise import FORWARDED

S = signal.Signals


def test_the_contract_goes_to_the_shepherd_and_the_others_by_the_spools_signal_record() -> None:
    """GE process flow, spool file "signal": what the shepherd cannot tell from an order, or
    cannot catch, goes by name into the record, and SIGTTIN to the shepherd."""
    assert delivery("terminate") == (S.SIGTERM, False)
    assert delivery("suspend") == (S.SIGTSTP, False)
    assert delivery("resume") == (S.SIGCONT, False)
    for signum in FORWARDED:
        assert delivery(signal.Signals(signum).name) == (signum, False)
    for signum in (S.SIGTERM, S.SIGTSTP, S.SIGCONT, S.SIGTTIN, S.SIGKILL, S.SIGSTOP):
        assert delivery(signum.name) == (signum, True)


@pytest.mark.parametrize("name", ["SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGSYS", "SIGIO", "SIGFPE", "SIGTRAP",
                                  "SIGCHLD", "SIGPIPE", "SIGSTKFLT", "SEGV", "kill", "", "SIGRTMIN", "99"])
def test_everything_else_is_refused(name: str) -> None:
    assert delivery(name) is None


def test_a_jobs_checkpoint_signal_is_its_own_but_never_a_fault() -> None:
    assert delivery("SIGRTMIN", checkpoint_signal="SIGRTMIN") == (S.SIGRTMIN, False)
    assert delivery("SIGABRT", checkpoint_signal="SIGABRT") == (S.SIGABRT, False)
    assert delivery("SIGSEGV", checkpoint_signal="SIGSEGV") is None
    assert delivery("SIGRTMIN", checkpoint_signal="SIGUSR2") is None


@pytest.mark.parametrize(("flag", "rerunnable"), [("y", True), ("n", False), ("no", False)])
def test_qsub_r_says_whether_the_job_may_run_again(flag: str, rerunnable: bool) -> None:
    ctx = Context(cwd="/tmp", home="/tmp", user="me", host="node", environ={})

    def job(argv: list[str]) -> dict[str, object]:
        return build(parse(argv, QSUB_OPTIONS).given, "true\n", [], "job.sh", False, ctx, pytest.fail).job

    assert job(["-r", flag])["rerunnable"] is rerunnable
    assert "rerunnable" not in job([])
