"""The text of a node's reports made fit to keep and show: what a node says of an attempt (why it
failed, a cleanup step's error, what it enforced, a node's reason for leaving its cluster) is
stored and shown by `drover show`, `drover why`, `drover history`, squeue and qstat on the
terminals of the job's owner and of operators. A node taken over could write a terminal's escape
sequences there, or megabytes; an honest node may pass on a failing command's message as it came.

So each text is cleaned and cut (core/shown_text.shown_line) rather than refused: a report is
the only word of how an attempt ended, and refusing it would lose an honest node's report along
with a dishonest one's. Names the controller matches on are cleaned the same way, so that a
name a node made up matches nothing. Pure."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from drover.core.shown_text import has_control_characters, shown_line
from drover.protocol.node_channel import (
    Enforced,
    EventLogAppended,
    Exited,
    Exiting,
    Hello,
    OutputRead,
    PeTaskExited,
    Progress,
    Samples,
    StagedOut,
    TerminalClosed,
)
from drover.records import ExitStatus, GivenUpStep, MethodRun, Usage

# Why an attempt failed, a step's error, a note: a message that may name a path (up to PATH_MAX,
# 4096 bytes) and what went wrong there, so longer than a reason an operator types.
MESSAGE_CHARS = 4096
# A name the node's own code gives (a cleanup step, a method's step or level, a detail's key,
# how the attempt was contained): a word or two.
NAME_CHARS = 100
# Lists whose entries an honest node numbers in ones or tens (the cleanup steps, the methods that
# ran, the notes of one attempt, an enforcement's figures): what is past this is dropped.
LIST_ITEMS = 64

ReportT = TypeVar("ReportT")


def cleaned(report: ReportT) -> ReportT:
    """The report with its text made fit to keep and show; a report without text as it is."""
    if isinstance(report, (Exiting, Exited)):
        fields: dict[str, Any] = {"exit_status": exit_status(report.exit_status), "usage": usage(report.usage)}
        if isinstance(report, Exited):
            fields["done"] = names(report.done)
            fields["given_up"] = [given_up(step) for step in report.given_up[:LIST_ITEMS]]
        return msgspec.structs.replace(report, **fields)
    if isinstance(report, Progress):
        return msgspec.structs.replace(
            report, done=names(report.done), step=_name_or_none(report.step),
            error=None if report.error is None else shown_line(report.error, MESSAGE_CHARS))
    if isinstance(report, Enforced):
        # The action is checked against the actions this controller knows; the figures become
        # fields of the job's event, shown by `drover show` and `drover why`.
        detail = {shown_line(key, NAME_CHARS): shown_line(value, MESSAGE_CHARS) if isinstance(value, str) else value
                  for key, value in list(report.detail.items())[:LIST_ITEMS]}
        return msgspec.structs.replace(report, detail=detail)
    if isinstance(report, StagedOut):
        # Why files were not sent, one line each (as many as the job's patterns matched: the
        # frame's size bounds them). The files' names are left as they are: they name the files
        # kept for `drover fetch`, which the job itself named.
        return msgspec.structs.replace(report, skipped=[shown_line(text, MESSAGE_CHARS) for text in report.skipped],
                                       refused=[shown_line(text, MESSAGE_CHARS) for text in report.refused])
    if isinstance(report, PeTaskExited):
        return msgspec.structs.replace(report, exit_status=exit_status(report.exit_status), usage=usage(report.usage))
    return _said(report)


def _said(message: ReportT) -> ReportT:
    """What a node says beside its reports, where it is shown to someone: its features and
    devices (`drover nodes`, to everyone); the command line of a job's biggest process (`drover
    top` and `drover show`, to operators: the job's owner chose it); why a job's event log was
    not written (kept as an event of the job); why a read of a job's output or its terminal
    failed (to the user who asked)."""
    if isinstance(message, Hello):
        # A feature or device so cleaned matches no job's request: only a node taken over names one.
        return msgspec.structs.replace(message, features=[shown_line(name, NAME_CHARS) for name in message.features],
                                       gres=[shown_line(name, NAME_CHARS) for name in message.gres])
    if isinstance(message, Samples):
        return msgspec.structs.replace(message, samples=[
            sample if not _unshowable(sample.cmd, MESSAGE_CHARS)
            else msgspec.structs.replace(sample, cmd=shown_line(sample.cmd, MESSAGE_CHARS))
            for sample in message.samples])
    if isinstance(message, EventLogAppended | OutputRead) and message.error is not None:
        return msgspec.structs.replace(message, error=shown_line(message.error, MESSAGE_CHARS))
    if isinstance(message, TerminalClosed):
        return msgspec.structs.replace(message, why=shown_line(message.why, MESSAGE_CHARS))
    return message


def _unshowable(text: str, limit: int) -> bool:
    return len(text) > limit or has_control_characters(text)


def exit_status(record: ExitStatus) -> ExitStatus:
    """How an attempt ended, as the node said it, its text cleaned: the failure (a node that left
    its cluster says why there: the operator's reason, checked by that node alone), the notes and
    the methods' names."""
    cleaned_record = dict(record)
    if record.get("failure") is not None:
        cleaned_record["failure"] = shown_line(str(record["failure"]), MESSAGE_CHARS)
    if "notes" in record:
        cleaned_record["notes"] = [shown_line(note, MESSAGE_CHARS) for note in record["notes"][:LIST_ITEMS]]
    if "methods" in record:
        cleaned_record["methods"] = [_method(run) for run in record["methods"][:LIST_ITEMS]]
    return cleaned_record  # type: ignore[return-value]  # the same keys, the same types


def usage(record: Usage | None) -> Usage | None:
    if record is None or "containment" not in record:
        return record
    return {**record, "containment": shown_line(record["containment"], NAME_CHARS)}


def given_up(step: GivenUpStep) -> GivenUpStep:
    return {"step": shown_line(step["step"], NAME_CHARS), "tries": step["tries"],
            "error": shown_line(step["error"], MESSAGE_CHARS)}


def names(steps: list[str]) -> list[str]:
    return [shown_line(step, NAME_CHARS) for step in steps[:LIST_ITEMS]]


def _method(run: MethodRun) -> MethodRun:
    return {**run, "step": shown_line(run["step"], NAME_CHARS), "level": shown_line(run["level"], NAME_CHARS)}


def _name_or_none(name: str | None) -> str | None:
    return None if name is None else shown_line(name, NAME_CHARS)
