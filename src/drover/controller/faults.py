"""Fault injection, for testing only: a seam that makes the controller's handling of one job's
reports raise, so that a test can check on a real cluster that an internal error costs that job
alone (it fails, with the reason) and nothing else: no reload, no node sent away. It is off
unless the controller's environment turns it on; drover.toml and the command line have no way
to. Off, it costs nothing: the report handler is wrapped only when it is on.

DROVER_FAULT_REPORT_RAISES=KIND:NAME
    Handling a report of kind KIND (as the node channel spells it: started, suspended, exiting,
    progress, staged_out, exited; or * for any) about an attempt of a job named NAME raises
    RuntimeError("injected fault: …"). A job that the controller failed has ended, so its later
    reports are not handled again (tests/integration/faults/test_internal_errors.py).

DROVER_FAULT_EXIT_AFTER_SUBMIT=1
    The controller exits (status 1) as soon as it has committed a submission, before it answers:
    a controller that dies at the worst moment for a submission, which its client sends again
    with its request key (tests/integration/store/test_failover.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from drover.controller.effects import Outcome
from drover.controller.handlers.node_reports import Report, ReportHandler, report_kind
from drover.controller.state import ControllerState
from drover.core.exit_status import ExitSemantics
from drover.core.ids import job_of_attempt

REPORT_RAISES = "DROVER_FAULT_REPORT_RAISES"
EXIT_AFTER_SUBMIT = "DROVER_FAULT_EXIT_AFTER_SUBMIT"


@dataclass(frozen=True, slots=True)
class Faults:
    report_raises: tuple[str, str] | None = None  # (kind or "*", job name)
    exit_after_submit: bool = False

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> Faults:
        value = environ.get(REPORT_RAISES) or ""
        kind, colon, name = value.partition(":")
        return cls(report_raises=(kind, name) if colon and kind and name else None,
                   exit_after_submit=environ.get(EXIT_AFTER_SUBMIT) == "1")

    def __bool__(self) -> bool:
        return self.report_raises is not None or self.exit_after_submit

    def describe(self) -> str:
        found = [f"{REPORT_RAISES}={':'.join(self.report_raises)}"] if self.report_raises else []
        if self.exit_after_submit:
            found.append(f"{EXIT_AFTER_SUBMIT}=1")
        return ", ".join(found) or "none"

    def report_handler(self, handle: ReportHandler) -> ReportHandler:
        """`handle` itself when off; when on, `handle` behind the injected fault."""
        if self.report_raises is None:
            return handle
        kind, name = self.report_raises

        def raising(state: ControllerState, outcome: Outcome, report: Report, now: float, semantics: ExitSemantics) -> None:
            job_id = job_of_attempt(report.attempt)
            job = state.jobs.get(job_id) if job_id is not None else None
            if job is not None and job.name == name and kind in ("*", report_kind(report)):
                raise RuntimeError(f"injected fault ({REPORT_RAISES}): the {report_kind(report)} report of "
                                   f"attempt {report.attempt}")
            handle(state, outcome, report, now, semantics)

        return raising


NO_FAULTS = Faults()
