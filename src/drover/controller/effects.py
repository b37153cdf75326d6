"""What a handler asks the shell to do once its changes are committed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from drover.store.base import Changes


@dataclass(frozen=True, slots=True)
class SendToNode:
    node: str
    message: Any  # a protocol.node_channel message


@dataclass(frozen=True, slots=True)
class JobEnded:
    job_id: int


@dataclass(frozen=True, slots=True)
class SendMail:
    """Mail the controller sends itself: a job's BEGIN, and an array's one mail when it ends."""

    job_id: int
    to: str
    subject: str
    body: str


Effect = SendToNode | JobEnded | SendMail


@dataclass(slots=True)
class Outcome:
    changes: Changes = field(default_factory=Changes)
    effects: list[Effect] = field(default_factory=list)
    reschedule: bool = False  # something may now start: run the planner

    def send(self, node: str, message: Any) -> None:
        self.effects.append(SendToNode(node, message))
