"""Queues at run time: stop, start and drain them, change their settings, and let users make
queues of their own where drover.toml allows it (jobd's personal queues). Each handler checks
everything, then changes the working set and says what to store.

Who may do what:
- an operator (root, the controller's user, [controller] operators): everything, on every queue;
- a queue's owner (its `owner`, or who made it): stop, start and drain it, change what only
  touches their own jobs' pace (core/queues.OWNER_SETTINGS), and remove it if they made it;
- any user, where `[controller] user_queues` is on: make queues, which they then own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from drover.config_schema import QueueSection
from drover.controller.effects import Outcome
from drover.controller.state import ControllerState
from drover.core.errors import BadRequest, Conflict, Forbidden, NotFound
from drover.core.queues import (
    DEFAULT,
    MAX_QUEUES_PER_USER,
    OWNER_SETTINGS,
    Queue,
    QueueRecord,
    check_name,
    effective,
    parse_setting,
)
from drover.core.shown_text import check_reason

ACTIONS = ("stop", "start", "drain")


def queues_in_effect(state: ControllerState, sections: Mapping[str, QueueSection]) -> dict[str, Queue]:
    """Every queue: "default", drover.toml's, and those users made; with their changes. Kept in
    the working set until a queue changes (a planning pass asks for them every time)."""
    if state.queues_in_effect is None:
        names = {DEFAULT, *sections, *(name for name, record in state.queues.items() if record.created_by)}
        state.queues_in_effect = {name: effective(name, sections.get(name), state.queues.get(name))
                                  for name in sorted(names)}
    return state.queues_in_effect


def queue_named(state: ControllerState, sections: Mapping[str, QueueSection], name: str) -> Queue:
    found = queues_in_effect(state, sections).get(name)
    if found is None:
        raise NotFound(f"queue {name!r} does not exist (`drover queue list` shows them)")
    return found


def switch(state: ControllerState, sections: Mapping[str, QueueSection], name: str, action: str, reason: str,
           user: str, is_admin: bool, now: float) -> Outcome:
    """`drover queue stop|start|drain NAME`."""
    if action not in ACTIONS:
        raise NotFound(f"unknown queue action {action!r}; known: {', '.join(ACTIONS)}")
    queue = queue_named(state, sections, name)
    may_manage(queue, user, is_admin, action)
    check_reason(reason)
    by = f"{reason} ({user})" if reason else f"by {user}"
    record = queue.record.switched(action, by if action != "start" else "", now)
    return _store(state, record, "queue_" + action, now, queue=name, by=user, reason=reason or None,
                  queue_state=record.state.value)


def change(state: ControllerState, sections: Mapping[str, QueueSection], name: str, settings: Mapping[str, str],
           user: str, is_admin: bool, now: float) -> Outcome:
    """`drover queue set NAME KEY=VALUE...`: an empty value clears a change."""
    queue = queue_named(state, sections, name)
    if not settings:
        raise BadRequest("nothing to change: give KEY=VALUE settings")
    for key in settings:
        if not is_admin and not (queue.may_manage(user) and key in OWNER_SETTINGS):
            what = "only an operator" if queue.may_manage(user) else "only its owner or an operator"
            raise Forbidden(f"{what} may change {key} of queue {name}")
    changed = dict(queue.record.settings)
    for key, text in settings.items():
        if text.strip():
            _parsed(key, text)
            changed[key] = text.strip()
        else:
            changed.pop(key, None)
    record = replace(queue.record, settings=changed, changed_at=now)
    _check(name, sections.get(name), record)
    return _store(state, record, "queue_changed", now, queue=name, by=user, settings=dict(settings))


def create(state: ControllerState, sections: Mapping[str, QueueSection], name: str, settings: Mapping[str, str],
           user: str, is_admin: bool, users_may_create: bool, now: float) -> Outcome:
    """`drover queue create NAME [KEY=VALUE...]`: the maker owns it."""
    try:
        check_name(name)
    except ValueError as error:
        raise BadRequest(str(error)) from None
    if name in queues_in_effect(state, sections):
        raise Conflict(f"queue {name} exists already")
    if not is_admin:
        if not users_may_create:
            raise Forbidden("users may not make queues on this cluster ([controller] user_queues is off)")
        mine = sum(1 for record in state.queues.values() if record.created_by == user)
        if mine >= MAX_QUEUES_PER_USER:
            raise Forbidden(f"{user} has {mine} queues already, the most one user may have")
        refused = sorted(set(settings) - OWNER_SETTINGS)
        if refused:
            raise Forbidden(f"only an operator may set {', '.join(refused)} of a queue")
    for key, text in settings.items():
        _parsed(key, text)
    record = QueueRecord(name, settings={key: text.strip() for key, text in settings.items() if text.strip()},
                         created_by=user, changed_at=now)
    _check(name, None, record)
    return _store(state, record, "queue_created", now, queue=name, by=user, settings=dict(settings))


def delete(state: ControllerState, sections: Mapping[str, QueueSection], name: str, user: str, is_admin: bool,
           now: float) -> Outcome:
    """`drover queue delete NAME`: a queue made with create, once no job of it waits or runs."""
    queue = queue_named(state, sections, name)
    if queue.record.created_by is None:
        raise Conflict(f"queue {name} is {queue.defined_in}'s: remove it there")
    may_manage(queue, user, is_admin, "delete")
    jobs = sorted(job.id for job in state.jobs.values() if job.spec.queue == name)
    if jobs:
        raise Conflict(f"queue {name} still has jobs ({', '.join(map(str, jobs[:10]))}"
                       f"{'...' if len(jobs) > 10 else ''}): cancel them or move them (drover alter --queue)")
    state.queues.pop(name, None)
    state.queues_in_effect = None
    outcome = Outcome(reschedule=True)
    outcome.changes.queue(name, None)
    outcome.changes.event(now, "queue_deleted", queue=name, by=user)
    return outcome


def may_manage(queue: Queue, user: str, is_admin: bool, verb: str) -> None:
    if not is_admin and not queue.may_manage(user):
        owner = f"its owner ({queue.owner}) or " if queue.owner else ""
        raise Forbidden(f"only {owner}an operator may {verb} queue {queue.name}")


def _parsed(key: str, text: str) -> object:
    try:
        return parse_setting(key, text)
    except ValueError as error:
        raise BadRequest(str(error)) from None


def _check(name: str, section: QueueSection | None, record: QueueRecord) -> None:
    """The queue as it would be: its default time within its maximum."""
    queue = effective(name, section, record)
    if queue.default_time_s is not None and queue.max_time_s is not None and queue.default_time_s > queue.max_time_s:
        raise BadRequest(f"queue {name}'s default_time would be over its max_time")


def _store(state: ControllerState, record: QueueRecord, kind: str, now: float, **detail: Any) -> Outcome:
    state.queues[record.name] = record
    state.queues_in_effect = None
    outcome = Outcome(reschedule=True)
    outcome.changes.queue(record.name, record)
    outcome.changes.event(now, kind, **detail)
    return outcome
