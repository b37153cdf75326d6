"""The terminal route reads the job it opens a terminal to as every read does: from a working set
that is whole. After a failed commit whose jobs could not be put back, the working set is due a
reload from the store; while the store is away (and memory is not whole), a read is refused with
the store's reason instead of being answered from a memory that may contradict the store (an
attempt the store never took, on a node it never ran on), and once the store answers, the
terminal's request reloads the working set first, as any request does (`ready_to_read`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.unit.api.test_stopping_peers import ROOT, websocket

from drover.api.app import create_app
from drover.controller.security.auth import Policy
from drover.controller.service import ControllerService, Settings
from drover.protocol.api import JobSubmission
from drover.store.faults import StoreFault
from drover.store.sqlite import SqliteStore

AWAY = "the job store drover.db cannot be used: the disk is full (database or disk is full)"


def test_a_terminal_is_not_opened_from_a_working_set_due_a_reload(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> tuple[list[dict[str, Any]], bool, list[dict[str, Any]], bool]:
        store = SqliteStore(str(tmp_path / "drover.db"))
        try:
            service = ControllerService(store, Settings())
            in_doubt, job = service.submit([JobSubmission(script="true\n", workdir="/tmp", hold=True)] * 2, "root")
            app = create_app(service, Policy(owner_uid=0, shared=True), lambda: None)
            path = f"/v1/jobs/{job}/tasks/0/terminal"
            loaded = store.load_working_set

            def away() -> Any:
                raise StoreFault(AWAY)

            monkeypatch.setattr(store, "load_working_set", away)
            assert _due_a_reload(service, monkeypatch, in_doubt)
            refused = await websocket(app, path, ROOT)
            still_due = service.shell._reload_due
            monkeypatch.setattr(store, "load_working_set", loaded)  # the store answers again
            answered = await websocket(app, path, ROOT)
            return refused, still_due, answered, service.shell._reload_due
        finally:
            store.close()

    refused, still_due, answered, due_after = asyncio.run(main())
    assert refused[-1]["type"] == "websocket.close" and refused[-1]["reason"] == AWAY, refused
    assert still_due
    # Reloaded first, then read: the job is held, so it has no terminal yet.
    assert answered[-1]["type"] == "websocket.close" and "has not started yet" in answered[-1]["reason"], answered
    assert not due_after


def _due_a_reload(service: ControllerService, monkeypatch: pytest.MonkeyPatch, job: int) -> bool:
    """What Transaction.put_back leaves when a job of a failed commit cannot be put back and the
    store cannot give the working set back either: a reload due, memory not whole (`job` in
    doubt, every other job read from it as it is would be read from a memory not whole)."""
    from drover.controller.shell.transaction import Scope

    def refused(*_: object) -> bool:
        raise RuntimeError("a row the store refuses")

    with monkeypatch.context() as patch:
        patch.setattr(service.shell, "restore", refused)
        put_back = service.shell.put_back(Scope(frozenset({job}), per_job=True), None)
    return not put_back and service.shell._reload_due
