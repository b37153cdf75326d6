"""A reload of the working set from the store (the shell's, after a handler left it contradicting
itself) keeps what each connected node's hello said and the store does not hold: that its node
daemon takes StartPromisedNow, and when the node goes away. Every node is asked to say hello
again, but until it has, a promise stranded on it is started there in place as before, not
taken back as on a node daemon of an earlier version."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.helpers.node_socket import FakeSocket

from drover.config_schema import SchedulerSection
from drover.controller.nodes.node_channels import NodeChannel
from drover.controller.service import ControllerService, Settings
from drover.controller.shell.transaction import Scope
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import Exited, Hello, StartAttempt, Started
from drover.store.sqlite import SqliteStore

OK = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False, "out_of_memory": False}


async def turn() -> None:
    """Let the loop carry out what was queued (a planner pass, the channel's writes)."""
    for _ in range(5):
        await asyncio.sleep(0)


def reload(service: ControllerService, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shell reloads the working set whole, as when putting a failed handler's jobs back
    left it contradicting itself."""
    monkeypatch.setattr(service.shell, "restore", lambda *args, **kwargs: False)
    assert service.shell.put_back(Scope(), None) is False


def test_a_reload_keeps_what_the_connected_nodes_hellos_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        service = ControllerService(SqliteStore(str(tmp_path / "drover.db")),
                                    Settings(scheduler=SchedulerSection(promises=True)))
        service.node_connected(NodeChannel("n1", FakeSocket()), Hello("n1", 2, 8192, [], starts_in_place=True,
                                                                      ends_at=4_000_000_000.0))
        service.node_connected(NodeChannel("n2", FakeSocket()), Hello("n2", 2, 8192, []))
        before = service.state
        reload(service, monkeypatch)
        assert service.state is not before  # the working set was read again from the store
        n1, n2 = service.state.nodes["n1"], service.state.nodes["n2"]
        assert (n1.starts_in_place, n1.ends_at) == (True, 4_000_000_000.0)
        assert (n2.starts_in_place, n2.ends_at) == (False, None)  # it said neither

    asyncio.run(main())


def test_a_promise_stranded_after_a_reload_starts_in_place_before_its_node_says_hello_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        store = SqliteStore(str(tmp_path / "drover.db"))
        service = ControllerService(store, Settings(scheduler=SchedulerSection(promises=True)))
        socket = FakeSocket()
        service.node_connected(NodeChannel("n1", socket), Hello("n1", 2, 8192, [], starts_in_place=True))
        long, short, third = (service.submit([JobSubmission(script=script, workdir="/tmp")], "alice")[0]
                              for script in ("sleep 3600\n", "true\n", "true\n"))
        await turn()
        orders = {m.attempt: m for m in socket.messages if isinstance(m, StartAttempt)}
        assert set(orders) == {f"{long}.0.1", f"{short}.0.1", f"{third}.0.1"}
        assert orders[f"{third}.0.1"].after == f"{long}.0.1"  # promised behind the long job
        service.node_messages("n1", [Started(f"{long}.0.1", 11, 1.0), Started(f"{short}.0.1", 12, 1.0)])
        await turn()
        reload(service, monkeypatch)
        # The short job ends before the node has said hello again: its CPU is free beside the promise.
        service.node_messages("n1", [Exited(f"{short}.0.1", dict(OK))])  # type: ignore[arg-type]
        await turn()
        kinds = [event.kind for _, event in store.events_of(third, 0, 1000)]
        assert "promise_started_in_place" in kinds and "promise_taken_back" not in kinds

    asyncio.run(main())
