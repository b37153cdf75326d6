"""What a handler asks the shell to do once its changes are committed."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field, replace
from typing import Any

from drover.core.ids import job_of_attempt
from drover.protocol.node_channel import Ack
from drover.store.base import Changes


@dataclass(frozen=True, slots=True)
class SendToNode:
    node: str
    message: Any  # a protocol.node_channel message


@dataclass(frozen=True, slots=True)
class JobEnded:
    job_id: int
    # What the shell needs when the job was the last of its queue (jobd's mailfinished).
    queue: str = ""
    owner: str = ""
    mail_user: str | None = None
    name: str = ""
    state: str = ""


@dataclass(frozen=True, slots=True)
class SendMail:
    """Mail the controller sends itself: a job's BEGIN, and an array's one mail when it ends."""

    job_id: int
    to: str
    subject: str
    body: str


Effect = SendToNode | JobEnded | SendMail


@dataclass(frozen=True, slots=True)
class JobFault:
    """An exception while handling one job: nothing of that job is committed or sent, and the
    shell puts it back as the store has it and fails it (Shell.fail, controller/shell/transaction.py)."""

    job_id: int
    error: Exception
    where: str  # what the controller was doing: "handling its report started of attempt 12.0.1"
    # What the node that sent the job's reports waits for once they are recorded: sent with
    # the job's failure, so that the node does not send a report that cannot be handled again.
    acks: tuple[SendToNode, ...] = ()


@dataclass(slots=True)
class Outcome:
    changes: Changes = field(default_factory=Changes)
    effects: list[Effect] = field(default_factory=list)
    reschedule: bool = False  # something may now start: run the planner
    faults: list[JobFault] = field(default_factory=list)  # jobs whose handling raised: set aside
    aside: set[int] = field(default_factory=set)  # the faulted jobs dropped already (set_aside)

    def send(self, node: str, message: Any) -> None:
        self.effects.append(SendToNode(node, message))

    def fault(self, job_id: int, error: Exception, where: str, acks: tuple[SendToNode, ...] = ()) -> None:
        """Set the job aside: nothing of it in this outcome is committed or sent (`set_aside`,
        which the shell calls before it commits), and the shell puts it back as the store has
        it and fails it. `acks`: what the node waits for about the job's reports; by default,
        the acknowledgements of its reports this outcome was to send."""
        self.faults.append(JobFault(job_id, error, where, acks))

    def merge(self, later: Outcome) -> set[int]:
        """Add a later handler's outcome, as if one handler had done both: its changes
        (Changes.merge), then its effects after this one's. The jobs `later` set aside are set
        aside here too: what this outcome did to them is dropped as well, and the
        acknowledgements dropped with it go with their failure. Return those jobs (for the
        shell to put back as the store has them)."""
        later.set_aside()
        faulted = {fault.job_id for fault in later.faults}
        if faulted:
            acks: dict[int | None, list[SendToNode]] = {}
            for ack in self.drop_jobs(faulted):
                acks.setdefault(job_of_attempt(ack.message.attempts[0]), []).append(ack)
            later.faults = [replace(fault, acks=(*fault.acks, *acks.pop(fault.job_id))) if fault.job_id in acks
                            else fault for fault in later.faults]
        self.changes.merge(later.changes)
        self.effects.extend(later.effects)
        self.reschedule = self.reschedule or later.reschedule
        self.faults.extend(later.faults)
        self.aside |= later.aside
        return faulted

    def set_aside(self) -> None:
        """Drop what the faulted jobs changed, and every effect of theirs: all at once, so that
        many faults cost one pass over the outcome."""
        new = {fault.job_id for fault in self.faults} - self.aside
        if not new:
            return
        self.aside |= new
        acks: dict[int | None, list[SendToNode]] = {}
        for ack in self.drop_jobs(new):
            acks.setdefault(job_of_attempt(ack.message.attempts[0]), []).append(ack)
        self.faults = [fault if fault.acks or fault.job_id not in acks else replace(fault, acks=tuple(acks[fault.job_id]))
                       for fault in self.faults]

    def drop_jobs(self, job_ids: Set[int]) -> list[SendToNode]:
        """Drop what these jobs changed and every effect of theirs (orders and acknowledgements
        name their attempts; mail and ends name the job). Return the acknowledgements dropped,
        one an attempt."""
        self.changes.drop_jobs(job_ids)
        kept: list[Effect] = []
        acks: list[SendToNode] = []
        for effect in self.effects:
            if isinstance(effect, SendToNode):
                message = effect.message
                if isinstance(message, Ack):
                    attempts = [name for name in message.attempts if job_of_attempt(name) not in job_ids]
                    if attempts != message.attempts:
                        if attempts:
                            kept.append(SendToNode(effect.node, Ack(attempts, message.kind)))
                        acks += [SendToNode(effect.node, Ack([name], message.kind))
                                 for name in message.attempts if name not in attempts]
                        continue
                elif job_of_attempt(getattr(message, "attempt", "")) in job_ids:
                    continue
            elif effect.job_id in job_ids:
                continue
            kept.append(effect)
        self.effects = kept
        return acks
