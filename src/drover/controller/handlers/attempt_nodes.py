"""Which node ran an attempt: the one node that may speak for it. A node's channel is its own, so
what another node says of an attempt (its reports, its samples, its staged-out files) changes
nothing: otherwise any node, or anyone holding a node's channel, could end another node's jobs,
add to their records, or replace the files they staged out. Every keeper of what nodes say asks
here, so that the check is made one way."""

from __future__ import annotations

from collections.abc import Callable

from drover.controller.state import ControllerState


def sent_to(state: ControllerState, name: str) -> str | None:
    """The node the working set sent the attempt `name` to; None for an attempt it does not hold.
    Alone, what the samples of running attempts ask (nodes/samples.py): an attempt given up or
    whose job ended runs for no one, whatever its node still sends of it."""
    attempt = state.attempt_by_name(name)
    return attempt.node if attempt is not None else None


def ran_on(state: ControllerState, node: str, name: str, stored: Callable[[str], str | None] | None = None) -> bool:
    """Whether `node` ran the attempt `name`, and so may speak for it: the node the working set
    sent it to; for an attempt given up with its node (`lost_attempts`), that node; for one the
    working set no longer holds (its job ended, or its task went on to another attempt), the
    node `stored` says, as the store has it. Without `stored`, no node speaks for such an attempt."""
    sent = sent_to(state, name)
    if sent is not None:
        return sent == node
    lost_on = state.lost_attempts.get(name)
    if lost_on is not None:
        return lost_on == node
    return stored is not None and stored(name) == node
