"""A node makes a directory of each order's attempt name, as root: an order whose name (or whose
`after`) is not "<job>.<task>.<attempt>" is refused before anything is made, so a controller
taken over cannot make the node's root create or write where it points (docs/security.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from drover.execd.attempts import Attempts
from drover.protocol.node_channel import StartAttempt
from drover.spool import layout


class Refuses:
    """A spawner and a cleanup that must never be reached."""

    def spawn(self, spool_dir: str, lifeline: int | None = None, released: int | None = None) -> int:
        raise AssertionError(f"a shepherd was started for {spool_dir}")

    def release(self, pid: int) -> None:
        raise AssertionError(f"shepherd {pid} was released")

    def begin(self, spool: layout.SpoolDir) -> None:
        raise AssertionError(f"a cleanup was begun for {spool.path}")

    def known(self) -> list[str]:
        return []

    def made_here(self, name: str, config: Any = None) -> None:
        pass

    def config_rewritten(self, name: str, config: Any) -> None:
        pass

    pending: dict[str, layout.SpoolDir] = {}


@pytest.mark.parametrize("attempt,after", [
    ("../escaped.0.1", None), ("../../escaped", None), ("7.0.1/../../escaped", None), ("{tmp}/escaped", None),
    ("7.0.1/inner", None), ("", None), ("7.0.1\n", None), ("7.0.1", "../escaped.0.1"), ("7.0.1", "x" * 10_000),
])
def test_an_order_naming_no_attempt_makes_nothing(tmp_path: Path, attempt: str, after: str | None) -> None:
    attempt = attempt.format(tmp=tmp_path)  # an absolute path: somewhere the test may look
    root = tmp_path / "spool" / "active"
    root.mkdir(parents=True)
    sent: list[Any] = []

    async def order() -> None:  # the node's daemon takes orders on its event loop
        attempts = Attempts(str(root), Refuses(), sent.append, Refuses(), {})  # type: ignore[arg-type]
        try:
            attempts.start(StartAttempt(attempt, {}, "touch /tmp/never\n", after=after))  # type: ignore[arg-type]
            made = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*"))
            assert made == ["spool", "spool/active", f"spool/active/{layout.NOTIFY_SOCKET}"]
            assert sent == [] and not attempts.live and not attempts.promised
        finally:
            attempts.close()

    asyncio.run(order())


def test_every_well_formed_name_is_an_attempt_name() -> None:
    assert layout.is_attempt_name("7.0.1") and layout.is_attempt_name("123456.99.12")
    assert not any(layout.is_attempt_name(name) for name in ("7.0", "7.0.1.2", "7.-1.1", "a.0.1", " 7.0.1", "7.0.1 "))


class Begun(Refuses):
    """A cleanup that records what it was given, where nothing may be spawned."""

    def __init__(self) -> None:
        self.begun: list[str] = []

    def begin(self, spool: layout.SpoolDir) -> None:
        self.begun.append(spool.name)


@pytest.mark.parametrize("carried", [{"containment_name": "../../../escaped/cgroup"}, {"pe_task": "1"}])
def test_an_order_that_names_its_cgroup_or_a_parallel_task_fails_and_runs_nothing(
        tmp_path: Path, carried: dict[str, str]) -> None:
    """The node sets both itself, for the parallel tasks it starts: the shepherd makes, as root,
    the cgroup `containment_name` names, wherever it points."""
    from tests.helpers.attempt_config import attempt_config

    root = tmp_path / "spool"
    root.mkdir()
    cleanup = Begun()

    async def order() -> None:
        attempts = Attempts(str(root), Refuses(), [].append, cleanup, {})  # type: ignore[arg-type]
        try:
            config = {**attempt_config(str(tmp_path), "7.0.1"), **carried}
            attempts.start(StartAttempt("7.0.1", config, "touch /tmp/never\n"))  # type: ignore[arg-type]
        finally:
            attempts.close()

    asyncio.run(order())
    assert cleanup.begun == ["7.0.1"]  # it ends as refused, with the reason
    failure = (root / "7.0.1" / layout.ERROR).read_text()
    assert f"the order carries {next(iter(carried))}, which only the node sets" in failure
    assert not (root / "7.0.1" / layout.CONFIG).exists() and not (root / "7.0.1" / layout.JOB_SCRIPT).exists()
